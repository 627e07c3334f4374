//! `toolgate gateway --upstream URL --token-file PATH`: a stdio gateway on a
//! machine that holds no store, forwarding its client — a real MCP client
//! process over the forwarder's stdio — to a gateway served over HTTP,
//! which judges every call as the token's person.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt as _;
use serde_json::json;

mod common;
use common::gateway::{call, json_of, lines, listening, notes, text};
use common::{TOOLGATE, toolgate};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

/// The forwarder over `agent` (a data directory with no store), to `url`
/// with the token in `token_file`: its child process.
fn forwarder(agent: &Path, url: &str, token_file: &Path) -> tokio::process::Child {
    tokio::process::Command::new(TOOLGATE)
        .arg("--data-dir")
        .arg(agent)
        .args(["gateway", "--upstream", url, "--token-file"])
        .arg(token_file)
        .env_remove("TOOLGATE_DATABASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

async fn open_run(dir: &Path) -> (String, String) {
    for _ in 0..200 {
        let runs = json_of(dir, &["runs", "list"]);
        if let Some(run) = runs
            .as_array()
            .and_then(|r| r.iter().find(|r| r["state"] == "open"))
        {
            let id = run["run"].as_str().unwrap().to_owned();
            let shown = json_of(dir, &["runs", "show", &id]);
            return (id, shown["digest"].as_str().unwrap().to_owned());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no run waits");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_gateway_with_no_store_forwards_to_the_http_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let agent = tempfile::tempdir().unwrap();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    let made = json_of(dir, &["gateway", "token", "add", "alice"]);
    let token_file = agent.path().join("token");
    std::fs::write(&token_file, made["token"].as_str().unwrap()).unwrap();
    let (_gateway, url) = listening(dir, &["--wait", "60"]).await;

    let mut child = forwarder(agent.path(), &url, &token_file);
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let changed = std::sync::Arc::new(tokio::sync::Notify::new());
    let client = Changes(std::sync::Arc::clone(&changed))
        .serve(transport)
        .await
        .expect("the client connects to the forwarder");
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"notes__write_note".to_owned()), "{names:?}");

    // A write is held upstream, as alice's, and runs once approved there.
    let peer = client.peer().clone();
    let held = tokio::spawn(async move {
        call(
            &peer,
            "notes__write_note",
            json!({"text": "through the forwarder"}),
        )
        .await
    });
    let (run, digest) = open_run(dir).await;
    let shown = json_of(dir, &["runs", "show", &run]);
    assert_eq!(shown["requested_by"], "alice", "{shown}");
    // The client's own name reaches the run, not the forwarder's.
    assert_ne!(shown["client"]["name"], "toolgate-forward", "{shown}");
    assert_eq!(lines(&ledger), 0);
    toolgate(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    let answered = held.await.unwrap();
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1);

    // The list's changes reach the client through the forwarder.
    common::approval_off(dir, "notes");
    tokio::time::timeout(Duration::from_secs(20), changed.notified())
        .await
        .expect("the client is told the tools changed");
    let read = call(client.peer(), "notes__read_note", json!({"id": 1})).await;
    assert_eq!(read.is_error, Some(false), "{}", text(&read));
    client.cancel().await.unwrap();

    // The agent's side never had a store.
    let files: Vec<String> = std::fs::read_dir(agent.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        files,
        vec!["token".to_owned()],
        "the forwarder wrote {files:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarder_without_a_live_token_or_over_plain_http_elsewhere_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let agent = tempfile::tempdir().unwrap();
    let (_gateway, url) = listening(dir, &[]).await;
    let wrong = agent.path().join("wrong");
    std::fs::write(&wrong, "tgw_0000000000000000_00").unwrap();
    let cases: [(&str, &Path, i32, &str); 4] = [
        (url.as_str(), wrong.as_path(), 1, "refused the token"),
        (
            url.as_str(),
            &agent.path().join("missing"),
            2,
            "cannot be read",
        ),
        (
            "http://198.51.100.7:8650/mcp",
            wrong.as_path(),
            3,
            "only over https",
        ),
        (
            "ftp://127.0.0.1/mcp",
            wrong.as_path(),
            2,
            "http://HOST:PORT/mcp",
        ),
    ];
    for (upstream, token_file, code, said) in cases {
        let output = forwarder(agent.path(), upstream, token_file)
            .wait_with_output()
            .await
            .unwrap();
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{upstream}: {err}");
        assert!(err.contains(said), "{upstream}: {err}");
    }
}

/// A client told when the tools change.
#[derive(Clone)]
struct Changes(std::sync::Arc<tokio::sync::Notify>);

impl rmcp::ClientHandler for Changes {
    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<rmcp::RoleClient>) {
        self.0.notify_one();
    }
}
