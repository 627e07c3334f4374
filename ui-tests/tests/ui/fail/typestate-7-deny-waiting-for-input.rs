// Rule 7: nor denied.
use toolgate::{Agent, suspend::{Suspended, WaitingForInput}};

async fn resume(run: Suspended<WaitingForInput>, agent: &Agent<'_>) {
    let digest = run.digest();
    let _ = run.deny(agent, "bob", digest).await;
}

fn main() {}
