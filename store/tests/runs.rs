//! Suspended runs in the store: saved with their status, loaded fail-closed,
//! decided through `Store::decide` by exactly one of any number of concurrent
//! deciders — the claim released when the decision is refused and kept
//! otherwise — and left untouched when their document is corrupt.
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
use toolgate::{
    Agent, Execute, Registry, Tool, ToolOutput,
    audit::DecisionKind,
    run::{Outcome, Reply, RunOptions, RunRequest, ToolCall},
    suspend::{Refusal, SuspendedRun, TurnDigest},
    testing::{MemoryLog, ScriptedModel},
};
use toolgate_store::{
    Answer, Choice, Choosing, ClaimError, Ended, Host, LoadError, Query, Store, StoreError,
};

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
    async fn execute(&self, args: Self::Args) -> ToolOutput {
        ToolOutput::text(format!("deleted {}", Value::Object(args)))
    }
}

fn registry() -> Registry {
    Registry::builder()
        .builtin(DeleteBranch)
        .build()
        .expect("the registry builds")
}

async fn suspended(registry: &Registry, requested_by: &str) -> SuspendedRun {
    suspended_with(registry, requested_by, RunOptions::default()).await
}

async fn suspended_with(
    registry: &Registry,
    requested_by: &str,
    options: RunOptions,
) -> SuspendedRun {
    let model = ScriptedModel::new([Reply::Calls {
        content: None,
        calls: vec![ToolCall {
            id: "c1".into(),
            name: "delete_branch".into(),
            arguments: json!({"branch": "old"}),
        }],
    }]);
    let log = MemoryLog::new();
    let agent = Agent::new(registry, &model, &log);
    let request = RunRequest {
        options,
        ..RunRequest::new(requested_by, "tidy up")
    };
    match agent.start(request).await {
        Ok(Outcome::AwaitingApproval(run)) => SuspendedRun::AwaitingApproval(run),
        other => panic!("expected an approval pause, got {other:?}"),
    }
}

async fn open(db: &TestDb) -> Store {
    Store::open(db.location()).await.expect("the store opens")
}

fn operator(name: &str) -> Operator {
    Operator::new(name, IdentitySource::Flag).expect("a usable name")
}

/// True when the run waits, has no standing decision, and loads. Voided
/// decisions stay in the audit trail, each saying why.
async fn waits(store: &Store, run_id: &str) -> bool {
    let open = store.open_runs().await.expect("open runs list");
    let decisions = store.decisions(run_id).await.expect("decisions read");
    let waiting = open.iter().any(|r| r.run_id == run_id);
    let standing = decisions.iter().filter(|d| d.voided.is_none()).count();
    assert_eq!(
        waiting,
        standing == 0,
        "a waiting run has no standing decision, a decided one has one: {decisions:?}"
    );
    assert!(
        decisions
            .iter()
            .filter_map(|d| d.voided.as_deref())
            .all(|why| why.starts_with("refused at resume: ")),
        "{decisions:?}"
    );
    waiting && store.load_suspended(run_id).await.is_ok()
}

#[tokio::test]
async fn a_saved_run_loads_with_its_status_and_a_second_open_row_is_refused() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run, "host").await.unwrap();
    let loaded = store.load_suspended(run.run_id()).await.unwrap();
    assert_eq!(loaded, run);
    let listed = store.open_runs().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].status, "awaiting_approval");
    assert_eq!(listed[0].digest, run.digest().as_str());
    assert_eq!(listed[0].requested_by, "alice");
    assert_eq!(listed[0].problem, None);
    assert!(
        store.save_suspended(&run, "host").await.is_err(),
        "one open suspension per run"
    );
    assert!(matches!(
        store.load_suspended("nope").await,
        Err(LoadError::NotFound(id)) if id == "nope"
    ));
}

#[tokio::test]
async fn a_corrupt_document_is_left_untouched_for_an_operator() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run, "host").await.unwrap();
    Query::new(
        "UPDATE suspended_run SET document = replace(document, 'delete_branch', 'delete_branches')",
    )
    .execute_on(&store)
    .await
    .unwrap();
    let before: String = Query::new("SELECT document FROM suspended_run")
        .scalar_on(&store)
        .await
        .unwrap();
    match store.load_suspended(run.run_id()).await {
        Err(LoadError::Corrupt { error, .. }) => assert_eq!(
            error.reason,
            "the checksum does not match the body: the document was changed or damaged"
        ),
        other => panic!("expected a corrupt run, got {other:?}"),
    }
    let digest = run.digest();
    match store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            Answer::Approve,
        )
        .await
    {
        Err(ClaimError::Corrupt { .. }) => {}
        other => panic!("expected the claim to refuse a corrupt run, got {other:?}"),
    }
    let listed = store.open_runs().await.unwrap();
    assert_eq!(listed.len(), 1, "still open, still there");
    assert!(listed[0].problem.is_some());
    let after: String = Query::new("SELECT document FROM suspended_run")
        .scalar_on(&store)
        .await
        .unwrap();
    assert_eq!(before, after, "the document is byte-for-byte as it was");
    assert!(store.decisions(run.run_id()).await.unwrap().is_empty());
}

/// A missing or stale digest, and a decision that does not fit the kind of
/// pause, are refused before anything changes; resume never runs.
#[tokio::test]
async fn a_stale_digest_or_a_decision_that_does_not_fit_changes_nothing() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run, "host").await.unwrap();
    for digest in [None, Some(TurnDigest::from_text("sha256:00"))] {
        match store
            .decide(
                run.run_id(),
                digest.as_ref(),
                &operator("bob"),
                Answer::Approve,
            )
            .await
        {
            Err(error @ ClaimError::StaleDigest { .. }) => {
                let text = error.to_string();
                assert!(
                    !text.contains("sha256:"),
                    "never shows the expected digest: {text}"
                );
            }
            other => panic!("expected a stale digest, got {other:?}"),
        }
    }
    let digest = run.digest();
    // Input for a run that awaits approval, through either kind of pause.
    let as_input = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            Answer::Input(json!({})),
        )
        .await;
    let as_approval = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            Answer::Input(json!({})),
        )
        .await;
    for refused in [
        as_input.map(drop).map_err(|e| e.to_string()),
        as_approval.map(drop).map_err(|e| e.to_string()),
    ] {
        assert_eq!(
            refused,
            Err(format!(
                "run `{}` awaits approval, and a decision `input submitted` does not fit it",
                run.run_id()
            ))
        );
    }
    assert!(waits(&store, run.run_id()).await);
}

/// Deciding only records; the host that owns the run resumes it — once. A
/// host of another name never sees it.
#[tokio::test]
async fn a_recorded_decision_is_resumed_once_by_its_host() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run, "worker").await.unwrap();
    let digest = run.digest();
    let recorded = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            Answer::Approve,
        )
        .await
        .unwrap();
    assert_eq!(recorded.owner, "worker");
    assert_eq!(recorded.record.decided_by, "bob");
    // Recorded, nothing ran: the run is decided and waits for its host.
    let listed = store.open_runs().await.unwrap();
    assert_eq!(
        (listed[0].state.as_str(), listed[0].execution.as_str()),
        ("decided", "pending")
    );
    assert_eq!(
        listed[0].standing(),
        "decided; host `worker` will resume it"
    );
    let elsewhere = Host::new(store.clone(), "elsewhere").unwrap();
    assert!(elsewhere.next().await.unwrap().is_none());

    let host = Host::new(store.clone(), "worker").unwrap();
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    let resumed = host.resume_all(&registry, &model).await.unwrap();
    assert_eq!(resumed.len(), 1);
    assert!(
        matches!(&resumed[0].ended, Ended::Finished { answer } if answer == "done"),
        "{resumed:?}"
    );
    let state = resumed[0].state.as_ref().unwrap();
    let ran = state
        .transcript
        .iter()
        .filter(|m| matches!(m, toolgate::run::Message::Tool { content, .. } if content.starts_with("deleted")))
        .count();
    assert_eq!(ran, 1, "the approved call ran once");
    assert!(host.next().await.unwrap().is_none(), "resumed exactly once");
    assert!(
        !waits(&store, run.run_id()).await,
        "decided runs do not wait"
    );
    assert!(
        store.open_runs().await.unwrap().is_empty(),
        "the run is done"
    );
    let all = store.all_runs().await.unwrap();
    assert_eq!(all[0].outcome.as_deref(), Some("finished"));

    let decisions = store.decisions(run.run_id()).await.unwrap();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].verdict, DecisionKind::Approved);
    assert_eq!(decisions[0].decided_by, "bob");
    assert_eq!(decisions[0].tools, ["delete_branch"]);
    assert!(!decisions[0].self_decided);
    assert_eq!(decisions[0].digest, digest);
    match store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("carol"),
            Answer::Approve,
        )
        .await
    {
        Err(ClaimError::AlreadyDecided { by, .. }) => assert_eq!(by.as_deref(), Some("bob")),
        other => panic!("expected the run to be decided already, got {other:?}"),
    }
    let history = store.run_history(run.run_id()).await.unwrap();
    assert_eq!(history.calls.len(), 1);
    assert_eq!(history.calls[0].state, "ended");
    assert_eq!(history.calls[0].effect, "non_idempotent_write");
}

/// Four eyes is judged when the decision is recorded, by the core's own
/// check: the requester's approval changes nothing, and someone else's is
/// recorded.
#[tokio::test]
async fn a_self_approval_under_four_eyes_is_refused_when_recorded() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    let registry = registry();
    let four_eyes = RunOptions {
        four_eyes: true,
        ..RunOptions::default()
    };
    let run = suspended_with(&registry, "alice", four_eyes).await;
    store.save_suspended(&run, "host").await.unwrap();
    let digest = run.digest();
    match store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("alice"),
            Answer::Approve,
        )
        .await
    {
        Err(ClaimError::Refused {
            reason: Refusal::SelfApproval { who },
            ..
        }) => assert_eq!(who, "alice"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(waits(&store, run.run_id()).await);
    assert!(store.decisions(run.run_id()).await.unwrap().is_empty());
    store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            Answer::Approve,
        )
        .await
        .unwrap();
}

/// A decision changed in the database after it was recorded — here its
/// decider set to the requester of a four-eyes run — is refused at resume by
/// the core's check: it stays in the audit trail, voided with why, and the
/// run waits again for a fresh decision. Nothing ran.
#[tokio::test]
async fn a_decision_refused_at_resume_is_voided_and_the_run_waits_again() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    let registry = registry();
    let four_eyes = RunOptions {
        four_eyes: true,
        ..RunOptions::default()
    };
    let run = suspended_with(&registry, "alice", four_eyes).await;
    store.save_suspended(&run, "host").await.unwrap();
    let digest = run.digest();
    store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            Answer::Approve,
        )
        .await
        .unwrap();
    Query::new("UPDATE decision SET decided_by = 'alice'")
        .execute_on(&store)
        .await
        .unwrap();
    let host = Host::new(store.clone(), "host").unwrap();
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    let resumed = host.resume_all(&registry, &model).await.unwrap();
    assert!(
        matches!(
            &resumed[0].ended,
            Ended::Refused {
                reason: Refusal::SelfApproval { .. }
            }
        ),
        "{resumed:?}"
    );
    assert!(waits(&store, run.run_id()).await, "the run waits again");
    assert_eq!(store.load_suspended(run.run_id()).await.unwrap(), run);
    let decisions = store.decisions(run.run_id()).await.unwrap();
    assert!(
        decisions[0]
            .voided
            .as_deref()
            .is_some_and(|why| why.contains("must come from someone else")),
        "{decisions:?}"
    );
    assert!(
        store
            .run_history(run.run_id())
            .await
            .unwrap()
            .calls
            .is_empty(),
        "nothing ran"
    );
}

/// The turn runs, then the run cannot go on (the model fails): the failure
/// is the run's stored outcome; nothing waits and nothing runs again.
#[tokio::test]
async fn a_run_error_after_the_turn_ran_is_the_runs_outcome() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run, "host").await.unwrap();
    let digest = run.digest();
    store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            Answer::Approve,
        )
        .await
        .unwrap();
    let host = Host::new(store.clone(), "host").unwrap();
    // No reply left: the model fails after the approved call ran.
    let resumed = host
        .resume_all(&registry, &ScriptedModel::default())
        .await
        .unwrap();
    match &resumed[0].ended {
        Ended::Failed { error } => assert!(error.contains("no more replies"), "{error}"),
        other => panic!("expected a failure, got {other:?}"),
    }
    assert!(host.next().await.unwrap().is_none());
    assert!(store.open_runs().await.unwrap().is_empty());
    let all = store.all_runs().await.unwrap();
    assert!(
        all[0]
            .outcome
            .as_deref()
            .is_some_and(|o| o.starts_with("failed:"))
    );
    assert_eq!(store.decisions(run.run_id()).await.unwrap().len(), 1);
}

/// Charges a card: counts its calls, and the first one hangs, the way a call
/// does when its host dies under it.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct Charge(Arc<AtomicUsize>);

impl Execute for Charge {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_hours(1)).await;
        }
        ToolOutput::text("charged")
    }
}

/// A host that stops mid-call leaves the call started. Once its lease runs
/// out another host of the name picks the run up, and does not run the
/// `non_idempotent_write` again: the run is "outcome unknown", visibly, until
/// an operator chooses. `rerun` runs it once more; `skip` tells the model its
/// outcome is unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one story, step by step, for each choice"
)]
async fn a_host_stopped_mid_call_leaves_an_unknown_outcome_until_an_operator_chooses() {
    for choice in [Choice::Rerun, Choice::Skip] {
        let dir = TestDb::new().await;
        let store = open(&dir).await;
        let charges = Arc::new(AtomicUsize::new(0));
        let registry = Registry::builder()
            .builtin(Charge(Arc::clone(&charges)))
            .build()
            .unwrap();
        let model = ScriptedModel::new([Reply::Calls {
            content: None,
            calls: vec![ToolCall {
                id: "c1".into(),
                name: "charge".into(),
                arguments: json!({"cents": 500}),
            }],
        }]);
        let log = MemoryLog::new();
        let run = match Agent::new(&registry, &model, &log)
            .start(RunRequest::new("alice", "pay"))
            .await
        {
            Ok(Outcome::AwaitingApproval(run)) => SuspendedRun::AwaitingApproval(run),
            other => panic!("expected an approval pause, got {other:?}"),
        };
        let run_id = run.run_id().to_owned();
        store.save_suspended(&run, "payments").await.unwrap();
        store
            .decide(
                &run_id,
                Some(&run.digest()),
                &operator("bob"),
                Answer::Approve,
            )
            .await
            .unwrap();

        // Long enough that a loaded machine reads the run's standing
        // before the lease runs out.
        let lease = Duration::from_secs(1);
        let first = Host::new(store.clone(), "payments")
            .unwrap()
            .with_lease(lease);
        let task = first.next().await.unwrap().unwrap();
        let dies = {
            let registry = &registry;
            let model = ScriptedModel::new([Reply::Text("paid".into())]);
            async move { first.resume(task, registry, &model).await }
        };
        // The host dies while the charge runs.
        tokio::select! {
            ended = dies => panic!("the hanging call ended: {ended:?}"),
            () = async { while charges.load(Ordering::SeqCst) == 0 { tokio::task::yield_now().await } } => {}
        }
        let listed = store.open_runs().await.unwrap();
        assert!(
            listed[0].standing().starts_with("executing c1 (charge)"),
            "{}",
            listed[0].standing()
        );
        tokio::time::sleep(lease * 2).await;

        let second = Host::new(store.clone(), "payments")
            .unwrap()
            .with_lease(lease);
        let task = second
            .next()
            .await
            .unwrap()
            .expect("the stale run is picked up");
        assert!(task.is_recovery());
        let resumed = second
            .resume(task, &registry, &ScriptedModel::default())
            .await
            .unwrap();
        assert!(
            matches!(&resumed.ended, Ended::OutcomeUnknown { call_id, tool, .. } if call_id == "c1" && tool == "charge"),
            "{resumed:?}"
        );
        assert_eq!(
            charges.load(Ordering::SeqCst),
            1,
            "not run again on its own"
        );
        let listed = store.open_runs().await.unwrap();
        assert_eq!(listed[0].standing(), "outcome unknown");
        assert!(
            listed[0]
                .outcome
                .as_deref()
                .is_some_and(|o| o.contains("call `c1` (charge)"))
        );
        assert!(
            second.next().await.unwrap().is_none(),
            "it waits for an operator"
        );

        let [unknown] = store
            .unknown_calls(&run_id)
            .await
            .unwrap()
            .try_into()
            .unwrap();
        assert_eq!((unknown.call_id.as_str(), unknown.attempt), ("c1", 1));
        assert_eq!(unknown.arguments, json!({"cents": 500}));
        let chosen = store
            .choose(
                &run_id,
                &operator("carol"),
                &Choosing {
                    call_id: "c1",
                    digest: &unknown.digest,
                    choice,
                    reason: "the processor has no record of it",
                },
            )
            .await
            .unwrap();
        assert!(chosen.stands);
        assert_eq!(
            (chosen.call_id.as_str(), chosen.owner.as_str()),
            ("c1", "payments")
        );
        let model = ScriptedModel::new([Reply::Text("paid".into())]);
        let resumed = second.resume_all(&registry, &model).await.unwrap();
        assert!(
            matches!(&resumed[0].ended, Ended::Finished { .. }),
            "{resumed:?}"
        );
        let result = resumed[0]
            .state
            .as_ref()
            .unwrap()
            .transcript
            .iter()
            .rev()
            .find_map(|m| match m {
                toolgate::run::Message::Tool { content, .. } => Some(content.clone()),
                _ => None,
            });
        let history = store.run_history(&run_id).await.unwrap();
        match choice {
            Choice::Rerun => {
                assert_eq!(charges.load(Ordering::SeqCst), 2, "run once more");
                assert_eq!(result.as_deref(), Some("charged"));
                assert_eq!(history.calls[0].attempts, 2);
            }
            Choice::Skip => {
                assert_eq!(charges.load(Ordering::SeqCst), 1, "never run again");
                assert!(result.is_some_and(|r| {
                    r.contains("its outcome is unknown, and carol chose not to run it again")
                }));
            }
        }
        assert_eq!(
            history.calls[0].choices,
            [format!(
                "{} by carol (name from flag, through library, attempt 1): the processor has no record of it",
                choice.as_str()
            )]
        );
        let again = store
            .choose(
                &run_id,
                &operator("carol"),
                &Choosing {
                    call_id: "c1",
                    digest: &unknown.digest,
                    choice,
                    reason: "again",
                },
            )
            .await;
        assert!(
            matches!(again, Err(ClaimError::Store(StoreError::NotUnknown(_)))),
            "nothing left to choose: {again:?}"
        );
    }
}

/// Several processes of one host — separate store handles on one file —
/// reach for one decided run at once, 200 times: exactly one gets it.
#[test]
fn hosts_of_one_name_resume_a_decided_run_exactly_once() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = TestDb::new().await;
        let registry = registry();
        let mut stores = Vec::new();
        for _ in 0..4 {
            stores.push(open(&dir).await);
        }
        for round in 0..200 {
            let run = suspended(&registry, "alice").await;
            stores[0].save_suspended(&run, "worker").await.unwrap();
            stores[round % 4]
                .decide(
                    run.run_id(),
                    Some(&run.digest()),
                    &operator("bob"),
                    Answer::Approve,
                )
                .await
                .unwrap();
            let tasks: Vec<_> = (0..8)
                .map(|i| {
                    let host = Host::new(stores[i % 4].clone(), "worker").unwrap();
                    tokio::spawn(async move { host.next().await.map(|t| t.is_some()) })
                })
                .collect();
            let mut claimed = 0;
            for task in tasks {
                claimed += usize::from(task.await.unwrap().unwrap());
            }
            assert_eq!(claimed, 1, "round {round}");
        }
    });
}

/// `deciders` concurrent decisions on one run, spread over `stores`, each
/// spawned — so a decision's future is `Send`, or this does not compile;
/// returns how many won, failing on anything but a win or `AlreadyDecided`.
async fn race(stores: &[Arc<Store>], run_id: &str, digest: &TurnDigest, deciders: usize) -> usize {
    let tasks: Vec<_> = (0..deciders)
        .map(|decider| {
            let store = Arc::clone(&stores[decider % stores.len()]);
            let (run_id, digest) = (run_id.to_owned(), digest.clone());
            tokio::spawn(async move {
                store
                    .decide(
                        &run_id,
                        Some(&digest),
                        &operator(&format!("op-{decider}")),
                        Answer::Approve,
                    )
                    .await
            })
        })
        .collect();
    let mut winners = 0;
    for task in tasks {
        match task.await {
            Ok(Ok(_)) => winners += 1,
            Ok(Err(ClaimError::AlreadyDecided { .. })) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    winners
}

/// The same race between separate store handles on one file — separate
/// pools and no shared in-process queue, as separate processes would be —
/// is decided by SQLite's lock and the conditional update alone.
#[test]
fn deciders_on_separate_handles_exactly_one_wins() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(8)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let dir = TestDb::new().await;
        let mut handles = Vec::new();
        for _ in 0..4 {
            handles.push(Arc::new(open(&dir).await));
        }
        let registry = registry();
        for round in 0..50 {
            let run = suspended(&registry, "alice").await;
            handles[0].save_suspended(&run, "host").await.unwrap();
            let digest = run.digest();
            let winners = race(&handles, run.run_id(), &digest, 8).await;
            assert_eq!(winners, 1, "round {round}");
            assert_eq!(handles[1].decisions(run.run_id()).await.unwrap().len(), 1);
        }
    });
}

/// 16 deciders at once on the same run, 1,000 times: exactly one wins each
/// time, every other gets `AlreadyDecided`, and each run has one decision row.
#[test]
fn sixteen_concurrent_deciders_exactly_one_wins_a_thousand_times() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(16)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let dir = TestDb::new().await;
        let store = Arc::new(open(&dir).await);
        let registry = registry();
        let template = suspended(&registry, "alice").await;
        let SuspendedRun::AwaitingApproval(template) = template else {
            panic!("awaiting approval");
        };
        let document = template.encode().unwrap();
        for round in 0..1_000 {
            // The same pending turn under a fresh run id.
            let run_id = format!("run-{round:04}");
            let mut value: Value = serde_json::from_str(&document).unwrap();
            *value
                .pointer_mut("/body/run/run_id")
                .expect("the document names its run") = json!(run_id);
            let body = value["body"].to_string();
            value["checksum"] = json!(toolgate::testing::rules::document_checksum(
                value["version"].as_u64().unwrap_or_default(),
                value["status"].as_str().unwrap_or_default(),
                &body
            ));
            let run = SuspendedRun::decode(&value.to_string()).unwrap();
            store.save_suspended(&run, "host").await.unwrap();
            // The digest names this run: each round's is its own.
            let digest = run.digest();
            let winners = race(&[Arc::clone(&store)], &run_id, &digest, 16).await;
            assert_eq!(winners, 1, "round {round}");
        }
        let rows = Query::new(
            "SELECT run_id, COUNT(*) AS n FROM decision GROUP BY run_id ORDER BY run_id",
        )
        .fetch_all_on(&store)
        .await
        .unwrap();
        assert_eq!(rows.len(), 1_000);
        assert!(
            rows.iter()
                .all(|row| row.try_get::<i64, _>("n").unwrap() == 1)
        );
    });
}

/// A decision row this build cannot read is an error, never a guessed
/// verdict or an empty tool list.
#[tokio::test]
async fn an_unreadable_decision_row_is_an_error_not_a_guess() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run, "host").await.unwrap();
    let digest = run.digest();
    store
        .decide(run.run_id(), Some(&digest), &operator("bob"), Answer::Deny)
        .await
        .unwrap();
    assert_eq!(
        store.decisions(run.run_id()).await.unwrap()[0].verdict,
        DecisionKind::Denied
    );
    // The verdict column's CHECK refuses unknown verdicts outright.
    let verdict = Query::new("UPDATE decision SET verdict = 'waved_through'")
        .execute_on(&store)
        .await;
    assert!(verdict.is_err());
    Query::new("UPDATE decision SET tools = 'not json'")
        .execute_on(&store)
        .await
        .unwrap();
    let read = store.decisions(run.run_id()).await.unwrap_err().to_string();
    assert!(
        read.starts_with("stored decision tool list is unreadable"),
        "{read}"
    );
}

fn key() -> toolgate::integrity::IntegrityKey {
    toolgate::integrity::IntegrityKey::new(b"a key kept outside the database").expect("long enough")
}

/// What a database writer without the key does: change the document, and
/// re-seal it with the plain checksum anyone can compute (and the columns to
/// match, so only the seal can tell).
async fn tamper(store: &Store, run_id: &str, pointer: &str, value: Value) {
    let document: String =
        Query::new("SELECT document FROM suspended_run WHERE run_id = $1 AND state = 'open'")
            .bind(run_id)
            .scalar_on(store)
            .await
            .unwrap();
    let mut doc: Value = serde_json::from_str(&document).unwrap();
    *doc.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("no {pointer}")) = value;
    let body = doc["body"].to_string();
    doc["checksum"] = json!(toolgate::testing::rules::document_checksum(
        doc["version"].as_u64().unwrap_or_default(),
        doc["status"].as_str().unwrap_or_default(),
        &body
    ));
    let requested_by = doc["body"]["run"]["requested_by"]
        .as_str()
        .expect("a requester")
        .to_owned();
    // The turn digest is public arithmetic too: the column is made to match.
    let digest = SuspendedRun::decode(&doc.to_string())
        .unwrap()
        .digest()
        .as_str()
        .to_owned();
    Query::new(
        "UPDATE suspended_run SET document = $1, requested_by = $2, digest = $3
         WHERE run_id = $4 AND state = 'open'",
    )
    .bind(doc.to_string())
    .bind(requested_by)
    .bind(digest)
    .bind(run_id)
    .execute_on(store)
    .await
    .unwrap();
}

/// With a key: flipping four eyes, the requester or an argument in the
/// database and re-sealing with the plain checksum is refused at load, at
/// listing and at claim; without a key the same change loads — which is what
/// `runs list` warns about.
#[tokio::test]
async fn with_a_key_a_re_sealed_change_in_the_database_is_refused_at_load() {
    for (pointer, value) in [
        ("/body/run/options/four_eyes", json!(false)),
        ("/body/run/requested_by", json!("mallory")),
        ("/body/pending/0/arguments/branch", json!("main")),
    ] {
        let dir = TestDb::new().await;
        let store = open(&dir).await.with_integrity_key(key());
        assert!(store.is_authenticated());
        let registry = registry();
        let run = suspended(&registry, "alice").await;
        store.save_suspended(&run, "host").await.unwrap();
        store.load_suspended(run.run_id()).await.unwrap();
        tamper(&store, run.run_id(), pointer, value.clone()).await;
        match store.load_suspended(run.run_id()).await {
            Err(LoadError::Corrupt { error, .. }) => assert!(
                error.reason.starts_with(
                    "the document carries a plain checksum, but this store authenticates"
                ),
                "{pointer}: {error}"
            ),
            other => panic!("{pointer}: expected a refusal, got {other:?}"),
        }
        let listed = store.open_runs().await.unwrap();
        assert!(listed[0].problem.is_some(), "{pointer}");
        let digest = run.digest();
        assert!(matches!(
            store
                .decide(
                    run.run_id(),
                    Some(&digest),
                    &operator("bob"),
                    Answer::Approve,
                )
                .await,
            Err(ClaimError::Corrupt { .. })
        ));

        // Without a key, the same change is accepted.
        let dir = TestDb::new().await;
        let plain = open(&dir).await;
        assert!(!plain.is_authenticated());
        plain.save_suspended(&run, "host").await.unwrap();
        tamper(&plain, run.run_id(), pointer, value).await;
        assert!(
            plain.load_suspended(run.run_id()).await.is_ok(),
            "{pointer}"
        );
    }
}

/// The columns kept beside a document are checked against it: a requester
/// column changed on its own is refused even without a key.
#[tokio::test]
async fn columns_that_disagree_with_the_document_are_refused() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run, "host").await.unwrap();
    for (column, value) in [
        ("requested_by", "bob"),
        ("digest", "sha256:00"),
        ("status", "waiting_for_input"),
    ] {
        // `column` is one of the three literals above.
        let saved: String = Query::new(format!(
            "SELECT {column} FROM suspended_run WHERE run_id = $1"
        ))
        .bind(run.run_id())
        .scalar_on(&store)
        .await
        .unwrap();
        let set = |v: &str| {
            Query::new(format!(
                "UPDATE suspended_run SET {column} = $1 WHERE run_id = $2"
            ))
            .bind(v.to_owned())
            .bind(run.run_id().to_owned())
        };
        set(value).execute_on(&store).await.unwrap();
        match store.load_suspended(run.run_id()).await {
            Err(LoadError::Corrupt { error, .. }) => assert!(
                error.reason.contains("disagrees with the document"),
                "{column}: {error}"
            ),
            other => panic!("{column}: expected a refusal, got {other:?}"),
        }
        set(&saved).execute_on(&store).await.unwrap();
        store.load_suspended(run.run_id()).await.unwrap();
    }
}

/// A decision row records where the decider's name came from, and with a key
/// carries a tag: a row changed afterwards does not read back.
#[tokio::test]
async fn decision_rows_keep_the_identity_source_and_verify_under_the_key() {
    let dir = TestDb::new().await;
    let store = open(&dir).await.with_integrity_key(key());
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run, "host").await.unwrap();
    let digest = run.digest();
    let env_bob = Operator::new(" Ｂｏｂ ", IdentitySource::Environment).expect("normalises");
    store
        .decide(run.run_id(), Some(&digest), &env_bob, Answer::Approve)
        .await
        .unwrap();
    let records = store.decisions(run.run_id()).await.unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].decided_by, "Bob");
    assert_eq!(records[0].decided_by_source, IdentitySource::Environment);
    Query::new("UPDATE decision SET decided_by = 'carol' WHERE run_id = $1")
        .bind(run.run_id())
        .execute_on(&store)
        .await
        .unwrap();
    let error = store.decisions(run.run_id()).await.unwrap_err().to_string();
    assert!(
        error.contains("does not verify under this store's integrity key"),
        "{error}"
    );
}

/// Four eyes compares people, not strings: the requester's name in another
/// case, width or with spaces is still the requester, and an empty name is
/// nobody.
#[tokio::test]
async fn self_decided_is_judged_on_normalised_names() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run, "host").await.unwrap();
    let digest = run.digest();
    let record = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("ＡＬＩＣＥ "),
            Answer::Approve,
        )
        .await
        .unwrap()
        .record;
    assert!(record.self_decided);
    assert_eq!(record.decided_by, "ALICE");
    assert!(Operator::new(" ", IdentitySource::Flag).is_err());
}

/// A decided suspension copied into a new open row — or a decided row set
/// back to open — is a replay: its digest names a turn already decided, and
/// the claim refuses it, key or no key.
#[tokio::test]
async fn a_decided_turn_copied_into_a_new_open_row_is_refused_as_a_replay() {
    let dir = TestDb::new().await;
    let store = open(&dir).await.with_integrity_key(key());
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run, "host").await.unwrap();
    let digest = run.digest();
    let first = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            Answer::Approve,
        )
        .await;
    assert!(first.is_ok(), "{first:?}");
    let copied = Query::new(
        "INSERT INTO suspended_run (run_id, status, document, digest, requested_by, created_at)
         SELECT run_id, status, document, digest, requested_by, created_at FROM suspended_run
         WHERE run_id = $1",
    )
    .bind(run.run_id())
    .execute_on(&store)
    .await;
    copied.expect("the copy is written");
    let again = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            Answer::Approve,
        )
        .await;
    match again {
        Err(ClaimError::AlreadyDecided { by, .. }) => {
            assert_eq!(by.as_deref(), Some("bob"));
        }
        other => panic!("expected the replay to be refused, got {other:?}"),
    }
}

/// A row written by the previous release holds the first digest rule's value
/// in its digest column: it still loads, lists without a problem, and is
/// decided with the digest `runs show` computes now.
#[tokio::test]
async fn a_version_1_row_with_its_old_digest_column_can_still_be_decided() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    let document = include_str!("../../tests/fixtures/v1-awaiting-approval.json").trim_end();
    let run = SuspendedRun::decode(document).expect("the v1 fixture decodes");
    let inserted = Query::new(
        "INSERT INTO suspended_run (run_id, status, document, digest, requested_by, created_at)
         VALUES ($1, 'awaiting_approval', $2, $3, 'alice', 0)",
    )
    .bind(run.run_id())
    .bind(document)
    .bind("sha256:73c17e85ad0c792e2db8ef8c24b1a5d6fdc43c15a2cd3f69a3095eb5dd02c6c0")
    .execute_on(&store)
    .await;
    inserted.expect("the v1 row is written");
    assert!(store.load_suspended(run.run_id()).await.is_ok());
    let listed = store.open_runs().await.unwrap();
    assert_eq!(listed[0].problem, None);
    let digest = run.digest();
    let decided = store
        .decide(run.run_id(), Some(&digest), &operator("bob"), Answer::Deny)
        .await;
    assert!(decided.is_ok(), "{decided:?}");
}

/// A store whose runs were saved under a key remembers it: a handle opened
/// without the key reads and writes no run, rather than accept one a database
/// writer re-sealed with the plain checksum.
#[tokio::test]
async fn a_keyed_store_reopened_without_its_key_reads_no_run() {
    let dir = TestDb::new().await;
    let keyed = open(&dir).await.with_integrity_key(key());
    assert!(!keyed.requires_key());
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    keyed.save_suspended(&run, "host").await.unwrap();
    keyed.close().await;
    let keyless = open(&dir).await;
    assert!(keyless.requires_key());
    assert!(!keyless.is_authenticated());
    match keyless.load_suspended(run.run_id()).await {
        Err(LoadError::Corrupt { error, .. }) => assert!(
            error.reason.contains("this handle has no integrity key"),
            "{error}"
        ),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let other = suspended(&registry, "carol").await;
    assert!(matches!(
        keyless.save_suspended(&other, "host").await,
        Err(StoreError::KeyRequired)
    ));
    assert!(matches!(
        keyless.decisions(run.run_id()).await,
        Err(StoreError::KeyRequired)
    ));
    let again = open(&dir).await.with_integrity_key(key());
    assert!(again.load_suspended(run.run_id()).await.is_ok());
}

/// A host waiting on one handle wakes when a decision is recorded through
/// another — a separate pool, as a decider on another machine would be. On
/// PostgreSQL the database announces it (`LISTEN`): the host wakes long
/// before its one-minute poll. On SQLite, where only the poll reaches
/// another process, the host polls every 50 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_host_wakes_when_another_handle_decides() {
    let db = TestDb::new().await;
    let hosts_store = open(&db).await;
    let deciders_store = open(&db).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    hosts_store.save_suspended(&run, "host").await.unwrap();
    let poll = if backend::on_postgres() {
        Duration::from_mins(1)
    } else {
        Duration::from_millis(50)
    };
    let host = Host::new(hosts_store.clone(), "host").unwrap();
    let waiting = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let task = host.wait(poll).await;
        (task.map(|t| t.run_id().to_owned()), started.elapsed())
    });
    // Let the host start waiting (and, on PostgreSQL, listening).
    tokio::time::sleep(Duration::from_millis(300)).await;
    deciders_store
        .decide(
            run.run_id(),
            Some(&run.digest()),
            &operator("bob"),
            Answer::Approve,
        )
        .await
        .unwrap();
    let (task, waited) = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("the host woke")
        .unwrap();
    assert_eq!(task.unwrap(), run.run_id());
    assert!(
        waited < Duration::from_secs(20),
        "woke after {waited:?}, not at its poll"
    );
}
