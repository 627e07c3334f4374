//! A model of this crate driving `Agent` against the protocol server: a
//! turn the run cannot use never reaches a person; the model reads why in
//! its next request — a request the server finds valid — and its corrected
//! write waits for approval; what each request cost is kept.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::needless_pass_by_value
)]

mod support;

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use support::{KEY, Server};
use toolgate::run::{Message, Outcome, RunRequest};
use toolgate::suspend::{Decision, Verdict};
use toolgate::testing::MemoryLog;
use toolgate::{Agent, Execute, Registry, Tool, ToolOutput};
use toolgate_models::{Anthropic, ApiKey, OpenAi};

#[derive(Debug, Deserialize, JsonSchema)]
struct NoteArgs {
    /// The note's text.
    text: String,
}

/// Writes a note.
#[derive(Tool, Clone, Default)]
#[tool(effect = non_idempotent_write)]
struct WriteNote {
    written: Arc<Mutex<Vec<String>>>,
}

impl Execute for WriteNote {
    type Args = NoteArgs;
    async fn execute(&self, args: NoteArgs) -> ToolOutput {
        self.written.lock().unwrap().push(args.text.clone());
        ToolOutput::text(format!("wrote `{}`", args.text))
    }
}

fn registry(tool: &WriteNote) -> Registry {
    Registry::builder().builtin(tool.clone()).build().unwrap()
}

fn openai_turn(tool_calls: Value) -> Value {
    json!({"status": 200, "body": {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls",
                     "message": {"role": "assistant", "content": null, "tool_calls": tool_calls}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    }})
}

fn openai_text(text: &str) -> Value {
    json!({"status": 200, "body": {
        "id": "chatcmpl-2", "object": "chat.completion", "created": 2, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 150, "completion_tokens": 5, "total_tokens": 155}
    }})
}

/// A step of the script: an Anthropic answer of these blocks.
fn anthropic_message(content: Value, stop: &str) -> Value {
    json!({"status": 200, "body": {"id": "msg_1", "type": "message", "role": "assistant", "model": "c",
        "content": content, "stop_reason": stop, "usage": {"input_tokens": 50, "output_tokens": 5}}})
}

#[tokio::test]
async fn openai_garbled_write_is_answered_corrected_approved_and_run_once() {
    let server = Server::start(
        json!([
            openai_turn(json!([
                {"id": "call_1", "type": "function", "function": {"name": "write_note", "arguments": "{\"text\": \"milk"}}
            ])),
            openai_turn(json!([
                {"id": "call_2", "type": "function", "function": {"name": "write_note", "arguments": "{\"text\": \"milk\"}"}}
            ])),
            openai_text("Noted: milk."),
        ]),
        &["m"],
    )
    .await;
    let tool = WriteNote::default();
    let registry = registry(&tool);
    let model = OpenAi::new(&format!("{}/v1", server.base), "m")
        .unwrap()
        .key(ApiKey::new(KEY).unwrap());
    let log = MemoryLog::default();
    let agent = Agent::new(&registry, &model, &log);
    let run = match agent
        .start(RunRequest::new("alice", "Note milk."))
        .await
        .unwrap()
    {
        Outcome::AwaitingApproval(run) => run,
        other => panic!("expected the corrected write to wait, got {other:?}"),
    };
    assert!(tool.written.lock().unwrap().is_empty());
    assert_eq!(run.pending()[0].id, "call_2", "the model's own id");
    assert_eq!(run.pending()[0].arguments, json!({"text": "milk"}));
    // The second request carried the refusal, as a tool message the server took.
    let second = server.valid(1);
    let told = &second["body"]["messages"][2];
    assert_eq!(told["role"], "tool");
    assert_eq!(told["tool_call_id"], "call_1");
    assert!(
        told["content"]
            .as_str()
            .unwrap()
            .starts_with("Error: This call could not be used: the arguments are not valid JSON (EOF while parsing a string"),
        "{told}"
    );
    let decision = Decision {
        verdict: Verdict::Approve,
        digest: run.digest(),
        decided_by: "bob".into(),
    };
    let state = match run.decide(&agent, decision).await.unwrap() {
        Outcome::Finished { answer, state } => {
            assert_eq!(answer, "Noted: milk.");
            state
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(*tool.written.lock().unwrap(), ["milk"]);
    server.valid(2);
    let usage = state.usage().unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (350, 25));
}

#[tokio::test]
async fn anthropic_call_without_an_id_is_answered_and_the_transcript_stays_valid() {
    let server = Server::start(
        json!([
            anthropic_message(json!([{"type": "tool_use", "name": "write_note", "input": {"text": "milk"}}]), "tool_use"),
            anthropic_message(json!([{"type": "tool_use", "id": "toolu_2", "name": "write_note", "input": "milk"}]), "tool_use"),
            anthropic_message(json!([{"type": "text", "text": "I could not write it."}]), "end_turn"),
        ]),
        &["c"],
    )
    .await;
    let tool = WriteNote::default();
    let registry = registry(&tool);
    let model = Anthropic::at(&server.base, "c")
        .unwrap()
        .key(ApiKey::new(KEY).unwrap());
    let log = MemoryLog::default();
    let agent = Agent::new(&registry, &model, &log);
    let state = match agent
        .start(RunRequest::new("alice", "Note milk."))
        .await
        .unwrap()
    {
        Outcome::Finished { state, .. } => state,
        other => panic!("expected the run to go on to its answer, got {other:?}"),
    };
    assert!(
        tool.written.lock().unwrap().is_empty(),
        "nothing ran, nothing was put to a person"
    );
    let results: Vec<&str> = state
        .transcript
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            "This call could not be used: the call has no id, so no result can be matched to it. Nothing of this turn ran; ask again with every call well-formed.",
            "This call could not be used: the arguments are a JSON string, not an object of named parameters. Nothing of this turn ran; ask again with every call well-formed.",
        ]
    );
    let second = server.valid(1);
    assert_eq!(
        second["body"]["messages"][1]["content"][0],
        json!({"type": "tool_use", "id": "toolgate_refused_1_0", "name": "write_note", "input": {"text": "milk"}})
    );
    assert_eq!(
        second["body"]["messages"][2]["content"][0]["is_error"],
        true
    );
    server.valid(2);
}

/// Ids the Messages protocol does not take are rewritten one to one: two
/// calls whose ids differ only in such characters stay two calls, and the
/// request after their results is one the server takes.
#[tokio::test]
async fn anthropic_ids_rewritten_for_the_protocol_stay_distinct() {
    let server = Server::start(
        json!([
            anthropic_message(json!([
                {"type": "tool_use", "id": "toolu 1", "name": "write_note", "input": {"text": "A"}},
                {"type": "tool_use", "id": "toolu_1", "name": "write_note", "input": {"text": "B"}}
            ]), "tool_use"),
            anthropic_message(json!([{"type": "text", "text": "Both written."}]), "end_turn"),
        ]),
        &["c"],
    )
    .await;
    let tool = WriteNote::default();
    let registry = registry(&tool);
    let model = Anthropic::at(&server.base, "c")
        .unwrap()
        .key(ApiKey::new(KEY).unwrap());
    let log = MemoryLog::default();
    let agent = Agent::new(&registry, &model, &log);
    let Outcome::AwaitingApproval(run) = agent
        .start(RunRequest::new("alice", "Note A and B."))
        .await
        .unwrap()
    else {
        panic!("two writes wait for approval");
    };
    let ids: Vec<&str> = run.pending().iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["toolu 1", "toolu_1"], "the model's own ids");
    let decision = Decision {
        verdict: Verdict::Approve,
        digest: run.digest(),
        decided_by: "bob".into(),
    };
    let Outcome::Finished { answer, .. } = run.decide(&agent, decision).await.unwrap() else {
        panic!("the run finishes");
    };
    assert_eq!(answer, "Both written.");
    assert_eq!(*tool.written.lock().unwrap(), ["A", "B"]);
    let second = server.valid(1);
    let uses: Vec<&str> = second["body"]["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(uses.len(), 2);
    assert_ne!(uses[0], uses[1]);
    assert_eq!(uses[1], "toolu_1");
    assert!(uses[0].starts_with("toolu_1_"), "{uses:?}");
}
