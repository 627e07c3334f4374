//! Streamed answers from both clients against the protocol test server, a
//! separate process that sends each scripted answer as the protocol's
//! server-sent events, cut as the script says: the same `Response` as the
//! answer read whole, however the bytes and the pieces are cut; the idle
//! and overall limits; what is retried and what never is; the request
//! options hosts reach for; the provider's request id in errors.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::needless_pass_by_value
)]

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{KEY, Server};
use toolgate::run::{Message, Response, ToolSpec};
use toolgate_models::{Anthropic, ApiKey, OpenAi, ProviderError, RetryPolicy, ToolChoice};

fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "notes_write".into(),
            local_name: "notes.write".into(),
            description: "Writes a note.".into(),
            parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        },
        ToolSpec {
            name: "clock".into(),
            local_name: "clock".into(),
            description: "The time.".into(),
            parameters: json!({"type": "object"}),
        },
    ]
}

fn prompt() -> Vec<Message> {
    vec![Message::User {
        content: "Write « déjà vu » down, and tell me the time.".into(),
    }]
}

/// The arguments of the first call: text that a cut may split inside a
/// UTF-8 sequence, an escape and a JSON string.
const ARGUMENTS: &str = r#"{"text":"déjà vu — \"ß\" 😀 \\ done"}"#;

fn chat_answer() -> Value {
    json!({
        "id": "chatcmpl-9", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Writing — ✓.",
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "notes_write", "arguments": ARGUMENTS}},
                {"id": "call_b", "type": "function", "function": {"name": "clock", "arguments": ""}}
            ]}}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
                  "prompt_tokens_details": {"cached_tokens": 3},
                  "completion_tokens_details": {"reasoning_tokens": 2}}
    })
}

fn messages_answer() -> Value {
    let arguments: Value = serde_json::from_str(ARGUMENTS).unwrap();
    json!({
        "id": "msg_9", "type": "message", "role": "assistant", "model": "m",
        "content": [
            {"type": "text", "text": "Writing — ✓."},
            {"type": "tool_use", "id": "toolu_a", "name": "notes_write", "input": arguments},
            {"type": "tool_use", "id": "toolu_b", "name": "clock", "input": {}}
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 5, "cache_read_input_tokens": 3,
                  "cache_creation_input_tokens": 4, "output_tokens": 7}
    })
}

fn openai(server: &Server) -> OpenAi {
    OpenAi::new(&format!("{}/v1", server.base), "m")
        .unwrap()
        .key(ApiKey::new(KEY).unwrap())
        .retry(RetryPolicy {
            base_delay: Duration::from_millis(10),
            ..RetryPolicy::default()
        })
}

fn anthropic(server: &Server) -> Anthropic {
    Anthropic::at(&server.base, "m")
        .unwrap()
        .key(ApiKey::new(KEY).unwrap())
        .retry(RetryPolicy {
            base_delay: Duration::from_millis(10),
            ..RetryPolicy::default()
        })
}

fn step(answer: &Value, shape: Value) -> Value {
    json!({"status": 200, "body": answer, "stream": shape})
}

/// The shapes every answer is streamed in: pieces of one to five
/// characters, writes of one byte (inside every UTF-8 sequence) to whole
/// events, calls one after the other and interleaved.
fn shapes() -> Vec<Value> {
    let mut shapes = Vec::new();
    for fragment in [1, 2, 3, 5] {
        for chunk in [Some(1), Some(7), None] {
            for interleave in [false, true] {
                let mut shape = json!({"fragment": fragment, "interleave": interleave});
                if let Some(chunk) = chunk {
                    shape["chunk_bytes"] = json!(chunk);
                }
                shapes.push(shape);
            }
        }
    }
    shapes
}

#[tokio::test]
async fn a_chat_stream_in_any_cut_is_the_answer_read_whole() {
    let shapes = shapes();
    let mut script: Vec<Value> = vec![json!({"status": 200, "body": chat_answer()})];
    script.extend(
        shapes
            .iter()
            .map(|shape| step(&chat_answer(), shape.clone())),
    );
    let server = Server::start(Value::Array(script), &[]).await;
    let whole = openai(&server).complete(&prompt(), &specs()).await.unwrap();
    assert_eq!(whole.calls.len(), 2);
    let usage = whole.usage.unwrap();
    assert_eq!((usage.reasoning_tokens, usage.cached_input_tokens), (2, 3));
    let streaming = openai(&server).stream(true);
    for (n, shape) in shapes.iter().enumerate() {
        let streamed = streaming.complete(&prompt(), &specs()).await.unwrap();
        assert_same(&streamed, &whole, shape);
        let request = server.valid(n + 1);
        assert_eq!(request["body"]["stream"], true);
        assert_eq!(request["body"]["stream_options"]["include_usage"], true);
    }
    assert_eq!(
        server.requests().len(),
        shapes.len() + 1,
        "nothing was retried"
    );
}

#[tokio::test]
async fn a_messages_stream_in_any_cut_is_the_answer_read_whole() {
    let shapes = shapes();
    let mut script: Vec<Value> = vec![json!({"status": 200, "body": messages_answer()})];
    script.extend(
        shapes
            .iter()
            .map(|shape| step(&messages_answer(), shape.clone())),
    );
    let server = Server::start(Value::Array(script), &[]).await;
    let whole = anthropic(&server)
        .complete(&prompt(), &specs())
        .await
        .unwrap();
    let usage = whole.usage.unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.cache_write_input_tokens
        ),
        (12, 3, 4)
    );
    let streaming = anthropic(&server).stream(true);
    for (n, shape) in shapes.iter().enumerate() {
        let streamed = streaming.complete(&prompt(), &specs()).await.unwrap();
        assert_same(&streamed, &whole, shape);
        assert_eq!(server.valid(n + 1)["body"]["stream"], true);
    }
}

fn assert_same(streamed: &Response, whole: &Response, shape: &Value) {
    assert_eq!(streamed.content, whole.content, "{shape}");
    assert_eq!(streamed.calls, whole.calls, "{shape}");
    assert_eq!(streamed.usage, whole.usage, "{shape}");
}

#[tokio::test]
async fn a_stream_cut_after_the_answer_began_is_not_sent_again_and_gives_no_call() {
    // Chat: the role chunk, the text, the first call's opening chunk, then
    // the connection is cut with the call's arguments half sent.
    let script = json!([
        step(&chat_answer(), json!({"fragment": 4, "cut_after": 6})),
        step(&messages_answer(), json!({"fragment": 4, "cut_after": 9})),
    ]);
    let server = Server::start(script, &[]).await;
    let error = openai(&server)
        .stream(true)
        .complete(&prompt(), &specs())
        .await
        .unwrap_err();
    let ProviderError::Interrupted { received, .. } = &error else {
        panic!("{error}");
    };
    assert!(received.contains("the answer begun"), "{error}");
    assert_eq!(server.requests().len(), 1, "a cut answer is not sent again");
    let error = anthropic(&server)
        .stream(true)
        .complete(&prompt(), &specs())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::Interrupted { .. }),
        "{error}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_cut_before_any_of_the_answer_is_sent_again() {
    let script = json!([
        // Only the opening chunk (role, no text) before the cut.
        step(&chat_answer(), json!({"cut_after": 1})),
        step(&chat_answer(), json!({})),
        // `message_start` and a ping, then the cut.
        step(&messages_answer(), json!({"cut_after": 2})),
        step(&messages_answer(), json!({})),
    ]);
    let server = Server::start(script, &[]).await;
    let answer = openai(&server)
        .stream(true)
        .complete(&prompt(), &specs())
        .await
        .unwrap();
    assert_eq!(answer.calls.len(), 2);
    let answer = anthropic(&server)
        .stream(true)
        .complete(&prompt(), &specs())
        .await
        .unwrap();
    assert_eq!(answer.calls.len(), 2);
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn an_error_event_is_retried_only_before_the_answer_began() {
    let overloaded = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let late = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Half\"}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let script = json!([
        {"status": 200, "raw": overloaded, "headers": {"request-id": "req_early"}},
        step(&messages_answer(), json!({})),
        {"status": 200, "raw": late, "headers": {"request-id": "req_late"}},
    ]);
    let server = Server::start(script, &[]).await;
    let model = anthropic(&server).stream(true);
    let answer = model.complete(&prompt(), &specs()).await.unwrap();
    assert_eq!(
        answer.calls.len(),
        2,
        "the overloaded stream was sent again"
    );
    let error = model.complete(&prompt(), &specs()).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::Interrupted { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("Overloaded"), "{error}");
    assert_eq!(error.request_id(), Some("req_late"));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn streams_are_bounded_by_silence_and_in_all_not_by_the_deadline() {
    let script = json!([
        // 20 events 40 ms apart: 0.8 s in all, past the 0.3 s deadline,
        // never silent for 0.5 s.
        step(&chat_answer(), json!({"fragment": 4, "gap_ms": 40})),
        // Silent for 0.8 s before each event: past the idle limit.
        step(&chat_answer(), json!({"gap_ms": 800})),
        // Steady, and past the overall limit.
        step(&chat_answer(), json!({"fragment": 1, "gap_ms": 40})),
    ]);
    let server = Server::start(script, &[]).await;
    let model = openai(&server)
        .stream(true)
        .deadline(Duration::from_millis(300))
        .idle_limit(Duration::from_millis(500));
    let answer = model.complete(&prompt(), &specs()).await.unwrap();
    assert_eq!(answer.calls.len(), 2);
    let error = model.complete(&prompt(), &specs()).await.unwrap_err();
    assert!(
        error.to_string().contains("idle limit") || matches!(error, ProviderError::Deadline { .. }),
        "{error}"
    );
    let model = model.overall_limit(Duration::from_millis(400));
    let error = model.complete(&prompt(), &specs()).await.unwrap_err();
    assert!(error.to_string().contains("overall limit"), "{error}");
    assert_eq!(
        server.requests().len(),
        3,
        "no silent or long stream was sent again"
    );
}

#[tokio::test]
async fn a_server_that_does_not_stream_is_read_whole() {
    let script = json!([
        step(&chat_answer(), json!({"whole": true})),
        step(&messages_answer(), json!({"whole": true})),
    ]);
    let server = Server::start(script, &[]).await;
    let answer = openai(&server)
        .stream(true)
        .complete(&prompt(), &specs())
        .await
        .unwrap();
    assert_eq!(answer.calls.len(), 2);
    let answer = anthropic(&server)
        .stream(true)
        .complete(&prompt(), &specs())
        .await
        .unwrap();
    assert_eq!(answer.calls.len(), 2);
}

#[tokio::test]
async fn hostile_streams_are_named_not_taken() {
    let jump = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"c\",\"function\":{\"name\":\"clock\",\"arguments\":\"{}\"}}]}}]}\n\ndata: [DONE]\n\n";
    let legacy = "data: {\"choices\":[{\"index\":0,\"delta\":{\"function_call\":{\"name\":\"clock\",\"arguments\":\"{}\"}}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"function_call\"}]}\n\ndata: [DONE]\n\n";
    let endless = format!("data: {}", "x".repeat(64 * 1024));
    let script = json!([
        {"status": 200, "raw": jump},
        {"status": 200, "raw": legacy},
        {"status": 200, "raw": endless, "stream": {"chunk_bytes": 4096}},
    ]);
    let server = Server::start(script, &[]).await;
    let model = openai(&server).stream(true).retry(RetryPolicy::none());
    let error = model.complete(&prompt(), &specs()).await.unwrap_err();
    assert!(
        matches!(&error, ProviderError::Malformed { reason, .. } if reason.contains("call 3")),
        "{error}"
    );
    let error = model.complete(&prompt(), &specs()).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::Unsupported { .. }),
        "{error}"
    );
    let error = model
        .max_response_bytes(16 * 1024)
        .complete(&prompt(), &specs())
        .await
        .unwrap_err();
    assert!(matches!(error, ProviderError::TooLarge { .. }), "{error}");
}

#[tokio::test]
async fn every_error_from_an_answer_carries_its_request_id() {
    let script = json!([
        {"status": 400, "body": {"error": {"message": "bad", "type": "invalid_request_error"}},
         "headers": {"x-request-id": "req_400"}},
        {"status": 200, "raw": "{not json", "headers": {"x-request-id": "req_200"}},
        {"status": 503, "body": {"error": {"message": "busy"}}, "headers": {"x-request-id": "req_503"}},
    ]);
    let server = Server::start(script, &[]).await;
    let model = openai(&server).retry(RetryPolicy::none());
    let error = model.complete(&prompt(), &specs()).await.unwrap_err();
    assert_eq!(error.request_id(), Some("req_400"));
    assert!(
        error.to_string().contains("(request id `req_400`)"),
        "{error}"
    );
    let error = model.complete(&prompt(), &specs()).await.unwrap_err();
    assert!(matches!(error, ProviderError::Malformed { .. }), "{error}");
    assert_eq!(error.request_id(), Some("req_200"));
    let error = model.complete(&prompt(), &specs()).await.unwrap_err();
    assert_eq!(error.request_id(), Some("req_503"));
}

#[tokio::test]
async fn the_options_hosts_reach_for_go_out_as_each_protocol_takes_them() {
    let chat = json!({"status": 200, "body": chat_answer()});
    let messages = json!({"status": 200, "body": messages_answer()});
    let script = json!([chat, chat, chat, messages, messages, messages]);
    let server = Server::start(script, &[]).await;
    let base = openai(&server)
        .top_p(0.5)
        .stop(["END"])
        .parallel_tool_calls(false)
        .body_field("reasoning_effort", json!("low"))
        .unwrap()
        .body_field("provider", json!({"order": ["x"]}))
        .unwrap();
    for (choice, sent) in [
        (ToolChoice::Required, json!("required")),
        (
            ToolChoice::Tool("notes.write".into()),
            json!({"type": "function", "function": {"name": "notes_write"}}),
        ),
        (ToolChoice::None, json!("none")),
    ] {
        base.clone()
            .tool_choice(choice)
            .complete(&prompt(), &specs())
            .await
            .unwrap();
        let n = server.requests().len() - 1;
        let body = &server.valid(n)["body"];
        assert_eq!(body["tool_choice"], sent);
        assert_eq!(
            (&body["parallel_tool_calls"], &body["top_p"], &body["stop"]),
            (&json!(false), &json!(0.5), &json!(["END"]))
        );
        assert_eq!(body["reasoning_effort"], "low");
        assert_eq!(body["provider"]["order"][0], "x");
    }
    let base = anthropic(&server)
        .stop(["END"])
        .temperature(0.2)
        .parallel_tool_calls(false)
        .body_field("top_k", json!(5))
        .unwrap();
    for (choice, sent) in [
        (
            ToolChoice::Auto,
            json!({"type": "auto", "disable_parallel_tool_use": true}),
        ),
        (
            ToolChoice::Required,
            json!({"type": "any", "disable_parallel_tool_use": true}),
        ),
        (
            ToolChoice::Tool("clock".into()),
            json!({"type": "tool", "name": "clock", "disable_parallel_tool_use": true}),
        ),
    ] {
        base.clone()
            .tool_choice(choice)
            .complete(&prompt(), &specs())
            .await
            .unwrap();
        let n = server.requests().len() - 1;
        let body = &server.valid(n)["body"];
        assert_eq!(body["tool_choice"], sent);
        assert_eq!(body["stop_sequences"], json!(["END"]));
        assert_eq!(body["top_k"], 5);
    }
}

#[tokio::test]
async fn what_the_client_owns_or_the_api_refuses_is_refused_before_sending() {
    let server = Server::start(json!([]), &[]).await;
    for field in ["model", "messages", "tools", "tool_choice", "stream", "n"] {
        let error = openai(&server).body_field(field, json!(1)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains(&format!("`{field}` is the client's own")),
            "{error}"
        );
    }
    for field in ["system", "thinking", "max_tokens", "stream"] {
        let error = anthropic(&server).body_field(field, json!(1)).unwrap_err();
        assert!(error.to_string().contains("the client's own"), "{error}");
    }
    let refused = [
        openai(&server)
            .tool_choice(ToolChoice::Tool("nope".into()))
            .complete(&prompt(), &specs())
            .await
            .unwrap_err(),
        openai(&server)
            .tool_choice(ToolChoice::Required)
            .complete(&prompt(), &[])
            .await
            .unwrap_err(),
        anthropic(&server)
            .temperature(1.5)
            .complete(&prompt(), &specs())
            .await
            .unwrap_err(),
        openai(&server)
            .stop(["a", "b", "c", "d", "e"])
            .complete(&prompt(), &specs())
            .await
            .unwrap_err(),
        openai(&server)
            .complete(
                &[Message::User {
                    content: " \n".into(),
                }],
                &specs(),
            )
            .await
            .unwrap_err(),
    ];
    for error in refused {
        assert!(matches!(error, ProviderError::Unsendable { .. }), "{error}");
    }
    assert!(server.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn a_stream_that_is_not_a_whole_turn_gives_no_call() {
    let open_call = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"clock\",\"input\":{}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"folder\\\":\\\"/home\"}}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":3}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let text_into_call = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"clock\",\"input\":{}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
    );
    let object_then_text = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"clock\",\"arguments\":{}}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"a\\\":1}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
    );
    let renamed = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"clock\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"notes_write\",\"arguments\":\"{}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
    );
    let only_done = "data: [DONE]\n\n";
    let mut cut_by_length = chat_answer();
    cut_by_length["choices"][0]["finish_reason"] = json!("length");
    let mut filtered = chat_answer();
    filtered["choices"][0]["finish_reason"] = json!("content_filter");
    let mut max_tokens = messages_answer();
    max_tokens["stop_reason"] = json!("max_tokens");
    let script = json!([
        {"status": 200, "raw": open_call},
        {"status": 200, "raw": text_into_call},
        {"status": 200, "raw": object_then_text},
        {"status": 200, "raw": renamed},
        {"status": 200, "raw": only_done},
        step(&cut_by_length, json!({})),
        step(&filtered, json!({})),
        step(&max_tokens, json!({})),
    ]);
    let server = Server::start(script, &[]).await;
    let anthropic = anthropic(&server).stream(true).retry(RetryPolicy::none());
    let openai = openai(&server).stream(true).retry(RetryPolicy::none());
    for expected in ["never closed", "cannot take"] {
        let error = anthropic.complete(&prompt(), &specs()).await.unwrap_err();
        assert!(
            matches!(&error, ProviderError::Malformed { reason, .. } if reason.contains(expected)),
            "{error}"
        );
    }
    for expected in ["both as text and as an object", "renamed", "finish_reason"] {
        let error = openai.complete(&prompt(), &specs()).await.unwrap_err();
        assert!(
            matches!(&error, ProviderError::Malformed { reason, .. } if reason.contains(expected)),
            "{error}"
        );
    }
    let error = openai.complete(&prompt(), &specs()).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::OutputLimit { .. }),
        "{error}"
    );
    let error = openai.complete(&prompt(), &specs()).await.unwrap_err();
    assert!(matches!(error, ProviderError::Declined { .. }), "{error}");
    let error = anthropic.complete(&prompt(), &specs()).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::OutputLimit { .. }),
        "{error}"
    );
    assert_eq!(server.requests().len(), 8, "nothing was sent again");
}

#[tokio::test]
async fn a_stream_past_the_overall_limit_names_its_request() {
    let script = json!([{
        "status": 200, "body": chat_answer(),
        "stream": {"fragment": 1, "gap_ms": 40},
        "headers": {"x-request-id": "req_slow"}
    }]);
    let server = Server::start(script, &[]).await;
    let error = openai(&server)
        .stream(true)
        .overall_limit(Duration::from_millis(300))
        .complete(&prompt(), &specs())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("overall limit"), "{error}");
    assert_eq!(error.request_id(), Some("req_slow"));
}

#[tokio::test]
async fn call_ids_are_sent_once_per_request_however_the_model_wrote_them() {
    use toolgate::run::ToolCall;
    let long = "x".repeat(41);
    // What the 40-character form of `long` is: the first 23 characters, `_`
    // and a hash — written here by a model that guessed it.
    let chat = json!({"status": 200, "body": chat_answer()});
    let server = Server::start(json!([chat, chat]), &[]).await;
    let model = openai(&server);
    let first = model.request_body(
        &[
            Message::User {
                content: "q".into(),
            },
            Message::Assistant {
                content: None,
                calls: vec![ToolCall {
                    id: long.clone(),
                    name: "clock".into(),
                    arguments: json!({}),
                }],
                usage: None,
            },
        ],
        &specs(),
    );
    let sent: Value = serde_json::from_slice(&first.unwrap()).unwrap();
    let fitted = sent["messages"][1]["tool_calls"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(fitted.chars().count(), 40);
    let result = |id: &str| Message::Tool {
        call_id: id.into(),
        name: "clock".into(),
        content: "now".into(),
        is_error: false,
        rich: None,
    };
    let transcript = vec![
        Message::User {
            content: "q".into(),
        },
        Message::Assistant {
            content: None,
            calls: vec![
                ToolCall {
                    id: long.clone(),
                    name: "clock".into(),
                    arguments: json!({}),
                },
                ToolCall {
                    id: fitted.clone(),
                    name: "clock".into(),
                    arguments: json!({}),
                },
            ],
            usage: None,
        },
        result(&long),
        result(&fitted),
        // A later turn reusing an id: sent under another.
        Message::Assistant {
            content: None,
            calls: vec![ToolCall {
                id: fitted.clone(),
                name: "clock".into(),
                arguments: json!({}),
            }],
            usage: None,
        },
        result(&fitted),
    ];
    model.complete(&transcript, &specs()).await.unwrap();
    let body = &server.valid(0)["body"];
    let ids: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().all(|id| id.chars().count() <= 40));
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), 3, "{ids:?}");
}
