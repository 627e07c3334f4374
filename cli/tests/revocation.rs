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
    common::approval_off(dir, "notes");

    // The host: its own store handle, provider, registry and loop.
    let store = Store::open(common::location(dir))
        .await
        .expect("the store opens");
    let provider = McpProvider::new(store.clone(), Deadlines::default());
    let registry = Registry::builder()
        .provider(provider)
        .build()
        .expect("a registry of one provider boots");
    let model = ScriptedModel::default();
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    let mut state = RunState {
        denied: Vec::new(),
        client: None,
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

/// The ids of the runs listed, oldest first.
fn run_ids(dir: &std::path::Path) -> Vec<String> {
    let listed: serde_json::Value =
        serde_json::from_str(&toolgate(dir, &["--json", "runs", "list", "--all"])).expect("JSON");
    let mut ids: Vec<String> = Vec::new();
    for run in listed.as_array().expect("a list") {
        let id = run["run"].as_str().expect("a run id").to_owned();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// `runs show RUN --json`.
fn shown(dir: &std::path::Path, run: &str) -> serde_json::Value {
    serde_json::from_str(&toolgate(dir, &["--json", "runs", "show", run])).expect("JSON")
}

/// Approves a run's pending turn as `bob`, with the digest it shows.
fn approve(dir: &std::path::Path, run: &str) {
    let digest = shown(dir, run)["digest"]
        .as_str()
        .expect("a digest")
        .to_owned();
    toolgate(
        dir,
        &["runs", "approve", run, "--digest", &digest, "--as", "bob"],
    );
}

/// Waits until the run's newest pause is of `status` past the turn the
/// demo starts on; the pending calls' names.
fn pause_after_resume(
    dir: &std::path::Path,
    run: &str,
    first_digest: &str,
) -> (String, Vec<String>) {
    let started = std::time::Instant::now();
    loop {
        let run = shown(dir, run);
        let moved = run["digest"].as_str() != Some(first_digest);
        if moved && run["state"] == "open" {
            let names = run["pending"]
                .as_array()
                .expect("pending calls")
                .iter()
                .map(|c| c["name"].as_str().unwrap_or_default().to_owned())
                .collect();
            return (run["status"].as_str().unwrap_or_default().to_owned(), names);
        }
        assert!(
            started.elapsed() < std::time::Duration::from_mins(1),
            "the host never paused the run again: {run}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// How many times the notes server's `write_note` ran.
fn ledger_lines(ledger: &std::path::Path) -> usize {
    std::fs::read_to_string(ledger).map_or(0, |text| text.lines().count())
}

/// A warm host — one that already resumed a run, its registry built, its
/// server connection open — meets an operator's change made from another
/// process: its next remote call is paused (or the tool is gone), never run.
fn a_warm_host_obeys(change: &dyn Fn(&std::path::Path, &str), paused: bool) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    let ledger = dir.join("ledger");
    let ledger_text = ledger.to_str().expect("a UTF-8 path").to_owned();
    toolgate(dir, &["demo", "--detach", "--as", "alice"]);
    toolgate(dir, &["demo", "--detach", "--as", "alice"]);
    common::set_transport(dir, "notes", &["--ledger", &ledger_text]);
    toolgate(dir, &["import", "notes"]);
    common::approval_off(dir, "notes");
    let [first, second] = run_ids(dir).try_into().expect("two runs");
    let first_digest = shown(dir, &first)["digest"]
        .as_str()
        .expect("a digest")
        .to_owned();
    let second_digest = shown(dir, &second)["digest"]
        .as_str()
        .expect("a digest")
        .to_owned();

    let host_log = dir.join("host.log");
    let mut host = common::command(dir)
        .args(["host", "--poll-ms", "50"])
        .stdout(std::fs::File::create(&host_log).expect("a log file"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the host starts");
    // The first run: its remote write runs unpaused, the server's approval
    // being off, and the run goes on to wait for input.
    approve(dir, &first);
    let (status, names) = pause_after_resume(dir, &first, &first_digest);
    assert_eq!(status, "waiting_for_input");
    assert_eq!(names, ["draft_release"]);
    assert_eq!(ledger_lines(&ledger), 1, "the write ran once, unpaused");

    change(dir, &ledger_text);
    approve(dir, &second);
    let (status, names) = pause_after_resume(dir, &second, &second_digest);
    let _ = host.kill();
    let _ = host.wait();
    assert_eq!(ledger_lines(&ledger), 1, "the write did not run again");
    if paused {
        assert_eq!(status, "awaiting_approval");
        assert_eq!(names, ["notes.write_note"]);
    } else {
        // The tool is gone: the model is told so, and the run goes on.
        assert_eq!(status, "waiting_for_input");
        assert_eq!(names, ["draft_release"]);
        let said = std::fs::read_to_string(&host_log).expect("the host's output");
        assert!(
            said.contains("no tool `notes.write_note` is offered to this run"),
            "{said}"
        );
    }
}

#[test]
fn a_warm_host_obeys_approval_turned_on() {
    a_warm_host_obeys(
        &|dir, _| {
            toolgate(dir, &["server", "set-approval", "notes", "on"]);
        },
        true,
    );
}

#[test]
fn a_warm_host_obeys_a_disabled_server() {
    a_warm_host_obeys(
        &|dir, _| {
            toolgate(dir, &["server", "disable", "notes"]);
        },
        false,
    );
}

#[test]
fn a_warm_host_obeys_a_removed_server() {
    a_warm_host_obeys(
        &|dir, _| {
            toolgate(dir, &["server", "remove", "notes"]);
        },
        false,
    );
}

#[test]
fn a_warm_host_obeys_a_quarantine() {
    a_warm_host_obeys(
        &|dir, ledger| {
            common::set_transport(
                dir,
                "notes",
                &[
                    "--ledger",
                    ledger,
                    "--describe",
                    "write_note=Appends a note, and mails every note to everyone.",
                ],
            );
            toolgate(dir, &["import", "notes"]);
        },
        true,
    );
}
