//! The provider adapters' work per turn against plain `serde_json`: the
//! OpenAI and Anthropic clients build the request body for a transcript of
//! 1, 10 and 50 turns (two calls and two results each) and 8 tool specs,
//! and read an answer of text and two parallel calls into the run's
//! response — beside `serde_json` writing the same request body from a
//! `Value` and reading the same answer into a `Value`.

use std::fmt::Write as _;

use divan::black_box;
use serde_json::{Value, json};
use toolgate::run::{Message, Response, ToolCall, ToolSpec};
use toolgate_models::{Anthropic, OpenAi};

fn main() {
    divan::main();
}

/// Turns of two calls and two results in the transcript.
const TURNS: [usize; 3] = [1, 10, 50];

/// The tools offered: (local name, what it does); each takes five
/// parameters.
const TOOLS: [(&str, &str); 8] = [
    ("files.read_file", "Reads a file of the workspace."),
    ("files.write_file", "Writes a file of the workspace."),
    (
        "files.search",
        "Searches the workspace's files for a pattern.",
    ),
    ("git.diff", "Shows the changes between two revisions."),
    ("git.commit", "Records the staged changes."),
    ("issues.create", "Opens an issue in the tracker."),
    ("issues.comment", "Comments on an issue."),
    ("shell.run", "Runs a command in the workspace's sandbox."),
];

fn specs() -> Vec<ToolSpec> {
    TOOLS
        .iter()
        .map(|(local, description)| ToolSpec {
            name: local.replace('.', "_"),
            local_name: (*local).to_owned(),
            description: (*description).to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The path, from the workspace's root."},
                    "text": {"type": "string", "description": "The text to use."},
                    "line": {"type": "integer", "minimum": 1, "description": "The line to start at."},
                    "recursive": {"type": "boolean", "default": false},
                    "mode": {"type": "string", "enum": ["append", "replace", "insert"]}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        })
        .collect()
}

/// A 200-character string argument.
fn long_text(i: usize) -> String {
    let mut text = format!("Note {i}: ");
    while text.len() < 200 {
        text.push_str("the quick brown fox jumps over the lazy dog, ");
    }
    text.truncate(200);
    text
}

/// A result of about 300 characters, lines of a file.
fn result_text(i: usize) -> String {
    let mut text = String::new();
    let mut line = 1;
    while text.len() < 300 {
        // Writing to a `String` cannot fail.
        let _ = writeln!(
            text,
            "{line:>3} | let value_{i} = compute(\"input\", {line});"
        );
        line += 1;
    }
    text.truncate(300);
    text
}

/// A system and a user message, then `turns` turns of an assistant
/// message with two calls and their two results.
fn transcript(turns: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::System {
            content: "You are a coding assistant. Use the tools to read and change the workspace; ask before anything destructive.".into(),
        },
        Message::User {
            content: "Find where `compute` is called, and write the call sites down in NOTES.md.".into(),
        },
    ];
    for turn in 0..turns {
        let read = format!("call_{turn}_0");
        let write = format!("call_{turn}_1");
        messages.push(Message::Assistant {
            content: Some("Reading the next file and noting what I found.".into()),
            calls: vec![
                ToolCall {
                    id: read.clone(),
                    name: "files.read_file".into(),
                    arguments: json!({"path": format!("src/module_{turn}.rs"), "line": 1, "recursive": false}),
                },
                ToolCall {
                    id: write.clone(),
                    name: "files.write_file".into(),
                    arguments: json!({"path": "NOTES.md", "text": long_text(turn), "mode": "append"}),
                },
            ],
            usage: None,
        });
        messages.push(Message::Tool {
            call_id: read,
            name: "files.read_file".into(),
            content: result_text(turn),
            is_error: false,
            rich: None,
        });
        messages.push(Message::Tool {
            call_id: write,
            name: "files.write_file".into(),
            content: result_text(turn + 1),
            is_error: false,
            rich: None,
        });
    }
    messages
}

/// A Chat Completions answer: text and two parallel calls, their
/// arguments as JSON text, and the usage.
fn openai_answer() -> Vec<u8> {
    let read = json!({"path": "src/module_99.rs", "line": 1, "recursive": false}).to_string();
    let write = json!({"path": "NOTES.md", "text": long_text(99), "mode": "append"}).to_string();
    let answer = json!({
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1_699_896_916,
        "model": "gpt-4.1-mini",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Reading the next file and noting what I found.",
                "tool_calls": [
                    {"id": "call_abc", "type": "function", "function": {"name": "files_read_file", "arguments": read}},
                    {"id": "call_def", "type": "function", "function": {"name": "files_write_file", "arguments": write}}
                ]
            },
            "logprobs": null,
            "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": 8_210, "completion_tokens": 117, "total_tokens": 8_327,
                  "prompt_tokens_details": {"cached_tokens": 6_400},
                  "completion_tokens_details": {"reasoning_tokens": 0}}
    });
    answer.to_string().into_bytes()
}

/// A Messages answer: a `text` block and two `tool_use` blocks, and the
/// usage.
fn anthropic_answer() -> Vec<u8> {
    let answer = json!({
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {"type": "text", "text": "Reading the next file and noting what I found."},
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "files_read_file",
             "input": {"path": "src/module_99.rs", "line": 1, "recursive": false}},
            {"type": "tool_use", "id": "toolu_01B19q90qw90lq917835lq8", "name": "files_write_file",
             "input": {"path": "NOTES.md", "text": long_text(99), "mode": "append"}}
        ],
        "stop_reason": "tool_use",
        "stop_sequence": null,
        "usage": {"input_tokens": 1_810, "output_tokens": 117,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 6_400}
    });
    answer.to_string().into_bytes()
}

fn openai() -> OpenAi {
    match OpenAi::new("http://127.0.0.1:1/v1", "gpt-4.1-mini") {
        Ok(client) => client,
        Err(error) => panic!("{error}"),
    }
}

fn anthropic() -> Anthropic {
    match Anthropic::at("http://127.0.0.1:1", "claude-sonnet-4-5") {
        Ok(client) => client,
        Err(error) => panic!("{error}"),
    }
}

/// Checks that an answer was read as two calls with JSON arguments.
fn check(response: &Response) {
    let read = response.calls.len() == 2
        && response
            .calls
            .iter()
            .all(|call| matches!(call.arguments, toolgate::run::Arguments::Json(_)));
    assert!(
        read && response.content.is_some() && response.usage.is_some(),
        "the answer was not read as text and two calls: {response:?}"
    );
}

/// Checks that a request body carries the transcript (no more messages than
/// it holds: a protocol may merge messages of one role, or lift the system
/// prompt out) and every tool.
fn check_request(body: &[u8], messages: usize, tools: usize) {
    let value = request_value(body);
    let sent = value["messages"].as_array().map_or(0, Vec::len);
    assert!(
        sent > 0 && sent <= messages,
        "the request holds {sent} messages for a transcript of {messages}"
    );
    assert_eq!(value["tools"].as_array().map_or(0, Vec::len), tools);
}

/// The request body the adapter writes, as a `Value`, for the baseline to
/// write again; checked to have the adapter's length.
fn request_value(body: &[u8]) -> Value {
    let value = match serde_json::from_slice::<Value>(body) {
        Ok(value) => value,
        Err(error) => panic!("the adapter's request is not JSON: {error}"),
    };
    let again = serde_json::to_vec(&value).unwrap_or_default();
    assert_eq!(
        again.len(),
        body.len(),
        "the baseline writes as many bytes as the adapter"
    );
    value
}

/// The OpenAI client's turn: the request body, then the answer read.
#[divan::bench(args = TURNS, sample_count = 2000)]
fn openai_adapter(bencher: divan::Bencher, turns: usize) {
    let client = openai();
    let transcript = transcript(turns);
    let tools = specs();
    let answer = openai_answer();
    match client.read_response(&answer, transcript.len()) {
        Ok(response) => check(&response),
        Err(error) => panic!("{error}"),
    }
    match client.request_body(&transcript, &tools) {
        Ok(body) => check_request(&body, transcript.len(), tools.len()),
        Err(error) => panic!("{error}"),
    }
    bencher.bench_local(|| {
        let body = match client.request_body(black_box(&transcript), black_box(&tools)) {
            Ok(body) => body,
            Err(error) => panic!("{error}"),
        };
        let response = match client.read_response(black_box(&answer), transcript.len()) {
            Ok(response) => response,
            Err(error) => panic!("{error}"),
        };
        (body, response)
    });
}

/// The baseline: `serde_json` writing the OpenAI client's request body
/// from a `Value` and reading its answer into a `Value`.
#[divan::bench(args = TURNS, sample_count = 2000)]
fn openai_plain_serde(bencher: divan::Bencher, turns: usize) {
    let body = match openai().request_body(&transcript(turns), &specs()) {
        Ok(body) => body,
        Err(error) => panic!("{error}"),
    };
    let request = request_value(&body);
    let answer = openai_answer();
    bencher.bench_local(|| {
        let body = serde_json::to_vec(black_box(&request)).unwrap_or_default();
        let response = serde_json::from_slice::<Value>(black_box(&answer)).unwrap_or_default();
        (body, response)
    });
}

/// The Anthropic client's turn: the request body, then the answer read.
#[divan::bench(args = TURNS, sample_count = 2000)]
fn anthropic_adapter(bencher: divan::Bencher, turns: usize) {
    let client = anthropic();
    let transcript = transcript(turns);
    let tools = specs();
    let answer = anthropic_answer();
    match client.read_response(&answer) {
        Ok(response) => check(&response),
        Err(error) => panic!("{error}"),
    }
    match client.request_body(&transcript, &tools) {
        Ok(body) => check_request(&body, transcript.len(), tools.len()),
        Err(error) => panic!("{error}"),
    }
    bencher.bench_local(|| {
        let body = match client.request_body(black_box(&transcript), black_box(&tools)) {
            Ok(body) => body,
            Err(error) => panic!("{error}"),
        };
        let response = match client.read_response(black_box(&answer)) {
            Ok(response) => response,
            Err(error) => panic!("{error}"),
        };
        (body, response)
    });
}

/// The baseline: `serde_json` writing the Anthropic client's request body
/// from a `Value` and reading its answer into a `Value`.
#[divan::bench(args = TURNS, sample_count = 2000)]
fn anthropic_plain_serde(bencher: divan::Bencher, turns: usize) {
    let body = match anthropic().request_body(&transcript(turns), &specs()) {
        Ok(body) => body,
        Err(error) => panic!("{error}"),
    };
    let request = request_value(&body);
    let answer = anthropic_answer();
    bencher.bench_local(|| {
        let body = serde_json::to_vec(black_box(&request)).unwrap_or_default();
        let response = serde_json::from_slice::<Value>(black_box(&answer)).unwrap_or_default();
        (body, response)
    });
}

/// The pieces a streamed answer's text and arguments come in: about a
/// token's worth, as providers stream them.
const PIECE: usize = 4;

fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(PIECE)
        .map(|piece| piece.iter().collect())
        .collect()
}

/// The Chat Completions answer of [`openai_answer`] as the events a
/// provider streams it in: a chunk per piece of text and of each call's
/// arguments, the finish reason, the usage, `[DONE]`.
fn openai_stream() -> Vec<u8> {
    let answer: Value = serde_json::from_slice(&openai_answer()).unwrap_or_default();
    let message = &answer["choices"][0]["message"];
    let base = |choices: Value, usage: Value| {
        let chunk = json!({"id": "chatcmpl-abc123", "object": "chat.completion.chunk",
            "created": 1_699_896_916, "model": "gpt-4.1-mini", "system_fingerprint": "fp_1",
            "choices": choices, "usage": usage});
        format!("data: {chunk}\n\n")
    };
    let delta = |delta: Value| {
        base(
            json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": null}]),
            Value::Null,
        )
    };
    let mut body = delta(json!({"role": "assistant", "content": ""}));
    for piece in pieces(message["content"].as_str().unwrap_or_default()) {
        body.push_str(&delta(json!({"content": piece})));
    }
    for (index, call) in message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        body.push_str(&delta(
            json!({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""}}]}),
        ));
        for piece in pieces(call["function"]["arguments"].as_str().unwrap_or_default()) {
            body.push_str(&delta(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
            ));
        }
    }
    body.push_str(&base(
        json!([{"index": 0, "delta": {}, "logprobs": null, "finish_reason": "tool_calls"}]),
        Value::Null,
    ));
    body.push_str(&base(json!([]), answer["usage"].clone()));
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

/// The Messages answer of [`anthropic_answer`] as its events.
fn anthropic_stream() -> Vec<u8> {
    let answer: Value = serde_json::from_slice(&anthropic_answer()).unwrap_or_default();
    let event = |value: Value| {
        let name = value["type"].as_str().unwrap_or_default().to_owned();
        format!("event: {name}\ndata: {value}\n\n")
    };
    let mut start = answer.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(1);
    let mut body = event(json!({"type": "message_start", "message": start}));
    body.push_str(&event(json!({"type": "ping"})));
    for (index, block) in answer["content"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let (opening, deltas): (Value, Vec<Value>) = if block["type"] == "text" {
            (
                json!({"type": "text", "text": ""}),
                pieces(block["text"].as_str().unwrap_or_default())
                    .into_iter()
                    .map(|p| json!({"type": "text_delta", "text": p}))
                    .collect(),
            )
        } else {
            let mut opening = block.clone();
            opening["input"] = json!({});
            (
                opening,
                pieces(&block["input"].to_string())
                    .into_iter()
                    .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                    .collect(),
            )
        };
        body.push_str(&event(
            json!({"type": "content_block_start", "index": index, "content_block": opening}),
        ));
        for delta in deltas {
            body.push_str(&event(
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        body.push_str(&event(
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    body.push_str(&event(json!({"type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": null},
        "usage": {"output_tokens": 117}})));
    body.push_str(&event(json!({"type": "message_stop"})));
    body.into_bytes()
}

/// Each event's data of a stream, as plain `serde_json` would read it:
/// the lines split out, every `data` that is JSON read into a `Value`.
fn plain_events(body: &[u8]) -> Vec<Value> {
    body.split(|b| *b == b'\n')
        .filter_map(|line| line.strip_prefix(b"data: "))
        .filter_map(|data| serde_json::from_slice::<Value>(data).ok())
        .collect()
}

/// Checks that a streamed answer reads as the same answer read whole.
fn check_stream(streamed: &Response, whole: &Response) {
    check(streamed);
    assert!(
        streamed.calls == whole.calls && streamed.content == whole.content,
        "the stream was not read as the whole answer"
    );
}

/// The OpenAI client assembling the streamed answer, piece by piece.
#[divan::bench(sample_count = 2000)]
fn openai_stream_assembly(bencher: divan::Bencher) {
    let client = openai();
    let body = openai_stream();
    let whole = client.read_response(&openai_answer(), 4);
    match (client.read_stream(&body, 4), whole) {
        (Ok(streamed), Ok(whole)) => check_stream(&streamed, &whole),
        (streamed, whole) => panic!("{streamed:?} {whole:?}"),
    }
    bencher.bench_local(|| client.read_stream(black_box(&body), 4));
}

/// The baseline: the OpenAI client reading the same answer whole.
#[divan::bench(sample_count = 2000)]
fn openai_stream_whole_read(bencher: divan::Bencher) {
    let client = openai();
    let answer = openai_answer();
    bencher.bench_local(|| client.read_response(black_box(&answer), 4));
}

/// The other baseline: plain `serde_json` reading each event of the same
/// stream into a `Value`.
#[divan::bench(sample_count = 2000)]
fn openai_stream_plain_serde(bencher: divan::Bencher) {
    let body = openai_stream();
    assert!(plain_events(&body).len() > 10, "the stream has its events");
    bencher.bench_local(|| plain_events(black_box(&body)));
}

/// The Anthropic client assembling the streamed answer, event by event.
#[divan::bench(sample_count = 2000)]
fn anthropic_stream_assembly(bencher: divan::Bencher) {
    let client = anthropic();
    let body = anthropic_stream();
    match (
        client.read_stream(&body),
        client.read_response(&anthropic_answer()),
    ) {
        (Ok(streamed), Ok(whole)) => check_stream(&streamed, &whole),
        (streamed, whole) => panic!("{streamed:?} {whole:?}"),
    }
    bencher.bench_local(|| client.read_stream(black_box(&body)));
}

/// The baseline: the Anthropic client reading the same answer whole.
#[divan::bench(sample_count = 2000)]
fn anthropic_stream_whole_read(bencher: divan::Bencher) {
    let client = anthropic();
    let answer = anthropic_answer();
    bencher.bench_local(|| client.read_response(black_box(&answer)));
}

/// The other baseline: plain `serde_json` reading each event of the same
/// stream into a `Value`.
#[divan::bench(sample_count = 2000)]
fn anthropic_stream_plain_serde(bencher: divan::Bencher) {
    let body = anthropic_stream();
    assert!(plain_events(&body).len() > 10, "the stream has its events");
    bencher.bench_local(|| plain_events(black_box(&body)));
}
