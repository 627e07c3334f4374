//! The server as its users see it: a child process spoken to over raw HTTP/1.1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{KEY, Server};

/// A Chat Completions answer, as a script would give it.
fn completion() -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-test",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Sunny."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    })
}

/// A Messages answer, as a script would give it.
fn message() -> Value {
    json!({
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "Sunny."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 2}
    })
}

/// A valid Chat Completions request with a whole tool round.
fn openai_request() -> Value {
    json!({
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sun"}
        ],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}}],
        "max_completion_tokens": 100
    })
}

/// A valid Messages request with a whole tool round.
fn anthropic_request() -> Value {
    json!({
        "model": "claude-test",
        "max_tokens": 100,
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sun"}
            ]}
        ],
        "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}]
    })
}

#[tokio::test]
async fn a_valid_openai_request_gets_the_scripted_body_and_is_logged() {
    let server = Server::with_key(
        &json!([{"status": 200, "body": completion(), "expect": "openai"}]),
        &["gpt-test"],
    )
    .await;
    let request = openai_request();
    let reply = server.openai(&request).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.json(), completion());

    let log = server.log_lines();
    assert_eq!(log.len(), 1);
    let line = &log[0];
    assert_eq!(line["n"], 0);
    assert_eq!(line["method"], "POST");
    assert_eq!(line["path"], "/v1/chat/completions");
    assert_eq!(line["protocol"], "openai");
    assert_eq!(line["headers"]["authorization"], format!("Bearer {KEY}"));
    assert_eq!(line["headers"]["content-type"], "application/json");
    assert_eq!(line["body"], request);
    assert_eq!(line["raw_len"], request.to_string().len());
    assert_eq!(line["problems"], json!([]));
    assert_eq!(line["step"], 0);
    assert_eq!(line["answered"], 200);
}

#[tokio::test]
async fn a_valid_anthropic_request_gets_the_scripted_body() {
    let server = Server::with_key(
        &json!([{"status": 200, "body": message(), "expect": "anthropic"}]),
        &["claude-test"],
    )
    .await;
    let reply = server.anthropic(&anthropic_request()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json(), message());
    let line = &server.log_lines()[0];
    assert_eq!(line["protocol"], "anthropic");
    assert_eq!(line["headers"]["x-api-key"], KEY);
    assert_eq!(line["headers"]["anthropic-version"], "2023-06-01");
    assert_eq!(line["answered"], 200);
}

#[tokio::test]
async fn openai_base_urls_with_or_without_v1_reach_the_same_endpoint() {
    let steps: Vec<Value> = (0..2)
        .map(|_| json!({"status": 200, "body": completion()}))
        .collect();
    let server = Server::start(&Value::Array(steps), &[]).await;
    for path in ["/chat/completions", "/openai/v1/chat/completions"] {
        let headers = [("Content-Type", "application/json")];
        let reply = server
            .post(path, &headers, &openai_request().to_string())
            .await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
    }
    let protocols: Vec<Value> = server
        .log_lines()
        .iter()
        .map(|line| line["protocol"].clone())
        .collect();
    assert_eq!(protocols, vec![json!("openai"), json!("openai")]);
}

#[tokio::test]
async fn a_wrong_or_missing_key_is_401_and_uses_no_step() {
    let server = Server::with_key(
        &json!([{"status": 200, "body": completion()}, {"status": 200, "body": message()}]),
        &[],
    )
    .await;
    let wrong = "sk-wrong-key-0000wxyz";
    let reply = server
        .post(
            "/v1/chat/completions",
            &[
                ("Content-Type", "application/json"),
                ("Authorization", &format!("Bearer {wrong}")),
            ],
            &openai_request().to_string(),
        )
        .await;
    assert_eq!(reply.status, 401);
    let body = reply.json();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(body["error"]["code"], "invalid_api_key");
    assert_eq!(body["error"]["param"], Value::Null);
    let text = body["error"]["message"].as_str().unwrap();
    assert!(
        text.starts_with("Incorrect API key provided: sk-...wxyz"),
        "{text}"
    );
    assert!(!text.contains(wrong), "the key is echoed: {text}");

    let reply = server
        .post(
            "/v1/messages",
            &[
                ("Content-Type", "application/json"),
                ("anthropic-version", "2023-06-01"),
            ],
            &anthropic_request().to_string(),
        )
        .await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.json()["type"], "error");
    assert_eq!(reply.json()["error"]["type"], "authentication_error");

    let reply = server
        .post(
            "/v1/messages",
            &[
                ("Content-Type", "application/json"),
                ("anthropic-version", "2023-06-01"),
                ("x-api-key", "nope"),
            ],
            &anthropic_request().to_string(),
        )
        .await;
    assert_eq!(
        reply.json(),
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    );

    // The steps are still there, in order.
    assert_eq!(server.openai(&openai_request()).await.json(), completion());
    assert_eq!(
        server.anthropic(&anthropic_request()).await.json(),
        message()
    );
    let answered: Vec<Value> = server
        .log_lines()
        .iter()
        .map(|line| json!([line["n"], line["answered"], line["step"]]))
        .collect();
    assert_eq!(
        answered,
        vec![
            json!([0, 401, null]),
            json!([1, 401, null]),
            json!([2, 401, null]),
            json!([3, 200, 0]),
            json!([4, 200, 1])
        ]
    );
}

#[tokio::test]
async fn an_unknown_model_is_404_in_each_protocols_shape() {
    let server = Server::with_key(&json!([]), &["gpt-test", "claude-test"]).await;
    let mut request = openai_request();
    request["model"] = json!("gpt-nope");
    let reply = server.openai(&request).await;
    assert_eq!(reply.status, 404);
    assert_eq!(
        reply.json(),
        json!({"error": {
            "message": "The model `gpt-nope` does not exist or you do not have access to it.",
            "type": "invalid_request_error",
            "param": null,
            "code": "model_not_found"
        }})
    );
    let mut request = anthropic_request();
    request["model"] = json!("claude-nope");
    let reply = server.anthropic(&request).await;
    assert_eq!(reply.status, 404);
    assert_eq!(
        reply.json(),
        json!({"type": "error", "error": {"type": "not_found_error", "message": "model: claude-nope"}})
    );
}

#[tokio::test]
async fn openai_arguments_that_are_not_a_string_are_400_and_use_no_step() {
    let server = Server::start(&json!([{"status": 200, "body": completion()}]), &[]).await;
    let mut request = openai_request();
    request["messages"][2]["tool_calls"][0]["function"]["arguments"] = json!({"city": "Paris"});
    let reply = server.openai(&request).await;
    assert_eq!(reply.status, 400);
    let body = reply.json();
    let problem = "messages[2].tool_calls[0].function.arguments: must be a string (JSON text of an object), got object";
    assert_eq!(body["error"]["message"], problem);
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(
        body["error"]["param"],
        "messages[2].tool_calls[0].function.arguments"
    );
    assert_eq!(body["error"]["code"], Value::Null);
    let line = &server.log_lines()[0];
    assert_eq!(line["problems"], json!([problem]));
    assert_eq!(line["answered"], 400);
    assert_eq!(line["step"], Value::Null);

    assert_eq!(server.openai(&openai_request()).await.status, 200);
}

#[tokio::test]
async fn openai_tool_messages_must_answer_the_calls_before_them() {
    let server = Server::start(&json!([]), &[]).await;
    let mut request = openai_request();
    let messages = request["messages"].as_array_mut().unwrap();
    messages[3]["tool_call_id"] = json!("call_9");
    messages.push(json!({"role": "user", "content": "and?"}));
    let reply = server.openai(&request).await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        server.log_lines()[0]["problems"],
        json!([
            "messages[3].tool_call_id: `call_9` is not the id of a tool call of messages[2]",
            "messages[2].tool_calls[0]: tool call `call_1` is not answered by a tool message before the next non-tool message"
        ])
    );
}

#[tokio::test]
async fn anthropic_tool_result_without_its_tool_use_is_400() {
    let server = Server::start(&json!([]), &[]).await;
    let mut request = anthropic_request();
    request["messages"][2]["content"][0]["tool_use_id"] = json!("toolu_9");
    let reply = server.anthropic(&request).await;
    assert_eq!(reply.status, 400);
    let body = reply.json();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let problems = json!([
        "messages[1].content[0].id: tool_use `toolu_1` has no tool_result in messages[2]",
        "messages[2].content[0].tool_use_id: `toolu_9` is not the id of a tool_use in the previous message, messages[1]"
    ]);
    assert_eq!(server.log_lines()[0]["problems"], problems);
    assert_eq!(
        body["error"]["message"],
        format!(
            "{}; {}",
            problems[0].as_str().unwrap(),
            problems[1].as_str().unwrap()
        )
    );
}

#[tokio::test]
async fn anthropic_roles_must_alternate() {
    let server = Server::start(&json!([]), &[]).await;
    let request = json!({
        "model": "claude-test",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    });
    let reply = server.anthropic(&request).await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.json()["error"]["message"],
        "messages[1].role: roles must alternate, but messages[0] has role user too"
    );
}

#[tokio::test]
async fn anthropic_needs_its_version_header() {
    let server = Server::start(&json!([]), &[]).await;
    let reply = server
        .post(
            "/v1/messages",
            &[("Content-Type", "application/json")],
            &anthropic_request().to_string(),
        )
        .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        server.log_lines()[0]["problems"],
        json!(["header anthropic-version: required (for example 2023-06-01)"])
    );
}

#[tokio::test]
async fn bodies_must_be_json_sent_as_json() {
    let server = Server::start(&json!([]), &[]).await;
    let reply = server
        .post(
            "/v1/chat/completions",
            &[("Content-Type", "application/json")],
            "{\"model\": ",
        )
        .await;
    assert_eq!(reply.status, 400);
    let problem = reply.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(problem.starts_with("body: not valid JSON: "), "{problem}");

    let reply = server
        .post(
            "/v1/chat/completions",
            &[("Content-Type", "text/plain")],
            &openai_request().to_string(),
        )
        .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.json()["error"]["message"],
        "header content-type: must be application/json (got `text/plain`)"
    );
    let log = server.log_lines();
    assert_eq!(log[0]["body"], Value::Null);
    assert_eq!(log[0]["raw_len"], 10);
    assert_eq!(log[1]["body"], openai_request());
}

#[tokio::test]
async fn a_body_over_16_mib_is_413_without_being_read() {
    let server = Server::start(&json!([]), &[]).await;
    let request = format!(
        "POST /v1/messages HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        17 * 1024 * 1024
    );
    let reply = server.exchange(request.as_bytes()).await;
    assert_eq!(reply.status, 413);
    assert_eq!(reply.json()["error"]["type"], "request_too_large");
}

#[tokio::test]
async fn unknown_paths_are_404() {
    let server = Server::start(&json!([{"status": 200, "body": {}}]), &[]).await;
    let reply = server
        .post(
            "/v1/embeddings",
            &[("Content-Type", "application/json")],
            "{}",
        )
        .await;
    assert_eq!(reply.status, 404);
    assert_eq!(
        reply.json()["error"]["message"],
        "Invalid URL (POST /v1/embeddings)"
    );
    let line = &server.log_lines()[0];
    assert_eq!(line["protocol"], "other");
    assert_eq!(line["answered"], 404);
}

#[tokio::test]
async fn scripted_headers_are_sent() {
    let error = json!({"error": {"message": "Rate limit reached", "type": "requests", "param": null, "code": "rate_limit_exceeded"}});
    let server = Server::start(
        &json!([{"status": 429, "headers": {"retry-after": "1"}, "body": error}]),
        &[],
    )
    .await;
    let reply = server.openai(&openai_request()).await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert_eq!(reply.json(), error);
}

#[tokio::test]
async fn a_raw_step_sends_malformed_json_as_is() {
    let raw = "{\"id\": \"chatcmpl-1\", \"choices\": [";
    let server = Server::start(&json!([{"status": 200, "raw": raw}]), &[]).await;
    let reply = server.openai(&openai_request()).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.text(), raw);
}

#[tokio::test]
async fn a_truncate_step_sends_less_than_its_content_length() {
    let server = Server::start(&json!([{"status": 200, "truncate": completion()}]), &[]).await;
    // Without `Connection: close`: the server must close the connection itself.
    let body = openai_request().to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let reply = server.exchange(request.as_bytes()).await;
    let full = completion().to_string().len();
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.header("content-length"),
        Some(full.to_string().as_str())
    );
    assert_eq!(reply.body.len(), full / 2, "{}", reply.text());
    assert_eq!(reply.body, completion().to_string().as_bytes()[..full / 2]);
    assert_eq!(server.log_lines()[0]["answered"], 200);
}

#[tokio::test]
async fn a_reset_step_closes_the_connection_without_an_answer() {
    let server = Server::start(
        &json!([{"reset": true}, {"status": 200, "body": message()}]),
        &[],
    )
    .await;
    let reply = server.anthropic(&anthropic_request()).await;
    assert_eq!(reply.received, 0, "{reply:?}");
    assert!(
        matches!(
            reply.error,
            None | Some(std::io::ErrorKind::ConnectionReset)
        ),
        "{reply:?}"
    );
    assert_eq!(server.log_lines()[0]["answered"], "reset");
    // The server goes on with the next step.
    assert_eq!(server.anthropic(&anthropic_request()).await.status, 200);
}

#[tokio::test]
async fn an_exhausted_script_is_500() {
    let server = Server::start(&json!([{"status": 200, "body": completion()}]), &[]).await;
    assert_eq!(server.openai(&openai_request()).await.status, 200);
    let reply = server.openai(&openai_request()).await;
    assert_eq!(reply.status, 500);
    let text = reply.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("script exhausted"), "{text}");
    let reply = server.anthropic(&anthropic_request()).await;
    assert_eq!(reply.status, 500);
    assert_eq!(reply.json()["error"]["type"], "api_error");
    assert!(reply.text().contains("script exhausted"));
}

#[tokio::test]
async fn a_hang_step_answers_500_after_its_delay_and_is_logged_first() {
    let server = std::sync::Arc::new(Server::start(&json!([{"hang_ms": 300}]), &[]).await);
    let client = {
        let server = std::sync::Arc::clone(&server);
        tokio::spawn(async move { server.openai(&openai_request()).await })
    };
    let mut logged = Vec::new();
    for _ in 0..50 {
        logged = server.log_lines();
        if !logged.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(logged.len(), 1, "the hang is logged before the answer");
    assert_eq!(logged[0]["answered"], "hang");
    let reply = client.await.unwrap();
    assert!(
        reply.elapsed >= Duration::from_millis(300),
        "{:?}",
        reply.elapsed
    );
    assert_eq!(reply.status, 500);
}

#[tokio::test]
async fn a_step_expecting_the_other_protocol_is_400_and_used_up() {
    let server = Server::start(
        &json!([
            {"status": 200, "body": message(), "expect": "anthropic"},
            {"status": 200, "body": completion(), "expect": "openai"}
        ]),
        &[],
    )
    .await;
    let reply = server.openai(&openai_request()).await;
    assert_eq!(reply.status, 400);
    let line = &server.log_lines()[0];
    assert_eq!(line["step"], 0);
    assert_eq!(
        line["problems"],
        json!([
            "protocol: script step 0 expects the anthropic protocol, but the request came on the openai path"
        ])
    );
    assert_eq!(server.openai(&openai_request()).await.json(), completion());
}
