//! An import's peak memory against the size of the catalogue it stores.
//!
//! The MCP test server — served from this very executable, over stdio —
//! lists `n` filler tools whose descriptions are padded to a given size; the
//! import reads every page and stores the catalogue in an SQLite file. The
//! heap is counted by a global allocator that keeps the peak of live bytes
//! (dhat's): the table is the peak during the import against the catalogue's
//! bytes as stored.

use std::time::{Duration, Instant};

use toolgate_mcp::{Deadlines, ImportLimits, import_within};
use toolgate_store::{DataClass, Location, NewServer, Store, Transport};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// The flag this executable serves the test server under.
const SERVE: &str = "--serve-notes";

fn main() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some(SERVE) {
        let runtime = runtime();
        if let Err(error) = runtime.block_on(toolgate_mcp_test_server::run(args)) {
            eprintln!("{error}");
            std::process::exit(2);
        }
        return;
    }
    println!(
        "| tools | bytes a tool | catalogue as stored | peak heap | peak / catalogue | time |"
    );
    println!("|---|---|---|---|---|---|");
    for (tools, bytes) in [
        (250, 10_000),
        (1_000, 10_000),
        (3_000, 10_000),
        (10_000, 10_000),
    ] {
        measure(tools, bytes, 100, 0);
    }
    // A server whose cursors are large: one tiny tool a page, each page's
    // cursor 1 MiB, every cursor the import was sent counted.
    println!();
    println!("| pages | cursor bytes | cursors sent | peak heap | time |");
    println!("|---|---|---|---|---|");
    for pages in [50, 200] {
        measure(pages, 10, 1, 1024 * 1024);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => panic!("{error}"),
    }
}

fn mib(bytes: usize) -> String {
    #[allow(clippy::cast_precision_loss, reason = "a figure to read")]
    let mib = bytes as f64 / (1024.0 * 1024.0);
    format!("{mib:.1} MiB")
}

/// Imports `tools` tools of `bytes` bytes, `page` to a page, each page's
/// cursor padded to `cursor` bytes, and prints a row: of the catalogue
/// table, or — with large cursors — of the cursor table.
fn measure(tools: usize, bytes: usize, page: usize, cursor: usize) {
    let runtime = runtime();
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => panic!("{error}"),
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe.to_string_lossy().into_owned(),
        Err(error) => panic!("{error}"),
    };
    let store = runtime.block_on(async {
        let store = match Store::open(&Location::Sqlite(dir.path().join("toolgate.db"))).await {
            Ok(store) => store,
            Err(error) => panic!("{error}"),
        };
        let added = store
            .add_server(NewServer {
                id: "big".into(),
                name: "A large catalogue".into(),
                transport: Transport::Stdio {
                    command: vec![
                        exe,
                        SERVE.into(),
                        "--fillers".into(),
                        tools.to_string(),
                        "--filler-bytes".into(),
                        bytes.to_string(),
                        "--page-size".into(),
                        page.to_string(),
                        "--cursor-bytes".into(),
                        cursor.to_string(),
                    ],
                },
                data_class: Some(DataClass::PublicContent),
            })
            .await;
        assert!(added.is_ok(), "{added:?}");
        store
    });
    let deadlines = Deadlines {
        list_page: Duration::from_mins(1),
        ..Deadlines::default()
    };
    let limits = ImportLimits {
        max_tools: 100_000,
        max_bytes: usize::MAX,
    };
    let started = Instant::now();
    let profiler = dhat::Profiler::builder().testing().build();
    let before = dhat::HeapStats::get().curr_bytes;
    let report = runtime.block_on(import_within(&store, "big", deadlines, limits, &mut |_| ()));
    let peak = dhat::HeapStats::get().max_bytes.saturating_sub(before);
    drop(profiler);
    let elapsed = started.elapsed();
    let report = match report {
        Ok(report) => report,
        Err(error) => panic!("{error}"),
    };
    // The server lists its own few tools beside the fillers; every one it
    // lists is read and stored.
    assert!(
        report.listed >= tools,
        "{} listed for {tools} fillers",
        report.listed
    );
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    let stored_rows = runtime
        .block_on(store.catalogue("big"))
        .map_or(0, |rows| rows.len());
    assert_eq!(stored_rows, report.listed, "every listed tool is stored");
    if cursor > 0 {
        println!(
            "| {} | {cursor} | {} | {} | {:.2} s |",
            report.pages,
            mib(report.pages.saturating_sub(1) * cursor),
            mib(peak),
            elapsed.as_secs_f64()
        );
        return;
    }
    let stored: usize = runtime.block_on(async {
        match store.catalogue("big").await {
            Ok(rows) => rows
                .iter()
                .map(|row| {
                    row.remote_name.len()
                        + row.description.len()
                        + row.input_schema.len()
                        + row.annotations.as_ref().map_or(0, String::len)
                })
                .sum(),
            Err(error) => panic!("{error}"),
        }
    });
    #[allow(clippy::cast_precision_loss, reason = "a ratio to read")]
    let ratio = peak as f64 / stored as f64;
    println!(
        "| {} | {bytes} | {} | {} | {ratio:.2}× | {:.2} s |",
        report.listed,
        mib(stored),
        mib(peak),
        elapsed.as_secs_f64()
    );
}
