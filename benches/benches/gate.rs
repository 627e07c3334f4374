//! The gate's decision per call against ungated dispatch: scanning a 1-call
//! and an 8-call turn against registries of 10, 1,000 and 100,000 tools,
//! beside two lookups of the same names: the bare lookup in a map with the
//! catalogue's own hasher (what the scan adds beyond finding the tool), and
//! a plain tool router, `HashMap<String, Box<dyn Fn>>` with the standard
//! hasher.
//!
//! The benches are named so that each scan runs right after its two
//! baselines, and the three are measured side by side.
//!
//! Each bench cycles through 64 turns whose names are spread over the
//! registry, so no figure rests on how one name happens to sit in one
//! table.

use std::collections::HashMap;
use std::hint::black_box;

use serde_json::{Map, Value};
use toolgate::{
    Execute, Local, ReadOnly, Registry, Tool, ToolOutput, gate,
    registry::Offered,
    run::{ToolCall, TurnScan, scan_turn},
};

fn main() {
    divan::main();
}

const SIZES: [usize; 3] = [10, 1_000, 100_000];

struct Named(String);

impl Tool for Named {
    type Origin = Local;
    type Effect = ReadOnly;
    type Gate = gate::Runs;
    fn name(&self) -> &str {
        &self.0
    }
    fn description(&self) -> &str {
        "A benchmark tool."
    }
}

impl Execute for Named {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("")
    }
}

fn name(i: usize) -> String {
    format!("tool_{i:06}")
}

fn offered(size: usize) -> Offered {
    let registry = (0..size)
        .fold(Registry::builder(), |b, i| b.builtin(Named(name(i))))
        .build();
    let Ok(registry) = registry else {
        panic!("registry must boot");
    };
    let runtime = tokio::runtime::Builder::new_current_thread().build();
    let Ok(runtime) = runtime else {
        panic!("no runtime");
    };
    let offered = runtime.block_on(registry.offer_all());
    assert_eq!(offered.tools().count(), size, "every tool is offered");
    offered
}

/// The scan of `calls` clears the turn, and hands out one permit per call:
/// the bench times a turn that runs, not one refused early.
fn check_scan(offered: &Offered, calls: &[ToolCall], expected: usize) {
    assert_eq!(calls.len(), expected);
    let TurnScan::Run(cleared) = scan_turn(offered, calls) else {
        panic!("a turn of read-only tools runs");
    };
    assert_eq!(
        cleared
            .into_calls()
            .filter(|(_, permit)| permit.is_ok())
            .count(),
        expected,
        "every call gets its permit"
    );
}

/// The baseline finds a handler for every call.
fn check_lookup(router: &HashMap<String, Handler>, calls: &[ToolCall], expected: usize) {
    assert_eq!(calls.len(), expected);
    assert!(lookup(router, calls), "every call has its handler");
}

type Handler = Box<dyn Fn(&Value) -> usize + Send + Sync>;

fn router(size: usize) -> HashMap<String, Handler> {
    (0..size)
        .map(|i| {
            let handler: Handler = Box::new(move |v: &Value| i + usize::from(v.is_null()));
            (name(i), handler)
        })
        .collect()
}

/// How many turns a bench cycles through.
const TURNS: usize = 64;

/// `TURNS` turns of `calls` calls each, their names spread over the registry.
fn turns(size: usize, calls: usize) -> Vec<Vec<ToolCall>> {
    (0..TURNS)
        .map(|t| {
            (0..calls)
                .map(|c| ToolCall {
                    id: c.to_string(),
                    name: name(((t * calls + c) * 7919) % size),
                    arguments: Value::Object(Map::new()),
                })
                .collect()
        })
        .collect()
}

/// The next of `turns`, round and round.
fn cycle<'a>(turns: &'a [Vec<ToolCall>]) -> impl FnMut() -> &'a [ToolCall] {
    let mut at = 0;
    move || {
        at = (at + 1) % turns.len();
        &turns[at]
    }
}

/// The catalogue's hasher, for the bare lookup.
type Names = foldhash::fast::RandomState;

fn bare(size: usize) -> HashMap<Box<str>, usize, Names> {
    (0..size).map(|i| (name(i).into_boxed_str(), i)).collect()
}

/// Finds each call's entry, and nothing else.
fn bare_lookup(map: &HashMap<Box<str>, usize, Names>, calls: &[ToolCall]) -> bool {
    calls.iter().all(|c| map.get(c.name.as_str()).is_some())
}

fn scan(bencher: divan::Bencher, size: usize, calls: usize) {
    let offered = offered(size);
    let turns = turns(size, calls);
    for turn in &turns {
        check_scan(&offered, turn, calls);
    }
    let mut next = cycle(&turns);
    bencher.bench_local(|| scan_turn(black_box(&offered), black_box(next())).is_run());
}

fn bare_lookups(bencher: divan::Bencher, size: usize, calls: usize) {
    let map = bare(size);
    let turns = turns(size, calls);
    assert!(
        turns
            .iter()
            .all(|turn| turn.len() == calls && bare_lookup(&map, turn))
    );
    let mut next = cycle(&turns);
    bencher.bench_local(|| bare_lookup(black_box(&map), black_box(next())));
}

fn router_lookups(bencher: divan::Bencher, size: usize, calls: usize) {
    let router = router(size);
    let turns = turns(size, calls);
    for turn in &turns {
        check_lookup(&router, turn, calls);
    }
    let mut next = cycle(&turns);
    bencher.bench_local(|| lookup(black_box(&router), black_box(next())));
}

#[divan::bench(args = SIZES)]
fn one_call_scan(bencher: divan::Bencher, size: usize) {
    scan(bencher, size, 1);
}

#[divan::bench(args = SIZES)]
fn eight_calls_scan(bencher: divan::Bencher, size: usize) {
    scan(bencher, size, 8);
}

#[divan::bench(args = SIZES)]
fn one_call_bare_lookup(bencher: divan::Bencher, size: usize) {
    bare_lookups(bencher, size, 1);
}

#[divan::bench(args = SIZES)]
fn eight_calls_bare_lookup(bencher: divan::Bencher, size: usize) {
    bare_lookups(bencher, size, 8);
}

#[divan::bench(args = SIZES)]
fn one_call_router_lookup(bencher: divan::Bencher, size: usize) {
    router_lookups(bencher, size, 1);
}

#[divan::bench(args = SIZES)]
fn eight_calls_router_lookup(bencher: divan::Bencher, size: usize) {
    router_lookups(bencher, size, 8);
}

/// What a plain tool router does before dispatch: find each call's handler.
fn lookup(router: &HashMap<String, Handler>, calls: &[ToolCall]) -> bool {
    calls.iter().all(|c| router.get(&c.name).is_some())
}
