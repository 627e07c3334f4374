//! A streamed Chat Completions answer, assembled chunk by chunk into the
//! answer read whole.

use serde::Deserialize;
use serde_json::Value;

use super::{ChatResponse, Choice, ChoiceMessage, RawFunction, RawToolCall};
use crate::http::{Assembler, StreamFault};

/// A streamed answer, chunk by chunk (`chat.completion.chunk`): text and
/// refusal pieces appended, each call's pieces gathered by its `index` —
/// its id and name from the chunk that opens it, its arguments' text
/// appended in the order the pieces came, however they were cut — and
/// `finish_reason` and `usage` kept. It ends at `data: [DONE]`.
#[derive(Default)]
pub(super) struct ChatStream {
    content: String,
    refusal: String,
    calls: Vec<StreamedCall>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    function_call: bool,
    started: bool,
    done: bool,
}

#[derive(Default)]
struct StreamedCall {
    id: Option<String>,
    name: String,
    arguments: String,
    /// Arguments a server sent as an object rather than as text.
    object: Option<Value>,
}

/// A chunk, read only for what the assembly keeps.
#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<DeltaCall>>,
    #[serde(default)]
    function_call: Option<Value>,
}

#[derive(Deserialize)]
struct DeltaCall {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<RawFunction>,
}

impl ChatStream {
    /// One piece of a call: it opens the call at its `index` (the next one)
    /// or adds to it.
    fn take_call(&mut self, position: usize, piece: DeltaCall) -> Result<(), StreamFault> {
        self.started = true;
        let index = piece.index.unwrap_or(position);
        if index > self.calls.len() {
            return Err(StreamFault::Malformed(format!(
                "a chunk continues call {index}, and only {} were opened",
                self.calls.len()
            )));
        }
        if index == self.calls.len() {
            self.calls.push(StreamedCall::default());
        }
        let Some(call) = self.calls.get_mut(index) else {
            return Ok(());
        };
        if let Some(id) = piece.id.filter(|id| !id.is_empty())
            && call.id.is_none()
        {
            call.id = Some(id);
        }
        let function = piece.function.unwrap_or_default();
        // A name comes whole in the chunk that opens the call; a
        // server that repeats it in every chunk is read alike; a
        // later chunk that names another is not the protocol's.
        if let Some(name) = function.name.filter(|n| !n.is_empty()) {
            if call.name.is_empty() {
                call.name = name;
            } else if call.name != name {
                return Err(StreamFault::Malformed(format!(
                    "call {index} is renamed by a later chunk"
                )));
            }
        }
        // Arguments come as text pieces, or — from some servers —
        // whole as one object; never both, nor two objects.
        match function.arguments {
            Some(Value::String(text)) if text.is_empty() => {}
            Some(Value::String(text)) if call.object.is_none() => {
                call.arguments.push_str(&text);
            }
            None | Some(Value::Null) => {}
            Some(Value::Object(object)) if call.object.is_none() && call.arguments.is_empty() => {
                call.object = Some(Value::Object(object));
            }
            Some(_) => {
                return Err(StreamFault::Malformed(format!(
                    "call {index}'s arguments come both as text and as an object, or as two objects"
                )));
            }
        }
        Ok(())
    }
}

impl Assembler for ChatStream {
    fn event(&mut self, event: sse_stream::Sse) -> Result<(), StreamFault> {
        let Some(data) = event.data else {
            return Ok(());
        };
        if data.trim() == "[DONE]" {
            if self.finish_reason.is_none() {
                return Err(StreamFault::Malformed(
                    "the stream ends without saying how the answer ended (no `finish_reason`)"
                        .to_owned(),
                ));
            }
            self.done = true;
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(&data)
            .map_err(|e| StreamFault::Malformed(format!("a chunk does not read: {e}")))?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            let kind = error
                .get("type")
                .or_else(|| error.get("code"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned);
            return Err(StreamFault::Provider {
                message,
                retryable: matches!(
                    kind,
                    "server_error" | "rate_limit_exceeded" | "overloaded" | "api_error"
                ),
            });
        }
        if let Some(usage) = chunk.usage.filter(|u| !u.is_null()) {
            self.usage = Some(usage);
        }
        for choice in chunk.choices {
            if choice.index != 0 {
                return Err(StreamFault::Malformed(format!(
                    "a chunk holds choice {}, and the request asked for one",
                    choice.index
                )));
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
            let Some(delta) = choice.delta else { continue };
            if let Some(text) = delta.content.as_ref().and_then(Value::as_str)
                && !text.is_empty()
            {
                self.content.push_str(text);
                self.started = true;
            }
            if let Some(refusal) = delta.refusal.filter(|r| !r.is_empty()) {
                self.refusal.push_str(&refusal);
                self.started = true;
            }
            if delta.function_call.is_some_and(|c| !c.is_null()) {
                self.function_call = true;
                self.started = true;
            }
            for (position, piece) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
                self.take_call(position, piece)?;
            }
        }
        Ok(())
    }

    fn started(&self) -> bool {
        self.started
    }

    fn ended(&self) -> bool {
        self.done
    }

    fn may_end_here(&self) -> bool {
        // A server that closes the stream after the last choice without
        // `[DONE]`: the answer is whole once its finish reason came.
        self.finish_reason.is_some()
    }
}

impl ChatStream {
    /// The answer as if it had come whole.
    pub(super) fn into_response(self) -> ChatResponse {
        let tool_calls = self
            .calls
            .into_iter()
            .map(|call| RawToolCall {
                id: call.id,
                function: Some(RawFunction {
                    name: Some(call.name),
                    arguments: Some(call.object.unwrap_or(Value::String(call.arguments))),
                }),
            })
            .collect::<Vec<_>>();
        ChatResponse {
            choices: vec![Choice {
                message: Some(ChoiceMessage {
                    content: Some(Value::String(self.content)),
                    refusal: Some(self.refusal),
                    tool_calls: Some(tool_calls),
                    function_call: self.function_call.then_some(Value::Bool(true)),
                }),
                finish_reason: self.finish_reason,
            }],
            usage: self.usage,
        }
    }
}
