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
use serde_json::Value;
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

/// What a line says.
enum Heard {
    /// A message for rmcp.
    Message(Box<ClientJsonRpcMessage>),
    /// An answer of the wrapper's own: one line of JSON.
    Answer(Vec<u8>),
    /// Nothing to hand on or answer.
    Nothing,
}

/// Reads one line (its newline included, or not, at the end of the input).
fn judge(line: &[u8]) -> Heard {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // RFC 8259 §8.1 lets a parser ignore a leading byte order mark; rmcp does.
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Heard::Nothing;
    }
    let error = match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(message) => return Heard::Message(Box::new(message)),
        Err(error) => error,
    };
    match error.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            // A client's reply to one of ours (an elicitation form's) that
            // does not read is not answered: an error under its id would
            // read as the answer to the client's own request of that id.
            if is_reply(line) {
                tracing::warn!(bytes = line.len(), %error, "a reply that is not JSON is not answered");
                return Heard::Nothing;
            }
            let id = recover_id(line);
            tracing::warn!(
                bytes = line.len(),
                id_recovered = id.is_some(),
                %error,
                "a line that is not JSON is answered"
            );
            Heard::Answer(answer(
                ErrorCode::PARSE_ERROR,
                "Parse error",
                id.as_deref(),
                &error.to_string(),
            ))
        }
        serde_json::error::Category::Data | serde_json::error::Category::Io => {
            not_a_message(line, &error)
        }
    }
}

/// JSON that does not read as a client's message: a batch, a request of
/// the wrong shape, or a notification or response that is not answered.
fn not_a_message(line: &[u8], error: &serde_json::Error) -> Heard {
    let invalid = |id: Option<&str>, reason: &str| {
        tracing::warn!(id_recovered = id.is_some(), %reason, "an invalid request is answered");
        Heard::Answer(answer(
            ErrorCode::INVALID_REQUEST,
            "Invalid Request",
            id,
            reason,
        ))
    };
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Array(_)) => invalid(
            None,
            "a JSON array: batches are not part of MCP; send each message on a line of its own",
        ),
        Ok(Value::Object(object)) => {
            let id = match object.get("id") {
                // The id's own text, never the number read back: an integer
                // past 64 bits would come back as a float, another id.
                Some(Value::Number(_)) => recover_id(line),
                Some(Value::String(text)) if text.len() <= MAX_ID_LENGTH => {
                    serde_json::to_string(text).ok()
                }
                _ => None,
            };
            let method = object.contains_key("method");
            let response = object.contains_key("result") || object.contains_key("error");
            if !object.contains_key("id") && method {
                tracing::warn!(%error, "a notification that does not read is not answered");
                Heard::Nothing
            } else if !method && response {
                tracing::warn!(%error, "a response that does not read is not answered");
                Heard::Nothing
            } else if let (Some(Value::String(method)), Some(params)) =
                (object.get("method"), object.get("params"))
                && !matches!(params, Value::Object(_) | Value::Null)
            {
                // A request whose params are not an object never reaches a
                // handler (MCP's params are named, never by position): its
                // params are what is wrong.
                let reason = format!(
                    "the params of `{}` are {}, not an object",
                    toolgate::visible::visible(method),
                    match params {
                        Value::String(_) => "a string",
                        Value::Array(_) => "an array",
                        _ => "a number or a boolean",
                    }
                );
                tracing::warn!(id_recovered = id.is_some(), %reason, "a request's params are answered invalid");
                Heard::Answer(answer(
                    ErrorCode::INVALID_PARAMS,
                    &reason,
                    id.as_deref(),
                    &reason,
                ))
            } else if let Some(Value::Number(number)) = object.get("id")
                && number.as_i64().is_none()
            {
                invalid(
                    id.as_deref(),
                    "the id is a number outside the 64-bit integers (a fraction, or too large): use a string or an integer id",
                )
            } else {
                invalid(id.as_deref(), &error.to_string())
            }
        }
        Ok(_) => invalid(None, "not a JSON-RPC message: a message is a JSON object"),
        // Read once as a message, it should read as JSON; were it not to, it
        // is not JSON.
        Err(error) => Heard::Answer(answer(
            ErrorCode::PARSE_ERROR,
            "Parse error",
            recover_id(line).as_deref(),
            &error.to_string(),
        )),
    }
}

/// A JSON-RPC error answer, as one line: `id` is the JSON text of the id,
/// or `None` for `null`.
fn answer(code: ErrorCode, message: &str, id: Option<&str>, reason: &str) -> Vec<u8> {
    let error = serde_json::json!({
        "code": code.0,
        "message": message,
        "data": {"reason": reason},
    });
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#,
        id.unwrap_or("null")
    )
    .into_bytes()
    .into_iter()
    .chain([b'\n'])
    .collect()
}

/// The JSON text of the `id` of the top-level object `line` holds, when it
/// is a number or a string: found by one pass over the line that reads
/// nothing but the top-level members before it, whatever the line holds
/// beyond (any depth, invalid UTF-8, an end cut short). `None` for anything
/// else — a line that is no object (a batch), an `id` of another kind, one
/// longer than [`MAX_ID_LENGTH`], or a number the line's end may have cut.
fn recover_id(line: &[u8]) -> Option<String> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let mut at = skip_space(line, 0);
    if line.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_space(line, at);
        if line.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(line, at)?;
        let is_id = line.get(at..key_end) == Some(b"\"id\"".as_slice());
        at = skip_space(line, key_end);
        if line.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(line, at + 1);
        if is_id {
            return id_token(line.get(at..)?);
        }
        at = skip_space(line, value_end(line, at)?);
        if line.get(at) != Some(&b',') {
            return None;
        }
        at += 1;
    }
}

/// Whether the top-level object `line` holds reads, as far as one pass
/// over its top-level members gets, as a reply: a `result` or an `error`
/// member and no `method` one.
fn is_reply(line: &[u8]) -> bool {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let mut at = skip_space(line, 0);
    if line.get(at) != Some(&b'{') {
        return false;
    }
    at += 1;
    let mut reply = false;
    loop {
        at = skip_space(line, at);
        if line.get(at) != Some(&b'"') {
            return reply;
        }
        let Some(key_end) = string_end(line, at) else {
            return reply;
        };
        match line.get(at..key_end) {
            Some(b"\"method\"") => return false,
            Some(b"\"result\"" | b"\"error\"") => reply = true,
            _ => {}
        }
        at = skip_space(line, key_end);
        if line.get(at) != Some(&b':') {
            return reply;
        }
        at = skip_space(line, at + 1);
        let Some(end) = value_end(line, at) else {
            return reply;
        };
        at = skip_space(line, end);
        if line.get(at) != Some(&b',') {
            return reply;
        }
        at += 1;
    }
}

/// The first byte at or after `at` that is not JSON whitespace.
fn skip_space(line: &[u8], at: usize) -> usize {
    line.get(at..)
        .and_then(|rest| {
            rest.iter()
                .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        })
        .map_or(line.len(), |skipped| at + skipped)
}

/// Just past the string that begins at `at` (a `"`), or `None` when the
/// line ends first.
fn string_end(line: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while let Some(&byte) = line.get(i) {
        match byte {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Just past the value that begins at `at`: a string, an object or array
/// (its brackets counted, strings skipped — no recursion, so any depth), or
/// a scalar up to the next delimiter.
fn value_end(line: &[u8], at: usize) -> Option<usize> {
    match line.get(at)? {
        b'"' => string_end(line, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while let Some(&byte) = line.get(i) {
                match byte {
                    b'"' => {
                        i = string_end(line, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let rest = line.get(at..)?;
            let length = rest
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))?;
            (length > 0).then_some(at + length)
        }
    }
}

/// The id at the start of `rest`, as JSON text: a string that reads as one
/// (its escapes valid), or a number followed by a delimiter, so that one
/// the line's end cut is not taken for another.
fn id_token(rest: &[u8]) -> Option<String> {
    match rest.first()? {
        b'"' => {
            let end = string_end(rest, 0)?;
            let token = rest.get(..end).filter(|t| t.len() <= MAX_ID_LENGTH)?;
            let text: String = serde_json::from_slice(token).ok()?;
            serde_json::to_string(&text).ok()
        }
        b'-' | b'0'..=b'9' => {
            let end = rest
                .iter()
                .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))?;
            let after = skip_space(rest, end);
            if !matches!(rest.get(after), Some(b',' | b'}')) {
                return None;
            }
            let token = rest.get(..end).filter(|t| t.len() <= MAX_ID_LENGTH)?;
            // Checked as a JSON number and echoed as the client wrote it: a
            // number too large for a float is still the client's id.
            is_json_number(token).then(|| String::from_utf8_lossy(token).into_owned())
        }
        _ => None,
    }
}

/// Whether `token` is a JSON number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
fn is_json_number(token: &[u8]) -> bool {
    let digits = |at: usize| {
        token.get(at..).map_or(0, |rest| {
            rest.iter().take_while(|b| b.is_ascii_digit()).count()
        })
    };
    let mut at = usize::from(token.first() == Some(&b'-'));
    match token.get(at) {
        Some(b'0') => at += 1,
        Some(b'1'..=b'9') => at += digits(at),
        _ => return false,
    }
    if token.get(at) == Some(&b'.') {
        let fraction = digits(at + 1);
        if fraction == 0 {
            return false;
        }
        at += 1 + fraction;
    }
    if matches!(token.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(token.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let exponent = digits(at);
        if exponent == 0 {
            return false;
        }
        at += exponent;
    }
    at == token.len()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test that fails says why")]

    use super::*;
    use tokio::io::AsyncReadExt as _;

    /// Every line of `input` through the transport: what it hands rmcp, and
    /// what it writes back, line by line.
    async fn through(input: Vec<u8>, max: usize) -> (Vec<ClientJsonRpcMessage>, Vec<Value>) {
        let (messages, written) = through_raw(input, max).await;
        let answers = written
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        (messages, answers)
    }

    /// What reached rmcp, and the answers' text as written.
    async fn through_raw(input: Vec<u8>, max: usize) -> (Vec<ClientJsonRpcMessage>, String) {
        let (mut client_out, server_out) = tokio::io::duplex(64 * 1024);
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt as _;
            client_out.write_all(&input).await.unwrap();
        });
        let (server_in, mut client_in) = tokio::io::duplex(64 * 1024);
        let mut transport = StdioTransport::new(server_out, server_in).with_max_line_length(max);
        let mut messages = Vec::new();
        while let Some(message) = transport.receive().await {
            messages.push(message);
        }
        writer.await.unwrap();
        drop(transport);
        let mut written = String::new();
        client_in.read_to_string(&mut written).await.unwrap();
        (messages, written)
    }

    #[tokio::test]
    async fn an_id_no_64_bit_integer_holds_is_echoed_as_written_and_said_why() {
        let mut input = Vec::new();
        for id in [
            "18446744073709551616",
            "123456789012345678901234567890",
            "1.5",
        ] {
            input.extend_from_slice(
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).as_bytes(),
            );
            input.push(b'\n');
        }
        let (messages, written) = through_raw(input, MAX_LINE_LENGTH).await;
        assert!(messages.is_empty(), "{messages:?}");
        let lines: Vec<&str> = written.lines().collect();
        assert_eq!(lines.len(), 3, "{written}");
        for (line, id) in lines.iter().zip([
            "18446744073709551616",
            "123456789012345678901234567890",
            "1.5",
        ]) {
            assert!(line.contains(&format!(r#""id":{id},"#)), "{line}");
            assert!(line.contains("-32600"), "{line}");
            assert!(line.contains("outside the 64-bit integers"), "{line}");
        }
    }

    fn nested(depth: usize) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}{}}}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        )
    }

    #[tokio::test]
    async fn each_line_that_does_not_read_is_answered_with_its_id_when_it_can_be_found() {
        let mut input = Vec::new();
        for line in [
            nested(200).into_bytes(),
            br#"{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":{"name":"x","arguments":{"t":"\ud800"}}}"#.to_vec(),
            b"{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\xfe\"}}".to_vec(),
            br#"{"jsonrpc":"2.0","id":14,"method":"tools/li"#.to_vec(),
            br#"[{"jsonrpc":"2.0","id":15,"method":"ping"}]"#.to_vec(),
            br#"{"jsonrpc":"2.0","id":16,"method":7}"#.to_vec(),
            br#"{"jsonrpc":"2.0","method":"notifications/odd","params":7}"#.to_vec(),
            b"   ".to_vec(),
            br#"{"jsonrpc":"2.0","id":17,"method":"ping"}"#.to_vec(),
        ] {
            input.extend_from_slice(&line);
            input.push(b'\n');
        }
        let (messages, answers) = through(input, MAX_LINE_LENGTH).await;
        assert_eq!(messages.len(), 1, "only the ping reaches rmcp");
        let codes: Vec<(i64, Value)> = answers
            .iter()
            .map(|a| (a["error"]["code"].as_i64().unwrap(), a["id"].clone()))
            .collect();
        assert_eq!(
            codes,
            [
                (-32700, Value::from(11)),
                (-32700, Value::from("s-1")),
                (-32700, Value::from(13)),
                (-32700, Value::from(14)),
                (-32600, Value::Null),
                (-32600, Value::from(16)),
            ]
        );
    }

    #[tokio::test]
    async fn a_line_past_the_bound_is_answered_and_the_next_one_read() {
        let mut input = br#"{"jsonrpc":"2.0","id":21,"method":"ping","params":{"pad":""#.to_vec();
        input.extend(std::iter::repeat_n(b'x', 5000));
        input.extend_from_slice(b"\"}}\n{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"ping\"}\n");
        let (messages, answers) = through(input, 1000).await;
        assert_eq!(messages.len(), 1);
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0]["error"]["code"], -32700);
        assert_eq!(answers[0]["id"], 21);
    }

    #[tokio::test]
    async fn a_last_line_without_its_newline_is_read() {
        let (messages, answers) =
            through(br#"{"jsonrpc":"2.0","id":3,"method""#.to_vec(), 100).await;
        assert!(messages.is_empty());
        assert_eq!(answers[0]["id"], 3);
    }

    #[test]
    fn a_reply_that_does_not_read_is_not_answered() {
        let reply = br#"{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"reason":"\ud800"}}}"#;
        assert!(is_reply(reply));
        assert!(matches!(judge(reply), Heard::Nothing));
        let cut = br#"{"jsonrpc":"2.0","id":3,"error":{"code":1"#;
        assert!(matches!(judge(cut), Heard::Nothing));
        let request = br#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"\ud800"#;
        assert!(!is_reply(request));
        assert!(matches!(judge(request), Heard::Answer(_)));
    }

    /// A socket — how Node starts a child's standard streams — is driven
    /// on the reactor: a line written at one end is read at the other, and
    /// an answer comes back, both ways through the copies.
    #[tokio::test]
    async fn a_socket_is_read_and_written_on_the_reactor() {
        use std::io::{BufRead as _, Write as _};
        use std::os::fd::AsFd as _;
        let (client, server) = std::os::unix::net::UnixStream::pair().unwrap();
        let read = socket(server.as_fd()).unwrap();
        let write = socket(server.as_fd()).unwrap();
        let mut transport = StdioTransport::new(
            Input(InputKind::Socket(read)),
            Output(OutputKind::Socket(write)),
        );
        let mut client_write = client.try_clone().unwrap();
        let reader = std::thread::spawn(move || {
            client_write
                .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\nnot json\n")
                .unwrap();
            let mut line = String::new();
            io::BufReader::new(client).read_line(&mut line).unwrap();
            line
        });
        assert!(matches!(
            transport.receive().await,
            Some(ClientJsonRpcMessage::Request(_))
        ));
        // The line that is not JSON is answered; the client, answered,
        // closes its end.
        assert!(transport.receive().await.is_none());
        let answer: Value = serde_json::from_str(&reader.join().unwrap()).unwrap();
        assert_eq!(answer["error"]["code"], -32700);
    }

    #[test]
    fn what_is_not_a_socket_is_left_to_the_other_handles() {
        use std::os::fd::AsFd as _;
        let (read, _write) = io::pipe().unwrap();
        assert!(socket(read.as_fd()).is_none());
    }

    /// A pipe opened again through `/proc/self/fd` is one the reactor
    /// drives, and the descriptor it came from keeps blocking.
    #[tokio::test]
    async fn a_pipe_is_opened_again_through_proc() {
        use std::io::Write as _;
        use std::os::fd::AsRawFd as _;
        let (read, mut write) = io::pipe().unwrap();
        let mut receiver = tokio::net::unix::pipe::OpenOptions::new()
            .open_receiver(format!("/proc/self/fd/{}", read.as_raw_fd()))
            .unwrap();
        write.write_all(b"line\n").unwrap();
        let mut got = [0u8; 5];
        tokio::io::AsyncReadExt::read_exact(&mut receiver, &mut got)
            .await
            .unwrap();
        assert_eq!(&got, b"line\n");
    }

    #[test]
    fn the_id_is_found_at_the_top_level_only() {
        let id = |line: &str| recover_id(line.as_bytes());
        assert_eq!(id(r#"{"id":7}"#).as_deref(), Some("7"));
        assert_eq!(
            id(r#" { "a" : {"id": 1, "b": "\"}"}, "id" : "x\"y" , "#).as_deref(),
            Some(r#""x\"y""#)
        );
        assert_eq!(
            id(r#"{"params":[[{"id":1}]],"id":-2.5e3}"#).as_deref(),
            Some("-2.5e3")
        );
        assert_eq!(
            id("{\"id\":123456789012345678901234567890}").as_deref(),
            Some("123456789012345678901234567890")
        );
        // Cut where the number may go on; of another kind; not an object.
        assert_eq!(id(r#"{"id":12"#), None);
        assert_eq!(id(r#"{"id":null}"#), None);
        assert_eq!(id(r#"{"id":01}"#), None);
        assert_eq!(id(r#"{"id":"\ud800"}"#), None);
        assert_eq!(id(r#"[{"id":1}]"#), None);
        assert_eq!(id(r#"{"a":{"id":1}"#), None);
        assert_eq!(id(&format!(r#"{{"id":"{}"}}"#, "x".repeat(2000))), None);
    }
}
