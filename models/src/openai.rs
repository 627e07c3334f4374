//! OpenAI-compatible Chat Completions (`POST {base}/chat/completions`,
//! `tools` out, `tool_calls` back): OpenAI, Azure OpenAI, OpenRouter, Groq,
//! and the servers people run themselves — Ollama, vLLM, llama.cpp's
//! server, LM Studio.
//!
//! # The transcript, message by message
//!
//! | transcript | sent as |
//! |---|---|
//! | `System` | `{"role": "system", "content": …}` |
//! | `User` | `{"role": "user", "content": …}` |
//! | `Assistant` | `{"role": "assistant", "content": … or null, "tool_calls": [{"id", "type": "function", "function": {"name": wire name, "arguments": JSON text}}]}` |
//! | `Tool`, a result | `{"role": "tool", "tool_call_id": …, "content": the text}` |
//! | `Tool`, an error or a denial | the same, its content `Error: ` followed by the text |
//!
//! The protocol has no error flag on a tool message, so an error result —
//! a failed tool, a refused call, a person's denial — is told apart by the
//! `Error: ` its content starts with, and only an error result starts so
//! (a successful result that itself begins with `Error: ` is sent as
//! `Result: Error: …`).

use std::borrow::Cow;

use reqwest::header::{AUTHORIZATION, HeaderName};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolgate::run::{Arguments, Message, ProposedCall, Response, ToolSpec, Usage};

use crate::error::ProviderError;
use crate::http::{Answer, shown};
use crate::shared::{Common, endpoint, past_call_name};
use crate::{ApiKey, ToolChoice};

mod stream;

use stream::ChatStream;

const PROVIDER: &str = "the OpenAI-compatible server";
const PROTOCOL: &str = "Chat Completions";
const URL_HINT: &str =
    "the base URL is the part before `/chat/completions`, and usually ends in `/v1`";
/// What an error result's content starts with (see the module's table).
pub const ERROR_PREFIX: &str = "Error: ";
/// What a successful result that would look like an error starts with.
pub const RESULT_PREFIX: &str = "Result: ";

/// The body fields the client writes itself, each with what sets it:
/// [`OpenAi::body_field`] refuses them.
const OWNED_FIELDS: &[(&str, &str)] = &[
    ("model", "the model is given to `OpenAi::new`"),
    ("messages", "the messages are the run's transcript"),
    ("tools", "the tools are the run's offer"),
    ("functions", "the tools are sent as `tools`"),
    ("function_call", "use `.tool_choice(…)`"),
    ("tool_choice", "use `.tool_choice(…)`"),
    ("parallel_tool_calls", "use `.parallel_tool_calls(…)`"),
    ("stream", "use `.stream(…)`"),
    ("stream_options", "use `.stream(…)`, which asks for usage"),
    ("n", "the client reads one choice"),
    ("max_tokens", "use `.max_output_tokens(…)`"),
    ("max_completion_tokens", "use `.max_output_tokens(…)`"),
    ("temperature", "use `.temperature(…)`"),
    ("top_p", "use `.top_p(…)`"),
    ("stop", "use `.stop(…)`"),
];

/// The most stop sequences the API takes.
const MAX_STOPS: usize = 4;

/// Which field carries the output limit. OpenAI's newer models take only
/// `max_completion_tokens`; most other servers take `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenLimit {
    /// `max_completion_tokens`: OpenAI and Azure OpenAI.
    MaxCompletionTokens,
    /// `max_tokens`: Groq, OpenRouter, Ollama, vLLM, llama.cpp, LM Studio.
    MaxTokens,
}

/// What to do with a call that comes back without an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallIds {
    /// Give it one of the client's own (`call_{turn}_{index}`), as servers
    /// that never send ids need. The default.
    AssignMissing,
    /// Hand it on without: the run refuses the turn and tells the model.
    Required,
}

/// How the key is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHeader {
    /// `Authorization: Bearer KEY`: OpenAI and every compatible server.
    Bearer,
    /// `api-key: KEY`: Azure OpenAI's own keys.
    AzureApiKey,
}

/// A model behind an OpenAI-compatible Chat Completions endpoint.
///
/// ```no_run
/// use toolgate_models::{ApiKey, OpenAi};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // OpenAI itself.
/// let openai = OpenAi::new("https://api.openai.com/v1", "gpt-4.1-mini")?
///     .key(ApiKey::from_env("OPENAI_API_KEY")?);
/// // A local Ollama: no key.
/// let ollama = OpenAi::new("http://localhost:11434/v1", "qwen3:8b")?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAi {
    common: Common,
    url: url::Url,
    key: Option<ApiKey>,
    key_header: KeyHeader,
    token_limit: TokenLimit,
    call_ids: CallIds,
}

impl OpenAi {
    crate::shared::settings!();

    /// A client for `model` at `base_url` (the part before
    /// `/chat/completions`, usually ending in `/v1`). The output limit goes
    /// in `max_completion_tokens` for OpenAI and Azure hosts, in
    /// `max_tokens` elsewhere ([`OpenAi::token_limit`] changes it).
    pub fn new(base_url: &str, model: impl Into<String>) -> Result<Self, ProviderError> {
        let url = endpoint(PROVIDER, base_url, "chat/completions")?;
        Self::at(url, model.into())
    }

    /// A client that posts to exactly `url` — an Azure deployment's
    /// `…/chat/completions?api-version=…`, say.
    pub fn at_url(url: &str, model: impl Into<String>) -> Result<Self, ProviderError> {
        let parsed = url::Url::parse(url).map_err(|e| ProviderError::Setup {
            provider: PROVIDER,
            reason: format!("`{url}` is not a URL: {e}"),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ProviderError::Setup {
                provider: PROVIDER,
                reason: format!("`{url}` is not an http or https URL"),
            });
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(ProviderError::Setup {
                provider: PROVIDER,
                reason: "the URL holds a user name or password; give the key with `.key(…)`, which is never shown".to_owned(),
            });
        }
        Self::at(parsed, model.into())
    }

    fn at(url: url::Url, model: String) -> Result<Self, ProviderError> {
        let host = url.host_str().unwrap_or_default();
        let token_limit = if host == "api.openai.com" || host.ends_with(".openai.azure.com") {
            TokenLimit::MaxCompletionTokens
        } else {
            TokenLimit::MaxTokens
        };
        Ok(Self {
            common: Common::new(PROVIDER, PROTOCOL, URL_HINT, model)?,
            url,
            key: None,
            key_header: KeyHeader::Bearer,
            token_limit,
            call_ids: CallIds::AssignMissing,
        })
    }

    /// How the key is sent. Default: [`KeyHeader::Bearer`].
    #[must_use]
    pub fn key_header(mut self, header: KeyHeader) -> Self {
        self.key_header = header;
        self
    }

    /// Which field carries the output limit.
    #[must_use]
    pub fn token_limit(mut self, field: TokenLimit) -> Self {
        self.token_limit = field;
        self
    }

    /// What to do with a call without an id. Default:
    /// [`CallIds::AssignMissing`].
    #[must_use]
    pub fn call_ids(mut self, ids: CallIds) -> Self {
        self.call_ids = ids;
        self
    }

    /// The request body for `transcript` and `tools`: the first half of a
    /// turn, for a host that sends it itself.
    pub fn request_body(
        &self,
        transcript: &[Message],
        tools: &[ToolSpec],
    ) -> Result<Vec<u8>, ProviderError> {
        crate::shared::something_to_send(PROVIDER, transcript)?;
        crate::shared::check_settings(&self.common)?;
        self.common.check_sampling(2.0, Some(MAX_STOPS), true)?;
        let tool_choice = self.choice_for(tools)?;
        let limit = Some(self.common.max_output_tokens);
        let (max_tokens, max_completion_tokens) = match self.token_limit {
            TokenLimit::MaxTokens => (limit, None),
            TokenLimit::MaxCompletionTokens => (None, limit),
        };
        // Every past call's arguments written once into one buffer, each
        // call's text a slice of it: the protocol carries them as text.
        let mut written = Vec::new();
        let mut spans = Vec::new();
        for call in transcript.iter().flat_map(|m| match m {
            Message::Assistant { calls, .. } => calls.as_slice(),
            _ => &[],
        }) {
            let start = written.len();
            serde_json::to_writer(&mut written, &call.arguments).map_err(unwritable)?;
            spans.push(start..written.len());
        }
        let written = String::from_utf8(written).map_err(unwritable)?;
        let mut spans = spans.into_iter();
        let mut ids = Ids::default();
        let request = ChatRequest {
            model: &self.common.model,
            messages: transcript
                .iter()
                .map(|m| message(m, tools, &written, &mut spans, &mut ids))
                .collect(),
            tools: tools.iter().map(ChatTool::from).collect(),
            tool_choice,
            parallel_tool_calls: self
                .common
                .parallel_tool_calls
                .filter(|_| !tools.is_empty()),
            max_tokens,
            max_completion_tokens,
            temperature: self.common.temperature,
            top_p: self.common.top_p,
            stop: &self.common.stop,
            stream: self.common.stream,
            stream_options: self.common.stream.then_some(StreamOptions {
                include_usage: true,
            }),
            extra: &self.common.extra,
        };
        serde_json::to_vec(&request).map_err(unwritable)
    }

    /// The `tool_choice` to send: none for the default, and none without
    /// tools (the API refuses `tool_choice` without `tools`); a choice that
    /// needs a tool the offer does not hold is refused before sending.
    fn choice_for(&self, tools: &[ToolSpec]) -> Result<Option<Value>, ProviderError> {
        let unsendable = |reason: String| ProviderError::Unsendable {
            provider: PROVIDER,
            reason,
        };
        Ok(match &self.common.tool_choice {
            ToolChoice::Auto => None,
            ToolChoice::None if tools.is_empty() => None,
            ToolChoice::None => Some(Value::from("none")),
            ToolChoice::Required if tools.is_empty() => {
                return Err(unsendable(
                    "the tool choice requires a call, and no tool is offered".to_owned(),
                ));
            }
            ToolChoice::Required => Some(Value::from("required")),
            ToolChoice::Tool(name) => {
                let spec = crate::shared::chosen_tool(tools, name).ok_or_else(|| {
                    unsendable(format!(
                        "the tool choice names `{name}`, which is not offered to this turn"
                    ))
                })?;
                Some(serde_json::json!({"type": "function", "function": {"name": spec.name}}))
            }
        })
    }

    /// The answer in `body` as the run takes it: the second half of a turn.
    /// `transcript_len` is the length of the transcript the request held:
    /// a call without an id is given `call_{transcript_len}_{index}` (under
    /// [`CallIds::AssignMissing`]), an id no other call of the turn has
    /// unless the model wrote that very id — which makes the turn unusable,
    /// two calls under one id.
    pub fn read_response(
        &self,
        body: &[u8],
        transcript_len: usize,
    ) -> Result<Response, ProviderError> {
        // Whatever the server wrote is repeated only as `shown` writes it.
        let key = self.key.as_ref();
        let malformed = |reason: String| ProviderError::Malformed {
            provider: PROVIDER,
            protocol: PROTOCOL,
            reason: shown(&reason, key),
            request_id: None,
        };
        let response: ChatResponse =
            serde_json::from_slice(body).map_err(|e| malformed(e.to_string()))?;
        self.interpret(response, transcript_len)
    }

    /// The answer in a whole event-stream body (`stream: true`), as the run
    /// takes it: for a host that sends the request itself. The same
    /// assembly [`OpenAi::complete`] reads a live stream with.
    pub fn read_stream(
        &self,
        body: &[u8],
        transcript_len: usize,
    ) -> Result<Response, ProviderError> {
        let assembled =
            crate::shared::assemble_body(body, ChatStream::default()).map_err(|reason| {
                ProviderError::Malformed {
                    provider: PROVIDER,
                    protocol: PROTOCOL,
                    reason: shown(&reason, self.key.as_ref()),
                    request_id: None,
                }
            })?;
        self.interpret(assembled.into_response(), transcript_len)
    }

    /// What an answer, read whole or assembled from events, comes to.
    fn interpret(
        &self,
        response: ChatResponse,
        transcript_len: usize,
    ) -> Result<Response, ProviderError> {
        let key = self.key.as_ref();
        let malformed = |reason: String| ProviderError::Malformed {
            provider: PROVIDER,
            protocol: PROTOCOL,
            reason: shown(&reason, key),
            request_id: None,
        };
        let choice = response
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| malformed("`choices` is empty".to_owned()))?;
        let message = choice
            .message
            .ok_or_else(|| malformed("the choice has no `message`".to_owned()))?;
        if message
            .function_call
            .as_ref()
            .is_some_and(|call| !call.is_null())
        {
            return Err(ProviderError::Unsupported {
                provider: PROVIDER,
                what: "a legacy `function_call`".to_owned(),
                fix: "this client offers tools as `tools` and reads `tool_calls`; use a server or model that answers with `tool_calls`",
                request_id: None,
            });
        }
        let content = text_of(message.content).or(message.refusal.filter(|r| !r.is_empty()));
        let calls: Vec<ProposedCall> = message
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(index, call)| self.proposed(call, transcript_len, index))
            .collect();
        match choice.finish_reason.as_deref() {
            // Cut at the output limit: a call may be incomplete, and a turn
            // is only ever taken whole.
            Some("length") => {
                return Err(ProviderError::OutputLimit {
                    provider: PROVIDER,
                    limit: self.common.max_output_tokens,
                    request_id: None,
                });
            }
            Some("tool_calls" | "function_call") if calls.is_empty() => {
                return Err(malformed(
                    "`finish_reason` says the model called tools, and the message holds no `tool_calls`: taking it as a final answer would end the run on nothing".to_owned(),
                ));
            }
            // Stopped by the filter: what came is not the whole answer.
            Some("content_filter") => {
                return Err(ProviderError::Declined {
                    provider: PROVIDER,
                    reason: "its content filter stopped the answer".to_owned(),
                    request_id: None,
                });
            }
            _ => {}
        }
        Ok(Response {
            content,
            calls,
            usage: response.usage.as_ref().map(usage_of),
        })
    }

    fn proposed(&self, call: RawToolCall, transcript_len: usize, index: usize) -> ProposedCall {
        let id = match (call.id.filter(|id| !id.is_empty()), self.call_ids) {
            (Some(id), _) => Some(id),
            (None, CallIds::AssignMissing) => Some(format!("call_{transcript_len}_{index}")),
            (None, CallIds::Required) => None,
        };
        let function = call.function.unwrap_or_default();
        let arguments = match function.arguments {
            None | Some(Value::Null) => Arguments::parse(""),
            Some(Value::String(text)) => Arguments::parse(&text),
            // Some servers send the arguments as an object, not as text.
            Some(value) => Arguments::Json(value),
        };
        ProposedCall {
            id,
            name: function.name.unwrap_or_default(),
            arguments,
        }
    }

    /// Sends the transcript and reads the answer, with this crate's error.
    pub async fn complete(
        &self,
        transcript: &[Message],
        tools: &[ToolSpec],
    ) -> Result<Response, ProviderError> {
        let body = self.request_body(transcript, tools)?;
        let header = match self.key_header {
            KeyHeader::Bearer => (AUTHORIZATION, "Bearer "),
            KeyHeader::AzureApiKey => (HeaderName::from_static("api-key"), ""),
        };
        if !self.common.stream {
            let delivered = self
                .common
                .post(&self.url, self.key.as_ref(), header, body)
                .await?;
            return self
                .read_response(&delivered.answer, transcript.len())
                .map_err(|e| e.with_request_id(delivered.request_id.as_deref()));
        }
        let delivered = self
            .common
            .post_streamed(
                &self.url,
                self.key.as_ref(),
                header,
                body,
                &ChatStream::default,
            )
            .await?;
        let id = delivered.request_id.as_deref();
        match delivered.answer {
            Answer::Whole(body) => self.read_response(&body, transcript.len()),
            Answer::Streamed(stream) => self.interpret(stream.into_response(), transcript.len()),
        }
        .map_err(|e| e.with_request_id(id))
    }
}

crate::shared::model!(OpenAi);

/// A tool result's text as sent (see the module's table).
pub fn tool_result_text(content: &str, is_error: bool) -> Cow<'_, str> {
    if is_error && content.trim().is_empty() {
        Cow::Owned(format!("{ERROR_PREFIX}{}", crate::shared::EMPTY_ERROR))
    } else if is_error {
        Cow::Owned(format!("{ERROR_PREFIX}{content}"))
    } else if content.starts_with(ERROR_PREFIX) {
        Cow::Owned(format!("{RESULT_PREFIX}{content}"))
    } else {
        Cow::Borrowed(content)
    }
}

fn unwritable(error: impl std::fmt::Display) -> ProviderError {
    ProviderError::Setup {
        provider: PROVIDER,
        reason: format!("the request cannot be written: {error}"),
    }
}

/// One message as the protocol writes it; `spans` gives, call by call in
/// transcript order, where each call's arguments are in `written`.
fn message<'a>(
    message: &'a Message,
    tools: &'a [ToolSpec],
    written: &'a str,
    spans: &mut impl Iterator<Item = std::ops::Range<usize>>,
    ids: &mut Ids<'a>,
) -> ChatMessage<'a> {
    if let Message::Assistant { calls, .. } = message {
        ids.turn(calls);
    }
    match message {
        Message::System { content } => ChatMessage::System { content },
        Message::User { content } => ChatMessage::User { content },
        Message::Assistant { content, calls, .. } => ChatMessage::Assistant {
            content: match (content.as_deref(), calls.is_empty()) {
                (None, true) => Some(""),
                (content, _) => content,
            },
            tool_calls: calls
                .iter()
                .map(|call| ChatToolCall {
                    id: ids.of(&call.id),
                    kind: "function",
                    function: FunctionCall {
                        name: past_call_name(tools, &call.name),
                        arguments: spans
                            .next()
                            .and_then(|span| written.get(span))
                            .unwrap_or("{}"),
                    },
                })
                .collect(),
        },
        Message::Tool {
            call_id,
            content,
            is_error,
            ..
        } => ChatMessage::Tool {
            tool_call_id: ids.of(call_id),
            content: tool_result_text(content, *is_error),
        },
    }
}

/// The ids a request sends: each call's [`fit_id`], made the request's only
/// one when an earlier call was sent under it (`_2`, `_3` … before fitting
/// again), and each result sent under its call's.
#[derive(Default)]
struct Ids<'a> {
    sent: std::collections::HashSet<Cow<'a, str>>,
    /// The latest turn's calls: the id asked, the id sent.
    turn: Vec<(&'a str, Cow<'a, str>)>,
}

impl<'a> Ids<'a> {
    fn turn(&mut self, calls: &'a [toolgate::run::ToolCall]) {
        self.turn.clear();
        for call in calls {
            let mut id = fit_id(&call.id);
            let mut n = 2_u32;
            while self.sent.contains(&id) && n < u32::MAX {
                id = Cow::Owned(fit_id(&format!("{}_{n}", call.id)).into_owned());
                n += 1;
            }
            self.sent.insert(id.clone());
            self.turn.push((&call.id, id));
        }
    }

    fn of(&self, asked: &'a str) -> Cow<'a, str> {
        self.turn
            .iter()
            .find(|(id, _)| *id == asked)
            .map_or_else(|| fit_id(asked), |(_, sent)| sent.clone())
    }
}

/// The longest call id OpenAI takes.
const MAX_ID_CHARS: usize = 40;

/// A call's id as sent: as it is when it fits; a longer one (a model or
/// server that writes long ids) as its first 23 characters, `_` and a hash
/// of the whole — 40 characters, two ids never one, a call and its result
/// rewritten alike.
fn fit_id(id: &str) -> Cow<'_, str> {
    if id.chars().count() <= MAX_ID_CHARS {
        return Cow::Borrowed(id);
    }
    let head: String = id.chars().take(MAX_ID_CHARS - 17).collect();
    let hash = xxhash_rust::xxh3::xxh3_64(id.as_bytes());
    Cow::Owned(format!("{head}_{hash:016x}"))
}

fn text_of(content: Option<Value>) -> Option<String> {
    let text = match content? {
        Value::String(text) => text,
        // Content parts, as some servers answer.
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ChatTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    /// The host's own fields ([`OpenAi::body_field`]), none of them one
    /// of the fields above.
    #[serde(flatten)]
    extra: &'a serde_json::Map<String, Value>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall<'a>>,
    },
    Tool {
        tool_call_id: Cow<'a, str>,
        content: Cow<'a, str>,
    },
}

#[derive(Serialize)]
struct ChatToolCall<'a> {
    id: Cow<'a, str>,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionCall<'a>,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    name: Cow<'a, str>,
    arguments: &'a str,
}

#[derive(Serialize)]
struct ChatTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionDefinition<'a>,
}

#[derive(Serialize)]
struct FunctionDefinition<'a> {
    name: &'a str,
    description: &'a str,
    parameters: Cow<'a, Value>,
}

impl<'a> From<&'a ToolSpec> for ChatTool<'a> {
    fn from(spec: &'a ToolSpec) -> Self {
        Self {
            kind: "function",
            function: FunctionDefinition {
                name: &spec.name,
                description: &spec.description,
                parameters: crate::shared::object_schema(&spec.parameters),
            },
        }
    }
}

#[derive(Deserialize)]
struct ChatResponse {
    #[serde(default)]
    choices: Vec<Choice>,
    /// Read loosely: a count that is not a whole number is left out, and
    /// never costs the answer.
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<ChoiceMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<RawToolCall>>,
    /// The legacy single call (`functions`), which this client never asks
    /// for: read only to refuse it by name.
    #[serde(default)]
    function_call: Option<Value>,
}

#[derive(Deserialize)]
struct RawToolCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<RawFunction>,
}

#[derive(Deserialize, Default)]
struct RawFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

/// The usage of an answer, from what of it is a count.
fn usage_of(usage: &Value) -> Usage {
    let count = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: count("/prompt_tokens"),
        cached_input_tokens: count("/prompt_tokens_details/cached_tokens"),
        // The API does not say what the prompt cache wrote.
        cache_write_input_tokens: 0,
        output_tokens: count("/completion_tokens"),
        reasoning_tokens: count("/completion_tokens_details/reasoning_tokens"),
    }
}
