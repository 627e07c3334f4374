//! A stdio server's process as the client watches it: its standard output
//! checked for messages too large to take, its stderr logged and its last
//! lines kept, and why it stopped, as an operator reads it.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
use tokio::io::{AsyncBufReadExt, AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStderr};
use tokio::sync::watch;
use toolgate::visible::visible;

/// The largest message the client takes from a stdio server: rmcp's own
/// limit for one line. A longer one is dropped by the transport, unseen.
pub(super) const MAX_MESSAGE: usize = DEFAULT_MAX_LINE_LENGTH;

/// A stdio server's standard output as the transport reads it, watched for
/// lines the transport will drop as too large: each one moves a counter, so
/// the request waiting for that answer fails at once ("result too large")
/// instead of at its deadline.
pub(super) struct Watched<R> {
    inner: R,
    /// Bytes of the current line so far (without its newline).
    line: usize,
    /// True once the current line was counted as too large.
    counted: bool,
    oversized: watch::Sender<u64>,
}

impl<R> Watched<R> {
    pub(super) fn new(inner: R) -> (Self, watch::Receiver<u64>) {
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
pub(super) fn reason_of(error: &(dyn std::error::Error + 'static)) -> String {
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
pub(super) fn handshake_reason(error: &rmcp::service::ClientInitializeError) -> String {
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
fn one_line(text: &str) -> String {
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
pub(super) struct StderrTail {
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
pub(super) async fn log_stderr(server: String, stderr: ChildStderr, tail: StderrTail) {
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
pub(super) async fn stopped(
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
