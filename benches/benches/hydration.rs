//! Registry hydration: building the provider's tools from 1,000, 10,000 and
//! 100,000 stored catalogue rows in SQLite, beside a raw select of the same
//! rows.

use std::hint::black_box;

use serde_json::json;
use sqlx::Row;
use toolgate_mcp::{Deadlines, McpProvider, local_name};
use toolgate_store::{DataClass, ImportedTool, NewServer, Store, Transport};

fn main() {
    divan::main();
}

const ROWS: [usize; 3] = [1_000, 10_000, 100_000];

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    runtime: tokio::runtime::Runtime,
}

fn fixture(rows: usize) -> Fixture {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => panic!("{error}"),
    };
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => panic!("{error}"),
    };
    let store = runtime.block_on(async {
        let store = match Store::open(dir.path().join("hydration.db")).await {
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
        store
    });
    Fixture {
        _dir: dir,
        store,
        runtime,
    }
}

#[divan::bench(args = ROWS, sample_count = 10)]
fn provider_build_tools(bencher: divan::Bencher, rows: usize) {
    let f = fixture(rows);
    let provider = McpProvider::new(f.store.clone(), Deadlines::default());
    bencher.bench_local(|| {
        f.runtime.block_on(async {
            let built = provider.build_tools().await;
            black_box(built.map(|(tools, _)| tools.len()).unwrap_or_default())
        })
    });
}

#[divan::bench(args = ROWS, sample_count = 10)]
fn baseline_raw_select(bencher: divan::Bencher, rows: usize) {
    let f = fixture(rows);
    bencher.bench_local(|| {
        f.runtime.block_on(async {
            let rows = sqlx::query(
                "SELECT * FROM mcp_tool WHERE orphaned = 0 ORDER BY server_id, local_name",
            )
            .fetch_all(f.store.pool())
            .await
            .unwrap_or_default();
            let decoded: Vec<(String, String, String, String, String, Option<String>)> = rows
                .iter()
                .map(|r| {
                    (
                        r.get("server_id"),
                        r.get("remote_name"),
                        r.get("local_name"),
                        r.get("description"),
                        r.get("input_schema"),
                        r.get("annotations"),
                    )
                })
                .collect();
            black_box(decoded.len())
        })
    });
}
