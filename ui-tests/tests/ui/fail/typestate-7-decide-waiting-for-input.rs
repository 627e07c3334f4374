// Rule 7: nor decided on through the general entry point.
use toolgate::{Agent, suspend::{Decision, Verdict, Suspended, WaitingForInput}};

async fn resume(run: Suspended<WaitingForInput>, agent: &Agent<'_>) {
    let decision = Decision {
        verdict: Verdict::Approve,
        digest: run.digest(),
        decided_by: "bob".into(),
    };
    let _ = run.decide(agent, decision).await;
}

fn main() {}
