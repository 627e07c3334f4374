// Rule 7: a run waiting for input cannot be approved — an input submission is
// never an approval, and an approval carries no data.
use toolgate::{Agent, suspend::{Suspended, WaitingForInput}};

async fn resume(run: Suspended<WaitingForInput>, agent: &Agent<'_>) {
    let digest = run.digest();
    let _ = run.approve(agent, "bob", digest).await;
}

fn main() {}
