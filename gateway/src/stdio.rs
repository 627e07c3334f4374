//! The gateway's stdio transport: every line a client sends is answered.
//!
//! rmcp's own stdio transport drops a line it cannot parse, unanswered — on
//! purpose, against an error storm with a peer that echoes what it reads
//! (<https://github.com/modelcontextprotocol/rust-sdk/issues/938>) — so a
//! client that sent a request too deep for serde_json, with a lone surrogate
//! escape, invalid UTF-8 or cut short waits for its own timeout, never told.
//! [`StdioTransport`] reads the client's input a line at a time, at most
//! [`MAX_LINE_LENGTH`] bytes of it held, and:
//!
//! - a line that reads as a client's JSON-RPC message goes to rmcp as it is;
//! - a line that is not JSON — or longer than the bound, which is skipped to
//!   its end without being held — is answered `-32700` "Parse error";
//! - JSON that is no message (a batch array, a request of the wrong shape)
//!   is answered `-32600` "Invalid Request": batches are not part of MCP
//!   since 2025-06-18, and JSON-RPC gives an invalid request this code — but
//!   a request whose `params` are a string, a number or a boolean is
//!   answered `-32602` invalid params, naming them;
//! - a notification or a response that does not read is not answered
//!   (JSON-RPC answers neither), only logged; nor is a blank line.
//!
//! An answer carries the request's `id` when a bounded scan of the line
//! finds it — a `"id":` member of the top-level object, whose value is a
//! number or a string, found without parsing the rest — else `"id": null`.
//! A client cannot match an answer with a null id to its request, so such a
//! request still waits for the client's timeout; the answer is logged on the
//! client's side at least. What the wrapper answers is itself a well-formed
//! JSON-RPC error, which reads as a message if a peer echoes it back: no
//! storm.
//!
//! rmcp's messages and the wrapper's answers are written by one writer, a
//! whole line at a time: a write cut short (its future dropped) leaves its
//! bytes queued, and the next write sends them first, so two lines never
//! interleave.
//!
//! This process's own standard input and output are best handed over as
//! [`handles`] give them: tokio's `stdin()` and `stdout()` run every read
//! and every write on a thread of its blocking pool, a hand-off between
//! threads each way for every message; [`handles`] drives a pipe or a
//! socket — what an MCP client starts a server with — on the runtime's
//! reactor instead.

use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ErrorCode};
use rmcp::service::TxJsonRpcMessage;
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};

/// The longest line read, in bytes, by default: 16 MiB (rmcp's own bound).
/// A longer line is answered "Parse error" and skipped to its end.
pub const MAX_LINE_LENGTH: usize = 16 * 1024 * 1024;

/// The longest `id` token an answer echoes, in bytes: a longer one is not
/// recovered.
const MAX_ID_LENGTH: usize = 1024;

/// A writer's buffer kept between lines up to this capacity; a larger one
/// (after a large answer) is let go.
const KEPT_BUFFER: usize = 1024 * 1024;

/// The standard input and output of this process as a [`StdioTransport`],
/// as [`handles`] give them.
///
/// # Panics
///
/// Outside a tokio runtime with IO enabled.
pub fn stdio() -> StdioTransport<Input, Output> {
    let (input, output) = handles();
    StdioTransport::new(input, output)
}

/// This process's standard input and output, each driven by the runtime's
/// reactor when it is a pipe or a Unix socket — a client that starts the
/// gateway gives it one or the other (Python's SDK pipes, Node's sockets) —
/// else tokio's own handles, which read and write on its blocking pool.
///
/// A pipe is opened again through `/proc/self/fd` (Linux), so the
/// non-blocking mode is this handle's alone, not the process's descriptor's.
/// A socket's mode cannot be kept apart: it is set on the descriptor's
/// shared description, so standard output must be written through
/// [`Output`] alone (as the gateway does: its logs go to stderr).
///
/// # Panics
///
/// Outside a tokio runtime with IO enabled.
pub fn handles() -> (Input, Output) {
    (Input::new(), Output::new())
}

/// This process's standard input, from [`handles`].
#[derive(Debug)]
pub struct Input(InputKind);

#[derive(Debug)]
enum InputKind {
    Pipe(tokio::net::unix::pipe::Receiver),
    Socket(tokio::net::UnixStream),
    Blocking(tokio::io::Stdin),
}

/// This process's standard output, from [`handles`].
#[derive(Debug)]
pub struct Output(OutputKind);

#[derive(Debug)]
enum OutputKind {
    Pipe(tokio::net::unix::pipe::Sender),
    Socket(tokio::net::UnixStream),
    Blocking(tokio::io::Stdout),
}

impl Input {
    fn new() -> Self {
        use std::os::fd::AsFd as _;
        let options = tokio::net::unix::pipe::OpenOptions::new();
        if let Ok(pipe) = options.open_receiver("/proc/self/fd/0") {
            return Self(InputKind::Pipe(pipe));
        }
        match socket(io::stdin().as_fd()) {
            Some(socket) => Self(InputKind::Socket(socket)),
            None => Self(InputKind::Blocking(tokio::io::stdin())),
        }
    }
}

impl Output {
    fn new() -> Self {
        use std::os::fd::AsFd as _;
        let options = tokio::net::unix::pipe::OpenOptions::new();
        if let Ok(pipe) = options.open_sender("/proc/self/fd/1") {
            return Self(OutputKind::Pipe(pipe));
        }
        match socket(io::stdout().as_fd()) {
            Some(socket) => Self(OutputKind::Socket(socket)),
            None => Self(OutputKind::Blocking(tokio::io::stdout())),
        }
    }
}

/// A Unix socket on the runtime's reactor, over a copy of `fd`, when `fd`
/// is a socket.
fn socket(fd: std::os::fd::BorrowedFd<'_>) -> Option<tokio::net::UnixStream> {
    use std::os::unix::fs::FileTypeExt as _;
    let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
    if !file.metadata().ok()?.file_type().is_socket() {
        return None;
    }
    let socket = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(file));
    socket.set_nonblocking(true).ok()?;
    tokio::net::UnixStream::from_std(socket).ok()
}

impl AsyncRead for Input {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        use std::pin::Pin;
        match &mut self.get_mut().0 {
            InputKind::Pipe(read) => Pin::new(read).poll_read(cx, buf),
            InputKind::Socket(read) => Pin::new(read).poll_read(cx, buf),
            InputKind::Blocking(read) => Pin::new(read).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Output {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        use std::pin::Pin;
        match &mut self.get_mut().0 {
            OutputKind::Pipe(write) => Pin::new(write).poll_write(cx, buf),
            OutputKind::Socket(write) => Pin::new(write).poll_write(cx, buf),
            OutputKind::Blocking(write) => Pin::new(write).poll_write(cx, buf),
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        use std::pin::Pin;
        match &mut self.get_mut().0 {
            OutputKind::Pipe(write) => Pin::new(write).poll_flush(cx),
            OutputKind::Socket(write) => Pin::new(write).poll_flush(cx),
            OutputKind::Blocking(write) => Pin::new(write).poll_flush(cx),
        }
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        use std::pin::Pin;
        match &mut self.get_mut().0 {
            OutputKind::Pipe(write) => Pin::new(write).poll_shutdown(cx),
            OutputKind::Socket(write) => Pin::new(write).poll_shutdown(cx),
            OutputKind::Blocking(write) => Pin::new(write).poll_shutdown(cx),
        }
    }
}

/// An MCP server's transport over a byte stream of lines — a process's
/// standard input and output — that answers every request it cannot hand
/// on (see the [module](self)).
pub struct StdioTransport<R, W> {
    read: BufReader<R>,
    /// The line read so far. `receive` runs inside a `select!` and may be
    /// dropped mid-line: what was read stays here for the next call.
    line: Vec<u8>,
    max_line_length: usize,
    /// Skipping the rest of a line longer than the bound.
    discarding: bool,
    /// The input ended.
    ended: bool,
    out: Arc<tokio::sync::Mutex<Out<W>>>,
    /// An answer of the wrapper's own, not yet handed to the writer.
    owed: Option<Vec<u8>>,
    /// An answer handed to the writer and not yet known to be written.
    flushing: bool,
}

impl<R, W> StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// The transport over `read` (the client's lines) and `write`.
    pub fn new(read: R, write: W) -> Self {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            max_line_length: MAX_LINE_LENGTH,
            discarding: false,
            ended: false,
            out: Arc::new(tokio::sync::Mutex::new(Out {
                write: Some(write),
                buffer: Vec::new(),
                sent: 0,
            })),
            owed: None,
            flushing: false,
        }
    }

    /// The longest line read, in bytes. Default: [`MAX_LINE_LENGTH`].
    #[must_use]
    pub fn with_max_line_length(mut self, bytes: usize) -> Self {
        self.max_line_length = bytes.max(1);
        self
    }

    /// Reads up to the end of a line into `self.line`, never holding more
    /// than the bound. Cancel-safe: `fill_buf` consumes nothing when
    /// dropped, and each copy is consumed with no await between.
    async fn read_line(&mut self) -> Read {
        loop {
            let (consumed, step) = {
                let available = match self.read.fill_buf().await {
                    Ok(available) => available,
                    Err(error) => return Read::Failed(error),
                };
                if available.is_empty() {
                    return Read::End;
                }
                let newline = available.iter().position(|&b| b == b'\n');
                let take = newline.map_or(available.len(), |at| at + 1);
                if self.discarding {
                    (
                        take,
                        if newline.is_some() {
                            Step::Skipped
                        } else {
                            Step::More
                        },
                    )
                } else if self.line.len().saturating_add(take) > self.max_line_length {
                    // The line's start, up to the bound, is read for its id.
                    let room = self.max_line_length.saturating_sub(self.line.len());
                    self.line.extend_from_slice(&available[..room.min(take)]);
                    let id = recover_id(&self.line);
                    self.line.clear();
                    (
                        take,
                        if newline.is_some() {
                            Step::TooLong(id)
                        } else {
                            Step::TooLongSkip(id)
                        },
                    )
                } else {
                    self.line.extend_from_slice(&available[..take]);
                    (
                        take,
                        if newline.is_some() {
                            Step::Line
                        } else {
                            Step::More
                        },
                    )
                }
            };
            self.read.consume(consumed);
            match step {
                Step::Line => return Read::Line,
                Step::More => {}
                Step::Skipped => self.discarding = false,
                Step::TooLong(id) => return Read::TooLong(id),
                Step::TooLongSkip(id) => {
                    self.discarding = true;
                    return Read::TooLong(id);
                }
            }
        }
    }

    /// Writes the answer owed, if any, before anything else is read: a
    /// client that floods bad lines and reads nothing is not read further.
    async fn settle(&mut self) -> io::Result<()> {
        if self.owed.is_none() && !self.flushing {
            return Ok(());
        }
        let mut out = self.out.lock().await;
        if let Some(answer) = self.owed.take() {
            out.buffer.extend_from_slice(&answer);
            self.flushing = true;
        }
        out.drain().await?;
        self.flushing = false;
        Ok(())
    }
}

/// How one bounded read ended.
enum Read {
    /// A line, its newline included, is in `line`.
    Line,
    /// The line is longer than the bound: skipped, and the id its start
    /// holds, if any.
    TooLong(Option<String>),
    /// The input ended; a last line without its newline may be in `line`.
    End,
    Failed(io::Error),
}

/// What to do once `fill_buf`'s borrow has ended.
enum Step {
    Line,
    More,
    Skipped,
    TooLong(Option<String>),
    TooLongSkip(Option<String>),
}

impl<R, W> Transport<RoleServer> for StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = Arc::clone(&self.out);
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        async move {
            let line = line.map_err(io::Error::other)?;
            let mut out = out.lock().await;
            out.buffer.extend_from_slice(&line);
            out.drain().await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if let Err(error) = self.settle().await {
                tracing::error!(%error, "cannot answer the client");
                return None;
            }
            if self.ended {
                return None;
            }
            match self.read_line().await {
                Read::Line => {}
                Read::TooLong(id) => {
                    tracing::warn!(
                        max = self.max_line_length,
                        id_recovered = id.is_some(),
                        "a line longer than the bound is answered and skipped"
                    );
                    self.owed = Some(answer(
                        ErrorCode::PARSE_ERROR,
                        "Parse error",
                        id.as_deref(),
                        &format!("the line is longer than {} bytes", self.max_line_length),
                    ));
                    continue;
                }
                Read::End => {
                    self.ended = true;
                    if self.line.is_empty() {
                        return None;
                    }
                    // A last line without its newline is read as a line.
                }
                Read::Failed(error) => {
                    tracing::error!(%error, "cannot read the client's input");
                    return None;
                }
            }
            let heard = judge(&self.line);
            self.line.clear();
            match heard {
                Heard::Message(message) => return Some(*message),
                Heard::Answer(answer) => self.owed = Some(answer),
                Heard::Nothing => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut out = self.out.lock().await;
        let drained = out.drain().await;
        out.write = None;
        drained
    }
}

/// The writer both rmcp's messages and the wrapper's answers go through.
struct Out<W> {
    /// `None` once closed.
    write: Option<W>,
    /// Whole lines queued, of which `sent` bytes are written.
    buffer: Vec<u8>,
    sent: usize,
}

impl<W: AsyncWrite + Unpin> Out<W> {
    /// Writes every queued byte, then flushes. Cancel-safe: a write that is
    /// dropped wrote nothing, and what is left stays queued for the next.
    async fn drain(&mut self) -> io::Result<()> {
        let Some(write) = self.write.as_mut() else {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "the transport is closed",
            ));
        };
        while let Some(rest) = self.buffer.get(self.sent..).filter(|rest| !rest.is_empty()) {
            let written = write.write(rest).await?;
            if written == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.sent += written;
        }
        if self.buffer.capacity() > KEPT_BUFFER {
            self.buffer = Vec::new();
        } else {
            self.buffer.clear();
        }
        self.sent = 0;
        write.flush().await
    }
}

mod judge;
use judge::{Heard, answer, judge, recover_id};

#[cfg(test)]
mod tests;
