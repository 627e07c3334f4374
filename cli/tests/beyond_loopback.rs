//! Serving beyond loopback: the inbox and the gateway over HTTPS with a
//! certificate made for the test (by `openssl`, a CA and a server
//! certificate signed by it), spoken to by reqwest and rmcp's client that
//! trust that CA alone; a non-loopback address without TLS (or, for the
//! inbox, a trusted proxy) refused at start, saying what to give; a
//! certificate or key that does not read refused naming its file.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Child, Stdio};

use rmcp::ServiceExt as _;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

mod common;
use common::gateway::json_of;
use common::tls::{Certs, certs};

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A client that trusts the test CA alone, following no redirect.
fn trusting(certs: &Certs) -> reqwest::Client {
    trusting_with(certs, reqwest::Client::builder())
}

fn trusting_with(certs: &Certs, builder: reqwest::ClientBuilder) -> reqwest::Client {
    let ca = reqwest::Certificate::from_pem(&std::fs::read(&certs.ca).unwrap()).unwrap();
    builder
        .tls_certs_only([ca])
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A port free a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `toolgate ARGS…` over `dir`, started; the process and the first URL of
/// `scheme` it says it is at.
fn started(dir: &Path, args: &[&str], scheme: &str) -> (Killed, String) {
    let mut child = common::command(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first
        .split_whitespace()
        .find(|word| word.starts_with(&format!("{scheme}://")))
        .unwrap_or_else(|| panic!("no {scheme} URL in {first:?}"))
        .trim_end_matches(['.', ','])
        .to_owned();
    (Killed(child), url)
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

#[test]
fn beyond_loopback_without_tls_nothing_starts_and_says_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (code, said) = refused(dir, &["gateway", "--listen", "0.0.0.0:0"]);
    assert_eq!(code, 3, "{said}");
    assert!(said.contains("--tls-cert PATH --tls-key PATH"), "{said}");

    let (code, said) = refused(dir, &["inbox", "--listen", "0.0.0.0:0", "--no-notify"]);
    assert_eq!(code, 3, "{said}");
    assert!(said.contains("--tls-cert PATH --tls-key PATH"), "{said}");
    assert!(said.contains("--behind-proxy"), "{said}");

    // With TLS, beyond loopback, the address clients are given is asked for.
    let certs = certs(dir);
    let tls = [
        "--tls-cert",
        certs.cert.to_str().unwrap(),
        "--tls-key",
        certs.key.to_str().unwrap(),
    ];
    let (code, said) = refused(
        dir,
        &[&["gateway", "--listen", "0.0.0.0:0"][..], &tls].concat(),
    );
    assert_eq!(code, 3, "{said}");
    assert!(said.contains("--public-url"), "{said}");
    // And an https one, when TLS is served.
    let (code, said) = refused(
        dir,
        &[
            &[
                "inbox",
                "--listen",
                "0.0.0.0:0",
                "--no-notify",
                "--public-url",
                "http://inbox.example.com",
            ][..],
            &tls,
        ]
        .concat(),
    );
    assert_eq!(code, 3, "{said}");
    assert!(said.contains("not an https:// URL"), "{said}");
}

#[test]
fn a_certificate_or_key_that_does_not_read_is_refused_naming_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let certs = certs(dir);
    let garbage = dir.join("garbage.pem");
    std::fs::write(&garbage, "not a certificate\n").unwrap();
    let missing = dir.join("missing.pem");
    let cases: [(&Path, &Path, &str); 4] = [
        (&garbage, &certs.key, "holds no certificate"),
        (&certs.cert, &garbage, "holds no private key"),
        (&certs.cert, &missing, "cannot read the TLS key file"),
        // The CA's key is not the server certificate's.
        (&certs.cert, &dir.join("ca.key"), "cannot be used together"),
    ];
    for (cert, key, why) in cases {
        for command in [&["gateway"][..], &["inbox", "--no-notify"][..]] {
            let (code, said) = refused(
                dir,
                &[
                    command,
                    &[
                        "--listen",
                        "127.0.0.1:0",
                        "--tls-cert",
                        cert.to_str().unwrap(),
                        "--tls-key",
                        key.to_str().unwrap(),
                    ][..],
                ]
                .concat(),
            );
            assert_eq!(code, 3, "{said}");
            assert!(said.contains(why), "{why}: {said}");
            let named = if why.contains("certificate") && !why.contains("together") {
                cert
            } else {
                key
            };
            assert!(
                said.contains(named.to_str().unwrap()),
                "names {}: {said}",
                named.display()
            );
        }
    }
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_over_https_serves_a_tokens_client_and_nothing_in_the_clear() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let certs = certs(dir);
    let token = json_of(dir, &["gateway", "token", "add", "alice"])["token"]
        .as_str()
        .unwrap()
        .to_owned();
    // Its public name, `gateway.test`, which the client resolves to the
    // address listened on.
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let public = format!("https://gateway.test:{port}");
    let (_gateway, url) = started(
        dir,
        &[
            "gateway",
            "--listen",
            &listen,
            "--public-url",
            &public,
            "--tls-cert",
            certs.cert.to_str().unwrap(),
            "--tls-key",
            certs.key.to_str().unwrap(),
        ],
        "https",
    );
    assert_eq!(url, format!("{public}/mcp"), "it names its public URL");
    let client = trusting_with(
        &certs,
        reqwest::Client::builder().resolve("gateway.test", listen.parse().unwrap()),
    );
    let initialized = |token: Option<&str>| {
        let mut request = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize().to_string());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    // The token's rules hold as on loopback.
    let without = initialized(None).await.unwrap();
    assert_eq!(without.status(), 401);
    let with = initialized(Some(&token)).await.unwrap();
    assert_eq!(with.status(), 200, "{:?}", with.text().await);
    // At the address listened on too; at another name, not.
    let at = |host: &str| {
        client
            .post(format!("https://{listen}/mcp"))
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .bearer_auth(&token)
            .body(initialize().to_string())
            .send()
    };
    assert_eq!(at(&listen).await.unwrap().status(), 200);
    assert_eq!(
        at(&format!("evil.test:{port}")).await.unwrap().status(),
        421
    );

    // rmcp's client, over HTTPS, trusting the test CA.
    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(token);
    let rmcp_client = ()
        .serve(StreamableHttpClientTransport::with_client(
            client.clone(),
            config,
        ))
        .await
        .unwrap();
    let tools = rmcp_client.list_all_tools().await.unwrap();
    assert!(tools.is_empty(), "no server is registered: {tools:?}");
    rmcp_client.cancel().await.unwrap();

    // Nothing in the clear, and no certificate but the one given.
    let plain = format!("http://{listen}/mcp");
    assert!(
        reqwest::Client::new()
            .post(&plain)
            .body(initialize().to_string())
            .send()
            .await
            .is_err(),
        "plain HTTP is not answered"
    );
    let untrusting = reqwest::Client::builder()
        .tls_certs_only([])
        .build()
        .unwrap();
    let error = untrusting
        .post(format!("https://{listen}/mcp"))
        .body(initialize().to_string())
        .send()
        .await
        .expect_err("a client that does not trust the certificate stops");
    assert!(error.is_connect(), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_over_https_signs_in_with_a_secure_cookie() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let certs = certs(dir);
    let (_inbox, url) = started(
        dir,
        &[
            "inbox",
            "--listen",
            "127.0.0.1:0",
            "--no-notify",
            "--tls-cert",
            certs.cert.to_str().unwrap(),
            "--tls-key",
            certs.key.to_str().unwrap(),
        ],
        "https",
    );
    let link = json_of(dir, &["operator", "add", "bob", "--public-url", &url])["link"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(link.starts_with(&format!("{url}/sign-in?token=")), "{link}");
    let token = link.split("token=").nth(1).unwrap().to_owned();
    let client = trusting(&certs);
    let page = client.get(&link).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let signed = client
        .post(format!("{url}/sign-in"))
        .header("origin", &url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status(), 303, "{:?}", signed.text().await);
    let cookie = signed.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.contains("Secure"), "{cookie}");
    let pages = signed.headers()["location"].to_str().unwrap().to_owned();
    let session = cookie.split(';').next().unwrap().to_owned();
    let list = client
        .get(format!("{url}{pages}"))
        .header("cookie", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(list.status(), 200);
    let body = list.text().await.unwrap();
    assert!(body.contains("bob"), "signed in as bob: {body}");
}
