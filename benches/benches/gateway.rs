//! A call forwarded through the gateway against the same call made directly
//! to the upstream server, side by side in one run: the notes test server —
//! served from this very executable, over stdio — its approval turned off,
//! so `read_note` is a call the gate lets run. The gateway is served in this
//! process over an in-memory pipe, its client beside it; the upstream is a
//! child process either way. Then 8 calls at once through the gateway
//! against one.

use std::sync::OnceLock;

use divan::Bencher;
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use serde_json::json;
use toolgate::OperatorDeclaration;
use toolgate_store::{DataClass, Location, NewServer, Store, Transport};

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
    divan::main();
}

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => panic!("{error}"),
    }
}

struct World {
    runtime: tokio::runtime::Runtime,
    direct: RunningService<RoleClient, ()>,
    through: RunningService<RoleClient, ()>,
    _dir: tempfile::TempDir,
}

fn ok<T, E: std::fmt::Display>(result: Result<T, E>) -> T {
    match result {
        Ok(value) => value,
        Err(error) => panic!("{error}"),
    }
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let runtime = runtime();
        let dir = ok(tempfile::tempdir());
        let exe = ok(std::env::current_exe()).to_string_lossy().into_owned();
        let (direct, through) = runtime.block_on(async {
            let store = ok(Store::open(&Location::Sqlite(dir.path().join("toolgate.db"))).await);
            ok(store
                .add_server(NewServer {
                    id: "notes".into(),
                    name: "Notes".into(),
                    transport: Transport::Stdio {
                        command: vec![exe.clone(), SERVE.into()],
                    },
                    data_class: Some(DataClass::EditorContent),
                })
                .await);
            ok(toolgate_mcp::import(
                &store,
                "notes",
                toolgate_mcp::Deadlines::default(),
                &mut |_| (),
            )
            .await);
            let digest = ok(store.acceptance("notes", &[]).await).digest;
            ok(store
                .set_approval("notes", OperatorDeclaration::NoApproval, Some(&digest))
                .await);

            // Directly: the upstream, a child process, over its stdio.
            let mut child = ok(tokio::process::Command::new(&exe)
                .arg(SERVE)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn());
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                panic!("the upstream's pipes");
            };
            std::mem::forget(child);
            let direct = ok(().serve((stdout, stdin)).await);

            // Through the gateway, served here over an in-memory pipe.
            let gateway = ok(toolgate_gateway::Gateway::builder(store).build());
            let (server_end, client_end) = tokio::io::duplex(1 << 20);
            let (server_read, server_write) = tokio::io::split(server_end);
            tokio::spawn(async move {
                if let Ok(running) = gateway.serve((server_read, server_write)).await {
                    let _ = running.waiting().await;
                }
            });
            let (client_read, client_write) = tokio::io::split(client_end);
            let through = ok(().serve((client_read, client_write)).await);
            (direct, through)
        });
        // The gateway forwards the call and hands back the upstream's answer.
        let (by_hand, forwarded) = runtime.block_on(async {
            (
                ok(direct.call_tool(read_note("read_note")).await),
                ok(through.call_tool(read_note("notes__read_note")).await),
            )
        });
        ran(&by_hand);
        assert_eq!(
            by_hand.content, forwarded.content,
            "the same answer either way"
        );
        World {
            runtime,
            direct,
            through,
            _dir: dir,
        }
    })
}

/// The answer of a call that ran: no error result (a call refused, held or
/// unknown answers with one), and the note's text.
fn ran(result: &rmcp::model::CallToolResult) -> usize {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert!(!result.content.is_empty(), "{result:?}");
    result.content.len()
}

fn read_note(name: &str) -> CallToolRequestParams {
    let mut arguments = serde_json::Map::new();
    arguments.insert("id".into(), json!(1));
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

/// One `read_note`, straight to the upstream.
#[divan::bench(sample_count = 200)]
fn direct(bencher: Bencher) {
    let world = world();
    bencher.bench_local(|| {
        ran(&ok(world
            .runtime
            .block_on(world.direct.call_tool(read_note("read_note")))))
    });
}

/// The same call through the gateway: resolved by its wire name, scanned,
/// forwarded over the gateway's own connection.
#[divan::bench(sample_count = 200)]
fn through_the_gateway(bencher: Bencher) {
    let world = world();
    bencher.bench_local(|| {
        ran(&ok(world.runtime.block_on(
            world.through.call_tool(read_note("notes__read_note")),
        )))
    });
}

/// `N` calls at once through the gateway, all answered.
#[divan::bench(consts = [1, 8], sample_count = 100)]
fn at_once_through_the_gateway<const N: usize>(bencher: Bencher) {
    let world = world();
    bencher.bench_local(|| {
        world.runtime.block_on(async {
            let calls = (0..N).map(|_| world.through.call_tool(read_note("notes__read_note")));
            for answered in futures_util::future::join_all(calls).await {
                ran(&ok(answered));
            }
        });
    });
}

/// `N` calls at once straight to the upstream: what the upstream and this
/// machine allow, beside the gateway's figure.
#[divan::bench(consts = [1, 8], sample_count = 100)]
fn at_once_direct<const N: usize>(bencher: Bencher) {
    let world = world();
    bencher.bench_local(|| {
        world.runtime.block_on(async {
            let calls = (0..N).map(|_| world.direct.call_tool(read_note("read_note")));
            for answered in futures_util::future::join_all(calls).await {
                ran(&ok(answered));
            }
        });
    });
}

fn slow(name: &str) -> CallToolRequestParams {
    let mut arguments = serde_json::Map::new();
    arguments.insert("seconds".into(), json!(0.02));
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

/// `N` calls at once of a tool that takes 20 ms upstream, through the
/// gateway: concurrent calls that queued behind one another on the one
/// upstream connection would take `N` times as long as one.
#[divan::bench(consts = [1, 8], sample_count = 40)]
fn slow_at_once_through_the_gateway<const N: usize>(bencher: Bencher) {
    let world = world();
    bencher.bench_local(|| {
        world.runtime.block_on(async {
            let calls = (0..N).map(|_| world.through.call_tool(slow("notes__slow")));
            for answered in futures_util::future::join_all(calls).await {
                ran(&ok(answered));
            }
        });
    });
}

/// The same, straight to the upstream.
#[divan::bench(consts = [1, 8], sample_count = 40)]
fn slow_at_once_direct<const N: usize>(bencher: Bencher) {
    let world = world();
    bencher.bench_local(|| {
        world.runtime.block_on(async {
            let calls = (0..N).map(|_| world.direct.call_tool(slow("slow")));
            for answered in futures_util::future::join_all(calls).await {
                ran(&ok(answered));
            }
        });
    });
}
