//! The operator flag as each backend stores it: what each spelling
//! of "off" becomes — every SQLite storage class, PostgreSQL's typed column —
//! and what the gate reads from it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use proptest::prelude::*;
use toolgate::OperatorDeclaration;
use toolgate_store::{
    Backend, DataClass, NewServer, Query, Store, StoredFlag, Transport, approval_from_stored,
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

async fn store_with_server(db: &TestDb) -> Store {
    let store = match Store::open(db.location()).await {
        Ok(store) => store,
        Err(error) => panic!("{error}"),
    };
    let added = store
        .add_server(NewServer {
            id: "gh".into(),
            name: "GitHub".into(),
            transport: Transport::Stdio {
                command: vec!["gh-mcp".into()],
            },
            data_class: Some(DataClass::SourceCode),
        })
        .await;
    assert!(added.is_ok(), "{added:?}");
    store
}

/// What a raw write did: refused (with SQLite's message), or stored as
/// (storage class, text of the value).
async fn raw_write(store: &Store, table: &str, literal: &str) -> Result<(String, String), String> {
    let sql = format!("UPDATE {table} SET requires_approval = {literal}");
    Query::new(sql)
        .execute_on(store)
        .await
        .map_err(|e| e.to_string())?;
    let type_of = if on_postgres() {
        "pg_typeof(requires_approval)::text"
    } else {
        "typeof(requires_approval)"
    };
    let sql = format!("SELECT {type_of} AS t, CAST(requires_approval AS TEXT) AS v FROM {table}");
    let row = Query::new(sql)
        .fetch_one_on(store)
        .await
        .map_err(|e| e.to_string())?;
    Ok((
        row.try_get::<String, _>("t").expect("`try_get` succeeds"),
        row.try_get::<Option<String>, _>("v")
            .ok()
            .flatten()
            .unwrap_or_default(),
    ))
}

/// Every spelling of the issue, each SQLite storage class, and what happens
/// to it in our column (no numeric affinity, strict CHECK) and in a column
/// declared `INTEGER NOT NULL CHECK (requires_approval IN (0, 1))` — the
/// choice the migration explains it did not make.
#[tokio::test]
async fn the_flag_table() {
    if on_postgres() {
        return the_typed_flag_table().await;
    }
    let dir = TestDb::new().await;
    let store = store_with_server(&dir).await;
    let scratch = Query::new(
        "CREATE TABLE integer_affinity (requires_approval INTEGER NOT NULL DEFAULT 1 CHECK (requires_approval IN (0, 1)));
         INSERT INTO integer_affinity DEFAULT VALUES;",
    )
    .execute_on(&store)
    .await;
    assert!(scratch.is_ok(), "{scratch:?}");

    // (raw SQL, stored in our column, the gate's reading of our row,
    //  stored under INTEGER affinity)
    let refused = "refused";
    let table: [(&str, &str, OperatorDeclaration, &str); 20] = [
        ("'0'", refused, YES, "integer 0"),
        ("'00'", refused, YES, "integer 0"),
        ("' 0'", refused, YES, "integer 0"),
        ("'0.0'", refused, YES, "integer 0"),
        ("'-0'", refused, YES, "integer 0"),
        ("'1e-400'", refused, YES, "integer 0"),
        ("''", refused, YES, refused),
        ("'false'", refused, YES, refused),
        ("'1'", refused, YES, "integer 1"),
        ("NULL", refused, YES, refused),
        ("0.0", refused, YES, "integer 0"),
        ("-0.0", refused, YES, "integer 0"),
        ("1e-400", refused, YES, "integer 0"),
        ("X'00'", refused, YES, refused),
        ("X''", refused, YES, refused),
        ("2", refused, YES, refused),
        ("-1", refused, YES, refused),
        ("1", "integer 1", YES, "integer 1"),
        ("-0", "integer 0", NO, "integer 0"),
        ("0", "integer 0", NO, "integer 0"),
    ];
    for (literal, ours, reading, integer_affinity) in table {
        // Start each row from "required".
        let reset = store.set_approval("gh", YES, None).await;
        reset.expect("`reset` is Ok");
        let stored = raw_write(&store, "mcp_server", literal).await;
        let described = match &stored {
            Ok((class, value)) => format!("{class} {value}"),
            Err(error) => {
                assert!(
                    error.contains("CHECK constraint failed")
                        || error.contains("NOT NULL constraint failed"),
                    "{literal}: {error}"
                );
                refused.to_owned()
            }
        };
        assert_eq!(described, ours, "our column, raw write of {literal}");
        let server = store.server("gh").await;
        assert_eq!(
            server.map(|s| s.approval).ok(),
            Some(reading),
            "reading after {literal}"
        );

        let scratch = raw_write(&store, "integer_affinity", literal).await;
        let described = match scratch {
            Ok((class, value)) => format!("{class} {value}"),
            Err(_) => refused.to_owned(),
        };
        assert_eq!(
            described, integer_affinity,
            "INTEGER affinity, raw write of {literal}"
        );
    }
}

/// PostgreSQL's column is typed (`toolgate_approval`, an enumeration of
/// `required` and `not_required`): every spelling of "off" but the label is
/// refused by the type itself, and the gate reads "no approval" only from
/// that label. Beside it, a boolean column — the choice the migration
/// explains it did not make — takes five spellings of "off".
async fn the_typed_flag_table() {
    let db = TestDb::new().await;
    let store = store_with_server(&db).await;
    for statement in [
        "CREATE TABLE boolean_flag (requires_approval boolean NOT NULL DEFAULT true)",
        "INSERT INTO boolean_flag DEFAULT VALUES",
    ] {
        Query::new(statement)
            .execute_on(&store)
            .await
            .expect("the boolean scratch table");
    }
    let refused = "refused";
    // (raw SQL, stored in our column, the gate's reading, stored in a boolean)
    let table: [(&str, &str, OperatorDeclaration, &str); 14] = [
        (
            "'not_required'",
            "toolgate_approval not_required",
            NO,
            refused,
        ),
        ("'required'", "toolgate_approval required", YES, refused),
        ("'Not_Required'", refused, YES, refused),
        ("' not_required'", refused, YES, refused),
        ("'off'", refused, YES, "boolean false"),
        ("'no'", refused, YES, "boolean false"),
        ("'0'", refused, YES, "boolean false"),
        ("'f'", refused, YES, "boolean false"),
        ("' false '", refused, YES, "boolean false"),
        ("''", refused, YES, refused),
        ("0", refused, YES, refused),
        ("false", refused, YES, "boolean false"),
        ("NULL", refused, YES, refused),
        ("1", refused, YES, refused),
    ];
    for (literal, ours, reading, boolean) in table {
        store.set_approval("gh", YES, None).await.expect("reset");
        let described = match raw_write(&store, "mcp_server", literal).await {
            Ok((class, value)) => format!("{class} {value}"),
            Err(_) => refused.to_owned(),
        };
        assert_eq!(described, ours, "our column, raw write of {literal}");
        let server = store.server("gh").await.expect("the server reads");
        assert_eq!(server.approval, reading, "reading after {literal}");
        assert_eq!(
            server.approval,
            approval_from_stored(store.backend(), &server.stored_flag)
        );
        let described = match raw_write(&store, "boolean_flag", literal).await {
            Ok((class, value)) => format!("{class} {value}"),
            Err(_) => refused.to_owned(),
        };
        assert_eq!(described, boolean, "boolean column, raw write of {literal}");
    }

    schema_changes_hold_no_off(&db, &store).await;
}

/// A database writer with the rights to change the schema.
async fn schema_changes_hold_no_off(db: &TestDb, store: &Store) {
    // A default of "off" does not reach a server the typed path adds...
    Query::new("ALTER TABLE mcp_server ALTER COLUMN requires_approval SET DEFAULT 'not_required'")
        .execute_on(store)
        .await
        .expect("the default changes");
    let added = store
        .add_server(NewServer {
            id: "later".into(),
            name: "Added after the default changed".into(),
            transport: Transport::Stdio {
                command: vec!["later-mcp".into()],
            },
            data_class: Some(DataClass::SourceCode),
        })
        .await
        .expect("the server is added");
    assert_eq!(added.approval, YES, "{:?}", added.stored_flag);
    // ...and a column retyped to a boolean or a number holds no "off": its
    // false or 0 is SQLite's spelling, not this backend's.
    for (retype, off) in [
        (
            "ALTER TABLE mcp_server ALTER COLUMN requires_approval DROP DEFAULT, \
             ALTER COLUMN requires_approval TYPE boolean USING (requires_approval = 'required')",
            "false",
        ),
        (
            "ALTER TABLE mcp_server ALTER COLUMN requires_approval TYPE bigint USING (CASE WHEN requires_approval THEN 1 ELSE 0 END)",
            "0",
        ),
        (
            "ALTER TABLE mcp_server ALTER COLUMN requires_approval TYPE text USING (requires_approval::text)",
            "'not_required'",
        ),
    ] {
        Query::new(retype)
            .execute_on(store)
            .await
            .expect("the column is retyped");
        Query::new(format!("UPDATE mcp_server SET requires_approval = {off}"))
            .execute_on(store)
            .await
            .expect("the raw write");
        // A fresh handle: statements prepared on the old column type are
        // refused by the server after a retype ("cached plan must not
        // change result type") — an error, never a reading.
        let fresh = Store::open(db.location()).await.expect("the store opens");
        for server in fresh.servers().await.expect("the servers read") {
            assert_eq!(
                server.approval, YES,
                "{}: {retype}: {:?}",
                server.id, server.stored_flag
            );
        }
    }
}

#[tokio::test]
async fn the_typed_api_writes_only_on_or_off_and_says_what_changed() {
    let dir = TestDb::new().await;
    let store = store_with_server(&dir).await;
    let stored = |off: bool| {
        if on_postgres() {
            StoredFlag::Label {
                ty: "toolgate_approval".into(),
                label: if off { "not_required" } else { "required" }.into(),
            }
        } else {
            StoredFlag::Integer(i64::from(!off))
        }
    };
    let server = store.server("gh").await.ok();
    assert_eq!(
        server.map(|s| (s.stored_flag, s.approval)),
        Some((stored(false), YES))
    );
    let Ok((before, after)) = store
        .set_approval(
            "gh",
            NO,
            Some(&store.acceptance("gh", &[]).await.unwrap().digest),
        )
        .await
    else {
        panic!("set_approval failed");
    };
    assert_eq!((before.approval, after.approval), (YES, NO));
    assert_eq!(after.stored_flag, stored(true));
    let Ok((before, after)) = store.set_approval("gh", YES, None).await else {
        panic!("set_approval failed");
    };
    assert_eq!((before.approval, after.approval), (NO, YES));
    assert_eq!(after.stored_flag, stored(false));
    assert!(store.set_approval("nobody", NO, None).await.is_err());
}

/// The only statement of this crate that writes the flag is the typed one,
/// and it binds the integer the declaration maps to.
#[test]
fn no_other_statement_in_this_crate_writes_the_flag() {
    // Every source file of the crate, however its modules are laid out.
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
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    let mut writes = Vec::new();
    for source in &files {
        let text = std::fs::read_to_string(source).expect("`read_to_string` succeeds");
        assert!(!text.is_empty(), "{} is readable", source.display());
        let source = source.display();
        for (number, line) in text.lines().enumerate() {
            if line.contains("requires_approval =")
                || line.contains("requires_approval)") && line.contains("INSERT")
            {
                writes.push(format!("{source}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    // The operator's change, and a new server written as "required".
    assert_eq!(writes.len(), 2, "{writes:#?}");
    assert!(
        writes[0].contains("INSERT INTO mcp_server")
            && writes[0].contains("requires_approval)")
            && writes[1].contains("UPDATE mcp_server SET requires_approval = {write_flag}"),
        "{writes:#?}"
    );
    let servers = std::fs::read_to_string("src/servers.rs").expect("`read_to_string` succeeds");
    assert!(servers.contains(
        "let (flag, write_flag) = stored_for(self.backend(), OperatorDeclaration::ApprovalRequired);"
    ));
    assert!(servers.contains("let (flag, write_flag) = stored_for(tx.backend(), declaration);"));
    assert_eq!(servers.matches(".bind(flag)").count(), 2);
}

#[derive(Debug, Clone)]
enum Raw {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

fn raw() -> impl Strategy<Value = Raw> {
    prop_oneof![
        Just(Raw::Null),
        prop_oneof![Just(0i64), Just(1), Just(-1), Just(2), any::<i64>()].prop_map(Raw::Integer),
        prop_oneof![
            Just(0.0f64),
            Just(-0.0),
            Just(1.0),
            any::<f64>().prop_filter("finite", |f| f.is_finite())
        ]
        .prop_map(Raw::Real),
        prop_oneof![
            Just("0".to_owned()),
            Just("00".to_owned()),
            Just(" 0".to_owned()),
            Just("0.0".to_owned()),
            "\\PC{0,6}"
        ]
        .prop_map(Raw::Text),
        prop::collection::vec(any::<u8>(), 0..4).prop_map(Raw::Blob),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Whatever a raw write binds, the store either refuses it or keeps it,
    /// and the gate reads "no approval" only from an integer 0.
    #[test]
    fn any_stored_value_reads_fail_closed(value in raw()) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
        let Ok(runtime) = runtime else { return Err(TestCaseError::fail("no runtime")); };
        runtime.block_on(async {
            let dir = TestDb::new().await;
            let store = store_with_server(&dir).await;
            // PostgreSQL's typed column takes no bound integer, real, text
            // or bytes at all: only a cast to its type writes it.
            let accepted = !on_postgres() && matches!(value, Raw::Integer(0 | 1));
            let query = Query::new("UPDATE mcp_server SET requires_approval = $1 WHERE id = 'gh'");
            let query = match &value {
                Raw::Null => query.bind(None::<i64>),
                Raw::Integer(i) => query.bind(*i),
                Raw::Real(f) => query.bind(*f),
                Raw::Text(t) => query.bind(t.clone()),
                Raw::Blob(b) => query.bind(b.clone()),
            };
            let written = query.execute_on(&store).await.is_ok();
            let server = store.server("gh").await.map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(written, accepted, "{:?}", value);
            let expected = if accepted && matches!(value, Raw::Integer(0)) { NO } else { YES };
            prop_assert_eq!(server.approval, expected);
            prop_assert_eq!(server.approval, approval_from_stored(store.backend(), &server.stored_flag));
            Ok(())
        })?;
    }

    /// The reading function on its own, over every shape of stored value.
    #[test]
    fn the_reading_is_total_and_only_integer_zero_is_off(
        i in any::<i64>(), f in any::<f64>(), t in "\\PC{0,8}", b in prop::collection::vec(any::<u8>(), 0..4)
    ) {
        for flag in [
            StoredFlag::Integer(i), StoredFlag::Real(f), StoredFlag::Text(t.clone()),
            StoredFlag::Blob(b.clone()), StoredFlag::Null, StoredFlag::Missing,
            StoredFlag::Unreadable(t.clone()),
        ] {
            let expected = if flag == StoredFlag::Integer(0) { NO } else { YES };
            prop_assert_eq!(approval_from_stored(Backend::Sqlite, &flag), expected);
            // On PostgreSQL none of these is "off", the integer 0 included.
            prop_assert_eq!(approval_from_stored(Backend::Postgres, &flag), YES);
        }
    }
}
