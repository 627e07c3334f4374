//! What the browser tests share: the inbox started as the command line
//! starts it, chromedriver and a headless Chromium session, a page's source
//! once it holds a text, screenshots under the target directory, and a
//! server on another port of 127.0.0.1. Included by the browser tests only
//! (`#[path]`), so the other test binaries build without it.
#![allow(dead_code, reason = "each browser test uses part of it")]

use std::io::{BufRead as _, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder};
use serde_json::{Map, Value, json};

/// A child process killed when the test ends, however it ends.
pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free port on 127.0.0.1.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `toolgate inbox` on a port the system picks; its URL.
pub(crate) fn inbox(dir: &Path) -> (Killed, String) {
    inbox_with(dir, "127.0.0.1:0", &[])
}

/// `toolgate inbox --listen LISTEN EXTRA…`; the URL it says it is at.
pub(crate) fn inbox_with(dir: &Path, listen: &str, extra: &[&str]) -> (Killed, String) {
    let mut child = crate::common::command(dir)
        .args(["inbox", "--listen", listen])
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    (Killed(child), url)
}

/// chromedriver, listening; its URL.
pub(crate) fn chromedriver() -> (Killed, String) {
    let port = free_port();
    let child = Killed(
        Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver runs (Debian's chromium-driver; `.ci/run` installs it)"),
    );
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return (child, format!("http://127.0.0.1:{port}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("chromedriver does not listen");
}

pub(crate) async fn browser(webdriver: &str) -> Client {
    browser_with(webdriver, &[]).await
}

/// A Chromium session with `extra` switches.
pub(crate) async fn browser_with(webdriver: &str, extra: &[&str]) -> Client {
    let mut args = vec![
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1200,1600",
    ];
    args.extend_from_slice(extra);
    let mut capabilities = Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": "/usr/bin/chromium",
            "args": args,
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(capabilities)
        .connect(webdriver)
        .await
        .expect("a Chromium session")
}

pub(crate) fn screenshots() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("inbox-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub(crate) async fn snap(client: &Client, name: &str) {
    let png = client.screenshot().await.unwrap();
    std::fs::write(screenshots().join(format!("{name}.png")), png).unwrap();
}

/// The page's source once it holds `text`: a click that submits a form
/// returns before the page it leads to has loaded.
pub(crate) async fn page_with(client: &Client, text: &str) -> String {
    for _ in 0..100 {
        let source = client.source().await.unwrap();
        if source.contains(text) {
            return source;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no page with {text:?}: {}", client.source().await.unwrap());
}

pub(crate) fn json_of(dir: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&crate::common::toolgate(
        dir,
        &[&["--json"][..], args].concat(),
    ))
    .unwrap()
}

/// A server on another port of 127.0.0.1 that answers one request with
/// `page`.
pub(crate) fn another_port(page: String) -> (u16, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    (port, handle)
}

/// `toolgate inbox --listen LISTEN EXTRA…`; the first URL of `scheme`
/// (`http` or `https`) it says it is at.
pub(crate) fn inbox_serving(
    dir: &Path,
    listen: &str,
    extra: &[&str],
    scheme: &str,
) -> (Killed, String) {
    let mut child = crate::common::command(dir)
        .args(["inbox", "--listen", listen])
        .args(extra)
        .stdout(Stdio::piped())
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

/// Signs `client` in with a link `toolgate operator add` printed: its
/// page, then its button. The address of the session's pages, without
/// its trailing slash.
pub(crate) async fn signed_in(client: &Client, link: &str) -> String {
    client.goto(link).await.unwrap();
    client
        .find(fantoccini::Locator::Css("button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    page_with(client, "signed in as").await;
    let base = client.current_url().await.unwrap().to_string();
    assert!(base.contains("/s/"), "the session's pages: {base}");
    base.trim_end_matches('/').to_owned()
}

/// Clicks the first element `selector` (CSS) finds.
pub(crate) async fn click(client: &Client, selector: &str) {
    client
        .find(fantoccini::Locator::Css(selector))
        .await
        .unwrap_or_else(|error| panic!("no {selector}: {error}"))
        .click()
        .await
        .unwrap();
}

/// Clicks the button whose text holds `text`.
pub(crate) async fn click_button(client: &Client, text: &str) {
    let xpath = format!("//button[contains(., {text:?})]");
    client
        .find(fantoccini::Locator::XPath(&xpath))
        .await
        .unwrap_or_else(|error| panic!("no button {text:?}: {error}"))
        .click()
        .await
        .unwrap();
}

/// Scrolls the first heading whose text is `heading` to the top of the
/// window, for a screenshot of what follows it.
pub(crate) async fn scroll_to_heading(client: &Client, heading: &str) {
    client
        .execute(
            "const h = [...document.querySelectorAll('h1, h2, h3')].find(h => h.textContent.includes(arguments[0])); if (h) { h.scrollIntoView(); } return !!h;",
            vec![json!(heading)],
        )
        .await
        .unwrap();
}

/// The base64 SHA-256 of a certificate's public key (its SPKI), made by
/// `openssl` in the certificate's directory: what Chromium's
/// `--ignore-certificate-errors-spki-list` takes, trusting that one key
/// and nothing else.
pub(crate) fn spki_pin(cert: &Path) -> String {
    let dir = cert.parent().unwrap();
    let openssl = |args: &[&str]| {
        let output = Command::new("openssl")
            .current_dir(dir)
            .args(args)
            .output()
            .expect("openssl runs");
        assert!(
            output.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    };
    let cert = cert.to_str().unwrap();
    openssl(&["x509", "-in", cert, "-pubkey", "-noout", "-out", "spki.pem"]);
    openssl(&[
        "pkey", "-pubin", "-in", "spki.pem", "-outform", "der", "-out", "spki.der",
    ]);
    openssl(&[
        "dgst",
        "-sha256",
        "-binary",
        "-out",
        "spki.sha256",
        "spki.der",
    ]);
    let pin = openssl(&["base64", "-A", "-in", "spki.sha256"]);
    String::from_utf8(pin).unwrap().trim().to_owned()
}
