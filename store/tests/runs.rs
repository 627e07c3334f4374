//! Suspended runs in the store: saved with their status, loaded fail-closed,
//! claimed by exactly one of any number of concurrent deciders, and left
//! untouched when their document is corrupt.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolgate::identity::{IdentitySource, Operator};
use toolgate::{
    Agent, Execute, Registry, Tool, ToolOutput,
    audit::DecisionKind,
    run::{Outcome, Reply, RunRequest, ToolCall},
    suspend::{Decision, SuspendedRun, TurnDigest, Verdict},
    testing::{MemoryLog, ScriptedModel},
};
use toolgate_store::{ClaimError, LoadError, Store};

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
    match Registry::builder().builtin(DeleteBranch).build() {
        Ok(registry) => registry,
        Err(error) => panic!("{error}"),
    }
}

async fn suspended(registry: &Registry, requested_by: &str) -> SuspendedRun {
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
    match agent.start(RunRequest::new(requested_by, "tidy up")).await {
        Ok(Outcome::AwaitingApproval(run)) => SuspendedRun::AwaitingApproval(run),
        other => panic!("expected an approval pause, got {other:?}"),
    }
}

async fn open(dir: &tempfile::TempDir) -> Store {
    match Store::open(dir.path().join("runs.db")).await {
        Ok(store) => store,
        Err(error) => panic!("{error}"),
    }
}

fn operator(name: &str) -> Operator {
    match Operator::new(name, IdentitySource::Flag) {
        Ok(operator) => operator,
        Err(error) => panic!("{error}"),
    }
}

fn temp() -> tempfile::TempDir {
    match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => panic!("{error}"),
    }
}

#[tokio::test]
async fn a_saved_run_loads_with_its_status_and_a_second_open_row_is_refused() {
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    assert!(store.save_suspended(&run).await.is_ok());
    let loaded = store.load_suspended(run.run_id()).await;
    assert_eq!(loaded.as_ref().ok(), Some(&run));
    let listed = store.open_runs().await.unwrap_or_default();
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
    assert!(store.save_suspended(&run).await.is_ok());
    let damaged = sqlx::query(
        "UPDATE suspended_run SET document = replace(document, 'delete_branch', 'delete_branches')",
    )
    .execute(store.pool())
    .await;
    assert!(damaged.is_ok());
    let before: Option<String> = sqlx::query_scalar("SELECT document FROM suspended_run")
        .fetch_optional(store.pool())
        .await
        .ok()
        .flatten();
    match store.load_suspended(run.run_id()).await {
        Err(LoadError::Corrupt { error, .. }) => assert_eq!(
            error.reason,
            "the checksum does not match the body: the document was changed or damaged"
        ),
        other => panic!("expected a corrupt run, got {other:?}"),
    }
    let digest = run.digest();
    match store
        .claim(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::Approved,
        )
        .await
    {
        Err(ClaimError::Corrupt { .. }) => {}
        other => panic!("expected the claim to refuse a corrupt run, got {other:?}"),
    }
    let listed = store.open_runs().await.unwrap_or_default();
    assert_eq!(listed.len(), 1, "still open, still there");
    assert!(listed[0].problem.is_some());
    let after: Option<String> = sqlx::query_scalar("SELECT document FROM suspended_run")
        .fetch_optional(store.pool())
        .await
        .ok()
        .flatten();
    assert_eq!(before, after, "the document is byte-for-byte as it was");
    assert!(
        store
            .decisions(run.run_id())
            .await
            .unwrap_or_default()
            .is_empty()
    );
}

#[tokio::test]
async fn a_claim_checks_the_digest_and_a_released_claim_waits_again() {
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    assert!(store.save_suspended(&run).await.is_ok());
    for digest in [None, Some(TurnDigest::from_text("sha256:00"))] {
        match store
            .claim(
                run.run_id(),
                digest.as_ref(),
                &operator("bob"),
                DecisionKind::Approved,
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
    let claim = match store
        .claim(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::Approved,
        )
        .await
    {
        Ok(claim) => claim,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(claim.record.tools, ["delete_branch"]);
    assert!(!claim.record.self_decided);
    assert!(
        store.load_suspended(run.run_id()).await.is_err(),
        "claimed runs do not wait"
    );
    assert!(store.release(claim.suspension_id).await.is_ok());
    assert!(
        store.load_suspended(run.run_id()).await.is_ok(),
        "released runs wait again"
    );
    assert!(
        store
            .decisions(run.run_id())
            .await
            .unwrap_or_default()
            .is_empty()
    );
}

/// The store's claim and the core's decision together: claim, decide with
/// the claimed log, and the turn runs once.
#[tokio::test]
async fn a_claimed_decision_runs_through_the_gate() {
    let dir = temp();
    let store = open(&dir).await;
    let registry = registry();
    let run = suspended(&registry, "alice").await;
    assert!(store.save_suspended(&run).await.is_ok());
    let digest = run.digest();
    let claim = match store
        .claim(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::Approved,
        )
        .await
    {
        Ok(claim) => claim,
        Err(error) => panic!("{error}"),
    };
    let log = claim.log();
    let SuspendedRun::AwaitingApproval(pending) = claim.run else {
        panic!("stored as awaiting approval");
    };
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    let agent = Agent::new(&registry, &model, &log);
    let decision = Decision {
        verdict: Verdict::Approve,
        digest: Some(digest.clone()),
        decided_by: "bob".into(),
    };
    match pending.decide(&agent, decision).await {
        Ok(Outcome::Finished { answer, .. }) => assert_eq!(answer, "done"),
        other => panic!("{other:?}"),
    }
    let decisions = store.decisions(run.run_id()).await.unwrap_or_default();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].verdict, DecisionKind::Approved);
    assert_eq!(decisions[0].digest, digest);
    // A decision that is not the claimed one is refused by the claimed log.
    let other = pending_again(&store, &registry).await;
    let digest = other.digest();
    let claim = match store
        .claim(
            other.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::Denied,
        )
        .await
    {
        Ok(claim) => claim,
        Err(error) => panic!("{error}"),
    };
    let log = claim.log();
    let SuspendedRun::AwaitingApproval(pending) = claim.run else {
        panic!("stored as awaiting approval");
    };
    let agent = Agent::new(&registry, &model, &log);
    match pending.approve(&agent, "bob", Some(digest)).await {
        Err(toolgate::suspend::ResumeError::Refused { reason, .. }) => assert!(
            reason.to_string().contains("is not the one claimed"),
            "{reason}"
        ),
        other => panic!("expected the mismatched decision to be refused, got {other:?}"),
    }
}

async fn pending_again(store: &Store, registry: &Registry) -> SuspendedRun {
    let run = suspended(registry, "alice").await;
    assert!(store.save_suspended(&run).await.is_ok());
    run
}

/// `deciders` concurrent claims on one run, spread over `stores`; returns how
/// many won, failing on anything but a win or `AlreadyDecided`.
async fn race(stores: &[Arc<Store>], run_id: &str, digest: &TurnDigest, deciders: usize) -> usize {
    let tasks: Vec<_> = (0..deciders)
        .map(|decider| {
            let store = Arc::clone(&stores[decider % stores.len()]);
            let (run_id, digest) = (run_id.to_owned(), digest.clone());
            tokio::spawn(async move {
                store
                    .claim(
                        &run_id,
                        Some(&digest),
                        &operator(&format!("op-{decider}")),
                        DecisionKind::Approved,
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
        .build();
    let Ok(runtime) = runtime else {
        panic!("no runtime");
    };
    runtime.block_on(async {
        let dir = temp();
        let mut handles = Vec::new();
        for _ in 0..4 {
            handles.push(Arc::new(open(&dir).await));
        }
        let registry = registry();
        for round in 0..50 {
            let run = suspended(&registry, "alice").await;
            assert!(handles[0].save_suspended(&run).await.is_ok());
            let digest = run.digest();
            let winners = race(&handles, run.run_id(), &digest, 8).await;
            assert_eq!(winners, 1, "round {round}");
            assert_eq!(
                handles[1]
                    .decisions(run.run_id())
                    .await
                    .map(|d| d.len())
                    .ok(),
                Some(1)
            );
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
        .build();
    let Ok(runtime) = runtime else {
        panic!("no runtime");
    };
    runtime.block_on(async {
        let dir = temp();
        let store = Arc::new(open(&dir).await);
        let registry = registry();
        let template = suspended(&registry, "alice").await;
        let SuspendedRun::AwaitingApproval(template) = template else {
            panic!("awaiting approval");
        };
        let document = template.encode().unwrap_or_default();
        for round in 0..1_000 {
            // The same pending turn under a fresh run id.
            let run_id = format!("run-{round:04}");
            let mut value: Value = serde_json::from_str(&document).unwrap_or_default();
            if let Some(id) = value.pointer_mut("/body/run/run_id") {
                *id = json!(run_id);
            }
            let body = value["body"].to_string();
            value["checksum"] = json!(toolgate::suspend::body_checksum(&body));
            let run = match SuspendedRun::decode(&value.to_string()) {
                Ok(run) => run,
                Err(error) => panic!("{error}"),
            };
            assert!(store.save_suspended(&run).await.is_ok());
            // The digest names this run: each round's is its own.
            let digest = run.digest();
            let winners = race(&[Arc::clone(&store)], &run_id, &digest, 16).await;
            assert_eq!(winners, 1, "round {round}");
        }
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT run_id, COUNT(*) FROM decision GROUP BY run_id ORDER BY run_id")
                .fetch_all(store.pool())
                .await
                .unwrap_or_default();
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
    assert!(store.save_suspended(&run).await.is_ok());
    let digest = run.digest();
    let claimed = store
        .claim(
            run.run_id(),
            Some(&digest),
            &operator("bob"),
            DecisionKind::Denied,
        )
        .await;
    assert!(claimed.is_ok());
    assert_eq!(
        store
            .decisions(run.run_id())
            .await
            .map(|d| d[0].verdict)
            .ok(),
        Some(DecisionKind::Denied)
    );
    // The verdict column's CHECK refuses unknown verdicts outright.
    let verdict = sqlx::query("UPDATE decision SET verdict = 'waved_through'")
        .execute(store.pool())
        .await;
    assert!(verdict.is_err());
    let tools = sqlx::query("UPDATE decision SET tools = 'not json'")
        .execute(store.pool())
        .await;
    assert!(tools.is_ok());
    let read = store
        .decisions(run.run_id())
        .await
        .err()
        .map(|e| e.to_string());
    assert!(
        read.as_deref()
            .is_some_and(|e| e.starts_with("stored decision tool list is unreadable")),
        "{read:?}"
    );
}

fn key() -> toolgate::integrity::IntegrityKey {
    match toolgate::integrity::IntegrityKey::new(b"a key kept outside the database") {
        Ok(key) => key,
        Err(error) => panic!("{error}"),
    }
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
    .unwrap_or_default();
    let mut doc: Value = serde_json::from_str(&document).unwrap_or_default();
    if let Some(field) = doc.pointer_mut(pointer) {
        *field = value;
    } else {
        panic!("no {pointer}");
    }
    let body = doc["body"].to_string();
    doc["checksum"] = json!(toolgate::suspend::body_checksum(&body));
    let requested_by = doc
        .pointer("/body/run/requested_by")
        .cloned()
        .unwrap_or_default();
    // The turn digest is public arithmetic too: the column is made to match.
    let digest = SuspendedRun::decode(&doc.to_string())
        .map(|run| run.digest().as_str().to_owned())
        .unwrap_or_default();
    let done = sqlx::query(
        "UPDATE suspended_run SET document = ?, requested_by = ?, digest = ?
         WHERE run_id = ? AND state = 'open'",
    )
    .bind(doc.to_string())
    .bind(requested_by.as_str().unwrap_or_default())
    .bind(digest)
    .bind(run_id)
    .execute(store.pool())
    .await;
    assert!(done.is_ok());
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
        assert!(store.save_suspended(&run).await.is_ok());
        assert!(store.load_suspended(run.run_id()).await.is_ok());
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
        let listed = store.open_runs().await.unwrap_or_default();
        assert!(listed[0].problem.is_some(), "{pointer}");
        let digest = run.digest();
        assert!(matches!(
            store
                .claim(
                    run.run_id(),
                    Some(&digest),
                    &operator("bob"),
                    DecisionKind::Approved
                )
                .await,
            Err(ClaimError::Corrupt { .. })
        ));

        // Without a key, the same change is accepted.
        let dir = temp();
        let plain = open(&dir).await;
        assert!(!plain.is_authenticated());
        assert!(plain.save_suspended(&run).await.is_ok());
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
    assert!(store.save_suspended(&run).await.is_ok());
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
        .unwrap_or_default();
        let set = |v: &str| {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "UPDATE suspended_run SET {column} = ? WHERE run_id = ?"
            )))
            .bind(v.to_owned())
            .bind(run.run_id().to_owned())
        };
        assert!(set(value).execute(store.pool()).await.is_ok());
        match store.load_suspended(run.run_id()).await {
            Err(LoadError::Corrupt { error, .. }) => assert!(
                error.reason.contains("disagrees with the document"),
                "{column}: {error}"
            ),
            other => panic!("{column}: expected a refusal, got {other:?}"),
        }
        assert!(set(&saved).execute(store.pool()).await.is_ok());
        assert!(store.load_suspended(run.run_id()).await.is_ok());
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
    assert!(store.save_suspended(&run).await.is_ok());
    let digest = run.digest();
    let Ok(env_bob) = Operator::new(" Ｂｏｂ ", IdentitySource::Environment) else {
        panic!("normalises");
    };
    let claim = store
        .claim(
            run.run_id(),
            Some(&digest),
            &env_bob,
            DecisionKind::Approved,
        )
        .await;
    assert!(claim.is_ok(), "{claim:?}");
    let records = store.decisions(run.run_id()).await.unwrap_or_default();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].decided_by, "Bob");
    assert_eq!(records[0].decided_by_source, IdentitySource::Environment);
    let changed = sqlx::query("UPDATE decision SET decided_by = 'carol' WHERE run_id = ?")
        .bind(run.run_id())
        .execute(store.pool())
        .await;
    assert!(changed.is_ok());
    let error = store
        .decisions(run.run_id())
        .await
        .err()
        .map(|e| e.to_string());
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("does not verify under this store's integrity key")),
        "{error:?}"
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
    assert!(store.save_suspended(&run).await.is_ok());
    let digest = run.digest();
    let claim = store
        .claim(
            run.run_id(),
            Some(&digest),
            &operator("ＡＬＩＣＥ "),
            DecisionKind::Approved,
        )
        .await;
    let Ok(claim) = claim else {
        panic!("{claim:?}");
    };
    assert!(claim.record.self_decided);
    assert_eq!(claim.record.decided_by, "ALICE");
    assert!(Operator::new(" ", IdentitySource::Flag).is_err());
}
