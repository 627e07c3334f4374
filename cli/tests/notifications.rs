//! Notifications end to end: a real MCP client (rmcp) calls a write through
//! `toolgate gateway`, the call is held, and `toolgate notify run` delivers
//! what happened to real receivers on loopback — a webhook receiver and a
//! stand-in for Slack's incoming webhooks (Python's `http.server`), and an
//! SMTP server (Python's `aiosmtpd`). Signatures verify; hostile text
//! arrives inert; a sink's ceiling withholds arguments; a dispatcher killed
//! mid-delivery loses nothing and the receiver de-duplicates on the event's
//! id; a sink that is down or hangs never holds up a decision.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

mod common;
use common::gateway::{call, json_of, notes, session, text};
use common::{command, toolgate};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

/// What a model might write to fool a person reading a notification.
const HOSTILE: &str = "<!channel> <@U024BE7LH> <https://evil.example|click me> *bold* _it_ ~s~ `tick` &amp; <script>alert(1)</script> \u{202e}dlrow\r\nBcc: victim@example.com";

/// A signing secret, `whsec_` and base64, as the specification writes it.
const SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

/// A peer process on loopback, killed when dropped.
struct Peer {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Peer {
    /// `notify/tests/peers/SCRIPT`, started with a port file and a log in
    /// `dir`.
    fn start(dir: &Path, script: &str) -> Peer {
        let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../notify/tests/peers");
        let port_file = dir.join(format!("{script}.port"));
        let log = dir.join(format!("{script}.log"));
        #[allow(
            clippy::zombie_processes,
            reason = "the peer is killed and waited for when it is dropped"
        )]
        let child = Command::new("python3")
            .arg(peers.join(script))
            .arg(&port_file)
            .arg(&log)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 starts");
        for _ in 0..400 {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                return Peer {
                    child,
                    port: text.trim().parse().expect("a port"),
                    log,
                };
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!(
            "{script} did not start (the SMTP peer needs Python's aiosmtpd: `pip install aiosmtpd`)"
        );
    }

    /// Every record the peer logged so far.
    fn records(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect()
    }

    /// The records once there are at least `n`.
    fn wait_for(&self, n: usize) -> Vec<Value> {
        self.wait_for_path(None, n)
    }

    /// The records once at least `n` were sent to `path` (any, for none).
    fn wait_for_path(&self, path: Option<&str>, n: usize) -> Vec<Value> {
        for _ in 0..400 {
            let records = self.records();
            let sent = records
                .iter()
                .filter(|r| path.is_none_or(|p| r["path"] == p))
                .count();
            if sent >= n {
                return records;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("fewer than {n} records: {:?}", self.records());
    }
}

fn notify_once(dir: &Path) -> String {
    toolgate(
        dir,
        &[
            "notify",
            "run",
            "--once",
            "--inbox-url",
            "http://inbox.test:8640/",
        ],
    )
}

/// A webhook record's body, after its signature verified under the secret.
fn verified(record: &Value) -> Value {
    let mut headers = http::HeaderMap::new();
    for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
        headers.insert(name, record[name].as_str().expect(name).parse().unwrap());
    }
    let body = record["body"].as_str().unwrap();
    standardwebhooks::Webhook::new(SECRET)
        .unwrap()
        .verify(body.as_bytes(), &headers)
        .expect("the signature verifies");
    // Altered by one byte, it does not.
    let altered = body.replacen("run.", "run!", 1);
    assert!(
        standardwebhooks::Webhook::new(SECRET)
            .unwrap()
            .verify(altered.as_bytes(), &headers)
            .is_err()
    );
    serde_json::from_str(body).unwrap()
}

/// Every `mrkdwn` text of a Slack message, and every `plain_text` one.
fn slack_texts(message: &Value) -> (Vec<String>, Vec<String>) {
    fn walk(value: &Value, mrkdwn: &mut Vec<String>, plain: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                match (map.get("type").and_then(Value::as_str), map.get("text")) {
                    (Some("mrkdwn"), Some(Value::String(t))) => mrkdwn.push(t.clone()),
                    (Some("plain_text"), Some(Value::String(t))) => plain.push(t.clone()),
                    _ => {}
                }
                for v in map.values() {
                    walk(v, mrkdwn, plain);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, mrkdwn, plain)),
            _ => {}
        }
    }
    let (mut mrkdwn, mut plain) = (Vec::new(), Vec::new());
    walk(message, &mut mrkdwn, &mut plain);
    // The message's own text is parsed as mrkdwn.
    mrkdwn.push(message["text"].as_str().unwrap().to_owned());
    (mrkdwn, plain)
}

/// True when `text` is mrkdwn with nothing Slack would act on but the link
/// toolgate built: no `<`…`>` of anyone else's, no formatting characters
/// from a model.
fn inert_mrkdwn(text: &str) -> bool {
    let own_link = text.starts_with("<http://inbox.test:8640/runs/")
        && text.ends_with("|Open the run in the inbox>")
        && text.matches('<').count() == 1;
    own_link || !text.contains(['<', '>', '*', '_', '~', '`', '@', '!'])
}

/// The notes server registered and imported in `dir`, a webhook receiver
/// started, and the signing secret in a file: the receiver and the file.
fn set_up(dir: &Path) -> (Peer, PathBuf) {
    notes(dir, &dir.join("ledger.jsonl"), &[]);
    let hooks = Peer::start(dir, "receiver.py");
    let secret_file = dir.join("secret");
    std::fs::write(&secret_file, SECRET).unwrap();
    (hooks, secret_file)
}

/// `toolgate notify add webhook NAME` to `url`, signed with the secret in
/// `secret_file`, up to `max`.
fn add_webhook(dir: &Path, name: &str, url: &str, secret_file: &Path, max: &str) {
    toolgate(
        dir,
        &[
            "notify",
            "add",
            "webhook",
            name,
            "--url",
            url,
            "--secret-file",
            secret_file.to_str().unwrap(),
            "--max-data-class",
            max,
            "--as",
            "olga",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::too_many_lines, reason = "one story, step by step")]
async fn a_held_call_is_told_to_every_sink_signed_inert_and_within_its_ceiling() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (hooks, secret_file) = set_up(dir);
    let mail = Peer::start(dir, "smtp.py");
    std::fs::write(
        dir.join("slack-url"),
        format!("http://127.0.0.1:{}/slack\n", hooks.port),
    )
    .unwrap();
    let slack_file = dir.join("slack-url");
    let add = |args: &[&str]| {
        let mut all = vec!["notify", "add"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--as", "olga"]);
        toolgate(dir, &all)
    };
    let hook_url = format!("http://127.0.0.1:{}/ok", hooks.port);
    add_webhook(dir, "hook", &hook_url, &secret_file, "secret_adjacent");
    // The notes server's class is editor_content: above this sink's ceiling.
    add(&[
        "slack",
        "team",
        "--url-file",
        slack_file.to_str().unwrap(),
        "--max-data-class",
        "public_content",
    ]);
    add(&[
        "slack",
        "ops",
        "--url-file",
        slack_file.to_str().unwrap(),
        "--max-data-class",
        "editor_content",
    ]);
    let smtp = format!("smtp://127.0.0.1:{}", mail.port);
    add(&[
        "email",
        "mail",
        "--smtp",
        &smtp,
        "--from",
        "toolgate@example.com",
        "--to",
        "olga@example.com",
        "--max-data-class",
        "editor_content",
    ]);
    let listed = toolgate(dir, &["notify", "list"]);
    assert!(listed.contains("file "), "{listed}");
    assert!(
        !listed.contains("C2FVsBQIhrsc"),
        "no secret is shown: {listed}"
    );

    // A held write.
    let client = session(dir, &["--wait", "1"], ()).await;
    let held = call(client.peer(), "notes__write_note", json!({"text": HOSTILE})).await;
    assert!(text(&held).contains("waits for approval"), "{held:?}");
    let said = notify_once(dir);
    assert!(said.contains("4 delivered"), "{said}");

    // The webhook: signed, with the run, its call, its summary and link.
    let records = hooks.wait_for(3);
    let hook: Vec<&Value> = records.iter().filter(|r| r["path"] == "/ok").collect();
    let [hook] = hook.as_slice() else {
        panic!("one webhook: {records:?}")
    };
    let event = verified(hook);
    assert_eq!(event["type"], "run.waiting", "{event}");
    assert_eq!(event["id"], hook["webhook-id"], "{event}");
    let data = &event["data"];
    assert_eq!(data["waits_for"], "approval", "{event}");
    assert_eq!(data["requested_by"], "alice", "{event}");
    assert_eq!(data["data_class"], "editor_content", "{event}");
    assert_eq!(data["calls"][0]["tool"], "notes.write_note", "{event}");
    assert_eq!(data["calls"][0]["server"], "notes", "{event}");
    let summary = data["calls"][0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("<!channel>"),
        "the JSON carries the text: {summary}"
    );
    assert!(
        !summary.contains('\u{202e}'),
        "hidden characters shown: {summary}"
    );
    let run = data["run_id"].as_str().unwrap().to_owned();
    assert_eq!(
        data["link"],
        json!(format!("http://inbox.test:8640/runs/{run}")),
        "{event}"
    );
    let body = hook["body"].as_str().unwrap();
    assert!(!body.contains("sha256:"), "no digest in a message: {body}");

    // Slack: hostile text only in plain text; mrkdwn is toolgate's alone.
    let slack: Vec<Value> = records
        .iter()
        .filter(|r| r["path"] == "/slack")
        .map(|r| serde_json::from_str(r["body"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(slack.len(), 2, "{records:?}");
    let mut withheld = 0;
    for message in &slack {
        let (mrkdwn, plain) = slack_texts(message);
        for text in &mrkdwn {
            assert!(inert_mrkdwn(text), "mrkdwn a model wrote into: {text:?}");
        }
        let all = plain.join("\n");
        if all.contains("arguments withheld") {
            withheld += 1;
            assert!(!all.contains("<!channel>"), "{all}");
        } else {
            assert!(
                all.contains("<!channel>"),
                "the summary as plain text: {all}"
            );
        }
        assert_eq!(message["unfurl_links"], false, "{message}");
    }
    assert_eq!(
        withheld, 1,
        "the team sink is below editor_content: {slack:?}"
    );

    // Email: one message, headers whole, HTML escaped.
    let mails = mail.wait_for(1);
    let [mail_record] = mails.as_slice() else {
        panic!("one email: {mails:?}")
    };
    assert_eq!(mail_record["to"], json!(["olga@example.com"]));
    let raw = mail_record["data"].as_str().unwrap();
    let headers = raw.split("\r\n\r\n").next().unwrap_or(raw);
    assert!(!headers.to_lowercase().contains("bcc:"), "{headers}");
    assert!(headers.contains("waits for approval"), "{headers}");
    let unfolded = raw.replace("=\r\n", "").replace("=\n", "");
    let html = unfolded
        .split("Content-Type: text/html")
        .nth(1)
        .expect("an HTML part");
    assert!(
        html.contains("&lt;script&gt;"),
        "the HTML part escapes: {html}"
    );
    assert!(!html.contains("<script>"), "the HTML part escapes: {html}");

    // The operator raises the server's class: what is sent from now on
    // obeys it, though the run paused before.
    toolgate(
        dir,
        &["server", "set-data-class", "notes", "secret_adjacent"],
    );

    // Decided: the same sinks hear who decided; delivered once each.
    let shown = json_of(dir, &["runs", "show", &run]);
    let digest = shown["digest"].as_str().expect("a digest").to_owned();
    toolgate(
        dir,
        &[
            "runs", "deny", &run, "--digest", &digest, "--as", "bob", "--reason", "not now",
        ],
    );
    let said = notify_once(dir);
    assert!(said.contains("4 delivered"), "{said}");
    let records = hooks.wait_for(6);
    let decided: Vec<Value> = records
        .iter()
        .filter(|r| r["path"] == "/ok")
        .map(verified)
        .filter(|e| e["type"] == "run.decided")
        .collect();
    let [decided] = decided.as_slice() else {
        panic!("one decided event: {records:?}")
    };
    assert_eq!(decided["data"]["verdict"], "denied", "{decided}");
    assert_eq!(decided["data"]["decided_by"], json!(["bob"]), "{decided}");
    assert_eq!(decided["data"]["run_id"], json!(run), "{decided}");
    assert_ne!(decided["id"], event["id"], "a new event, a new id");
    assert_eq!(
        decided["data"]["data_class"], "secret_adjacent",
        "{decided}"
    );
    let slack_now: Vec<Value> = records
        .iter()
        .filter(|r| r["path"] == "/slack")
        .skip(2)
        .map(|r| serde_json::from_str(r["body"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(slack_now.len(), 2, "{records:?}");
    for message in &slack_now {
        let (_, plain) = slack_texts(message);
        assert!(
            plain.join("\n").contains("arguments withheld"),
            "above both Slack ceilings now: {message}"
        );
    }

    let status: Value =
        serde_json::from_str(&toolgate(dir, &["--json", "notify", "status"])).unwrap();
    for sink in status.as_array().unwrap() {
        assert_eq!(sink["pending"], 0, "{status}");
        assert_eq!(sink["delivered"], 2, "{status}");
    }
    drop(client);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::too_many_lines, reason = "one story, step by step")]
async fn a_dispatcher_killed_mid_delivery_loses_nothing_and_never_holds_a_decision_up() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (hooks, secret_file) = set_up(dir);
    for (name, path) in [("held", "hold"), ("down", "down")] {
        let url = format!("http://127.0.0.1:{}/{path}", hooks.port);
        add_webhook(dir, name, &url, &secret_file, "secret_adjacent");
    }
    // The receiver takes the request and does not answer while HOLD exists.
    let hold = hooks.log.parent().unwrap().join("HOLD");
    std::fs::write(&hold, "").unwrap();

    let client = session(dir, &["--wait", "1"], ()).await;
    let asked = call(client.peer(), "notes__write_note", json!({"text": "one"})).await;
    assert!(text(&asked).contains("waits for approval"), "{asked:?}");

    let dispatcher = || {
        command(dir)
            .args(["notify", "run", "--lease-secs", "1", "--poll-ms", "50"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the dispatcher starts")
    };
    let mut first = dispatcher();
    let records = hooks.wait_for_path(Some("/hold"), 1);
    let on_hold: Vec<&Value> = records.iter().filter(|r| r["path"] == "/hold").collect();
    let [taken] = on_hold.as_slice() else {
        panic!("the held sink was sent the event: {records:?}")
    };
    let id = taken["webhook-id"].as_str().unwrap().to_owned();

    // While a delivery hangs, a decision is recorded as ever.
    let run = verified(taken)["data"]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let shown = json_of(dir, &["runs", "show", &run]);
    let digest = shown["digest"].as_str().unwrap().to_owned();
    let approved = command(dir)
        .args(["runs", "approve", &run, "--digest", &digest, "--as", "bob"])
        .output()
        .unwrap();
    assert!(approved.status.success(), "{approved:?}");

    // Killed mid-delivery: nothing was marked delivered.
    first.kill().unwrap();
    first.wait().unwrap();
    std::fs::remove_file(&hold).unwrap();
    let status: Value =
        serde_json::from_str(&toolgate(dir, &["--json", "notify", "status"])).unwrap();
    let held_sink = status
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sink"] == "held")
        .unwrap()
        .clone();
    assert_eq!(held_sink["delivered"], 0, "{status}");

    // Restarted: the event is sent again under the same id, then the
    // decision's; a receiver that de-duplicates sees each once.
    let mut second = dispatcher();
    for _ in 0..400 {
        let status: Value =
            serde_json::from_str(&toolgate(dir, &["--json", "notify", "status"])).unwrap();
        let done = status
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["sink"] == "held" && s["pending"] == 0 && s["delivered"] == 2);
        if done {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    second.kill().unwrap();
    second.wait().unwrap();
    // Read after the status said so: a receiver logs before it answers.
    let deliveries: Vec<Value> = hooks
        .records()
        .into_iter()
        .filter(|r| r["path"] == "/hold")
        .collect();
    let ids: Vec<&str> = deliveries
        .iter()
        .map(|r| r["webhook-id"].as_str().unwrap())
        .collect();
    assert!(
        ids.iter().filter(|i| **i == id).count() >= 2,
        "sent again: {ids:?}"
    );
    let mut unique = ids.clone();
    unique.dedup();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(
        unique.len(),
        2,
        "two events, each id de-duplicated: {ids:?}"
    );
    let kinds: Vec<String> = deliveries
        .iter()
        .map(|r| verified(r)["type"].as_str().unwrap().to_owned())
        .collect();
    assert!(kinds.contains(&"run.decided".to_owned()), "{kinds:?}");

    // The sink that is down: failing, with the receiver's answer, retried.
    let status: Value =
        serde_json::from_str(&toolgate(dir, &["--json", "notify", "status"])).unwrap();
    let down = status
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sink"] == "down")
        .unwrap();
    assert_eq!(down["delivered"], 0, "{status}");
    assert!(down["failing"].as_i64().unwrap() >= 1, "{status}");
    assert!(
        down["last_error"].as_str().unwrap().contains("503"),
        "{status}"
    );
    let shown = toolgate(dir, &["notify", "status"]);
    assert!(
        shown.contains("FAILING") && shown.contains("down"),
        "{shown}"
    );
    drop(client);
}

#[test]
#[allow(clippy::too_many_lines, reason = "one refusal after another")]
fn a_sink_is_refused_with_the_reason_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let refused = |args: &[&str], why: &str| {
        let output = command(dir).args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(why), "{why}: {stderr}");
    };
    refused(
        &[
            "notify",
            "add",
            "webhook",
            "hook",
            "--url",
            "ftp://x.example/",
            "--secret-env",
            "S",
            "--max-data-class",
            "source_code",
            "--as",
            "olga",
        ],
        "http or https",
    );
    refused(
        &[
            "notify",
            "add",
            "webhook",
            "hook",
            "--url",
            "https://x.example/",
            "--secret-env",
            "S",
            "--max-data-class",
            "everything",
            "--as",
            "olga",
        ],
        "unknown data class",
    );
    refused(
        &[
            "notify",
            "add",
            "email",
            "mail",
            "--smtp",
            "smtp://user:pw@relay.example",
            "--from",
            "a@example.com",
            "--to",
            "b@example.com",
            "--max-data-class",
            "source_code",
            "--as",
            "olga",
        ],
        "carries credentials",
    );
    refused(
        &[
            "notify",
            "add",
            "email",
            "mail",
            "--smtp",
            "smtp://relay.example",
            "--from",
            "a@example.com",
            "--to",
            "b@example.com",
            "--smtp-user",
            "u",
            "--password-env",
            "P",
            "--max-data-class",
            "source_code",
            "--as",
            "olga",
        ],
        "unencrypted",
    );
    refused(
        &[
            "notify",
            "add",
            "slack",
            "Team!",
            "--url-env",
            "U",
            "--max-data-class",
            "source_code",
            "--as",
            "olga",
        ],
        "unusable sink name",
    );
    refused(
        &[
            "notify",
            "add",
            "email",
            "mail",
            "--smtp",
            "smtp://relay.example",
            "--from",
            "a@example.com",
            "--to",
            "b@example.com",
            "--max-data-class",
            "source_code",
            "--as",
            "olga",
        ],
        "loopback",
    );
    refused(
        &[
            "notify",
            "add",
            "email",
            "mail",
            "--smtp",
            "smtp://127.0.0.1",
            "--from",
            "a@example.com\r\nBcc: x@example.com",
            "--to",
            "b@example.com",
            "--max-data-class",
            "source_code",
            "--as",
            "olga",
        ],
        "not an email address",
    );
    refused(
        &[
            "notify",
            "add",
            "email",
            "mail",
            "--smtp",
            "smtp://127.0.0.1?tls=none&tls=required",
            "--from",
            "a@example.com",
            "--to",
            "b@example.com",
            "--max-data-class",
            "source_code",
            "--as",
            "olga",
        ],
        "takes no query",
    );
    refused(
        &[
            "notify",
            "add",
            "webhook",
            "hook",
            "--url",
            "https://u:p@x.example/",
            "--secret-env",
            "S",
            "--max-data-class",
            "source_code",
            "--as",
            "olga",
        ],
        "carries credentials",
    );
    refused(
        &[
            "notify",
            "add",
            "webhook",
            "hook",
            "--url",
            "https://x.example/",
            "--secret-env",
            "A=B",
            "--max-data-class",
            "source_code",
            "--as",
            "olga",
        ],
        "not an environment variable",
    );
    let short = dir.join("short");
    std::fs::write(&short, "whsec_QQ==").unwrap();
    refused(
        &[
            "notify",
            "add",
            "webhook",
            "hook",
            "--url",
            "https://x.example/",
            "--secret-file",
            short.to_str().unwrap(),
            "--max-data-class",
            "source_code",
            "--as",
            "olga",
        ],
        "fewer than the 24",
    );
    let listed = toolgate(dir, &["notify", "list"]);
    assert!(listed.contains("no sink"), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_sink_delays_only_its_own_deliveries() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (hooks, secret_file) = set_up(dir);
    // A relay that takes the connection and never says a word.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let relay = format!("smtp://127.0.0.1:{}", silent.local_addr().unwrap().port());
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        for connection in silent.incoming().take(16) {
            kept.push(connection);
        }
    });
    toolgate(
        dir,
        &[
            "notify",
            "add",
            "email",
            "hung",
            "--smtp",
            &relay,
            "--from",
            "a@example.com",
            "--to",
            "b@example.com",
            "--max-data-class",
            "secret_adjacent",
            "--as",
            "olga",
        ],
    );
    let url = format!("http://127.0.0.1:{}/ok", hooks.port);
    add_webhook(dir, "fast", &url, &secret_file, "secret_adjacent");
    let mut dispatcher = command(dir)
        .args(["notify", "run", "--poll-ms", "50"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the dispatcher starts");

    let client = session(dir, &["--wait", "1"], ()).await;
    for note in ["one", "two", "three"] {
        let asked = call(client.peer(), "notes__write_note", json!({"text": note})).await;
        assert!(text(&asked).contains("waits for approval"), "{asked:?}");
    }
    // Every event reaches the fast sink while the hung one holds its first.
    let records = hooks.wait_for_path(Some("/ok"), 3);
    dispatcher.kill().unwrap();
    dispatcher.wait().unwrap();
    assert_eq!(records.len(), 3, "{records:?}");
    let status: Value =
        serde_json::from_str(&toolgate(dir, &["--json", "notify", "status"])).unwrap();
    let hung = status
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sink"] == "hung")
        .unwrap();
    assert_eq!(hung["delivered"], 0, "{status}");
    assert_eq!(hung["pending"], 3, "{status}");
    drop(client);
}
