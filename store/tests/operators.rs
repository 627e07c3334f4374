//! The people who sign in to decide: an operator's one-time sign-in link
//! opens one session, once, before it expires; a session lasts until it
//! expires, is ended, or its operator is revoked — which ends every session
//! and link of theirs at once; secrets are stored only as their hashes.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::time::Duration;

use toolgate_store::{Query, Store, StoreError};

mod backend;
use backend::TestDb;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    backend::rerun_on_postgres();
}

const HOUR: Duration = Duration::from_hours(1);

async fn store(db: &TestDb) -> Store {
    Store::open(&db.location()).await.unwrap()
}

#[tokio::test]
async fn a_sign_in_link_opens_one_session_once() {
    let db = TestDb::new().await;
    let store = store(&db).await;
    let link = store.add_operator("  Bob ", HOUR).await.unwrap();
    assert_eq!(
        link.operator, "Bob",
        "named as first written, spaces trimmed"
    );
    assert_eq!(link.secret.len(), 64);
    assert!(!format!("{link:?}").contains(&link.secret), "never printed");

    let opened = store.sign_in(&link.secret, HOUR).await.unwrap();
    assert_eq!(opened.session.operator, "Bob");
    // `bob` is the same operator: a new link, no second operator.
    let same = store.add_operator("bob", HOUR).await.unwrap();
    assert_eq!(same.operator, "Bob");
    assert_eq!(store.operators().await.unwrap().len(), 1);
    assert_ne!(opened.secret, link.secret);
    assert_ne!(opened.session.csrf_token, opened.secret);
    let found = store.session(&opened.secret).await.unwrap().unwrap();
    assert_eq!(found, opened.session);

    // Used once: the same link again signs no one in.
    assert!(matches!(
        store.sign_in(&link.secret, HOUR).await,
        Err(StoreError::SignInRefused)
    ));
    // A made-up secret, or the session's own, is no link either.
    for guess in ["", "0".repeat(64).as_str(), opened.secret.as_str()] {
        assert!(matches!(
            store.sign_in(guess, HOUR).await,
            Err(StoreError::SignInRefused)
        ));
    }
    // Nothing stored signs anyone in: only hashes are kept.
    let stored: Vec<String> = Query::new(
        "SELECT secret_hash FROM operator_link UNION ALL SELECT secret_hash FROM operator_session",
    )
    .fetch_all_on(&store)
    .await
    .unwrap()
    .iter()
    .map(|row| row.try_get("secret_hash").unwrap())
    .collect();
    assert_eq!(stored.len(), 3);
    for hash in &stored {
        assert_ne!(hash, &link.secret);
        assert_ne!(hash, &opened.secret);
    }
    assert!(store.session(&link.secret).await.unwrap().is_none());

    // Signed out, the session is gone.
    assert!(store.end_session(&opened.secret).await.unwrap());
    assert!(store.session(&opened.secret).await.unwrap().is_none());
    assert!(!store.end_session(&opened.secret).await.unwrap());
}

#[tokio::test]
async fn links_and_sessions_expire() {
    let db = TestDb::new().await;
    let store = store(&db).await;
    let link = store.add_operator("carol", Duration::ZERO).await.unwrap();
    assert!(matches!(
        store.sign_in(&link.secret, HOUR).await,
        Err(StoreError::SignInRefused)
    ));
    let link = store.add_operator("carol", HOUR).await.unwrap();
    let opened = store
        .sign_in(&link.secret, Duration::from_millis(50))
        .await
        .unwrap();
    assert!(store.session(&opened.secret).await.unwrap().is_some());
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert!(store.session(&opened.secret).await.unwrap().is_none());
}

#[tokio::test]
async fn revoking_an_operator_ends_every_session_and_link_at_once() {
    let db = TestDb::new().await;
    let store = store(&db).await;
    let first = store.add_operator("dave", HOUR).await.unwrap();
    let second = store.add_operator("dave", HOUR).await.unwrap();
    let unused = store.add_operator("dave", HOUR).await.unwrap();
    let one = store.sign_in(&first.secret, HOUR).await.unwrap();
    let two = store.sign_in(&second.secret, HOUR).await.unwrap();
    let other = store.add_operator("erin", HOUR).await.unwrap();
    let theirs = store.sign_in(&other.secret, HOUR).await.unwrap();
    let listed = store.operators().await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|o| (o.name.as_str(), o.live_sessions))
            .collect::<Vec<_>>(),
        [("dave", 2), ("erin", 1)]
    );

    assert_eq!(store.revoke_operator("Dave").await.unwrap(), 2);
    assert!(store.session(&one.secret).await.unwrap().is_none());
    assert!(store.session(&two.secret).await.unwrap().is_none());
    assert!(matches!(
        store.sign_in(&unused.secret, HOUR).await,
        Err(StoreError::SignInRefused)
    ));
    // Only theirs.
    assert!(store.session(&theirs.secret).await.unwrap().is_some());
    let dave = store.operators().await.unwrap().remove(0);
    assert!(dave.revoked_at.is_some() && dave.live_sessions == 0);

    // Let back in with a new link; the old sessions stay ended.
    let again = store.add_operator("dave", HOUR).await.unwrap();
    let three = store.sign_in(&again.secret, HOUR).await.unwrap();
    assert!(store.session(&three.secret).await.unwrap().is_some());
    assert!(store.session(&one.secret).await.unwrap().is_none());

    assert!(matches!(
        store.revoke_operator("nobody").await,
        Err(StoreError::NoSuchOperator(name)) if name == "nobody"
    ));
    assert!(matches!(
        store.add_operator("bob\u{202e}", HOUR).await,
        Err(StoreError::InvalidOperatorName { .. })
    ));
}

/// Of many sign-ins with one link at once, exactly one opens a session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_used_at_once_by_many_opens_one_session() {
    let db = TestDb::new().await;
    let store = store(&db).await;
    let link = store.add_operator("frank", HOUR).await.unwrap();
    let tries = (0..8).map(|_| {
        let store = store.clone();
        let secret = link.secret.clone();
        tokio::spawn(async move { store.sign_in(&secret, HOUR).await })
    });
    let mut opened = 0;
    for joined in futures_util::future::join_all(tries).await {
        match joined.unwrap() {
            Ok(_) => opened += 1,
            Err(StoreError::SignInRefused) => {}
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(opened, 1);
}
