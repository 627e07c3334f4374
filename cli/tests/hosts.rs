//! Operator decides, host resumes — with real processes.
//!
//! The host is this test binary run again as a child process (the test
//! `host_process`, selected by its exact name, with the data directory in
//! its environment): its registry holds two
//! local tools of its own — `append_ledger`, a `non_idempotent_write` that
//! appends a line to a file, and `set_marker`, an `idempotent_write` — and
//! the `notes` server's tools, served by the workspace's MCP test server
//! with a ledger of its own. The `toolgate` binary never has these local
//! tools, so when a decision taken with it leads to a write, the host ran it.
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

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::erased::BoxFuture;
use toolgate::identity::{IdentitySource, Operator};
use toolgate::run::{Message, Model, ModelError, Outcome, Reply, RunRequest, ToolCall, ToolSpec};
use toolgate::suspend::SuspendedRun;
use toolgate::testing::MemoryLog;
use toolgate::{Agent, Execute, Registry, Tool, ToolOutput};
use toolgate_mcp::{Deadlines, McpProvider};
use toolgate_store::{Answer, Ended, Host, Store};

const HOST: &str = "worker";

#[derive(Debug, Deserialize, JsonSchema)]
struct LedgerArgs {
    /// The line to append.
    line: String,
}

/// Appends a line to the host's ledger file: repeating it repeats the line.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct AppendLedger(PathBuf);

impl Execute for AppendLedger {
    type Args = LedgerArgs;
    async fn execute(&self, args: LedgerArgs) -> ToolOutput {
        use std::io::Write;
        tokio::time::sleep(Duration::from_millis(15)).await;
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.0)
            .and_then(|mut f| f.write_all(format!("{}\n", args.line).as_bytes()));
        tokio::time::sleep(Duration::from_millis(15)).await;
        match appended {
            Ok(()) => ToolOutput::text(format!("appended {}", args.line)),
            Err(error) => ToolOutput::error(format!("cannot append: {error}")),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
struct MarkerArgs {
    /// What the marker file holds afterwards.
    value: String,
}

/// Sets the marker file's content: repeating it changes nothing more.
#[derive(Tool)]
#[tool(effect = idempotent_write)]
struct SetMarker(PathBuf);

impl Execute for SetMarker {
    type Args = MarkerArgs;
    async fn execute(&self, args: MarkerArgs) -> ToolOutput {
        tokio::time::sleep(Duration::from_millis(15)).await;
        match std::fs::write(&self.0, &args.value) {
            Ok(()) => ToolOutput::text("marker set"),
            Err(error) => ToolOutput::error(format!("cannot set the marker: {error}")),
        }
    }
}

/// A model whose reply depends only on the transcript, so any process can
/// resume a run: one turn of three calls named after the run's prompt, then
/// an answer.
struct Script;

impl Model for Script {
    fn respond<'a>(
        &'a self,
        transcript: &'a [Message],
        _: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<toolgate::run::Response, ModelError>> {
        let tag = transcript
            .iter()
            .find_map(|m| match m {
                Message::User { content } => Some(content.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let answered = transcript
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let reply = if answered == 0 {
            Reply::Calls {
                content: None,
                calls: vec![
                    call("c1", "append_ledger", json!({"line": tag})),
                    call("c2", "set_marker", json!({"value": tag})),
                    call("c3", "notes.write_note", json!({"text": tag})),
                ],
            }
        } else {
            Reply::Text(format!("done {tag}"))
        };
        Box::pin(async move { Ok(reply.into()) })
    }
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

/// The host's registry: its own tools and the store's servers.
fn host_registry(store: &Store, dir: &Path) -> Registry {
    Registry::builder()
        .builtin(AppendLedger(dir.join("ledger.txt")))
        .builtin(SetMarker(dir.join("marker.txt")))
        .provider(McpProvider::new(store.clone(), Deadlines::default()))
        .build()
        .expect("the host's registry boots")
}

/// A data directory with the notes server registered (approval required),
/// writing its own ledger, and imported.
fn prepared() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path();
    let notes = path.join("notes-ledger.txt");
    toolgate(
        path,
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
            "--ledger",
            notes.to_str().expect("a UTF-8 path"),
        ],
    );
    toolgate(path, &["import", "notes"]);
    dir
}

fn lines(path: &Path, line: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == line)
        .count()
}

/// Starts a run for the host in this process (nothing executes: its turn
/// waits for approval) and saves its pause under the host's name.
async fn start_run(store: &Store, dir: &Path, tag: &str) -> SuspendedRun {
    let registry = host_registry(store, dir);
    let log = MemoryLog::new();
    let outcome = Agent::new(&registry, &Script, &log)
        .start(RunRequest::new("alice", tag))
        .await
        .expect("the run starts");
    let Outcome::AwaitingApproval(run) = outcome else {
        panic!("the turn writes, so it waits for approval: {outcome:?}");
    };
    let run = SuspendedRun::AwaitingApproval(run);
    store.save_suspended(&run, HOST).await.expect("saved");
    run
}

/// The host: resumes decided runs of host `worker` until `idle` passes with
/// nothing decided or resuming left, printing one `ENDED <run> <state>` line
/// for each, and returns them.
async fn serve(dir: &Path, lease: Duration, idle: Duration) -> Vec<(String, &'static str)> {
    let store = Store::open(common::location(dir)).await.expect("store");
    let registry = host_registry(&store, dir);
    let host = Host::new(store.clone(), HOST)
        .expect("a usable name")
        .with_lease(lease);
    println!("HOST READY");
    let mut ended = Vec::new();
    let mut quiet_since = Instant::now();
    loop {
        if let Some(task) = host.next().await.expect("the store answers") {
            let resumed = host
                .resume(task, &registry, &Script)
                .await
                .expect("the store answers");
            let state = state_word(&resumed.ended);
            println!("ENDED {} {state}", resumed.run_id);
            ended.push((resumed.run_id, state));
            quiet_since = Instant::now();
            continue;
        }
        let busy = store
            .open_runs()
            .await
            .expect("the store answers")
            .iter()
            .any(|r| {
                r.owner == HOST
                    && r.state == "decided"
                    && (r.execution == "pending" || r.execution == "resuming")
            });
        if busy {
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= idle {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    store.close().await;
    ended
}

/// The host process. Run as a child by the tests of this file (with
/// `TOOLGATE_TEST_HOST_DIR` set), it serves that data directory. Run by the
/// test harness itself, it serves a directory of its own in this process:
/// one decided run, resumed to its end, its write done once.
#[test]
fn host_process() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    if let Some(dir) = std::env::var_os("TOOLGATE_TEST_HOST_DIR").map(PathBuf::from) {
        let lease = env_ms("TOOLGATE_TEST_HOST_LEASE_MS", 30_000);
        let idle = env_ms("TOOLGATE_TEST_HOST_IDLE_MS", 60_000);
        runtime.block_on(serve(&dir, lease, idle));
        return;
    }
    runtime.block_on(async {
        let dir = prepared();
        let path = dir.path();
        let store = Store::open(common::location(path)).await.expect("store");
        let run = start_run(&store, path, "in-process").await;
        store
            .decide(run.run_id(), Some(&run.digest()), &bob(), Answer::Approve)
            .await
            .expect("recorded");
        let ended = serve(path, Duration::from_secs(30), Duration::ZERO).await;
        assert_eq!(ended, [(run.run_id().to_owned(), "finished")]);
        assert_eq!(lines(&path.join("ledger.txt"), "in-process"), 1);
        store.close().await;
    });
}

fn env_ms(name: &str, default: u64) -> Duration {
    Duration::from_millis(
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default),
    )
}

fn state_word(ended: &Ended) -> &'static str {
    match ended {
        Ended::Finished { .. } => "finished",
        Ended::Suspended { .. } => "suspended",
        Ended::OutcomeUnknown { .. } => "outcome_unknown",
        Ended::Refused { .. } => "refused",
        Ended::Failed { .. } => "failed",
        Ended::Interrupted { .. } => "interrupted",
        Ended::LimitReached => "limit_reached",
        _ => "other",
    }
}

/// Spawns the host process over `dir`.
fn spawn_host(dir: &Path, lease_ms: u64, idle_ms: u64) -> Child {
    Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", "host_process", "--nocapture"])
        .env("TOOLGATE_TEST_HOST_DIR", dir)
        .envs(common::database_env(dir))
        .env("TOOLGATE_TEST_HOST_LEASE_MS", lease_ms.to_string())
        .env("TOOLGATE_TEST_HOST_IDLE_MS", idle_ms.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the host process starts")
}

fn bob() -> Operator {
    Operator::new("bob", IdentitySource::Flag).expect("a usable name")
}

/// A host process waits for decided runs; the command line lists, shows and
/// approves one — and only records it. The host runs the approved turn: the
/// ledger gets its line from the host, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_records_and_the_host_process_resumes() {
    let dir = prepared();
    let path = dir.path();
    let store = Store::open(common::location(path)).await.expect("store");
    let run = start_run(&store, path, "two-processes").await;
    let run_id = run.run_id().to_owned();
    let ledger = path.join("ledger.txt");

    // The command line does not know the host's tools at all.
    let tools = toolgate(path, &["tools"]);
    assert!(!tools.contains("append_ledger"), "{tools}");

    let mut host = spawn_host(path, 30_000, 60_000);
    let mut out = BufReader::new(host.stdout.take().expect("piped"));
    let mut line = String::new();
    while !line.contains("HOST READY") {
        line.clear();
        assert!(
            out.read_line(&mut line).expect("the host speaks") > 0,
            "the host exited before it was ready"
        );
    }

    let listed: Value =
        serde_json::from_str(&toolgate(path, &["--json", "runs", "list"])).expect("JSON");
    assert_eq!(listed[0]["owner"], HOST);
    let shown: Value =
        serde_json::from_str(&toolgate(path, &["--json", "runs", "show", &run_id])).expect("JSON");
    let digest = shown["digest"]
        .as_str()
        .expect("the digest beside the turn");
    let recorded = toolgate(
        path,
        &[
            "runs", "approve", &run_id, "--digest", digest, "--as", "bob",
        ],
    );
    assert_eq!(
        recorded.trim(),
        "recorded: approved by bob (name from flag); host `worker` will resume it"
    );

    let ended = loop {
        line.clear();
        assert!(
            out.read_line(&mut line).expect("the host speaks") > 0,
            "the host exited without resuming the run"
        );
        if line.starts_with("ENDED") {
            break line.clone();
        }
    };
    let _ = host.kill();
    let _ = host.wait();
    assert_eq!(ended.trim(), format!("ENDED {run_id} finished"));
    assert_eq!(
        lines(&ledger, "two-processes"),
        1,
        "the host ran the write once"
    );
    assert_eq!(lines(&path.join("notes-ledger.txt"), "two-processes"), 1);
    let shown: Value =
        serde_json::from_str(&toolgate(path, &["--json", "runs", "show", &run_id])).expect("JSON");
    assert_eq!(shown["standing"], "finished");
    let calls = shown["calls"].as_array().expect("the calls the host ran");
    assert_eq!(calls.len(), 3);
    assert!(calls.iter().all(|c| c["state"] == "ended"), "{shown}");
    store.close().await;
}

/// A host process killed with SIGKILL at 200 points spread over the
/// execution of an approved turn — a `non_idempotent_write`, an
/// `idempotent_write` and a remote call — and then followed by a fresh host
/// process: no `non_idempotent_write` ran twice, and every run ends in a
/// visible state. The counts per state are printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_at_200_points_never_repeats_a_non_idempotent_write() {
    const TRIALS: u32 = 200;
    const LEASE_MS: u64 = 150;
    let dir = prepared();
    let path = dir.path();
    let store = Store::open(common::location(path)).await.expect("store");
    let ledger = path.join("ledger.txt");
    let notes = path.join("notes-ledger.txt");

    // The window: how long a host process takes, from its start to its exit,
    // to resume one approved run.
    let window = {
        let run = start_run(&store, path, "calibration").await;
        store
            .decide(run.run_id(), Some(&run.digest()), &bob(), Answer::Approve)
            .await
            .expect("recorded");
        let started = Instant::now();
        let status = spawn_host(path, LEASE_MS, 0).wait().expect("the host ends");
        assert!(status.success());
        started.elapsed()
    };
    println!(
        "a clean resume takes {} ms from spawn to exit",
        window.as_millis()
    );

    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    let mut killed_mid_way = 0;
    let mut local_runs = [0u32; 3];
    let mut remote_runs = [0u32; 3];
    for trial in 0..TRIALS {
        let tag = format!("trial-{trial}");
        let run = start_run(&store, path, &tag).await;
        store
            .decide(run.run_id(), Some(&run.digest()), &bob(), Answer::Approve)
            .await
            .expect("recorded");
        let delay = window.mul_f64(f64::from(trial) / f64::from(TRIALS));
        let mut victim = spawn_host(path, LEASE_MS, 0);
        std::thread::sleep(delay);
        if victim.try_wait().expect("waits").is_none() {
            killed_mid_way += 1;
        }
        // SIGKILL: nothing of the host runs after this.
        let _ = victim.kill();
        let _ = victim.wait();
        let follower = spawn_host(path, LEASE_MS, 0).wait().expect("the host ends");
        assert!(
            follower.success(),
            "trial {trial}: the following host failed"
        );

        let local = lines(&ledger, &tag);
        let remote = lines(&notes, &tag);
        assert!(
            local <= 1,
            "trial {trial}: the local non_idempotent_write ran {local} times"
        );
        assert!(
            remote <= 1,
            "trial {trial}: the remote call ran {remote} times"
        );
        local_runs[local.min(2)] += 1;
        remote_runs[remote.min(2)] += 1;

        let history = store.run_history(run.run_id()).await.expect("history");
        let latest = history.suspensions.last().expect("the run is stored");
        let state = match (latest.state.as_str(), latest.execution.as_str()) {
            ("decided", "done") => latest.outcome.clone().unwrap_or_default(),
            ("decided", "outcome_unknown") => "outcome unknown".to_owned(),
            ("open", _) => "suspended".to_owned(),
            (state, execution) => panic!("trial {trial}: invisible state {state}/{execution}"),
        };
        assert!(
            ["finished", "outcome unknown", "suspended"].contains(&state.as_str()),
            "trial {trial}: {state}"
        );
        if state == "finished" {
            assert_eq!(local, 1, "trial {trial}: a finished run ran its write once");
        }
        *counts.entry(state).or_default() += 1;
    }
    println!(
        "{TRIALS} trials, kill points spread over {} ms; killed before the host exited: {killed_mid_way}",
        window.as_millis()
    );
    println!("runs by state: {counts:?}");
    println!(
        "append_ledger (non_idempotent_write) ran 0/1/2+ times in {local_runs:?} trials; notes.write_note (remote) in {remote_runs:?}"
    );
    assert_eq!(local_runs[2], 0);
    assert_eq!(remote_runs[2], 0);
    assert_eq!(counts.values().sum::<u32>(), TRIALS);
    store.close().await;
}
