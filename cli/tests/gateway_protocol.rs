//! `toolgate gateway` on the wire: a client process that writes raw bytes to
//! the gateway's standard input and reads its lines back. Every line that
//! does not read is answered — `-32700` for what is not JSON, `-32600` for
//! JSON that is no message, with the request's id when it can be found —
//! and the session goes on; a `tools/call` whose params do not fit is
//! answered `-32602`; a changed approval tells the client to list again;
//! and `tools/list` shows each tool's title with annotations written
//! fail-closed, never the server's own hints.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

mod common;
use common::{TOOLGATE, database_env, toolgate};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

/// A data directory with the notes server registered and imported.
fn registered(dir: &Path) {
    let ledger = dir.join("ledger");
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
            "--ledger",
            ledger.to_str().expect("a UTF-8 path"),
        ],
    );
    toolgate(dir, &["import", "notes"]);
}

/// A client of a `toolgate gateway` process that writes what it is given,
/// byte for byte, and reads the gateway's answers a line at a time.
struct Raw {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Raw {
    /// `toolgate gateway --user alice` over `dir`, initialized.
    async fn start(dir: &Path) -> Self {
        let mut child = tokio::process::Command::new(TOOLGATE)
            .arg("--data-dir")
            .arg(dir)
            .args(["gateway", "--user", "alice", "--wait", "20"])
            .env_remove("TOOLGATE_DATABASE_URL")
            .envs(database_env(dir))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the gateway starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut raw = Self {
            _child: child,
            stdin,
            stdout,
        };
        raw.line(&json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}
            }
        }))
        .await;
        let (_, initialized) = raw.answer(0).await;
        assert!(initialized["result"].is_object(), "{initialized}");
        raw.line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        raw
    }

    /// Writes `bytes` as they are, then a newline.
    async fn send(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Writes `message` as one line.
    async fn line(&mut self, message: &Value) {
        self.send(message.to_string().as_bytes()).await;
    }

    /// The gateway's next line, as JSON; within 20 s.
    async fn next(&mut self) -> Value {
        let mut line = String::new();
        let read = tokio::time::timeout(Duration::from_secs(20), self.stdout.read_line(&mut line))
            .await
            .expect("the gateway says something within 20 s")
            .unwrap();
        assert!(read > 0, "the gateway's output ended");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not one JSON line: {e}: {line}"))
    }

    /// Everything the gateway said up to its answer to request `id`, and
    /// that answer.
    async fn answer(&mut self, id: i64) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let said = self.next().await;
            if said["id"] == id && said.get("method").is_none() {
                return (before, said);
            }
            before.push(said);
        }
    }

    /// A `ping` answered: the session goes on.
    async fn ping(&mut self, id: i64) -> Vec<Value> {
        self.line(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
            .await;
        let (before, pong) = self.answer(id).await;
        assert!(pong["result"].is_object(), "{pong}");
        before
    }

    /// `tools/call` of `name` with `arguments`: its answer.
    async fn call(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        self.line(&json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments}
        }))
        .await;
        self.answer(id).await.1
    }

    /// `tools/list`: the tools.
    async fn tools(&mut self, id: i64) -> Vec<Value> {
        self.line(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}))
            .await;
        let (_, listed) = self.answer(id).await;
        listed["result"]["tools"].as_array().unwrap().clone()
    }
}

/// The one error among `said`: its code and id.
fn the_error(said: &[Value]) -> (i64, Value) {
    let errors: Vec<&Value> = said.iter().filter(|s| s.get("error").is_some()).collect();
    let [error] = errors.as_slice() else {
        panic!("not one error answer: {said:?}");
    };
    assert_eq!(error["jsonrpc"], "2.0", "{error}");
    (
        error["error"]["code"].as_i64().unwrap(),
        error.get("id").cloned().expect("an answer has an id"),
    )
}

/// `{"a": [[…]]}` `depth` arrays deep: past serde_json's limit of 128.
fn deep(depth: usize) -> String {
    format!(r#"{{"a":{}{}}}"#, "[".repeat(depth), "]".repeat(depth))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_line_that_does_not_read_is_answered_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    registered(dir);
    // Calls the gate lets run: a well-formed one is answered at once.
    common::approval_off(dir, "notes");
    let mut raw = Raw::start(dir).await;

    let cases: Vec<(&str, Vec<u8>, i64, Value)> = vec![
        (
            "nested 200 deep, the id first",
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"notes__read_note","arguments":{}}}}}"#,
                deep(200)
            )
            .into_bytes(),
            -32700,
            json!(1),
        ),
        (
            "nested 200 deep, the id after it",
            format!(
                r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"notes__read_note","arguments":{}}},"id":2}}"#,
                deep(200)
            )
            .into_bytes(),
            -32700,
            json!(2),
        ),
        (
            "a lone surrogate escape",
            br#"{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"notes__write_note","arguments":{"text":"\ud800"}}}"#.to_vec(),
            -32700,
            json!("three"),
        ),
        (
            "invalid UTF-8",
            b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"notes__write_note\",\"arguments\":{\"text\":\"\xff\xfe\xc3\"}}}".to_vec(),
            -32700,
            json!(4),
        ),
        (
            "truncated",
            br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"notes__re"#.to_vec(),
            -32700,
            json!(5),
        ),
        (
            "a batch array",
            br#"[{"jsonrpc":"2.0","id":6,"method":"ping"},{"jsonrpc":"2.0","id":7,"method":"ping"}]"#.to_vec(),
            -32600,
            Value::Null,
        ),
        (
            "not JSON, no id to find",
            b"hello, gateway".to_vec(),
            -32700,
            Value::Null,
        ),
        (
            "JSON of the wrong shape",
            br#"{"jsonrpc":"2.0","id":8,"method":["tools/list"]}"#.to_vec(),
            -32600,
            json!(8),
        ),
    ];
    for (at, (case, line, code, id)) in cases.into_iter().enumerate() {
        raw.send(&line).await;
        // Answered before the next request is read; the session goes on.
        let said = raw.ping(100 + i64::try_from(at).unwrap()).await;
        assert_eq!(the_error(&said), (code, id), "{case}");
    }

    // Blank lines are not answered.
    raw.send(b"").await;
    raw.send(b"  \t ").await;
    assert!(
        raw.ping(200).await.is_empty(),
        "a blank line is not answered"
    );
    // Nor is a notification that does not read: JSON-RPC answers none.
    raw.send(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#)
        .await;
    assert!(raw.ping(201).await.is_empty());

    // A line longer than 16 MiB: answered, skipped, never held whole.
    let mut long = br#"{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":""#.to_vec();
    long.resize(long.len() + 16 * 1024 * 1024 + 10, b'x');
    long.extend_from_slice(br#""}}"#);
    raw.send(&long).await;
    let said = raw.ping(202).await;
    assert_eq!(
        the_error(&said),
        (-32700, json!(9)),
        "a line past the bound"
    );

    // A well-formed call still works after all of it.
    let wrote = raw
        .call(203, "notes__write_note", json!({"text": "after"}))
        .await;
    assert_eq!(wrote["result"]["isError"], false, "{wrote}");
    assert_eq!(
        std::fs::read_to_string(dir.join("ledger")).unwrap(),
        "after\n",
        "the one well-formed write ran, once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_call_whose_params_do_not_fit_is_answered_invalid_params() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    registered(dir);
    let mut raw = Raw::start(dir).await;

    for (id, params, names) in [
        (1, json!({"arguments": {"text": "x"}}), "`name`"),
        (2, json!({"name": 5, "arguments": {}}), "`name`"),
        (
            3,
            json!({"name": "notes__write_note", "arguments": ["x"]}),
            "`arguments`",
        ),
        (4, json!("notes__write_note"), "a string, not an object"),
        (7, json!([1]), "an array, not an object"),
    ] {
        raw.line(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
            .await;
        let (_, answer) = raw.answer(id).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(names), "{message}");
    }
    // Arguments that read but do not fit the tool's schema: an error result
    // the model reads, from the core's check — never run, never held.
    let unfit = raw.call(5, "notes__write_note", json!({"text": 5})).await;
    assert_eq!(unfit["result"]["isError"], true, "{unfit}");
    let missing = raw.call(6, "notes__read_note", json!({})).await;
    assert_eq!(missing["result"]["isError"], true, "{missing}");
    assert!(
        std::fs::read_to_string(dir.join("ledger")).map_or(true, |t| t.is_empty()),
        "nothing ran"
    );
    let runs: Value =
        serde_json::from_str(&toolgate(dir, &["--json", "runs", "list"])).expect("JSON");
    assert_eq!(runs, json!([]), "nothing was held");
    raw.ping(7).await;
}

/// The gateway's lines up to a `notifications/tools/list_changed`, which
/// must come within 10 s.
async fn told_to_list_again(raw: &mut Raw) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let said = tokio::time::timeout_at(deadline, raw.next())
            .await
            .expect("a tools/list_changed within 10 s");
        if said["method"] == "notifications/tools/list_changed" {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_approval_tells_the_client_to_list_again() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    registered(dir);
    let mut raw = Raw::start(dir).await;
    let before = raw.tools(1).await;

    // Nothing the tools say changes — only whether they ask.
    common::approval_off(dir, "notes");
    told_to_list_again(&mut raw).await;
    assert_eq!(raw.tools(2).await, before);
    let ran = raw
        .call(3, "notes__write_note", json!({"text": "at once"}))
        .await;
    assert_eq!(ran["result"]["isError"], false, "{ran}");

    toolgate(dir, &["server", "set-approval", "notes", "on"]);
    told_to_list_again(&mut raw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_shows_titles_and_annotations_written_fail_closed() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    registered(dir);
    let mut raw = Raw::start(dir).await;
    let tools = raw.tools(1).await;
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} among {tools:?}"))
            .clone()
    };
    let fail_closed = json!({
        "readOnlyHint": false,
        "destructiveHint": true,
        "idempotentHint": false,
        "openWorldHint": true,
    });
    // The server says it only reads, and (for `tidy_notes`) lies: its hints
    // never reach the client, its title does.
    for (name, title) in [
        ("notes__read_note", "Read a note"),
        ("notes__tidy_notes", "Tidy notes"),
        ("notes__write_note", "Write a note"),
    ] {
        let shown = tool(name);
        assert_eq!(shown["title"], title, "{shown}");
        let mut expected = fail_closed.clone();
        expected["title"] = json!(title);
        assert_eq!(shown["annotations"], expected, "{shown}");
    }
    // No title given, none shown; the hints are the gateway's all the same.
    let untitled = tool("notes__always_fails");
    assert!(untitled.get("title").is_none(), "{untitled}");
    assert_eq!(untitled["annotations"], fail_closed, "{untitled}");
}
