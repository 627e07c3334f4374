//! The gate's decision per call against ungated dispatch: scanning a 1-call
//! and an 8-call turn against registries of 10, 1,000 and 100,000 tools,
//! beside a `HashMap<String, Box<dyn Fn>>` lookup of the same names.

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

/// A turn of `calls` calls spread over the registry.
fn turn(size: usize, calls: usize) -> Vec<ToolCall> {
    (0..calls)
        .map(|c| ToolCall {
            id: c.to_string(),
            name: name((c * 7919) % size),
            arguments: Value::Object(Map::new()),
        })
        .collect()
}

#[divan::bench(args = SIZES)]
fn scan_1_call(bencher: divan::Bencher, size: usize) {
    let offered = offered(size);
    let calls = turn(size, 1);
    check_scan(&offered, &calls, 1);
    bencher.bench_local(|| scan_turn(black_box(&offered), black_box(&calls)).is_run());
}

#[divan::bench(args = SIZES)]
fn scan_8_calls(bencher: divan::Bencher, size: usize) {
    let offered = offered(size);
    let calls = turn(size, 8);
    check_scan(&offered, &calls, 8);
    bencher.bench_local(|| scan_turn(black_box(&offered), black_box(&calls)).is_run());
}

#[divan::bench(args = SIZES)]
fn baseline_lookup_1_call(bencher: divan::Bencher, size: usize) {
    let router = router(size);
    let calls = turn(size, 1);
    check_lookup(&router, &calls, 1);
    bencher.bench_local(|| lookup(black_box(&router), black_box(&calls)));
}

#[divan::bench(args = SIZES)]
fn baseline_lookup_8_calls(bencher: divan::Bencher, size: usize) {
    let router = router(size);
    let calls = turn(size, 8);
    check_lookup(&router, &calls, 8);
    bencher.bench_local(|| lookup(black_box(&router), black_box(&calls)));
}

/// What a plain tool router does before dispatch: find each call's handler.
fn lookup(router: &HashMap<String, Handler>, calls: &[ToolCall]) -> bool {
    calls.iter().all(|c| router.get(&c.name).is_some())
}
