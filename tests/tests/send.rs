//! A host spawns the futures of a run on a multi-threaded runtime: each must
//! be `Send`. These only compile if they are; nothing is awaited.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use serde_json::json;
use toolgate::run::{RunOptions, RunRequest, RunState};
use toolgate::suspend::{
    AwaitingApproval, Decision, InputSubmission, Suspended, Verdict, WaitingForInput,
};
use toolgate::testing::{MemoryLog, ScriptedModel};
use toolgate::{Agent, Registry};
use toolgate_tests::ReadFile;

fn send<T: Send>(value: T) -> T {
    value
}

#[allow(dead_code, reason = "compiled for its bounds, never called")]
fn resumes_are_send(
    agent: &Agent<'_>,
    approval: Suspended<AwaitingApproval>,
    input: Suspended<WaitingForInput>,
) {
    let decision = Decision {
        verdict: Verdict::Approve,
        digest: approval.digest(),
        decided_by: "bob".into(),
    };
    drop(send(approval.decide(agent, decision)));
    let submission = InputSubmission {
        data: json!({}),
        digest: input.digest(),
        submitted_by: "bob".into(),
    };
    drop(send(input.submit_input(agent, submission)));
}

#[test]
fn the_futures_of_a_run_are_send() {
    let registry = Registry::builder()
        .builtin(ReadFile)
        .build()
        .expect("one builtin boots");
    let model = ScriptedModel::default();
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    drop(send(registry.offer_all()));
    drop(send(registry.catalogue()));
    drop(send(registry.explain("read_file")));
    drop(send(agent.start(RunRequest::new("alice", "hi"))));
    let state = RunState {
        denied: Vec::new(),
        client: None,
        run_id: "run".into(),
        requested_by: "alice".into(),
        transcript: Vec::new(),
        iterations: 0,
        options: RunOptions::default(),
    };
    drop(send(agent.drive(state.clone())));
    drop(send(agent.process_turn(state, Vec::new())));
    // The resume futures are checked by `resumes_are_send` compiling.
    let _ = resumes_are_send;
}
