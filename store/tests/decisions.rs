//! Decisions as records, call by call, and the hosts that act on them:
//! M-of-N approvals with the last two racing, expiry and asking again, a
//! receipt voided at resume and the turn paused afresh, clones of one host,
//! a host without the store's key, and operator choices written without it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};
use toolgate::identity::{IdentitySource, Operator};
use toolgate::integrity::IntegrityKey;
use toolgate::{
    Agent, Execute, Registry, Tool, ToolOutput,
    run::{Outcome, Reply, RunOptions, RunRequest, ToolCall},
    suspend::{CallVerdict, Refusal, SuspendedRun},
    testing::{MemoryLog, ScriptedModel},
};
use toolgate_store::{Answer, Choice, Choosing, ClaimError, Ended, Host, Query, Store, StoreError};

mod backend;
use backend::TestDb;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    backend::rerun_on_postgres();
}

/// Sends a payment: counts its calls.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct Pay(Arc<AtomicUsize>);

impl Execute for Pay {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        self.0.fetch_add(1, Ordering::SeqCst);
        ToolOutput::text("paid")
    }
}

/// The same name, another definition.
#[derive(Tool)]
#[tool(effect = non_idempotent_write, name = "pay")]
struct PayTwice(Arc<AtomicUsize>);

impl Execute for PayTwice {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        self.0.fetch_add(2, Ordering::SeqCst);
        ToolOutput::text("paid twice")
    }
}

/// Hangs on its first call, the way a call does when its host dies under it.
#[derive(Tool)]
#[tool(effect = non_idempotent_write, name = "pay")]
struct PayHanging(Arc<AtomicUsize>);

impl Execute for PayHanging {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_hours(1)).await;
        }
        ToolOutput::text("paid")
    }
}

fn operator(name: &str) -> Operator {
    Operator::new(name, IdentitySource::Flag).unwrap()
}

async fn paused(registry: &Registry, options: RunOptions) -> SuspendedRun {
    let model = ScriptedModel::new([Reply::Calls {
        content: None,
        calls: vec![ToolCall {
            id: "p1".into(),
            name: "pay".into(),
            arguments: json!({"cents": 100}),
        }],
    }]);
    let log = MemoryLog::new();
    let request = RunRequest {
        options,
        ..RunRequest::new("alice", "pay the invoice")
    };
    match Agent::new(registry, &model, &log).start(request).await {
        Ok(Outcome::AwaitingApproval(run)) => SuspendedRun::AwaitingApproval(run),
        other => panic!("expected an approval pause, got {other:?}"),
    }
}

fn pay_registry(paid: &Arc<AtomicUsize>) -> Registry {
    Registry::builder()
        .builtin(Pay(Arc::clone(paid)))
        .build()
        .unwrap()
}

/// The same paused turn under another run id, reviewed now.
async fn copy_of(template: &SuspendedRun, registry: &Registry, run_id: &str) -> SuspendedRun {
    let SuspendedRun::AwaitingApproval(run) = template.clone() else {
        panic!("an approval pause")
    };
    let run = SuspendedRun::AwaitingApproval(run.reviewed_again(registry).await);
    let text = run.encode().unwrap().replace(run.run_id(), run_id);
    let body = serde_json::from_str::<Value>(&text).unwrap()["body"].to_string();
    let document = format!(
        "{{\"format\":\"toolgate/suspended-run\",\"version\":3,\"status\":\"awaiting_approval\",\"checksum\":\"{}\",\"body\":{body}}}",
        toolgate::testing::rules::body_checksum(&body)
    );
    SuspendedRun::decode(&document).unwrap()
}

/// The same person under another spelling does not count twice, and the
/// requester under a look-alike is the requester.
async fn other_spellings_do_not_count(
    store: &Store,
    run_id: &str,
    digest: &toolgate::suspend::TurnDigest,
) {
    // The same person under another spelling does not count
    // twice, and the requester under a look-alike is the
    // requester.
    // A look-alike Unicode restricts is no decider's name at all.
    assert!(matches!(
        Operator::new("\u{184}ob", IdentitySource::Flag),
        Err(toolgate::identity::IdentityError::Restricted { .. })
    ));
    for bob in ["BOB", "b0b", " ｂｏｂ "] {
        assert!(
            matches!(
                store
                    .decide(run_id, Some(digest), &operator(bob), Answer::Approve)
                    .await,
                Err(ClaimError::AlreadyApproved { .. })
            ),
            "{bob:?}"
        );
    }
    for alice in ["aIice", "ALICE", "\u{430}lice"] {
        assert!(
            matches!(
                store
                    .decide(run_id, Some(digest), &operator(alice), Answer::Approve)
                    .await,
                Err(ClaimError::Refused {
                    reason: Refusal::SelfApproval { .. },
                    ..
                })
            ),
            "{alice:?}"
        );
    }
}

/// A run that needs 2 of 3 approvers: the first approval is partial and
/// shown; the last two race, 1,000 times — exactly one completes the
/// decision, the other is told the run is decided, and the host resumes the
/// run exactly once.
#[test]
fn two_of_three_with_the_last_two_racing_resumes_exactly_once() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let db = TestDb::new().await;
        let path = db.location();
        let stores = [
            Store::open(&path).await.unwrap(),
            Store::open(&path).await.unwrap(),
        ];
        let paid = Arc::new(AtomicUsize::new(0));
        let registry = pay_registry(&paid);
        let options = RunOptions {
            approvals_required: 2,
            four_eyes: true,
            ..RunOptions::default()
        };
        let template = paused(&registry, options).await;
        let host = Host::new(stores[0].clone(), "payments").unwrap();
        let (mut completed, mut told_decided) = (0, 0);
        for round in 0..1_000 {
            let run = copy_of(&template, &registry, &format!("run-{round}")).await;
            let run_id = run.run_id().to_owned();
            let digest = run.digest();
            stores[0].save_suspended(&run, "payments").await.unwrap();
            // The requester cannot count as an approver.
            assert!(matches!(
                stores[0]
                    .decide(&run_id, Some(&digest), &operator("alice"), Answer::Approve)
                    .await,
                Err(ClaimError::Refused {
                    reason: Refusal::SelfApproval { .. },
                    ..
                })
            ));
            let first = stores[0]
                .decide(&run_id, Some(&digest), &operator("bob"), Answer::Approve)
                .await
                .unwrap();
            assert_eq!(first.approvals, (1, 2));
            assert!(!first.is_complete());
            if round == 0 {
                let listed = stores[0].open_runs().await.unwrap();
                assert_eq!(listed[0].standing(), "awaiting approval (1 of 2 approvals)");
                other_spellings_do_not_count(&stores[0], &run_id, &digest).await;
                assert!(host.next().await.unwrap().is_none(), "not decided yet");
            }
            let racers: Vec<_> = ["carol", "dave"]
                .into_iter()
                .enumerate()
                .map(|(i, who)| {
                    let store = stores[i].clone();
                    let (run_id, digest) = (run_id.clone(), digest.clone());
                    tokio::spawn(async move {
                        store
                            .decide(&run_id, Some(&digest), &operator(who), Answer::Approve)
                            .await
                    })
                })
                .collect();
            let mut winners = 0;
            for racer in racers {
                match racer.await.unwrap() {
                    Ok(recorded) => {
                        assert!(recorded.is_complete());
                        winners += 1;
                    }
                    Err(ClaimError::AlreadyDecided { .. }) => told_decided += 1,
                    Err(other) => panic!("round {round}: {other}"),
                }
            }
            assert_eq!(winners, 1, "round {round}");
            completed += winners;
            let model = ScriptedModel::new([Reply::Text("done".into())]);
            let resumed = host.resume_all(&registry, &model).await.unwrap();
            assert_eq!(resumed.len(), 1, "round {round}: exactly one resume");
        }
        println!(
            "1000 rounds: {completed} decisions completed by the last approver, {told_decided} racers told the run was decided; {} payments",
            paid.load(Ordering::SeqCst)
        );
        assert_eq!(paid.load(Ordering::SeqCst), 1_000, "one payment per run");
    });
}

/// A decision on a turn whose tool changed before its host resumed it is
/// voided — kept, with why — and the turn is paused afresh for a new
/// review, with its own digest; nothing ran.
#[tokio::test]
async fn a_receipt_that_no_longer_holds_pauses_the_turn_afresh() {
    let db = TestDb::new().await;
    let store = Store::open(db.location()).await.unwrap();
    let paid = Arc::new(AtomicUsize::new(0));
    let run = paused(&pay_registry(&paid), RunOptions::default()).await;
    store.save_suspended(&run, "payments").await.unwrap();
    let mut calls = BTreeMap::new();
    calls.insert("p1".to_owned(), CallVerdict::Approve);
    store
        .decide(
            run.run_id(),
            Some(&run.digest()),
            &operator("bob"),
            Answer::Calls(calls),
        )
        .await
        .unwrap();
    // The host that resumes it has another `pay`.
    let changed = Registry::builder()
        .builtin(PayTwice(Arc::clone(&paid)))
        .build()
        .unwrap();
    let host = Host::new(store.clone(), "payments").unwrap();
    let resumed = host
        .resume_all(&changed, &ScriptedModel::new([Reply::Text("done".into())]))
        .await
        .unwrap();
    assert!(
        matches!(
            &resumed[0].ended,
            Ended::Refused {
                reason: Refusal::ToolChanged { .. }
            }
        ),
        "{resumed:?}"
    );
    assert_eq!(paid.load(Ordering::SeqCst), 0, "nothing ran");
    let fresh = store.load_suspended(run.run_id()).await.unwrap();
    assert_ne!(fresh.digest(), run.digest());
    let history = store.run_history(run.run_id()).await.unwrap();
    assert_eq!(history.suspensions.len(), 2);
    assert!(
        history.decisions[0]
            .record
            .voided
            .as_deref()
            .is_some_and(|why| why.contains("definition changed")),
        "{:?}",
        history.decisions
    );
    assert_eq!(
        store
            .decide(
                run.run_id(),
                Some(&run.digest()),
                &operator("bob"),
                Answer::Approve
            )
            .await
            .err()
            .map(|e| e.to_string()),
        Some(format!(
            "the decision names a different turn than the one run `{}` waits on: the reviewed turn is unknown; review it with `runs show {}` and decide with the digest shown there",
            run.run_id(),
            run.run_id()
        )),
        "the old digest names no turn"
    );
    store
        .decide(
            run.run_id(),
            Some(&fresh.digest()),
            &operator("bob"),
            Answer::Approve,
        )
        .await
        .unwrap();
    host.resume_all(&changed, &ScriptedModel::new([Reply::Text("done".into())]))
        .await
        .unwrap();
    assert_eq!(
        paid.load(Ordering::SeqCst),
        2,
        "the reviewed-again tool ran once"
    );
}

/// An expired turn refuses approvals, takes a denial, or is asked again —
/// with a new digest and a fresh limit.
#[tokio::test]
async fn an_expired_turn_is_shown_expired_and_can_be_asked_again() {
    let db = TestDb::new().await;
    let store = Store::open(db.location()).await.unwrap();
    let paid = Arc::new(AtomicUsize::new(0));
    // Long enough that a loaded machine still asks again before it expires.
    let options = RunOptions {
        decision_ttl_ms: Some(1_500),
        ..RunOptions::default()
    };
    let run = paused(&pay_registry(&paid), options).await;
    store.save_suspended(&run, "payments").await.unwrap();
    assert!(matches!(
        store.ask_again(run.run_id(), &operator("bob")).await,
        Err(ClaimError::NotExpired { .. })
    ));
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    let listed = store.open_runs().await.unwrap();
    assert_eq!(
        listed[0].standing(),
        "expired: it can be denied or asked again, not approved"
    );
    assert!(matches!(
        store
            .decide(
                run.run_id(),
                Some(&run.digest()),
                &operator("bob"),
                Answer::Approve
            )
            .await,
        Err(ClaimError::Refused {
            reason: Refusal::Expired { .. },
            ..
        })
    ));
    assert_eq!(
        store
            .ask_again(run.run_id(), &operator("bob"))
            .await
            .unwrap(),
        "payments"
    );
    let again = store.load_suspended(run.run_id()).await.unwrap();
    assert_ne!(again.digest(), run.digest());
    store
        .decide(
            run.run_id(),
            Some(&again.digest()),
            &operator("bob"),
            Answer::Approve,
        )
        .await
        .unwrap();
    let history = store.run_history(run.run_id()).await.unwrap();
    assert_eq!(
        history.suspensions[0].outcome.as_deref(),
        Some("expired; asked again by bob")
    );
}

/// Two clones of one host value in one process: each claim has its own
/// token, so when the first stalls past its lease and the second takes the
/// run over, the first can write nothing more — the payment runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clones_of_one_host_never_run_a_call_twice() {
    let db = TestDb::new().await;
    let store = Store::open(db.location()).await.unwrap();
    let paid = Arc::new(AtomicUsize::new(0));
    let registry = pay_registry(&paid);
    let run = paused(&registry, RunOptions::default()).await;
    store.save_suspended(&run, "payments").await.unwrap();
    store
        .decide(
            run.run_id(),
            Some(&run.digest()),
            &operator("bob"),
            Answer::Approve,
        )
        .await
        .unwrap();
    let host = Host::new(store.clone(), "payments")
        .unwrap()
        .with_lease(Duration::from_millis(50));
    let clone = host.clone();
    let first = host.next().await.unwrap().unwrap();
    // The first claim stalls past its lease before it resumes.
    tokio::time::sleep(Duration::from_millis(120)).await;
    let second = clone
        .next()
        .await
        .unwrap()
        .expect("the lapsed claim is taken over");
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    let late = host.resume(first, &registry, &model).await.unwrap();
    assert!(
        matches!(late.ended, Ended::Interrupted { .. } | Ended::Lost),
        "{late:?}"
    );
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    let resumed = clone.resume(second, &registry, &model).await.unwrap();
    assert!(
        matches!(resumed.ended, Ended::Finished { .. }),
        "{resumed:?}"
    );
    assert_eq!(paid.load(Ordering::SeqCst), 1);
}

/// A host on a keyed store without the key — or with another key — cannot
/// read the runs: it says so and stops, and the runs stay decided and
/// visible for a host that has the key.
#[tokio::test]
async fn a_host_without_the_key_stops_and_loses_no_run() {
    let db = TestDb::new().await;
    let path = db.location();
    let key = || IntegrityKey::new(b"the store's own sixteen-plus byte key").unwrap();
    let store = Store::open(&path).await.unwrap().with_integrity_key(key());
    let paid = Arc::new(AtomicUsize::new(0));
    let registry = pay_registry(&paid);
    let run = paused(&registry, RunOptions::default()).await;
    store.save_suspended(&run, "payments").await.unwrap();
    store
        .decide(
            run.run_id(),
            Some(&run.digest()),
            &operator("bob"),
            Answer::Approve,
        )
        .await
        .unwrap();
    let keyless = Store::open(&path).await.unwrap();
    let host = Host::new(keyless, "payments").unwrap();
    assert!(matches!(host.next().await, Err(StoreError::KeyRequired)));
    let wrong = Store::open(&path)
        .await
        .unwrap()
        .with_integrity_key(IntegrityKey::new(b"somebody else's sixteen-byte key").unwrap());
    // With the wrong key the run is passed over — set aside, not closed —
    // and the host goes on with what it can read.
    let host = Host::new(wrong, "payments").unwrap();
    assert!(host.next().await.unwrap().is_none());
    let aside = host.set_aside();
    assert_eq!(aside.len(), 1);
    assert_eq!(aside[0].run_id, run.run_id());
    assert!(aside[0].reason.contains("does not verify"), "{aside:?}");
    let listed = store.open_runs().await.unwrap();
    assert_eq!(
        listed[0].standing(),
        "decided; host `payments` will resume it"
    );
    let host = Host::new(store.clone(), "payments").unwrap();
    let resumed = host
        .resume_all(&registry, &ScriptedModel::new([Reply::Text("done".into())]))
        .await
        .unwrap();
    assert!(matches!(resumed[0].ended, Ended::Finished { .. }));
    assert_eq!(paid.load(Ordering::SeqCst), 1);
}

/// Host names are ASCII: two names that read alike are never two hosts.
#[test]
fn host_names_that_could_pass_for_another_are_refused() {
    for name in ["d\u{435}mo", "", "de mo", "demo\u{200b}", &"x".repeat(65)] {
        assert!(
            toolgate_store::host_name_problem(name).is_some(),
            "{name:?} is accepted"
        );
    }
    for name in ["demo", "payments-eu.2", "worker_1"] {
        assert_eq!(toolgate_store::host_name_problem(name), None);
    }
}

/// A decided run of host `payments` whose first host stops in the middle of
/// its hanging call; the host that picks it up once the lease runs out finds
/// the call's outcome unknown and does not run it again. That host.
async fn stopped_mid_call(store: &Store, registry: &Registry, paid: &AtomicUsize) -> Host {
    // Long enough that the host's work between claiming and writing fits
    // in it on a loaded machine: a lease that runs out mid-resume lets
    // another claim race this one, which is not what these tests are about.
    let lease = Duration::from_millis(500);
    let first = Host::new(store.clone(), "payments")
        .unwrap()
        .with_lease(lease);
    let task = first.next().await.unwrap().unwrap();
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    tokio::select! {
        ended = first.resume(task, registry, &model) => panic!("the hanging call ended: {ended:?}"),
        () = async { while paid.load(Ordering::SeqCst) == 0 { tokio::task::yield_now().await } } => {}
    }
    tokio::time::sleep(lease * 2).await;
    let second = Host::new(store.clone(), "payments")
        .unwrap()
        .with_lease(lease);
    let resumed = second.resume_all(registry, &model).await.unwrap();
    assert!(
        matches!(&resumed[0].ended, Ended::OutcomeUnknown { call_id, .. } if call_id == "p1"),
        "{resumed:?}"
    );
    assert_eq!(paid.load(Ordering::SeqCst), 1, "not run again on its own");
    second
}

/// Under a key, an operator choice written into the database without it is
/// not a choice: it is not in the run's chain, so the run is set aside and
/// nothing runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_choice_written_without_the_key_is_ignored() {
    let db = TestDb::new().await;
    let key = || IntegrityKey::new(b"the store's own sixteen-plus byte key").unwrap();
    let store = Store::open(db.location())
        .await
        .unwrap()
        .with_integrity_key(key());
    let paid = Arc::new(AtomicUsize::new(0));
    let registry = Registry::builder()
        .builtin(PayHanging(Arc::clone(&paid)))
        .build()
        .unwrap();
    let run = paused(&registry, RunOptions::default()).await;
    store.save_suspended(&run, "payments").await.unwrap();
    store
        .decide(
            run.run_id(),
            Some(&run.digest()),
            &operator("bob"),
            Answer::Approve,
        )
        .await
        .unwrap();
    let second = stopped_mid_call(&store, &registry, &paid).await;
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    // A database writer without the key forges "rerun by carol".
    Query::new(
        "INSERT INTO execution_choice (plan_id, call_index, attempt, choice, decided_by, decided_by_source, decided_at)
         SELECT plan_id, call_index, attempts, 'rerun', 'carol', 'flag', 0 FROM call_execution",
    )
    .execute_on(&store)
    .await
    .unwrap();
    Query::new(
        "UPDATE suspended_run SET execution = 'pending' WHERE execution = 'outcome_unknown'",
    )
    .execute_on(&store)
    .await
    .unwrap();
    // The forged row is not in the run's chain: the run is set aside, and
    // nothing of it runs.
    let resumed = second.resume_all(&registry, &model).await.unwrap();
    assert!(resumed.is_empty(), "{resumed:?}");
    let aside = second.set_aside();
    assert!(
        aside.len() == 1 && aside[0].reason.contains("is not in its chain"),
        "{aside:?}"
    );
    assert_eq!(
        paid.load(Ordering::SeqCst),
        1,
        "the forged choice ran nothing"
    );
    // Once the forged row is gone, the operator's own choice, written with
    // the key, is obeyed.
    Query::new("DELETE FROM execution_choice WHERE mac IS NULL")
        .execute_on(&store)
        .await
        .unwrap();
    Query::new(
        "UPDATE suspended_run SET execution = 'outcome_unknown' WHERE execution = 'resuming'",
    )
    .execute_on(&store)
    .await
    .unwrap();
    let second = Host::new(store.clone(), "payments").unwrap();
    let [unknown] = store
        .unknown_calls(run.run_id())
        .await
        .unwrap()
        .try_into()
        .unwrap();
    store
        .choose(
            run.run_id(),
            &operator("carol"),
            &Choosing {
                call_id: &unknown.call_id,
                digest: &unknown.digest,
                choice: Choice::Skip,
                reason: "the payment processor shows no charge",
            },
        )
        .await
        .unwrap();
    let resumed = second.resume_all(&registry, &model).await.unwrap();
    assert!(
        matches!(resumed[0].ended, Ended::Finished { .. }),
        "{resumed:?}"
    );
    assert_eq!(paid.load(Ordering::SeqCst), 1);
}

/// One decided run this host cannot read — marked decided in the database
/// with no decision behind it — is passed over, not a stop: the next
/// decided run is resumed, and the unreadable one stays decided and waiting.
#[tokio::test]
async fn one_unreadable_decided_run_does_not_hold_up_the_others() {
    let db = TestDb::new().await;
    let store = Store::open(db.location()).await.unwrap();
    let paid = Arc::new(AtomicUsize::new(0));
    let registry = pay_registry(&paid);
    let poisoned = copy_of(
        &paused(&registry, RunOptions::default()).await,
        &registry,
        "poisoned",
    )
    .await;
    let fine = copy_of(
        &paused(&registry, RunOptions::default()).await,
        &registry,
        "fine",
    )
    .await;
    store.save_suspended(&poisoned, "payments").await.unwrap();
    store.save_suspended(&fine, "payments").await.unwrap();
    // A database writer marks the first run decided, oldest of all.
    Query::new(
        "UPDATE suspended_run SET state = 'decided', decided_by = 'bob', decided_at = 1, execution = 'pending' WHERE run_id = 'poisoned'",
    )
    .execute_on(&store)
    .await
    .unwrap();
    store
        .decide(
            "fine",
            Some(&fine.digest()),
            &operator("bob"),
            Answer::Approve,
        )
        .await
        .unwrap();
    let host = Host::new(store.clone(), "payments").unwrap();
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    let resumed = host.resume_all(&registry, &model).await.unwrap();
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0].run_id, "fine");
    assert!(matches!(resumed[0].ended, Ended::Finished { .. }));
    assert_eq!(paid.load(Ordering::SeqCst), 1);
    let aside = host.set_aside();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(aside[0].run_id, "poisoned");
    assert!(
        aside[0].reason.contains("holds no standing decision"),
        "{aside:?}"
    );
    let listed = store.open_runs().await.unwrap();
    let waiting = listed.iter().find(|r| r.run_id == "poisoned").unwrap();
    assert_eq!(waiting.execution, "pending", "left as it was: {waiting:?}");
}

/// A run whose call's outcome is unknown, approved by `bob` (and `carol`
/// when it needs two): the store, the host that found it, the count of
/// payments and the run's pause.
async fn unknown_outcome(
    options: RunOptions,
) -> (
    TestDb,
    Store,
    Host,
    Registry,
    Arc<AtomicUsize>,
    SuspendedRun,
) {
    unknown_outcome_keyed(options, None).await
}

/// [`unknown_outcome`], on a store opened with `key` when there is one.
async fn unknown_outcome_keyed(
    options: RunOptions,
    key: Option<IntegrityKey>,
) -> (
    TestDb,
    Store,
    Host,
    Registry,
    Arc<AtomicUsize>,
    SuspendedRun,
) {
    let db = TestDb::new().await;
    let mut store = Store::open(db.location()).await.unwrap();
    if let Some(key) = key {
        store = store.with_integrity_key(key);
    }
    let paid = Arc::new(AtomicUsize::new(0));
    let registry = Registry::builder()
        .builtin(PayHanging(Arc::clone(&paid)))
        .build()
        .unwrap();
    let need = options.approvals_required;
    let run = paused(&registry, options).await;
    store.save_suspended(&run, "payments").await.unwrap();
    for approver in ["bob", "carol"]
        .into_iter()
        .take(usize::try_from(need).unwrap())
    {
        store
            .decide(
                run.run_id(),
                Some(&run.digest()),
                &operator(approver),
                Answer::Approve,
            )
            .await
            .unwrap();
    }
    let host = stopped_mid_call(&store, &registry, &paid).await;
    (db, store, host, registry, paid, run)
}

/// A choice on the one unknown call of `run`, shown its digest.
async fn choose(
    store: &Store,
    run: &str,
    by: &str,
    choice: Choice,
) -> Result<toolgate_store::Chosen, ClaimError> {
    let [unknown] = store.unknown_calls(run).await.unwrap().try_into().unwrap();
    store
        .choose(
            run,
            &operator(by),
            &Choosing {
                call_id: &unknown.call_id,
                digest: &unknown.digest,
                choice,
                reason: "the payment processor has no record of it",
            },
        )
        .await
}

/// Whether a call whose outcome is unknown runs again — or is skipped — is
/// an operator's choice, never made through the requester's own client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_choice_is_made_through_the_requesters_own_client() {
    let (_db, store, _host, _registry, paid, run) = unknown_outcome(RunOptions::default()).await;
    let [unknown] = store
        .unknown_calls(run.run_id())
        .await
        .unwrap()
        .try_into()
        .unwrap();
    for choice in [Choice::Rerun, Choice::Skip] {
        let refused = store
            .choose(
                run.run_id(),
                &operator("alice").via(toolgate::identity::Channel::Elicitation),
                &Choosing {
                    call_id: &unknown.call_id,
                    digest: &unknown.digest,
                    choice,
                    reason: "asked through the client",
                },
            )
            .await;
        assert!(
            matches!(refused, Err(ClaimError::ChoiceThroughClient { .. })),
            "{refused:?}"
        );
    }
    assert_eq!(store.unknown_calls(run.run_id()).await.unwrap().len(), 1);
    assert_eq!(paid.load(Ordering::SeqCst), 1);
}

/// A rerun may make a write happen twice: under four eyes the requester
/// cannot choose it, in any spelling the identity rules fold together; a
/// skip, which makes nothing run, they can.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_four_eyes_the_requester_cannot_choose_a_rerun() {
    let options = RunOptions {
        four_eyes: true,
        ..RunOptions::default()
    };
    let (_db, store, host, registry, paid, run) = unknown_outcome(options.clone()).await;
    for alice in ["alice", "ALICE", "alice ", "\u{430}lice", "ａｌｉｃｅ"] {
        let refused = choose(&store, run.run_id(), alice, Choice::Rerun).await;
        assert!(
            matches!(
                refused,
                Err(ClaimError::Refused {
                    reason: Refusal::SelfRerun { .. },
                    ..
                })
            ),
            "{alice:?}: {refused:?}"
        );
    }
    assert!(host.next().await.unwrap().is_none(), "nothing was recorded");
    let chosen = choose(&store, run.run_id(), "bob", Choice::Rerun)
        .await
        .unwrap();
    assert!(chosen.stands);
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    let resumed = host.resume_all(&registry, &model).await.unwrap();
    assert!(
        matches!(resumed[0].ended, Ended::Finished { .. }),
        "{resumed:?}"
    );
    assert_eq!(paid.load(Ordering::SeqCst), 2, "run once more");

    // The requester's skip stands: it runs nothing.
    let (_db, store, host, registry, paid, run) = unknown_outcome(options).await;
    let chosen = choose(&store, run.run_id(), "alice", Choice::Skip)
        .await
        .unwrap();
    assert!(chosen.stands);
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    let resumed = host.resume_all(&registry, &model).await.unwrap();
    assert!(
        matches!(resumed[0].ended, Ended::Finished { .. }),
        "{resumed:?}"
    );
    assert_eq!(paid.load(Ordering::SeqCst), 1, "never run again");
}

/// On a run that needs two approvers a rerun needs two distinct people,
/// neither of them the requester; the first one's choice is recorded and
/// waits, and the run stays "outcome unknown" until the second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_of_a_run_that_needs_two_approvers_needs_two_people() {
    let (_db, store, host, registry, paid, run) = unknown_outcome(RunOptions {
        approvals_required: 2,
        ..RunOptions::default()
    })
    .await;
    let run_id = run.run_id();
    assert!(matches!(
        choose(&store, run_id, "alice", Choice::Rerun).await,
        Err(ClaimError::Refused {
            reason: Refusal::SelfRerun { .. },
            ..
        })
    ));
    let first = choose(&store, run_id, "bob", Choice::Rerun).await.unwrap();
    assert!(!first.stands);
    assert_eq!(first.reruns, (1, 2));
    let [unknown] = store
        .unknown_calls(run_id)
        .await
        .unwrap()
        .try_into()
        .unwrap();
    assert_eq!(unknown.reruns, (1, 2));
    assert_eq!(
        store.open_runs().await.unwrap()[0].standing(),
        "outcome unknown"
    );
    assert!(
        host.next().await.unwrap().is_none(),
        "it waits for a second person"
    );
    for bob in ["BOB", " bob", "b0b"] {
        let again = choose(&store, run_id, bob, Choice::Rerun).await;
        assert!(
            matches!(again, Err(ClaimError::AlreadyChose { .. })),
            "{bob:?}: {again:?}"
        );
    }
    let second = choose(&store, run_id, "carol", Choice::Rerun)
        .await
        .unwrap();
    assert!(second.stands);
    assert_eq!(second.reruns, (2, 2));
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    let resumed = host.resume_all(&registry, &model).await.unwrap();
    assert!(
        matches!(resumed[0].ended, Ended::Finished { .. }),
        "{resumed:?}"
    );
    assert_eq!(paid.load(Ordering::SeqCst), 2, "run once more, once");
    let history = store.run_history(run_id).await.unwrap();
    assert_eq!(
        history.calls[0].choices,
        [
            "rerun by bob (name from flag, through library, attempt 1): the payment processor has no record of it",
            "rerun by carol (name from flag, through library, attempt 1): the payment processor has no record of it",
        ]
    );
}

/// A choice names the call and carries the digest of what was shown: the
/// run, the suspension, the turn, the call, its arguments and the attempt.
/// Another call, another digest, no reason, or a run with nothing unknown is
/// refused, and nothing is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_choice_names_the_call_and_the_attempt_it_was_shown() {
    let (_db, store, host, _registry, _paid, run) = unknown_outcome(RunOptions::default()).await;
    let run_id = run.run_id();
    let [unknown] = store
        .unknown_calls(run_id)
        .await
        .unwrap()
        .try_into()
        .unwrap();
    let arguments = json!({"cents": 100});
    let shown = |attempt| {
        toolgate::suspend::rerun_digest(&toolgate::suspend::UnknownCall {
            run_id,
            suspension: &run.digest(),
            turn: 1,
            call_index: 0,
            call_id: "p1",
            tool: "pay",
            arguments: &arguments,
            attempt,
        })
    };
    assert_eq!(unknown.digest, shown(1), "the digest binds what was shown");
    let attempt = |digest: &toolgate::suspend::RerunDigest, call_id: &str, reason: &str| {
        let store = store.clone();
        let digest = digest.clone();
        let call_id = call_id.to_owned();
        let reason = reason.to_owned();
        async move {
            store
                .choose(
                    run_id,
                    &operator("bob"),
                    &Choosing {
                        call_id: &call_id,
                        digest: &digest,
                        choice: Choice::Rerun,
                        reason: &reason,
                    },
                )
                .await
        }
    };
    let wrong_call = attempt(&unknown.digest, "p2", "why").await;
    assert!(
        matches!(&wrong_call, Err(ClaimError::NotTheUnknownCall { waiting, .. }) if waiting == &["`p1` (pay)"]),
        "{wrong_call:?}"
    );
    for stale in [
        shown(2),
        toolgate::suspend::RerunDigest::from_text(run.digest().as_str()),
    ] {
        let refused = attempt(&stale, "p1", "why").await;
        assert!(
            matches!(refused, Err(ClaimError::StaleChoice { .. })),
            "{refused:?}"
        );
    }
    for reason in [
        "",
        "  \n",
        "\u{200b}",
        "\u{a0}",
        "\u{2800}",
        "\u{3164}",
        "\u{1b}\u{7}",
    ] {
        let refused = attempt(&unknown.digest, "p1", reason).await;
        assert!(
            matches!(refused, Err(ClaimError::NoReason { .. })),
            "{refused:?}"
        );
    }
    assert!(host.next().await.unwrap().is_none(), "nothing was recorded");
    assert!(
        store.run_history(run_id).await.unwrap().calls[0]
            .choices
            .is_empty()
    );
    let waiting = paused(
        &pay_registry(&Arc::new(AtomicUsize::new(0))),
        RunOptions::default(),
    )
    .await;
    store.save_suspended(&waiting, "payments").await.unwrap();
    let refused = store
        .choose(
            waiting.run_id(),
            &operator("bob"),
            &Choosing {
                call_id: "p1",
                digest: &unknown.digest,
                choice: Choice::Skip,
                reason: "why",
            },
        )
        .await;
    assert!(
        matches!(refused, Err(ClaimError::Store(StoreError::NotUnknown(_)))),
        "{refused:?}"
    );
}

/// Under a key a choice's tag covers who chose, where the name came from,
/// why, the call and the digest: a reason changed in the database makes the
/// choice no choice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_choice_whose_reason_was_changed_is_ignored() {
    let key = IntegrityKey::new(b"the store's own sixteen-plus byte key").unwrap();
    let (_db, store, host, registry, paid, run) =
        unknown_outcome_keyed(RunOptions::default(), Some(key)).await;
    assert!(
        choose(&store, run.run_id(), "carol", Choice::Rerun)
            .await
            .unwrap()
            .stands
    );
    for column in ["reason", "decided_by_source", "digest"] {
        let changed = format!("UPDATE execution_choice SET {column} = {column} || 'x'");
        Query::new(changed.clone())
            .execute_on(&store)
            .await
            .unwrap();
        let model = ScriptedModel::new([Reply::Text("done".into())]);
        let resumed = host.resume_all(&registry, &model).await.unwrap();
        assert!(
            matches!(resumed[0].ended, Ended::OutcomeUnknown { .. }),
            "{column}: {resumed:?}"
        );
        assert_eq!(
            paid.load(Ordering::SeqCst),
            1,
            "{column}: nothing ran again"
        );
        let restored = format!(
            "UPDATE execution_choice SET {column} = substr({column}, 1, length({column}) - 1)"
        );
        Query::new(restored).execute_on(&store).await.unwrap();
        Query::new(
            "UPDATE suspended_run SET execution = 'pending' WHERE execution = 'outcome_unknown'",
        )
        .execute_on(&store)
        .await
        .unwrap();
    }
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    let resumed = host.resume_all(&registry, &model).await.unwrap();
    assert!(
        matches!(resumed[0].ended, Ended::Finished { .. }),
        "{resumed:?}"
    );
    assert_eq!(
        paid.load(Ordering::SeqCst),
        2,
        "the choice as made is obeyed"
    );
}

/// Under a key a suspension's record is one chain: a row of it deleted (the
/// newest included), or its links reordered, is refused when a host next
/// loads the run, before anything of it runs. Here a payment whose outcome
/// is unknown was skipped by `bob`; each edit below is one a database writer
/// without the key could make, and without the chain the first would have
/// made the host pay again (the journal would say the call never started).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one case per edit a writer without the key could make"
)]
async fn a_record_row_deleted_or_reordered_is_refused_at_the_next_load() {
    let key = || IntegrityKey::new(b"the store's own sixteen-plus byte key").unwrap();
    let attacks: [(&str, &[&str], &str); 8] = [
        ("nothing", &[], ""),
        (
            "the call's start deleted",
            &["DELETE FROM call_execution"],
            "the journal of call 0 of turn 1 is not what its chain recorded",
        ),
        (
            "the choice deleted",
            &["DELETE FROM execution_choice"],
            "the choice row 1 its chain names is missing or changed",
        ),
        (
            "the choice and its link, the newest, deleted",
            &[
                "DELETE FROM execution_choice",
                "DELETE FROM record_link WHERE seq = (SELECT MAX(seq) FROM record_link)",
            ],
            "the chain holds 3 links, and its head does not verify over them",
        ),
        (
            "the plan and the journal deleted",
            &[
                "DELETE FROM execution_choice",
                "DELETE FROM call_execution",
                "DELETE FROM turn_plan",
            ],
            "the plan row 1 its chain names is missing or changed",
        ),
        (
            "the decision deleted",
            &["DELETE FROM decision"],
            "the decision row 1 its chain names is missing or changed",
        ),
        (
            "the document relabelled as of a version before the chain, the start deleted",
            &[
                "UPDATE suspended_run SET document = REPLACE(document, '\"version\":9', '\"version\":4')",
                "DELETE FROM call_execution",
            ],
            "the document's integrity tag does not verify under this store's key",
        ),
        (
            "two links swapped",
            &[
                "UPDATE record_link SET seq = 100 WHERE seq = 1",
                "UPDATE record_link SET seq = 1 WHERE seq = 2",
                "UPDATE record_link SET seq = 2 WHERE seq = 100",
            ],
            "link 1 of the chain does not verify over the one before it",
        ),
    ];
    let backend = Store::open(TestDb::new().await.location())
        .await
        .unwrap()
        .backend();
    // A copy of the plan under another id, its table's uniqueness dropped
    // first: a copy with no journal must not pass for the plan (recovery
    // would read every call as never started).
    let copied: &[&str] = if backend == toolgate_store::Backend::Postgres {
        &[
            "ALTER TABLE turn_plan DROP CONSTRAINT turn_plan_suspension_id_turn_key",
            "INSERT INTO turn_plan (id, suspension_id, turn, plan, mac, created_at)
             SELECT -1, suspension_id, turn, plan, mac, created_at FROM turn_plan",
        ]
    } else {
        &[
            "ALTER TABLE turn_plan RENAME TO turn_plan_kept",
            "CREATE TABLE turn_plan (id INTEGER PRIMARY KEY, suspension_id INTEGER NOT NULL,
                 turn INTEGER NOT NULL, plan TEXT NOT NULL, mac TEXT, created_at BIGINT NOT NULL)",
            "INSERT INTO turn_plan SELECT * FROM turn_plan_kept",
            "INSERT INTO turn_plan (id, suspension_id, turn, plan, mac, created_at)
             SELECT -1, suspension_id, turn, plan, mac, created_at FROM turn_plan_kept",
        ]
    };
    let attacks =
        attacks
            .into_iter()
            .chain([("the plan copied", copied, "the plan row 1 is stored twice")]);
    for (attack, edits, refused) in attacks {
        let (_db, store, host, registry, paid, run) =
            unknown_outcome_keyed(RunOptions::default(), Some(key())).await;
        let chosen = choose(&store, run.run_id(), "bob", Choice::Skip).await;
        assert!(chosen.is_ok_and(|c| c.stands), "{attack}");
        let links: i64 = Query::new("SELECT COUNT(*) FROM record_link")
            .scalar_on(&store)
            .await
            .unwrap();
        assert_eq!(links, 4, "a decision, a plan, a start and a choice");
        for edit in edits {
            Query::new(*edit).execute_on(&store).await.unwrap();
        }
        let model = ScriptedModel::new([Reply::Text("done".into())]);
        let resumed = host.resume_all(&registry, &model).await.unwrap();
        assert_eq!(paid.load(Ordering::SeqCst), 1, "{attack}: never paid twice");
        if refused.is_empty() {
            assert!(
                matches!(resumed.as_slice(), [one] if matches!(one.ended, Ended::Finished { .. })),
                "{attack}: {resumed:?}"
            );
            continue;
        }
        assert!(resumed.is_empty(), "{attack}: {resumed:?}");
        let aside = host.set_aside();
        assert_eq!(aside.len(), 1, "{attack}: {aside:?}");
        assert!(
            aside[0].reason.contains(refused),
            "{attack}: {}",
            aside[0].reason
        );
    }
}
