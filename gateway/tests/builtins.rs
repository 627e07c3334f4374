//! A Rust host's own builtins served by the gateway beside the imported
//! tools: a `read_only` one runs at once, a write is never served
//! unapproved — held, and run once only after an operator's approval.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use toolgate::identity::{IdentitySource, Operator};
use toolgate::{Execute, Tool, ToolOutput};
use toolgate_gateway::Gateway;
use toolgate_store::{Answer, Location, Store};

/// What a branch tool takes.
#[derive(Deserialize, schemars::JsonSchema)]
struct Branch {
    /// The branch.
    name: String,
}

/// Lists a branch's commits.
#[derive(Tool)]
#[tool(effect = read_only)]
struct ListCommits;

impl Execute for ListCommits {
    type Args = Branch;
    async fn execute(&self, args: Branch) -> ToolOutput {
        ToolOutput::text(format!("commits of {}", args.name))
    }
}

/// Deletes a branch.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct DeleteBranch(Arc<AtomicUsize>);

impl Execute for DeleteBranch {
    type Args = Branch;
    async fn execute(&self, args: Branch) -> ToolOutput {
        self.0.fetch_add(1, Ordering::SeqCst);
        ToolOutput::text(format!("deleted {}", args.name))
    }
}

fn text(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builtin_write_is_never_served_unapproved() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&Location::Sqlite(dir.path().join("toolgate.db")))
        .await
        .unwrap();
    let deleted = Arc::new(AtomicUsize::new(0));
    let gateway = Gateway::builder(store.clone())
        .builtin(ListCommits)
        .builtin(DeleteBranch(Arc::clone(&deleted)))
        .user("alice")
        .wait(Duration::from_secs(20))
        .poll(Duration::from_millis(20))
        .build()
        .unwrap();
    let names: Vec<String> = gateway
        .tools()
        .await
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["list_commits", "delete_branch"]);

    let read = gateway
        .call("list_commits", json!({"name": "main"}), None)
        .await;
    assert_eq!(read.is_error, Some(false));
    assert_eq!(text(&read), "commits of main");

    let held = {
        let gateway = gateway.clone();
        tokio::spawn(async move {
            gateway
                .call("delete_branch", json!({"name": "old"}), None)
                .await
        })
    };
    let run = loop {
        if let Some(run) = store.open_runs().await.unwrap().into_iter().next() {
            break run;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(deleted.load(Ordering::SeqCst), 0, "held, not run");
    let paused = store.load_suspended(&run.run_id).await.unwrap();
    store
        .decide(
            &run.run_id,
            Some(&paused.digest()),
            &Operator::new("bob", IdentitySource::Flag).unwrap(),
            Answer::Approve,
        )
        .await
        .unwrap();
    let answered = held.await.unwrap();
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(text(&answered), "deleted old");
    assert_eq!(deleted.load(Ordering::SeqCst), 1, "run once");
}
