//! Anthropic Messages (`POST {base}/v1/messages`, `tool_use` and
//! `tool_result` blocks).
//!
//! # The transcript, message by message
//!
//! | transcript | sent as |
//! |---|---|
//! | `System` (every one) | the top-level `system`, joined by blank lines |
//! | `User` | a `user` message with a `text` block |
//! | `Assistant` | an `assistant` message: a `text` block, then a `tool_use` block per call (`id`, wire `name`, `input`) |
//! | `Tool` | a `tool_result` block (`tool_use_id`, `content`, `is_error` when it failed, was refused or denied) in the `user` message after the calls |
//!
//! Messages of one role in a row are merged into one, as the protocol
//! requires; a turn's results come first in their `user` message.
//!
//! # Requests the API would refuse
//!
//! - A tool's schema goes out as an object schema with `properties`
//!   (`object_schema`, shared with the Chat Completions client).
//! - An error result that said nothing is sent with a text: the API refuses
//!   `is_error` without content.
//! - A history that holds calls, sent when no tool is offered any more,
//!   defines each tool a past call named — "no longer offered" — and sends
//!   `tool_choice: {"type": "none"}`: the API refuses `tool_use` blocks
//!   without `tools`, and the model may call none of them.
//! - A transcript with nothing to send (a blank prompt) is
//!   [`ProviderError::Unsendable`], and no request is made.
//!
//! # Extended thinking
//!
//! Refused: this client never asks for thinking, and an answer that holds
//! `thinking` or `redacted_thinking` blocks is an error
//! ([`ProviderError::Unsupported`]) rather than a turn whose signed blocks
//! would be lost — the protocol requires them sent back with the tool
//! results, and toolgate's transcript does not carry provider blocks.

use std::borrow::Cow;

use reqwest::header::{HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolgate::run::{Arguments, Message, ProposedCall, Response, ToolSpec, Usage};

use crate::error::ProviderError;
use crate::http::{Answer, shown};
use crate::shared::{Common, endpoint, past_call_name};
use crate::{ApiKey, ToolChoice};

mod stream;

use stream::MessagesStream;

const PROVIDER: &str = "Anthropic";
const PROTOCOL: &str = "Messages";
const URL_HINT: &str = "the base URL is the part before `/v1/messages`, without `/v1`";
/// The API version this client speaks.
pub const API_VERSION: &str = "2023-06-01";

/// The body fields the client writes itself, each with what sets it:
/// [`Anthropic::body_field`] refuses them.
const OWNED_FIELDS: &[(&str, &str)] = &[
    ("model", "the model is given to `Anthropic::new`"),
    ("messages", "the messages are the run's transcript"),
    (
        "system",
        "the system prompt is the transcript's system messages",
    ),
    ("tools", "the tools are the run's offer"),
    (
        "tool_choice",
        "use `.tool_choice(…)` and `.parallel_tool_calls(…)`",
    ),
    ("stream", "use `.stream(…)`"),
    ("max_tokens", "use `.max_output_tokens(…)`"),
    ("temperature", "use `.temperature(…)`"),
    ("top_p", "use `.top_p(…)`"),
    ("stop_sequences", "use `.stop(…)`"),
    (
        "thinking",
        "extended thinking is refused: its signed blocks must go back with each tool result, which the transcript does not carry",
    ),
];

/// A model behind the Anthropic Messages API.
///
/// ```no_run
/// use toolgate_models::{Anthropic, ApiKey};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let claude = Anthropic::new("claude-sonnet-4-5")?
///     .key(ApiKey::from_env("ANTHROPIC_API_KEY")?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Anthropic {
    common: Common,
    url: url::Url,
    key: Option<ApiKey>,
}

impl Anthropic {
    crate::shared::settings!();

    /// A client for `model` at `https://api.anthropic.com`.
    pub fn new(model: impl Into<String>) -> Result<Self, ProviderError> {
        Self::at("https://api.anthropic.com", model)
    }

    /// A client for `model` at another base URL (a proxy, a gateway): the
    /// part before `/v1/messages`.
    pub fn at(base_url: &str, model: impl Into<String>) -> Result<Self, ProviderError> {
        let url = endpoint(PROVIDER, base_url, "v1/messages")?;
        let mut common = Common::new(PROVIDER, PROTOCOL, URL_HINT, model.into())?;
        common.headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        Ok(Self {
            common,
            url,
            key: None,
        })
    }

    /// The request body for `transcript` and `tools`: the first half of a
    /// turn, for a host that sends it itself.
    pub fn request_body(
        &self,
        transcript: &[Message],
        tools: &[ToolSpec],
    ) -> Result<Vec<u8>, ProviderError> {
        let system: Vec<&str> = transcript
            .iter()
            .filter_map(|m| match m {
                Message::System { content } if !content.is_empty() => Some(content.as_str()),
                _ => None,
            })
            .collect();
        crate::shared::something_to_send(PROVIDER, transcript)?;
        crate::shared::check_settings(&self.common)?;
        let messages = messages(transcript, tools);
        if matches!(messages.last(), Some(turn) if turn.role == "assistant") {
            return Err(ProviderError::Unsendable {
                provider: PROVIDER,
                reason: "the transcript ends with the model's own answer, which the API would take as the start of its next one: there is nothing for it to answer".to_owned(),
            });
        }
        self.common.check_sampling(1.0, None, false)?;
        if self.common.temperature.is_some() && self.common.top_p.is_some() {
            return Err(ProviderError::Unsendable {
                provider: PROVIDER,
                reason: "both `temperature` and `top_p` are set, and Anthropic's current models take only one of them".to_owned(),
            });
        }
        let mut definitions: Vec<ToolDefinition<'_>> = tools
            .iter()
            .map(|spec| ToolDefinition {
                name: Cow::Borrowed(&spec.name),
                description: &spec.description,
                input_schema: crate::shared::object_schema(&spec.parameters),
            })
            .collect();
        let offered = !definitions.is_empty();
        let mut tool_choice = self.choice_for(tools)?;
        if !offered {
            for turn in &messages {
                for block in &turn.content {
                    if let Block::ToolUse { name, .. } = block
                        && !definitions.iter().any(|d| d.name == *name)
                    {
                        definitions.push(ToolDefinition {
                            name: name.clone(),
                            description: NO_LONGER_OFFERED,
                            input_schema: Cow::Owned(
                                serde_json::json!({"type": "object", "properties": {}}),
                            ),
                        });
                    }
                }
            }
            if !definitions.is_empty() {
                tool_choice = Some(serde_json::json!({"type": "none"}));
            }
        }
        let request = MessagesRequest {
            model: &self.common.model,
            max_tokens: self.common.max_output_tokens,
            system: (!system.is_empty()).then(|| system.join("\n\n")),
            messages,
            tools: definitions,
            tool_choice,
            temperature: self.common.temperature,
            top_p: self.common.top_p,
            stop_sequences: &self.common.stop,
            stream: self.common.stream,
            extra: &self.common.extra,
        };
        serde_json::to_vec(&request).map_err(|e| ProviderError::Setup {
            provider: PROVIDER,
            reason: format!("the request cannot be written: {e}"),
        })
    }

    /// The `tool_choice` the host set, for a request that offers `tools`:
    /// none for the default; `disable_parallel_tool_use` inside it when
    /// parallel calls were turned off. A choice that needs a tool the offer
    /// does not hold is refused before sending.
    fn choice_for(&self, tools: &[ToolSpec]) -> Result<Option<Value>, ProviderError> {
        let unsendable = |reason: String| ProviderError::Unsendable {
            provider: PROVIDER,
            reason,
        };
        let serial = self.common.parallel_tool_calls == Some(false);
        let mut choice = match &self.common.tool_choice {
            ToolChoice::Auto | ToolChoice::None if tools.is_empty() => return Ok(None),
            ToolChoice::Required if tools.is_empty() => {
                return Err(unsendable(
                    "the tool choice requires a call, and no tool is offered".to_owned(),
                ));
            }
            ToolChoice::Auto if !serial => return Ok(None),
            ToolChoice::None => return Ok(Some(serde_json::json!({"type": "none"}))),
            ToolChoice::Auto => serde_json::json!({"type": "auto"}),
            ToolChoice::Required => serde_json::json!({"type": "any"}),
            ToolChoice::Tool(name) => {
                let spec = crate::shared::chosen_tool(tools, name).ok_or_else(|| {
                    unsendable(format!(
                        "the tool choice names `{name}`, which is not offered to this turn"
                    ))
                })?;
                serde_json::json!({"type": "tool", "name": spec.name})
            }
        };
        if serial && let Some(object) = choice.as_object_mut() {
            object.insert("disable_parallel_tool_use".into(), Value::Bool(true));
        }
        Ok(Some(choice))
    }

    /// The answer in `body` as the run takes it: the second half of a turn.
    pub fn read_response(&self, body: &[u8]) -> Result<Response, ProviderError> {
        // Whatever the server wrote is repeated only as `shown` writes it.
        let key = self.key.as_ref();
        let malformed = |reason: String| ProviderError::Malformed {
            provider: PROVIDER,
            protocol: PROTOCOL,
            reason: shown(&reason, key),
            request_id: None,
        };
        let response: MessagesResponse =
            serde_json::from_slice(body).map_err(|e| malformed(e.to_string()))?;
        if response.kind.as_deref().is_some_and(|k| k != "message") {
            return Err(malformed(format!(
                "its `type` is `{}`, not `message`",
                response.kind.unwrap_or_default()
            )));
        }
        let blocks = response
            .content
            .into_iter()
            .map(ContentBlock::read)
            .collect::<Result<Vec<_>, _>>()
            .map_err(malformed)?;
        self.interpret(
            blocks,
            response.stop_reason.as_deref(),
            response.usage.as_ref(),
        )
    }

    /// The answer in a whole event-stream body (`stream: true`), as the run
    /// takes it: for a host that sends the request itself. The same
    /// assembly [`Anthropic::complete`] reads a live stream with.
    pub fn read_stream(&self, body: &[u8]) -> Result<Response, ProviderError> {
        let assembled =
            crate::shared::assemble_body(body, MessagesStream::default()).map_err(|reason| {
                ProviderError::Malformed {
                    provider: PROVIDER,
                    protocol: PROTOCOL,
                    reason: shown(&reason, self.key.as_ref()),
                    request_id: None,
                }
            })?;
        self.interpret_stream(assembled)
    }

    fn interpret_stream(&self, stream: MessagesStream) -> Result<Response, ProviderError> {
        let usage = Value::Object(stream.usage);
        self.interpret(stream.blocks, stream.stop_reason.as_deref(), Some(&usage))
    }

    /// What an answer, read whole or assembled from events, comes to.
    fn interpret(
        &self,
        blocks: Vec<ContentBlock>,
        stop_reason: Option<&str>,
        usage: Option<&Value>,
    ) -> Result<Response, ProviderError> {
        let key = self.key.as_ref();
        let mut text = Vec::new();
        let mut calls = Vec::new();
        for block in blocks {
            match block {
                ContentBlock::Text(part) => text.push(part),
                ContentBlock::ToolUse {
                    id,
                    name,
                    arguments,
                } => calls.push(ProposedCall {
                    id: id.filter(|id| !id.is_empty()),
                    name: name.unwrap_or_default(),
                    arguments,
                }),
                ContentBlock::Thinking => {
                    return Err(ProviderError::Unsupported {
                        provider: PROVIDER,
                        what: "extended-thinking blocks".to_owned(),
                        fix: "thinking must be sent back signed with each tool result; use the model without extended thinking",
                        request_id: None,
                    });
                }
                ContentBlock::Other(kind) => {
                    return Err(ProviderError::Unsupported {
                        provider: PROVIDER,
                        what: format!("a `{}` block", shown(&kind, key)),
                        fix: "only text and tool_use blocks are read; turn off the server tools or features that produce it",
                        request_id: None,
                    });
                }
            }
        }
        let content = if text.len() == 1 {
            text.pop()
        } else {
            Some(text.join("\n"))
        }
        .filter(|t| !t.is_empty());
        match stop_reason {
            // Cut at the output limit: the last call may be incomplete, and a
            // turn is only ever taken whole.
            Some("max_tokens") => {
                return Err(ProviderError::OutputLimit {
                    provider: PROVIDER,
                    limit: self.common.max_output_tokens,
                    request_id: None,
                });
            }
            Some("refusal") => {
                return Err(ProviderError::Declined {
                    provider: PROVIDER,
                    reason: content
                        .map_or_else(|| "the model refused".to_owned(), |text| shown(&text, key)),
                    request_id: None,
                });
            }
            Some("pause_turn") => {
                return Err(ProviderError::Unsupported {
                    provider: PROVIDER,
                    what: "a paused turn (`pause_turn`)".to_owned(),
                    fix: "it comes from server tools, which this client does not use",
                    request_id: None,
                });
            }
            _ => {}
        }
        Ok(Response {
            content,
            calls,
            usage: usage.map(usage_of),
        })
    }

    /// Sends the transcript and reads the answer, with this crate's error.
    pub async fn complete(
        &self,
        transcript: &[Message],
        tools: &[ToolSpec],
    ) -> Result<Response, ProviderError> {
        let body = self.request_body(transcript, tools)?;
        let header = (HeaderName::from_static("x-api-key"), "");
        if !self.common.stream {
            let delivered = self
                .common
                .post(&self.url, self.key.as_ref(), header, body)
                .await?;
            return self
                .read_response(&delivered.answer)
                .map_err(|e| e.with_request_id(delivered.request_id.as_deref()));
        }
        let delivered = self
            .common
            .post_streamed(
                &self.url,
                self.key.as_ref(),
                header,
                body,
                &MessagesStream::default,
            )
            .await?;
        let id = delivered.request_id.as_deref();
        match delivered.answer {
            Answer::Whole(body) => self.read_response(&body),
            Answer::Streamed(stream) => self.interpret_stream(stream),
        }
        .map_err(|e| e.with_request_id(id))
    }
}

crate::shared::model!(Anthropic);

/// An id as the protocol takes one (`^[a-zA-Z0-9_-]+$`): one that is
/// already (Anthropic's own, the run's) is sent as it is; any other has its
/// other characters written `_` and a hash of the whole id appended, so two
/// ids never become one, and a call and its result are rewritten alike.
fn id_safe(id: &str) -> Cow<'_, str> {
    let fits = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !id.is_empty() && id.chars().all(fits) {
        return Cow::Borrowed(id);
    }
    let safe: String = id
        .chars()
        .take(64)
        .map(|c| if fits(c) { c } else { '_' })
        .collect();
    let hash = xxhash_rust::xxh3::xxh3_64(id.as_bytes());
    Cow::Owned(format!("{safe}_{hash:016x}"))
}

/// The transcript as alternating messages, the first the user's: a blank
/// user message is sent as [`BLANK_MESSAGE`] (the API refuses empty text,
/// and leaving it out would leave the model's turn first or last); each
/// call id once in the request (a model that reuses an id in a later turn
/// has it sent as [`unique_id`] writes it, its results alike).
fn messages<'a>(transcript: &'a [Message], tools: &'a [ToolSpec]) -> Vec<Turn<'a>> {
    let mut turns: Vec<Turn<'a>> = Vec::new();
    // The ids sent so far, and what the latest turn's calls are sent as.
    let mut sent: std::collections::HashSet<Cow<'a, str>> = std::collections::HashSet::new();
    let mut current: Vec<(&'a str, Cow<'a, str>)> = Vec::new();
    for message in transcript {
        let (role, blocks) = match message {
            Message::System { .. } => continue,
            Message::User { content } if content.trim().is_empty() => (
                "user",
                vec![Block::Text {
                    text: BLANK_MESSAGE,
                }],
            ),
            Message::User { content } => ("user", text_block(content)),
            Message::Assistant { content, calls, .. } => {
                let mut blocks = content.as_deref().map(text_block).unwrap_or_default();
                current.clear();
                for call in calls {
                    let id = unique_id(&call.id, &sent);
                    sent.insert(id.clone());
                    current.push((&call.id, id.clone()));
                    blocks.push(Block::ToolUse {
                        id,
                        name: past_call_name(tools, &call.name),
                        input: &call.arguments,
                    });
                }
                ("assistant", blocks)
            }
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => (
                "user",
                vec![Block::ToolResult {
                    tool_use_id: current
                        .iter()
                        .find(|(asked, _)| asked == call_id)
                        .map_or_else(|| id_safe(call_id), |(_, sent)| sent.clone()),
                    content: result_text(content, *is_error),
                    is_error: *is_error,
                }],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => turns.push(Turn {
                role,
                content: blocks,
            }),
        }
    }
    turns
}

/// What a blank user message is sent as.
const BLANK_MESSAGE: &str = "(an empty message)";

/// A call's id as sent: [`id_safe`], and — when an earlier turn's call was
/// sent under it — with `_` and a number that makes it the request's only
/// one.
fn unique_id<'a>(id: &'a str, sent: &std::collections::HashSet<Cow<'a, str>>) -> Cow<'a, str> {
    let safe = id_safe(id);
    if !sent.contains(&safe) {
        return safe;
    }
    (2..=u32::MAX)
        .map(|n| Cow::Owned(format!("{safe}_{n}")))
        .find(|candidate| !sent.contains(candidate))
        .unwrap_or(safe)
}

/// What a `tool_result` block says: its text, or none for a result that
/// said nothing — except an error, which must say something (Anthropic
/// refuses an error result with no content).
fn result_text(content: &str, is_error: bool) -> Option<&str> {
    if !content.trim().is_empty() {
        Some(content)
    } else if is_error {
        Some(crate::shared::EMPTY_ERROR)
    } else {
        None
    }
}

/// The tool a past call named, defined for a request that offers no tool:
/// Anthropic refuses a request whose history holds `tool_use` or
/// `tool_result` blocks and that defines no tools. Sent with
/// `tool_choice: none`, so the model may read its past calls and make no new
/// one.
const NO_LONGER_OFFERED: &str = "No longer offered to this run: do not call it.";

fn text_block(text: &str) -> Vec<Block<'_>> {
    if text.trim().is_empty() {
        Vec::new()
    } else {
        vec![Block::Text { text }]
    }
}

#[derive(Serialize)]
struct MessagesRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolDefinition<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    /// The host's own fields ([`Anthropic::body_field`]), none of them one
    /// of the fields above.
    #[serde(flatten)]
    extra: &'a serde_json::Map<String, Value>,
}

#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: Cow<'a, str>,
        name: Cow<'a, str>,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

#[derive(Serialize)]
struct ToolDefinition<'a> {
    name: Cow<'a, str>,
    description: &'a str,
    input_schema: Cow<'a, Value>,
}

#[derive(Deserialize)]
struct MessagesResponse {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    /// Read loosely: a count that is not a whole number is left out, and
    /// never costs the answer.
    #[serde(default)]
    usage: Option<Value>,
}

/// A content block of an answer, read by its `type`.
enum ContentBlock {
    Text(String),
    ToolUse {
        id: Option<String>,
        name: Option<String>,
        arguments: Arguments,
    },
    Thinking,
    Other(String),
}

fn into_string(value: Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text),
        _ => None,
    }
}

impl ContentBlock {
    fn read(mut block: Value) -> Result<Self, String> {
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .ok_or("a content block has no `type`")?
            .to_owned();
        let mut take = |field: &str| block.get_mut(field).map(Value::take);
        Ok(match kind.as_str() {
            "text" => match take("text") {
                Some(Value::String(text)) => ContentBlock::Text(text),
                _ => return Err("a `text` block has no text".to_owned()),
            },
            "tool_use" => ContentBlock::ToolUse {
                id: take("id").and_then(into_string),
                name: take("name").and_then(into_string),
                arguments: Arguments::Json(take("input").unwrap_or(Value::Null)),
            },
            "thinking" | "redacted_thinking" => ContentBlock::Thinking,
            _ => ContentBlock::Other(kind),
        })
    }
}

/// The usage of an answer, from what of it is a count. Anthropic counts
/// cache reads and writes apart from the rest of the input.
fn usage_of(usage: &Value) -> Usage {
    let count = |field: &str| usage.get(field).and_then(Value::as_u64).unwrap_or(0);
    let cached = count("cache_read_input_tokens");
    let written = count("cache_creation_input_tokens");
    Usage {
        input_tokens: count("input_tokens")
            .saturating_add(cached)
            .saturating_add(written),
        cached_input_tokens: cached,
        cache_write_input_tokens: written,
        output_tokens: count("output_tokens"),
        // Thinking, the one kind of reasoning the API counts, is refused.
        reasoning_tokens: 0,
    }
}
