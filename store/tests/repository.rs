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

/// Rows of the staging tables, of every import.
async fn staged_rows(store: &Store) -> (i64, i64) {
    let stages = Query::new("SELECT COUNT(*) FROM catalogue_stage")
        .scalar_on(store)
        .await
        .unwrap();
    let tools = Query::new("SELECT COUNT(*) FROM catalogue_stage_tool")
        .scalar_on(store)
        .await
        .unwrap();
    (stages, tools)
}

/// An import stages its pages as they arrive and swaps them in at the end:
/// until then the stored catalogue is the one before; a stage is the
/// import's own (two imports of one server stage apart); the last listing
/// of a name wins across pages; a replaced or dropped stage leaves no row; a
/// stage left by a killed import is cleared a day later, and the import it
/// belonged to is then refused rather than replacing the catalogue with
/// part of a listing.
#[tokio::test]
async fn an_import_staged_page_by_page_replaces_the_catalogue_once_and_leaves_nothing_behind() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    store
        .add_server(server("gh", Some(DataClass::SourceCode)))
        .await
        .unwrap();
    store
        .replace_catalogue("gh", &[tool("a", "a"), tool("b", "b"), tool("c", "c")])
        .await
        .unwrap();
    let before = store.catalogue("gh").await.unwrap();

    let mut first = store.stage_catalogue("gh").await.unwrap();
    let mut second = store.stage_catalogue("gh").await.unwrap();
    store
        .stage_tools(&mut first, &[tool("a", "changed"), tool("d", "d")])
        .await
        .unwrap();
    store
        .stage_tools(&mut second, &[tool("a", "a")])
        .await
        .unwrap();
    store
        .stage_tools(&mut first, &[tool("e", "e"), tool("a", "changed again")])
        .await
        .unwrap();
    assert_eq!(first.staged(), 4, "a name listed again is staged again");
    assert_eq!(
        store.catalogue("gh").await.unwrap(),
        before,
        "staged pages are not the catalogue"
    );
    assert_eq!(staged_rows(&store).await, (2, 4), "a stage per import");

    let change = store.replace_catalogue_staged(&first, None).await.unwrap();
    assert_eq!(change.added, ["gh.d", "gh.e"]);
    assert_eq!(change.changed, ["gh.a"]);
    assert_eq!(change.orphaned, ["gh.b", "gh.c"]);
    assert_eq!(change.unchanged, 0);
    let rows = store.catalogue("gh").await.unwrap();
    let a = rows.iter().find(|r| r.remote_name == "a").unwrap();
    assert_eq!(a.description, "changed again", "the last listing wins");
    assert_eq!(rows.iter().filter(|r| r.orphaned).count(), 2);
    assert_eq!(
        staged_rows(&store).await,
        (1, 1),
        "the replaced stage is gone"
    );

    // The other import is dropped: nothing changes, nothing is left.
    let after_first = store.catalogue("gh").await.unwrap();
    store.drop_stage(second).await.unwrap();
    assert_eq!(store.catalogue("gh").await.unwrap(), after_first);
    assert_eq!(staged_rows(&store).await, (0, 0));

    // A server removed while an import of it runs takes that import's
    // pages with it: registered again under the same id, its catalogue is
    // its own, never the old import's.
    let mut running = store.stage_catalogue("gh").await.unwrap();
    store
        .stage_tools(&mut running, &[tool("old", "from the old server")])
        .await
        .unwrap();
    store.remove_server("gh").await.unwrap();
    store
        .add_server(server("gh", Some(DataClass::SourceCode)))
        .await
        .unwrap();
    store
        .replace_catalogue("gh", &[tool("new", "from the new server")])
        .await
        .unwrap();
    let late = store.stage_tools(&mut running, &[tool("older", "x")]).await;
    assert!(
        matches!(late, Err(StoreError::StageCleared { .. })),
        "{late:?}"
    );
    let late = store.replace_catalogue_staged(&running, None).await;
    assert!(
        matches!(late, Err(StoreError::StageCleared { .. })),
        "{late:?}"
    );
    let rows = store.catalogue("gh").await.unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| (r.remote_name.as_str(), r.orphaned))
            .collect::<Vec<_>>(),
        [("new", false)]
    );
    store.drop_stage(running).await.unwrap();
    assert_eq!(staged_rows(&store).await, (0, 0));

    // No stage opens for a server that is not registered.
    assert!(matches!(
        store.stage_catalogue("nobody").await,
        Err(StoreError::NoSuchServer(_))
    ));
}

/// A staged catalogue past its bounds is refused whole, and a stage left by
/// a killed import is cleared a day later, the import it belonged to then
/// refused: neither changes the stored catalogue, and a dropped stage
/// leaves no row.
#[tokio::test]
async fn a_refused_or_stale_stage_changes_nothing() {
    let dir = TestDb::new().await;
    let store = open(&dir).await;
    store
        .add_server(server("gh", Some(DataClass::SourceCode)))
        .await
        .unwrap();
    let listed: Vec<_> = ["a", "b", "c", "d", "e"].map(|n| tool(n, n)).into();
    store.replace_catalogue("gh", &listed).await.unwrap();
    let after_first = store.catalogue("gh").await.unwrap();

    // Past its bounds a staged catalogue is refused whole; the stage is kept
    // until dropped.
    let mut bounded = store.stage_catalogue("gh").await.unwrap();
    store
        .stage_tools(&mut bounded, &[tool("f", "f"), tool("g", "g")])
        .await
        .unwrap();
    let refused = store
        .replace_catalogue_staged(
            &bounded,
            Some(toolgate_store::CatalogueBounds {
                max_tools: 6,
                max_bytes: usize::MAX,
            }),
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(StoreError::CatalogueOverBounds { tools: 7, .. })
        ),
        "{refused:?}"
    );
    assert_eq!(store.catalogue("gh").await.unwrap(), after_first);
    store.drop_stage(bounded).await.unwrap();
    assert_eq!(staged_rows(&store).await, (0, 0));

    // A stage untouched for a day is taken for a killed import's: the next
    // import clears it, and the import it was is refused, the catalogue kept.
    let mut killed = store.stage_catalogue("gh").await.unwrap();
    store
        .stage_tools(&mut killed, &[tool("a", "a")])
        .await
        .unwrap();
    Query::new("UPDATE catalogue_stage SET touched_at = touched_at - $1")
        .bind(toolgate_store::CatalogueStage::KEPT_FOR_MS + 1)
        .execute_on(&store)
        .await
        .unwrap();
    let next = store.stage_catalogue("gh").await.unwrap();
    assert_eq!(
        staged_rows(&store).await,
        (1, 0),
        "the stale stage is cleared"
    );
    let late = store.replace_catalogue_staged(&killed, None).await;
    assert!(
        matches!(late, Err(StoreError::StageCleared { ref server }) if server == "gh"),
        "{late:?}"
    );
    let late = store.stage_tools(&mut killed, &[tool("b", "b")]).await;
    assert!(
        matches!(late, Err(StoreError::StageCleared { .. })),
        "{late:?}"
    );
    assert_eq!(store.catalogue("gh").await.unwrap(), after_first);
    store.drop_stage(killed).await.unwrap();
    store.drop_stage(next).await.unwrap();
    assert_eq!(staged_rows(&store).await, (0, 0));
}
