//! Server records and catalogues: declarations, the data-class ladder's inert
//! servers, and imports that add, change, orphan and restore tools.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use serde_json::json;
use toolgate::OperatorDeclaration;
use toolgate_store::{DataClass, ImportedTool, NewServer, Query, Store, StoreError, Transport};

mod backend;
use backend::TestDb;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    backend::rerun_on_postgres();
}

async fn open(db: &TestDb) -> Store {
    match Store::open(db.location()).await {
        Ok(store) => store,
        Err(error) => panic!("{error}"),
    }
}

fn server(id: &str, class: Option<DataClass>) -> NewServer {
    NewServer {
        id: id.into(),
        name: format!("The {id} server"),
        transport: Transport::Http {
            url: format!("http://127.0.0.1:9/{id}"),
        },
        data_class: class,
    }
}

fn tool(remote: &str, description: &str) -> ImportedTool {
    ImportedTool {
        remote_name: remote.into(),
        local_name: format!("gh.{remote}"),
        description: description.into(),
        input_schema: json!({"type": "object"}),
        annotations: Some(json!({"title": remote, "readOnlyHint": true})),
    }
}

#[tokio::test]
async fn a_new_server_requires_approval_and_round_trips() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    let added = store
        .add_server(NewServer {
            transport: Transport::Stdio {
                command: vec!["gh-mcp".into(), "--read-only".into()],
            },
            ..server("gh", Some(DataClass::SourceCode))
        })
        .await;
    let Ok(added) = added else {
        panic!("{added:?}");
    };
    assert_eq!(added.approval, OperatorDeclaration::ApprovalRequired);
    assert_eq!(added.data_class, Some(DataClass::SourceCode));
    assert_eq!(
        added.transport,
        Transport::Stdio {
            command: vec!["gh-mcp".into(), "--read-only".into()]
        }
    );
    assert!(added.enabled && added.is_usable());
    assert_eq!(added.import.status, "never");
    assert!(matches!(
        store.add_server(server("gh", None)).await,
        Err(StoreError::ServerExists(id)) if id == "gh"
    ));
    for bad in [
        "",
        "GH",
        "9lives",
        "git.hub",
        "a b",
        "x".repeat(25).as_str(),
    ] {
        assert!(
            matches!(
                store.add_server(server(bad, None)).await,
                Err(StoreError::InvalidServerId { .. })
            ),
            "{bad:?}"
        );
    }
}

#[tokio::test]
async fn undeclared_unknown_or_disabled_servers_are_inert() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    for (id, class) in [
        ("docs", Some(DataClass::PublicContent)),
        ("undeclared", None),
        ("odd", Some(DataClass::SystemDiagnostics)),
        ("off", Some(DataClass::EditorContent)),
    ] {
        store
            .add_server(server(id, class))
            .await
            .expect("`add_server` succeeds");
    }
    // A class this build does not know, written by hand or a future build.
    let odd = Query::new("UPDATE mcp_server SET data_class = 'top_secret' WHERE id = 'odd'")
        .execute_on(&store)
        .await;
    odd.expect("`odd` is Ok");
    store
        .set_enabled("off", false)
        .await
        .expect("`set_enabled` succeeds");
    let usable: Vec<String> = store
        .usable_servers()
        .await
        .expect("`usable_servers` succeeds")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(usable, ["docs"]);
    let reasons: Vec<(String, Option<String>)> = store
        .servers()
        .await
        .expect("`servers` succeeds")
        .into_iter()
        .map(|s| (s.id.clone(), s.inert_reason()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("docs".into(), None),
            ("odd".into(), Some("unknown data class `top_secret`".into())),
            ("off".into(), Some("disabled by an operator".into())),
            ("undeclared".into(), Some("no data class declared".into())),
        ]
    );
    assert!(
        store
            .set_data_class("undeclared", DataClass::SecretAdjacent)
            .await
            .is_ok()
    );
    assert_eq!(store.usable_servers().await.map(|s| s.len()).ok(), Some(2));
}

#[tokio::test]
async fn imports_add_change_orphan_and_restore_tools_with_annotations_verbatim() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    assert!(
        store
            .add_server(server("gh", Some(DataClass::SourceCode)))
            .await
            .is_ok()
    );
    let first = store
        .replace_catalogue(
            "gh",
            &[tool("search", "Searches"), tool("create_issue", "Creates")],
        )
        .await;
    let Ok(first) = first else {
        panic!("{first:?}");
    };
    assert_eq!(first.added, ["gh.search", "gh.create_issue"]);
    let rows = store.catalogue("gh").await.expect("`catalogue` succeeds");
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[1].annotations.as_deref(),
        Some(r#"{"readOnlyHint":true,"title":"search"}"#)
    );

    // The server drops a tool and changes another.
    let second = store
        .replace_catalogue("gh", &[tool("search", "Searches code")])
        .await;
    let Ok(second) = second else {
        panic!("{second:?}");
    };
    assert_eq!(second.changed, ["gh.search"]);
    assert_eq!(second.orphaned, ["gh.create_issue"]);
    let rows = store.catalogue("gh").await.expect("`catalogue` succeeds");
    assert_eq!(rows.len(), 2, "the orphan is kept");
    assert!(
        rows.iter()
            .any(|r| r.remote_name == "create_issue" && r.orphaned)
    );
    assert_eq!(store.live_catalogue().await.map(|r| r.len()).ok(), Some(1));

    // It comes back.
    let third = store
        .replace_catalogue(
            "gh",
            &[
                tool("search", "Searches code"),
                tool("create_issue", "Creates"),
            ],
        )
        .await;
    let Ok(third) = third else {
        panic!("{third:?}");
    };
    assert_eq!(third.restored, ["gh.create_issue"]);
    assert_eq!(third.unchanged, 1);
    assert!(matches!(
        store.replace_catalogue("nobody", &[]).await,
        Err(StoreError::NoSuchServer(_))
    ));
    store
        .record_import("gh", None)
        .await
        .expect("`record_import` succeeds");
    let gh = store.server("gh").await.ok();
    assert_eq!(gh.as_ref().map(|s| s.import.status.as_str()), Some("ok"));
    store
        .record_import("gh", Some("timed out"))
        .await
        .expect("`record_import` succeeds");
    let gh = store.server("gh").await.ok();
    assert_eq!(gh.and_then(|s| s.import.error), Some("timed out".into()));
    let removed = store.remove_server("gh").await;
    removed.expect("`removed` is Ok");
    assert!(
        store
            .catalogue("gh")
            .await
            .expect("`catalogue` succeeds")
            .is_empty(),
        "removed with its server"
    );
}

/// A catalogue of thousands of tools goes in (many rows per statement) and
/// is re-imported with a part gone, a part changed and a name listed twice:
/// every tool is accounted for once, the last listing of a name wins.
#[tokio::test]
async fn a_large_catalogue_is_imported_and_reimported_with_every_tool_accounted_for() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    store
        .add_server(server("gh", Some(DataClass::SourceCode)))
        .await
        .unwrap();
    let first: Vec<_> = (0..2_345)
        .map(|i| tool(&format!("t{i:05}"), "first"))
        .collect();
    let change = store.replace_catalogue("gh", &first).await.unwrap();
    assert_eq!(change.added.len(), 2_345);
    let mut second: Vec<_> = (0..2_000)
        .map(|i| {
            tool(
                &format!("t{i:05}"),
                if i < 100 { "second" } else { "first" },
            )
        })
        .collect();
    second.push(tool("t00150", "listed twice: the last wins"));
    let change = store.replace_catalogue("gh", &second).await.unwrap();
    assert_eq!(change.added.len(), 0);
    assert_eq!(change.changed.len(), 101, "100 changed, and t00150");
    assert_eq!(change.unchanged, 1_899);
    assert_eq!(change.orphaned.len(), 345);
    let rows = store.catalogue("gh").await.unwrap();
    assert_eq!(rows.len(), 2_345);
    assert_eq!(rows.iter().filter(|r| r.orphaned).count(), 345);
    let twice = rows.iter().find(|r| r.remote_name == "t00150").unwrap();
    assert_eq!(twice.description, "listed twice: the last wins");
}
