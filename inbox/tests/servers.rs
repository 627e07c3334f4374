//! The inbox's servers and tools page against a real store, on SQLite and
//! again on PostgreSQL: each tool's gate in the console's words for every
//! case of precedence (the server's flag on or off, the tool's own
//! declaration inherit, on, off or block, a stored value that does not
//! read, a quarantine and what changed), an inert server, everything a
//! server wrote shown as inert text, and no page without a session.
//! Accepting a quarantined tool from the page: `servers_accept.rs`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use axum::http::{StatusCode, header};
use serde_json::json;
use toolgate::OperatorDeclaration;
use toolgate_store::{
    DataClass, ImportedTool, NewServer, Query, Store, ToolDeclaration, Transport,
};

#[path = "../../store/tests/backend/mod.rs"]
mod backend;
use backend::{TestDb, on_postgres};

mod common;
use common::catalogue::{declare, server, tool};
use common::{ORIGIN, get, inbox, send, signed_in};
use toolgate_inbox::Inbox;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres_too() {
    backend::rerun_on_postgres();
}

/// The row of the page's tool table that lists `local`.
fn row_of<'a>(body: &'a str, local: &str) -> &'a str {
    let start = body
        .find(&format!("<tr class=\"tool\"><td><code><bdi>{local}</bdi>"))
        .unwrap_or_else(|| panic!("no row for {local} in {body}"));
    let end = body[start..].find("</tr>").unwrap();
    &body[start..start + end]
}

/// `text` as the page writes it: maud escapes `"`, `&`, `<`, `>`.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[tokio::test]
async fn without_a_session_the_page_sends_you_to_sign_in() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    server(
        &store,
        "notes",
        "Notes",
        Some(DataClass::EditorContent),
        &["write"],
    )
    .await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    for (path, cookie) in [
        (format!("/s/{}/servers", "0".repeat(64)), None),
        (
            format!("/s/{}/servers", "0".repeat(64)),
            Some("0".repeat(64)),
        ),
        // The session's cookie without its key, and its key without the
        // cookie.
        (
            format!("/s/{}/servers", "0".repeat(64)),
            Some(cookie.clone()),
        ),
        (format!("/s/{csrf}/servers"), None),
    ] {
        let answer = send(&inbox, get(&path, cookie.as_deref())).await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{path}");
        assert_eq!(answer.headers[header::LOCATION], "/signed-out");
        assert!(!answer.body.contains("notes.write"), "{}", answer.body);
    }
    let page = send(&inbox, get(&format!("/s/{csrf}/servers"), Some(&cookie))).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("notes.write"), "{}", page.body);
    // Linked from the header of every signed-in page.
    let list = send(&inbox, get(&format!("/s/{csrf}/"), Some(&cookie))).await;
    assert!(
        list.body.contains(&format!("href=\"/s/{csrf}/servers\"")),
        "{}",
        list.body
    );
}

/// Servers `shut` (flag on) and `open` (flag off), each with tools
/// `inherit`, `on`, `off` and `block` so declared by bob; on `open`, since
/// its flag went off, `inherit` changed and `new` arrived.
async fn every_case(store: &Store) {
    let all = ["inherit", "on", "off", "block"];
    server(
        store,
        "shut",
        "Flag on",
        Some(DataClass::EditorContent),
        &all,
    )
    .await;
    server(
        store,
        "open",
        "Flag off",
        Some(DataClass::EditorContent),
        &all,
    )
    .await;
    for id in ["shut", "open"] {
        declare(
            store,
            id,
            &format!("{id}.on"),
            ToolDeclaration::ApprovalRequired,
        )
        .await;
        declare(store, id, &format!("{id}.off"), ToolDeclaration::NoApproval).await;
        declare(store, id, &format!("{id}.block"), ToolDeclaration::Blocked).await;
    }
    let digest = store.acceptance("open", &[]).await.unwrap().digest;
    store
        .set_approval("open", OperatorDeclaration::NoApproval, Some(&digest))
        .await
        .unwrap();
    // After the flag went off: one tool new, one changed since accepted.
    let mut tools: Vec<ImportedTool> = all
        .iter()
        .map(|r| tool("open", r, &format!("Does {r}.")))
        .collect();
    tools[0].description = "Does inherit, and deletes everything.".into();
    tools.push(tool("open", "new", "Arrived later."));
    store.replace_catalogue("open", &tools).await.unwrap();
}

/// Every case of precedence reads as `toolgate server show` says it:
/// blocked beats everything, then the tool's own on or off, then the
/// server's flag; a quarantine under "off".
#[tokio::test]
async fn each_gate_reads_in_the_consoles_words() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    every_case(&store).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "alice").await;
    let page = send(&inbox, get(&format!("/s/{csrf}/servers"), Some(&cookie))).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let body = &page.body;

    let cases = [
        ("shut.inherit", "approval required (the server's flag)"),
        ("shut.on", "approval required (the tool's declaration)"),
        (
            "shut.off",
            "runs unattended (the tool's declaration is off)",
        ),
        (
            "shut.block",
            "blocked: never offered (the tool's declaration)",
        ),
        (
            "open.inherit",
            "approval required (quarantined: its definition changed since an operator accepted it; the server's flag is off for the definition accepted)",
        ),
        ("open.on", "approval required (the tool's declaration)"),
        (
            "open.off",
            "runs unattended (the tool's declaration is off)",
        ),
        (
            "open.block",
            "blocked: never offered (the tool's declaration)",
        ),
        (
            "open.new",
            "approval required (quarantined: new since an operator judged the server's tools; the server's flag is off for the definition accepted)",
        ),
    ];
    for (local, words) in cases {
        let row = row_of(body, local);
        assert!(row.contains(&escaped(words)), "{local}: {row}");
    }
    // The words are the store's, as the console gives them.
    for (id, flag) in [
        ("shut", OperatorDeclaration::ApprovalRequired),
        ("open", OperatorDeclaration::NoApproval),
    ] {
        for r in store.catalogue(id).await.unwrap() {
            let row = row_of(body, &r.local_name);
            assert!(row.contains(&escaped(&r.gate(flag).words())), "{row}");
        }
    }
    // Each tool's own declaration, and who made it.
    let on = row_of(body, "shut.on");
    assert!(
        on.contains("<code>on</code>")
            && on.contains("by <bdi>bob</bdi> (<bdi>flag</bdi>) through <bdi>console</bdi>"),
        "{on}"
    );
    assert!(row_of(body, "shut.inherit").contains("<code>inherit</code>"));
    assert!(row_of(body, "open.block").contains("<code>block</code>"));
    // The servers' declarations, as the flag reads.
    assert!(body.contains("required <small>(stored: <bdi>"), "{body}");
    assert!(body.contains("off <small>(stored: <bdi>"), "{body}");

    quarantines_show_their_change(&store, body).await;
    // Declaring is not offered to an operator who may not declare: the
    // page says who may, and how it is bound.
    assert!(body.contains("--may-declare"), "{body}");
    assert!(!body.contains("/servers/declare"), "{body}");
    assert!(!body.contains("/servers/approval"), "{body}");
    assert!(body.contains("deliberate act"), "{body}");
    assert!(
        !body.contains("/servers/accept"),
        "no form for an operator who may not declare: {body}"
    );
}

/// The quarantined tools of server `open` on the page `body`: what
/// changed, old and new, and the digest the console's accept takes — the
/// store's.
async fn quarantines_show_their_change(store: &Store, body: &str) {
    assert!(
        body.contains("Quarantined: <code><bdi>open.inherit</bdi>"),
        "{body}"
    );
    assert!(
        body.contains("<td class=\"old\"><pre class=\"text\"><bdi>Does inherit.</bdi>"),
        "{body}"
    );
    assert!(
        body.contains(
            "<td class=\"new\"><pre class=\"text\"><bdi>Does inherit, and deletes everything.</bdi>"
        ),
        "{body}"
    );
    assert!(
        body.contains("Quarantined: <code><bdi>open.new</bdi>"),
        "{body}"
    );
    assert!(
        body.contains("No definition of it was accepted before"),
        "{body}"
    );
    for local in ["open.inherit", "open.new"] {
        let digest = store
            .acceptance("open", &[local.to_owned()])
            .await
            .unwrap()
            .digest;
        assert!(
            body.contains(&format!(
                "toolgate server accept <bdi>open</bdi> <bdi>{local}</bdi> --digest {digest}"
            )),
            "{local}: {body}"
        );
    }
    assert!(!body.contains("Quarantined: <code><bdi>open.off"), "{body}");
}

/// A tool's stored declaration that is none of the typed labels reads as
/// approval required — on a server whose flag is off, too — and the page
/// says what is stored.
#[tokio::test]
async fn a_declaration_that_does_not_read_asks() {
    let db = TestDb::new().await;
    let (mut store, _) = inbox(&db).await;
    server(
        &store,
        "open",
        "Flag off",
        Some(DataClass::EditorContent),
        &["odd"],
    )
    .await;
    let digest = store.acceptance("open", &[]).await.unwrap().digest;
    store
        .set_approval("open", OperatorDeclaration::NoApproval, Some(&digest))
        .await
        .unwrap();
    if on_postgres() {
        // The column retyped to text: the very labels, as text, are not
        // the type's labels.
        Query::new(
            "ALTER TABLE mcp_tool ALTER COLUMN approval DROP DEFAULT, ALTER COLUMN approval TYPE text USING (approval::text)",
        )
        .execute_on(&store)
        .await
        .unwrap();
        // A new pool: statements prepared before the column changed type
        // would be refused.
        store.close().await;
        store = Store::open(db.location()).await.unwrap();
        Query::new("UPDATE mcp_tool SET approval = 'Blocked' WHERE local_name = 'open.odd'")
            .execute_on(&store)
            .await
            .unwrap();
    } else {
        Query::new(
            "PRAGMA ignore_check_constraints = ON;
             UPDATE mcp_tool SET approval = 'Blocked' WHERE local_name = 'open.odd';
             PRAGMA ignore_check_constraints = OFF;",
        )
        .execute_on(&store)
        .await
        .unwrap();
    }
    let inbox = Inbox::new(store.clone(), &format!("{ORIGIN}/"));
    let (cookie, csrf) = signed_in(&inbox, &store, "alice").await;
    let page = send(&inbox, get(&format!("/s/{csrf}/servers"), Some(&cookie))).await;
    let odd = row_of(&page.body, "open.odd");
    assert!(
        odd.contains(&escaped(
            "approval required (the tool's stored declaration, which is unreadable)"
        )),
        "{odd}"
    );
    assert!(odd.contains("<code>unreadable</code>"), "{odd}");
    assert!(odd.contains("text &quot;Blocked&quot;"), "{odd}");
    assert!(odd.contains("read as approval required"), "{odd}");
}

#[tokio::test]
async fn an_inert_server_says_why() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    server(&store, "drafts", "Drafts", None, &["read"]).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let page = send(&inbox, get(&format!("/s/{csrf}/servers"), Some(&cookie))).await;
    assert!(page.body.contains("undeclared: inert"), "{}", page.body);
    assert!(
        page.body
            .contains("inert: <bdi>no data class declared</bdi>"),
        "{}",
        page.body
    );
    store.set_enabled("drafts", false).await.unwrap();
    let page = send(&inbox, get(&format!("/s/{csrf}/servers"), Some(&cookie))).await;
    assert!(page.body.contains("disabled, "), "{}", page.body);
    assert!(
        page.body
            .contains("inert: <bdi>disabled by an operator</bdi>"),
        "{}",
        page.body
    );
}

/// A server's name, a tool's names, description and schema are shown as
/// text: markup escaped once, hidden and direction-changing characters as
/// escapes, each isolated.
#[tokio::test]
async fn what_a_server_wrote_is_inert_text() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>\u{202E}gnp.exe\u{200B}";
    store
        .add_server(NewServer {
            id: "evil".into(),
            name: hostile.into(),
            transport: Transport::Stdio {
                command: vec!["evil-mcp".into()],
            },
            data_class: Some(DataClass::EditorContent),
        })
        .await
        .unwrap();
    let mut bad = tool("evil", "<b>bold</b>\u{202E}", hostile);
    bad.input_schema = json!({"type": "object", "properties": {"</pre><script>x()</script>": {"description": hostile}}});
    store.replace_catalogue("evil", &[bad]).await.unwrap();
    let digest = store.acceptance("evil", &[]).await.unwrap().digest;
    store
        .set_approval("evil", OperatorDeclaration::NoApproval, Some(&digest))
        .await
        .unwrap();
    let mut changed = tool("evil", "<b>bold</b>\u{202E}", &format!("{hostile} again"));
    changed.input_schema =
        json!({"type": "object", "properties": {"</pre><script>y()</script>": {}}});
    store.replace_catalogue("evil", &[changed]).await.unwrap();
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let page = send(&inbox, get(&format!("/s/{csrf}/servers"), Some(&cookie))).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let body = &page.body;
    for raw in [
        "<script>",
        "<img",
        "<b>",
        "\u{202E}",
        "\u{200B}",
        "</pre><script>",
    ] {
        assert!(!body.contains(raw), "{raw:?} reached the page: {body}");
    }
    assert!(body.contains("&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;\\u{202e}gnp.exe\\u{200b}"), "{body}");
    // Escaped once: no escape of an escape.
    assert!(!body.contains("&amp;lt;"), "{body}");
    assert!(body.contains("&lt;b&gt;bold&lt;/b&gt;"), "{body}");
    // The schema, old and new, as text too.
    assert!(
        body.contains("&lt;/pre&gt;&lt;script&gt;x()&lt;/script&gt;"),
        "{body}"
    );
    assert!(
        body.contains("&lt;/pre&gt;&lt;script&gt;y()&lt;/script&gt;"),
        "{body}"
    );
    assert_eq!(
        body.matches("<script").count(),
        1,
        "only the inbox's own file: {body}"
    );
    assert!(
        body.contains("<script src=\"/inbox.js\" defer></script>"),
        "{body}"
    );
}
