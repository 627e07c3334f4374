//! `toolgate operator`: an operator added gets a one-time sign-in link
//! (its secret shown once, never stored); listed with their live sessions;
//! revoked, every session and link of theirs ends.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use serde_json::Value;

mod common;
use common::toolgate;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

#[test]
fn operators_are_added_with_a_link_listed_and_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let added: Value = serde_json::from_str(&toolgate(
        dir,
        &[
            "--json",
            "operator",
            "add",
            "Alice",
            "--public-url",
            "https://inbox.example/",
        ],
    ))
    .unwrap();
    assert_eq!(added["operator"], "Alice");
    let link = added["link"].as_str().unwrap();
    let secret = link
        .strip_prefix("https://inbox.example/sign-in?token=")
        .unwrap_or_else(|| panic!("{link}"));
    assert_eq!(secret.len(), 64);
    assert!(secret.chars().all(|c| c.is_ascii_hexdigit()));
    // The database never holds the secret itself.
    // The database (on SQLite: its file and its write-ahead log) never
    // holds the secret itself.
    for file in ["toolgate.db", "toolgate.db-wal"] {
        let bytes = std::fs::read(dir.join(file)).unwrap_or_default();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "the secret is stored in {file}"
        );
    }

    let said = toolgate(dir, &["operator", "add", "bob"]);
    assert!(
        said.contains("http://127.0.0.1:8640/sign-in?token="),
        "{said}"
    );
    let listed = toolgate(dir, &["operator", "list"]);
    assert!(
        listed.contains("OPERATOR") && listed.contains("Alice") && listed.contains("active"),
        "{listed}"
    );

    toolgate(dir, &["operator", "revoke", "alice"]);
    let listed: Value =
        serde_json::from_str(&toolgate(dir, &["--json", "operator", "list"])).unwrap();
    assert!(listed[0]["revoked_at"].is_i64(), "{listed}");
    assert!(listed[1]["revoked_at"].is_null(), "{listed}");

    let refused = common::command(dir)
        .args(["operator", "revoke", "nobody"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("no operator `nobody`"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let refused = common::command(dir)
        .args(["operator", "add", "bob\u{202e}"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("unusable operator name"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

/// `toolgate inbox` listens on loopback only, and serves: a page asked for
/// without a session sends the browser to sign in.
#[test]
fn the_inbox_serves_on_loopback_only() {
    use std::io::{BufRead as _, Read as _, Write as _};
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let refused = common::command(dir)
        .args(["inbox", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("loopback address only"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    let mut inbox = common::command(dir)
        .args(["inbox", "--listen", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(inbox.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let address = first
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "GET / HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    inbox.kill().unwrap();
    let _ = inbox.wait();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.contains("toolgate operator add"),
        "how to get in: {answer}"
    );
    assert!(answer.contains("default-src 'none'"), "{answer}");
}
