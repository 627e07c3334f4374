//! The handler: every request is read whole, checked, logged, and answered
//! from the script.

use std::{collections::BTreeMap, pin::Pin, sync::Arc};

use axum::{
    Router,
    body::{Body, HttpBody},
    extract::{ConnectInfo, Request, State},
    http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::{
    anthropic,
    check::Problem,
    conn::Peer,
    log::{Answered, Entry, RequestLog},
    openai,
    script::{Action, Script, Step},
};

/// The largest request body read: larger ones are answered 413.
pub(crate) const BODY_LIMIT: usize = 16 * 1024 * 1024;

/// The wire protocol a request came on, told by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// OpenAI Chat Completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl Protocol {
    /// The protocol of a path, if it is one the server speaks.
    fn of_path(path: &str) -> Option<Self> {
        match path {
            "/v1/chat/completions" | "/chat/completions" | "/openai/v1/chat/completions" => {
                Some(Self::OpenAi)
            }
            "/v1/messages" => Some(Self::Anthropic),
            _ => None,
        }
    }

    /// The name the log and the script use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    /// A non-validation error in this protocol's shape (`kind` is Anthropic's type).
    fn error(self, message: &str, kind: &str) -> Value {
        match self {
            Self::OpenAi => {
                let kind = if kind == "api_error" {
                    "server_error"
                } else {
                    "invalid_request_error"
                };
                openai::error_body(message, kind, None, None)
            }
            Self::Anthropic => anthropic::error_body(kind, message),
        }
    }
}

/// What the server was started with.
#[derive(Debug)]
pub(crate) struct Config {
    /// The key requests must carry, if any.
    pub(crate) key: Option<String>,
    /// The models that exist; empty means any.
    pub(crate) models: Vec<String>,
}

/// What requests change.
#[derive(Debug)]
struct Served {
    script: Script,
    log: RequestLog,
    received: u64,
}

/// The server's state.
#[derive(Debug)]
pub(crate) struct App {
    config: Config,
    served: Mutex<Served>,
}

impl App {
    /// A server answering from `script` and logging to `log`.
    pub(crate) fn new(config: Config, script: Script, log: RequestLog) -> Self {
        Self {
            config,
            served: Mutex::new(Served {
                script,
                log,
                received: 0,
            }),
        }
    }
}

/// The router: every path goes to the one handler, which tells them apart.
pub(crate) fn router(app: Arc<App>) -> Router {
    Router::new().fallback(handle).with_state(app)
}

/// An answer to send.
#[derive(Debug)]
struct Sending {
    status: StatusCode,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Vec<u8>,
    /// Whether to write only the first half of the body, then close the connection.
    truncate: bool,
}

impl Sending {
    /// A JSON answer.
    fn json(status: StatusCode, body: &Value) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.to_string().into_bytes(),
            truncate: false,
        }
    }
}

/// What to do once the request is logged.
#[derive(Debug)]
enum Reply {
    /// Answer.
    Send(Sending),
    /// Wait, then answer.
    Hang {
        duration: std::time::Duration,
        then: Sending,
    },
    /// Close the connection without an answer.
    Reset,
    /// Answer with server-sent events, written one by one.
    Stream {
        status: StatusCode,
        headers: Vec<(HeaderName, HeaderValue)>,
        writes: Vec<Vec<u8>>,
        /// Whether the connection is cut after the writes.
        cut: bool,
        /// The pause before each write.
        gap: std::time::Duration,
    },
}

impl Reply {
    /// A JSON answer.
    fn json(status: StatusCode, body: &Value) -> Self {
        Self::Send(Sending::json(status, body))
    }

    fn answered(&self) -> Answered {
        match self {
            Self::Send(sending) => Answered::Status(sending.status.as_u16()),
            Self::Stream { status, .. } => Answered::Status(status.as_u16()),
            Self::Hang { .. } => Answered::Hang,
            Self::Reset => Answered::Reset,
        }
    }
}

/// A decision about a request: the reply, and what the log says about it.
#[derive(Debug)]
struct Decision {
    reply: Reply,
    problems: Vec<String>,
    step: Option<usize>,
}

impl Decision {
    fn reply(reply: Reply) -> Self {
        Self {
            reply,
            problems: Vec::new(),
            step: None,
        }
    }

    fn with_problems(reply: Reply, problems: &[Problem]) -> Self {
        Self {
            reply,
            problems: problems.iter().map(Problem::render).collect(),
            step: None,
        }
    }
}

/// Why a body could not be read.
#[derive(Debug)]
enum BodyError {
    TooLarge,
    Read(String),
}

/// The request body, whole, up to [`BODY_LIMIT`].
async fn read_body(headers: &HeaderMap, mut body: Body) -> Result<Vec<u8>, BodyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > BODY_LIMIT as u64) {
        return Err(BodyError::TooLarge);
    }
    let mut bytes = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame.map_err(|error| BodyError::Read(error.to_string()))?;
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > BODY_LIMIT {
                return Err(BodyError::TooLarge);
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(bytes)
}

/// The headers as the log shows them: names lowercased, repeats joined.
fn header_record(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut record: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        record
            .entry(name.as_str().to_owned())
            .and_modify(|seen| {
                seen.push_str(", ");
                seen.push_str(&value);
            })
            .or_insert(value);
    }
    record
}

/// Reads the request, decides, logs, then answers.
async fn handle(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    let protocol = Protocol::of_path(&path);
    let read = read_body(&parts.headers, body).await;
    let raw_len = read.as_ref().map_or(0, Vec::len);
    let parsed = read
        .as_ref()
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok());
    let request = Incoming {
        method: &parts.method,
        path: &path,
        headers: &parts.headers,
        body: read,
        parsed: parsed.as_ref(),
    };
    let reply = {
        let mut served = app.served.lock().await;
        let n = served.received;
        served.received += 1;
        let decision = decide(&app.config, &mut served.script, protocol, &request);
        let headers = header_record(&parts.headers);
        let entry = Entry {
            n,
            method: parts.method.as_str(),
            path: &path,
            protocol: protocol.map_or("other", Protocol::name),
            headers: &headers,
            body: parsed.as_ref(),
            raw_len,
            problems: &decision.problems,
            step: decision.step,
            answered: decision.reply.answered(),
        };
        if let Err(error) = served.log.write(&entry) {
            eprintln!("toolgate-model-test-server: cannot write the request log: {error}");
        }
        for problem in &decision.problems {
            eprintln!(
                "toolgate-model-test-server: request {n} ({} {path}): {problem}",
                parts.method
            );
        }
        decision.reply
    };
    answer(reply, &peer).await
}

/// A request, read.
struct Incoming<'a> {
    method: &'a Method,
    path: &'a str,
    headers: &'a HeaderMap,
    body: Result<Vec<u8>, BodyError>,
    parsed: Option<&'a Value>,
}

/// The answer to a request: checks first, then the script's next step.
fn decide(
    config: &Config,
    script: &mut Script,
    protocol: Option<Protocol>,
    request: &Incoming<'_>,
) -> Decision {
    let Some(protocol) = protocol else {
        let message = format!("Invalid URL ({} {})", request.method, request.path);
        return Decision::reply(Reply::json(
            StatusCode::NOT_FOUND,
            &openai::error_body(&message, "invalid_request_error", None, None),
        ));
    };
    if request.method != Method::POST {
        let message = format!(
            "{} is not allowed on {}: use POST",
            request.method, request.path
        );
        let body = protocol.error(&message, "invalid_request_error");
        return Decision::reply(Reply::json(StatusCode::METHOD_NOT_ALLOWED, &body));
    }
    match &request.body {
        Err(BodyError::TooLarge) => {
            let message =
                format!("Request exceeds the maximum allowed number of bytes ({BODY_LIMIT}).");
            let body = protocol.error(&message, "request_too_large");
            return Decision::reply(Reply::json(StatusCode::PAYLOAD_TOO_LARGE, &body));
        }
        Err(BodyError::Read(error)) => {
            let body = protocol.error(
                &format!("cannot read the body: {error}"),
                "invalid_request_error",
            );
            return Decision::reply(Reply::json(StatusCode::BAD_REQUEST, &body));
        }
        Ok(_) => {}
    }
    if let Some(reply) = check_key(config, protocol, request.headers) {
        return Decision::reply(reply);
    }
    let mut problems = content_type_problems(request.headers);
    let Some(body) = request.parsed else {
        let error = match &request.body {
            Ok(bytes) => serde_json::from_slice::<Value>(bytes)
                .err()
                .map(|error| error.to_string()),
            Err(_) => None,
        };
        problems.push(Problem {
            path: "body".to_owned(),
            message: format!("not valid JSON: {}", error.unwrap_or_default()),
        });
        return Decision::with_problems(invalid(protocol, &problems), &problems);
    };
    if let Some(reply) = check_model(config, protocol, body) {
        return Decision::reply(reply);
    }
    problems.extend(match protocol {
        Protocol::OpenAi => openai::validate(body),
        Protocol::Anthropic => {
            let version = request
                .headers
                .get("anthropic-version")
                .map(|value| value.to_str().unwrap_or("(not text)"));
            anthropic::validate(version, body)
        }
    });
    if !problems.is_empty() {
        return Decision::with_problems(invalid(protocol, &problems), &problems);
    }
    next_step(script, protocol, body)
}

/// The 400 for a request with problems.
fn invalid(protocol: Protocol, problems: &[Problem]) -> Reply {
    let body = match protocol {
        Protocol::OpenAi => openai::invalid_request(problems),
        Protocol::Anthropic => anthropic::invalid_request(problems),
    };
    Reply::json(StatusCode::BAD_REQUEST, &body)
}

/// A problem unless the request says its body is JSON.
fn content_type_problems(headers: &HeaderMap) -> Vec<Problem> {
    let content_type = headers.get(header::CONTENT_TYPE).map(|value| {
        String::from_utf8_lossy(value.as_bytes())
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    });
    let message = match content_type.as_deref() {
        Some("application/json") => return Vec::new(),
        Some(other) => format!("must be application/json (got `{other}`)"),
        None => "required: application/json".to_owned(),
    };
    vec![Problem {
        path: "header content-type".to_owned(),
        message,
    }]
}

/// The 401, unless the request carries the expected key the protocol's way.
fn check_key(config: &Config, protocol: Protocol, headers: &HeaderMap) -> Option<Reply> {
    let expected = config.key.as_deref()?;
    let sent = match protocol {
        Protocol::OpenAi => headers.get(header::AUTHORIZATION).map(|value| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            value
                .strip_prefix("Bearer ")
                .map_or(value.clone(), str::to_owned)
        }),
        Protocol::Anthropic => headers
            .get("x-api-key")
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned()),
    };
    if sent.as_deref() == Some(expected) {
        return None;
    }
    let body = match protocol {
        Protocol::OpenAi => openai::invalid_key(sent.as_deref()),
        Protocol::Anthropic => anthropic::invalid_key(sent.as_deref()),
    };
    Some(Reply::json(StatusCode::UNAUTHORIZED, &body))
}

/// The 404, when models were named and the request names another.
fn check_model(config: &Config, protocol: Protocol, body: &Value) -> Option<Reply> {
    if config.models.is_empty() {
        return None;
    }
    let model = body.get("model")?.as_str()?;
    if config.models.iter().any(|known| known == model) {
        return None;
    }
    let body = match protocol {
        Protocol::OpenAi => openai::model_not_found(model),
        Protocol::Anthropic => anthropic::model_not_found(model),
    };
    Some(Reply::json(StatusCode::NOT_FOUND, &body))
}

/// The script's next step, for a request that passed every check.
fn next_step(script: &mut Script, protocol: Protocol, request: &Value) -> Decision {
    let Some((index, step)) = script.take() else {
        let message = format!(
            "script exhausted: all {} steps were used before this request",
            script.len()
        );
        let body = protocol.error(&message, "api_error");
        return Decision::reply(Reply::json(StatusCode::INTERNAL_SERVER_ERROR, &body));
    };
    let Step {
        action,
        headers,
        expect,
        stream,
    } = step;
    if let Some(expected) = expect.filter(|expected| *expected != protocol) {
        let message = format!(
            "script step {index} expects the {} protocol, but the request came on the {} path",
            expected.name(),
            protocol.name()
        );
        let body = protocol.error(&message, "invalid_request_error");
        return Decision {
            reply: Reply::json(StatusCode::BAD_REQUEST, &body),
            problems: vec![format!("protocol: {message}")],
            step: Some(index),
        };
    }
    let streams = request.get("stream") == Some(&Value::Bool(true));
    let reply = match action {
        Action::Send {
            status,
            body,
            truncate: false,
        } if streams && status.is_success() && !stream.whole => {
            let events = match serde_json::from_slice::<Value>(&body) {
                Ok(answer) => match protocol {
                    Protocol::OpenAi => {
                        let usage = request.pointer("/stream_options/include_usage")
                            == Some(&Value::Bool(true));
                        crate::stream::openai_events(&answer, &stream, usage)
                    }
                    Protocol::Anthropic => crate::stream::anthropic_events(&answer, &stream),
                },
                // A raw step: its text is the stream.
                Err(_) => vec![body],
            };
            let (writes, cut) = crate::stream::writes(events, &stream);
            Reply::Stream {
                status,
                headers,
                writes,
                cut,
                gap: stream.gap,
            }
        }
        Action::Send {
            status,
            body,
            truncate,
        } => Reply::Send(Sending {
            status,
            headers,
            body,
            truncate,
        }),
        Action::Hang(duration) => {
            let message = format!("script step {index} hung for {} ms", duration.as_millis());
            let body = protocol.error(&message, "api_error");
            let then = Sending {
                headers,
                ..Sending::json(StatusCode::INTERNAL_SERVER_ERROR, &body)
            };
            Reply::Hang { duration, then }
        }
        Action::Reset => Reply::Reset,
    };
    Decision {
        reply,
        problems: Vec::new(),
        step: Some(index),
    }
}

/// Carries the reply out on the connection.
async fn answer(reply: Reply, peer: &Peer) -> Response {
    match reply {
        Reply::Send(sending) => send(sending, peer),
        Reply::Stream {
            status,
            headers,
            writes,
            cut,
            gap,
        } => send_stream(status, headers, writes, cut, gap),
        Reply::Hang { duration, then } => {
            tokio::time::sleep(duration).await;
            send(then, peer)
        }
        Reply::Reset => {
            peer.control.reset();
            eprintln!(
                "toolgate-model-test-server: closing the connection from {} without an answer",
                peer.addr
            );
            // Never written: the connection breaks instead.
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The response for an answer; a truncated one also arms the connection to cut it.
fn send(sending: Sending, peer: &Peer) -> Response {
    let Sending {
        status,
        headers,
        body,
        truncate,
    } = sending;
    if truncate {
        peer.control.truncate_body(body.len() / 2);
    }
    let mut response = (status, body).into_response();
    let map = response.headers_mut();
    map.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    for (name, value) in headers {
        if name == header::CONTENT_TYPE {
            map.insert(name, value);
        } else {
            map.append(name, value);
        }
    }
    response
}

/// A streamed answer: each write after its pause, then — for a cut stream —
/// an error that makes the connection close without the body's end.
fn send_stream(
    status: StatusCode,
    headers: Vec<(HeaderName, HeaderValue)>,
    writes: Vec<Vec<u8>>,
    cut: bool,
    gap: std::time::Duration,
) -> Response {
    let state = (writes.into_iter(), cut);
    let body = futures_util::stream::unfold(state, move |(mut writes, cut)| async move {
        match writes.next() {
            Some(write) => {
                if !gap.is_zero() {
                    tokio::time::sleep(gap).await;
                }
                Some((Ok(write), (writes, cut)))
            }
            None if cut => {
                // Pending for a moment first, so what was written is
                // flushed before the connection breaks.
                tokio::time::sleep(std::time::Duration::from_millis(30)).await;
                Some((
                    Err(std::io::Error::other("the script cuts the stream here")),
                    (writes, false),
                ))
            }
            None => None,
        }
    });
    let mut response = (status, Body::from_stream(body)).into_response();
    let map = response.headers_mut();
    map.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    map.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    for (name, value) in headers {
        if name == header::CONTENT_TYPE {
            map.insert(name, value);
        } else {
            map.append(name, value);
        }
    }
    response
}
