//! A call the gate lets run at once — its server's approval turned off —
//! whose answer is lost after it reached the server: real MCP clients
//! (rmcp) over stdio to `toolgate gateway` processes, the notes test server
//! upstream running the write and dropping its answer. The client is told
//! the truth — its outcome is unknown, it may have run, a person chooses —
//! with the run that now waits for that choice; the same call asked again,
//! by the next session's gateway, joins that run and never runs again
//! unasked; a skip answers it, a rerun runs it once more and its answer is
//! kept.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::path::Path;

use rmcp::model::CallToolResult;
use rmcp::service::{Peer, RoleClient, RunningService};
use serde_json::{Value, json};

mod common;
use common::gateway::{call, lines, notes, text};
use common::toolgate;

/// The store's integrity key, for the suites run under one.
const KEY: &str = "b7e151628aed2a6abf7158809cf4f3c762e7160f38b4da56a784d9045190cfef";

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

/// The environment that hands `toolgate` the store's key, when `keyed`.
fn key_env(keyed: bool) -> &'static [(&'static str, &'static str)] {
    if keyed {
        &[("TOOLGATE_INTEGRITY_KEY", KEY)]
    } else {
        &[]
    }
}

/// A session of a client: a gateway process, waiting `wait` seconds for a
/// held call — with the store's key when `keyed` — and the client.
async fn session(dir: &Path, wait: &str, keyed: bool) -> RunningService<RoleClient, ()> {
    use rmcp::ServiceExt as _;
    ().serve(common::gateway::process(
        dir,
        &["--wait", wait],
        key_env(keyed),
    ))
    .await
    .expect("the client connects")
}

/// `toolgate ARGS` over `dir`, with the store's key when `keyed`, which
/// must succeed; its standard output.
fn cli(dir: &Path, keyed: bool, args: &[&str]) -> String {
    let output = common::command(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .envs(key_env(keyed).iter().copied())
        .output()
        .expect("toolgate runs");
    assert!(
        output.status.success(),
        "toolgate {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `toolgate --json ARGS` over `dir`, read.
fn json_of(dir: &Path, keyed: bool, args: &[&str]) -> Value {
    serde_json::from_str(&cli(dir, keyed, &[&["--json"][..], args].concat())).expect("JSON")
}

async fn write(client: &Peer<RoleClient>) -> CallToolResult {
    call(client, "notes__write_note", json!({"text": "lost"})).await
}

fn runs(dir: &Path, keyed: bool) -> Vec<Value> {
    json_of(dir, keyed, &["runs", "list", "--all"])
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The notes server, whose writes run and lose their answer, its approval
/// turned off by its operator.
fn answers_lost(dir: &Path, ledger: &Path) {
    notes(dir, ledger, &["--drop-answer", "write_note"]);
    common::approval_off(dir, "notes");
}

/// The first asking: run at once, its answer lost. The client is told the
/// run, which waits for an operator's choice; the write ran once. The run,
/// and its unknown call's id and choice digest.
async fn lost_once(dir: &Path, ledger: &Path, keyed: bool) -> (String, String, String) {
    let first = session(dir, "2", keyed).await;
    let told = write(first.peer()).await;
    first.cancel().await.unwrap();
    let said = text(&told);
    assert_eq!(told.is_error, Some(true), "{said}");
    assert_eq!(lines(ledger), 1, "the write ran; its answer was lost");
    let listed = runs(dir, keyed);
    let [run] = listed.as_slice() else {
        panic!("one run recorded: {listed:?}");
    };
    let id = run["run"].as_str().unwrap().to_owned();
    assert_eq!(run["standing"], "outcome unknown", "{run}");
    assert_eq!(run["execution"], "outcome_unknown", "{run}");
    assert!(
        said.starts_with(&format!("run `{id}`: the call's outcome is unknown")),
        "{said}"
    );
    assert!(
        said.contains("its answer was lost")
            && said.contains("it may have run")
            && said.contains(&format!("`toolgate runs show {id}`"))
            && said.contains("asked again, the same call is answered by that choice"),
        "{said}"
    );
    assert!(
        !said.contains("runs rerun") && !said.contains("runs skip") && !said.contains("sha256:"),
        "the model reads it: no command that chooses, no digest: {said}"
    );
    if keyed {
        let unkeyed = common::command(dir)
            .args(["runs", "show", &id])
            .output()
            .unwrap();
        assert!(
            !unkeyed.status.success(),
            "the run is kept under the store's key"
        );
    }
    let shown = json_of(dir, keyed, &["runs", "show", &id]);
    let [unknown] = shown["unknown"].as_array().unwrap().as_slice() else {
        panic!("one call of unknown outcome: {shown}");
    };
    assert_eq!(unknown["tool"], "notes.write_note", "{unknown}");
    assert_eq!(unknown["attempt"], 1, "{unknown}");
    assert_eq!(unknown["arguments"], json!({"text": "lost"}), "{unknown}");
    (
        id,
        unknown["call"].as_str().unwrap().to_owned(),
        unknown["digest"].as_str().unwrap().to_owned(),
    )
}

/// `toolgate runs CHOICE RUN --call CALL --digest DIGEST`, as bob.
fn choose(dir: &Path, keyed: bool, choice: &str, run: &str, call: &str, digest: &str) -> String {
    cli(
        dir,
        keyed,
        &[
            "runs",
            choice,
            run,
            "--call",
            call,
            "--digest",
            digest,
            "--reason",
            "checked the notes server",
            "--as",
            "bob",
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_waits_for_a_choice_and_a_skip_answers_the_same_call() {
    skipped(false).await;
}

/// The same, the store under an integrity key: the run's record — its
/// pause, plan, started call and the choice — is read back against its
/// chain before the skip is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_key_a_lost_answer_is_recorded_whole_and_a_skip_answers_the_same_call() {
    skipped(true).await;
}

async fn skipped(keyed: bool) {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    answers_lost(dir, &ledger);
    let (run, call_id, digest) = lost_once(dir, &ledger, keyed).await;

    // The same call, asked of the next session's gateway: it joins the run,
    // waits for the choice, and is told so — never run again unasked.
    let second = session(dir, "1", keyed).await;
    let again = write(second.peer()).await;
    let said = text(&again);
    assert_eq!(again.is_error, Some(true), "{said}");
    assert!(
        said.starts_with(&format!("run `{run}`: the call's outcome is unknown"))
            && said.contains("it may have run")
            && said.contains("asked again once chosen, the same call is answered by that choice"),
        "{said}"
    );
    assert!(!said.contains("was not run"), "{said}");
    assert_eq!(lines(&ledger), 1, "never run again unasked");
    assert_eq!(runs(dir, keyed).len(), 1, "no second run");

    let chosen = choose(dir, keyed, "skip", &run, &call_id, &digest);
    assert!(!chosen.is_empty());
    let skipped = write(second.peer()).await;
    let said = text(&skipped);
    assert_eq!(skipped.is_error, Some(true), "{said}");
    assert!(said.contains("bob chose not to run it again"), "{said}");
    assert_eq!(lines(&ledger), 1, "a skip runs nothing");
    let ended = json_of(dir, keyed, &["runs", "show", &run]);
    assert_eq!(ended["outcome"], "finished", "{ended}");
    second.cancel().await.unwrap();

    // Asked once more, by yet another session: the kept answer.
    let third = session(dir, "1", keyed).await;
    let kept = write(third.peer()).await;
    assert_eq!(text(&kept), said);
    assert_eq!(lines(&ledger), 1);
    assert_eq!(runs(dir, keyed).len(), 1);
    third.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_of_a_lost_answer_runs_the_same_call_once_more_and_keeps_its_answer() {
    rerun(false).await;
}

/// The same, the store under an integrity key: the rerun is recovered from
/// a record that verifies against its chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_key_a_rerun_of_a_lost_answer_runs_once_more() {
    rerun(true).await;
}

async fn rerun(keyed: bool) {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    answers_lost(dir, &ledger);
    let (run, call_id, digest) = lost_once(dir, &ledger, keyed).await;

    // The server answers from now on; the operator chooses to run the
    // write again.
    let ledger_text = ledger.to_str().unwrap();
    common::set_transport(dir, "notes", &["--ledger", ledger_text]);
    toolgate(dir, &["import", "notes"]);
    common::approval_off(dir, "notes");
    assert_eq!(lines(&ledger), 1, "nothing ran meanwhile");
    choose(dir, keyed, "rerun", &run, &call_id, &digest);
    assert_eq!(lines(&ledger), 1, "a choice only records");

    let second = session(dir, "5", keyed).await;
    let answered = write(second.peer()).await;
    let said = text(&answered);
    assert_eq!(answered.is_error, Some(false), "{said}");
    assert!(said.starts_with("wrote note"), "{said}");
    assert_eq!(lines(&ledger), 2, "run exactly once more");
    second.cancel().await.unwrap();

    let third = session(dir, "5", keyed).await;
    let kept = write(third.peer()).await;
    assert_eq!(kept.is_error, Some(false));
    assert_eq!(text(&kept), said, "the kept answer");
    assert_eq!(lines(&ledger), 2, "never run a third time");
    assert_eq!(runs(dir, keyed).len(), 1, "no second run");
    third.cancel().await.unwrap();
}
