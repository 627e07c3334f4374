//! Runs the server as a child process and talks raw HTTP/1.1 to it.

use std::{
    io,
    net::SocketAddr,
    path::PathBuf,
    process::Stdio,
    time::{Duration, Instant},
};

use serde_json::Value;
use tempfile::TempDir;
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines},
    net::TcpStream,
    process::{Child, ChildStdout, Command},
    time::timeout,
};

/// How long any one exchange with the server may take.
const DEADLINE: Duration = Duration::from_secs(20);

/// The key the servers of these tests expect.
pub(crate) const KEY: &str = "sk-test-0123456789abcd";

/// A running server, killed when dropped.
pub(crate) struct Server {
    child: Child,
    /// Kept open so the server's stdout stays writable.
    _stdout: Lines<BufReader<ChildStdout>>,
    addr: SocketAddr,
    log: PathBuf,
    _dir: TempDir,
}

impl Server {
    /// Starts a server with this script and these extra arguments.
    pub(crate) async fn start(script: &Value, args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let script_path = dir.path().join("script.json");
        std::fs::write(&script_path, script.to_string()).expect("the script is written");
        let log = dir.path().join("requests.jsonl");
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate-model-test-server"))
            .arg("--script")
            .arg(&script_path)
            .arg("--log")
            .arg(&log)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the server starts");
        let stdout = child.stdout.take().expect("the server's stdout is piped");
        let mut lines = BufReader::new(stdout).lines();
        let line = timeout(DEADLINE, lines.next_line())
            .await
            .expect("the server announces its address in time")
            .expect("the server's stdout reads")
            .expect("the server prints a line before exiting");
        let addr = line
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .parse()
            .expect("the announced address parses");
        Self {
            child,
            _stdout: lines,
            addr,
            log,
            _dir: dir,
        }
    }

    /// Starts a server with this script, the test key and these models.
    pub(crate) async fn with_key(script: &Value, models: &[&str]) -> Self {
        let mut args = vec!["--key", KEY];
        for model in models {
            args.extend(["--model", model]);
        }
        Self::start(script, &args).await
    }

    /// Sends `POST path` with these headers (Host, Content-Length and
    /// `Connection: close` are added) and reads the answer to the end.
    pub(crate) async fn post(&self, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut request = format!("POST {path} HTTP/1.1\r\nHost: {}\r\n", self.addr);
        for (name, value) in headers {
            request.push_str(name);
            request.push_str(": ");
            request.push_str(value);
            request.push_str("\r\n");
        }
        request.push_str("Content-Length: ");
        request.push_str(&body.len().to_string());
        request.push_str("\r\nConnection: close\r\n\r\n");
        request.push_str(body);
        self.exchange(request.as_bytes()).await
    }

    /// A Chat Completions request with the test key.
    pub(crate) async fn openai(&self, body: &Value) -> Reply {
        let auth = format!("Bearer {KEY}");
        let headers = [
            ("Content-Type", "application/json"),
            ("Authorization", &auth),
        ];
        self.post("/v1/chat/completions", &headers, &body.to_string())
            .await
    }

    /// A Messages request with the test key and version.
    pub(crate) async fn anthropic(&self, body: &Value) -> Reply {
        let headers = [
            ("Content-Type", "application/json"),
            ("x-api-key", KEY),
            ("anthropic-version", "2023-06-01"),
        ];
        self.post("/v1/messages", &headers, &body.to_string()).await
    }

    /// Writes `request` as is and reads until the server closes the connection.
    pub(crate) async fn exchange(&self, request: &[u8]) -> Reply {
        let started = Instant::now();
        let mut stream = TcpStream::connect(self.addr)
            .await
            .expect("the server accepts a connection");
        stream
            .write_all(request)
            .await
            .expect("the request is written");
        let mut bytes = Vec::new();
        let read = timeout(DEADLINE, stream.read_to_end(&mut bytes))
            .await
            .expect("the server closes the connection in time");
        Reply::parse(bytes, read.err(), started.elapsed())
    }

    /// The request log, one value per line.
    pub(crate) fn log_lines(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .map(|line| serde_json::from_str(line).expect("each log line is JSON"))
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // `kill_on_drop` would too; this says so where the reader looks.
        let _ = self.child.start_kill();
    }
}

/// What came back on a connection.
#[derive(Debug)]
pub(crate) struct Reply {
    /// The status, or 0 when nothing came back.
    pub(crate) status: u16,
    /// The headers, names lowercased.
    pub(crate) headers: Vec<(String, String)>,
    /// The body's bytes as received.
    pub(crate) body: Vec<u8>,
    /// How many bytes came back in all.
    pub(crate) received: usize,
    /// The read error that ended the exchange, if it did not end cleanly.
    pub(crate) error: Option<io::ErrorKind>,
    /// How long the exchange took.
    pub(crate) elapsed: Duration,
}

impl Reply {
    fn parse(bytes: Vec<u8>, error: Option<io::Error>, elapsed: Duration) -> Self {
        let received = bytes.len();
        let error = error.map(|error| error.kind());
        let Some(split) = bytes.windows(4).position(|window| window == b"\r\n\r\n") else {
            return Self {
                status: 0,
                headers: Vec::new(),
                body: bytes,
                received,
                error,
                elapsed,
            };
        };
        let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse().ok())
            .expect("a status line");
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
            .collect();
        Self {
            status,
            headers,
            body: bytes[split + 4..].to_vec(),
            received,
            error,
            elapsed,
        }
    }

    /// The first value of a header.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header == name)
            .map(|(_, value)| value.as_str())
    }

    /// The body as JSON.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|error| {
            panic!(
                "the body is not JSON ({error}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The body as text.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}
