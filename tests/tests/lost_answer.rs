//! A call whose answer was lost is not a failure the model is told of: a
//! call that is not safe to run again leaves its outcome unknown, and the run
//! stops until an operator chooses; one safe to run again reads the loss as
//! an error.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Map, Value, json};
use toolgate::erased::ErasedTool;
use toolgate::journal::CallRecord;
use toolgate::run::{Message, Outcome, Recovered, RunError, RunRequest};
use toolgate::testing::ScriptedModel;
use toolgate::{
    Agent, Execute, OperatorDeclaration, Registry, RemoteApproval, RemoteTool, Tool, ToolOutput,
};
use toolgate_tests::{CountingProvider, JournalLog, call, turn};

/// A remote tool whose server runs every call and never answers.
struct Unanswered {
    ran: Arc<AtomicUsize>,
}

impl Tool for Unanswered {
    type Origin = toolgate::Remote;
    type Effect = toolgate::NonIdempotentWrite;
    type Gate = toolgate::gate::ApprovalByOperator;
    fn name(&self) -> &str {
        "shop.charge"
    }
    fn description(&self) -> &str {
        "via an external MCP server: charges a card"
    }
}
impl RemoteTool for Unanswered {
    fn server(&self) -> &str {
        "shop"
    }
}
impl RemoteApproval for Unanswered {
    fn operator_declaration(&self) -> OperatorDeclaration {
        OperatorDeclaration::NoApproval
    }
}
impl Execute for Unanswered {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        self.ran.fetch_add(1, Ordering::SeqCst);
        ToolOutput::answer_lost(
            "server `shop`: the call reached the server; its answer was lost: the connection closed",
        )
    }
}

/// Looks a price up; its answer is lost too, but reading again is harmless.
#[derive(toolgate::Tool)]
#[tool(effect = read_only)]
struct LookUpPrice;
impl Execute for LookUpPrice {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::answer_lost("the price service hung up")
    }
}

/// Says hello; always answers.
#[derive(toolgate::Tool)]
#[tool(effect = read_only)]
struct Hello;
impl Execute for Hello {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("hello")
    }
}

fn registry(ran: &Arc<AtomicUsize>) -> Registry {
    Registry::builder()
        .builtin(Hello)
        .builtin(LookUpPrice)
        .provider(
            CountingProvider::new(
                "servers",
                vec![ErasedTool::new(Unanswered {
                    ran: Arc::clone(ran),
                })],
            )
            .0,
        )
        .build()
        .expect("the registry builds")
}

fn tool_results(transcript: &[Message]) -> Vec<(String, bool, String)> {
    transcript
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                name,
                is_error,
                content,
                ..
            } => Some((name.clone(), *is_error, content.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_lost_answer_to_a_write_stops_the_run_with_its_outcome_unknown() {
    let ran = Arc::new(AtomicUsize::new(0));
    let registry = registry(&ran);
    let model = ScriptedModel::new([
        turn(vec![
            call("c1", "hello", json!({})),
            call("c2", "shop.charge", json!({"cents": 500})),
            call("c3", "hello", json!({})),
        ]),
        toolgate::run::Reply::Text("done".into()),
    ]);
    let log = JournalLog::new(&toolgate_tests::Journal::default());
    let agent = Agent::new(&registry, &model, &log);
    let stopped = agent.start(RunRequest::new("alice", "buy the thing")).await;
    let shown = stopped.as_ref().err().map(ToString::to_string);
    assert!(
        shown.as_deref().is_some_and(|shown| shown.contains("call `c2` (shop.charge) is a non_idempotent_write, so its outcome is unknown and it is not run again unless an operator chooses `rerun` (or `skip`)")),
        "{shown:?}"
    );
    let Err(RunError::OutcomeUnknown {
        call,
        tool,
        reason,
        unknown,
        known,
    }) = stopped
    else {
        panic!("expected an unknown outcome, got {stopped:?}");
    };
    assert_eq!((call.as_str(), tool.as_str()), ("c2", "shop.charge"));
    assert!(reason.ends_with("its answer was lost: the connection closed"));
    assert_eq!(ran.load(Ordering::SeqCst), 1, "the write ran once");
    assert_eq!(unknown.index, 1);
    assert_eq!(
        known,
        [
            CallRecord::Ended(ToolOutput::text("hello")),
            CallRecord::Started,
            CallRecord::NotStarted,
        ]
    );
    // The model was told nothing: the plan's run has no result of the turn.
    assert!(tool_results(&unknown.plan.run().transcript).is_empty());
    // Recovered with nobody's choice, nothing runs.
    let again = agent.recover(unknown.plan.clone(), &known).await;
    assert!(
        matches!(again, Ok(Recovered::OutcomeUnknown(_))),
        "{again:?}"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 1);

    // Skipped by an operator, the run goes on and the model reads that the
    // outcome is unknown; the write never runs again.
    let mut chosen = known;
    chosen[1] = CallRecord::Skip { by: "bob".into() };
    let Ok(Recovered::Outcome(Outcome::Finished { state, .. })) =
        agent.recover(unknown.plan, &chosen).await
    else {
        panic!("the skipped run finishes");
    };
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let results = tool_results(&state.transcript);
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[0], ("hello".into(), false, "hello".into()));
    assert!(results[1].1);
    assert!(
        results[1]
            .2
            .contains("its outcome is unknown, and bob chose not to run it again"),
        "{results:?}"
    );
    assert_eq!(results[2], ("hello".into(), false, "hello".into()));
}

#[tokio::test]
async fn a_lost_answer_to_a_read_is_an_error_result() {
    let ran = Arc::new(AtomicUsize::new(0));
    let registry = registry(&ran);
    let model = ScriptedModel::new([
        turn(vec![call("c1", "look_up_price", json!({}))]),
        toolgate::run::Reply::Text("done".into()),
    ]);
    let log = JournalLog::new(&toolgate_tests::Journal::default());
    let agent = Agent::new(&registry, &model, &log);
    let Ok(Outcome::Finished { state, .. }) =
        agent.start(RunRequest::new("alice", "price it")).await
    else {
        panic!("the run finishes");
    };
    assert_eq!(
        tool_results(&state.transcript),
        [(
            "look_up_price".to_owned(),
            true,
            "the price service hung up".to_owned()
        )]
    );
}
