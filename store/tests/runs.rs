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

use serde_json::{Map, Value, json};
use toolgate::identity::{IdentitySource, Operator};
use toolgate::{
    Agent, Execute, Registry, Tool, ToolOutput,
    audit::DecisionKind,
    run::{Outcome, Reply, RunOptions, RunRequest, ToolCall},
    suspend::{
        AwaitingApproval, Refusal, ResumeError, SuspendedRun, SuspendedStatus, TurnDigest,
        WaitingForInput,
    },
    testing::{MemoryLog, ScriptedModel},
};
use toolgate_store::{ClaimError, Claimed, DecideError, LoadError, Store};

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

async fn open(dir: &tempfile::TempDir) -> Store {
    Store::open(dir.path().join("runs.db"))
        .await
        .expect("the store opens")
}

fn operator(name: &str) -> Operator {
    Operator::new(name, IdentitySource::Flag).expect("a usable name")
}

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// The resume a host writes: the claimed decision, with the claimed log,
/// through an agent whose model answers `replies`.
async fn resume(
    registry: &Registry,
    replies: Vec<Reply>,
    claimed: Claimed<AwaitingApproval>,
) -> Result<Outcome, ResumeError<AwaitingApproval>> {
    let model = ScriptedModel::new(replies);
    let log = claimed.log();
    let decision = claimed.decision();
    let agent = Agent::new(registry, &model, &log);
    claimed.run.decide(&agent, decision).await
}

/// A resume that claims and takes nothing further: for tests of the claim.
async fn claim_only(_: Claimed<AwaitingApproval>) -> Result<(), ResumeError<AwaitingApproval>> {
    Ok(())
}

/// A resume that must never be reached.
async fn unreachable<S>(_: Claimed<S>) -> Result<(), ResumeError<S>> {
    panic!("resume ran although the claim was not granted")
}

/// A resume that fails after the claim, the way a host's bug would.
async fn panics(_: Claimed<AwaitingApproval>) -> Result<(), ResumeError<AwaitingApproval>> {
    panic!("the host failed mid-resume")
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
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run).await.unwrap();
    let loaded = store.load_suspended(run.run_id()).await.unwrap();
    assert_eq!(loaded, run);
    let listed = store.open_runs().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].status, "awaiting_approval");
    assert_eq!(listed[0].digest, run.digest().as_str());
    assert_eq!(listed[0].requested_by, "alice");
    assert_eq!(listed[0].problem, None);
    assert!(
        store.save_suspended(&run).await.is_err(),
        "one open suspension per run"
    );
    assert!(matches!(
        store.load_suspended("nope").await,
        Err(LoadError::NotFound(id)) if id == "nope"
    ));
}

#[tokio::test]
async fn a_corrupt_document_is_left_untouched_for_an_operator() {
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run).await.unwrap();
    sqlx::query(
        "UPDATE suspended_run SET document = replace(document, 'delete_branch', 'delete_branches')",
    )
    .execute(store.pool())
    .await
    .unwrap();
    let before: String = sqlx::query_scalar("SELECT document FROM suspended_run")
        .fetch_one(store.pool())
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
            DecisionKind::Approved,
            unreachable::<AwaitingApproval>,
        )
        .await
    {
        Err(DecideError::Claim(ClaimError::Corrupt { .. })) => {}
        other => panic!("expected the claim to refuse a corrupt run, got {other:?}"),
    }
    let listed = store.open_runs().await.unwrap();
    assert_eq!(listed.len(), 1, "still open, still there");
    assert!(listed[0].problem.is_some());
    let after: String = sqlx::query_scalar("SELECT document FROM suspended_run")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(before, after, "the document is byte-for-byte as it was");
    assert!(store.decisions(run.run_id()).await.unwrap().is_empty());
}

/// A missing or stale digest, and a decision that does not fit the kind of
/// pause, are refused before anything changes; resume never runs.
#[tokio::test]
async fn a_stale_digest_or_a_decision_that_does_not_fit_changes_nothing() {
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run).await.unwrap();
    for digest in [None, Some(TurnDigest::from_text("sha256:00"))] {
        match store
            .decide(
                run.run_id(),
                digest.as_ref(),
                &operator("bob"),
                DecisionKind::Approved,
                unreachable::<AwaitingApproval>,
            )
            .await
        {
            Err(DecideError::Claim(error @ ClaimError::StaleDigest { .. })) => {
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
            DecisionKind::InputSubmitted,
            unreachable::<WaitingForInput>,
        )
        .await;
    let as_approval = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::InputSubmitted,
            unreachable::<AwaitingApproval>,
        )
        .await;
    for refused in [
        as_input.map_err(|e| e.to_string()),
        as_approval.map_err(|e| e.to_string()),
    ] {
        assert_eq!(
            refused,
            Err(format!(
                "run `{}` awaits approval, and a decision `input submitted` does not fit it",
                run.run_id()
            ))
        );
    }
    // An approval decided as an approval of input: the right verdict, the
    // wrong kind of pause.
    match store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::Approved,
            unreachable::<WaitingForInput>,
        )
        .await
    {
        Err(DecideError::Claim(ClaimError::DoesNotFit {
            status: SuspendedStatus::AwaitingApproval,
            verdict: DecisionKind::Approved,
            ..
        })) => {}
        other => panic!("expected the decision not to fit, got {other:?}"),
    }
    assert!(waits(&store, run.run_id()).await);
}

/// A decision taken through the gate: resume runs the turn once, the
/// decision row stays, and the run waits no more.
#[tokio::test]
async fn a_taken_decision_keeps_the_claim() {
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run).await.unwrap();
    let digest = run.digest();
    let outcome = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::Approved,
            |claimed| resume(&registry, vec![Reply::Text("done".into())], claimed),
        )
        .await;
    match outcome {
        Ok(Outcome::Finished { answer, state }) => {
            assert_eq!(answer, "done");
            assert!(
                state
                    .transcript
                    .iter()
                    .any(|m| matches!(m, toolgate::run::Message::Tool { content, .. } if content.starts_with("deleted"))),
                "the approved call ran"
            );
        }
        other => panic!("expected the run to finish, got {other:?}"),
    }
    assert!(
        !waits(&store, run.run_id()).await,
        "decided runs do not wait"
    );
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
            DecisionKind::Approved,
            unreachable::<AwaitingApproval>,
        )
        .await
    {
        Err(DecideError::Claim(ClaimError::AlreadyDecided { by, .. })) => {
            assert_eq!(by.as_deref(), Some("bob"));
        }
        other => panic!("expected the run to be decided already, got {other:?}"),
    }
}

/// A decision the core refuses after the claim — here the requester's own
/// approval of a four-eyes run, which the claim does not judge — gives the
/// claim back: the run waits again, with no decision row, and someone else
/// can decide it.
#[tokio::test]
async fn a_refused_resume_releases_the_claim_and_the_run_waits_again() {
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let four_eyes = RunOptions {
        four_eyes: true,
        ..RunOptions::default()
    };
    let run = suspended_with(&registry, "alice", four_eyes).await;
    store.save_suspended(&run).await.unwrap();
    let digest = run.digest();
    let refused = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("alice"),
            DecisionKind::Approved,
            |claimed| resume(&registry, vec![Reply::Text("done".into())], claimed),
        )
        .await;
    match refused {
        Err(DecideError::Refused {
            run: handed_back,
            reason: Refusal::SelfApproval { who },
        }) => {
            assert_eq!(who, "alice");
            assert_eq!(SuspendedRun::AwaitingApproval(handed_back), run);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(
        waits(&store, run.run_id()).await,
        "released runs wait again"
    );
    assert_eq!(store.load_suspended(run.run_id()).await.unwrap(), run);

    let taken = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::Approved,
            |claimed| resume(&registry, vec![Reply::Text("done".into())], claimed),
        )
        .await;
    assert!(matches!(taken, Ok(Outcome::Finished { .. })), "{taken:?}");
    // The refused decision stays in the audit trail, voided with why; the
    // one that was taken stands.
    let decisions = store.decisions(run.run_id()).await.unwrap();
    assert_eq!(decisions.len(), 2, "{decisions:?}");
    assert_eq!(decisions[0].decided_by, "alice");
    assert!(
        decisions[0]
            .voided
            .as_deref()
            .is_some_and(|why| why.contains("must come from someone else")),
        "{decisions:?}"
    );
    assert_eq!(decisions[1].decided_by, "bob");
    assert_eq!(decisions[1].voided, None);
}

/// Resuming with a decision other than the claimed one is refused by the
/// claimed log when the turn would run a write — and so released.
#[tokio::test]
async fn a_decision_other_than_the_claimed_one_is_refused_and_released() {
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run).await.unwrap();
    let digest = run.digest();
    let refused = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::Denied,
            |claimed: Claimed<AwaitingApproval>| async {
                let model = ScriptedModel::new([Reply::Text("done".into())]);
                let log = claimed.log();
                let agent = Agent::new(&registry, &model, &log);
                claimed
                    .run
                    .approve(&agent, "bob", Some(digest.clone()))
                    .await
            },
        )
        .await;
    match refused {
        Err(DecideError::Refused { reason, .. }) => assert!(
            reason.to_string().contains("is not the one claimed"),
            "{reason}"
        ),
        other => panic!("expected the mismatched decision to be refused, got {other:?}"),
    }
    assert!(waits(&store, run.run_id()).await);
}

/// The decision is taken and the turn runs, then the run cannot go on (the
/// model fails): the claim stands, since the write ran.
#[tokio::test]
async fn a_run_error_after_the_turn_ran_keeps_the_claim() {
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run).await.unwrap();
    let digest = run.digest();
    let failed = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::Approved,
            // No reply left: the model fails after the approved call ran.
            |claimed| resume(&registry, Vec::new(), claimed),
        )
        .await;
    match failed {
        Err(DecideError::Resume(ResumeError::Run(error))) => {
            assert!(error.to_string().contains("no more replies"), "{error}");
        }
        other => panic!("expected a run error, got {other:?}"),
    }
    assert!(!waits(&store, run.run_id()).await, "the claim stands");
    assert_eq!(store.decisions(run.run_id()).await.unwrap().len(), 1);
}

/// A panic inside resume may come after the turn ran: the claim stands,
/// whole — the run decided and its decision row written, neither without the
/// other — and the panic reaches the caller.
#[tokio::test]
async fn a_panic_inside_resume_keeps_the_claim_whole() {
    let dir = temp();
    let store = Arc::new(open(&dir).await);
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run).await.unwrap();
    let (run_id, digest) = (run.run_id().to_owned(), run.digest());
    let task = tokio::spawn({
        let store = Arc::clone(&store);
        async move {
            store
                .decide(
                    &run_id,
                    Some(&digest),
                    &operator("bob"),
                    DecisionKind::Approved,
                    panics,
                )
                .await
        }
    });
    let joined = task.await;
    assert!(
        joined.is_err_and(|e| e.is_panic()),
        "the panic is not swallowed"
    );
    assert!(!waits(&store, run.run_id()).await, "the claim stands");
    assert_eq!(store.decisions(run.run_id()).await.unwrap().len(), 1);
}

/// The same when the caller drops the decision while resume is under way.
#[tokio::test]
async fn a_decision_dropped_mid_resume_keeps_the_claim_whole() {
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run).await.unwrap();
    let digest = run.digest();
    let (claimed_tx, claimed_rx) = tokio::sync::oneshot::channel();
    let bob = operator("bob");
    let decision = store.decide(
        run.run_id(),
        Some(&digest),
        &bob,
        DecisionKind::Approved,
        |_: Claimed<AwaitingApproval>| async move {
            let _ = claimed_tx.send(());
            std::future::pending::<Result<(), ResumeError<AwaitingApproval>>>().await
        },
    );
    tokio::select! {
        biased;
        decided = decision => panic!("a pending resume ended: {decided:?}"),
        claimed = claimed_rx => claimed.expect("resume began"),
    }
    assert!(!waits(&store, run.run_id()).await, "the claim stands");
}

/// A refused decision whose release fails (the store closed under it) leaves
/// the claim as it was, whole, and says so.
#[tokio::test]
async fn a_release_that_fails_leaves_the_claim_whole_and_says_so() {
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let four_eyes = RunOptions {
        four_eyes: true,
        ..RunOptions::default()
    };
    let run = suspended_with(&registry, "alice", four_eyes).await;
    store.save_suspended(&run).await.unwrap();
    let digest = run.digest();
    let refused = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("alice"),
            DecisionKind::Approved,
            |claimed| async {
                store.close().await;
                resume(&registry, Vec::new(), claimed).await
            },
        )
        .await;
    match refused {
        Err(error @ DecideError::NotReleased { .. }) => assert!(
            error
                .to_string()
                .contains("its claim could not be released, so the run no longer waits"),
            "{error}"
        ),
        other => panic!("expected the release to fail, got {other:?}"),
    }
    let reopened = open(&dir).await;
    assert!(!waits(&reopened, run.run_id()).await, "the claim stands");
    assert_eq!(reopened.decisions(run.run_id()).await.unwrap().len(), 1);
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
                        DecisionKind::Approved,
                        claim_only,
                    )
                    .await
            })
        })
        .collect();
    let mut winners = 0;
    for task in tasks {
        match task.await {
            Ok(Ok(())) => winners += 1,
            Ok(Err(DecideError::Claim(ClaimError::AlreadyDecided { .. }))) => {}
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
        let dir = temp();
        let mut handles = Vec::new();
        for _ in 0..4 {
            handles.push(Arc::new(open(&dir).await));
        }
        let registry = registry();
        for round in 0..50 {
            let run = suspended(&registry, "alice").await;
            handles[0].save_suspended(&run).await.unwrap();
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
        let dir = temp();
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
            value["checksum"] = json!(toolgate::suspend::body_checksum(&body));
            let run = SuspendedRun::decode(&value.to_string()).unwrap();
            store.save_suspended(&run).await.unwrap();
            // The digest names this run: each round's is its own.
            let digest = run.digest();
            let winners = race(&[Arc::clone(&store)], &run_id, &digest, 16).await;
            assert_eq!(winners, 1, "round {round}");
        }
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT run_id, COUNT(*) FROM decision GROUP BY run_id ORDER BY run_id")
                .fetch_all(store.pool())
                .await
                .unwrap();
        assert_eq!(rows.len(), 1_000);
        assert!(rows.iter().all(|(_, n)| *n == 1));
    });
}

/// A decision row this build cannot read is an error, never a guessed
/// verdict or an empty tool list.
#[tokio::test]
async fn an_unreadable_decision_row_is_an_error_not_a_guess() {
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run).await.unwrap();
    let digest = run.digest();
    store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::Denied,
            claim_only,
        )
        .await
        .unwrap();
    assert_eq!(
        store.decisions(run.run_id()).await.unwrap()[0].verdict,
        DecisionKind::Denied
    );
    // The verdict column's CHECK refuses unknown verdicts outright.
    let verdict = sqlx::query("UPDATE decision SET verdict = 'waved_through'")
        .execute(store.pool())
        .await;
    assert!(verdict.is_err());
    sqlx::query("UPDATE decision SET tools = 'not json'")
        .execute(store.pool())
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
    let document: String = sqlx::query_scalar(
        "SELECT document FROM suspended_run WHERE run_id = ? AND state = 'open'",
    )
    .bind(run_id)
    .fetch_one(store.pool())
    .await
    .unwrap();
    let mut doc: Value = serde_json::from_str(&document).unwrap();
    *doc.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("no {pointer}")) = value;
    let body = doc["body"].to_string();
    doc["checksum"] = json!(toolgate::suspend::body_checksum(&body));
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
    sqlx::query(
        "UPDATE suspended_run SET document = ?, requested_by = ?, digest = ?
         WHERE run_id = ? AND state = 'open'",
    )
    .bind(doc.to_string())
    .bind(requested_by)
    .bind(digest)
    .bind(run_id)
    .execute(store.pool())
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
        let dir = temp();
        let store = open(&dir).await.with_integrity_key(key());
        assert!(store.is_authenticated());
        let registry = registry();
        let run = suspended(&registry, "alice").await;
        store.save_suspended(&run).await.unwrap();
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
                    DecisionKind::Approved,
                    unreachable::<AwaitingApproval>,
                )
                .await,
            Err(DecideError::Claim(ClaimError::Corrupt { .. }))
        ));

        // Without a key, the same change is accepted.
        let dir = temp();
        let plain = open(&dir).await;
        assert!(!plain.is_authenticated());
        plain.save_suspended(&run).await.unwrap();
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
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run).await.unwrap();
    for (column, value) in [
        ("requested_by", "bob"),
        ("digest", "sha256:00"),
        ("status", "waiting_for_input"),
    ] {
        // `column` is one of the three literals above.
        let saved: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT {column} FROM suspended_run WHERE run_id = ?"
        )))
        .bind(run.run_id())
        .fetch_one(store.pool())
        .await
        .unwrap();
        let set = |v: &str| {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "UPDATE suspended_run SET {column} = ? WHERE run_id = ?"
            )))
            .bind(v.to_owned())
            .bind(run.run_id().to_owned())
        };
        set(value).execute(store.pool()).await.unwrap();
        match store.load_suspended(run.run_id()).await {
            Err(LoadError::Corrupt { error, .. }) => assert!(
                error.reason.contains("disagrees with the document"),
                "{column}: {error}"
            ),
            other => panic!("{column}: expected a refusal, got {other:?}"),
        }
        set(&saved).execute(store.pool()).await.unwrap();
        store.load_suspended(run.run_id()).await.unwrap();
    }
}

/// A decision row records where the decider's name came from, and with a key
/// carries a tag: a row changed afterwards does not read back.
#[tokio::test]
async fn decision_rows_keep_the_identity_source_and_verify_under_the_key() {
    let dir = temp();
    let store = open(&dir).await.with_integrity_key(key());
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run).await.unwrap();
    let digest = run.digest();
    let env_bob = Operator::new(" Ｂｏｂ ", IdentitySource::Environment).expect("normalises");
    store
        .decide(
            run.run_id(),
            Some(&digest),
            &env_bob,
            DecisionKind::Approved,
            claim_only,
        )
        .await
        .unwrap();
    let records = store.decisions(run.run_id()).await.unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].decided_by, "Bob");
    assert_eq!(records[0].decided_by_source, IdentitySource::Environment);
    sqlx::query("UPDATE decision SET decided_by = 'carol' WHERE run_id = ?")
        .bind(run.run_id())
        .execute(store.pool())
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
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run).await.unwrap();
    let digest = run.digest();
    let record = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("ＡＬＩＣＥ "),
            DecisionKind::Approved,
            |claimed: Claimed<AwaitingApproval>| async move {
                Ok::<_, ResumeError<AwaitingApproval>>(claimed.record().clone())
            },
        )
        .await
        .unwrap();
    assert!(record.self_decided);
    assert_eq!(record.decided_by, "ALICE");
    assert!(Operator::new(" ", IdentitySource::Flag).is_err());
}

/// A decided suspension copied into a new open row — or a decided row set
/// back to open — is a replay: its digest names a turn already decided, and
/// the claim refuses it, key or no key.
#[tokio::test]
async fn a_decided_turn_copied_into_a_new_open_row_is_refused_as_a_replay() {
    let dir = temp();
    let store = open(&dir).await.with_integrity_key(key());
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    store.save_suspended(&run).await.unwrap();
    let digest = run.digest();
    let first = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::Approved,
            claim_only,
        )
        .await;
    assert!(first.is_ok(), "{first:?}");
    let copied = sqlx::query(
        "INSERT INTO suspended_run (run_id, status, document, digest, requested_by, created_at)
         SELECT run_id, status, document, digest, requested_by, created_at FROM suspended_run
         WHERE run_id = ?",
    )
    .bind(run.run_id())
    .execute(store.pool())
    .await;
    copied.expect("the copy is written");
    let again = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::Approved,
            unreachable::<AwaitingApproval>,
        )
        .await;
    match again {
        Err(DecideError::Claim(ClaimError::AlreadyDecided { by, .. })) => {
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
    let dir = temp();
    let store = open(&dir).await;
    let document = include_str!("../../tests/fixtures/v1-awaiting-approval.json").trim_end();
    let run = SuspendedRun::decode(document).expect("the v1 fixture decodes");
    let inserted = sqlx::query(
        "INSERT INTO suspended_run (run_id, status, document, digest, requested_by, created_at)
         VALUES (?, 'awaiting_approval', ?, ?, 'alice', 0)",
    )
    .bind(run.run_id())
    .bind(document)
    .bind("sha256:73c17e85ad0c792e2db8ef8c24b1a5d6fdc43c15a2cd3f69a3095eb5dd02c6c0")
    .execute(store.pool())
    .await;
    inserted.expect("the v1 row is written");
    assert!(store.load_suspended(run.run_id()).await.is_ok());
    let listed = store.open_runs().await.unwrap();
    assert_eq!(listed[0].problem, None);
    let digest = run.digest();
    let decided = store
        .decide(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::Denied,
            claim_only,
        )
        .await;
    assert!(decided.is_ok(), "{decided:?}");
}

/// A store whose runs were saved under a key remembers it: a handle opened
/// without the key reads and writes no run, rather than accept one a database
/// writer re-sealed with the plain checksum.
#[tokio::test]
async fn a_keyed_store_reopened_without_its_key_reads_no_run() {
    let dir = temp();
    let keyed = open(&dir).await.with_integrity_key(key());
    assert!(!keyed.requires_key());
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    keyed.save_suspended(&run).await.unwrap();
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
        keyless.save_suspended(&other).await,
        Err(toolgate_store::StoreError::KeyRequired)
    ));
    assert!(matches!(
        keyless.decisions(run.run_id()).await,
        Err(toolgate_store::StoreError::KeyRequired)
    ));
    let again = open(&dir).await.with_integrity_key(key());
    assert!(again.load_suspended(run.run_id()).await.is_ok());
}
