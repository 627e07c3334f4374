//! The Messages client against a separate server process that speaks the
//! protocol, checks each request against its documented schema (roles that
//! alternate, every `tool_use` answered by a `tool_result` in the next
//! message) and logs it.

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
use toolgate::run::{Arguments, Message, ProposedCall, ToolCall, ToolSpec, Usage};
use toolgate_models::{Anthropic, ApiKey, ProviderError, RetryPolicy};

const MODEL: &str = "claude-sonnet-4-5";

fn specs() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "notes_write_note".into(),
        local_name: "notes.write_note".into(),
        description: "Writes a note.".into(),
        parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    }]
}

fn transcript() -> Vec<Message> {
    vec![
        Message::System {
            content: "You keep notes.".into(),
        },
        Message::User {
            content: "Write two notes.".into(),
        },
        Message::Assistant {
            content: Some("Writing them.".into()),
            calls: vec![
                ToolCall {
                    id: "toolu_01".into(),
                    name: "notes.write_note".into(),
                    arguments: json!({"text": "one"}),
                },
                ToolCall {
                    id: "toolu_02".into(),
                    name: "notes.write_note".into(),
                    arguments: json!({"text": "two"}),
                },
            ],
            usage: None,
        },
        Message::Tool {
            call_id: "toolu_01".into(),
            name: "notes.write_note".into(),
            content: "wrote note 1".into(),
            is_error: false,
            rich: None,
        },
        Message::Tool {
            call_id: "toolu_02".into(),
            name: "notes.write_note".into(),
            content: "bob denied this call: one is enough".into(),
            is_error: true,
            rich: None,
        },
        Message::User {
            content: "Thanks; now say what you did.".into(),
        },
    ]
}

fn message(content: Value, stop_reason: &str) -> Value {
    json!({
        "status": 200,
        "body": {
            "id": "msg_01Aq9w938a90dw8q",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": null,
            "usage": {"input_tokens": 472, "output_tokens": 91, "cache_read_input_tokens": 128, "cache_creation_input_tokens": 0}
        }
    })
}

fn client(server: &Server) -> Anthropic {
    Anthropic::at(&server.base, MODEL)
        .unwrap()
        .key(ApiKey::new(KEY).unwrap())
        .retry(RetryPolicy {
            base_delay: Duration::from_millis(20),
            ..RetryPolicy::default()
        })
}

#[tokio::test]
async fn the_request_is_the_protocols_field_by_field() {
    let answer = message(
        json!([
            {"type": "text", "text": "I'll write one more."},
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "notes_write_note", "input": {"text": "three"}},
            {"type": "tool_use", "id": "toolu_01B", "name": "notes_write_note", "input": {"text": "four"}}
        ]),
        "tool_use",
    );
    let server = Server::start(json!([answer]), &[MODEL]).await;
    let got = client(&server)
        .complete(&transcript(), &specs())
        .await
        .unwrap();
    let request = server.valid(0);
    assert_eq!(request["path"], "/v1/messages");
    assert_eq!(request["headers"]["x-api-key"], KEY);
    assert_eq!(request["headers"]["anthropic-version"], "2023-06-01");
    assert_eq!(request["headers"].get("authorization"), None);
    let body = &request["body"];
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["system"], "You keep notes.");
    assert_eq!(
        body["tools"],
        json!([{"name": "notes_write_note", "description": "Writes a note.",
                "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Write two notes."}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Writing them."},
                {"type": "tool_use", "id": "toolu_01", "name": "notes_write_note", "input": {"text": "one"}},
                {"type": "tool_use", "id": "toolu_02", "name": "notes_write_note", "input": {"text": "two"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "wrote note 1"},
                {"type": "tool_result", "tool_use_id": "toolu_02", "content": "bob denied this call: one is enough", "is_error": true},
                {"type": "text", "text": "Thanks; now say what you did."}
            ]}
        ]),
        "results and the next user text in one user message, results first"
    );
    assert_eq!(got.content.as_deref(), Some("I'll write one more."));
    assert_eq!(
        got.calls,
        [
            ProposedCall {
                id: Some("toolu_01A09q90qw90lq917835lq9".into()),
                name: "notes_write_note".into(),
                arguments: Arguments::Json(json!({"text": "three"})),
            },
            ProposedCall {
                id: Some("toolu_01B".into()),
                name: "notes_write_note".into(),
                arguments: Arguments::Json(json!({"text": "four"})),
            },
        ]
    );
    assert_eq!(
        got.usage,
        Some(Usage {
            input_tokens: 600,
            cached_input_tokens: 128,
            cache_write_input_tokens: 0,
            output_tokens: 91,
            reasoning_tokens: 0,
        })
    );
}

#[tokio::test]
async fn a_final_answer_a_cut_answer_and_thinking() {
    let server = Server::start(
        json!([
            message(json!([{"type": "text", "text": "Done: one note written, one denied."}]), "end_turn"),
            message(json!([{"type": "text", "text": "The answer is"}]), "max_tokens"),
            message(json!([
                {"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
                {"type": "tool_use", "id": "toolu_03", "name": "notes_write_note", "input": {"text": "five"}}
            ]), "tool_use"),
            message(json!([{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}]), "end_turn"),
        ]),
        &[MODEL],
    )
    .await;
    let model = client(&server);
    let done = model.complete(&transcript(), &specs()).await.unwrap();
    assert_eq!(
        done.content.as_deref(),
        Some("Done: one note written, one denied.")
    );
    assert!(done.calls.is_empty());
    let cut = model.complete(&transcript(), &specs()).await.unwrap_err();
    assert!(
        matches!(cut, ProviderError::OutputLimit { limit: 4096, .. }),
        "{cut:?}"
    );
    let thinking = model.complete(&transcript(), &specs()).await.unwrap_err();
    assert_eq!(
        thinking.to_string(),
        "Anthropic's answer holds extended-thinking blocks, which toolgate's transcript does not carry: thinking must be sent back signed with each tool result; use the model without extended thinking"
    );
    let server_tool = model.complete(&transcript(), &specs()).await.unwrap_err();
    assert!(
        server_tool
            .to_string()
            .contains("a `server_tool_use` block"),
        "{server_tool}"
    );
    for n in 0..4 {
        server.valid(n);
    }
}

#[tokio::test]
async fn overloaded_is_retried_and_refusals_say_which() {
    let overloaded = json!({"status": 529, "body": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}});
    let server = Server::start(
        json!([
            overloaded,
            message(json!([{"type": "text", "text": "back"}]), "end_turn"),
        ]),
        &[MODEL],
    )
    .await;
    let answer = client(&server)
        .complete(&transcript(), &specs())
        .await
        .unwrap();
    assert_eq!(answer.content.as_deref(), Some("back"));
    assert_eq!(server.requests().len(), 2);

    let wrong_key = Anthropic::at(&server.base, MODEL)
        .unwrap()
        .key(ApiKey::new("sk-ant-wrong-000000").unwrap());
    let error = wrong_key
        .complete(&transcript(), &specs())
        .await
        .unwrap_err();
    assert!(matches!(error, ProviderError::WrongKey { .. }), "{error:?}");
    assert!(!format!("{error}{error:?}").contains("sk-ant-wrong-000000"));

    let no_key = Anthropic::at(&server.base, MODEL).unwrap();
    let error = no_key.complete(&transcript(), &specs()).await.unwrap_err();
    assert!(
        error.to_string().contains("x-api-key header is required"),
        "{error}"
    );

    let wrong_model = Anthropic::at(&server.base, "claude-nothing")
        .unwrap()
        .key(ApiKey::new(KEY).unwrap());
    let error = wrong_model
        .complete(&transcript(), &specs())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "Anthropic has no model `claude-nothing` (404 Not Found): check the model's name, or that the key may use it; it said: model: claude-nothing"
    );
}

/// The one rule the protocol adds: an assistant message's calls are all
/// answered in the next message. A refused turn's calls are answered too,
/// so the transcript after it is one the server takes.
#[tokio::test]
async fn a_transcript_after_a_refused_turn_is_valid() {
    let server = Server::start(
        json!([message(
            json!([{"type": "text", "text": "fixed"}]),
            "end_turn"
        )]),
        &[MODEL],
    )
    .await;
    let mut transcript = transcript();
    transcript.truncate(2);
    transcript.push(Message::Assistant {
        content: None,
        calls: vec![ToolCall {
            id: "toolgate_refused_1_0".into(),
            name: "no such tool!".into(),
            arguments: json!({}),
        }],
        usage: None,
    });
    transcript.push(Message::Tool {
        call_id: "toolgate_refused_1_0".into(),
        name: "no such tool!".into(),
        content: "This call could not be used: the call has no id".into(),
        is_error: true,
        rich: None,
    });
    client(&server)
        .complete(&transcript, &specs())
        .await
        .unwrap();
    let body = server.valid(0)["body"].clone();
    assert_eq!(body["messages"][1]["content"][0]["name"], "no_such_tool_");
}

/// Anthropic's advice for a wrong URL is its own, and a block type that is
/// the key is not repeated.
#[tokio::test]
async fn a_wrong_base_url_gets_the_protocols_advice_and_the_key_stays_out() {
    let server = Server::start(
        json!([message(json!([{"type": KEY, "text": "x"}]), "end_turn")]),
        &[],
    )
    .await;
    let doubled = Anthropic::at(&format!("{}/v1", server.base), MODEL)
        .unwrap()
        .key(ApiKey::new(KEY).unwrap());
    let error = doubled.complete(&transcript(), &specs()).await.unwrap_err();
    assert!(matches!(error, ProviderError::WrongUrl { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("/v1/v1/messages`: the URL is wrong (the base URL is the part before `/v1/messages`, without `/v1`)"),
        "{error}"
    );
    let error = client(&server)
        .complete(&transcript(), &specs())
        .await
        .unwrap_err();
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(&KEY[5..]), "{shown}");
}

/// The four requests the Messages API refused: each is now one it takes,
/// checked by the protocol server, or refused here before anything is sent.
#[tokio::test]
async fn requests_the_api_refused_are_now_taken_or_refused_here() {
    let done = || message(json!([{"type": "text", "text": "Done."}]), "end_turn");
    let server = Server::start(json!([done(), done(), done()]), &[MODEL]).await;
    let model = client(&server);

    // An error result that said nothing is sent with a text.
    let mut silent = transcript();
    silent[4] = Message::Tool {
        call_id: "toolu_02".into(),
        name: "notes.write_note".into(),
        content: String::new(),
        is_error: true,
        rich: None,
    };
    model.complete(&silent, &specs()).await.unwrap();
    let sent = &server.valid(0)["body"]["messages"][2]["content"][1];
    assert_eq!(sent["is_error"], true);
    assert_eq!(sent["content"], "the call failed without saying why");

    // A history of calls, and no tool offered any more: the past tools are
    // defined, and the model may call none of them.
    model.complete(&transcript(), &[]).await.unwrap();
    let body = &server.valid(1)["body"];
    assert_eq!(body["tool_choice"], json!({"type": "none"}));
    assert_eq!(
        body["tools"],
        json!([{"name": "notes_write_note", "description": "No longer offered to this run: do not call it.",
                "input_schema": {"type": "object", "properties": {}}}])
    );

    // A schema with no `properties` (a tool with no arguments) gains them.
    let bare = vec![ToolSpec {
        name: "clock".into(),
        local_name: "clock".into(),
        description: "Tells the time.".into(),
        parameters: json!({"type": "object"}),
    }];
    model.complete(&transcript()[..2], &bare).await.unwrap();
    assert_eq!(
        server.valid(2)["body"]["tools"][0]["input_schema"],
        json!({"type": "object", "properties": {}})
    );

    // A blank prompt is refused here, and nothing is sent.
    let blank = [Message::User {
        content: "  \n".into(),
    }];
    let refused = model.complete(&blank, &specs()).await.unwrap_err();
    assert!(
        matches!(refused, ProviderError::Unsendable { .. }),
        "{refused:?}"
    );
    assert!(
        refused.to_string().contains("the prompt was blank"),
        "{refused}"
    );
    assert_eq!(server.requests().len(), 3, "nothing more was sent");
}
