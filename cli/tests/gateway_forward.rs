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
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

mod common;
use common::gateway::{call, json_of, lines, listening, listening_on, notes, text};
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

/// A client of the forwarder speaking JSON-RPC lines itself: what any
/// client, or a hostile one, can send.
struct Raw {
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    /// Every notification read so far.
    notes: Vec<Value>,
}

impl Raw {
    async fn new(child: &mut tokio::process::Child) -> Self {
        let mut raw = Self {
            stdin: child.stdin.take().unwrap(),
            stdout: tokio::io::BufReader::new(child.stdout.take().unwrap()).lines(),
            notes: Vec::new(),
        };
        raw.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw-client", "version": "1.0"}}})
            .to_string(),
        )
        .await;
        let answer = raw.answer(0, Duration::from_secs(30)).await;
        assert!(answer.get("result").is_some(), "{answer}");
        raw.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
            .await;
        raw
    }

    async fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The answer to request `id`, read within `within`; the
    /// notifications read before it are kept.
    async fn answer(&mut self, id: i64, within: Duration) -> Value {
        tokio::time::timeout(within, async {
            loop {
                let line = self
                    .stdout
                    .next_line()
                    .await
                    .unwrap()
                    .expect("the forwarder answers");
                let message: Value = serde_json::from_str(&line).unwrap();
                if message["id"] == json!(id) {
                    return message;
                }
                self.notes.push(message);
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no answer to request {id} in {within:?}"))
    }

    /// The first notification with `method` read within `within`.
    async fn notification(&mut self, method: &str, within: Duration) -> Value {
        tokio::time::timeout(within, async {
            loop {
                if let Some(found) = self.notes.iter().position(|n| n["method"] == method) {
                    return self.notes.remove(found);
                }
                let line = self
                    .stdout
                    .next_line()
                    .await
                    .unwrap()
                    .expect("the forwarder answers");
                self.notes.push(serde_json::from_str(&line).unwrap());
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {method} in {within:?}: {:?}", self.notes))
    }
}

fn write_call(id: i64, text: &str, progress: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "notes__write_note", "arguments": {"text": text},
        "_meta": {"progressToken": progress}}})
    .to_string()
}

/// A free port on 127.0.0.1, for a gateway that starts again where it was.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_is_answered_progress_is_the_clients_own_and_a_lost_upstream_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let agent = tempfile::tempdir().unwrap();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    let made = json_of(dir, &["gateway", "token", "add", "alice"]);
    let token_file = agent.path().join("token");
    std::fs::write(&token_file, made["token"].as_str().unwrap()).unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let (gateway, url) = listening_on(dir, &listen, &["--wait", "120"]).await;
    let mut child = forwarder(agent.path(), &url, &token_file);
    let mut raw = Raw::new(&mut child).await;

    // Nested deeper than serde_json reads: answered, by its id.
    let mut deep = json!("leaf");
    for _ in 0..200 {
        deep = json!([deep]);
    }
    raw.send(&format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"notes__write_note","arguments":{{"text":{deep}}}}}}}"#
    ))
    .await;
    let answer = raw.answer(2, Duration::from_secs(20)).await;
    assert!(answer["error"]["message"].is_string(), "{answer}");
    // Longer than a line may be: answered, by its id.
    let long = "x".repeat(20 * 1024 * 1024);
    raw.send(&format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"notes__write_note","arguments":{{"text":"{long}"}}}}}}"#
    ))
    .await;
    let answer = raw.answer(3, Duration::from_secs(30)).await;
    assert!(answer["error"]["message"].is_string(), "{answer}");
    assert_eq!(lines(&ledger), 0);

    // A held call's progress comes back under the client's own token.
    raw.send(&write_call(4, "held while the gateway goes", "mine-4"))
        .await;
    let progress = raw
        .notification("notifications/progress", Duration::from_secs(30))
        .await;
    assert_eq!(progress["params"]["progressToken"], "mine-4", "{progress}");
    let (run, _) = open_run(dir).await;

    // The upstream gateway killed under a call in flight: the call is
    // answered, saying what became of it.
    drop(gateway);
    let answer = raw.answer(4, Duration::from_secs(40)).await;
    let said = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("still held there"), "{answer}");
    assert_eq!(lines(&ledger), 0);

    // Back where it was: asking again reconnects and joins the held run,
    // which runs once approved.
    let (_gateway, _) = listening_on(dir, &listen, &["--wait", "120"]).await;
    raw.send(&write_call(5, "held while the gateway goes", "mine-5"))
        .await;
    let (again, digest) = open_run(dir).await;
    assert_eq!(again, run, "asking again joins the held run");
    let runs = json_of(dir, &["runs", "list"]);
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    toolgate(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    let answer = raw.answer(5, Duration::from_secs(40)).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(lines(&ledger), 1);
    // Progress under another client's token never reached this one.
    assert!(
        raw.notes
            .iter()
            .filter(|n| n["method"] == "notifications/progress")
            .all(|n| n["params"]["progressToken"]
                .as_str()
                .is_some_and(|t| t.starts_with("mine-"))),
        "{:?}",
        raw.notes
    );
}

/// A client told when the tools change.
#[derive(Clone)]
struct Changes(std::sync::Arc<tokio::sync::Notify>);

impl rmcp::ClientHandler for Changes {
    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<rmcp::RoleClient>) {
        self.0.notify_one();
    }
}

/// A client that shows forms and approves each one it is shown, keeping
/// their messages.
#[derive(Clone, Default)]
struct Approves(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl rmcp::ClientHandler for Approves {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut config = rmcp::model::ClientConfig::default();
        config.capabilities.elicitation = Some(rmcp::model::ElicitationCapability::default());
        config
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::model::ErrorData> {
        if let rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.0.lock().unwrap().push(message);
        }
        let mut answer = rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept);
        answer.content = Some(json!({"decision": "approve"}));
        Ok(answer)
    }
}

/// Where the operator turned forms on for the server, the upstream
/// gateway's form reaches a client through the forwarder and decides as
/// the token's person; a client that shows no forms is never sent one —
/// the upstream gateway is told the client's own capabilities.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_reaches_the_client_through_the_forwarder_only_if_it_shows_forms() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let agent = tempfile::tempdir().unwrap();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    toolgate(dir, &["server", "elicitation", "notes", "on"]);
    let made = json_of(dir, &["gateway", "token", "add", "alice"]);
    let token_file = agent.path().join("token");
    std::fs::write(&token_file, made["token"].as_str().unwrap()).unwrap();
    let (_gateway, url) = listening(dir, &["--wait", "3"]).await;

    // A client without forms: none is sent, and the call waits its time.
    let mut child = forwarder(agent.path(), &url, &token_file);
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let plain = ().serve(transport).await.expect("the client connects");
    let waited = call(
        plain.peer(),
        "notes__write_note",
        json!({"text": "no form"}),
    )
    .await;
    assert_eq!(waited.is_error, Some(true), "{}", text(&waited));
    plain.cancel().await.unwrap();
    assert_eq!(lines(&ledger), 0);

    // A client that shows forms: shown one, approves, the call runs once.
    let mut child = forwarder(agent.path(), &url, &token_file);
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let approves = Approves::default();
    let client = approves
        .clone()
        .serve(transport)
        .await
        .expect("the client connects");
    let answered = call(
        client.peer(),
        "notes__write_note",
        json!({"text": "formed"}),
    )
    .await;
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    let shown = approves.0.lock().unwrap().clone();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(shown[0].contains("alice"), "{}", shown[0]);
    assert_eq!(lines(&ledger), 1);
    let runs = json_of(dir, &["runs", "list", "--all"]);
    let formed = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| json_of(dir, &["runs", "show", r["run"].as_str().unwrap()])["state"] != "open")
        .map(|r| r["run"].as_str().unwrap().to_owned())
        .unwrap();
    let decisions = json_of(dir, &["runs", "show", &formed])["decisions"].clone();
    assert_eq!(decisions[0]["by"], "alice", "{decisions}");
    assert_eq!(decisions[0]["channel"], "elicitation", "{decisions}");
    client.cancel().await.unwrap();
}

/// An upstream gateway that stops answering (stopped, not gone) under a
/// list of the tools: the list is answered with an error, not waited on
/// for ever; once it answers again, so does the forwarder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_of_the_tools_from_a_stopped_upstream_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let agent = tempfile::tempdir().unwrap();
    notes(dir, &dir.join("ledger"), &[]);
    let made = json_of(dir, &["gateway", "token", "add", "alice"]);
    let token_file = agent.path().join("token");
    std::fs::write(&token_file, made["token"].as_str().unwrap()).unwrap();
    let (gateway, url) = listening(dir, &[]).await;
    let pid = gateway.id().unwrap().to_string();
    let mut child = forwarder(agent.path(), &url, &token_file);
    let mut raw = Raw::new(&mut child).await;
    let signal = |name: &str| {
        let status = std::process::Command::new("kill")
            .args([name, pid.as_str()])
            .status()
            .unwrap();
        assert!(status.success());
    };
    signal("-STOP");
    raw.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string())
        .await;
    let answer = raw.answer(2, Duration::from_secs(40)).await;
    signal("-CONT");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("stopped answering")),
        "{answer}"
    );
    raw.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string())
        .await;
    let answer = raw.answer(3, Duration::from_secs(40)).await;
    assert!(answer["result"]["tools"].is_array(), "{answer}");
    drop(gateway);
}
