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
    connect_args(dir, &["--wait", wait], handler).await
}

/// `toolgate gateway --user alice ARGS…` over `dir`, and an MCP client
/// connected to it, its notifications handled by `handler`.
async fn connect_args<H: rmcp::ClientHandler>(
    dir: &Path,
    args: &[&str],
    handler: H,
) -> RunningService<RoleClient, H> {
    let mut command = tokio::process::Command::new(TOOLGATE);
    command
        .arg("--data-dir")
        .arg(dir)
        .args(["gateway", "--user", "alice"])
        .args(args)
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

/// `write_note` of `text` asked through `client`, in a task of its own: a
/// call held while the test decides it.
fn write_in_background(
    client: &Peer<RoleClient>,
    text: &'static str,
) -> tokio::task::JoinHandle<CallToolResult> {
    let client = client.clone();
    tokio::spawn(async move { call(&client, "notes__write_note", json!({"text": text})).await })
}

/// Bob approves `run`'s turn of `digest` from the command line.
fn approve(dir: &Path, run: &str, digest: &str) {
    toolgate(
        dir,
        &["runs", "approve", run, "--digest", digest, "--as", "bob"],
    );
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

/// Every open run, once there are `count`: its id, digest and the text the
/// held `write_note` would write.
async fn open_runs(dir: &Path, count: usize) -> Vec<(String, String, String)> {
    for _ in 0..200 {
        let runs = json_of(dir, &["runs", "list"]);
        let open: Vec<String> = runs
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["state"] == "open")
            .map(|r| r["run"].as_str().unwrap().to_owned())
            .collect();
        if open.len() == count {
            return open
                .into_iter()
                .map(|id| {
                    let shown = json_of(dir, &["runs", "show", &id]);
                    let digest = shown["digest"].as_str().unwrap().to_owned();
                    let said = shown["pending"][0]["arguments"]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    (id, digest, said)
                })
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "not {count} runs open: {}",
        json_of(dir, &["runs", "list", "--all"])
    );
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
    let held = write_in_background(client.peer(), "hello");
    let (run, digest) = waiting(dir).await;
    let shown = json_of(dir, &["runs", "show", &run]);
    assert_eq!(shown["requested_by"], "alice");
    assert_eq!(shown["pending"][0]["name"], "notes.write_note");
    assert!(shown["client"]["name"].is_string(), "{shown}");
    assert_eq!(lines(&ledger), 0, "nothing ran before the decision");
    approve(dir, &run, &digest);
    let answered = held.await.unwrap();
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1, "ran once");
    let ended = json_of(dir, &["runs", "show", &run]);
    assert_eq!(ended["outcome"], "finished", "{ended}");

    // Denied while held: answered with the denial, never run.
    let held = write_in_background(client.peer(), "no");
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
    // It names the run, never the digest a decision carries or the command
    // that decides: the client's model reads this.
    assert!(said.contains("toolgate runs show"), "{said}");
    assert!(
        !said.contains("sha256:") && !said.contains("runs approve"),
        "{said}"
    );
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
    approve(dir, &run, &digest);
    let answered = call(&client, "notes__write_note", json!({"text": "later"})).await;
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1, "ran once");
    // Asked once more — a client that gave up on the answer and retried —
    // it is answered with the stored result, and not run again.
    let stored = call(&client, "notes__write_note", json!({"text": "later"})).await;
    assert_eq!(stored.is_error, Some(false), "{}", text(&stored));
    assert_eq!(text(&stored), text(&answered));
    assert_eq!(lines(&ledger), 1, "never run twice");
    // The same tool with other arguments is another call: a new run, which
    // waits and does not run.
    let fresh = call(&client, "notes__write_note", json!({"text": "other"})).await;
    assert!(
        text(&fresh).starts_with("the call waits for approval") && !text(&fresh).contains(&run),
        "{}",
        text(&fresh)
    );
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
    // The upstream dies mid-call: that call's answer is lost, said so; the
    // next call is sent over a connection made again, and answered.
    let lost = call(&client, "notes__crash", json!({})).await;
    assert_eq!(lost.is_error, Some(true));
    assert!(
        text(&lost).contains("its answer was lost"),
        "{}",
        text(&lost)
    );
    let read = call(&client, "notes__read_note", json!({"id": 0})).await;
    assert_eq!(read.is_error, Some(false), "{}", text(&read));
    // The lost call's run is recorded, its outcome unknown: it waits for an
    // operator's choice (gateway_lost_answer.rs), and nothing else does.
    let listed = json_of(dir, &["runs", "list"]);
    let [unknown] = listed.as_array().unwrap().as_slice() else {
        panic!("the lost call's run alone: {listed}");
    };
    assert_eq!(unknown["standing"], "outcome unknown", "{unknown}");
    assert!(text(&lost).contains(unknown["run"].as_str().unwrap()));

    // The operator turns approval on again: the running gateway's next
    // call (past its `--follow-ms`) is gated anew, held, not run.
    toolgate(dir, &["server", "set-approval", "notes", "on"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let gated = write_in_background(client.peer(), "gated");
    let (run, _) = waiting(dir).await;
    assert_eq!(lines(&ledger), 1, "held, not run");
    gated.abort();
    assert!(!run.is_empty());
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

/// Two gateway processes on one store, each with its client: each resumes
/// only the runs it created, and a decision of one's run answers no call
/// of the other's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_on_one_store_share_a_held_call_and_run_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger);
    let first = connect(dir, "30").await;
    let second = connect(dir, "30").await;
    let from_first = write_in_background(first.peer(), "from the first");
    let from_second = write_in_background(second.peer(), "from the second");
    // The second client asks the first's very call: the same person, the
    // same client program, the same arguments — through another gateway of
    // the name, it is the same call, and joins its run.
    let runs = open_runs(dir, 2).await;
    let same_as_first = write_in_background(second.peer(), "from the first");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(open_runs(dir, 2).await.len(), 2, "no third run");
    assert_eq!(lines(&ledger), 0, "nothing ran undecided");
    let of = |said: &str| {
        runs.iter()
            .filter(|(_, _, text)| text == said)
            .map(|(id, digest, _)| (id.clone(), digest.clone()))
            .collect::<Vec<_>>()
    };
    let [(second_run, second_digest)] = of("from the second").try_into().unwrap();
    toolgate(
        dir,
        &[
            "runs",
            "deny",
            &second_run,
            "--digest",
            &second_digest,
            "--as",
            "bob",
        ],
    );
    let denied = from_second.await.unwrap();
    assert_eq!(denied.is_error, Some(true));
    assert!(text(&denied).contains("denied"), "{}", text(&denied));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!from_first.is_finished() && !same_as_first.is_finished());

    // Approved once: both gateways' askers are answered, and it runs once.
    let [(one, one_digest)] = of("from the first").try_into().unwrap();
    toolgate(
        dir,
        &[
            "runs",
            "approve",
            &one,
            "--digest",
            &one_digest,
            "--as",
            "bob",
        ],
    );
    let answered = from_first.await.unwrap();
    let joined = same_as_first.await.unwrap();
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(text(&joined), text(&answered));
    assert_eq!(
        lines(&ledger),
        1,
        "the approved call ran once; the denied one never"
    );
    first.cancel().await.unwrap();
    second.cancel().await.unwrap();
}

/// An upstream that dies mid-call, after the approved write ran: the client
/// is told the outcome is unknown, the run waits for an operator's choice,
/// and the same call asked again is answered by that choice — never run a
/// second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_killed_mid_call_leaves_an_outcome_to_choose_and_runs_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered_with(dir, &ledger, &["--drop-answer", "write_note"]);
    let client = connect(dir, "20").await;
    let asked = || write_in_background(client.peer(), "once");
    let held = asked();
    let (run, digest) = waiting(dir).await;
    approve(dir, &run, &digest);
    let answered = held.await.unwrap();
    assert_eq!(answered.is_error, Some(true));
    let said = text(&answered);
    assert!(said.contains("outcome is unknown"), "{said}");
    assert!(said.contains("toolgate runs show"), "{said}");
    assert!(
        !said.contains("runs rerun") && !said.contains("runs skip"),
        "{said}"
    );
    assert_eq!(lines(&ledger), 1, "the write ran; its answer was lost");

    // Asked again: it waits on the same run, for the operator's choice.
    let again = asked();
    let shown = json_of(dir, &["runs", "show", &run]);
    let unknown = shown["unknown"]
        .as_array()
        .and_then(|calls| calls.first())
        .cloned()
        .unwrap_or_else(|| panic!("no call of unknown outcome: {shown}"));
    let call_id = unknown["call"].as_str().unwrap().to_owned();
    let choice_digest = unknown["digest"].as_str().unwrap().to_owned();
    toolgate(
        dir,
        &[
            "runs",
            "skip",
            &run,
            "--call",
            &call_id,
            "--digest",
            &choice_digest,
            "--reason",
            "it ran: the ledger has it",
            "--as",
            "bob",
        ],
    );
    let answered = again.await.unwrap();
    assert_eq!(answered.is_error, Some(true), "{}", text(&answered));
    assert!(
        text(&answered).contains("chose not to run it again"),
        "{}",
        text(&answered)
    );
    assert_eq!(lines(&ledger), 1, "never run twice");
    let ended = json_of(dir, &["runs", "show", &run]);
    assert_eq!(ended["outcome"], "finished", "{ended}");
    client.cancel().await.unwrap();
}

/// A client that counts the progress notifications it receives.
#[derive(Clone, Default)]
struct Progress(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl rmcp::ClientHandler for Progress {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.0
            .lock()
            .unwrap()
            .push(params.message.unwrap_or_default());
    }
}

/// A held call tells its client, as progress, that it waits and for what;
/// the client that gives up (its request cancelled) leaves the run
/// visible and decidable, and the same call asked again is answered by the
/// decision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_call_reports_progress_and_survives_its_client_giving_up() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger);
    let progress = Progress::default();
    let client = connect_with(dir, "30", progress.clone()).await;
    let held = write_in_background(client.peer(), "kept");
    let (run, digest) = waiting(dir).await;
    let mut waited = 0;
    while progress.0.lock().unwrap().is_empty() {
        assert!(waited < 200, "no progress within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    let told = progress.0.lock().unwrap()[0].clone();
    assert!(
        told.contains(&run) && told.contains("toolgate runs show") && !told.contains("sha256:"),
        "{told}"
    );
    // The client gives up: dropping the request sends `notifications/cancelled`.
    held.abort();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (still, _) = waiting(dir).await;
    assert_eq!(still, run, "the run stays, decidable");
    approve(dir, &run, &digest);
    let answered = call(&client, "notes__write_note", json!({"text": "kept"})).await;
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1, "ran once");
    client.cancel().await.unwrap();
}

/// `toolgate gateway` over `dir` with its lease at `lease_ms`, the child
/// kept so the test can kill it, and a client connected to it.
async fn killable(
    dir: &Path,
    lease_ms: &str,
) -> (tokio::process::Child, RunningService<RoleClient, ()>) {
    let mut child = tokio::process::Command::new(TOOLGATE)
        .arg("--data-dir")
        .arg(dir)
        .args(["gateway", "--user", "alice", "--wait", "20"])
        .args(["--lease-ms", lease_ms])
        .env_remove("TOOLGATE_DATABASE_URL")
        .envs(database_env(dir))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the gateway starts");
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let client = ().serve((stdout, stdin)).await.expect("the client connects");
    (child, client)
}

/// A gateway killed while an approved write runs: the gateway started next
/// under the same name picks the run up once its lease ran out, by the
/// journal — the call started and never ended, so its outcome is unknown —
/// and the client's same call, asked of it, is answered by the operator's
/// choice. Nothing runs twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_killed_mid_call_leaves_its_run_to_the_next_and_nothing_runs_twice() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered_with(dir, &ledger, &["--delay", "write_note=1"]);
    let (mut first, client) = killable(dir, "1000").await;
    let held = write_in_background(client.peer(), "once");
    let (run, digest) = waiting(dir).await;
    approve(dir, &run, &digest);
    // Claimed and its call started by the journal (the upstream waits a
    // second before it writes): killed before the journal says so, the
    // call would not have started, and the next gateway would simply run it.
    let mut started = false;
    for _ in 0..250 {
        let shown = json_of(dir, &["runs", "show", &run]);
        started = shown["execution"] == "resuming"
            && shown["calls"]
                .as_array()
                .is_some_and(|calls| calls.iter().any(|c| c["state"] == "started"));
        if started {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(started, "the approved call was not seen started");
    first.start_kill().unwrap();
    first.wait().await.unwrap();
    let _ = held.await;
    drop(client);
    // Whatever the orphaned upstream did, it did once.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let ran = lines(&ledger);
    assert!(ran <= 1, "ran {ran} times");

    let (_second, client) = killable(dir, "1000").await;
    let mut unknown = Value::Null;
    for _ in 0..200 {
        let shown = json_of(dir, &["runs", "show", &run]);
        if let Some(first) = shown["unknown"].as_array().and_then(|u| u.first()) {
            unknown = first.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(unknown.is_object(), "the run was not picked up");
    // The same call, asked of the new gateway: its run, not a new one.
    let again = write_in_background(client.peer(), "once");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let open = json_of(dir, &["runs", "list"]);
    assert_eq!(open.as_array().map(Vec::len), Some(1), "{open}");
    toolgate(
        dir,
        &[
            "runs",
            "skip",
            &run,
            "--call",
            unknown["call"].as_str().unwrap(),
            "--digest",
            unknown["digest"].as_str().unwrap(),
            "--reason",
            "checked by hand",
            "--as",
            "bob",
        ],
    );
    let answered = again.await.unwrap();
    assert!(
        text(&answered).contains("chose not to run it again"),
        "{}",
        text(&answered)
    );
    assert_eq!(lines(&ledger), ran, "nothing ran twice");
    client.cancel().await.unwrap();
}

/// What a tool answers beyond its text — an image, structured content —
/// reaches the client as the tool gave it, its hidden characters removed:
/// from a held call resumed after its approval (through the journal) and
/// from a call the gate lets run at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_is_more_than_text_reaches_the_client_whole() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered_with(
        dir,
        &ledger,
        &["--rich", "write_note", "--rich", "read_note"],
    );
    let client = connect(dir, "20").await;
    let image_of = |result: &CallToolResult| {
        result
            .content
            .iter()
            .find_map(|c| c.as_image().map(|i| (i.data.clone(), i.mime_type.clone())))
    };
    let held = write_in_background(client.peer(), "pic");
    let (run, digest) = waiting(dir).await;
    approve(dir, &run, &digest);
    let answered = held.await.unwrap();
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert!(
        text(&answered).contains("wrote note"),
        "{}",
        text(&answered)
    );
    assert_eq!(
        image_of(&answered),
        Some((
            toolgate_mcp_test_server::RICH_IMAGE.to_owned(),
            "image/png".to_owned()
        ))
    );
    assert_eq!(
        answered.structured_content,
        Some(json!({"tool": "write_note", "arguments": {"text": "pic"}, "text": "structured"}))
    );

    common::approval_off(dir, "notes");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let read = call(&client, "notes__read_note", json!({"id": 0})).await;
    assert_eq!(read.is_error, Some(false), "{}", text(&read));
    assert!(image_of(&read).is_some(), "{read:?}");
    assert_eq!(
        read.structured_content,
        Some(json!({"tool": "read_note", "arguments": {"id": 0}, "text": "structured"}))
    );
    client.cancel().await.unwrap();
}

/// A gateway started with `--four-eyes` holds its user's calls for someone
/// else: the requester's own approval is refused, another person's runs
/// the call once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_four_eyes_the_gateways_user_cannot_approve_their_own_call() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger);
    let client = connect_args(dir, &["--wait", "20", "--four-eyes"], ()).await;
    let held = write_in_background(client.peer(), "4e");
    let (run, digest) = waiting(dir).await;
    let refused = common::command(dir)
        .args([
            "runs", "approve", &run, "--digest", &digest, "--as", "alice",
        ])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("its approval must come from someone else"),
        "{said}"
    );
    assert_eq!(lines(&ledger), 0);
    approve(dir, &run, &digest);
    let answered = held.await.unwrap();
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1);
    client.cancel().await.unwrap();
}

/// A call whose outcome is unknown and whose choice is not made within the
/// wait is told so again — it may have run — never that it waits for
/// approval and was not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_outcome_asked_again_is_still_told_it_may_have_run() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered_with(dir, &ledger, &["--drop-answer", "write_note"]);
    let client = connect(dir, "5").await;
    let held = write_in_background(client.peer(), "once");
    let (run, digest) = waiting(dir).await;
    approve(dir, &run, &digest);
    let first = held.await.unwrap();
    assert!(
        text(&first).contains("outcome is unknown"),
        "{}",
        text(&first)
    );
    let again = call(&client, "notes__write_note", json!({"text": "once"})).await;
    let said = text(&again);
    assert_eq!(again.is_error, Some(true));
    assert!(
        said.contains("outcome is unknown")
            && said.contains("it may have run")
            && said.contains(&run),
        "{said}"
    );
    assert!(!said.contains("was not run"), "{said}");
    assert_eq!(lines(&ledger), 1);
    client.cancel().await.unwrap();
}

/// A client that goes away while its call is held ends the wait: a decision
/// taken after that runs nothing until the same call is asked again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_leaves_its_call_decidable_and_unrun() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger);
    let (mut gateway, client) = killable(dir, "30000").await;
    let held = write_in_background(client.peer(), "gone");
    let (run, digest) = waiting(dir).await;
    held.abort();
    drop(client);
    approve(dir, &run, &digest);
    let ended = tokio::time::timeout(Duration::from_secs(10), gateway.wait()).await;
    assert!(ended.is_ok(), "the gateway ends with its client");
    assert_eq!(lines(&ledger), 0, "no one asked; nothing ran");
    let shown = json_of(dir, &["runs", "show", &run]);
    assert_eq!(shown["state"], "decided", "{shown}");
}
