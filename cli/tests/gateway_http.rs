//! `toolgate gateway --listen`: the gateway over streamable HTTP, driven by
//! a real MCP client (rmcp's, and the Python SDK's where it is installed),
//! the notes test server upstream. Every request carries a token whose
//! person is the requester; a request without a live token, naming another
//! host, from another site's page, or in a session another token opened is
//! refused before anything reaches the gateway's handler.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::path::Path;
use std::time::Duration;

use rmcp::ServiceExt as _;
use rmcp::model::CallToolResult;
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

mod common;
use common::gateway::{call, json_of, lines, listening, notes, text};
use common::toolgate;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

/// A token made for `person`.
fn token(dir: &Path, person: &str) -> (String, String) {
    let made = json_of(dir, &["gateway", "token", "add", person]);
    (
        made["token"].as_str().unwrap().to_owned(),
        made["id"].as_str().unwrap().to_owned(),
    )
}

/// An rmcp client of the gateway at `url`, sending `token`.
async fn client(url: &str, token: &str) -> Result<RunningService<RoleClient, ()>, String> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .map_err(|e| e.to_string())
}

fn write_in_background(
    client: &Peer<RoleClient>,
    text: &'static str,
) -> tokio::task::JoinHandle<CallToolResult> {
    let client = client.clone();
    tokio::spawn(async move { call(&client, "notes__write_note", json!({"text": text})).await })
}

/// The one open run: its id and digest, once it is there.
async fn waiting(dir: &Path) -> (String, String) {
    for _ in 0..200 {
        let runs = json_of(dir, &["runs", "list"]);
        let open: Vec<&Value> = runs
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["state"] == "open")
            .collect();
        if let [run] = open.as_slice() {
            let id = run["run"].as_str().unwrap().to_owned();
            let shown = json_of(dir, &["runs", "show", &id]);
            return (id, shown["digest"].as_str().unwrap().to_owned());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no run waits");
}

/// A raw POST of `body` to `url` with `headers`: its status, its session
/// id, and its body.
async fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> (u16, Option<String>, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    // A stream is read only as far as its first answer.
    let mut body = String::new();
    let mut response = response;
    while let Ok(Some(chunk)) = tokio::time::timeout(Duration::from_secs(5), response.chunk())
        .await
        .unwrap_or(Ok(None))
    {
        body.push_str(&String::from_utf8_lossy(&chunk));
        if body.contains("\"jsonrpc\"") && body.contains("\"id\"") && body.ends_with('\n') {
            break;
        }
    }
    (status, session, body)
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

fn write_call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "notes__write_note", "arguments": {"text": "sneaked"}}})
}

/// A session opened with `token`: its id, told the client is initialised.
async fn opened(url: &str, token: &str) -> String {
    let bearer = format!("Bearer {token}");
    let (status, session, body) = post(url, &[("authorization", &bearer)], &initialize()).await;
    assert_eq!(status, 200, "{body}");
    let session = session.expect("a session id");
    let (status, _, body) = post(
        url,
        &[("authorization", &bearer), ("mcp-session-id", &session)],
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    session
}

/// The person of a token lists the tools, a read is forwarded at once, and
/// a write is held as a run whose requester is that person.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokens_person_is_the_requester_of_what_their_client_asks() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    let (alice, _) = token(dir, "alice");
    let (_gateway, url) = listening(dir, &["--wait", "20", "--user", "mallory"]).await;
    assert!(url.ends_with("/mcp"), "{url}");
    let client = client(&url, &alice).await.expect("the client connects");
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"notes__read_note".to_owned()), "{names:?}");
    assert!(names.contains(&"notes__write_note".to_owned()), "{names:?}");

    let held = write_in_background(client.peer(), "from alice");
    let (run, digest) = waiting(dir).await;
    let shown = json_of(dir, &["runs", "show", &run]);
    assert_eq!(shown["requested_by"], "alice", "{shown}");
    assert_eq!(lines(&ledger), 0);
    toolgate(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    let answered = held.await.unwrap();
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1);

    // Approval off: a read is forwarded at once.
    common::approval_off(dir, "notes");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let read = call(client.peer(), "notes__read_note", json!({"id": 1})).await;
    assert_eq!(read.is_error, Some(false), "{}", text(&read));

    // The token's last use is listed.
    let listed = json_of(dir, &["gateway", "token", "list"]);
    assert!(listed[0]["last_used_at"].is_i64(), "{listed}");
    client.cancel().await.unwrap();
}

/// Without a token, with one that is no token, or with a revoked one, a
/// request is refused — 401, saying what to do — and nothing reaches the
/// upstream or the runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_a_live_token_is_refused_and_reaches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    common::approval_off(dir, "notes");
    let (alice, alice_id) = token(dir, "alice");
    let (_gateway, url) = listening(dir, &[]).await;

    // A live token is served, and a write runs at once (approval is off).
    let session = opened(&url, &alice).await;
    let bearer = format!("Bearer {alice}");
    let (status, _, body) = post(
        &url,
        &[("authorization", &bearer), ("mcp-session-id", &session)],
        &write_call(2),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"isError\":false"), "{body}");
    assert_eq!(lines(&ledger), 1);

    let (forged, _) = alice.rsplit_once('_').unwrap();
    let forged = format!("Bearer {forged}_{}", "0".repeat(64));
    let basic = format!("Basic {alice}");
    for headers in [
        vec![],
        vec![("authorization", "Bearer ")],
        vec![("authorization", "Bearer tgw_nothing")],
        vec![("authorization", forged.as_str())],
        vec![("authorization", basic.as_str())],
    ] {
        let mut with_session = headers.clone();
        with_session.push(("mcp-session-id", &session));
        for headers in [headers, with_session] {
            let (status, _, body) = post(&url, &headers, &write_call(3)).await;
            assert_eq!(status, 401, "{headers:?}: {body}");
            assert!(body.contains("token"), "{body}");
        }
    }
    // An rmcp client with a wrong token does not connect.
    assert!(client(&url, "tgw_0000000000000000_0").await.is_err());

    // Revoked, the token's very next request is refused.
    let revoked = json_of(dir, &["gateway", "token", "revoke", &alice_id]);
    assert_eq!(revoked["revoked"][0]["person"], "alice", "{revoked}");
    let (status, _, body) = post(
        &url,
        &[("authorization", &bearer), ("mcp-session-id", &session)],
        &write_call(4),
    )
    .await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("revoked"), "{body}");
    assert!(client(&url, &alice).await.is_err());
    assert_eq!(lines(&ledger), 1, "nothing more ran");
    let listed = json_of(dir, &["gateway", "token", "list"]);
    assert!(listed[0]["revoked_at"].is_i64(), "{listed}");
    // Revoking by name: every live token of the person.
    let (_, first) = token(dir, "Carol");
    let (_, second) = token(dir, "carol");
    let revoked = json_of(dir, &["gateway", "token", "revoke", "CAROL"]);
    let ids: Vec<&str> = revoked["revoked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [first.as_str(), second.as_str()]);
    let unknown = common::command(dir)
        .args(["gateway", "token", "revoke", "nobody"])
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(4));
}

/// A request naming another host (a rebound name), or sent from another
/// site's page (an `Origin`), is refused even with a live token; an origin
/// the operator allowed is let in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_host_or_another_sites_page_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    common::approval_off(dir, "notes");
    let (alice, _) = token(dir, "alice");
    let bearer = format!("Bearer {alice}");
    let (_gateway, url) = listening(dir, &[]).await;
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp");

    let rebound = format!("attacker.example:{port}");
    let (status, _, body) = post(
        &url,
        &[("authorization", &bearer), ("host", &rebound)],
        &initialize(),
    )
    .await;
    assert_eq!(status, 421, "{body}");
    let localhost = format!("localhost:{port}");
    let (status, _, body) = post(
        &url,
        &[("authorization", &bearer), ("host", &localhost)],
        &initialize(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    for origin in [
        "https://attacker.example",
        "null",
        &format!("http://127.0.0.1:{port}"),
    ] {
        let (status, _, body) = post(
            &url,
            &[("authorization", &bearer), ("origin", origin)],
            &write_call(2),
        )
        .await;
        assert_eq!(status, 403, "{origin}: {body}");
        assert!(body.contains("origin"), "{body}");
    }
    assert_eq!(lines(&ledger), 0);

    let (_allowing, url) = listening(dir, &["--allow-origin", "https://app.example:8443"]).await;
    let (status, _, body) = post(
        &url,
        &[
            ("authorization", &bearer),
            ("origin", "https://app.example:8443"),
        ],
        &initialize(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = post(
        &url,
        &[
            ("authorization", &bearer),
            ("origin", "https://app.example:9443"),
        ],
        &initialize(),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    // And a non-loopback address is refused, saying why.
    let refused = common::command(dir)
        .args(["gateway", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(3));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("loopback") && said.contains("TLS"), "{said}");
}

/// A session is used only with the token that opened it: another person's
/// token is refused in it — to call, to listen, to end it — and it goes on
/// for its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_used_only_with_the_token_that_opened_it() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    common::approval_off(dir, "notes");
    let (alice, _) = token(dir, "alice");
    let (bob, _) = token(dir, "bob");
    let (_gateway, url) = listening(dir, &[]).await;
    let session = opened(&url, &alice).await;
    let bob_bearer = format!("Bearer {bob}");
    let (status, _, body) = post(
        &url,
        &[("authorization", &bob_bearer), ("mcp-session-id", &session)],
        &write_call(2),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("another token"), "{body}");
    let http = reqwest::Client::new();
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let response = http
            .request(method.clone(), &url)
            .header("authorization", &bob_bearer)
            .header("mcp-session-id", &session)
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 403, "{method}");
    }
    assert_eq!(lines(&ledger), 0);
    // A session id that is none of this gateway's.
    let (status, _, _) = post(
        &url,
        &[
            ("authorization", &bob_bearer),
            ("mcp-session-id", "made-up"),
        ],
        &write_call(3),
    )
    .await;
    assert_eq!(status, 404);
    // Alice's own session still serves her.
    let alice_bearer = format!("Bearer {alice}");
    let (status, _, body) = post(
        &url,
        &[
            ("authorization", &alice_bearer),
            ("mcp-session-id", &session),
        ],
        &write_call(4),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(lines(&ledger), 1);
    let shown = json_of(dir, &["runs", "list"]);
    assert!(shown.as_array().unwrap().is_empty(), "{shown}");
}

/// Under four eyes, alice's call is decided by someone else: her own
/// approval is refused; her token has no way to decide — a message that
/// tries is not a decision, and the run still waits — and bob's approval
/// from the console runs the call once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_eyes_hold_across_people_and_a_token_decides_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    let (alice, _) = token(dir, "alice");
    let (_gateway, url) = listening(dir, &["--wait", "20", "--four-eyes"]).await;
    let client = client(&url, &alice).await.expect("the client connects");
    let held = write_in_background(client.peer(), "four eyes");
    let (run, digest) = waiting(dir).await;
    assert_eq!(
        json_of(dir, &["runs", "show", &run])["requested_by"],
        "alice"
    );

    // Alice's token tries to decide over its own session: no method does.
    let session = opened(&url, &alice).await;
    let bearer = format!("Bearer {alice}");
    for (id, method, params, answer) in [
        (
            7,
            "runs/approve",
            json!({"run": run, "digest": digest, "as": "bob"}),
            "\"code\":-32601",
        ),
        (
            8,
            "tools/call",
            json!({"name": "approve", "arguments": {"run": run, "digest": digest}}),
            "no tool `approve` is offered by this gateway",
        ),
        (
            9,
            "elicitation/create",
            json!({"message": "approve", "requestedSchema": {"type": "object", "properties": {}}}),
            "\"code\":-32601",
        ),
    ] {
        let (status, _, body) = post(
            &url,
            &[("authorization", &bearer), ("mcp-session-id", &session)],
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .await;
        assert_eq!(status, 200, "{method}: {body}");
        assert!(body.contains(&format!("\"id\":{id},")), "{method}: {body}");
        assert!(body.contains(answer), "{method}: {body}");
    }
    let shown = json_of(dir, &["runs", "show", &run]);
    assert_eq!(shown["state"], "open", "{shown}");
    assert_eq!(lines(&ledger), 0);

    // Her own approval from the console is refused.
    let refused = common::command(dir)
        .args([
            "runs", "approve", &run, "--digest", &digest, "--as", "alice",
        ])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("its approval must come from someone else"),
        "{said}"
    );
    assert_eq!(lines(&ledger), 0);
    toolgate(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    let answered = held.await.unwrap();
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1);
    client.cancel().await.unwrap();
}

/// The Python SDK's streamable HTTP client, with a token, lists the tools
/// and reads through the gateway; without one it is refused. Skipped, and
/// said so, where the SDK (`pip install mcp`) is not installed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdks_client_is_served_with_a_token_only() {
    let has_sdk = std::process::Command::new("python3")
        .args(["-c", "import mcp.client.streamable_http"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_sdk {
        eprintln!("skipped: the Python MCP SDK is not installed (`pip install mcp`)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    common::approval_off(dir, "notes");
    let (alice, _) = token(dir, "alice");
    let (_gateway, url) = listening(dir, &[]).await;
    let script = r#"
import sys, anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

async def main(url, token):
    headers = {"Authorization": "Bearer " + token} if token else {}
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                tools = await session.list_tools()
                print("tools", " ".join(sorted(t.name for t in tools.tools)))
                read = await session.call_tool("notes__read_note", {"id": 1})
                print("read", "error" if read.is_error else "ok")

anyio.run(main, sys.argv[1], sys.argv[2])
"#;
    let run = |token: &str| {
        std::process::Command::new("python3")
            .args(["-c", script, &url, token])
            .output()
            .unwrap()
    };
    let served = run(&alice);
    let said = String::from_utf8_lossy(&served.stdout);
    assert!(
        served.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&served.stderr)
    );
    assert!(said.contains("notes__read_note"), "{said}");
    assert!(said.contains("read ok"), "{said}");
    let refused = run("");
    assert!(!refused.status.success());
    assert!(
        !String::from_utf8_lossy(&refused.stdout).contains("tools"),
        "no tools without a token"
    );
}

/// What a client was told: progress messages, and how often its tools
/// changed.
#[derive(Clone, Default)]
struct Told {
    progress: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    changed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl rmcp::ClientHandler for Told {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap()
            .push(params.message.unwrap_or_default());
    }

    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<RoleClient>) {
        self.changed
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Over HTTP as over stdio, a held call tells its client it waits
/// (progress), and an operator's change tells the client its tools changed
/// (`notifications/tools/list_changed`, on the session's own stream).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_list_changed_reach_a_client_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    let (alice, _) = token(dir, "alice");
    let (_gateway, url) = listening(dir, &["--wait", "30"]).await;
    let told = Told::default();
    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(alice);
    let client = told
        .clone()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("the client connects");
    let held = write_in_background(client.peer(), "told");
    let (run, digest) = waiting(dir).await;
    let mut waited = 0;
    while told.progress.lock().unwrap().is_empty() {
        assert!(waited < 200, "no progress within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    let said = told.progress.lock().unwrap()[0].clone();
    assert!(said.contains(&run), "{said}");
    toolgate(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    let answered = held.await.unwrap();
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));

    toolgate(dir, &["server", "disable", "notes"]);
    let mut waited = 0;
    while told.changed.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(waited < 200, "no list_changed within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    assert!(client.list_all_tools().await.unwrap().is_empty());
    assert_eq!(lines(&ledger), 1);
    client.cancel().await.unwrap();
}

/// A client of the stateless protocol (2026-07-28) has no session: its
/// token is checked on every request, its person is the requester, and
/// revoked, its very next request is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_clients_token_is_checked_on_every_request() {
    use rmcp::model::ProtocolVersion;
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _};
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    let (alice, alice_id) = token(dir, "alice");
    let (_gateway, url) = listening(dir, &["--wait", "30"]).await;
    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(alice);
    let client = ()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("the client connects");
    let server = client.peer().peer_info().expect("the server is known");
    assert_eq!(server.protocol_version, ProtocolVersion::V_2026_07_28);
    assert!(!client.list_all_tools().await.unwrap().is_empty());
    let held = write_in_background(client.peer(), "stateless");
    let (run, digest) = waiting(dir).await;
    assert_eq!(
        json_of(dir, &["runs", "show", &run])["requested_by"],
        "alice"
    );
    toolgate(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    let answered = held.await.unwrap();
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1);

    // Listening for changes, then revoked: the stream ends, and the
    // changes after it are not told.
    let mut subscription = client
        .peer()
        .listen(
            rmcp::model::SubscriptionFilter::builder()
                .tools_list_changed()
                .build(),
        )
        .await
        .expect("the gateway accepts the subscription");
    toolgate(dir, &["gateway", "token", "revoke", &alice_id]);
    tokio::time::sleep(toolgate_gateway::http::SWEEP_EVERY + Duration::from_secs(2)).await;
    common::approval_off(dir, "notes");
    let told = tokio::time::timeout(Duration::from_secs(10), subscription.next()).await;
    assert!(
        !matches!(
            told,
            Ok(Ok(Some(
                rmcp::model::ServerNotification::ToolListChangedNotification(_)
            )))
        ),
        "a revoked token's stream was told a change: {told:?}"
    );
    assert!(client.list_all_tools().await.is_err());
    let refused = client
        .peer()
        .call_tool(
            rmcp::model::CallToolRequestParams::new("notes__write_note")
                .with_arguments(json!({"text": "after"}).as_object().unwrap().clone()),
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(lines(&ledger), 1);
}

/// The stdio gateway's bounds hold over HTTP: a body past
/// [`toolgate_gateway::stdio::MAX_LINE_LENGTH`] and JSON nested deeper than
/// it reads are refused, reaching nothing; a held call is answered once its
/// wait is over, naming its run, which stays decidable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_gateways_bounds_hold_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    let (alice, _) = token(dir, "alice");
    let bearer = format!("Bearer {alice}");
    let (_gateway, url) = listening(dir, &["--wait", "1"]).await;
    let session = opened(&url, &alice).await;
    let headers = [
        ("authorization", bearer.as_str()),
        ("mcp-session-id", session.as_str()),
    ];

    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"notes__write_note","arguments":{{"text":"x","deep":{}{}}}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"notes__write_note","arguments":{{"text":"{}"}}}}}}"#,
        "x".repeat(17 * 1024 * 1024)
    );
    // rmcp answers a body it cannot read `415`, one past the bound `413`.
    for (body, status) in [(deep, 415), (huge, 413)] {
        let mut request = reqwest::Client::new()
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), status);
    }
    let shown = json_of(dir, &["runs", "list"]);
    assert!(shown.as_array().unwrap().is_empty(), "{shown}");

    let (status, _, body) = post(&url, &headers, &write_call(7)).await;
    assert_eq!(status, 200, "{body}");
    let (run, _) = waiting(dir).await;
    assert!(
        body.contains("\"isError\":true") && body.contains(&run),
        "{body}"
    );
    assert_eq!(lines(&ledger), 0);
}

/// Revoking a token ends the sessions it opened, within the gateway's
/// sweep: a call it holds stops waiting, and its run stays, decidable —
/// decided, nothing runs until the same call is asked again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_a_token_ends_its_sessions_and_their_held_calls() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    let (alice, alice_id) = token(dir, "alice");
    let (_gateway, url) = listening(dir, &["--wait", "40"]).await;
    let client = client(&url, &alice).await.expect("the client connects");
    let peer = client.peer().clone();
    let held = tokio::spawn(async move {
        peer.call_tool(
            rmcp::model::CallToolRequestParams::new("notes__write_note")
                .with_arguments(json!({"text": "revoked"}).as_object().unwrap().clone()),
        )
        .await
    });
    let (run, digest) = waiting(dir).await;
    toolgate(dir, &["gateway", "token", "revoke", "alice"]);
    let ended = tokio::time::timeout(
        toolgate_gateway::http::SWEEP_EVERY + Duration::from_secs(10),
        held,
    )
    .await
    .expect("the held call stops waiting once its session ended")
    .unwrap();
    // Answered that it waits, or cut off with its session.
    if let Ok(answered) = ended {
        assert_eq!(answered.is_error, Some(true), "{}", text(&answered));
        assert!(text(&answered).contains(&run), "{}", text(&answered));
    }
    let listed = json_of(dir, &["gateway", "token", "list"]);
    assert_eq!(listed[0]["id"], alice_id.as_str());
    assert!(listed[0]["revoked_at"].is_i64(), "{listed}");
    let shown = json_of(dir, &["runs", "show", &run]);
    assert_eq!(shown["state"], "open", "{shown}");
    toolgate(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(lines(&ledger), 0, "nothing runs until asked again");
}

/// A client that shows forms and approves each one it is shown.
#[derive(Clone, Default)]
struct Approves(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl rmcp::ClientHandler for Approves {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut capabilities = rmcp::model::ClientCapabilities::default();
        capabilities.elicitation = Some(rmcp::model::ElicitationCapability::default());
        let mut config = rmcp::model::ClientConfig::default();
        config.capabilities = capabilities;
        config
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::model::ErrorData> {
        if let rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.0.lock().unwrap().push(message);
        }
        let mut answer = rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept);
        answer.content = Some(json!({"decision": "approve"}));
        Ok(answer)
    }
}

/// Where the operator turned elicitation on for a server, the client's own
/// user decides in a form over HTTP as over stdio — recorded as the token's
/// person, through the elicitation channel; under four eyes no form is
/// sent, and the call waits for someone else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_decides_as_the_tokens_person_only_where_the_operator_allows_it() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    toolgate(dir, &["server", "elicitation", "notes", "on"]);
    let (alice, _) = token(dir, "alice");
    for (args, forms) in [
        (&["--wait", "20"][..], 1),
        (&["--wait", "2", "--four-eyes"][..], 0),
    ] {
        let (_gateway, url) = listening(dir, args).await;
        let approves = Approves::default();
        let config =
            StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(alice.clone());
        let client = approves
            .clone()
            .serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("the client connects");
        let text_of = if forms == 1 { "formed" } else { "four eyes" };
        let answered = call(client.peer(), "notes__write_note", json!({"text": text_of})).await;
        let shown = approves.0.lock().unwrap().clone();
        assert_eq!(shown.len(), forms, "{args:?}: {shown:?}");
        if forms == 1 {
            assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
            assert!(shown[0].contains("alice"), "{}", shown[0]);
            let runs = json_of(dir, &["runs", "list", "--all"]);
            let run = runs[0]["run"].as_str().unwrap().to_owned();
            let decisions = json_of(dir, &["runs", "show", &run])["decisions"].clone();
            assert_eq!(decisions[0]["by"], "alice", "{decisions}");
            assert_eq!(decisions[0]["channel"], "elicitation", "{decisions}");
            assert_eq!(lines(&ledger), 1);
        } else {
            assert_eq!(answered.is_error, Some(true), "{}", text(&answered));
            assert_eq!(lines(&ledger), 1, "not run under four eyes");
        }
        client.cancel().await.unwrap();
    }
}

/// A client that ends its session while its call is held leaves the run
/// decidable and unrun, as over stdio: a decision taken after that runs
/// nothing until the same call is asked again — by a new session — and
/// then runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ended_while_its_call_is_held_leaves_the_run_decidable_and_unrun() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    let (alice, _) = token(dir, "alice");
    let (_gateway, url) = listening(dir, &["--wait", "30"]).await;
    let first = client(&url, &alice).await.expect("the client connects");
    let peer = first.peer().clone();
    let held = tokio::spawn(async move {
        peer.call_tool(
            rmcp::model::CallToolRequestParams::new("notes__write_note")
                .with_arguments(json!({"text": "left"}).as_object().unwrap().clone()),
        )
        .await
    });
    let (run, digest) = waiting(dir).await;
    // The client goes away: its session ends (`DELETE`).
    first.cancel().await.unwrap();
    held.abort();
    tokio::time::sleep(Duration::from_millis(500)).await;
    toolgate(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(lines(&ledger), 0, "nothing runs until asked again");
    let second = client(&url, &alice).await.expect("the client connects");
    let answered = call(second.peer(), "notes__write_note", json!({"text": "left"})).await;
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1, "ran once");
    second.cancel().await.unwrap();
}
