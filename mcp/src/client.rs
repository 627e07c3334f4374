//! Connections to MCP servers, with a deadline on every operation.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::model::{CallToolRequestParams, ContentBlock, ListToolsResult, PaginatedRequestParams};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStderr};
use tokio::sync::watch;
use toolgate::ToolOutput;
use toolgate::visible::visible;
use toolgate_store::Transport;

use crate::output::sanitize;

/// Deadlines for talking to servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// Starting a server and the MCP handshake.
    pub connect: Duration,
    /// One page of `tools/list`.
    pub list_page: Duration,
    /// One `tools/call`.
    pub call: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(15),
            list_page: Duration::from_secs(15),
            call: Duration::from_secs(30),
        }
    }
}

/// Talking to a server failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The stored transport cannot be used.
    #[error("server `{server}` has an unusable transport: {reason}")]
    Transport {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// The process could not be started or the handshake failed.
    #[error("cannot connect to server `{server}`: {reason}")]
    Connect {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// The server did not answer in time.
    #[error("server `{server}` did not answer {what} within {} s", deadline.as_secs_f64())]
    Deadline {
        /// The server.
        server: String,
        /// What was asked.
        what: &'static str,
        /// The deadline.
        deadline: Duration,
    },
    /// The server's reply was larger than the client takes in one message:
    /// the client dropped it. The call ran on the server; its result is lost.
    #[error(
        "server `{server}` sent a result too large for {what}: over {} MiB in one message, the client's limit; the call ran on the server, and its result was dropped",
        limit / (1024 * 1024)
    )]
    TooLarge {
        /// The server.
        server: String,
        /// What was asked.
        what: &'static str,
        /// The limit, in bytes.
        limit: usize,
    },
    /// The request failed: the server answered with an error, hung up, or
    /// sent something that is not MCP.
    #[error("server `{server}` failed {what}: {reason}")]
    Request {
        /// The server.
        server: String,
        /// What was asked.
        what: &'static str,
        /// Why.
        reason: String,
    },
}

type Session = RunningService<RoleClient, ()>;

/// A live session, and for a stdio server the process behind it and the
/// count of messages it sent that were too large to take.
struct Live {
    service: Session,
    /// Killed when the session is dropped (`kill_on_drop`).
    child: Option<Child>,
    oversized: Option<watch::Receiver<u64>>,
}

/// The largest message the client takes from a stdio server: rmcp's own
/// limit for one line. A longer one is dropped by the transport, unseen.
const MAX_MESSAGE: usize = DEFAULT_MAX_LINE_LENGTH;

/// A stdio server's standard output as the transport reads it, watched for
/// lines the transport will drop as too large: each one moves a counter, so
/// the request waiting for that answer fails at once ("result too large")
/// instead of at its deadline.
struct Watched<R> {
    inner: R,
    /// Bytes of the current line so far (without its newline).
    line: usize,
    /// True once the current line was counted as too large.
    counted: bool,
    oversized: watch::Sender<u64>,
}

impl<R> Watched<R> {
    fn new(inner: R) -> (Self, watch::Receiver<u64>) {
        let (oversized, seen) = watch::channel(0);
        (
            Self {
                inner,
                line: 0,
                counted: false,
                oversized,
            },
            seen,
        )
    }

    /// Follows the bytes just read. A line whose bytes reach the limit is
    /// dropped by the transport (which counts the newline in the limit).
    fn saw(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        loop {
            let (segment, ended) = match rest.iter().position(|&b| b == b'\n') {
                Some(at) => (&rest[..at], Some(at)),
                None => (rest, None),
            };
            self.line = self.line.saturating_add(segment.len());
            if self.line >= MAX_MESSAGE && !self.counted {
                self.counted = true;
                self.oversized.send_modify(|n| *n += 1);
            }
            match ended {
                Some(at) => {
                    self.line = 0;
                    self.counted = false;
                    rest = &rest[at + 1..];
                }
                None => return,
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            this.saw(&buf.filled()[before..]);
        }
        polled
    }
}
/// The most characters of a failure's reason kept: a server that answers
/// with an HTML page does not fill the operator's screen or the store.
const MAX_REASON: usize = 300;

/// A failure as an operator reads it: the deepest cause in the error's
/// chain (`Connection refused (os error 111)`, not the transport's type
/// names), on one line, shortened.
fn reason_of(error: &(dyn std::error::Error + 'static)) -> String {
    let mut deepest = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        deepest = cause.to_string();
        source = cause.source();
    }
    one_line(&deepest)
}

/// Why a handshake failed: for a transport failure, the deepest cause of
/// the transport's own error (which the handshake error does not chain).
fn handshake_reason(error: &rmcp::service::ClientInitializeError) -> String {
    match error {
        rmcp::service::ClientInitializeError::TransportError { error, .. } => {
            // The HTTP client's error does not chain its cause through the
            // transport's error type; read it from the client's own.
            match error
                .error
                .downcast_ref::<rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>>()
            {
                Some(rmcp::transport::streamable_http_client::StreamableHttpError::Client(client)) => {
                    reason_of(client)
                }
                _ => reason_of(error.error.as_ref()),
            }
        }
        other => reason_of(other),
    }
}

/// Text on one line: runs of white space (line breaks included) become one
/// space, bracketed type paths (`[rmcp::transport::…]`) are dropped, and
/// the rest is cut at [`MAX_REASON`] characters.
pub(crate) fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_REASON));
    let mut depth = 0usize;
    let mut last_space = true;
    for c in text.chars() {
        match c {
            '[' if text.contains("::") => depth += 1,
            ']' if depth > 0 => depth -= 1,
            _ if depth > 0 => {}
            c if c.is_whitespace() => {
                if !last_space {
                    out.push(' ');
                    last_space = true;
                }
            }
            c => {
                out.push(c);
                last_space = false;
            }
        }
    }
    let out = out.trim();
    if out.chars().count() > MAX_REASON {
        let cut: String = out.chars().take(MAX_REASON).collect();
        format!("{cut}… (cut)")
    } else {
        out.to_owned()
    }
}

/// The last lines a stdio server wrote to its stderr, for the operator when
/// it stops before answering.
#[derive(Clone, Default)]
struct StderrTail {
    lines: Arc<std::sync::Mutex<std::collections::VecDeque<String>>>,
    done: Arc<tokio::sync::Notify>,
}

impl StderrTail {
    const KEEP: usize = 3;

    fn push(&self, line: String) {
        if let Ok(mut lines) = self.lines.lock() {
            if lines.len() == Self::KEEP {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }

    fn joined(&self) -> String {
        self.lines
            .lock()
            .map(|l| l.iter().cloned().collect::<Vec<_>>().join(" | "))
            .unwrap_or_default()
    }
}

/// The most bytes of one stderr line logged; the rest of a longer line is
/// dropped, and the line says so.
const MAX_STDERR_LINE: usize = 4096;

/// Logs each line a stdio server writes to its stderr, with the server's
/// identifier as a field and every hidden character escaped
/// ([`toolgate::visible::visible`]): a server cannot retitle, recolour or
/// rewrite the operator's terminal through its diagnostics. Lines are read
/// with a bound, so a server that never ends a line cannot grow memory.
/// Ends when the server closes its stderr (it exits or is stopped).
async fn log_stderr(server: String, stderr: ChildStderr, tail: StderrTail) {
    read_stderr(&server, stderr, &tail).await;
    tail.done.notify_waiters();
    tail.done.notify_one();
}

async fn read_stderr(server: &str, stderr: ChildStderr, tail: &StderrTail) {
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line = Vec::new();
    let mut cut = 0usize;
    loop {
        let (used, ended) = match reader.fill_buf().await {
            Ok([]) | Err(_) => {
                if !line.is_empty() || cut > 0 {
                    tail.push(emit_stderr_line(server, &line, cut));
                }
                return;
            }
            Ok(buffer) => {
                let (chunk, ended) = match buffer.iter().position(|&b| b == b'\n') {
                    Some(at) => (&buffer[..at], true),
                    None => (buffer, false),
                };
                let room = MAX_STDERR_LINE.saturating_sub(line.len());
                let take = chunk.len().min(room);
                line.extend_from_slice(&chunk[..take]);
                cut += chunk.len() - take;
                (chunk.len() + usize::from(ended), ended)
            }
        };
        reader.consume(used);
        if ended {
            tail.push(emit_stderr_line(server, &line, cut));
            line.clear();
            cut = 0;
        }
    }
}

/// Logs one stderr line, escaped, and hands it back for the tail.
fn emit_stderr_line(server: &str, line: &[u8], cut: usize) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.strip_suffix('\r').unwrap_or(&text);
    let text = visible(text).into_owned();
    if cut == 0 {
        tracing::info!(server = %server, line = %text, "server stderr");
    } else {
        tracing::info!(server = %server, line = %text, cut_bytes = cut, "server stderr (line cut)");
    }
    text
}

/// Why a stdio server's handshake failed, as an operator reads it: the
/// transport's reason, the process's exit status if it stopped, and the last
/// lines it wrote on its stderr.
async fn stopped(
    child: &mut Child,
    tail: &StderrTail,
    error: &rmcp::service::ClientInitializeError,
) -> String {
    // A server that stopped at once has written why on its stderr, and
    // exits: wait a moment for both.
    let _ = tokio::time::timeout(Duration::from_millis(300), tail.done.notified()).await;
    let status = match tokio::time::timeout(Duration::from_millis(300), child.wait()).await {
        Ok(Ok(status)) => Some(status),
        _ => None,
    };
    let _ = child.start_kill();
    let reason = handshake_reason(error);
    let what = match status {
        Some(status) => match status.code() {
            Some(code) => {
                format!("the server exited with status {code} before it answered ({reason})")
            }
            None => format!(
                "the server was stopped by a signal before it answered ({reason}, {status})"
            ),
        },
        None => format!("the server stopped answering before the handshake ended ({reason})"),
    };
    let said = tail.joined();
    if said.is_empty() {
        format!("{what}, and wrote nothing on its stderr")
    } else {
        format!(
            "{what}; the last it wrote on its stderr: {}",
            one_line(&said)
        )
    }
}

/// One server's connection, made on first use and remade after a failure.
pub struct Connection {
    server: String,
    transport: Transport,
    deadlines: Deadlines,
    session: tokio::sync::Mutex<Option<Live>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.server)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// A connection to `server` over `transport`; nothing is started yet.
    pub fn new(server: impl Into<String>, transport: Transport, deadlines: Deadlines) -> Arc<Self> {
        Arc::new(Self {
            server: server.into(),
            transport,
            deadlines,
            session: tokio::sync::Mutex::new(None),
        })
    }

    /// The server's identifier.
    pub fn server(&self) -> &str {
        &self.server
    }

    async fn connect(&self) -> Result<Live, ClientError> {
        let connecting = async {
            match &self.transport {
                Transport::Stdio { command } => {
                    let Some((program, args)) = command.split_first() else {
                        return Err("the command is empty".to_owned());
                    };
                    let mut cmd = tokio::process::Command::new(program);
                    // The server's stderr never reaches the operator's
                    // terminal as it is: it is read here, line by line, and
                    // logged escaped (see `log_stderr`). Its stdout is
                    // watched for messages too large to take.
                    cmd.args(args)
                        .stdin(Stdio::piped())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .kill_on_drop(true);
                    let mut child = cmd
                        .spawn()
                        .map_err(|e| format!("cannot start `{program}`: {e}"))?;
                    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take())
                    else {
                        return Err(format!(
                            "cannot talk to `{program}`: no standard input or output"
                        ));
                    };
                    let tail = StderrTail::default();
                    if let Some(stderr) = child.stderr.take() {
                        tokio::spawn(log_stderr(self.server.clone(), stderr, tail.clone()));
                    }
                    let (stdout, oversized) = Watched::new(stdout);
                    match ().serve((stdout, stdin)).await {
                        Ok(service) => Ok(Live {
                            service,
                            child: Some(child),
                            oversized: Some(oversized),
                        }),
                        Err(error) => Err(stopped(&mut child, &tail, &error).await),
                    }
                }
                Transport::Http { url } => {
                    let transport = StreamableHttpClientTransport::from_uri(url.as_str());
                    match ().serve(transport).await {
                        Ok(service) => Ok(Live {
                            service,
                            child: None,
                            oversized: None,
                        }),
                        Err(e) => Err(format!(
                            "cannot reach {}: {}",
                            visible(url),
                            handshake_reason(&e)
                        )),
                    }
                }
                Transport::Unreadable { reason } => Err(reason.clone()),
            }
        };
        if let Transport::Unreadable { reason } = &self.transport {
            return Err(ClientError::Transport {
                server: self.server.clone(),
                reason: reason.clone(),
            });
        }
        match tokio::time::timeout(self.deadlines.connect, connecting).await {
            Ok(Ok(session)) => Ok(session),
            Ok(Err(reason)) => Err(ClientError::Connect {
                server: self.server.clone(),
                reason,
            }),
            Err(_) => Err(ClientError::Deadline {
                server: self.server.clone(),
                what: "the handshake",
                deadline: self.deadlines.connect,
            }),
        }
    }

    /// The live session's peer, connecting if there is none, and for a
    /// stdio server the count of its messages too large to take.
    async fn peer(
        &self,
    ) -> Result<(rmcp::Peer<RoleClient>, Option<watch::Receiver<u64>>), ClientError> {
        let mut session = self.session.lock().await;
        if let Some(live) = session.as_ref()
            && !live.service.is_closed()
        {
            return Ok((live.service.peer().clone(), live.oversized.clone()));
        }
        let fresh = self.connect().await?;
        let peer = (fresh.service.peer().clone(), fresh.oversized.clone());
        *session = Some(fresh);
        Ok(peer)
    }

    /// Drops the session so the next request reconnects; a stdio server's
    /// process is stopped.
    async fn reset(&self) {
        if let Some(live) = self.session.lock().await.take() {
            let _ = live.service.cancel().await;
            if let Some(mut child) = live.child {
                let _ = child.start_kill();
                let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
            }
        }
    }

    /// Closes the session, stopping a stdio server.
    pub async fn close(&self) {
        self.reset().await;
    }

    /// One page of the server's catalogue.
    pub async fn list_page(&self, cursor: Option<String>) -> Result<ListToolsResult, ClientError> {
        let (peer, _) = self.peer().await?;
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        match tokio::time::timeout(self.deadlines.list_page, peer.list_tools(params)).await {
            Ok(Ok(page)) => Ok(page),
            Ok(Err(error)) => {
                self.reset().await;
                Err(ClientError::Request {
                    server: self.server.clone(),
                    what: "tools/list",
                    reason: reason_of(&error),
                })
            }
            Err(_) => {
                self.reset().await;
                Err(ClientError::Deadline {
                    server: self.server.clone(),
                    what: "tools/list",
                    deadline: self.deadlines.list_page,
                })
            }
        }
    }

    /// Calls a tool by its remote name. Every failure — `isError`, a transport
    /// failure, a missed deadline — is an error result for the model.
    pub async fn call(&self, remote_name: &str, arguments: Map<String, Value>) -> ToolOutput {
        match self.try_call(remote_name, arguments).await {
            Ok(output) => output,
            Err(error) => {
                tracing::warn!(server = %self.server, tool = remote_name, %error, "remote call failed");
                ToolOutput::error(sanitize(&error.to_string()))
            }
        }
    }

    async fn try_call(
        &self,
        remote_name: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolOutput, ClientError> {
        let (peer, oversized) = self.peer().await?;
        let params = CallToolRequestParams::new(remote_name.to_owned()).with_arguments(arguments);
        let call = tokio::time::timeout(self.deadlines.call, peer.call_tool(params));
        let too_large = async {
            match oversized {
                Some(mut seen) => {
                    seen.mark_unchanged();
                    if seen.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending::<()>().await,
            }
        };
        let answered = tokio::select! {
            biased;
            answered = call => answered,
            () = too_large => {
                self.reset().await;
                return Err(ClientError::TooLarge {
                    server: self.server.clone(),
                    what: "tools/call",
                    limit: MAX_MESSAGE,
                });
            }
        };
        let result = match answered {
            Ok(Ok(result)) => result,
            Ok(Err(error)) => {
                self.reset().await;
                return Err(ClientError::Request {
                    server: self.server.clone(),
                    what: "tools/call",
                    reason: reason_of(&error),
                });
            }
            Err(_) => {
                self.reset().await;
                return Err(ClientError::Deadline {
                    server: self.server.clone(),
                    what: "tools/call",
                    deadline: self.deadlines.call,
                });
            }
        };
        let text = result
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text(text) => text.text.clone(),
                other => serde_json::to_string(other).unwrap_or_default(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let text = sanitize(&text);
        Ok(if result.is_error == Some(true) {
            ToolOutput::error(format!(
                "server `{}` reported an error: {text}",
                self.server
            ))
        } else {
            ToolOutput::text(text)
        })
    }
}
