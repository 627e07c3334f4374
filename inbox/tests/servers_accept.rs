//! Accepting a quarantined tool from the inbox's servers page, on SQLite
//! and again on PostgreSQL: only for an operator who may declare tools,
//! only from the inbox's own pages with the session's token, only for the
//! definition shown — a definition changed again is news and records
//! nothing — recorded as the signed-in operator's declaration through the
//! inbox. A tool quarantined under its server's flag is accepted from the
//! console.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use axum::http::{StatusCode, header};
use toolgate::OperatorDeclaration;
use toolgate_inbox::Inbox;
use toolgate_store::{DataClass, Store, ToolDeclaration};

#[path = "../../store/tests/backend/mod.rs"]
mod backend;
use backend::TestDb;

mod common;
use common::catalogue::{declare, server, tool};
use common::{Answer, ORIGIN, get, inbox, post, send, signed_in};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres_too() {
    backend::rerun_on_postgres();
}

/// Server `notes` with tool `notes.write`, declared "no approval" by bob,
/// whose definition changed since: quarantined under its own declaration.
/// Returns the digest of the definition as it is now.
async fn quarantined_write(store: &Store) -> String {
    server(
        store,
        "notes",
        "Notes",
        Some(DataClass::EditorContent),
        &["write"],
    )
    .await;
    declare(store, "notes", "notes.write", ToolDeclaration::NoApproval).await;
    store
        .replace_catalogue(
            "notes",
            &[tool("notes", "write", "Appends a note, and mails it.")],
        )
        .await
        .unwrap();
    store
        .acceptance("notes", &["notes.write".to_owned()])
        .await
        .unwrap()
        .digest
}

async fn write_row(store: &Store) -> toolgate_store::CatalogueRow {
    store
        .catalogue("notes")
        .await
        .unwrap()
        .into_iter()
        .find(|row| row.local_name == "notes.write")
        .unwrap()
}

/// `alice`, who may declare tools, signed in: her cookie and token.
async fn alice_may_declare(inbox: &Inbox, store: &Store) -> (String, String) {
    store
        .add_operator("alice", std::time::Duration::from_mins(10))
        .await
        .unwrap();
    store.set_may_declare("alice", true).await.unwrap();
    signed_in(inbox, store, "alice").await
}

/// The page's accept form for `notes.write`, with token `csrf_field` and
/// `digest`, sent from `origin` in the session (`csrf`, `cookie`).
async fn accept_as(
    inbox: &Inbox,
    (cookie, csrf): (&str, &str),
    origin: &str,
    csrf_field: &str,
    digest: &str,
) -> Answer {
    send(
        inbox,
        post(
            &format!("/s/{csrf}/servers/accept"),
            Some(cookie),
            Some(origin),
            &[
                ("csrf", csrf_field),
                ("server", "notes"),
                ("tool", "notes.write"),
                ("digest", digest),
            ],
        ),
    )
    .await
}

/// Whether `notes.write` (on a server whose flag is on) is quarantined.
async fn write_quarantined(store: &Store) -> bool {
    write_row(store)
        .await
        .gate(OperatorDeclaration::ApprovalRequired)
        .quarantine()
        .is_some()
}

/// Accepting a quarantined tool from the page is offered only to an
/// operator who may declare, and taken only from the inbox's own pages
/// with the session's token; anything else records nothing.
#[tokio::test]
async fn accepting_from_the_page_is_an_operators_power_from_its_own_pages() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let shown = quarantined_write(&store).await;

    // carol may not declare: no form, the console's command, and her
    // attempt records nothing.
    let (carol, carol_csrf) = signed_in(&inbox, &store, "carol").await;
    let page = send(
        &inbox,
        get(&format!("/s/{carol_csrf}/servers"), Some(&carol)),
    )
    .await;
    assert!(!page.body.contains("/servers/accept"), "{}", page.body);
    assert!(
        page.body.contains(&format!("--digest {shown}")),
        "{}",
        page.body
    );
    let refused = accept_as(&inbox, (&carol, &carol_csrf), ORIGIN, &carol_csrf, &shown).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert!(refused.body.contains("may-declare"), "{}", refused.body);
    assert!(write_quarantined(&store).await);

    // alice may: the form carries the digest of the definition shown.
    let (alice, csrf) = alice_may_declare(&inbox, &store).await;
    let page = send(&inbox, get(&format!("/s/{csrf}/servers"), Some(&alice))).await;
    assert!(
        page.body
            .contains(&format!("action=\"/s/{csrf}/servers/accept\"")),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains(&format!("name=\"digest\" value=\"{shown}\"")),
        "{}",
        page.body
    );

    // From another site, or without the session's token: refused.
    let cross = accept_as(
        &inbox,
        (&alice, &csrf),
        "http://evil.example",
        &csrf,
        &shown,
    )
    .await;
    assert_eq!(cross.status, StatusCode::FORBIDDEN, "{}", cross.body);
    let same_site = accept_as(
        &inbox,
        (&alice, &csrf),
        "http://127.0.0.1:9999",
        &csrf,
        &shown,
    )
    .await;
    assert_eq!(
        same_site.status,
        StatusCode::FORBIDDEN,
        "{}",
        same_site.body
    );
    let tokenless = accept_as(&inbox, (&alice, &csrf), ORIGIN, "0", &shown).await;
    assert_eq!(
        tokenless.status,
        StatusCode::FORBIDDEN,
        "{}",
        tokenless.body
    );
    assert!(write_quarantined(&store).await);
    assert_eq!(write_row(&store).await.declared.unwrap().by, "bob");
}

/// A definition changed again since the page is refused as news, nothing
/// recorded; the definition shown is accepted, recorded as the signed-in
/// operator's declaration through the inbox, and leaves quarantine.
#[tokio::test]
async fn a_quarantined_tool_is_accepted_as_shown_or_not_at_all() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let shown = quarantined_write(&store).await;
    let (alice, csrf) = alice_may_declare(&inbox, &store).await;
    let session = (alice.as_str(), csrf.as_str());

    // The server changed it again since the page.
    store
        .replace_catalogue(
            "notes",
            &[tool(
                "notes",
                "write",
                "Appends a note, and mails it elsewhere.",
            )],
        )
        .await
        .unwrap();
    let stale = accept_as(&inbox, session, ORIGIN, &csrf, &shown).await;
    assert_eq!(stale.status, StatusCode::CONFLICT, "{}", stale.body);
    assert!(
        stale.body.contains("changed again since this page"),
        "{}",
        stale.body
    );
    assert!(
        stale.body.contains("Nothing was recorded"),
        "{}",
        stale.body
    );
    assert!(write_quarantined(&store).await);
    assert_eq!(write_row(&store).await.declared.unwrap().by, "bob");

    // As shown now: accepted, recorded as alice's through the inbox.
    let now = store
        .acceptance("notes", &["notes.write".to_owned()])
        .await
        .unwrap()
        .digest;
    let done = accept_as(&inbox, session, ORIGIN, &csrf, &now).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(
        done.headers[header::LOCATION],
        format!("/s/{csrf}/servers").as_str()
    );
    assert!(!write_quarantined(&store).await);
    let row = write_row(&store).await;
    assert_eq!(row.declaration, ToolDeclaration::NoApproval);
    let declared = row.declared.unwrap();
    assert_eq!(
        (
            declared.by.as_str(),
            declared.channel.as_str(),
            declared.source.as_str()
        ),
        ("alice", "inbox", "signed_in")
    );
    assert_eq!(declared.digest.as_deref(), Some(now.as_str()));
    let page = send(&inbox, get(&format!("/s/{csrf}/servers"), Some(&alice))).await;
    assert!(!page.body.contains("Quarantined:"), "{}", page.body);
    // Sent again, the same form finds nothing to accept.
    let again = accept_as(&inbox, session, ORIGIN, &csrf, &now).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);
}

/// A tool quarantined under its server's flag is accepted from the
/// console: the page offers no form for it, even to an operator who may
/// declare, and refuses one sent anyway.
#[tokio::test]
async fn a_tool_quarantined_under_its_servers_flag_is_accepted_from_the_console() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    server(
        &store,
        "open",
        "Open",
        Some(DataClass::EditorContent),
        &["new"],
    )
    .await;
    let digest = store.acceptance("open", &[]).await.unwrap().digest;
    store
        .set_approval("open", OperatorDeclaration::NoApproval, Some(&digest))
        .await
        .unwrap();
    store
        .replace_catalogue("open", &[tool("open", "new", "Changed.")])
        .await
        .unwrap();
    store
        .add_operator("alice", std::time::Duration::from_mins(10))
        .await
        .unwrap();
    store.set_may_declare("alice", true).await.unwrap();
    let (alice, csrf) = signed_in(&inbox, &store, "alice").await;
    let page = send(&inbox, get(&format!("/s/{csrf}/servers"), Some(&alice))).await;
    assert!(
        page.body.contains("Quarantined: <code><bdi>open.new"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("/servers/accept"), "{}", page.body);
    assert!(
        page.body.contains(
            "toolgate server accept <bdi>open</bdi> <bdi>open.new</bdi> --digest sha256:"
        ),
        "{}",
        page.body
    );
    let now = store
        .acceptance("open", &["open.new".to_owned()])
        .await
        .unwrap()
        .digest;
    let sent = send(
        &inbox,
        post(
            &format!("/s/{csrf}/servers/accept"),
            Some(&alice),
            Some(ORIGIN),
            &[
                ("csrf", &csrf),
                ("server", "open"),
                ("tool", "open.new"),
                ("digest", &now),
            ],
        ),
    )
    .await;
    assert_eq!(sent.status, StatusCode::CONFLICT, "{}", sent.body);
    let row = store
        .catalogue("open")
        .await
        .unwrap()
        .into_iter()
        .next()
        .unwrap();
    assert_eq!(row.declaration, ToolDeclaration::Inherit);
    assert!(
        row.gate(OperatorDeclaration::NoApproval)
            .quarantine()
            .is_some()
    );
}

/// A tool declared otherwise since the page was shown — raised to `on`,
/// say — is not lowered by a form from before: refused as news, its
/// declaration kept.
#[tokio::test]
async fn a_tool_declared_again_since_the_page_is_not_lowered() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let shown = quarantined_write(&store).await;
    let (alice, csrf) = alice_may_declare(&inbox, &store).await;
    let page = send(&inbox, get(&format!("/s/{csrf}/servers"), Some(&alice))).await;
    assert!(
        page.body.contains(&format!("value=\"{shown}\"")),
        "{}",
        page.body
    );
    declare(
        &store,
        "notes",
        "notes.write",
        ToolDeclaration::ApprovalRequired,
    )
    .await;
    let sent = accept_as(&inbox, (&alice, &csrf), ORIGIN, &csrf, &shown).await;
    assert_eq!(sent.status, StatusCode::CONFLICT, "{}", sent.body);
    assert!(sent.body.contains("Nothing was recorded"), "{}", sent.body);
    let row = write_row(&store).await;
    assert_eq!(row.declaration, ToolDeclaration::ApprovalRequired);
    assert_eq!(row.declared.unwrap().by, "bob");
    // The store refuses it too, in the transaction that would write it.
    let operator =
        toolgate::identity::Operator::new("alice", toolgate::identity::IdentitySource::SignedIn)
            .unwrap()
            .via(toolgate::identity::Channel::Inbox);
    let refused = store
        .accept_declared_tool("notes", "notes.write", &shown, &operator)
        .await;
    assert!(
        matches!(
            refused,
            Err(toolgate_store::StoreError::ToolDeclaredSince { now: "on", .. })
        ),
        "{refused:?}"
    );
    assert_eq!(
        write_row(&store).await.declaration,
        ToolDeclaration::ApprovalRequired
    );
}
