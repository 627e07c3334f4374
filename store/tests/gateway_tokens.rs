//! The tokens of the gateway served over HTTP: a token stands for one
//! person, is stored only as its secret's hash, is found only whole and
//! live, and revoked — by its id or its person's name — stands for no one
//! at once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use toolgate_store::{Query, Store, StoreError};

mod backend;
use backend::TestDb;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    backend::rerun_on_postgres();
}

#[tokio::test]
async fn a_token_stands_for_its_person_until_it_is_revoked() {
    let db = TestDb::new().await;
    let store = Store::open(&db.location()).await.unwrap();
    let made = store.add_gateway_token("  Alice ").await.unwrap();
    assert_eq!(made.person, "Alice", "as first written, trimmed");
    assert!(made.token.starts_with("tgw_"), "{made:?}");
    assert!(!format!("{made:?}").contains(&made.token), "never printed");
    let holder = store.gateway_token_holder(&made.token).await.unwrap();
    assert_eq!(
        holder.map(|h| (h.id, h.person)),
        Some((made.id.clone(), "Alice".to_owned()))
    );

    // Nothing stored holds the secret.
    let (_, secret) = made.token.rsplit_once('_').unwrap();
    let rows = Query::new("SELECT id, secret_hash, person, shown FROM gateway_token")
        .fetch_all_on(&store)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    for column in ["id", "secret_hash", "person", "shown"] {
        let value: String = rows[0].try_get(column).unwrap();
        assert!(!value.contains(secret), "{column} holds the secret");
    }

    // Only the whole token is found: its id with another secret, a cut
    // token, another case, nothing at all.
    let mut wrong_secret = made.token.clone();
    wrong_secret.pop();
    wrong_secret.push(if made.token.ends_with('0') { '1' } else { '0' });
    for guess in [
        wrong_secret.as_str(),
        &made.token[..made.token.len() - 1],
        &made.token.to_uppercase(),
        "",
    ] {
        assert_eq!(
            store.gateway_token_holder(guess).await.unwrap(),
            None,
            "{guess}"
        );
    }

    // A second token of the same person, by another spelling; revoking the
    // first by its id leaves the second.
    let second = store.add_gateway_token("alice").await.unwrap();
    assert_eq!(second.person, "alice");
    let revoked = store.revoke_gateway_tokens(&made.id).await.unwrap();
    assert_eq!(revoked.len(), 1);
    assert_eq!(store.gateway_token_holder(&made.token).await.unwrap(), None);
    assert!(
        store
            .gateway_token_holder(&second.token)
            .await
            .unwrap()
            .is_some()
    );
    // Again: nothing more to revoke, and no error.
    assert!(
        store
            .revoke_gateway_tokens(&made.id)
            .await
            .unwrap()
            .is_empty()
    );
    // By name: every live token of the person.
    let revoked = store.revoke_gateway_tokens("ALICE").await.unwrap();
    assert_eq!(
        revoked.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        [second.id.as_str()]
    );
    assert_eq!(
        store.gateway_token_holder(&second.token).await.unwrap(),
        None
    );

    let listed = store.gateway_tokens().await.unwrap();
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|t| t.revoked_at.is_some()));
    assert!(
        listed.iter().any(|t| t.last_used_at.is_some()),
        "{listed:?}"
    );

    for unknown in ["nobody", "0123456789abcdef", ""] {
        assert!(matches!(
            store.revoke_gateway_tokens(unknown).await,
            Err(StoreError::NoSuchGatewayToken(_))
        ));
    }
    assert!(matches!(
        store.add_gateway_token("\u{202e}").await,
        Err(StoreError::InvalidOperatorName { .. })
    ));
}
