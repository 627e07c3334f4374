//! A run named by a prefix of its id (`Store::resolve_run_prefix`): exact
//! on both backends, with `%` and `_` taken as the characters they are,
//! prefixes counted in characters, an ambiguous prefix refused naming the
//! runs, and a short one refused unless it is a whole id.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use toolgate_store::{Query, RunPrefixError, Store};

mod backend;
use backend::TestDb;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    backend::rerun_on_postgres();
}

/// A suspension row under `run_id`, as only a test writes one: the
/// lookup reads ids, never documents.
async fn stored(store: &Store, run_id: &str, state: &str) {
    Query::new(
        "INSERT INTO suspended_run (run_id, status, document, digest, requested_by, created_at, owner, execution, updated_at, state)
         VALUES ($1, 'awaiting_approval', '{}', 'sha256:0', 'alice', 1, 'demo', 'pending', 1, $2)",
    )
    .bind(run_id)
    .bind(state)
    .execute_on(store)
    .await
    .unwrap();
}

#[tokio::test]
async fn a_prefix_names_one_run_exactly() {
    let db = TestDb::new().await;
    let store = Store::open(db.location()).await.unwrap();
    for id in [
        "abcdef-1",
        "abcdef-2",
        "abc%ef-3",
        "ab_def-4",
        "xyz",
        "éééééé-5",
    ] {
        stored(&store, id, "open").await;
    }
    // A second suspension of a run is the same run.
    stored(&store, "abcdef-1", "decided").await;

    let resolve = |typed: &'static str| {
        let store = store.clone();
        async move { store.resolve_run_prefix(typed).await }
    };
    assert_eq!(resolve("abcdef-1").await.unwrap(), "abcdef-1");
    assert_eq!(resolve("abcdef-").await.unwrap_err().to_string(), {
        "`abcdef-` names 2 runs: abcdef-1, abcdef-2; give more of the id"
    });
    match resolve("abcdef").await {
        Err(RunPrefixError::Ambiguous {
            candidates, count, ..
        }) => {
            assert_eq!(candidates, ["abcdef-1", "abcdef-2"]);
            assert_eq!(count, 2);
        }
        other => panic!("expected an ambiguous prefix: {other:?}"),
    }
    // LIKE's wildcards are characters like any other.
    assert_eq!(resolve("abc%ef").await.unwrap(), "abc%ef-3");
    assert_eq!(resolve("ab_def").await.unwrap(), "ab_def-4");
    assert!(matches!(
        resolve("______").await,
        Err(RunPrefixError::NotFound(_))
    ));
    // Six characters, not six bytes.
    assert_eq!(resolve("éééééé").await.unwrap(), "éééééé-5");
    // A whole id is a run however short; a short prefix is refused.
    assert_eq!(resolve(" xyz ").await.unwrap(), "xyz");
    assert!(matches!(
        resolve("abc").await,
        Err(RunPrefixError::TooShort { min: 6, .. })
    ));
    assert!(matches!(
        resolve("zzzzzz").await,
        Err(RunPrefixError::NotFound(_))
    ));
    store.close().await;
}
