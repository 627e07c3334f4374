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
use common::gateway::{call, json_of, lines, notes, text};
use common::toolgate;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

/// A session of a client: a gateway process, waiting `wait` seconds for a
/// held call, and the client.
async fn session(dir: &Path, wait: &str) -> RunningService<RoleClient, ()> {
    common::gateway::session(dir, &["--wait", wait], ()).await
}

async fn write(client: &Peer<RoleClient>) -> CallToolResult {
    call(client, "notes__write_note", json!({"text": "lost"})).await
}

fn runs(dir: &Path) -> Vec<Value> {
    json_of(dir, &["runs", "list", "--all"])
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
async fn lost_once(dir: &Path, ledger: &Path) -> (String, String, String) {
    let first = session(dir, "2").await;
    let told = write(first.peer()).await;
    first.cancel().await.unwrap();
    let said = text(&told);
    assert_eq!(told.is_error, Some(true), "{said}");
    assert_eq!(lines(ledger), 1, "the write ran; its answer was lost");
    let listed = runs(dir);
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
    let shown = json_of(dir, &["runs", "show", &id]);
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
fn choose(dir: &Path, choice: &str, run: &str, call: &str, digest: &str) -> String {
    toolgate(
        dir,
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
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    answers_lost(dir, &ledger);
    let (run, call_id, digest) = lost_once(dir, &ledger).await;

    // The same call, asked of the next session's gateway: it joins the run,
    // waits for the choice, and is told so — never run again unasked.
    let second = session(dir, "1").await;
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
    assert_eq!(runs(dir).len(), 1, "no second run");

    let chosen = choose(dir, "skip", &run, &call_id, &digest);
    assert!(!chosen.is_empty());
    let skipped = write(second.peer()).await;
    let said = text(&skipped);
    assert_eq!(skipped.is_error, Some(true), "{said}");
    assert!(said.contains("bob chose not to run it again"), "{said}");
    assert_eq!(lines(&ledger), 1, "a skip runs nothing");
    let ended = json_of(dir, &["runs", "show", &run]);
    assert_eq!(ended["outcome"], "finished", "{ended}");
    second.cancel().await.unwrap();

    // Asked once more, by yet another session: the kept answer.
    let third = session(dir, "1").await;
    let kept = write(third.peer()).await;
    assert_eq!(text(&kept), said);
    assert_eq!(lines(&ledger), 1);
    assert_eq!(runs(dir).len(), 1);
    third.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_of_a_lost_answer_runs_the_same_call_once_more_and_keeps_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    answers_lost(dir, &ledger);
    let (run, call_id, digest) = lost_once(dir, &ledger).await;

    // The server answers from now on; the operator chooses to run the
    // write again.
    let ledger_text = ledger.to_str().unwrap();
    common::set_transport(dir, "notes", &["--ledger", ledger_text]);
    toolgate(dir, &["import", "notes"]);
    common::approval_off(dir, "notes");
    assert_eq!(lines(&ledger), 1, "nothing ran meanwhile");
    choose(dir, "rerun", &run, &call_id, &digest);
    assert_eq!(lines(&ledger), 1, "a choice only records");

    let second = session(dir, "5").await;
    let answered = write(second.peer()).await;
    let said = text(&answered);
    assert_eq!(answered.is_error, Some(false), "{said}");
    assert!(said.starts_with("wrote note"), "{said}");
    assert_eq!(lines(&ledger), 2, "run exactly once more");
    second.cancel().await.unwrap();

    let third = session(dir, "5").await;
    let kept = write(third.peer()).await;
    assert_eq!(kept.is_error, Some(false));
    assert_eq!(text(&kept), said, "the kept answer");
    assert_eq!(lines(&ledger), 2, "never run a third time");
    assert_eq!(runs(dir).len(), 1, "no second run");
    third.cancel().await.unwrap();
}
