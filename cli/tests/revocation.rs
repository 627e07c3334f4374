//! Revocation reaches a running host: a host runs turns in a loop against the
//! workspace's real MCP test server, with approval off for it; mid-loop an
//! operator turns approval back on with the `toolgate` command line (another
//! process, another connection to the database). The host's registry reads
//! the store's operator revision once per turn and so obeys at its next turn.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

mod common;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

use common::{TOOLGATE, toolgate};

use serde_json::json;
use toolgate::run::{RunOptions, RunState, ToolCall, TurnOutcome};
use toolgate::testing::{MemoryLog, ScriptedModel};
use toolgate::{Agent, Registry};
use toolgate_mcp::{Deadlines, McpProvider};
use toolgate_store::Store;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turning_approval_on_mid_loop_suspends_the_hosts_next_turn() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    toolgate(
        dir,
        &[
            "server",
            "add",
            "notes",
            "--name",
            "Notes",
            "--data-class",
            "editor_content",
            "--",
            TOOLGATE,
            "mcp-test-server",
        ],
    );
    toolgate(dir, &["import", "notes"]);
    toolgate(dir, &["server", "set-approval", "notes", "off"]);

    // The host: its own store handle, provider, registry and loop.
    let store = Store::open(common::location(dir))
        .await
        .expect("the store opens");
    let provider = McpProvider::new(store.clone(), Deadlines::default());
    let registry = Registry::builder()
        .provider(provider)
        .build()
        .expect("a registry of one provider boots");
    let model = ScriptedModel::new([]);
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    let mut state = RunState {
        denied: Vec::new(),
        run_id: "host-loop".into(),
        requested_by: "host".into(),
        transcript: Vec::new(),
        iterations: 0,
        options: RunOptions {
            max_iterations: 100,
            ..RunOptions::default()
        },
    };
    let turn = |i: u32| {
        vec![ToolCall {
            id: format!("call_{i}"),
            name: "notes.read_note".into(),
            arguments: json!({"id": 1}),
        }]
    };

    let (mut before, mut after) = (0, None);
    for i in 0..8 {
        if i == 4 {
            toolgate(dir, &["server", "set-approval", "notes", "on"]);
            after = Some(0);
        }
        match agent
            .process_turn(state, turn(i))
            .await
            .expect("the turn is scanned")
        {
            TurnOutcome::Ran(next) => {
                state = next;
                // The call really ran against the server, unpaused.
                let result = state.transcript.iter().rev().find_map(|m| match m {
                    toolgate::run::Message::Tool {
                        is_error, content, ..
                    } => Some((*is_error, content.clone())),
                    _ => None,
                });
                assert!(matches!(result, Some((false, _))), "turn {i}: {result:?}");
                match after.as_mut() {
                    None => before += 1,
                    Some(ran) => *ran += 1,
                }
            }
            TurnOutcome::AwaitingApproval(run) => {
                assert!(after.is_some(), "turn {i} suspended before the change");
                let ran_after = after.unwrap_or_default();
                println!(
                    "turns run before the change: {before}; turns run after it: {ran_after}; turn {i} suspended"
                );
                assert_eq!(before, 4);
                assert!(ran_after <= 1, "the bound is one turn");
                assert_eq!(ran_after, 0, "the next turn after the change suspends");
                assert_eq!(run.pending()[0].name, "notes.read_note");
                return;
            }
            TurnOutcome::WaitingForInput(_) => panic!("no tool here waits for input"),
        }
    }
    panic!("the change was never obeyed");
}
