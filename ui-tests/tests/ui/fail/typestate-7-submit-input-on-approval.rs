// Rule 7: a run suspended for approval has no way to take input.
use toolgate::{Agent, suspend::{AwaitingApproval, InputSubmission, Suspended}};

async fn resume(run: Suspended<AwaitingApproval>, agent: &Agent<'_>) {
    let submission = InputSubmission {
        data: serde_json::json!({"name": "Ada"}),
        digest: run.digest(),
        submitted_by: "alice".into(),
    };
    let _ = run.submit_input(agent, submission).await;
}

fn main() {}
