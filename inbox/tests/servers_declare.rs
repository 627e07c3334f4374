//! Declaring from the servers page, on SQLite and again on PostgreSQL: a
//! tool's own declaration and a server's approval flag, only by an
//! operator who may declare, only from the inbox's own pages with the
//! session's token. What tightens is recorded at once, as the signed-in
//! operator's through the inbox; what lets calls run without a person is
//! shown first and acts only on the digest of the definitions shown — a
//! definition changed since records nothing.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use axum::http::StatusCode;
use toolgate::OperatorDeclaration;
use toolgate_inbox::Inbox;
use toolgate_store::{DataClass, Store, ToolDeclaration};

#[path = "../../store/tests/backend/mod.rs"]
mod backend;
use backend::TestDb;

mod common;
use common::catalogue::{server, tool};
use common::{Answer, ORIGIN, get, inbox, post, send, signed_in};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres_too() {
    backend::rerun_on_postgres();
}

/// `alice`, who may declare, signed in: her cookie and token.
async fn alice_may_declare(inbox: &Inbox, store: &Store) -> (String, String) {
    store
        .add_operator("alice", std::time::Duration::from_mins(10))
        .await
        .unwrap();
    store.set_may_declare("alice", true).await.unwrap();
    signed_in(inbox, store, "alice").await
}

async fn form(
    inbox: &Inbox,
    (cookie, csrf): (&str, &str),
    path: &str,
    fields: &[(&str, &str)],
) -> Answer {
    let mut all = vec![("csrf", csrf)];
    all.extend_from_slice(fields);
    send(
        inbox,
        post(
            &format!("/s/{csrf}/servers/{path}"),
            Some(cookie),
            Some(ORIGIN),
            &all,
        ),
    )
    .await
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

/// The value of the hidden field `name` in a page.
fn hidden(body: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = body
        .find(&marker)
        .unwrap_or_else(|| panic!("no {name} in {body}"))
        + marker.len();
    body[start..].split('"').next().unwrap().to_owned()
}

async fn notes(store: &Store) {
    server(
        store,
        "notes",
        "Notes",
        Some(DataClass::EditorContent),
        &["write", "read"],
    )
    .await;
}

/// Tightening is recorded at once, as the signed-in operator's through
/// the inbox; an operator who may not declare is offered no form and
/// records nothing; nor does a form from another site or without the
/// session's token, or a word that is no declaration.
#[tokio::test]
#[allow(
    clippy::too_many_lines,
    reason = "who may, from where, and what is recorded: one story"
)]
async fn a_tool_is_declared_from_the_page_by_an_operator_who_may() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    notes(&store).await;

    let (carol, carol_csrf) = signed_in(&inbox, &store, "carol").await;
    let page = send(
        &inbox,
        get(&format!("/s/{carol_csrf}/servers"), Some(&carol)),
    )
    .await;
    assert!(!page.body.contains("/servers/declare"), "{}", page.body);
    assert!(!page.body.contains("/servers/approval"), "{}", page.body);
    let refused = form(
        &inbox,
        (&carol, &carol_csrf),
        "declare",
        &[
            ("server", "notes"),
            ("tool", "notes.write"),
            ("setting", "block"),
        ],
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert!(refused.body.contains("may-declare"), "{}", refused.body);
    assert_eq!(
        write_row(&store).await.declaration,
        ToolDeclaration::Inherit
    );

    let (alice, csrf) = alice_may_declare(&inbox, &store).await;
    let page = send(&inbox, get(&format!("/s/{csrf}/servers"), Some(&alice))).await;
    assert!(
        page.body
            .contains(&format!("action=\"/s/{csrf}/servers/declare\"")),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains(&format!("action=\"/s/{csrf}/servers/approval\"")),
        "{}",
        page.body
    );

    // From another site, or without the session's token: nothing.
    let cross = send(
        &inbox,
        post(
            &format!("/s/{csrf}/servers/declare"),
            Some(&alice),
            Some("http://evil.example"),
            &[
                ("csrf", &csrf),
                ("server", "notes"),
                ("tool", "notes.write"),
                ("setting", "block"),
            ],
        ),
    )
    .await;
    assert_eq!(cross.status, StatusCode::FORBIDDEN, "{}", cross.body);
    let tokenless = send(
        &inbox,
        post(
            &format!("/s/{csrf}/servers/declare"),
            Some(&alice),
            Some(ORIGIN),
            &[
                ("csrf", "0"),
                ("server", "notes"),
                ("tool", "notes.write"),
                ("setting", "block"),
            ],
        ),
    )
    .await;
    assert_eq!(
        tokenless.status,
        StatusCode::FORBIDDEN,
        "{}",
        tokenless.body
    );
    let odd = form(
        &inbox,
        (&alice, &csrf),
        "declare",
        &[
            ("server", "notes"),
            ("tool", "notes.write"),
            ("setting", "OFF"),
        ],
    )
    .await;
    assert_eq!(odd.status, StatusCode::BAD_REQUEST, "{}", odd.body);
    assert!(odd.body.contains("no declaration"), "{}", odd.body);
    let none = form(
        &inbox,
        (&alice, &csrf),
        "declare",
        &[
            ("server", "notes"),
            ("tool", "notes.<b>x</b>"),
            ("setting", "on"),
        ],
    )
    .await;
    assert_eq!(none.status, StatusCode::CONFLICT, "{}", none.body);
    assert!(!none.body.contains("<b>x"), "{}", none.body);
    assert_eq!(
        write_row(&store).await.declaration,
        ToolDeclaration::Inherit
    );

    // Blocked, then approval required: at once, as alice's, through the inbox.
    for (word, declaration) in [
        ("block", ToolDeclaration::Blocked),
        ("on", ToolDeclaration::ApprovalRequired),
    ] {
        let done = form(
            &inbox,
            (&alice, &csrf),
            "declare",
            &[
                ("server", "notes"),
                ("tool", "notes.write"),
                ("setting", word),
            ],
        )
        .await;
        assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
        let row = write_row(&store).await;
        assert_eq!(row.declaration, declaration);
        let declared = row.declared.unwrap();
        assert_eq!(
            (declared.by.as_str(), declared.channel.as_str()),
            ("alice", "inbox")
        );
    }
}

/// "No approval" is shown first with the definition and its digest, and
/// only the form on that page declares it, for that definition; a
/// definition changed in between records nothing; a forged digest with
/// `confirm` records nothing.
#[tokio::test]
async fn letting_a_tool_run_unattended_is_shown_first_and_bound_to_what_was_shown() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    notes(&store).await;
    let (alice, csrf) = alice_may_declare(&inbox, &store).await;
    let off = [
        ("server", "notes"),
        ("tool", "notes.write"),
        ("setting", "off"),
    ];

    let first = form(&inbox, (&alice, &csrf), "declare", &off).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert!(
        first.body.contains("run without a person"),
        "{}",
        first.body
    );
    assert!(first.body.contains("input schema"), "{}", first.body);
    let digest = hidden(&first.body, "digest");
    assert_eq!(
        digest,
        store
            .acceptance("notes", &["notes.write".to_owned()])
            .await
            .unwrap()
            .digest
    );
    assert_eq!(
        write_row(&store).await.declaration,
        ToolDeclaration::Inherit
    );

    // A made-up digest with the confirmation: nothing.
    let mut forged = off.to_vec();
    forged.extend([("digest", "sha256:00"), ("confirm", "yes")]);
    let refused = form(&inbox, (&alice, &csrf), "declare", &forged).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.body);
    assert_eq!(
        write_row(&store).await.declaration,
        ToolDeclaration::Inherit
    );

    // The definition changes between the page and the confirmation: nothing.
    store
        .replace_catalogue(
            "notes",
            &[
                tool("notes", "write", "Appends a note, and mails it."),
                tool("notes", "read", "Reads a note."),
            ],
        )
        .await
        .unwrap();
    let mut confirmed = off.to_vec();
    confirmed.extend([("digest", digest.as_str()), ("confirm", "yes")]);
    let stale = form(&inbox, (&alice, &csrf), "declare", &confirmed).await;
    assert_eq!(stale.status, StatusCode::CONFLICT, "{}", stale.body);
    assert!(stale.body.contains("changed"), "{}", stale.body);
    assert_eq!(
        write_row(&store).await.declaration,
        ToolDeclaration::Inherit
    );

    // Shown again, and confirmed as shown: declared, pinned, as alice's.
    let again = form(&inbox, (&alice, &csrf), "declare", &off).await;
    assert!(again.body.contains("and mails it"), "{}", again.body);
    let digest = hidden(&again.body, "digest");
    let mut confirmed = off.to_vec();
    confirmed.extend([("digest", digest.as_str()), ("confirm", "yes")]);
    let done = form(&inbox, (&alice, &csrf), "declare", &confirmed).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    let row = write_row(&store).await;
    assert_eq!(row.declaration, ToolDeclaration::NoApproval);
    let declared = row.declared.clone().unwrap();
    assert_eq!(declared.by, "alice");
    assert_eq!(declared.digest.as_deref(), Some(digest.as_str()));
    assert!(
        row.gate(OperatorDeclaration::ApprovalRequired)
            .quarantine()
            .is_none()
    );
}

/// A server's approval: turning it on is at once; turning it off shows
/// every tool it covers first and acts only on their digest; a catalogue
/// changed in between records nothing. "Inherit" over a server whose
/// approval is off is shown first too: it lets the tool run unattended.
#[tokio::test]
async fn a_servers_approval_off_is_shown_first_and_on_is_at_once() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    notes(&store).await;
    let (alice, csrf) = alice_may_declare(&inbox, &store).await;
    let off = [("server", "notes"), ("setting", "off")];

    let first = form(&inbox, (&alice, &csrf), "approval", &off).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert!(
        first.body.contains("notes.write") && first.body.contains("notes.read"),
        "{}",
        first.body
    );
    let digest = hidden(&first.body, "digest");
    assert_eq!(
        store.server("notes").await.unwrap().approval,
        OperatorDeclaration::ApprovalRequired
    );
    store
        .replace_catalogue(
            "notes",
            &[tool("notes", "write", "Appends a note, and mails it.")],
        )
        .await
        .unwrap();
    let mut confirmed = off.to_vec();
    confirmed.extend([("digest", digest.as_str()), ("confirm", "yes")]);
    let stale = form(&inbox, (&alice, &csrf), "approval", &confirmed).await;
    assert_eq!(stale.status, StatusCode::CONFLICT, "{}", stale.body);
    assert_eq!(
        store.server("notes").await.unwrap().approval,
        OperatorDeclaration::ApprovalRequired
    );
    let again = form(&inbox, (&alice, &csrf), "approval", &off).await;
    let digest = hidden(&again.body, "digest");
    let mut confirmed = off.to_vec();
    confirmed.extend([("digest", digest.as_str()), ("confirm", "yes")]);
    let done = form(&inbox, (&alice, &csrf), "approval", &confirmed).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(
        store.server("notes").await.unwrap().approval,
        OperatorDeclaration::NoApproval
    );

    // Declared "on", then "inherit" over the server that is now off:
    // shown first, since it lets the tool run unattended.
    let on = form(
        &inbox,
        (&alice, &csrf),
        "declare",
        &[
            ("server", "notes"),
            ("tool", "notes.write"),
            ("setting", "on"),
        ],
    )
    .await;
    assert_eq!(on.status, StatusCode::SEE_OTHER, "{}", on.body);
    let inherit = form(
        &inbox,
        (&alice, &csrf),
        "declare",
        &[
            ("server", "notes"),
            ("tool", "notes.write"),
            ("setting", "inherit"),
        ],
    )
    .await;
    assert_eq!(inherit.status, StatusCode::OK, "{}", inherit.body);
    assert!(
        inherit.body.contains("run without a person"),
        "{}",
        inherit.body
    );
    assert_eq!(
        write_row(&store).await.declaration,
        ToolDeclaration::ApprovalRequired
    );

    // Back on: at once.
    let on = form(
        &inbox,
        (&alice, &csrf),
        "approval",
        &[("server", "notes"), ("setting", "on")],
    )
    .await;
    assert_eq!(on.status, StatusCode::SEE_OTHER, "{}", on.body);
    assert_eq!(
        store.server("notes").await.unwrap().approval,
        OperatorDeclaration::ApprovalRequired
    );
}
