//! Registry hydration: building the provider's tools from 1,000, 10,000 and
//! 100,000 stored catalogue rows, beside a raw select of the same rows
//! through the database driver itself — on SQLite, and on PostgreSQL when
//! `TOOLGATE_TEST_POSTGRES` names a server (`.ci/postgres start DIR`).
//!
//! `provider_build_tools` reads a server whose approval is required (the
//! default); `provider_build_tools_pinned` one whose approval an operator
//! turned off, so every tool was pinned and each is checked against its
//! pinned definition as it is built.

use std::hint::black_box;

use serde_json::json;
use sqlx::Row;
use toolgate::{OperatorDeclaration, RemoteApproval};
use toolgate_mcp::{Deadlines, McpProvider, local_name};
use toolgate_store::{Backend, DataClass, ImportedTool, Location, NewServer, Store, Transport};

#[path = "../../store/tests/backend/mod.rs"]
mod backend;

fn main() {
    divan::main();
}

/// The backends to measure: SQLite, and PostgreSQL when a server is named.
fn backends() -> Vec<&'static str> {
    if backend::TestDb::postgres_configured() {
        vec!["sqlite", "postgres"]
    } else {
        vec!["sqlite"]
    }
}

struct Fixture {
    db: backend::TestDb,
    store: Store,
    runtime: tokio::runtime::Runtime,
}

fn fixture(backend: &str, rows: usize, approval: OperatorDeclaration) -> Fixture {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => panic!("{error}"),
    };
    let backend = if backend == "postgres" {
        Backend::Postgres
    } else {
        Backend::Sqlite
    };
    let db = runtime.block_on(backend::TestDb::on(backend));
    let store = runtime.block_on(async {
        let store = match Store::open(db.location()).await {
            Ok(store) => store,
            Err(error) => panic!("{error}"),
        };
        let added = store
            .add_server(NewServer {
                id: "srv".into(),
                name: "A server".into(),
                transport: Transport::Http {
                    url: "http://127.0.0.1:9/mcp".into(),
                },
                data_class: Some(DataClass::PublicContent),
            })
            .await;
        assert!(added.is_ok());
        let tools: Vec<ImportedTool> = (0..rows)
            .map(|i| {
                let remote = format!("tool_{i:06}");
                ImportedTool {
                    local_name: local_name("srv", &remote).unwrap_or_default(),
                    remote_name: remote,
                    description: "Looks something up in the index and returns the best matches.".into(),
                    input_schema: json!({"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["query"]}),
                    annotations: Some(json!({"title": "Lookup", "readOnlyHint": true})),
                }
            })
            .collect();
        assert!(store.replace_catalogue("srv", &tools).await.is_ok());
        // Turning approval off pins every tool the server has.
        if approval == OperatorDeclaration::NoApproval {
            let shown = store.acceptance("srv", &[]).await.map(|a| a.digest);
            assert!(shown.is_ok());
            let reviewed = shown.unwrap_or_default();
            assert!(
                store
                    .set_approval("srv", approval, Some(&reviewed))
                    .await
                    .is_ok()
            );
        }
        store
    });
    Fixture { db, store, runtime }
}

fn build_tools(bencher: divan::Bencher, f: &Fixture, rows: usize) {
    let provider = McpProvider::new(f.store.clone(), Deadlines::default());
    let built = f.runtime.block_on(provider.build_tools());
    match built {
        Ok((tools, _)) => assert_eq!(tools.len(), rows, "every row becomes a tool"),
        Err(error) => panic!("{error}"),
    }
    bencher.bench_local(|| {
        f.runtime.block_on(async {
            let built = provider.build_tools().await;
            black_box(built.map(|(tools, _)| tools.len()).unwrap_or_default())
        })
    });
}

#[divan::bench(args = backends(), consts = [1_000, 10_000, 100_000], sample_count = 30)]
fn provider_build_tools<const ROWS: usize>(bencher: divan::Bencher, backend: &str) {
    build_tools(
        bencher,
        &fixture(backend, ROWS, OperatorDeclaration::ApprovalRequired),
        ROWS,
    );
}

#[divan::bench(args = backends(), consts = [1_000, 10_000, 100_000], sample_count = 30)]
fn provider_build_tools_pinned<const ROWS: usize>(bencher: divan::Bencher, backend: &str) {
    let f = fixture(backend, ROWS, OperatorDeclaration::NoApproval);
    // Every tool is the one pinned: none is quarantined, none skipped.
    let built = f.runtime.block_on(async {
        McpProvider::new(f.store.clone(), Deadlines::default())
            .build_tools()
            .await
    });
    assert!(built.is_ok_and(|(tools, skipped)| {
        tools.len() == ROWS
            && skipped.is_empty()
            && tools
                .iter()
                .all(|t| t.operator_declaration() == OperatorDeclaration::NoApproval)
    }));
    build_tools(bencher, &f, ROWS);
}

/// The same rows and columns hydration reads, selected and decoded through
/// the driver, with no store or provider in between: what hydration is
/// compared with.
#[divan::bench(args = backends(), consts = [1_000, 10_000, 100_000], sample_count = 30)]
fn baseline_raw_select<const ROWS: usize>(bencher: divan::Bencher, backend: &str) {
    raw_select(
        bencher,
        &fixture(backend, ROWS, OperatorDeclaration::ApprovalRequired),
        ROWS,
    );
}

/// The raw select over the rows of `provider_build_tools_pinned`, which
/// carry their pinned definitions.
#[divan::bench(args = backends(), consts = [1_000, 10_000, 100_000], sample_count = 30)]
fn baseline_raw_select_pinned<const ROWS: usize>(bencher: divan::Bencher, backend: &str) {
    raw_select(
        bencher,
        &fixture(backend, ROWS, OperatorDeclaration::NoApproval),
        ROWS,
    );
}

fn raw_select(bencher: divan::Bencher, f: &Fixture, expected: usize) {
    const SQL: &str =
        "SELECT server_id, remote_name, local_name, description, input_schema, annotations,
                pinned_definition
         FROM mcp_tool WHERE orphaned = 0 ORDER BY server_id, local_name";
    type Decoded = (
        String,
        String,
        String,
        String,
        String,
        Option<String>,
        Option<String>,
    );
    fn decode<R: Row>(r: &R) -> Decoded
    where
        for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        for<'a> &'a str: sqlx::ColumnIndex<R>,
    {
        (
            r.get("server_id"),
            r.get("remote_name"),
            r.get("local_name"),
            r.get("description"),
            r.get("input_schema"),
            r.get("annotations"),
            r.get("pinned_definition"),
        )
    }
    match f.db.location() {
        Location::Sqlite(path) => {
            let pool = f.runtime.block_on(async {
                sqlx::sqlite::SqlitePoolOptions::new()
                    .connect_with(sqlx::sqlite::SqliteConnectOptions::new().filename(path))
                    .await
            });
            let Ok(pool) = pool else {
                panic!("the raw pool opens")
            };
            let select = || {
                f.runtime.block_on(async {
                    let rows = sqlx::query(SQL).fetch_all(&pool).await.unwrap_or_default();
                    let decoded: Vec<Decoded> = rows.iter().map(decode).collect();
                    black_box(decoded.len())
                })
            };
            assert_eq!(select(), expected, "every row is read");
            bencher.bench_local(select);
        }
        Location::Postgres(url) => {
            let pool = f.runtime.block_on(sqlx::postgres::PgPool::connect(&url));
            let Ok(pool) = pool else {
                panic!("the raw pool opens")
            };
            let select = || {
                f.runtime.block_on(async {
                    let rows = sqlx::query(SQL).fetch_all(&pool).await.unwrap_or_default();
                    let decoded: Vec<Decoded> = rows.iter().map(decode).collect();
                    black_box(decoded.len())
                })
            };
            assert_eq!(select(), expected, "every row is read");
            bencher.bench_local(select);
        }
    }
}
