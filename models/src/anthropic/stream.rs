//! A streamed Messages answer, assembled event by event into the answer
//! read whole.

use serde_json::Value;
use toolgate::run::Arguments;

use super::ContentBlock;
use crate::http::{Assembler, StreamFault};

/// A streamed answer, event by event: `message_start` opens it (with the
/// input's usage), each content block opens with `content_block_start`,
/// grows by `content_block_delta` — text pieces appended, a call's
/// `partial_json` pieces appended and parsed once its block stops — and
/// `message_delta` says how it stopped and what it cost. It ends at
/// `message_stop`. `ping` and event types this client does not know are
/// passed over, as the API asks; an `error` event stops it.
#[derive(Default)]
pub(super) struct MessagesStream {
    pub(super) blocks: Vec<ContentBlock>,
    /// The arguments' text of each open `tool_use` block, by block index.
    partial: Vec<Option<String>>,
    pub(super) stop_reason: Option<String>,
    pub(super) usage: serde_json::Map<String, Value>,
    started: bool,
    done: bool,
}

impl MessagesStream {
    /// A `content_block_start`: the block at `index`, which must be next.
    fn open(&mut self, index: usize, block: Option<Value>) -> Result<(), StreamFault> {
        if index != self.blocks.len() {
            return Err(StreamFault::Malformed(format!(
                "content block {index} opens after {} blocks",
                self.blocks.len()
            )));
        }
        let block = block.ok_or_else(|| {
            StreamFault::Malformed("a block opens with no `content_block`".to_owned())
        })?;
        let block = ContentBlock::read(block).map_err(StreamFault::Malformed)?;
        let is_call = matches!(block, ContentBlock::ToolUse { .. });
        // A block opened — even an empty text one — is the answer begun: a
        // retry from here could pay for it twice.
        self.started = true;
        self.blocks.push(block);
        self.partial.push(is_call.then(String::new));
        Ok(())
    }

    /// A `content_block_delta`: text appended to a text block, a piece of
    /// JSON to an open call's; any other delta for a text block or a call —
    /// or one for a call already closed — is not the protocol's; a delta of
    /// another block (a thinking block's, refused whole) is passed over.
    fn grow(&mut self, index: usize, delta: Option<&Value>) -> Result<(), StreamFault> {
        let kind = delta
            .and_then(|d| d.get("type"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let piece = |field: &str| delta.and_then(|d| d.get(field)).and_then(Value::as_str);
        let misplaced = || {
            StreamFault::Malformed(format!(
                "content block {index} is sent a `{kind}` delta it cannot take"
            ))
        };
        match (self.blocks.get_mut(index), self.partial.get_mut(index)) {
            (Some(ContentBlock::Text(text)), _) => match (kind, piece("text")) {
                ("text_delta", Some(more)) => text.push_str(more),
                // Citations annotate the text; they add none.
                ("citations_delta", _) => {}
                _ => return Err(misplaced()),
            },
            (Some(ContentBlock::ToolUse { .. }), Some(Some(partial))) => {
                match (kind, piece("partial_json")) {
                    ("input_json_delta", Some(more)) => partial.push_str(more),
                    _ => return Err(misplaced()),
                }
            }
            (Some(ContentBlock::ToolUse { .. }), _) => return Err(misplaced()),
            (Some(_), _) => {}
            (None, _) => {
                return Err(StreamFault::Malformed(format!(
                    "a delta for content block {index}, which never opened"
                )));
            }
        }
        Ok(())
    }
}

impl Assembler for MessagesStream {
    fn event(&mut self, event: sse_stream::Sse) -> Result<(), StreamFault> {
        let Some(data) = event.data else {
            return Ok(());
        };
        let mut value: Value = serde_json::from_str(&data)
            .map_err(|e| StreamFault::Malformed(format!("an event does not read: {e}")))?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default()
            .to_owned();
        let index = || {
            value
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|i| usize::try_from(i).ok())
                .ok_or_else(|| StreamFault::Malformed(format!("a `{kind}` event has no index")))
        };
        match kind.as_str() {
            "message_start" => {
                if let Some(Value::Object(usage)) =
                    value.pointer_mut("/message/usage").map(Value::take)
                {
                    self.usage.extend(usage);
                }
            }
            "content_block_start" => {
                let index = index()?;
                let block = value.get_mut("content_block").map(Value::take);
                self.open(index, block)?;
            }
            "content_block_delta" => {
                let index = index()?;
                self.grow(index, value.get("delta"))?;
            }
            "content_block_stop" => {
                let index = index()?;
                if let (Some(ContentBlock::ToolUse { arguments, .. }), Some(partial)) =
                    (self.blocks.get_mut(index), self.partial.get_mut(index))
                    && let Some(text) = partial.take()
                {
                    // No piece at all is a call without parameters.
                    *arguments = Arguments::parse(&text);
                }
            }
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(Value::Object(usage)) = value.get_mut("usage").map(Value::take) {
                    self.usage
                        .extend(usage.into_iter().filter(|(_, count)| !count.is_null()));
                }
            }
            "message_stop" => {
                // A call still open has arguments that may be half sent: the
                // answer is not whole, and no call is taken from it.
                if self.partial.iter().any(Option::is_some) {
                    return Err(StreamFault::Malformed(
                        "the answer stops with a `tool_use` block never closed".to_owned(),
                    ));
                }
                if self.stop_reason.is_none() {
                    return Err(StreamFault::Malformed(
                        "the answer stops without saying why (no `message_delta` with a `stop_reason`)"
                            .to_owned(),
                    ));
                }
                self.done = true;
            }
            "error" => {
                let error = value.get("error");
                let field = |name: &str| {
                    error
                        .and_then(|e| e.get(name))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                };
                return Err(StreamFault::Provider {
                    message: field("message").to_owned(),
                    retryable: matches!(
                        field("type"),
                        "overloaded_error" | "api_error" | "rate_limit_error"
                    ),
                });
            }
            _ => {}
        }
        Ok(())
    }

    fn started(&self) -> bool {
        self.started
    }

    fn ended(&self) -> bool {
        self.done
    }
}
