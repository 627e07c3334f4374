//! The protocol server as a child process: started with a script, its
//! request log read back line by line.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The key the servers of these tests expect.
pub const KEY: &str = "sk-test-0123456789abcdef";

/// The protocol server binary, built beside this test (`cargo test
/// --workspace` builds it).
pub fn server_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test runs from target/<profile>/deps");
    let binary = dir.join(format!(
        "toolgate-model-test-server{}",
        std::env::consts::EXE_SUFFIX
    ));
    assert!(
        binary.exists(),
        "{} is not built: run `cargo test --workspace`, or `cargo build -p toolgate-model-test-server` first",
        binary.display()
    );
    binary
}

/// A running protocol server, killed when dropped.
pub struct Server {
    child: Child,
    pub base: String,
    log: PathBuf,
    _dir: TempDir,
}

impl Server {
    /// Starts a server answering with `script`, expecting [`KEY`] and
    /// knowing only `models`.
    pub async fn start(script: Value, models: &[&str]) -> Self {
        Self::start_keyed(script, models, KEY).await
    }

    /// Starts a server answering with `script`, expecting `key`.
    pub async fn start_keyed(script: Value, models: &[&str], key: &str) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let script_path = dir.path().join("script.json");
        std::fs::write(&script_path, script.to_string()).expect("the script is written");
        let log = dir.path().join("requests.jsonl");
        let mut command = Command::new(server_binary());
        command
            .arg("--script")
            .arg(&script_path)
            .arg("--log")
            .arg(&log)
            .args(["--key", key]);
        for model in models {
            command.args(["--model", model]);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the server starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("the server announces its address in time")
            .expect("stdout reads")
            .expect("a line");
        let base = line
            .strip_prefix("listening on ")
            .expect("the announcement")
            .to_owned();
        // Keep reading stdout so the server never blocks on it.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            child,
            base,
            log,
            _dir: dir,
        }
    }

    /// The requests received so far, as the server logged them.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("a log line is JSON"))
            .collect()
    }

    /// The one request received, checked to have passed the server's schema
    /// checks.
    pub fn valid(&self, n: usize) -> Value {
        let requests = self.requests();
        let request = requests.get(n).cloned().expect("the request was received");
        assert_eq!(
            request["problems"],
            Value::Array(vec![]),
            "the server found the request invalid: {request}"
        );
        request
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
