//! What the tests that drive `toolgate gateway` with a real MCP client
//! share: the notes server registered, a gateway process and its client,
//! a call, what it answered, and the upstream's ledger of writes that ran.

use std::path::Path;
use std::process::Stdio;

use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RoleClient, RunningService};
use serde_json::Value;

use super::{TOOLGATE, database_env, toolgate};

/// `toolgate --json ARGS` over `dir`, read.
pub(crate) fn json_of(dir: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&toolgate(dir, &[&["--json"][..], args].concat())).expect("JSON")
}

/// The notes test server registered and imported over `dir`, started with
/// `--ledger LEDGER` and `extra`: every write that ran is a line of the
/// ledger.
pub(crate) fn notes(dir: &Path, ledger: &Path, extra: &[&str]) {
    let ledger = ledger.to_str().expect("a UTF-8 path");
    let mut args = vec![
        "server",
        "add",
        "notes",
        "--name",
        "Notes",
        "--data-class",
        "editor_content",
        "--",
        TOOLGATE,
        "mcp-test-server",
        "--ledger",
        ledger,
    ];
    args.extend_from_slice(extra);
    toolgate(dir, &args);
    toolgate(dir, &["import", "notes"]);
}

/// A `toolgate gateway --user alice ARGS…` process over `dir`, with `envs`
/// set beside the store's: its standard output and input, what a client
/// connects over. The process ends with the test's runtime.
pub(crate) fn process(
    dir: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> (tokio::process::ChildStdout, tokio::process::ChildStdin) {
    let mut command = tokio::process::Command::new(TOOLGATE);
    command
        .arg("--data-dir")
        .arg(dir)
        .args(["gateway", "--user", "alice"])
        .args(args)
        .env_remove("TOOLGATE_DATABASE_URL")
        .envs(database_env(dir))
        .envs(envs.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("the gateway starts");
    let (stdin, stdout) = (
        child.stdin.take().expect("stdin is piped"),
        child.stdout.take().expect("stdout is piped"),
    );
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    (stdout, stdin)
}

/// A `toolgate gateway --user alice ARGS…` process over `dir`, and an MCP
/// client connected to it whose requests from the server `handler`
/// answers: a session of a client. The process ends with the test's
/// runtime.
pub(crate) async fn session<H: rmcp::ClientHandler>(
    dir: &Path,
    args: &[&str],
    handler: H,
) -> RunningService<RoleClient, H> {
    handler
        .serve(process(dir, args, &[]))
        .await
        .expect("the client connects")
}

/// `tool` called with `arguments` (an object) through `client`.
pub(crate) async fn call(
    client: &Peer<RoleClient>,
    tool: &str,
    arguments: Value,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("the arguments of a call are an object");
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .expect("the call is answered")
}

/// The text of a call's answer.
pub(crate) fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<String>()
}

/// How many writes ran upstream.
pub(crate) fn lines(ledger: &Path) -> usize {
    std::fs::read_to_string(ledger).map_or(0, |t| t.lines().count())
}

/// A `toolgate gateway --listen 127.0.0.1:0 ARGS…` process over `dir`, and
/// the URL it says it serves at. The process ends when the child is
/// dropped.
pub(crate) async fn listening(dir: &Path, args: &[&str]) -> (tokio::process::Child, String) {
    listening_on(dir, "127.0.0.1:0", args).await
}

/// A `toolgate gateway --listen LISTEN ARGS…` process over `dir`, and the
/// URL it says it serves at. The process ends when the child is dropped.
pub(crate) async fn listening_on(
    dir: &Path,
    listen: &str,
    args: &[&str],
) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt as _;
    let mut child = tokio::process::Command::new(TOOLGATE)
        .arg("--data-dir")
        .arg(dir)
        .args(["gateway", "--listen", listen])
        .args(args)
        .env_remove("TOOLGATE_DATABASE_URL")
        .envs(database_env(dir))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the gateway starts");
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut said = String::new();
    tokio::io::BufReader::new(stdout)
        .read_line(&mut said)
        .await
        .expect("the gateway says where it is");
    let url = said
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {said:?}"))
        .to_owned();
    (child, url)
}
