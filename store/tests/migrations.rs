//! The schema history, on each backend: a server that existed
//! before the approval flag lands on "approval required", and nothing
//! corrects it afterwards.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use toolgate::OperatorDeclaration;
use toolgate_store::{Location, MigrateTo, Query, Store, StoreError, StoredFlag, latest_version};

mod backend;
use backend::{TestDb, on_postgres};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres_too() {
    backend::rerun_on_postgres();
}

async fn open_to(path: &Location, to: MigrateTo) -> Store {
    match Store::open_to(path, to).await {
        Ok(store) => store,
        Err(error) => panic!("{error}"),
    }
}

#[tokio::test]
async fn a_server_from_before_the_flag_requires_approval_after_the_upgrade() {
    let db = TestDb::new().await;
    let path = db.location();

    // The database as the first version left it.
    let store = open_to(&path, MigrateTo::Version(1)).await;
    assert_eq!(store.applied_versions().await.ok(), Some(vec![1]));
    // The server as that version wrote it: enabled, with a data class,
    // importing tools.
    let inserted = Query::new(
        "INSERT INTO mcp_server (id, name, transport, command, data_class, enabled, import_status, imported_at, created_at, updated_at)
         VALUES ('gh', 'GitHub', 'stdio', '[\"gh-mcp\"]', 'source_code', 1, 'ok', 1700000000000, 1700000000000, 1700000000000)",
    )
    .execute_on(&store)
    .await;
    assert!(inserted.is_ok(), "{inserted:?}");
    let tool = Query::new(
        "INSERT INTO mcp_tool (server_id, remote_name, local_name, description, input_schema, annotations, first_seen_at, last_seen_at)
         VALUES ('gh', 'create_issue', 'gh.create_issue', 'Creates an issue', '{\"type\":\"object\"}', '{\"readOnlyHint\":true}', 1700000000000, 1700000000000)",
    )
    .execute_on(&store)
    .await;
    assert!(tool.is_ok(), "{tool:?}");
    // Before the upgrade the column does not exist; the reading fails closed.
    let before = store.server("gh").await;
    assert_eq!(
        before.as_ref().ok().map(|s| &s.stored_flag),
        Some(&StoredFlag::Missing)
    );
    assert_eq!(
        before.ok().map(|s| s.approval),
        Some(OperatorDeclaration::ApprovalRequired)
    );
    store.close().await;

    // The upgrade.
    let store = open_to(&path, MigrateTo::Latest).await;
    assert_eq!(
        store.applied_versions().await.ok(),
        Some((1..=latest_version()).collect())
    );
    let (type_of, stored) = if on_postgres() {
        (
            "pg_typeof(requires_approval)::text",
            ("toolgate_approval", "required"),
        )
    } else {
        ("typeof(requires_approval)", ("integer", "1"))
    };
    let raw = Query::new(format!(
        "SELECT {type_of} AS t, CAST(requires_approval AS TEXT) AS v FROM mcp_server WHERE id = 'gh'"
    ))
    .fetch_one_on(&store)
    .await;
    let (storage, value) = match raw {
        Ok(row) => (
            row.try_get::<String, _>("t").expect("`try_get` succeeds"),
            row.try_get::<String, _>("v").expect("`try_get` succeeds"),
        ),
        Err(error) => panic!("{error}"),
    };
    assert_eq!(
        (storage.as_str(), value.as_str()),
        stored,
        "the stored value is the typed \"required\""
    );
    let server = match store.server("gh").await {
        Ok(server) => server,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(
        server.stored_flag,
        if on_postgres() {
            StoredFlag::Label {
                ty: "toolgate_approval".into(),
                label: "required".into(),
            }
        } else {
            StoredFlag::Integer(1)
        }
    );
    assert_eq!(server.approval, OperatorDeclaration::ApprovalRequired);
    assert!(
        server.is_usable(),
        "still enabled, with its data class and tools"
    );
    assert_eq!(store.catalogue("gh").await.map(|c| c.len()).ok(), Some(1));
}

#[tokio::test]
async fn migrating_twice_is_a_no_op() {
    let db = TestDb::new().await;
    let path = db.location();
    let store = open_to(&path, MigrateTo::Latest).await;
    let first = store.applied_versions().await.ok();
    let again = store.migrate(MigrateTo::Latest).await;
    assert!(again.is_ok(), "{again:?}");
    if let Ok(store) = again {
        store.close().await;
    }
    let reopened = open_to(&path, MigrateTo::Latest).await;
    assert_eq!(reopened.applied_versions().await.ok(), first);
}

#[tokio::test]
async fn an_edited_applied_migration_is_detected() {
    let db = TestDb::new().await;
    let path = db.location();
    let store = open_to(&path, MigrateTo::Latest).await;
    // What an applied migration whose text later changed looks like: its
    // recorded checksum no longer matches this build's.
    let tampered = Query::new(if on_postgres() {
        "UPDATE _sqlx_migrations SET checksum = '\\x00' WHERE version = 2"
    } else {
        "UPDATE _sqlx_migrations SET checksum = X'00' WHERE version = 2"
    })
    .execute_on(&store)
    .await;
    tampered.expect("`tampered` is Ok");
    store.close().await;
    match Store::open(&path).await {
        Err(error @ StoreError::EditedMigration { version: 2 }) => assert_eq!(
            error.to_string(),
            "schema version 2 was changed after it was applied to this database (its checksum differs); refusing to open it"
        ),
        other => panic!("expected the edit to be detected, got {other:?}"),
    }
}

#[tokio::test]
async fn a_database_from_a_newer_version_is_refused() {
    let db = TestDb::new().await;
    let path = db.location();
    let store = open_to(&path, MigrateTo::Latest).await;
    let newer = Query::new(if on_postgres() {
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES (99, 'from the future', true, '\\x00', 0)"
    } else {
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES (99, 'from the future', 1, X'00', 0)"
    })
    .execute_on(&store)
    .await;
    assert!(newer.is_ok(), "{newer:?}");
    store.close().await;
    match Store::open(&path).await {
        Err(error @ StoreError::NewerSchema { version: 99, .. }) => assert_eq!(
            error.to_string(),
            format!(
                "the database was written by a newer toolgate: it has schema version 99, which this build (up to version {}) does not know; refusing to open it",
                latest_version()
            )
        ),
        other => panic!("expected the newer database to be refused, got {other:?}"),
    }
}

#[tokio::test]
async fn the_database_file_is_created_on_first_use() {
    if on_postgres() {
        // A server database is the operator's to create; toolgate creates
        // only its tables, as the other tests show.
        return;
    }
    let db = TestDb::new().await;
    let path = db.dir().join("nested").join("data").join("toolgate.db");
    assert!(!path.exists());
    let store = open_to(&Location::Sqlite(path.clone()), MigrateTo::Latest).await;
    assert!(path.exists());
    assert_eq!(store.servers().await.map(|s| s.len()).ok(), Some(0));
}

/// Migrating an open store hands back a fresh handle: the old handle's
/// pooled connections, opened on the old schema, are gone, so the new
/// columns read correctly at once (they once read "no such server", and a
/// pooled connection panicked on a column it did not know).
#[tokio::test]
async fn migrating_an_open_store_reads_the_new_schema_at_once() {
    let db = TestDb::new().await;
    let path = db.location();
    let store = open_to(&path, MigrateTo::Version(1)).await;
    let inserted = Query::new(
        "INSERT INTO mcp_server (id, name, transport, command, data_class, enabled, import_status, imported_at, created_at, updated_at)
         VALUES ('srv', 'Server', 'stdio', '[\"srv\"]', 'source_code', 1, 'ok', 1700000000000, 1700000000000, 1700000000000)",
    )
    .execute_on(&store)
    .await;
    assert!(inserted.is_ok(), "{inserted:?}");
    // Warm every pooled connection on the old schema.
    for _ in 0..8 {
        assert!(store.server("srv").await.is_ok());
    }
    let store = match store.migrate(MigrateTo::Latest).await {
        Ok(store) => store,
        Err(error) => panic!("{error}"),
    };
    for _ in 0..16 {
        let server = store.server("srv").await;
        assert_eq!(
            server.map(|s| s.approval).ok(),
            Some(OperatorDeclaration::ApprovalRequired)
        );
    }
    assert_eq!(
        store.applied_versions().await.ok(),
        Some((1..=latest_version()).collect())
    );
}

/// Eight processes' worth of handles open one fresh database at once: the
/// migration lock makes them take turns, and every one opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_opens_take_turns() {
    let db = TestDb::new().await;
    let path = db.location();
    let opens: Vec<_> = (0..8)
        .map(|_| {
            let path = path.clone();
            tokio::spawn(async move { Store::open(path).await.map(|s| s.requires_key()) })
        })
        .collect();
    for open in opens {
        let opened = open.await.map_err(|e| e.to_string());
        assert!(matches!(opened, Ok(Ok(false))), "{opened:?}");
    }
}
