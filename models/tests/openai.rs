//! The Chat Completions client against a separate server process that
//! speaks the protocol, checks each request against its documented schema
//! and logs it: the request field by field, the answer as the run takes
//! it, and every failure a provider or the network gives.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::needless_pass_by_value
)]

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{KEY, Server};
use toolgate::run::{Arguments, Message, ProposedCall, ToolCall, ToolSpec, Usage};
use toolgate_models::openai::{CallIds, TokenLimit};
use toolgate_models::{ApiKey, OpenAi, ProviderError, RetryPolicy};

const MODEL: &str = "gpt-4.1-mini";

fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "notes_read_note".into(),
            local_name: "notes.read_note".into(),
            description: "Reads a note.".into(),
            parameters: json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}),
        },
        ToolSpec {
            name: "write_note".into(),
            local_name: "write_note".into(),
            description: "Writes a note.".into(),
            parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        },
    ]
}

/// A transcript with every kind of message: instructions, the user, a
/// turn of two calls, a result, a failed call and a person's denial.
fn transcript() -> Vec<Message> {
    vec![
        Message::System {
            content: "You keep notes.".into(),
        },
        Message::User {
            content: "Read note 7, then write it down twice.".into(),
        },
        Message::Assistant {
            content: Some("Reading it.".into()),
            calls: vec![
                ToolCall {
                    id: "call_1".into(),
                    name: "notes.read_note".into(),
                    arguments: json!({"id": 7}),
                },
                ToolCall {
                    id: "call_2".into(),
                    name: "made.up".into(),
                    arguments: json!({}),
                },
            ],
            usage: None,
        },
        Message::Tool {
            call_id: "call_1".into(),
            name: "notes.read_note".into(),
            content: "buy milk".into(),
            is_error: false,
            rich: None,
        },
        Message::Tool {
            call_id: "call_2".into(),
            name: "made.up".into(),
            content: "unknown tool `made.up`; the call was not executed".into(),
            is_error: true,
            rich: None,
        },
        Message::Assistant {
            content: None,
            calls: vec![ToolCall {
                id: "call_3".into(),
                name: "write_note".into(),
                arguments: json!({"text": "buy milk"}),
            }],
            usage: None,
        },
        Message::Tool {
            call_id: "call_3".into(),
            name: "write_note".into(),
            content: "bob denied this call: not twice".into(),
            is_error: true,
            rich: None,
        },
    ]
}

fn ok(body: Value) -> Value {
    json!({"status": 200, "body": body})
}

/// An answer of the protocol: the message, its finish reason and usage.
fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1_699_896_916,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99,
                  "prompt_tokens_details": {"cached_tokens": 64},
                  "completion_tokens_details": {"reasoning_tokens": 0}}
    })
}

fn parallel_calls() -> Value {
    completion(
        json!({"role": "assistant", "content": "Writing both.", "tool_calls": [
            {"id": "call_abc", "type": "function", "function": {"name": "write_note", "arguments": "{\"text\": \"one\"}"}},
            {"id": "call_def", "type": "function", "function": {"name": "notes_read_note", "arguments": "{\"id\": 8}"}}
        ]}),
        "tool_calls",
    )
}

fn final_answer(text: &str) -> Value {
    completion(json!({"role": "assistant", "content": text}), "stop")
}

fn client(server: &Server) -> OpenAi {
    OpenAi::new(&format!("{}/v1", server.base), MODEL)
        .unwrap()
        .key(ApiKey::new(KEY).unwrap())
        .retry(RetryPolicy {
            base_delay: Duration::from_millis(20),
            ..RetryPolicy::default()
        })
}

#[tokio::test]
async fn the_request_is_the_protocols_field_by_field() {
    let server = Server::start(json!([ok(parallel_calls())]), &[MODEL]).await;
    let model = client(&server);
    let answer = model.complete(&transcript(), &specs()).await.unwrap();
    let request = server.valid(0);
    assert_eq!(request["path"], "/v1/chat/completions");
    assert_eq!(request["headers"]["authorization"], format!("Bearer {KEY}"));
    assert_eq!(request["headers"]["content-type"], "application/json");
    let body = &request["body"];
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["max_tokens"], 4096, "a server other than OpenAI's");
    assert_eq!(body.get("max_completion_tokens"), None);
    assert_eq!(
        body["tools"],
        json!([
            {"type": "function", "function": {"name": "notes_read_note", "description": "Reads a note.",
              "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}},
            {"type": "function", "function": {"name": "write_note", "description": "Writes a note.",
              "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}
        ])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You keep notes."},
            {"role": "user", "content": "Read note 7, then write it down twice."},
            {"role": "assistant", "content": "Reading it.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "notes_read_note", "arguments": "{\"id\":7}"}},
                {"id": "call_2", "type": "function", "function": {"name": "made_up", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "buy milk"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: unknown tool `made.up`; the call was not executed"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_3", "type": "function", "function": {"name": "write_note", "arguments": "{\"text\":\"buy milk\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_3", "content": "Error: bob denied this call: not twice"}
        ]),
        "wire names out, the model's ids, errors and denials marked"
    );
    assert_eq!(answer.content.as_deref(), Some("Writing both."));
    assert_eq!(
        answer.calls,
        [
            ProposedCall {
                id: Some("call_abc".into()),
                name: "write_note".into(),
                arguments: Arguments::Json(json!({"text": "one"})),
            },
            ProposedCall {
                id: Some("call_def".into()),
                name: "notes_read_note".into(),
                arguments: Arguments::Json(json!({"id": 8})),
            },
        ]
    );
    assert_eq!(
        answer.usage,
        Some(Usage {
            input_tokens: 82,
            cached_input_tokens: 64,
            cache_write_input_tokens: 0,
            output_tokens: 17,
            reasoning_tokens: 0,
        })
    );
}

#[tokio::test]
async fn openai_hosts_get_max_completion_tokens_and_a_final_answer_is_text() {
    let server = Server::start(json!([ok(final_answer("All done."))]), &[MODEL]).await;
    let model = client(&server)
        .token_limit(TokenLimit::MaxCompletionTokens)
        .max_output_tokens(512)
        .temperature(0.2);
    let answer = model.complete(&transcript()[..2], &[]).await.unwrap();
    assert_eq!(answer.content.as_deref(), Some("All done."));
    assert!(answer.calls.is_empty());
    let body = server.valid(0)["body"].clone();
    assert_eq!(body["max_completion_tokens"], 512);
    assert_eq!(body.get("max_tokens"), None);
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body.get("tools"), None, "no empty tool list is sent");
    assert_eq!(
        OpenAi::new("https://api.openai.com/v1", MODEL)
            .unwrap()
            .url(),
        "https://api.openai.com/v1/chat/completions"
    );
}

/// What a model writes is handed on as it came: arguments that do not
/// parse, arguments as an object, a call without an id — given an id of
/// the client's own unless the client is told ids are required.
#[tokio::test]
async fn calls_are_handed_on_as_the_model_wrote_them() {
    let garbled = completion(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "write_note", "arguments": "{\"text\": \"unterminated"}},
            {"type": "function", "function": {"name": "write_note", "arguments": {"text": "as an object"}}},
            {"id": "", "type": "function", "function": {"name": "notes_read_note", "arguments": ""}}
        ]}),
        "tool_calls",
    );
    let server = Server::start(json!([ok(garbled.clone()), ok(garbled)]), &[MODEL]).await;
    let answer = client(&server)
        .complete(&transcript()[..2], &specs())
        .await
        .unwrap();
    assert!(matches!(
        &answer.calls[0].arguments,
        Arguments::Unparsed { text, error } if text == "{\"text\": \"unterminated" && error.starts_with("EOF while parsing")
    ));
    assert_eq!(answer.calls[1].id.as_deref(), Some("call_2_1"), "assigned");
    assert_eq!(
        answer.calls[1].arguments,
        Arguments::Json(json!({"text": "as an object"}))
    );
    assert_eq!(answer.calls[2].id.as_deref(), Some("call_2_2"));
    assert_eq!(answer.calls[2].arguments, Arguments::Json(json!({})));
    let strict = client(&server).call_ids(CallIds::Required);
    let answer = strict.complete(&transcript()[..2], &specs()).await.unwrap();
    assert_eq!(answer.calls[1].id, None);
    assert_eq!(answer.calls[2].id, None);
}

#[tokio::test]
async fn a_429_is_retried_after_the_wait_it_asks_for() {
    let limited = json!({"error": {"message": "Rate limit reached for gpt-4.1-mini", "type": "requests", "code": "rate_limit_exceeded"}});
    let server = Server::start(
        json!([
            {"status": 429, "body": limited, "headers": {"retry-after": "1"}},
            {"status": 429, "body": limited},
            ok(final_answer("after the waits")),
        ]),
        &[MODEL],
    )
    .await;
    let started = Instant::now();
    let answer = client(&server)
        .complete(&transcript()[..2], &[])
        .await
        .unwrap();
    assert_eq!(answer.content.as_deref(), Some("after the waits"));
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the one-second Retry-After was waited"
    );
    assert_eq!(server.requests().len(), 3);
    // Each attempt sent the same request.
    let requests = server.requests();
    assert_eq!(requests[0]["body"], requests[2]["body"]);
}

#[tokio::test]
async fn a_500_then_a_cut_body_then_success() {
    let server = Server::start(
        json!([
            {"status": 500, "body": {"error": {"message": "The server had an error", "type": "server_error"}}},
            {"status": 200, "truncate": final_answer("cut")},
            {"reset": true},
            ok(final_answer("whole")),
        ]),
        &[MODEL],
    )
    .await;
    let answer = client(&server)
        .complete(&transcript()[..2], &[])
        .await
        .unwrap();
    assert_eq!(answer.content.as_deref(), Some("whole"));
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn retries_are_bounded_in_count() {
    let busy = json!({"status": 503, "body": {"error": {"message": "overloaded", "type": "server_error"}}});
    let server = Server::start(json!([busy, busy, busy, busy, busy]), &[MODEL]).await;
    let model = client(&server).retry(RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(10),
        ..RetryPolicy::default()
    });
    let error = model.complete(&transcript()[..2], &[]).await.unwrap_err();
    assert!(
        matches!(
            error,
            ProviderError::Unavailable {
                status: 503,
                attempts: 3,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .starts_with("the OpenAI-compatible server answered 503 on each of 3 attempts over "),
        "{error}"
    );
    assert!(
        error.to_string().ends_with("; it said: overloaded"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_wait_past_the_time_bound_is_not_taken() {
    let limited = json!({"status": 429, "body": {"error": {"message": "slow down"}}, "headers": {"retry-after": "30"}});
    let server = Server::start(json!([limited, ok(final_answer("never"))]), &[MODEL]).await;
    let model = client(&server).retry(RetryPolicy {
        max_elapsed: Duration::from_secs(5),
        ..RetryPolicy::default()
    });
    let started = Instant::now();
    let error = model.complete(&transcript()[..2], &[]).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the 30 s wait was not taken"
    );
    assert!(
        error
            .to_string()
            .contains("it asks to wait 30.0 s before the next"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_wrong_key_model_or_url_says_which() {
    let server = Server::start(json!([]), &[MODEL]).await;
    let wrong_key = OpenAi::new(&format!("{}/v1", server.base), MODEL)
        .unwrap()
        .key(ApiKey::new("sk-wrong-key-0000000000").unwrap());
    let error = wrong_key
        .complete(&transcript()[..2], &[])
        .await
        .unwrap_err();
    assert!(matches!(error, ProviderError::WrongKey { .. }), "{error:?}");
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains("sk-wrong-key-0000000000"), "{shown}");
    assert!(shown.contains("401 Unauthorized"), "{shown}");

    let wrong_model = OpenAi::new(&format!("{}/v1", server.base), "gpt-nothing")
        .unwrap()
        .key(ApiKey::new(KEY).unwrap());
    let error = wrong_model
        .complete(&transcript()[..2], &[])
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ProviderError::WrongModel { model, .. } if model == "gpt-nothing"),
        "{error:?}"
    );

    let wrong_url = OpenAi::new(&format!("{}/api", server.base), MODEL)
        .unwrap()
        .key(ApiKey::new(KEY).unwrap());
    let error = wrong_url
        .complete(&transcript()[..2], &[])
        .await
        .unwrap_err();
    assert!(matches!(error, ProviderError::WrongUrl { .. }), "{error:?}");
    assert!(
        error.to_string().contains("/api/chat/completions"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 3, "none of them retried");
}

#[tokio::test]
async fn a_malformed_a_hung_or_an_oversized_answer_is_an_error() {
    let server = Server::start(
        json!([
            {"status": 200, "raw": "{\"choices\": [ {\"message\": "},
            {"status": 200, "body": {"object": "chat.completion", "choices": []}},
            {"hang_ms": 3000},
            ok(final_answer(&"x".repeat(5000))),
        ]),
        &[MODEL],
    )
    .await;
    let model = client(&server).retry(RetryPolicy::none());
    let error = model.complete(&transcript()[..2], &[]).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::Malformed { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().starts_with(
            "the OpenAI-compatible server's answer is not a Chat Completions response: EOF"
        ),
        "{error}"
    );
    let error = model.complete(&transcript()[..2], &[]).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the OpenAI-compatible server's answer is not a Chat Completions response: `choices` is empty"
    );
    let started = Instant::now();
    let error = model
        .clone()
        .deadline(Duration::from_millis(300))
        .complete(&transcript()[..2], &[])
        .await
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::Deadline { attempts: 1, .. }),
        "{error:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the deadline cut the wait"
    );
    let error = model
        .clone()
        .max_response_bytes(1024)
        .complete(&transcript()[..2], &[])
        .await
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::TooLarge { limit: 1024, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_answer_cut_at_the_output_limit_is_an_error_not_a_final_answer() {
    let server = Server::start(
        json!([ok(completion(
            json!({"role": "assistant", "content": "The answer is"}),
            "length"
        ))]),
        &[MODEL],
    )
    .await;
    let error = client(&server)
        .max_output_tokens(3)
        .complete(&transcript()[..2], &[])
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the OpenAI-compatible server's answer was cut at the output limit of 3 tokens before it ended; raise `max_output_tokens` or ask for less"
    );
}

#[tokio::test]
async fn a_403_and_a_body_cut_on_every_attempt_say_so() {
    let cut = json!({"status": 200, "truncate": final_answer("cut")});
    let server = Server::start(
        json!([
            {"status": 403, "body": {"error": {"message": "Project does not have access to model gpt-4.1-mini", "type": "invalid_request_error", "code": "model_not_found"}}},
            cut, cut,
        ]),
        &[MODEL],
    )
    .await;
    let model = client(&server).retry(RetryPolicy {
        max_attempts: 2,
        base_delay: Duration::from_millis(10),
        ..RetryPolicy::default()
    });
    let error = model.complete(&transcript()[..2], &[]).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::Forbidden { .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "the OpenAI-compatible server refused the request (403 Forbidden): the key is valid but may not use this model or endpoint — check the key's project, permissions or region; it said: Project does not have access to model gpt-4.1-mini"
    );
    let error = model.complete(&transcript()[..2], &[]).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::Connection { attempts: 2, .. }),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("failed or was cut (2 attempts): "),
        "{error}"
    );
    assert_eq!(server.requests().len(), 3);
}

/// What a server writes is repeated in errors without the key, however it
/// quotes it: URL-encoded in a 401, as a value where the protocol wants
/// another type.
#[tokio::test]
async fn the_key_is_removed_from_whatever_the_server_writes() {
    let key = "sk-proj-AbC123+xYz/789=QwErTy-SeCrEt_42";
    let server = Server::start_keyed(
        json!([
            {"status": 400, "body": {"error": {"message": "Bad key sk-proj-AbC123%2BxYz%2F789%3DQwErTy-SeCrEt_42 in the header", "type": "invalid_request_error"}}},
            {"status": 200, "body": {"choices": key}},
            {"status": 200, "body": {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                                     "usage": {"prompt_tokens": -3, "completion_tokens": 1.5}}},
        ]),
        &[],
        key,
    )
    .await;
    let model = OpenAi::new(&format!("{}/v1", server.base), MODEL)
        .unwrap()
        .key(ApiKey::new(key).unwrap())
        .retry(RetryPolicy::none());
    for _ in 0..2 {
        let error = model.complete(&transcript()[..2], &[]).await.unwrap_err();
        let shown = format!("{error} {error:?}");
        assert!(
            !shown.contains("AbC123") && !shown.contains("SeCrEt"),
            "{shown}"
        );
        assert!(shown.contains("[redacted key]"), "{shown}");
    }
    // A usage that is not counts costs the usage, never the answer.
    let answer = model.complete(&transcript()[..2], &[]).await.unwrap();
    assert_eq!(answer.content.as_deref(), Some("ok"));
    assert_eq!(answer.usage, Some(Usage::default()));
}

/// A 404 is about the model only when the server says so; a redirect is
/// named as one, with where it points.
#[tokio::test]
async fn a_404_is_about_the_model_only_when_it_says_so_and_redirects_are_named() {
    let server = Server::start(
        json!([
            {"status": 404, "body": {"object": "error", "message": "The model `llama3` does not exist.", "type": "NotFoundError", "param": null, "code": 404}},
            {"status": 404, "body": {"error": "Model llama3 not found"}},
            {"status": 307, "body": {}, "headers": {"location": "https://elsewhere.example/v1/chat/completions"}},
        ]),
        &[],
    )
    .await;
    let model = OpenAi::new(&format!("{}/v1", server.base), "llama3")
        .unwrap()
        .key(ApiKey::new(KEY).unwrap())
        .retry(RetryPolicy::none());
    for _ in 0..2 {
        let error = model.complete(&transcript()[..2], &[]).await.unwrap_err();
        assert!(
            matches!(error, ProviderError::WrongModel { .. }),
            "{error:?}"
        );
    }
    let error = model.complete(&transcript()[..2], &[]).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::Redirected { status: 307, .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().ends_with("redirecting to `https://elsewhere.example/v1/chat/completions`: give the URL it redirects to as the base URL"),
        "{error}"
    );
    // The model's name in an echoed URL is not a missing model.
    let deployment = OpenAi::at_url(
        &format!("{}/openai/deployments/gpt-4o/chat/completion", server.base),
        "gpt-4o",
    )
    .unwrap()
    .key(ApiKey::new(KEY).unwrap());
    let error = deployment
        .complete(&transcript()[..2], &[])
        .await
        .unwrap_err();
    assert!(matches!(error, ProviderError::WrongUrl { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("the base URL is the part before `/chat/completions`"),
        "{error}"
    );
}

/// A tool with no arguments, and an imported schema that is a bare object
/// or names no type, go out as object schemas with `properties`: OpenAI
/// refuses one without (`invalid_function_parameters`), and the protocol
/// server checks it. An error result that said nothing is sent with a text.
#[tokio::test]
async fn every_schema_goes_out_as_an_object_with_properties() {
    let server = Server::start(json!([ok(final_answer("It is noon."))]), &[MODEL]).await;
    let schemas = [
        json!({"type": "object"}),
        json!({}),
        json!({"type": ["object", "null"], "properties": {"tz": {"type": "string"}}}),
        json!({"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}),
    ];
    let tools: Vec<ToolSpec> = schemas
        .iter()
        .enumerate()
        .map(|(i, schema)| ToolSpec {
            name: format!("clock_{i}"),
            local_name: format!("clock_{i}"),
            description: "Tells the time.".into(),
            parameters: schema.clone(),
        })
        .collect();
    let mut history = transcript();
    if let Some(Message::Tool {
        content, is_error, ..
    }) = history
        .iter_mut()
        .rev()
        .find(|m| matches!(m, Message::Tool { .. }))
    {
        content.clear();
        *is_error = true;
    }
    client(&server).complete(&history, &tools).await.unwrap();
    let body = &server.valid(0)["body"];
    let sent: Vec<&Value> = (0..4)
        .map(|i| &body["tools"][i]["function"]["parameters"])
        .collect();
    assert_eq!(*sent[0], json!({"type": "object", "properties": {}}));
    assert_eq!(*sent[1], json!({"type": "object", "properties": {}}));
    assert_eq!(
        *sent[2],
        json!({"type": "object", "properties": {"tz": {"type": "string"}}})
    );
    assert_eq!(*sent[3], schemas[3], "a schema that fits is sent as it is");
    let results: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(
        results.last().unwrap()["content"],
        "Error: the call failed without saying why"
    );
}

/// No blunt endings: "the model called tools" with no call is a malformed
/// answer, not an empty final one, and a legacy `function_call` is refused
/// by name rather than dropped.
#[test]
fn an_ending_that_says_calls_without_calls_and_a_legacy_call_are_errors() {
    let model = OpenAi::new("http://127.0.0.1:9/v1", MODEL).unwrap();
    let empty = completion(json!({"role": "assistant", "content": null}), "tool_calls");
    let error = model
        .read_response(empty.to_string().as_bytes(), 2)
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::Malformed { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("holds no `tool_calls`"),
        "{error}"
    );

    let legacy = completion(
        json!({"role": "assistant", "content": null,
               "function_call": {"name": "write_note", "arguments": "{\"text\": \"x\"}"}}),
        "function_call",
    );
    let error = model
        .read_response(legacy.to_string().as_bytes(), 2)
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::Unsupported { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("legacy `function_call`"),
        "{error}"
    );

    let null_legacy = completion(
        json!({"role": "assistant", "content": "Hello.", "function_call": null}),
        "stop",
    );
    let read = model
        .read_response(null_legacy.to_string().as_bytes(), 2)
        .unwrap();
    assert_eq!(read.content.as_deref(), Some("Hello."));
}
