//! The outbox in the store, on SQLite and PostgreSQL: every change of a
//! run's state writes one event, with one delivery per sink, in the change's
//! own transaction (a change refused writes none); deliveries are leased to
//! one dispatcher at a time, settled once, retried after a failure and
//! given up on; the dispatcher's rounds against a real receiver on
//! loopback; the signing scheme pinned to the specification's test vector.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::time::Duration;

use serde_json::{Map, Value, json};
use toolgate::identity::{IdentitySource, Operator};
use toolgate::{
    Agent, Execute, Registry, Tool, ToolOutput,
    run::{Outcome, Reply, RunRequest, ToolCall},
    suspend::SuspendedRun,
    testing::{MemoryLog, ScriptedModel},
};
use toolgate_notify::{DispatchOptions, Dispatcher, SecretSource, SinkSettings, WebhookSettings};
use toolgate_store::outbox::{EventKind, NewSink, RunEvent, SinkKind, WaitsFor};
use toolgate_store::{Answer, DataClass, Host, Query, Store};

#[path = "../../store/tests/backend/mod.rs"]
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

async fn suspended(registry: &Registry, branch: &str) -> SuspendedRun {
    let model = ScriptedModel::new([Reply::Calls {
        content: None,
        calls: vec![ToolCall {
            id: "c1".into(),
            name: "delete_branch".into(),
            arguments: json!({"branch": branch}),
        }],
    }]);
    let log = MemoryLog::new();
    let agent = Agent::new(registry, &model, &log);
    match agent.start(RunRequest::new("alice", "tidy up")).await {
        Ok(Outcome::AwaitingApproval(run)) => SuspendedRun::AwaitingApproval(run),
        other => panic!("expected an approval pause, got {other:?}"),
    }
}

fn operator(name: &str) -> Operator {
    Operator::new(name, IdentitySource::Flag).expect("a usable name")
}

async fn add_sink(store: &Store, name: &str, url: &str, max: DataClass) {
    let settings = SinkSettings::Webhook(WebhookSettings {
        url: url.parse().unwrap(),
        secret: SecretSource::Env("TOOLGATE_TEST_UNSET_SECRET".into()),
    });
    store
        .add_sink(
            &NewSink {
                name: name.to_owned(),
                kind: SinkKind::Webhook,
                settings: settings.to_json(),
                max_class: max,
            },
            &operator("olga"),
        )
        .await
        .unwrap();
}

/// Every event written, oldest first, with its number of deliveries.
async fn events(store: &Store) -> Vec<(RunEvent, i64)> {
    let rows = Query::new(
        "SELECT e.payload, (SELECT COUNT(*) FROM notification_delivery d WHERE d.event = e.id) AS deliveries
         FROM notification_event e ORDER BY e.id",
    )
    .fetch_all_on(store)
    .await
    .unwrap();
    rows.iter()
        .map(|row| {
            let payload: String = row.try_get("payload").unwrap();
            let deliveries: i64 = row.try_get("deliveries").unwrap();
            (serde_json::from_str(&payload).unwrap(), deliveries)
        })
        .collect()
}

#[tokio::test]
async fn each_change_of_a_run_writes_one_event_per_sink_and_a_refused_change_none() {
    let db = TestDb::new().await;
    let store = Store::open(db.location()).await.unwrap();
    let registry = registry();
    add_sink(&store, "a", "https://a.example/hook", DataClass::SourceCode).await;
    add_sink(
        &store,
        "b",
        "https://b.example/hook",
        DataClass::PublicContent,
    )
    .await;

    let run = suspended(&registry, "old\u{202e}gpj.exe").await;
    store.save_suspended(&run, "worker").await.unwrap();
    let told = events(&store).await;
    let [(waiting, 2)] = told.as_slice() else {
        panic!("one event, two deliveries: {told:?}")
    };
    assert_eq!(waiting.kind, EventKind::Waiting);
    assert_eq!(waiting.data.waits_for, Some(WaitsFor::Approval));
    assert_eq!(waiting.data.run_id, run.run_id());
    assert_eq!(waiting.data.requested_by, "alice");
    assert_eq!(waiting.data.host, "worker");
    assert_eq!(waiting.data.data_class, None, "builtins only: no server");
    assert_eq!(waiting.data.calls[0].tool, "delete_branch");
    assert_eq!(waiting.data.calls[0].server, None);
    let summary = waiting.data.calls[0].summary.as_deref().unwrap();
    assert!(summary.contains("old"), "{summary}");
    assert!(
        !summary.contains('\u{202e}'),
        "hidden characters shown: {summary}"
    );
    assert!(waiting.id.starts_with("evt_"), "{}", waiting.id);

    // Refused decisions tell no one.
    let wrong = suspended(&registry, "other").await.digest();
    assert!(
        store
            .decide(
                run.run_id(),
                Some(&wrong),
                &operator("bob"),
                Answer::Approve
            )
            .await
            .is_err()
    );
    assert_eq!(events(&store).await.len(), 1);

    // Decided, then resumed.
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
    let host = Host::new(store.clone(), "worker").unwrap();
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    host.resume_all(&registry, &model).await.unwrap();
    let told = events(&store).await;
    let kinds: Vec<EventKind> = told.iter().map(|(e, _)| e.kind).collect();
    assert_eq!(
        kinds,
        [EventKind::Waiting, EventKind::Decided, EventKind::Resumed],
        "{told:?}"
    );
    let decided = &told[1].0;
    assert_eq!(decided.data.verdict.as_deref(), Some("approved"));
    assert_eq!(decided.data.decided_by, ["bob"]);
    assert_eq!(
        decided.data.calls, waiting.data.calls,
        "told as it was shown"
    );
    assert!(told.iter().all(|(_, deliveries)| *deliveries == 2));
    let ids: std::collections::BTreeSet<&str> = told.iter().map(|(e, _)| e.id.as_str()).collect();
    assert_eq!(ids.len(), 3, "each event its own id");
}

#[tokio::test]
async fn a_delivery_is_leased_to_one_dispatcher_settled_once_retried_and_given_up() {
    let db = TestDb::new().await;
    let store = Store::open(db.location()).await.unwrap();
    let registry = registry();
    add_sink(&store, "a", "https://a.example/hook", DataClass::SourceCode).await;
    add_sink(&store, "b", "https://b.example/hook", DataClass::SourceCode).await;
    store
        .save_suspended(&suspended(&registry, "x").await, "worker")
        .await
        .unwrap();

    let lease = Duration::from_mins(1);
    let first = store.lease_deliveries("one", lease, 10).await.unwrap();
    assert_eq!(first.len(), 2);
    assert!(
        store
            .lease_deliveries("two", lease, 10)
            .await
            .unwrap()
            .is_empty()
    );

    // Settled by the lease's holder only, and once.
    assert!(!store.delivered(&first[0], "two").await.unwrap());
    assert!(store.delivered(&first[0], "one").await.unwrap());
    assert!(!store.delivered(&first[0], "one").await.unwrap());

    // A failure due again now is leased again, with its attempt counted.
    assert!(
        store
            .delivery_failed(&first[1], "one", "the receiver answered 503", Some(0))
            .await
            .unwrap()
    );
    let again = store.lease_deliveries("two", lease, 10).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].sink, first[1].sink);
    assert_eq!(again[0].attempts, 1);
    let status = store.notification_status().await.unwrap();
    let failing = status.iter().find(|s| s.name == first[1].sink).unwrap();
    assert_eq!((failing.pending, failing.failing), (1, 1), "{status:?}");
    assert_eq!(
        failing.last_error.as_deref(),
        Some("the receiver answered 503")
    );

    // Given up: never leased again, counted as such.
    assert!(
        store
            .delivery_failed(&again[0], "two", "too old", None)
            .await
            .unwrap()
    );
    assert!(
        store
            .lease_deliveries("three", lease, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let status = store.notification_status().await.unwrap();
    let delivered: i64 = status.iter().map(|s| s.delivered).sum();
    let given_up: i64 = status.iter().map(|s| s.given_up).sum();
    let pending: i64 = status.iter().map(|s| s.pending).sum();
    assert_eq!((delivered, given_up, pending), (1, 1, 0), "{status:?}");
}

#[tokio::test]
async fn a_sink_added_later_hears_what_follows_and_one_removed_takes_its_deliveries() {
    let db = TestDb::new().await;
    let store = Store::open(db.location()).await.unwrap();
    let registry = registry();
    store
        .save_suspended(&suspended(&registry, "before").await, "worker")
        .await
        .unwrap();
    add_sink(
        &store,
        "late",
        "https://late.example/hook",
        DataClass::SourceCode,
    )
    .await;
    store
        .save_suspended(&suspended(&registry, "after").await, "worker")
        .await
        .unwrap();
    let told = events(&store).await;
    let deliveries: Vec<i64> = told.iter().map(|(_, d)| *d).collect();
    assert_eq!(deliveries, [0, 1], "{told:?}");

    assert!(
        store
            .add_sink(
                &NewSink {
                    name: "late".into(),
                    kind: SinkKind::Slack,
                    settings: json!({}),
                    max_class: DataClass::SourceCode,
                },
                &operator("olga"),
            )
            .await
            .is_err(),
        "a name is one sink"
    );
    store.remove_sink("late").await.unwrap();
    assert!(store.remove_sink("late").await.is_err());
    let deliveries: Vec<i64> = events(&store).await.iter().map(|(_, d)| *d).collect();
    assert_eq!(deliveries, [0, 0]);
    assert!(store.notification_status().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_sink_whose_secret_cannot_be_read_is_retried_and_says_where_from_never_a_value() {
    let db = TestDb::new().await;
    let store = Store::open(db.location()).await.unwrap();
    let registry = registry();
    // A receiver that is never reached: the secret is read first.
    add_sink(
        &store,
        "a",
        "http://127.0.0.1:9/hook",
        DataClass::SourceCode,
    )
    .await;
    store
        .save_suspended(&suspended(&registry, "x").await, "worker")
        .await
        .unwrap();
    let dispatcher = Dispatcher::new(store.clone(), DispatchOptions::default());
    let round = dispatcher.round().await.unwrap();
    assert_eq!((round.delivered, round.retrying, round.given_up), (0, 1, 0));
    let status = store.notification_status().await.unwrap();
    let error = status[0].last_error.as_deref().unwrap();
    assert!(
        error.contains("environment variable TOOLGATE_TEST_UNSET_SECRET"),
        "{error}"
    );
    // Due again only after its backoff.
    assert_eq!(dispatcher.round().await.unwrap().handled(), 0);
    assert!(status[0].next_at.unwrap() > 0);
}

#[test]
fn the_signature_is_the_specifications_own_test_vector() {
    // From the Standard Webhooks specification's repository.
    let signer = standardwebhooks::Webhook::new("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD").unwrap();
    let signature = signer
        .sign(
            "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
            1_649_367_553,
            br#"{"email":"test@example.com","username":"test_user"}"#,
        )
        .unwrap();
    assert_eq!(signature, "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=");
}
