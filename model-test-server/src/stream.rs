//! Streamed answers: a scripted answer, written whole in a step's `body`,
//! sent as the protocol's server-sent events when the request asked for a
//! stream — cut into pieces as a real server cuts them, and as a hostile
//! one would.
//!
//! A step's `stream` object shapes it (every key optional):
//!
//! - `fragment` (default 4): the characters of text and of a call's
//!   arguments each event carries, so a piece ends inside a JSON string, an
//!   escape or a number;
//! - `chunk_bytes` (default: one write per event): the bytes of each write,
//!   so a write ends inside an event, a line or a UTF-8 sequence;
//! - `gap_ms` (default 0): a pause before each write;
//! - `cut_after` (default: never): the events written before the
//!   connection is cut;
//! - `interleave` (default false): the pieces of parallel calls alternate
//!   (call 0, call 1, call 0, …) rather than following one another;
//! - `done` (default true): whether Chat Completions' closing
//!   `data: [DONE]` is sent;
//! - `whole` (default false): the body is sent whole, as JSON, as a server
//!   that does not stream answers.
//!
//! A `raw` step's text is sent as it is, with the same `chunk_bytes`,
//! `gap_ms` and `cut_after` (counted in writes): a stream of any bytes.

use std::time::Duration;

use serde_json::{Map, Value, json};

/// How a streamed answer is cut and paced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Characters of text or arguments an event carries.
    pub(crate) fragment: usize,
    /// Bytes a write carries; `None` writes each event whole.
    pub(crate) chunk_bytes: Option<usize>,
    /// The pause before each write.
    pub(crate) gap: Duration,
    /// Events (or, for a raw body, writes) before the connection is cut.
    pub(crate) cut_after: Option<usize>,
    /// Whether parallel calls' pieces alternate.
    pub(crate) interleave: bool,
    /// Whether Chat Completions' `data: [DONE]` closes the stream.
    pub(crate) done: bool,
    /// Whether the answer goes whole, not streamed.
    pub(crate) whole: bool,
}

impl Default for Shape {
    fn default() -> Self {
        Self {
            fragment: 4,
            chunk_bytes: None,
            gap: Duration::ZERO,
            cut_after: None,
            interleave: false,
            done: true,
            whole: false,
        }
    }
}

/// The keys a `stream` object may have.
const SHAPE_KEYS: &[&str] = &[
    "fragment",
    "chunk_bytes",
    "gap_ms",
    "cut_after",
    "interleave",
    "done",
    "whole",
];

/// Reads a step's `stream` object.
pub(crate) fn parse_shape(value: &Value) -> Result<Shape, String> {
    let Value::Object(object) = value else {
        return Err("stream must be an object".to_owned());
    };
    if let Some(unknown) = object.keys().find(|k| !SHAPE_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "stream has an unknown key `{unknown}` (it has {})",
            SHAPE_KEYS.join(", ")
        ));
    }
    let count = |key: &str, least: u64| -> Result<Option<usize>, String> {
        object
            .get(key)
            .map(|value| {
                value
                    .as_u64()
                    .filter(|n| *n >= least)
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| format!("stream.{key} must be a whole number from {least}"))
            })
            .transpose()
    };
    let flag = |key: &str, default: bool| -> Result<bool, String> {
        object.get(key).map_or(Ok(default), |value| {
            value
                .as_bool()
                .ok_or_else(|| format!("stream.{key} must be true or false"))
        })
    };
    Ok(Shape {
        fragment: count("fragment", 1)?.unwrap_or(4),
        chunk_bytes: count("chunk_bytes", 1)?,
        gap: Duration::from_millis(count("gap_ms", 0)?.unwrap_or(0) as u64),
        cut_after: count("cut_after", 0)?,
        interleave: flag("interleave", false)?,
        done: flag("done", true)?,
        whole: flag("whole", false)?,
    })
}

/// Text cut into pieces of `size` characters; empty text is no piece.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|piece| piece.iter().collect())
        .collect()
}

/// One event as the wire writes it.
fn event(name: Option<&str>, data: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    if let Some(name) = name {
        bytes.extend_from_slice(b"event: ");
        bytes.extend_from_slice(name.as_bytes());
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(b"data: ");
    bytes.extend_from_slice(data.as_bytes());
    bytes.extend_from_slice(b"\n\n");
    bytes
}

/// The pieces of each call, in the order they are sent.
fn ordered<T: Clone>(per_call: &[Vec<T>], interleave: bool) -> Vec<(usize, T)> {
    let mut out = Vec::new();
    if interleave {
        let longest = per_call.iter().map(Vec::len).max().unwrap_or(0);
        for round in 0..longest {
            for (call, list) in per_call.iter().enumerate() {
                if let Some(piece) = list.get(round) {
                    out.push((call, piece.clone()));
                }
            }
        }
    } else {
        for (call, list) in per_call.iter().enumerate() {
            out.extend(list.iter().cloned().map(|piece| (call, piece)));
        }
    }
    out
}

/// A Chat Completions answer as `chat.completion.chunk` events.
pub(crate) fn openai_events(answer: &Value, shape: &Shape, include_usage: bool) -> Vec<Vec<u8>> {
    let mut base = Map::new();
    for key in ["id", "created", "model", "system_fingerprint"] {
        if let Some(value) = answer.get(key) {
            base.insert(key.to_owned(), value.clone());
        }
    }
    base.insert("object".to_owned(), json!("chat.completion.chunk"));
    let chunk = |choices: Value, usage: Option<&Value>| {
        let mut object = base.clone();
        object.insert("choices".to_owned(), choices);
        if let Some(usage) = usage {
            object.insert("usage".to_owned(), usage.clone());
        }
        event(None, &Value::Object(object).to_string())
    };
    let delta = |delta: Value| json!([{"index": 0, "delta": delta, "finish_reason": null}]);
    let choice = answer.pointer("/choices/0").cloned().unwrap_or(Value::Null);
    let message = choice.get("message").cloned().unwrap_or(Value::Null);
    let mut events = vec![chunk(
        delta(json!({"role": "assistant", "content": ""})),
        None,
    )];
    for field in ["content", "refusal"] {
        if let Some(text) = message.get(field).and_then(Value::as_str) {
            for piece in pieces(text, shape.fragment) {
                events.push(chunk(delta(json!({ field: piece })), None));
            }
        }
    }
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut per_call = Vec::new();
    for (index, call) in calls.iter().enumerate() {
        let function = call.get("function").cloned().unwrap_or(Value::Null);
        let mut opener = json!({
            "index": index,
            "id": call.get("id").cloned().unwrap_or(Value::Null),
            "type": "function",
            "function": {"name": function.get("name").cloned().unwrap_or(Value::Null), "arguments": ""},
        });
        match function.get("arguments") {
            Some(Value::String(text)) => per_call.push(pieces(text, shape.fragment)),
            Some(other) => {
                // Arguments as an object, as some servers send them: whole,
                // in the opening chunk.
                opener["function"]["arguments"] = other.clone();
                per_call.push(Vec::new());
            }
            None => per_call.push(Vec::new()),
        }
        events.push(chunk(delta(json!({"tool_calls": [opener]})), None));
    }
    for (index, piece) in ordered(&per_call, shape.interleave) {
        let piece = json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]});
        events.push(chunk(delta(piece), None));
    }
    let finish = choice.get("finish_reason").cloned().unwrap_or(Value::Null);
    events.push(chunk(
        json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
        None,
    ));
    if include_usage && let Some(usage) = answer.get("usage") {
        events.push(chunk(json!([]), Some(usage)));
    }
    if shape.done {
        events.push(b"data: [DONE]\n\n".to_vec());
    }
    events
}

/// A Messages answer as its events: `message_start`, a `ping`, each
/// block's start, deltas and stop, `message_delta`, `message_stop`.
pub(crate) fn anthropic_events(answer: &Value, shape: &Shape) -> Vec<Vec<u8>> {
    let typed = |value: Value| {
        let name = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message")
            .to_owned();
        event(Some(&name), &value.to_string())
    };
    let usage = answer.get("usage").cloned().unwrap_or_else(|| json!({}));
    let mut start_usage = usage.clone();
    if let Some(object) = start_usage.as_object_mut() {
        object.insert("output_tokens".to_owned(), json!(1));
    }
    let mut message = answer.clone();
    if let Some(object) = message.as_object_mut() {
        object.insert("content".to_owned(), json!([]));
        object.insert("stop_reason".to_owned(), Value::Null);
        object.insert("stop_sequence".to_owned(), Value::Null);
        object.insert("usage".to_owned(), start_usage);
    }
    let mut events = vec![
        typed(json!({"type": "message_start", "message": message})),
        typed(json!({"type": "ping"})),
    ];
    let blocks = answer
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (index, block) in blocks.iter().enumerate() {
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (opening, deltas) = match kind {
            "text" => {
                let text = block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let deltas = pieces(text, shape.fragment)
                    .into_iter()
                    .map(|piece| json!({"type": "text_delta", "text": piece}))
                    .collect();
                (json!({"type": "text", "text": ""}), deltas)
            }
            "tool_use" => {
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                let text = if input == json!({}) {
                    String::new()
                } else {
                    input.to_string()
                };
                let mut deltas: Vec<Value> = pieces(&text, shape.fragment)
                    .into_iter()
                    .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                    .collect();
                if deltas.is_empty() {
                    deltas.push(json!({"type": "input_json_delta", "partial_json": ""}));
                }
                let mut opening = block.clone();
                opening["input"] = json!({});
                (opening, deltas)
            }
            _ => (block.clone(), Vec::new()),
        };
        events.push(typed(json!({
            "type": "content_block_start", "index": index, "content_block": opening,
        })));
        for delta in deltas {
            events.push(typed(json!({
                "type": "content_block_delta", "index": index, "delta": delta,
            })));
        }
        events.push(typed(json!({"type": "content_block_stop", "index": index})));
    }
    let output = usage.get("output_tokens").cloned().unwrap_or(json!(0));
    events.push(typed(json!({
        "type": "message_delta",
        "delta": {
            "stop_reason": answer.get("stop_reason").cloned().unwrap_or(Value::Null),
            "stop_sequence": null,
        },
        "usage": {"output_tokens": output},
    })));
    events.push(typed(json!({"type": "message_stop"})));
    events
}

/// The writes of a stream: events (or a raw body's one piece) cut into
/// `chunk_bytes`, and whether the connection is cut after them.
pub(crate) fn writes(events: Vec<Vec<u8>>, shape: &Shape) -> (Vec<Vec<u8>>, bool) {
    let cut = shape.cut_after.is_some_and(|n| n < events.len());
    let kept: Vec<Vec<u8>> = match shape.cut_after {
        Some(n) => events.into_iter().take(n).collect(),
        None => events,
    };
    let writes = match shape.chunk_bytes {
        None => kept,
        Some(size) => kept.concat().chunks(size).map(<[u8]>::to_vec).collect(),
    };
    (writes, cut)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn data_of(events: &[Vec<u8>]) -> Vec<Value> {
        events
            .iter()
            .filter_map(|e| {
                let text = String::from_utf8(e.clone()).unwrap();
                let data = text
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))?
                    .to_owned();
                serde_json::from_str(&data).ok()
            })
            .collect()
    }

    #[test]
    fn a_chat_answer_streams_as_chunks_that_add_up_to_it() {
        let answer = json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "héllo wörld",
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"x\":\"é\"}"}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}
                ]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        });
        let shape = Shape {
            fragment: 3,
            interleave: true,
            ..Shape::default()
        };
        let events = openai_events(&answer, &shape, true);
        assert_eq!(events.last().unwrap(), b"data: [DONE]\n\n");
        let chunks = data_of(&events);
        let mut text = String::new();
        let mut args = [String::new(), String::new()];
        for chunk in &chunks {
            let Some(delta) = chunk.pointer("/choices/0/delta") else {
                continue;
            };
            text.push_str(delta.get("content").and_then(Value::as_str).unwrap_or(""));
            for call in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let i = usize::try_from(call["index"].as_u64().unwrap()).unwrap();
                args[i].push_str(call["function"]["arguments"].as_str().unwrap_or(""));
            }
        }
        assert_eq!(text, "héllo wörld");
        assert_eq!(args, ["{\"x\":\"é\"}".to_owned(), "{}".to_owned()]);
        assert_eq!(chunks.last().unwrap()["usage"]["total_tokens"], 7);
        assert_eq!(
            chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
            "tool_calls"
        );
    }

    #[test]
    fn a_messages_answer_streams_as_its_events() {
        let answer = json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"x": 1}},
                {"type": "tool_use", "id": "toolu_2", "name": "g", "input": {}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 5, "output_tokens": 6}
        });
        let events = anthropic_events(&answer, &Shape::default());
        let data = data_of(&events);
        let kinds: Vec<&str> = data.iter().map(|d| d["type"].as_str().unwrap()).collect();
        assert_eq!(kinds.first(), Some(&"message_start"));
        assert_eq!(kinds.last(), Some(&"message_stop"));
        let partial: String = data
            .iter()
            .filter(|d| d["index"] == 1 && d["type"] == "content_block_delta")
            .map(|d| d["delta"]["partial_json"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(partial, "{\"x\":1}");
        assert!(
            String::from_utf8(events[0].clone())
                .unwrap()
                .starts_with("event: message_start\n")
        );
    }

    #[test]
    fn writes_cut_bytes_and_the_connection() {
        let events = vec![b"data: 1\n\n".to_vec(), b"data: 2\n\n".to_vec()];
        let shape = Shape {
            chunk_bytes: Some(4),
            cut_after: Some(1),
            ..Shape::default()
        };
        let (writes, cut) = writes(events, &shape);
        assert!(cut);
        assert_eq!(writes.concat(), b"data: 1\n\n");
        assert!(writes.iter().all(|w| w.len() <= 4));
    }

    #[test]
    fn shapes_read_and_mistakes_are_named() {
        let shape = parse_shape(&json!({"fragment": 2, "chunk_bytes": 1, "gap_ms": 5})).unwrap();
        assert_eq!(shape.fragment, 2);
        assert_eq!(shape.chunk_bytes, Some(1));
        assert_eq!(shape.gap, Duration::from_millis(5));
        assert_eq!(
            parse_shape(&json!({"fragment": 0})).unwrap_err(),
            "stream.fragment must be a whole number from 1"
        );
        assert!(
            parse_shape(&json!({"speed": 1}))
                .unwrap_err()
                .contains("unknown key `speed`")
        );
    }
}
