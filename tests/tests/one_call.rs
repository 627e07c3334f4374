//! Runs of one call (`Agent::call`): a call without a model, gated as a
//! turn — it runs at once, or waits for a decision exactly as a model's turn
//! would — and finished with the call's result or its denial, no model
//! asked, before or after the pause.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use serde_json::json;
use toolgate::run::{CallRequest, Message, NoModel, Outcome, RunState, ToolCall};
use toolgate::suspend::{AwaitingApproval, Decision, Suspended, SuspendedRun, Verdict};
use toolgate::testing::MemoryLog;
use toolgate::{Agent, Registry};
use toolgate_tests::{ReadFile, WriteFile};

fn registry() -> Registry {
    Registry::builder()
        .builtin(ReadFile)
        .builtin(WriteFile)
        .build()
        .expect("boots")
}

fn request(tool: &str) -> CallRequest {
    CallRequest::new(
        "alice",
        "`tools/call` from client `zed` 0.190",
        ToolCall {
            id: "call_1".into(),
            name: tool.into(),
            arguments: json!({"path": "Cargo.toml"}),
        },
    )
}

fn results(state: &RunState) -> Vec<(bool, String)> {
    state
        .transcript
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                is_error, content, ..
            } => Some((*is_error, content.clone())),
            _ => None,
        })
        .collect()
}

fn awaiting(outcome: Outcome) -> Suspended<AwaitingApproval> {
    match outcome {
        Outcome::AwaitingApproval(run) => run,
        other => panic!("a pause for approval: {other:?}"),
    }
}

/// A call no approval binds runs at once, and the run finishes with its
/// result: the transcript is what asked, the call, and its result.
#[tokio::test]
async fn a_read_runs_at_once_and_the_run_finishes_with_its_result() {
    let registry = registry();
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &NoModel, &log);
    let Outcome::Finished { answer, state } = agent.call(request("read_file")).await.unwrap()
    else {
        panic!("finished");
    };
    assert_eq!(answer, r#"read PathArgs { path: "Cargo.toml" }"#);
    assert_eq!(state.transcript.len(), 3, "{:?}", state.transcript);
    assert!(state.options.one_call);
    assert_eq!(state.iterations, 1);
    assert_eq!(results(&state), [(false, answer)]);
}

/// A write waits for approval as any turn does — a serialisable pause that
/// says it is a run of one call — and once approved it runs and the run
/// finishes with its result; denied, the run finishes with the denial and
/// nothing ran. No model is asked either way (`NoModel` would fail the run).
#[tokio::test]
async fn a_write_waits_and_finishes_with_its_result_or_its_denial() {
    let registry = registry();
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &NoModel, &log);
    let run = awaiting(agent.call(request("write_file")).await.unwrap());
    assert_eq!(run.pending().len(), 1);
    // The pause survives its document.
    let document = SuspendedRun::AwaitingApproval(run).encode().unwrap();
    let SuspendedRun::AwaitingApproval(run) = SuspendedRun::decode(&document).unwrap() else {
        panic!("still awaiting approval");
    };
    assert!(run.state().options.one_call);
    let approved = Decision {
        verdict: Verdict::Approve,
        digest: run.digest(),
        decided_by: "bob".into(),
    };
    let Ok(Outcome::Finished { answer, state }) = run.decide(&agent, approved).await else {
        panic!("finished");
    };
    assert_eq!(answer, r#"wrote PathArgs { path: "Cargo.toml" }"#);
    assert_eq!(results(&state), [(false, answer)]);

    let run = awaiting(agent.call(request("write_file")).await.unwrap());
    let denied = Decision {
        verdict: Verdict::Deny,
        digest: run.digest(),
        decided_by: "bob".into(),
    };
    let Ok(Outcome::Finished { answer, state }) = run.decide(&agent, denied).await else {
        panic!("finished");
    };
    assert_eq!(answer, "the call was denied by bob; it was not executed");
    assert_eq!(results(&state), [(true, answer)]);
}

/// A call to a tool the registry does not have is answered as such, and
/// the run finishes: nothing is suspended, nothing runs.
#[tokio::test]
async fn a_call_to_no_tool_finishes_with_the_error() {
    let registry = registry();
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &NoModel, &log);
    let Outcome::Finished { answer, .. } = agent.call(request("drop_tables")).await.unwrap() else {
        panic!("finished");
    };
    assert_eq!(
        answer,
        "unknown tool `drop_tables`; the call was not executed"
    );
}
