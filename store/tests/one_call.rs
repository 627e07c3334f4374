//! Runs of one call in the store: saved only by a host of runs of one call
//! (`CallHost`, named `gateway` or `gateway.…`), claimed only by id, never
//! by a host that resumes runs with a model, and finished with the call's
//! result or its denial once an operator decided.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};
use toolgate::identity::{IdentitySource, Operator};
use toolgate::run::{CallRequest, NoModel, Outcome, Reply, RunRequest, ToolCall};
use toolgate::suspend::SuspendedRun;
use toolgate::testing::{MemoryLog, ScriptedModel};
use toolgate::{Agent, Execute, Registry, Tool, ToolOutput};
use toolgate_store::{Answer, CallHost, Ended, Host, Query, Store, StoreError};

mod backend;
use backend::TestDb;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    backend::rerun_on_postgres();
}

/// Deletes a branch, counting each time it runs.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct DeleteBranch(Arc<AtomicUsize>);

impl Execute for DeleteBranch {
    type Args = Map<String, Value>;
    async fn execute(&self, args: Self::Args) -> ToolOutput {
        self.0.fetch_add(1, Ordering::SeqCst);
        ToolOutput::text(format!("deleted {}", Value::Object(args)))
    }
}

fn operator(name: &str) -> Operator {
    Operator::new(name, IdentitySource::Flag).expect("a usable name")
}

async fn one_call(registry: &Registry) -> SuspendedRun {
    let log = MemoryLog::new();
    let agent = Agent::new(registry, &NoModel, &log);
    let request = CallRequest::new(
        "alice",
        "`tools/call` from client `zed` 0.190",
        ToolCall {
            id: "call_1".into(),
            name: "delete_branch".into(),
            arguments: json!({"branch": "old"}),
        },
    );
    match agent.call(request).await {
        Ok(Outcome::AwaitingApproval(run)) => SuspendedRun::AwaitingApproval(run),
        other => panic!("a pause for approval: {other:?}"),
    }
}

/// A paused run with a model, of the same write.
async fn with_a_model(registry: &Registry) -> SuspendedRun {
    let model = ScriptedModel::new([Reply::Calls {
        content: None,
        calls: vec![ToolCall {
            id: "c1".into(),
            name: "delete_branch".into(),
            arguments: json!({}),
        }],
    }]);
    let log = MemoryLog::new();
    match Agent::new(registry, &model, &log)
        .start(RunRequest::new("alice", "tidy up"))
        .await
    {
        Ok(Outcome::AwaitingApproval(run)) => SuspendedRun::AwaitingApproval(run),
        other => panic!("{other:?}"),
    }
}

fn refused_name(result: Result<impl std::fmt::Debug, StoreError>) -> String {
    match result {
        Err(StoreError::InvalidHostName { problem, .. }) => problem.to_owned(),
        other => panic!("an unusable host name: {other:?}"),
    }
}

/// The gateway's names are its own, and its runs are too: a host that
/// resumes runs with a model takes no name kept for the gateway and saves
/// no run of one call; a host of runs of one call takes no other name and
/// saves no run with a model.
#[tokio::test]
async fn the_gateways_names_and_runs_are_its_own() {
    let dir = TestDb::new().await;
    let store = Store::open(dir.location()).await.unwrap();
    let registry = Registry::builder()
        .builtin(DeleteBranch(Arc::default()))
        .build()
        .unwrap();
    let run = one_call(&registry).await;
    for name in ["gateway", "gateway.zed", "Gateway.Zed", "GATEWAY"] {
        assert!(
            refused_name(Host::new(store.clone(), name)).contains("kept for the gateway"),
            "{name}"
        );
    }
    for name in ["worker", "gateways", "gateway-zed"] {
        assert!(
            refused_name(CallHost::new(store.clone(), name))
                .contains("named `gateway` or `gateway.`"),
            "{name}"
        );
    }
    let worker = Host::new(store.clone(), "worker").unwrap();
    assert!(matches!(
        worker.save(&run).await,
        Err(StoreError::OneCallRun { .. })
    ));
    assert!(matches!(
        store.save_suspended(&run, "worker").await,
        Err(StoreError::OneCallRun { .. })
    ));
    let gateway = CallHost::new(store.clone(), "gateway.zed").unwrap();
    let with_a_model = with_a_model(&registry).await;
    assert!(matches!(
        gateway.save(&with_a_model).await,
        Err(StoreError::NotOneCall { .. })
    ));
    assert!(matches!(
        store.save_suspended(&with_a_model, "gateway").await,
        Err(StoreError::NotOneCall { .. })
    ));
}

/// A decided run of one call is claimed by its id by the host that saved
/// it, once — not by another gateway process, not by a host asking for the
/// next decided run — and finishes with the call's result or its denial.
#[tokio::test]
async fn a_run_of_one_call_is_resumed_only_by_the_host_that_holds_it() {
    let dir = TestDb::new().await;
    let store = Store::open(dir.location()).await.unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let registry = Registry::builder()
        .builtin(DeleteBranch(Arc::clone(&ran)))
        .build()
        .unwrap();
    let run = one_call(&registry).await;
    let worker = Host::new(store.clone(), "worker").unwrap();
    let gateway = CallHost::new(store.clone(), "gateway.zed").unwrap();
    let with_a_model = with_a_model(&registry).await;
    gateway.save(&run).await.unwrap();
    worker.save(&with_a_model).await.unwrap();
    store
        .decide(
            with_a_model.run_id(),
            Some(&with_a_model.digest()),
            &operator("bob"),
            Answer::Approve,
        )
        .await
        .unwrap();

    // Undecided, there is nothing to claim.
    assert!(gateway.claim(run.run_id()).await.unwrap().is_none());
    store
        .decide(
            run.run_id(),
            Some(&run.digest()),
            &operator("bob"),
            Answer::Approve,
        )
        .await
        .unwrap();
    // Decided: not another gateway process's, not by another id, and not
    // a host's that asks for the next decided run.
    let other = CallHost::new(store.clone(), "gateway.other").unwrap();
    assert!(other.claim(run.run_id()).await.unwrap().is_none());
    assert!(gateway.claim("another-run").await.unwrap().is_none());
    let next = worker.next().await.unwrap().expect("the worker's own run");
    assert_eq!(next.run_id(), with_a_model.run_id());
    assert!(
        worker.next().await.unwrap().is_none(),
        "never the gateway's"
    );
    let task = gateway
        .wait_for(run.run_id(), Duration::from_millis(20))
        .await
        .unwrap();
    assert!(
        gateway.claim(run.run_id()).await.unwrap().is_none(),
        "claimed once"
    );
    let resumed = gateway.resume(task, &registry).await.unwrap();
    assert!(
        matches!(&resumed.ended, Ended::Finished { answer } if answer == r#"deleted {"branch":"old"}"#),
        "{resumed:?}"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert!(gateway.claim(run.run_id()).await.unwrap().is_none());
    let all = store.all_runs().await.unwrap();
    assert_eq!(
        all.iter()
            .find(|r| r.run_id == run.run_id())
            .and_then(|r| r.outcome.as_deref()),
        Some("finished")
    );

    // Denied: the run finishes with the denial, and nothing runs.
    let denied = one_call(&registry).await;
    gateway.save(&denied).await.unwrap();
    store
        .decide(
            denied.run_id(),
            Some(&denied.digest()),
            &operator("bob"),
            Answer::Deny,
        )
        .await
        .unwrap();
    let task = gateway.claim(denied.run_id()).await.unwrap().unwrap();
    let resumed = gateway.resume(task, &registry).await.unwrap();
    let Ended::Finished { answer } = &resumed.ended else {
        panic!("{resumed:?}");
    };
    assert_eq!(answer, "the call was denied by bob; it was not executed");
    assert_eq!(ran.load(Ordering::SeqCst), 1, "a denied call never runs");
}

/// A run of one call whose row was re-owned outside the store: a host that
/// resumes runs with a model claims it by its owner column, and refuses it
/// — sets it aside, runs nothing.
#[tokio::test]
async fn a_run_of_one_call_moved_to_another_host_is_refused_there() {
    let dir = TestDb::new().await;
    let store = Store::open(dir.location()).await.unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let registry = Registry::builder()
        .builtin(DeleteBranch(Arc::clone(&ran)))
        .build()
        .unwrap();
    let worker = Host::new(store.clone(), "worker").unwrap();
    let gateway = CallHost::new(store.clone(), "gateway.zed").unwrap();
    let moved = one_call(&registry).await;
    gateway.save(&moved).await.unwrap();
    store
        .decide(
            moved.run_id(),
            Some(&moved.digest()),
            &operator("bob"),
            Answer::Approve,
        )
        .await
        .unwrap();
    Query::new("UPDATE suspended_run SET owner = 'worker' WHERE run_id = $1")
        .bind(moved.run_id())
        .execute_on(&store)
        .await
        .unwrap();
    assert!(worker.next().await.unwrap().is_none());
    let aside = worker.set_aside();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert!(
        aside[0].reason.contains("it is a run of one call"),
        "{}",
        aside[0].reason
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0, "nothing ran");
}
