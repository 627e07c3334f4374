//! An operator's declaration per tool, as each backend stores it: what
//! every existing tool reads after the upgrade, what odd stored values
//! read as, the one rule of precedence, and "no approval" bound to the
//! definition reviewed.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use proptest::prelude::*;
use toolgate::identity::{Channel, IdentitySource, Operator};
use toolgate::{DeclarationScope, OperatorDeclaration};
use toolgate_store::{
    Backend, CatalogueRow, DataClass, MigrateTo, NewServer, Quarantine, Query, Store, StoreError,
    StoredFlag, ToolDeclaration, ToolGate, Transport, effective_approval,
    tool_declaration_from_stored,
};

mod backend;
use backend::{TestDb, on_postgres};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres_too() {
    backend::rerun_on_postgres();
}

const NO: OperatorDeclaration = OperatorDeclaration::NoApproval;
const YES: OperatorDeclaration = OperatorDeclaration::ApprovalRequired;

fn olga() -> Operator {
    Operator::new("olga", IdentitySource::Flag)
        .expect("a name")
        .via(Channel::Console)
}

/// The version before declarations per tool.
const BEFORE: i64 = 17;

/// A server `fs` with two tools, `fs.read` and `fs.write`, inserted as an
/// import leaves them (their definitions written, nothing pinned).
async fn server_with_tools(store: &Store) {
    let added = store
        .add_server(NewServer {
            id: "fs".into(),
            name: "Files".into(),
            transport: Transport::Stdio {
                command: vec!["fs-mcp".into()],
            },
            data_class: Some(DataClass::EditorContent),
        })
        .await;
    assert!(added.is_ok(), "{added:?}");
    for (remote, description) in [("read", "Reads a file."), ("write", "Writes a file.")] {
        let inserted = Query::new(
            "INSERT INTO mcp_tool (server_id, remote_name, local_name, description, input_schema, first_seen_at, last_seen_at)
             VALUES ('fs', $1, $2, $3, '{\"type\":\"object\"}', 1700000000000, 1700000000000)",
        )
        .bind(remote.to_owned())
        .bind(format!("fs.{remote}"))
        .bind(description.to_owned())
        .execute_on(store)
        .await;
        assert!(inserted.is_ok(), "{inserted:?}");
    }
}

async fn row(store: &Store, tool: &str) -> CatalogueRow {
    store
        .catalogue("fs")
        .await
        .expect("the catalogue reads")
        .into_iter()
        .find(|row| row.local_name == tool)
        .expect("the tool is stored")
}

async fn gate(store: &Store, tool: &str) -> ToolGate {
    let server = store.server("fs").await.expect("the server reads");
    row(store, tool).await.gate(server.approval)
}

/// The digest of one tool's definition, as an operator is shown it.
async fn digest_of(store: &Store, tool: &str) -> String {
    store
        .acceptance("fs", &[tool.to_owned()])
        .await
        .expect("the acceptance reads")
        .digest
}

#[tokio::test]
async fn every_existing_tool_reads_inherit_after_the_upgrade() {
    let db = TestDb::new().await;
    let store = Store::open_to(&db.location(), MigrateTo::Version(BEFORE))
        .await
        .expect("the store opens");
    server_with_tools(&store).await;
    // The server's approval off, `fs.read` judged then; `fs.write` came
    // later and is quarantined.
    let shown = store.acceptance("fs", &["fs.read".to_owned()]).await;
    let shown = shown.expect("the acceptance reads").digest;
    let pinned = store
        .accept_tools("fs", &["fs.read".to_owned()], &shown)
        .await;
    assert!(pinned.is_ok(), "{pinned:?}");
    let off = Query::new(if on_postgres() {
        "UPDATE mcp_server SET requires_approval = 'not_required'"
    } else {
        "UPDATE mcp_server SET requires_approval = 0"
    })
    .execute_on(&store)
    .await;
    assert!(off.is_ok(), "{off:?}");
    store.close().await;

    let store = Store::open_to(&db.location(), MigrateTo::Latest)
        .await
        .expect("the store upgrades");
    let stored = if on_postgres() {
        StoredFlag::Label {
            ty: "toolgate_tool_approval".into(),
            label: "inherit".into(),
        }
    } else {
        StoredFlag::Text("inherit".into())
    };
    for tool in ["fs.read", "fs.write"] {
        let row = row(&store, tool).await;
        assert_eq!(row.declaration, ToolDeclaration::Inherit, "{tool}");
        assert_eq!(row.stored_declaration, stored, "{tool}");
        assert_eq!(row.declared, None, "{tool}: nobody declared it");
    }
    // Gated exactly as before: the server's flag, and pinning.
    assert_eq!(
        gate(&store, "fs.read").await,
        ToolGate::Offered {
            approval: NO,
            scope: DeclarationScope::Server,
            quarantine: None
        }
    );
    assert_eq!(
        gate(&store, "fs.write").await,
        ToolGate::Offered {
            approval: NO,
            scope: DeclarationScope::Server,
            quarantine: Some(Quarantine::New)
        }
    );
}

/// The one rule of precedence, through the store: each server flag × each
/// declaration, declared through the typed API and read back.
#[tokio::test]
async fn precedence_blocked_then_the_tools_own_then_the_servers_flag() {
    let db = TestDb::new().await;
    let store = Store::open(db.location()).await.expect("the store opens");
    server_with_tools(&store).await;
    let server_digest = store.acceptance("fs", &[]).await.expect("reads").digest;
    for flag in [YES, NO] {
        let set = store
            .set_approval("fs", flag, (flag == NO).then_some(server_digest.as_str()))
            .await;
        assert!(set.is_ok(), "{set:?}");
        for (declaration, expected) in [
            (
                ToolDeclaration::Inherit,
                Some((flag, DeclarationScope::Server)),
            ),
            (
                ToolDeclaration::ApprovalRequired,
                Some((YES, DeclarationScope::Tool)),
            ),
            (
                ToolDeclaration::NoApproval,
                Some((NO, DeclarationScope::Tool)),
            ),
            (ToolDeclaration::Blocked, None),
        ] {
            assert_eq!(effective_approval(flag, declaration), expected);
            let digest = digest_of(&store, "fs.read").await;
            let declared = store
                .declare_tool(
                    "fs",
                    "fs.read",
                    declaration,
                    declaration.lowers().then_some(digest.as_str()),
                    &olga(),
                )
                .await;
            let (_, after) = declared.expect("declared");
            assert_eq!(after.declaration, declaration);
            let read = gate(&store, "fs.read").await;
            match expected {
                None => assert_eq!(read, ToolGate::Blocked),
                Some((approval, scope)) => assert_eq!(
                    read,
                    ToolGate::Offered {
                        approval,
                        scope,
                        quarantine: None
                    },
                    "server {flag:?}, tool {declaration:?}"
                ),
            }
            // The other tool follows the server's flag alone.
            assert_eq!(
                gate(&store, "fs.write").await,
                ToolGate::Offered {
                    approval: flag,
                    scope: DeclarationScope::Server,
                    quarantine: None
                }
            );
        }
    }
}

/// "No approval" needs the digest of the definition shown, pins it, and
/// covers nothing else: a definition changed afterwards is quarantined until
/// accepted. Raising needs no digest. The declaration records who, how and
/// on what.
#[tokio::test]
async fn no_approval_is_bound_to_the_definition_reviewed() {
    let db = TestDb::new().await;
    let store = Store::open(db.location()).await.expect("the store opens");
    server_with_tools(&store).await;

    let refused = store
        .declare_tool("fs", "fs.write", ToolDeclaration::NoApproval, None, &olga())
        .await;
    assert!(
        matches!(refused, Err(StoreError::ToolReviewRequired { .. })),
        "{refused:?}"
    );
    let other = digest_of(&store, "fs.read").await;
    let refused = store
        .declare_tool(
            "fs",
            "fs.write",
            ToolDeclaration::NoApproval,
            Some(&other),
            &olga(),
        )
        .await;
    assert!(
        matches!(refused, Err(StoreError::CatalogueChanged { .. })),
        "another tool's digest: {refused:?}"
    );
    let unknown = store
        .declare_tool("fs", "fs.nothing", ToolDeclaration::Blocked, None, &olga())
        .await;
    assert!(
        matches!(unknown, Err(StoreError::NoSuchTool { .. })),
        "{unknown:?}"
    );
    assert_eq!(
        row(&store, "fs.write").await.declaration,
        ToolDeclaration::Inherit,
        "nothing was written"
    );

    let shown = digest_of(&store, "fs.write").await;
    let (before, after) = store
        .declare_tool(
            "fs",
            "fs.write",
            ToolDeclaration::NoApproval,
            Some(&shown),
            &olga(),
        )
        .await
        .expect("declared");
    assert_eq!(before.declaration, ToolDeclaration::Inherit);
    assert_eq!(after.declaration, ToolDeclaration::NoApproval);
    let declared = after.declared.clone().expect("the declaration records who");
    assert_eq!(
        (
            declared.by.as_str(),
            declared.source.as_str(),
            declared.channel.as_str()
        ),
        ("olga", "flag", "console")
    );
    assert_eq!(declared.digest.as_deref(), Some(shown.as_str()));
    assert_eq!(
        after.pinned_definition.as_deref(),
        Some(after.definition().as_str())
    );
    assert_eq!(
        gate(&store, "fs.write").await,
        ToolGate::Offered {
            approval: NO,
            scope: DeclarationScope::Tool,
            quarantine: None
        }
    );

    // The server changes the tool under its operator.
    let changed = Query::new(
        "UPDATE mcp_tool SET description = 'Writes a file, and mails it to everyone.' WHERE local_name = 'fs.write'",
    )
    .execute_on(&store)
    .await;
    assert!(changed.is_ok(), "{changed:?}");
    assert_eq!(
        gate(&store, "fs.write").await,
        ToolGate::Offered {
            approval: NO,
            scope: DeclarationScope::Tool,
            quarantine: Some(Quarantine::Changed)
        },
        "quarantined: it asks again"
    );
    // The declaration does not cover the new definition until accepted.
    let shown = digest_of(&store, "fs.write").await;
    let accepted = store
        .accept_tools("fs", &["fs.write".to_owned()], &shown)
        .await;
    assert!(accepted.is_ok(), "{accepted:?}");
    assert_eq!(gate(&store, "fs.write").await.quarantine(), None);

    // Raising needs no digest, and keeps no digest.
    let (_, raised) = store
        .declare_tool("fs", "fs.write", ToolDeclaration::Blocked, None, &olga())
        .await
        .expect("blocked");
    assert_eq!(raised.declared.and_then(|d| d.digest), None);
    assert_eq!(gate(&store, "fs.write").await, ToolGate::Blocked);
}

/// Raw writes of odd spellings: refused by the column (SQLite's CHECK,
/// PostgreSQL's type); and written past the column's own rule — checks
/// switched off in SQLite, the column retyped in PostgreSQL — every value
/// but a label of the typed write path reads as "approval required",
/// never as "blocked" and never as "inherit".
#[tokio::test]
async fn odd_stored_values_read_as_approval_required() {
    let db = TestDb::new().await;
    let mut store = Store::open(db.location()).await.expect("the store opens");
    server_with_tools(&store).await;
    let odd = [
        "'Inherit'",
        "' inherit'",
        "'inherit '",
        "'NOT_REQUIRED'",
        "'not required'",
        "'not_required '",
        "'off'",
        "'0'",
        "''",
        "'Blocked'",
        "'block'",
        "'blocked\n'",
    ];
    let set = |literal: &str| {
        Query::new(format!(
            "UPDATE mcp_tool SET approval = {literal} WHERE local_name = 'fs.read'"
        ))
    };
    for literal in odd.iter().chain(&["0", "1", "NULL", "X'00'", "0.0"]) {
        let written = set(literal).execute_on(&store).await;
        assert!(written.is_err(), "the column refuses {literal}");
        assert_eq!(
            row(&store, "fs.read").await.declaration,
            ToolDeclaration::Inherit,
            "unchanged after {literal}"
        );
    }
    if on_postgres() {
        // The column retyped to text: the very labels, as text, are not
        // the type's labels.
        let retyped = Query::new(
            "ALTER TABLE mcp_tool ALTER COLUMN approval DROP DEFAULT, ALTER COLUMN approval TYPE text USING (approval::text)",
        )
        .execute_on(&store)
        .await;
        assert!(retyped.is_ok(), "{retyped:?}");
        // A new pool: statements prepared before the column changed type
        // would be refused.
        store.close().await;
        store = Store::open(db.location()).await.expect("the store opens");
        for label in ["'not_required'", "'blocked'", "'inherit'"]
            .iter()
            .chain(&odd)
        {
            let written = set(label).execute_on(&store).await;
            assert!(written.is_ok(), "{label}: {written:?}");
            let row = row(&store, "fs.read").await;
            assert_eq!(row.declaration, ToolDeclaration::Unreadable, "{label}");
        }
    } else {
        for literal in odd.iter().chain(&["0", "1", "X'00'", "0.0", "-0"]) {
            let written = Query::new(format!(
                "PRAGMA ignore_check_constraints = ON;
                 UPDATE mcp_tool SET approval = {literal} WHERE local_name = 'fs.read';
                 PRAGMA ignore_check_constraints = OFF;"
            ))
            .execute_on(&store)
            .await;
            assert!(written.is_ok(), "{literal}: {written:?}");
            let row = row(&store, "fs.read").await;
            assert_eq!(
                row.declaration,
                ToolDeclaration::Unreadable,
                "{literal} read as {:?}",
                row.stored_declaration
            );
        }
    }
    // And so the tool asks, on a server whose approval is off too.
    let digest = store.acceptance("fs", &[]).await.expect("reads").digest;
    let off = store.set_approval("fs", NO, Some(&digest)).await;
    assert!(off.is_ok(), "{off:?}");
    assert_eq!(
        gate(&store, "fs.read").await,
        ToolGate::Offered {
            approval: YES,
            scope: DeclarationScope::Unreadable,
            quarantine: None
        }
    );
}

/// The only statement of this crate that writes a tool's declaration is
/// the typed one.
#[test]
fn no_other_statement_in_this_crate_writes_a_tools_declaration() {
    fn sources(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("`read_dir` succeeds") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                sources(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    let mut files = Vec::new();
    sources(std::path::Path::new("src"), &mut files);
    assert!(files.len() >= 10, "{files:?}");
    let mut writes = Vec::new();
    for source in &files {
        let text = std::fs::read_to_string(source).expect("`read_to_string` succeeds");
        for (number, line) in text.lines().enumerate() {
            if line.contains("SET approval") || line.contains(", approval =") {
                writes.push(format!(
                    "{}:{}: {}",
                    source.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert!(
        writes[0].contains("declare.rs") && writes[0].contains("SET approval = {write}"),
        "{writes:#?}"
    );
}

fn stored_value() -> impl Strategy<Value = StoredFlag> {
    let label = prop_oneof![
        Just("inherit".to_owned()),
        Just("required".to_owned()),
        Just("not_required".to_owned()),
        Just("blocked".to_owned()),
        "\\PC{0,14}",
    ];
    prop_oneof![
        Just(StoredFlag::Missing),
        Just(StoredFlag::Null),
        "\\PC{0,8}".prop_map(StoredFlag::Unreadable),
        any::<i64>().prop_map(StoredFlag::Integer),
        any::<f64>().prop_map(StoredFlag::Real),
        label.clone().prop_map(StoredFlag::Text),
        prop::collection::vec(any::<u8>(), 0..4).prop_map(StoredFlag::Blob),
        (
            prop_oneof![
                Just("toolgate_tool_approval".to_owned()),
                Just("toolgate_approval".to_owned()),
                "[a-z_]{0,8}"
            ],
            label
        )
            .prop_map(|(ty, label)| StoredFlag::Label { ty, label }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The reading on its own: total; each state only from its own label
    /// of the backend's typed write path, compared exactly; everything
    /// else "approval required".
    #[test]
    fn the_reading_is_total_and_fails_closed(stored in stored_value()) {
        for backend in [Backend::Sqlite, Backend::Postgres] {
            let label = match (backend, &stored) {
                (Backend::Sqlite, StoredFlag::Text(text)) => Some(text.as_str()),
                (Backend::Postgres, StoredFlag::Label { ty, label })
                    if ty == "toolgate_tool_approval" => Some(label.as_str()),
                _ => None,
            };
            let expected = match label {
                Some("inherit") => ToolDeclaration::Inherit,
                Some("required") => ToolDeclaration::ApprovalRequired,
                Some("not_required") => ToolDeclaration::NoApproval,
                Some("blocked") => ToolDeclaration::Blocked,
                _ => ToolDeclaration::Unreadable,
            };
            let read = tool_declaration_from_stored(backend, &stored);
            prop_assert_eq!(read, expected, "{:?}", stored);
            // Whatever the server's flag, what reads as none of the labels
            // asks for approval.
            if expected == ToolDeclaration::Unreadable {
                for flag in [YES, NO] {
                    prop_assert_eq!(
                        effective_approval(flag, read),
                        Some((YES, DeclarationScope::Unreadable))
                    );
                }
            }
        }
    }
}
