//! `toolgate gateway`, driven by a real MCP client (rmcp) over stdio, the
//! notes test server upstream: the tools under their wire names, a call the
//! gate lets run forwarded at once, a write held until an operator decides
//! it from the command line — approved, it runs once; denied, it is answered
//! with the denial — and one past the wait answered with its run, still
//! decidable, never run.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RoleClient, RunningService};
use serde_json::{Value, json};

mod common;
use common::{TOOLGATE, database_env, toolgate};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

fn json_of(dir: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&toolgate(dir, &[&["--json"][..], args].concat())).expect("JSON")
}

/// A data directory with the notes server registered and imported, its
/// writes recorded in `ledger`.
fn registered(dir: &Path, ledger: &Path) {
    registered_with(dir, ledger, &[]);
}

/// [`registered`], the server started with `extra` flags.
fn registered_with(dir: &Path, ledger: &Path, extra: &[&str]) {
    let ledger = ledger.to_str().expect("a UTF-8 path");
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
            "--drop",
            "tidy_notes",
            "--ledger",
            ledger,
        ]
        .iter()
        .chain(extra)
        .copied()
        .collect::<Vec<_>>(),
    );
    toolgate(dir, &["import", "notes"]);
}

/// `toolgate gateway` over `dir`, and an MCP client connected to it.
async fn connect(dir: &Path, wait: &str) -> RunningService<RoleClient, ()> {
    connect_with(dir, wait, ()).await
}

/// [`connect`], the client's notifications handled by `handler`.
async fn connect_with<H: rmcp::ClientHandler>(
    dir: &Path,
    wait: &str,
    handler: H,
) -> RunningService<RoleClient, H> {
    let mut command = tokio::process::Command::new(TOOLGATE);
    command
        .arg("--data-dir")
        .arg(dir)
        .args(["gateway", "--user", "alice", "--wait", wait])
        .env_remove("TOOLGATE_DATABASE_URL")
        .envs(database_env(dir))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("the gateway starts");
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    // The child lives as long as the test's runtime; dropped with it.
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    handler
        .serve((stdout, stdin))
        .await
        .expect("the client connects")
}

async fn call(client: &Peer<RoleClient>, name: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("an object");
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
        .await
        .expect("the call is answered")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<String>()
}

/// The one waiting run: its id and digest, once it is there.
async fn waiting(dir: &Path) -> (String, String) {
    for _ in 0..200 {
        let runs = json_of(dir, &["runs", "list"]);
        let open: Vec<&Value> = runs
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["state"] == "open")
            .collect();
        if let [run] = open.as_slice() {
            let id = run["run"].as_str().unwrap().to_owned();
            let shown = json_of(dir, &["runs", "show", &id]);
            return (id, shown["digest"].as_str().unwrap().to_owned());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no run waits");
}

fn lines(ledger: &Path) -> usize {
    std::fs::read_to_string(ledger).map_or(0, |t| t.lines().count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_write_through_the_gateway_runs_only_once_approved() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger);
    let client = connect(dir, "20").await;

    // The offer, under wire names: the notes server's tools, no demo
    // builtins (a gateway serves its own).
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert!(names.contains(&"notes__write_note".to_owned()), "{names:?}");
    assert!(names.contains(&"notes__read_note".to_owned()), "{names:?}");
    assert!(
        names.iter().all(|n| toolgate::wire::is_wire_name(n)),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("write_file")), "{names:?}");

    // Names that are no offered tool's wire name: refused, never run —
    // the local name too, and a name the client made up.
    for name in [
        "notes.write_note",
        "notes__nothing",
        "mcp__toolgate__notes__write_note",
    ] {
        let refused = call(&client, name, json!({"text": "x"})).await;
        assert_eq!(refused.is_error, Some(true), "{name}");
        assert!(
            text(&refused).contains("is offered by this gateway"),
            "{name}: {}",
            text(&refused)
        );
    }
    assert_eq!(lines(&ledger), 0);

    // A write waits; the operator approves it while it is held; it runs once.
    let held = {
        let client = client.peer().clone();
        tokio::spawn(
            async move { call(&client, "notes__write_note", json!({"text": "hello"})).await },
        )
    };
    let (run, digest) = waiting(dir).await;
    let shown = json_of(dir, &["runs", "show", &run]);
    assert_eq!(shown["requested_by"], "alice");
    assert_eq!(shown["pending"][0]["name"], "notes.write_note");
    assert!(shown["client"]["name"].is_string(), "{shown}");
    assert_eq!(lines(&ledger), 0, "nothing ran before the decision");
    toolgate(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    let answered = held.await.unwrap();
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1, "ran once");
    let ended = json_of(dir, &["runs", "show", &run]);
    assert_eq!(ended["outcome"], "finished", "{ended}");

    // Denied while held: answered with the denial, never run.
    let held = {
        let client = client.peer().clone();
        tokio::spawn(async move { call(&client, "notes__write_note", json!({"text": "no"})).await })
    };
    let (run, digest) = waiting(dir).await;
    toolgate(
        dir,
        &["runs", "deny", &run, "--digest", &digest, "--as", "bob"],
    );
    let answered = held.await.unwrap();
    assert_eq!(answered.is_error, Some(true));
    assert!(text(&answered).contains("denied"), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1, "a denied call never runs");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_the_wait_is_answered_with_its_run_and_stays_decidable() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger);
    let client = connect(dir, "1").await;
    let answered = call(&client, "notes__write_note", json!({"text": "later"})).await;
    assert_eq!(answered.is_error, Some(true));
    let said = text(&answered);
    assert!(
        said.starts_with("the call waits for approval: run `"),
        "{said}"
    );
    assert!(said.contains("toolgate runs approve"), "{said}");
    let (run, digest) = waiting(dir).await;
    assert!(said.contains(&run), "{said}");
    assert_eq!(lines(&ledger), 0, "not run");

    // Asked again before anyone decided: it waits on the same run.
    let again = call(&client, "notes__write_note", json!({"text": "later"})).await;
    assert!(text(&again).contains(&run), "{}", text(&again));
    assert_eq!(
        json_of(dir, &["runs", "list"]).as_array().map(Vec::len),
        Some(1)
    );

    // Decided while the client was away; the same call again is answered by
    // that decision, and runs once.
    toolgate(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    let answered = call(&client, "notes__write_note", json!({"text": "later"})).await;
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1, "ran once");
    // Answered, it is done: the same call once more is a new call, which
    // waits — as does one with other arguments. Neither runs.
    for text_ in ["later", "other"] {
        let fresh = call(&client, "notes__write_note", json!({"text": text_})).await;
        assert!(
            text(&fresh).starts_with("the call waits for approval") && !text(&fresh).contains(&run),
            "{}",
            text(&fresh)
        );
    }
    assert_eq!(lines(&ledger), 1, "nothing ran twice or unapproved");
    client.cancel().await.unwrap();
}

/// On a server whose approval the operator turned off, a call the gate lets
/// run is forwarded at once, and its result passed back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_gate_lets_run_is_forwarded_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger);
    common::approval_off(dir, "notes");
    let client = connect(dir, "20").await;
    let answered = call(&client, "notes__write_note", json!({"text": "at once"})).await;
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1);
    let read = call(&client, "notes__read_note", json!({"id": 1})).await;
    assert_eq!(read.is_error, Some(false), "{}", text(&read));
    assert!(
        json_of(dir, &["runs", "list"])
            .as_array()
            .is_some_and(Vec::is_empty),
        "nothing waits"
    );
    client.cancel().await.unwrap();
}

/// A client that counts the `tools/list_changed` notifications it receives.
#[derive(Clone, Default)]
struct Told(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl rmcp::ClientHandler for Told {
    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<RoleClient>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// An operator's change reaches a running gateway: the client is told its
/// tools changed, lists them again, and a tool no longer offered is
/// refused by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_change_reaches_a_running_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger);
    let told = Told::default();
    let client = connect_with(dir, "20", told.clone()).await;
    assert!(!client.list_all_tools().await.unwrap().is_empty());
    toolgate(dir, &["server", "disable", "notes"]);
    let mut waited = 0;
    while told.0.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(waited < 200, "no list_changed within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    assert!(client.list_all_tools().await.unwrap().is_empty());
    let refused = call(&client, "notes__write_note", json!({"text": "x"})).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).contains("is offered by this gateway"),
        "{}",
        text(&refused)
    );
    assert_eq!(lines(&ledger), 0);
    client.cancel().await.unwrap();
}

/// An upstream server that asks, mid-call, for a user's input through the
/// gateway is refused: a server never reaches the user's prompt through
/// the gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_cannot_elicit_through_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered_with(dir, &ledger, &["--elicit", "read_note"]);
    common::approval_off(dir, "notes");
    let client = connect(dir, "20").await;
    let answered = call(&client, "notes__read_note", json!({"id": 1})).await;
    let said = text(&answered);
    assert!(said.contains("elicitation refused"), "{said}");
    assert!(
        said.contains("toolgate does not let a server ask a user for input"),
        "{said}"
    );
    client.cancel().await.unwrap();
}
