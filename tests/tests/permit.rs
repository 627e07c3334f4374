//! A write runs only after a decision, whatever public route a host author
//! takes: an offered tool has no way to run itself (pinned by the ui suite),
//! the turn scan gives no permit to a turn that needs approval, a permit runs
//! exactly the call the scan cleared, and a turn with a write runs through
//! the typed suspended run only once a human approved it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Map, Value, json};
use toolgate::run::{Outcome, Reply, RunRequest, ToolCall, TurnScan, scan_turn};
use toolgate::testing::{MemoryLog, ScriptedModel};
use toolgate::{Agent, Execute, Registry, Tool, ToolOutput};

/// Sends money: counts its runs.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct Pay(Arc<AtomicUsize>);

impl Execute for Pay {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        self.0.fetch_add(1, Ordering::SeqCst);
        ToolOutput::text("paid")
    }
}

/// Reads the balance: counts its runs.
#[derive(Tool)]
#[tool(effect = read_only)]
struct Balance(Arc<AtomicUsize>);

impl Execute for Balance {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        self.0.fetch_add(1, Ordering::SeqCst);
        ToolOutput::text("100")
    }
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: json!({"cents": 100}),
    }
}

struct World {
    paid: Arc<AtomicUsize>,
    read: Arc<AtomicUsize>,
    registry: Registry,
}

fn world() -> World {
    let paid = Arc::new(AtomicUsize::new(0));
    let read = Arc::new(AtomicUsize::new(0));
    let registry = Registry::builder()
        .builtin(Pay(Arc::clone(&paid)))
        .builtin(Balance(Arc::clone(&read)))
        .build()
        .unwrap();
    World {
        paid,
        read,
        registry,
    }
}

#[tokio::test]
async fn the_scan_gives_no_permit_to_a_turn_with_a_write() {
    let w = world();
    let offered = w.registry.offer_all().await;
    for turn in [
        vec![call("1", "pay")],
        vec![call("1", "balance"), call("2", "pay")],
        vec![call("1", "pay"), call("2", "balance"), call("3", "unknown")],
    ] {
        assert!(
            matches!(scan_turn(&offered, &turn), TurnScan::Approval),
            "{turn:?}"
        );
    }
    // A read alone is cleared, and its permit runs exactly that call.
    let turn = [call("1", "balance"), call("2", "unknown")];
    let TurnScan::Run(cleared) = scan_turn(&offered, &turn) else {
        panic!("a read waits for nobody");
    };
    let mut outputs = Vec::new();
    for (call, permit) in cleared.into_calls() {
        match permit {
            Ok(permit) => {
                assert_eq!(permit.call(), call);
                assert_eq!(permit.tool().name(), "balance");
                outputs.push(permit.run().await);
            }
            Err(output) => outputs.push(output),
        }
    }
    assert_eq!(outputs[0], ToolOutput::text("100"));
    assert_eq!(
        outputs[1],
        ToolOutput::error("unknown tool `unknown`; the call was not executed")
    );
    // A write the run is not offered is no call at all: it gets an error.
    let reads_only = w.registry.offer(Some(&["balance"])).await;
    let turn = [call("1", "pay")];
    let TurnScan::Run(cleared) = scan_turn(&reads_only, &turn) else {
        panic!("a call the run is not offered needs no approval: it never runs");
    };
    let (_, permit) = cleared.into_calls().next().unwrap();
    assert!(permit.is_err());
    assert_eq!(w.paid.load(Ordering::SeqCst), 0, "no write ran");
    assert_eq!(w.read.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_write_runs_once_after_an_approval_and_never_before() {
    let w = world();
    let model = ScriptedModel::new([
        Reply::Calls {
            content: None,
            calls: vec![call("1", "balance"), call("2", "pay")],
        },
        Reply::Text("paid".into()),
    ]);
    let log = MemoryLog::new();
    let agent = Agent::new(&w.registry, &model, &log);
    let Ok(Outcome::AwaitingApproval(run)) = agent.start(RunRequest::new("alice", "pay")).await
    else {
        panic!("a turn with a write waits");
    };
    assert_eq!(
        (w.read.load(Ordering::SeqCst), w.paid.load(Ordering::SeqCst)),
        (0, 0),
        "the whole turn waits: the read beside the write too"
    );
    // A decision on another turn hands the run back, and nothing runs.
    let refused = run
        .approve(
            &agent,
            "bob",
            toolgate::suspend::TurnDigest::from_text("sha256:0"),
        )
        .await;
    let run = refused
        .err()
        .and_then(toolgate::suspend::ResumeError::into_run)
        .expect("a refused decision hands the run back");
    assert_eq!(w.paid.load(Ordering::SeqCst), 0);
    let digest = run.digest();
    let outcome = run.approve(&agent, "bob", digest).await.unwrap();
    assert!(matches!(outcome, Outcome::Finished { .. }), "{outcome:?}");
    assert_eq!(
        (w.read.load(Ordering::SeqCst), w.paid.load(Ordering::SeqCst)),
        (1, 1)
    );
    assert_eq!(log.records().len(), 1);
}
