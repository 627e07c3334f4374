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

use crate::ApiKey;
use crate::error::ProviderError;
use crate::http::shown;
use crate::shared::{Common, endpoint, past_call_name};

const PROVIDER: &str = "Anthropic";
const PROTOCOL: &str = "Messages";
const URL_HINT: &str = "the base URL is the part before `/v1/messages`, without `/v1`";
/// The API version this client speaks.
pub const API_VERSION: &str = "2023-06-01";

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
        let messages = messages(transcript, tools);
        if messages.is_empty() {
            return Err(ProviderError::Unsendable {
                provider: PROVIDER,
                reason: "the transcript holds no text and no call to send: the prompt was blank",
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
        let mut tool_choice = None;
        if definitions.is_empty() {
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
                tool_choice = Some(ToolChoice { kind: "none" });
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
        };
        serde_json::to_vec(&request).map_err(|e| ProviderError::Setup {
            provider: PROVIDER,
            reason: format!("the request cannot be written: {e}"),
        })
    }

    /// The answer in `body` as the run takes it: the second half of a turn.
    pub fn read_response(&self, body: &[u8]) -> Result<Response, ProviderError> {
        // Whatever the server wrote is repeated only as `shown` writes it.
        let key = self.key.as_ref();
        let malformed = |reason: String| ProviderError::Malformed {
            provider: PROVIDER,
            protocol: PROTOCOL,
            reason: shown(&reason, key),
        };
        let response: MessagesResponse =
            serde_json::from_slice(body).map_err(|e| malformed(e.to_string()))?;
        if response.kind.as_deref().is_some_and(|k| k != "message") {
            return Err(malformed(format!(
                "its `type` is `{}`, not `message`",
                response.kind.unwrap_or_default()
            )));
        }
        let mut text = Vec::new();
        let mut calls = Vec::new();
        for block in response.content {
            match ContentBlock::read(block).map_err(malformed)? {
                ContentBlock::Text(part) => text.push(part),
                ContentBlock::ToolUse { id, name, input } => calls.push(ProposedCall {
                    id: id.filter(|id| !id.is_empty()),
                    name: name.unwrap_or_default(),
                    arguments: Arguments::Json(input.unwrap_or(Value::Null)),
                }),
                ContentBlock::Thinking => {
                    return Err(ProviderError::Unsupported {
                        provider: PROVIDER,
                        what: "extended-thinking blocks".to_owned(),
                        fix: "thinking must be sent back signed with each tool result; use the model without extended thinking",
                    });
                }
                ContentBlock::Other(kind) => {
                    return Err(ProviderError::Unsupported {
                        provider: PROVIDER,
                        what: format!("a `{}` block", shown(&kind, key)),
                        fix: "only text and tool_use blocks are read; turn off the server tools or features that produce it",
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
        match response.stop_reason.as_deref() {
            Some("max_tokens") if calls.is_empty() => {
                return Err(ProviderError::OutputLimit {
                    provider: PROVIDER,
                    limit: self.common.max_output_tokens,
                });
            }
            Some("refusal") => {
                return Err(ProviderError::Declined {
                    provider: PROVIDER,
                    reason: content
                        .map_or_else(|| "the model refused".to_owned(), |text| shown(&text, key)),
                });
            }
            Some("pause_turn") => {
                return Err(ProviderError::Unsupported {
                    provider: PROVIDER,
                    what: "a paused turn (`pause_turn`)".to_owned(),
                    fix: "it comes from server tools, which this client does not use",
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

    /// Sends the transcript and reads the answer, with this crate's error.
    pub async fn complete(
        &self,
        transcript: &[Message],
        tools: &[ToolSpec],
    ) -> Result<Response, ProviderError> {
        let body = self.request_body(transcript, tools)?;
        let header = (HeaderName::from_static("x-api-key"), "");
        let answer = self
            .common
            .post(&self.url, self.key.as_ref(), header, body)
            .await?;
        self.read_response(&answer)
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

/// The transcript as alternating messages.
fn messages<'a>(transcript: &'a [Message], tools: &'a [ToolSpec]) -> Vec<Turn<'a>> {
    let mut turns: Vec<Turn<'a>> = Vec::new();
    for message in transcript {
        let (role, blocks) = match message {
            Message::System { .. } => continue,
            Message::User { content } => ("user", text_block(content)),
            Message::Assistant { content, calls, .. } => {
                let mut blocks = content.as_deref().map(text_block).unwrap_or_default();
                blocks.extend(calls.iter().map(|call| Block::ToolUse {
                    id: id_safe(&call.id),
                    name: past_call_name(tools, &call.name),
                    input: &call.arguments,
                }));
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
                    tool_use_id: id_safe(call_id),
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
    tool_choice: Option<ToolChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
}

#[derive(Serialize)]
struct ToolChoice {
    #[serde(rename = "type")]
    kind: &'static str,
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
        input: Option<Value>,
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
                input: take("input"),
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
    Usage {
        input_tokens: count("input_tokens")
            .saturating_add(cached)
            .saturating_add(count("cache_creation_input_tokens")),
        cached_input_tokens: cached,
        output_tokens: count("output_tokens"),
    }
}
