//! `toolgate gateway --listen ADDR --behind-proxy --proxy-secret-file PATH`:
//! the gateway in plain HTTP behind a reverse proxy that proves itself
//! with a shared secret on every request. The proxy here is a forwarding
//! one written in the test (hyper's client under axum, streaming both
//! ways), which sets the secret header as nginx's `proxy_set_header` does
//! and passes the client's `Host` on. A call through it runs as the
//! token's person; a request that reaches the gateway without the secret,
//! with another one, or with it twice is refused; the token is required
//! through the proxy as ever; a secret file that does not do refuses to
//! start, and so does a non-loopback listen without TLS or a proxy. On a
//! Unix socket (`--listen unix:PATH`), the socket is the gateway's
//! account's only (0600), and a request over it still needs its token.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse as _, Response};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use rmcp::ServiceExt as _;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use toolgate_store::proxy::SECRET_HEADER;

mod common;
use common::gateway::{call, json_of, lines, listening_on, notes, text};
use common::toolgate;

/// The secret the proxy and the gateway share.
const SECRET: &str = "9f2c1d7e5b3a48c6a0e4d2b7f1c3e5a9";

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

/// A port free a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The forwarding proxy: where it forwards to, and the secret it adds.
struct Forwarding {
    upstream: SocketAddr,
    secret: HeaderValue,
    client: Client<HttpConnector, Body>,
}

/// Every request on to the gateway, the secret set (whatever the client
/// sent in its place), the client's `Host` kept; the answer streamed back.
async fn forward(State(proxy): State<Arc<Forwarding>>, mut request: Request) -> Response {
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    *request.uri_mut() = format!("http://{}{path}", proxy.upstream).parse().unwrap();
    request
        .headers_mut()
        .insert(SECRET_HEADER, proxy.secret.clone());
    match proxy.client.request(request).await {
        Ok(response) => response.map(Body::new),
        Err(error) => (StatusCode::BAD_GATEWAY, error.to_string()).into_response(),
    }
}

/// A proxy on a loopback port of its own that forwards to `upstream` with
/// `secret`: its address. It serves until the test's runtime ends.
async fn proxy(upstream: SocketAddr, secret: &str) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let at = listener.local_addr().unwrap();
    let state = Arc::new(Forwarding {
        upstream,
        secret: HeaderValue::from_str(secret).unwrap(),
        client: Client::builder(hyper_util::rt::TokioExecutor::new()).build_http(),
    });
    let router = axum::Router::new().fallback(forward).with_state(state);
    tokio::spawn(async move { axum::serve(listener, router).await });
    at
}

/// The secret written to a file in `dir`, with a final newline as an
/// editor leaves it.
fn secret_file(dir: &Path, secret: &str) -> String {
    let path = dir.join("proxy-secret");
    std::fs::write(&path, format!("{secret}\n")).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A gateway behind a proxy: on every address (`0.0.0.0`) at a port of its
/// own, reached by the proxy at loopback; its process, the proxy's URL
/// (`…/mcp`, what clients are given) and the address the gateway listens
/// on at loopback.
async fn behind_proxy(dir: &Path, args: &[&str]) -> (tokio::process::Child, String, SocketAddr) {
    let port = free_port();
    let direct: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let at = proxy(direct, SECRET).await;
    let public = format!("http://{at}");
    let file = secret_file(dir, SECRET);
    let (child, url) = listening_on(
        dir,
        &format!("0.0.0.0:{port}"),
        &[
            &[
                "--behind-proxy",
                "--proxy-secret-file",
                &file,
                "--public-url",
                &public,
            ][..],
            args,
        ]
        .concat(),
    )
    .await;
    assert_eq!(url, format!("{public}/mcp"), "it names the proxy's URL");
    // Listening by then: it said where it is once bound.
    (child, url, direct)
}

/// A token made for `person`.
fn token(dir: &Path, person: &str) -> String {
    json_of(dir, &["gateway", "token", "add", person])["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// An rmcp client of the gateway at `url`, sending `token`.
async fn client(url: &str, token: &str) -> RunningService<RoleClient, ()> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("the client connects")
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

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

/// An `initialize` POSTed to `url` with `headers` (each may repeat): its
/// status and body.
async fn initialized(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize().to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    // A stream is read only as far as its first answer.
    let mut body = String::new();
    let mut response = response;
    while let Ok(Some(chunk)) = tokio::time::timeout(Duration::from_secs(5), response.chunk())
        .await
        .unwrap_or(Ok(None))
    {
        body.push_str(&String::from_utf8_lossy(&chunk));
        if body.contains("\"jsonrpc\"") && body.ends_with('\n') {
            break;
        }
    }
    (status, body)
}

/// Through the proxy, a token's client lists the tools and its write is
/// held as a run whose requester is the token's person; approved, it runs
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_through_the_proxy_is_the_tokens_persons() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    let alice = token(dir, "alice");
    let (_gateway, url, _) = behind_proxy(dir, &["--wait", "20", "--user", "mallory"]).await;
    let client = client(&url, &alice).await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"notes__write_note".to_owned()), "{names:?}");

    let peer = client.peer().clone();
    let held = tokio::spawn(async move {
        call(
            &peer,
            "notes__write_note",
            json!({"text": "through the proxy"}),
        )
        .await
    });
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
    client.cancel().await.unwrap();
}

/// A request that reaches the gateway without coming through the proxy —
/// no secret, another of the same length, one of another length, an empty
/// one, the secret twice or beside another — is refused, 403, saying why,
/// even with a live token and the public host; with the secret, the
/// host and origin checks still hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_did_not_come_through_the_proxy_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let alice = token(dir, "alice");
    let bearer = format!("Bearer {alice}");
    let (_gateway, url, direct) = behind_proxy(dir, &[]).await;
    let public_host = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let direct_url = format!("http://{direct}/mcp");
    let mut same_length = SECRET.to_owned();
    same_length.replace_range(..1, "0");
    assert_eq!(same_length.len(), SECRET.len());
    let longer = format!("{SECRET}0");
    let shorter = &SECRET[..SECRET.len() - 1];
    let cases: [(&[&str], &str); 7] = [
        (&[], "carried no proxy secret"),
        (&[&same_length], "not the one shared"),
        (&[&longer], "not the one shared"),
        (&[shorter], "not the one shared"),
        (&[""], "not the one shared"),
        (&[SECRET, SECRET], "not the one shared"),
        (&[&same_length, SECRET], "not the one shared"),
    ];
    for (secrets, why) in cases {
        for host in [public_host.as_str(), &direct.to_string()] {
            let mut headers = vec![("authorization", bearer.as_str()), ("host", host)];
            headers.extend(secrets.iter().map(|s| (SECRET_HEADER, *s)));
            let (status, body) = initialized(&direct_url, &headers).await;
            assert_eq!(status, 403, "{secrets:?} at {host}: {body}");
            assert!(body.contains(why), "{secrets:?}: {body}");
            assert!(body.contains("behind a proxy"), "{body}");
            assert!(!body.contains(SECRET), "the secret is never told: {body}");
        }
    }
    // The secret proves the transport, nothing more: the host, the origin
    // and the token are checked as ever.
    let (status, body) = initialized(
        &direct_url,
        &[
            ("authorization", &bearer),
            ("host", "evil.example"),
            (SECRET_HEADER, SECRET),
        ],
    )
    .await;
    assert_eq!(status, 421, "{body}");
    let (status, body) = initialized(
        &direct_url,
        &[
            ("authorization", &bearer),
            ("host", &public_host),
            ("origin", "https://evil.example"),
            (SECRET_HEADER, SECRET),
        ],
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("origin"), "{body}");
    let (status, body) = initialized(
        &direct_url,
        &[("host", &public_host), (SECRET_HEADER, SECRET)],
    )
    .await;
    assert_eq!(status, 401, "{body}");
    // With the secret, the token and the public host: the proxy's way in.
    let (status, body) = initialized(
        &direct_url,
        &[
            ("authorization", &bearer),
            ("host", &public_host),
            (SECRET_HEADER, SECRET),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

/// The proxy proves the transport, not the person: through it, a request
/// without a token, with one that is none, or with a revoked one is
/// refused, 401; a client's own secret header changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_still_required_through_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let alice = token(dir, "alice");
    let carol = token(dir, "carol");
    toolgate(dir, &["gateway", "token", "revoke", "carol"]);
    let (_gateway, url, _) = behind_proxy(dir, &[]).await;
    let (status, body) = initialized(&url, &[]).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("Authorization: Bearer TOKEN"), "{body}");
    let (status, body) = initialized(&url, &[("authorization", "Bearer tgt_nothing")]).await;
    assert_eq!(status, 401, "{body}");
    let revoked = format!("Bearer {carol}");
    let (status, body) = initialized(&url, &[("authorization", &revoked)]).await;
    assert_eq!(status, 401, "{body}");
    // A client that sends a secret of its own: the proxy's replaces it.
    let (status, body) = initialized(&url, &[(SECRET_HEADER, "the client's own guess")]).await;
    assert_eq!(status, 401, "{body}");
    let bearer = format!("Bearer {alice}");
    let (status, body) = initialized(
        &url,
        &[("authorization", &bearer), (SECRET_HEADER, "a guess")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

/// `toolgate ARGS…` over `dir`, which must fail: its exit code and what it
/// said on standard error.
fn refused(dir: &Path, args: &[&str]) -> (i32, String) {
    let output = common::command(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success(), "{args:?} started");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Nothing starts beyond loopback in plain HTTP without a stated proxy;
/// with one, nothing starts on a secret that does not do — too short, a
/// file that cannot be read — and the refusal names the file.
#[test]
fn a_proxy_is_stated_with_a_secret_that_does_or_nothing_starts() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (code, said) = refused(dir, &["gateway", "--listen", "0.0.0.0:0"]);
    assert_eq!(code, 3, "{said}");
    assert!(said.contains("--tls-cert PATH --tls-key PATH"), "{said}");
    assert!(said.contains("--behind-proxy"), "{said}");
    // The same with a public URL: that alone is no protection.
    let (code, said) = refused(
        dir,
        &[
            "gateway",
            "--listen",
            "0.0.0.0:0",
            "--public-url",
            "https://gateway.example.com",
        ],
    );
    assert_eq!(code, 3, "{said}");
    assert!(said.contains("--behind-proxy"), "{said}");

    let short = dir.join("short");
    std::fs::write(&short, "too short\n").unwrap();
    let missing = dir.join("missing");
    let unreadable_dir = dir.to_path_buf();
    for (file, why) in [
        (
            &short,
            "the proxy's secret is 9 bytes long: it must be at least 16",
        ),
        (&missing, "cannot read the proxy's secret from"),
        (&unreadable_dir, "cannot read the proxy's secret from"),
    ] {
        for listen in ["0.0.0.0:0", "127.0.0.1:0"] {
            let (code, said) = refused(
                dir,
                &[
                    "gateway",
                    "--listen",
                    listen,
                    "--behind-proxy",
                    "--proxy-secret-file",
                    file.to_str().unwrap(),
                    "--public-url",
                    "https://gateway.example.com",
                ],
            );
            assert_eq!(code, 3, "{said}");
            assert!(said.contains(why), "{why}: {said}");
            assert!(
                said.contains(file.to_str().unwrap()),
                "names the file: {said}"
            );
        }
    }
    // The proxy is stated with its secret and the address clients are given.
    let good = secret_file(dir, SECRET);
    for args in [
        &["gateway", "--listen", "0.0.0.0:0", "--behind-proxy"][..],
        &[
            "gateway",
            "--listen",
            "0.0.0.0:0",
            "--behind-proxy",
            "--proxy-secret-file",
            &good,
        ][..],
        &[
            "gateway",
            "--listen",
            "0.0.0.0:0",
            "--proxy-secret-file",
            &good,
        ][..],
    ] {
        let (code, said) = refused(dir, args);
        assert_eq!(code, 2, "{args:?}: {said}");
    }
}

/// A client that reaches every URL through the Unix socket `path`.
#[cfg(unix)]
fn over_socket(path: &Path) -> reqwest::Client {
    reqwest::Client::builder()
        .unix_socket(path)
        .build()
        .unwrap()
}

/// An `initialize` POSTed through `client` with `headers`: its status and
/// body.
#[cfg(unix)]
async fn initialized_with(client: &reqwest::Client, headers: &[(&str, &str)]) -> (u16, String) {
    let mut request = client
        .post("http://localhost/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize().to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let mut body = String::new();
    let mut response = response;
    while let Ok(Some(chunk)) = tokio::time::timeout(Duration::from_secs(5), response.chunk())
        .await
        .unwrap_or(Ok(None))
    {
        body.push_str(&String::from_utf8_lossy(&chunk));
        if body.contains("\"jsonrpc\"") && body.ends_with('\n') {
            break;
        }
    }
    (status, body)
}

/// `--listen unix:PATH`: a socket only the gateway's account may open
/// (0600); a call over it runs as the token's person, and a request
/// without a live token, or naming another host, is refused as on a port.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_unix_socket_only_its_account_connects_and_a_token_is_still_required() {
    use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};

    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    notes(dir, &ledger, &[]);
    let alice = token(dir, "alice");
    let socket = dir.join("gateway.sock");
    let listen = format!("unix:{}", socket.display());
    let (_gateway, url) = listening_on(dir, &listen, &["--wait", "20", "--user", "mallory"]).await;
    assert_eq!(url, "http://localhost/mcp");
    let meta = std::fs::symlink_metadata(&socket).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);

    let http = over_socket(&socket);
    let (status, body) = initialized_with(&http, &[]).await;
    assert_eq!(status, 401, "{body}");
    let bearer = format!("Bearer {alice}");
    let (status, body) = initialized_with(
        &http,
        &[("authorization", &bearer), ("host", "evil.example")],
    )
    .await;
    assert_eq!(status, 421, "{body}");
    let (status, body) = initialized_with(&http, &[("authorization", &bearer)]).await;
    assert_eq!(status, 200, "{body}");

    // rmcp's client over the socket: the write is alice's, held, then run.
    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(alice);
    let client = ()
        .serve(StreamableHttpClientTransport::with_client(
            http.clone(),
            config,
        ))
        .await
        .unwrap();
    let peer = client.peer().clone();
    let held = tokio::spawn(async move {
        call(
            &peer,
            "notes__write_note",
            json!({"text": "over the socket"}),
        )
        .await
    });
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
    client.cancel().await.unwrap();
}

/// A socket a gateway listens on, or a file that is no socket, refuses to
/// start; a socket a killed gateway left is replaced; behind a proxy on
/// the socket, the secret and the token are both required; interrupted,
/// the gateway removes its socket.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_is_replaced_only_when_stale_and_removed_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let alice = token(dir, "alice");
    let bearer = format!("Bearer {alice}");
    let socket = dir.join("gateway.sock");
    let listen = format!("unix:{}", socket.display());
    let (mut gateway, _) = listening_on(dir, &listen, &[]).await;
    let http = over_socket(&socket);

    // Another gateway on the socket in use: refused, the first untouched.
    let (code, said) = refused(dir, &["gateway", "--listen", &listen]);
    assert_eq!(code, 3, "{said}");
    assert!(
        said.contains("another process listens on the socket"),
        "{said}"
    );
    let (status, _) = initialized_with(&http, &[("authorization", &bearer)]).await;
    assert_eq!(status, 200);

    // Killed, its socket stays; the next gateway replaces it.
    gateway.kill().await.unwrap();
    assert!(
        std::fs::symlink_metadata(&socket).is_ok(),
        "a killed gateway leaves its socket"
    );
    let file = secret_file(dir, SECRET);
    let (mut gateway, _) = listening_on(
        dir,
        &listen,
        &[
            "--behind-proxy",
            "--proxy-secret-file",
            &file,
            "--public-url",
            "http://gateway.example.com",
        ],
    )
    .await;
    let http = over_socket(&socket);
    // Behind a proxy on the socket: its secret and the token, both.
    let public = [
        ("authorization", bearer.as_str()),
        ("host", "gateway.example.com"),
    ];
    let (status, body) = initialized_with(&http, &public).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("carried no proxy secret"), "{body}");
    let (status, body) = initialized_with(
        &http,
        &[("host", "gateway.example.com"), (SECRET_HEADER, SECRET)],
    )
    .await;
    assert_eq!(status, 401, "{body}");
    let (status, body) =
        initialized_with(&http, &[&public[..], &[(SECRET_HEADER, SECRET)]].concat()).await;
    assert_eq!(status, 200, "{body}");

    // Interrupted, it removes its socket.
    let pid = gateway.id().unwrap().to_string();
    let interrupted = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(interrupted.success());
    tokio::time::timeout(Duration::from_secs(20), gateway.wait())
        .await
        .expect("the gateway stops when interrupted")
        .unwrap();
    assert!(
        std::fs::symlink_metadata(&socket).is_err(),
        "its socket is removed"
    );

    // A file that is no socket is never replaced.
    std::fs::write(&socket, "a file of someone's\n").unwrap();
    let (code, said) = refused(dir, &["gateway", "--listen", &listen]);
    assert_eq!(code, 3, "{said}");
    assert!(said.contains("is not a socket"), "{said}");
    assert_eq!(
        std::fs::read_to_string(&socket).unwrap(),
        "a file of someone's\n"
    );
}
