//! Listing runs a page at a time: narrowed by tool, requester, standing
//! and a search, the waiting runs or the decided ones, newest first, the
//! count bounded — and the tools of runs stored before the listing's
//! migration found too.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use serde_json::{Map, Value, json};
use toolgate::identity::{IdentitySource, Operator};
use toolgate::run::{Outcome, Reply, RunRequest, ToolCall};
use toolgate::suspend::SuspendedRun;
use toolgate::testing::{MemoryLog, ScriptedModel};
use toolgate::{Agent, Execute, Registry, Tool, ToolOutput};
use toolgate_store::{Answer, MigrateTo, Query, RunFilter, RunView, Standing, Store};

mod backend;
use backend::TestDb;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    backend::rerun_on_postgres();
}

/// Deletes a branch.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct DeleteBranch;

impl Execute for DeleteBranch {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("deleted")
    }
}

/// Renames a branch.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct RenameBranch;

impl Execute for RenameBranch {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("renamed")
    }
}

/// A run of `requester`'s, paused on a call of `tool`.
async fn paused(requester: &str, tool: &str) -> SuspendedRun {
    let registry = Registry::builder()
        .builtin(DeleteBranch)
        .builtin(RenameBranch)
        .build()
        .unwrap();
    let model = ScriptedModel::new([Reply::Calls {
        content: None,
        calls: vec![ToolCall {
            id: "c1".into(),
            name: tool.into(),
            arguments: json!({"branch": "old"}),
        }],
    }]);
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    match agent.start(RunRequest::new(requester, "tidy up")).await {
        Ok(Outcome::AwaitingApproval(run)) => SuspendedRun::AwaitingApproval(run),
        other => panic!("expected an approval pause, got {other:?}"),
    }
}

fn ids(runs: &[toolgate_store::OpenRun]) -> Vec<&str> {
    runs.iter().map(|run| run.run_id.as_str()).collect()
}

#[tokio::test]
async fn a_listing_is_narrowed_in_the_store_newest_first() {
    let db = TestDb::new().await;
    let store = Store::open(db.location()).await.unwrap();
    let mut saved = Vec::new();
    for (requester, tool) in [
        ("alice", "delete_branch"),
        ("bob", "rename_branch"),
        ("alice", "rename_branch"),
        ("carol_50%", "delete_branch"),
    ] {
        let run = paused(requester, tool).await;
        store.save_suspended(&run, "demo").await.unwrap();
        saved.push(run.run_id().to_owned());
    }
    let page = |filter: RunFilter| {
        let store = store.clone();
        async move { store.runs_page(&filter, None, 50).await.unwrap() }
    };
    let all = page(RunFilter::default()).await;
    assert_eq!(
        ids(&all),
        saved.iter().rev().map(String::as_str).collect::<Vec<_>>()
    );
    assert_eq!(all[0].calls[0].name, "delete_branch");
    assert_eq!(all[0].calls[0].arguments, json!({"branch": "old"}));

    let renames = page(RunFilter {
        tool: Some("rename_branch".into()),
        ..RunFilter::default()
    })
    .await;
    assert_eq!(ids(&renames), [saved[2].as_str(), saved[1].as_str()]);
    let alices = page(RunFilter {
        requester: Some("alice".into()),
        tool: Some("delete_branch".into()),
        ..RunFilter::default()
    })
    .await;
    assert_eq!(ids(&alices), [saved[0].as_str()]);
    // A search takes its wildcards literally, and letters without case.
    let search = |text: &str| RunFilter {
        search: Some(text.into()),
        ..RunFilter::default()
    };
    assert_eq!(ids(&page(search("_50%")).await), [saved[3].as_str()]);
    assert_eq!(ids(&page(search("CAROL")).await), [saved[3].as_str()]);
    assert_eq!(ids(&page(search("%")).await), [saved[3].as_str()]);
    assert!(page(search("a%")).await.is_empty());
    assert_eq!(page(search("RENAME_")).await.len(), 2);
    assert_eq!(page(search(&saved[1][..8])).await[0].run_id, saved[1]);
    // No server: local tools all.
    assert!(
        page(RunFilter {
            server: Some("git".into()),
            ..RunFilter::default()
        })
        .await
        .is_empty()
    );

    // One decided: gone from those awaiting approval, in the history.
    let dora = Operator::new("dora", IdentitySource::Flag).unwrap();
    let digest = store.load_suspended(&saved[1]).await.unwrap().digest();
    store
        .decide(&saved[1], Some(&digest), &dora, Answer::Deny)
        .await
        .unwrap();
    let awaiting = page(RunFilter {
        standing: Some(Standing::AwaitingApproval),
        ..RunFilter::default()
    })
    .await;
    assert!(!ids(&awaiting).contains(&saved[1].as_str()));
    assert_eq!(awaiting.len(), 3);
    let history = RunFilter {
        view: RunView::History,
        ..RunFilter::default()
    };
    let decided = page(history.clone()).await;
    assert_eq!(ids(&decided), [saved[1].as_str()]);
    assert_eq!(decided[0].decided_by.as_deref(), Some("dora"));
    assert_eq!(store.count_runs(&history, 1_000).await.unwrap(), 1);

    // Pages, and a count that stops past its bound.
    let first = store
        .runs_page(&RunFilter::default(), None, 2)
        .await
        .unwrap();
    let rest = store
        .runs_page(&RunFilter::default(), Some(first[1].suspension_id), 2)
        .await
        .unwrap();
    assert_eq!(ids(&first), [saved[3].as_str(), saved[2].as_str()]);
    assert_eq!(ids(&rest), [saved[1].as_str(), saved[0].as_str()]);
    assert_eq!(
        store
            .count_runs(&RunFilter::default(), 1_000)
            .await
            .unwrap(),
        4
    );
    assert_eq!(store.count_runs(&RunFilter::default(), 2).await.unwrap(), 3);
}

/// Runs stored before the listing's migration are found by their tools
/// after it; a document that does not read is skipped, not a failure.
#[tokio::test]
async fn runs_stored_before_the_migration_are_found_by_tool() {
    let db = TestDb::new().await;
    // A document as the store writes it, stored the way the schema before
    // the listing's migration (19) held it.
    let run = paused("alice", "rename_branch").await;
    let document = run.encode().unwrap();
    let store = Store::open_to(&db.location(), MigrateTo::Version(19))
        .await
        .unwrap();
    for (run_id, document) in [
        (run.run_id(), document.as_str()),
        ("broken", "{\"not\": json"),
    ] {
        Query::new(
            "INSERT INTO suspended_run (run_id, status, document, digest, requested_by, created_at, owner, execution, updated_at)
             VALUES ($1, 'awaiting_approval', $2, $3, 'alice', 1, 'demo', 'pending', 1)",
        )
        .bind(run_id)
        .bind(document)
        .bind(run.digest().as_str())
        .execute_on(&store)
        .await
        .unwrap();
    }
    store.close().await;
    let store = Store::open(db.location()).await.unwrap();
    let found = store
        .runs_page(
            &RunFilter {
                tool: Some("rename_branch".into()),
                ..RunFilter::default()
            },
            None,
            50,
        )
        .await
        .unwrap();
    assert_eq!(ids(&found), [run.run_id()]);
    let listed = store
        .runs_page(&RunFilter::default(), None, 50)
        .await
        .unwrap();
    assert_eq!(listed.len(), 2);
    assert!(listed[0].problem.is_some(), "{listed:?}");
}
