//! A call forwarded through the gateway against the same call made directly
//! to the upstream server, side by side in one run, each made by an rmcp
//! client over a real stdio pipe to a child process — as an MCP client
//! launches a server: `toolgate mcp-test-server` directly, and `toolgate
//! gateway` in front of the same server, whose approval the operator turned
//! off (`server set-approval notes off --digest …`), so `read_note` is a
//! call the gate lets run and is forwarded at once. The `toolgate` run is
//! the release binary, built first by `cargo build --release -p
//! toolgate-cli` (nothing to do when it is fresh).
//!
//! Beside them, the gateway served in this process over an in-memory pipe
//! in front of the same upstream: the gateway's own work, without its
//! stdio hop or the command around it. Then 8 calls at once against one,
//! of the no-op `read_note` and of `slow`, which waits 20 ms upstream.

use std::path::Path;
use std::process::Stdio;
use std::sync::OnceLock;

use divan::Bencher;
use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use toolgate_store::{Location, Store};

mod release;
use release::{ok, runtime, toolgate};

fn main() {
    // Built before the table is printed.
    toolgate();
    divan::main();
    python_sdk();
    typescript_sdk();
}

/// The most a forwarded call may cost against a direct one, with an
/// official MCP SDK's client.
const SDK_TARGET: f64 = 2.0;

/// The same comparison made by the official MCP Python SDK's stdio client
/// (`clients/python_sdk.py`). Skipped, saying so, where Python has no `mcp`
/// package (`pip install mcp`).
fn python_sdk() {
    let has_sdk = std::process::Command::new("python3")
        .args(["-c", "import mcp"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !has_sdk {
        eprintln!("the Python SDK comparison is skipped: `pip install mcp` to run it");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/python_sdk.py");
    let mut command = std::process::Command::new("python3");
    command.arg(script);
    sdk_comparison("Python", command);
}

/// The same comparison made by the official MCP TypeScript SDK's stdio
/// client (`clients/typescript_sdk.mjs`), run by `node` in
/// `TOOLGATE_BENCH_TS_SDK_DIR`, a folder where `npm install
/// @modelcontextprotocol/sdk` was run. Skipped, saying so, without it.
fn typescript_sdk() {
    let Some(dir) = std::env::var_os("TOOLGATE_BENCH_TS_SDK_DIR") else {
        eprintln!(
            "the TypeScript SDK comparison is skipped: `npm install @modelcontextprotocol/sdk` in a folder and name it in TOOLGATE_BENCH_TS_SDK_DIR"
        );
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/typescript_sdk.mjs");
    let mut command = std::process::Command::new("node");
    command.arg(script).current_dir(dir);
    sdk_comparison("TypeScript", command);
}

/// Runs an SDK's comparison script (`command`): the upstream directly and
/// through `toolgate gateway`, alternated call by call, 1,000 calls each;
/// prints the medians and asserts the ratio is within [`SDK_TARGET`].
fn sdk_comparison(sdk: &str, mut command: std::process::Command) {
    let toolgate = toolgate();
    let exe = toolgate.to_string_lossy().into_owned();
    let data = world().dir.path().to_string_lossy().into_owned();
    let output = ok(command
        .args([
            "1000",
            "--",
            &exe,
            "mcp-test-server",
            "--",
            &exe,
            "--data-dir",
            &data,
        ])
        .args(["gateway", "--user", "bench"])
        .env_remove("TOOLGATE_DATABASE_URL")
        .env_remove("TOOLGATE_LOG")
        .stderr(Stdio::inherit())
        .output());
    assert!(output.status.success(), "the {sdk} SDK comparison failed");
    let measured: Value = ok(serde_json::from_slice(&output.stdout));
    let (Some(direct), Some(through), Some(ratio)) = (
        measured["direct"]["median_us"].as_f64(),
        measured["gateway"]["median_us"].as_f64(),
        measured["ratio"].as_f64(),
    ) else {
        panic!("the {sdk} SDK comparison printed no figures: {measured}");
    };
    println!(
        "official {sdk} SDK client over stdio, medians of 1,000 calls alternated: read_note directly {direct:.1} µs, through toolgate gateway {through:.1} µs: {ratio:.2}×"
    );
    assert!(
        ratio <= SDK_TARGET,
        "a forwarded call costs {ratio:.2}× a direct one with the {sdk} SDK, over the {SDK_TARGET}× target: {measured}"
    );
}

/// An rmcp client of `command`, started as a child process and spoken to
/// over its standard input and output; its stderr is this process's.
async fn client(command: tokio::process::Command) -> RunningService<RoleClient, ()> {
    let (transport, _) = ok(TokioChildProcess::builder(command)
        .stderr(Stdio::inherit())
        .spawn());
    ok(().serve(transport).await)
}

/// A `toolgate` command for a child process, in the environment a user's
/// client gives it: the default logging, the store of `--data-dir`.
fn command(toolgate: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(toolgate);
    command
        .env_remove("TOOLGATE_DATABASE_URL")
        .env_remove("TOOLGATE_LOG");
    command
}

struct World {
    runtime: tokio::runtime::Runtime,
    /// `toolgate mcp-test-server`, over its stdio.
    direct: RunningService<RoleClient, ()>,
    /// `toolgate gateway`, over its stdio, in front of the same server.
    through: RunningService<RoleClient, ()>,
    /// The gateway served in this process, over an in-memory pipe.
    in_process: RunningService<RoleClient, ()>,
    dir: tempfile::TempDir,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let toolgate = toolgate();
        let dir = ok(tempfile::tempdir());
        let data = dir.path();
        release::notes_without_approval(toolgate, data);

        let runtime = runtime();
        let (direct, through, in_process) = runtime.block_on(async {
            let mut upstream = command(toolgate);
            upstream.arg("mcp-test-server");
            let direct = client(upstream).await;

            let mut gateway = command(toolgate);
            gateway
                .arg("--data-dir")
                .arg(data)
                .args(["gateway", "--user", "bench"]);
            let through = client(gateway).await;

            let store = ok(Store::open(&Location::Sqlite(data.join("toolgate.db"))).await);
            let gateway = ok(toolgate_gateway::Gateway::builder(store)
                .user("bench")
                .host("gateway.in-process")
                .build());
            let (server_end, client_end) = tokio::io::duplex(1 << 20);
            tokio::spawn(async move {
                if let Ok(running) = gateway.serve(tokio::io::split(server_end)).await {
                    let _ = running.waiting().await;
                }
            });
            let in_process = ok(().serve(tokio::io::split(client_end)).await);
            (direct, through, in_process)
        });
        // Each gateway forwards the call and hands back the upstream's
        // answer: the note, as the server gives it directly.
        let (by_hand, forwarded, in_process_answer) = runtime.block_on(async {
            (
                ok(direct.call_tool(read_note("read_note")).await),
                ok(through.call_tool(read_note("notes__read_note")).await),
                ok(in_process.call_tool(read_note("notes__read_note")).await),
            )
        });
        assert_eq!(text(&by_hand), "note 0: buy milk", "{by_hand:?}");
        assert_eq!(by_hand.content, forwarded.content, "the same answer");
        assert_eq!(
            by_hand.content, in_process_answer.content,
            "the same answer"
        );
        for answered in [&by_hand, &forwarded, &in_process_answer] {
            ran(answered);
        }
        World {
            runtime,
            direct,
            through,
            in_process,
            dir,
        }
    })
}

/// The text of an answer.
fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect()
}

/// The answer of a call that ran: no error result (a call refused, held or
/// unknown answers with one), and content.
fn ran(result: &CallToolResult) -> usize {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert!(!result.content.is_empty(), "{result:?}");
    result.content.len()
}

fn read_note(name: &str) -> CallToolRequestParams {
    let mut arguments = serde_json::Map::new();
    arguments.insert("id".into(), json!(0));
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

/// One `read_note`, straight to the upstream over its stdio: the baseline.
#[divan::bench(sample_count = 400)]
fn read_note_direct(bencher: Bencher) {
    let world = world();
    bencher.bench_local(|| {
        ran(&ok(world
            .runtime
            .block_on(world.direct.call_tool(read_note("read_note")))))
    });
}

/// The same call through `toolgate gateway` over its stdio: read, resolved
/// by its wire name, scanned, forwarded over the gateway's own connection,
/// answered.
#[divan::bench(sample_count = 400)]
fn read_note_through_the_gateway(bencher: Bencher) {
    let world = world();
    bencher.bench_local(|| {
        ran(&ok(world.runtime.block_on(
            world.through.call_tool(read_note("notes__read_note")),
        )))
    });
}

/// The same call through the gateway served in this process over an
/// in-memory pipe: the gateway's own work, without its stdio hop.
#[divan::bench(sample_count = 400)]
fn read_note_through_the_gateway_in_process(bencher: Bencher) {
    let world = world();
    bencher.bench_local(|| {
        ran(&ok(world.runtime.block_on(
            world.in_process.call_tool(read_note("notes__read_note")),
        )))
    });
}

/// `N` calls at once, all answered.
fn at_once(
    world: &World,
    client: &RunningService<RoleClient, ()>,
    n: usize,
    call: impl Fn() -> CallToolRequestParams,
) {
    world.runtime.block_on(async {
        let calls = (0..n).map(|_| client.call_tool(call()));
        for answered in futures_util::future::join_all(calls).await {
            ran(&ok(answered));
        }
    });
}

/// `N` calls at once straight to the upstream: what the upstream and this
/// machine allow, beside the gateway's figure.
#[divan::bench(consts = [1, 8], sample_count = 100)]
fn read_notes_at_once_direct<const N: usize>(bencher: Bencher) {
    let world = world();
    bencher.bench_local(|| at_once(world, &world.direct, N, || read_note("read_note")));
}

/// `N` calls at once through `toolgate gateway`.
#[divan::bench(consts = [1, 8], sample_count = 100)]
fn read_notes_at_once_through_the_gateway<const N: usize>(bencher: Bencher) {
    let world = world();
    bencher.bench_local(|| at_once(world, &world.through, N, || read_note("notes__read_note")));
}

fn slow(name: &str) -> CallToolRequestParams {
    let mut arguments = serde_json::Map::new();
    arguments.insert("seconds".into(), json!(0.02));
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

/// `N` calls at once of a tool that takes 20 ms upstream, straight to it.
#[divan::bench(consts = [1, 8], sample_count = 40)]
fn slow_at_once_direct<const N: usize>(bencher: Bencher) {
    let world = world();
    bencher.bench_local(|| at_once(world, &world.direct, N, || slow("slow")));
}

/// The same through `toolgate gateway`: concurrent calls that queued behind
/// one another on its one upstream connection would take `N` times as long
/// as one.
#[divan::bench(consts = [1, 8], sample_count = 40)]
fn slow_at_once_through_the_gateway<const N: usize>(bencher: Bencher) {
    let world = world();
    bencher.bench_local(|| at_once(world, &world.through, N, || slow("notes__slow")));
}
