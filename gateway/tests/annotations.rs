//! The annotations the gateway writes for a host's builtins: by the effect
//! each one's type declares, which the gate trusts — a `read_only` builtin
//! says it only reads, a write says it may destroy.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use serde::Deserialize;
use serde_json::json;
use toolgate::{Execute, Tool, ToolOutput};
use toolgate_gateway::Gateway;
use toolgate_store::{Location, Store};

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
        ToolOutput::text(args.name)
    }
}

/// Tags a branch.
#[derive(Tool)]
#[tool(effect = idempotent_write)]
struct TagBranch;

impl Execute for TagBranch {
    type Args = Branch;
    async fn execute(&self, args: Branch) -> ToolOutput {
        ToolOutput::text(args.name)
    }
}

/// Deletes a branch.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct DeleteBranch;

impl Execute for DeleteBranch {
    type Args = Branch;
    async fn execute(&self, args: Branch) -> ToolOutput {
        ToolOutput::text(args.name)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builtins_annotations_follow_its_declared_effect() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&Location::Sqlite(dir.path().join("toolgate.db")))
        .await
        .unwrap();
    let gateway = Gateway::builder(store)
        .builtin(ListCommits)
        .builtin(TagBranch)
        .builtin(DeleteBranch)
        .build()
        .unwrap();
    let shown: Vec<(String, serde_json::Value)> = gateway
        .tools()
        .await
        .into_iter()
        .map(|tool| {
            assert!(tool.title.is_none(), "a builtin has no title: {tool:?}");
            (
                tool.name.to_string(),
                serde_json::to_value(tool.annotations).unwrap(),
            )
        })
        .collect();
    let hints = |read_only, destructive, idempotent| {
        json!({
            "readOnlyHint": read_only,
            "destructiveHint": destructive,
            "idempotentHint": idempotent,
            "openWorldHint": true,
        })
    };
    assert_eq!(
        shown,
        [
            ("list_commits".to_owned(), hints(true, false, true)),
            ("tag_branch".to_owned(), hints(false, true, true)),
            ("delete_branch".to_owned(), hints(false, true, false)),
        ]
    );
}
