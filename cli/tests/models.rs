//! A real model client end to end: the `agent` example of `toolgate-models`
//! (builtins declared with the derive, the imported `notes` server from the
//! store) talks Chat Completions to the protocol server, a separate process
//! that checks each request and answers from a script. Its write waits for
//! approval and is saved; the decision comes from `toolgate runs approve`;
//! the example's host resumes it, runs each write once, and sends the
//! results back to the model.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause"
)]

mod common;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{TOOLGATE, toolgate};
use serde_json::{Value, json};

const KEY: &str = "sk-e2e-0123456789abcdef";

/// A binary built beside `toolgate` by `cargo test --workspace`.
fn beside_toolgate(relative: &str) -> PathBuf {
    let path = Path::new(TOOLGATE)
        .parent()
        .expect("toolgate is in a directory")
        .join(relative);
    assert!(
        path.exists(),
        "{} is not built: run `cargo test --workspace`",
        path.display()
    );
    path
}

/// A child process killed when dropped, its stdout lines on a channel.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Running {
    fn spawn(command: &mut Command) -> Self {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the process starts");
        let stdout = child.stdout.take().expect("piped");
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Self { child, lines }
    }

    /// Lines until one that contains `text` (that one included).
    fn until(&self, text: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match self.lines.recv_timeout(Duration::from_mins(1)) {
                Ok(line) => {
                    let found = line.contains(text);
                    seen.push(line);
                    if found {
                        return seen;
                    }
                }
                Err(error) => panic!("no line with `{text}` ({error}); so far: {seen:#?}"),
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn completion(message: &Value, finish_reason: &str, prompt_tokens: u64) -> Value {
    json!({"status": 200, "body": {
        "id": "chatcmpl-e2e", "object": "chat.completion", "created": 1, "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 20, "total_tokens": prompt_tokens + 20}
    }})
}

/// The `notes` server registered (approval required), writing `ledger`,
/// and imported.
fn register_notes(path: &Path, ledger: &Path) {
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
            ledger.to_str().expect("a UTF-8 path"),
        ],
    );
    toolgate(path, &["import", "notes"]);
}

/// The protocol server with the model's two answers: a turn of two writes
/// (a builtin and the server's), then the final answer. Its base URL.
fn model_server(path: &Path, log: &Path) -> (Running, String) {
    let script = json!([
        completion(
            &json!({"role": "assistant", "content": "Saving it in both places.", "tool_calls": [
                {"id": "call_save", "type": "function", "function": {"name": "save_note", "arguments": "{\"text\": \"the build is green\"}"}},
                {"id": "call_notes", "type": "function", "function": {"name": "notes__write_note", "arguments": "{\"text\": \"the build is green\"}"}}
            ]}),
            "tool_calls",
            300
        ),
        completion(
            &json!({"role": "assistant", "content": "Saved the note twice."}),
            "stop",
            420
        ),
    ]);
    let script_path = path.join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let server = Running::spawn(
        Command::new(beside_toolgate("toolgate-model-test-server"))
            .arg("--script")
            .arg(&script_path)
            .arg("--log")
            .arg(log)
            .args(["--key", KEY, "--model", "gpt-4.1-mini"]),
    );
    let listening = server.until("listening on ");
    let base = listening
        .last()
        .and_then(|l| l.strip_prefix("listening on "))
        .expect("the address")
        .to_owned();
    (server, base)
}

/// The model was asked twice, each request valid; the second carries both
/// results under the model's own ids.
fn check_requests(log: &Path) {
    let requests: Vec<Value> = std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request["problems"], json!([]), "{request}");
        assert_eq!(request["headers"]["authorization"], format!("Bearer {KEY}"));
    }
    let names: Vec<&str> = requests[0]["body"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"save_note") && names.contains(&"notes__write_note"),
        "{names:?}"
    );
    let messages = requests[1]["body"]["messages"].as_array().unwrap();
    let results: Vec<(&str, &str)> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(results.len(), 2, "{messages:#?}");
    assert_eq!(
        results[0],
        ("call_save", "saved the note `the build is green`")
    );
    assert_eq!(results[1].0, "call_notes");
    assert!(!results[1].1.starts_with("Error: "), "{results:?}");
}

#[test]
fn a_real_client_pauses_is_saved_decided_from_the_cli_and_resumed() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path();
    let ledger = path.join("notes-ledger.txt");
    register_notes(path, &ledger);
    let log = path.join("requests.jsonl");
    let (server, base) = model_server(path, &log);

    let mut command = Command::new(beside_toolgate("examples/agent"));
    command
        .args([
            "--base-url",
            &format!("{base}/v1"),
            "--model",
            "gpt-4.1-mini",
        ])
        .arg("--data-dir")
        .arg(path)
        .arg("Save a note that the build is green")
        .env("OPENAI_API_KEY", KEY)
        .env_remove("TOOLGATE_DATABASE_URL")
        .envs(common::database_env(path));
    let agent = Running::spawn(&mut command);
    let said = agent.until("waits for approval");
    let run_id = said
        .last()
        .and_then(|l| l.strip_prefix("run "))
        .and_then(|l| l.split_whitespace().next())
        .expect("the run's id")
        .to_owned();
    assert!(
        !path.join("notes.txt").exists(),
        "nothing ran before the decision"
    );
    assert!(!ledger.exists(), "nothing ran before the decision");

    let shown: Value =
        serde_json::from_str(&toolgate(path, &["--json", "runs", "show", &run_id])).expect("JSON");
    let digest = shown["digest"].as_str().expect("the digest");
    let recorded = toolgate(
        path,
        &[
            "runs", "approve", &run_id, "--digest", digest, "--as", "bob",
        ],
    );
    assert_eq!(
        recorded.trim(),
        "recorded: approved by bob (name from flag); host `agent-example` will resume it"
    );

    let rest = agent.until("tokens:");
    assert!(
        rest.contains(&"answer: Saved the note twice.".to_owned()),
        "{rest:#?}"
    );
    assert_eq!(
        rest.last().map(String::as_str),
        Some("tokens: 720 in (0 cached, 0 cache writes), 40 out (0 reasoning)")
    );
    assert_eq!(
        std::fs::read_to_string(path.join("notes.txt")).unwrap(),
        "the build is green\n",
        "the builtin write ran once"
    );
    assert_eq!(
        std::fs::read_to_string(&ledger).unwrap().lines().count(),
        1,
        "the server's write ran once"
    );
    check_requests(&log);
    drop(server);
}
