//! A held call belongs to the store, not to a gateway process: real MCP
//! clients (rmcp) over stdio to `toolgate gateway` processes, the notes test
//! server upstream. A client that goes away and comes back — a new gateway
//! process, as every session of a coding agent starts one — finds the
//! decision taken while it was away; identical calls asked at once, of one
//! gateway or of two, become one run; a retry while the approved call runs
//! is told it runs, never "it was not run"; a decided run never asked again
//! expires, and is shown so.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::path::Path;
use std::time::Duration;

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

/// The notes server, each write taking `delay` seconds.
fn registered(dir: &Path, ledger: &Path, delay: &str) {
    notes(dir, ledger, &["--delay", &format!("write_note={delay}")]);
}

/// A session of a client: a gateway process and the client.
async fn session(dir: &Path, args: &[&str]) -> RunningService<RoleClient, ()> {
    common::gateway::session(dir, args, ()).await
}

async fn write(client: &Peer<RoleClient>, text: &str) -> CallToolResult {
    call(client, "notes__write_note", json!({"text": text})).await
}

fn runs(dir: &Path) -> Vec<Value> {
    json_of(dir, &["runs", "list", "--all"])
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The one run, its id and digest, once it is there.
async fn the_run(dir: &Path) -> (String, String) {
    for _ in 0..200 {
        if let [run] = runs(dir).as_slice() {
            let id = run["run"].as_str().unwrap().to_owned();
            let shown = json_of(dir, &["runs", "show", &id]);
            if let Some(digest) = shown["digest"].as_str() {
                return (id, digest.to_owned());
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("not one run: {:?}", runs(dir));
}

fn approve(dir: &Path, run: &str, digest: &str) -> String {
    toolgate(
        dir,
        &["runs", "approve", run, "--digest", digest, "--as", "bob"],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_taken_while_no_gateway_runs_is_applied_by_the_next_session() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger, "0");
    // The first session asks, is told it waits, and ends: its gateway exits.
    let first = session(dir, &["--wait", "1"]).await;
    let told = write(first.peer(), "away").await;
    assert!(
        text(&told).starts_with("the call waits for approval"),
        "{}",
        text(&told)
    );
    first.cancel().await.unwrap();
    let (run, digest) = the_run(dir).await;
    // Approved while no gateway runs at all.
    let recorded = approve(dir, &run, &digest);
    assert!(
        recorded.contains("it runs when its client asks for the call again"),
        "{recorded}"
    );
    let listed = runs(dir);
    assert_eq!(
        listed[0]["standing"],
        "decided; waits for its client to ask for the call again (gateway `gateway`)",
        "{listed:?}"
    );
    assert_eq!(lines(&ledger), 0, "no one asked; nothing ran");
    // A new session — a new gateway process — asks the same call: the
    // decision is applied, once.
    let second = session(dir, &["--wait", "5"]).await;
    let answered = write(second.peer(), "away").await;
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1, "ran once");
    // Asked once more, by yet another session: the kept answer.
    second.cancel().await.unwrap();
    let third = session(dir, &["--wait", "5"]).await;
    let again = write(third.peer(), "away").await;
    assert_eq!(text(&again), text(&answered));
    assert_eq!(lines(&ledger), 1, "never run twice");
    assert_eq!(runs(dir).len(), 1, "no stranded or second run");
    third.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_calls_asked_at_once_of_two_gateways_are_one_run_and_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger, "0");
    let one = session(dir, &["--wait", "2"]).await;
    let two = session(dir, &["--wait", "2"]).await;
    let mut asked = Vec::new();
    for n in 0..10 {
        let peer = if n % 2 == 0 { one.peer() } else { two.peer() }.clone();
        asked.push(tokio::spawn(async move { write(&peer, "at once").await }));
    }
    let mut told = Vec::new();
    for call in asked {
        told.push(text(&call.await.unwrap()));
    }
    let (run, digest) = the_run(dir).await;
    for said in &told {
        assert!(said.contains(&run), "every call names the one run: {said}");
    }
    approve(dir, &run, &digest);
    let mut asked = Vec::new();
    for n in 0..10 {
        let peer = if n % 2 == 0 { one.peer() } else { two.peer() }.clone();
        asked.push(tokio::spawn(async move { write(&peer, "at once").await }));
    }
    for call in asked {
        let answered = call.await.unwrap();
        assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    }
    assert_eq!(lines(&ledger), 1, "the one call ran once");
    assert_eq!(runs(dir).len(), 1);
    one.cancel().await.unwrap();
    two.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_while_the_approved_call_runs_is_told_it_runs_and_gets_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    // Each write takes 4 seconds upstream; the gateways wait 1.
    registered(dir, &ledger, "4");
    let first = session(dir, &["--wait", "1"]).await;
    let told = write(first.peer(), "slow").await;
    assert!(
        text(&told).starts_with("the call waits for approval"),
        "{}",
        text(&told)
    );
    let (run, digest) = the_run(dir).await;
    approve(dir, &run, &digest);
    // The retry claims the run and runs it; past its wait it is told so.
    let running = write(first.peer(), "slow").await;
    let said = text(&running);
    assert!(said.contains("is running its call now"), "{said}");
    assert!(!said.contains("was not run"), "{said}");
    // Another session's retry, while it still runs: told the same.
    let other = session(dir, &["--wait", "1"]).await;
    let said = text(&write(other.peer(), "slow").await);
    assert!(said.contains("is running its call now"), "{said}");
    // Once it ran, the result.
    let mut result = None;
    for _ in 0..40 {
        let answered = write(other.peer(), "slow").await;
        if answered.is_error == Some(false) {
            result = Some(answered);
            break;
        }
    }
    let result = result.expect("the call's result, once it ran");
    assert_eq!(text(&result), "wrote note 1");
    assert_eq!(lines(&ledger), 1, "ran once");
    first.cancel().await.unwrap();
    other.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decided_run_never_asked_again_expires_and_the_call_is_new() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger, "0");
    let first = session(dir, &["--wait", "1"]).await;
    write(first.peer(), "forgotten").await;
    first.cancel().await.unwrap();
    let (run, digest) = the_run(dir).await;
    approve(dir, &run, &digest);
    // A gateway that expires decided runs after a second closes it.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let second = session(dir, &["--wait", "1", "--expire-unasked", "1"]).await;
    let mut standing = String::new();
    for _ in 0..100 {
        standing = runs(dir)[0]["standing"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if standing.starts_with("expired") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        standing,
        "expired: decided, but its client did not ask for the call again within 1 s"
    );
    // Asked now, the call is a new one: it waits, and nothing ran.
    let told = text(&write(second.peer(), "forgotten").await);
    assert!(told.starts_with("the call waits for approval"), "{told}");
    assert!(!told.contains(&run), "a new run: {told}");
    assert_eq!(lines(&ledger), 0);
    second.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_while_its_approved_call_runs_never_cuts_it_short() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    // Each write takes 3 seconds upstream; the session waits 1.
    registered(dir, &ledger, "3");
    let first = session(dir, &["--wait", "1"]).await;
    write(first.peer(), "finish me").await;
    first.cancel().await.unwrap();
    let (run, digest) = the_run(dir).await;
    approve(dir, &run, &digest);
    let second = session(dir, &["--wait", "1"]).await;
    let said = text(&write(second.peer(), "finish me").await);
    assert!(said.contains("is running its call now"), "{said}");
    // The client leaves while the call runs: its gateway finishes the call
    // before it closes, and keeps the answer.
    second.cancel().await.unwrap();
    let mut ran = false;
    for _ in 0..100 {
        if lines(&ledger) == 1 {
            ran = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ran, "the approved call ran to its end");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let third = session(dir, &["--wait", "5"]).await;
    let answered = write(third.peer(), "finish me").await;
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1, "ran once");
    third.cancel().await.unwrap();
}
