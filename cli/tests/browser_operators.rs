//! The inbox's operators in a real browser: Debian's Chromium, driven over
//! WebDriver (chromedriver), against `toolgate inbox` over a real store —
//! on SQLite, and again on PostgreSQL. Signing in over HTTPS with a
//! certificate Chromium trusts by its key alone (never every certificate),
//! the session's cookie `Secure`; a cookie of the session's name tossed in
//! by a page on another port of the host, which locks no one out; two
//! approvers, the second shown the first's edit and approving exactly
//! that, which is what runs; and a quarantined tool accepted from the
//! servers page as its diff showed it, a page whose diff went stale
//! refused. Each page is saved as a screenshot under the target directory
//! (`inbox-screenshots/`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::path::Path;

use fantoccini::Locator;
use serde_json::{Value, json};

#[path = "common/browser.rs"]
mod browsing;
mod common;
use browsing::{
    another_port, browser, browser_with, chromedriver, click, click_button, free_port, inbox,
    inbox_serving, json_of, page_with, scroll_to_heading, signed_in, snap, spki_pin,
};
use common::toolgate;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

/// The demo's run, left waiting: its id.
fn demo_run(dir: &Path, extra: &[&str]) -> String {
    toolgate(dir, &[&["demo", "--detach"][..], extra].concat());
    json_of(dir, &["runs", "list"])[0]["run"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The sign-in link `toolgate operator add NAME EXTRA…` prints for the
/// inbox at `url`.
fn link_for(dir: &Path, name: &str, url: &str, extra: &[&str]) -> String {
    json_of(
        dir,
        &[&["operator", "add", name, "--public-url", url][..], extra].concat(),
    )["link"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// An inbox serving HTTPS under its public name `gateway.test` (which the
/// browser resolves to 127.0.0.1), with a certificate a test CA signed.
/// Chromium trusts that certificate's key, and only it: a browser without
/// the pin stops at the certificate. The operator signs in with the
/// printed link, the session's cookie is `Secure`, and a decision from
/// the page is recorded as theirs, through the inbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_https_an_operator_signs_in_with_a_secure_cookie_and_decides() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let run = demo_run(dir, &[]);
    let certs = common::tls::certs(dir);
    let port = free_port();
    let public = format!("https://gateway.test:{port}");
    let (_inbox, url) = inbox_serving(
        dir,
        &format!("127.0.0.1:{port}"),
        &[
            "--tls-cert",
            certs.cert.to_str().unwrap(),
            "--tls-key",
            certs.key.to_str().unwrap(),
            "--public-url",
            &public,
        ],
        "https",
    );
    assert_eq!(url, public);
    let link = link_for(dir, "bob", &public, &[]);
    assert!(
        link.starts_with(&format!("{public}/sign-in?token=")),
        "{link}"
    );
    let resolve = "--host-resolver-rules=MAP gateway.test 127.0.0.1";
    let (_driver, webdriver) = chromedriver();

    // Without the pin, Chromium stops at the certificate: the sign-in page
    // is never shown, and the one-time link stays unused.
    let untrusting = browser_with(&webdriver, &[resolve]).await;
    let _ = untrusting.goto(&link).await;
    let stopped = untrusting.source().await.unwrap();
    assert!(!stopped.contains("action=\"/sign-in\""), "{stopped}");
    assert!(stopped.contains("ERR_CERT_AUTHORITY_INVALID"), "{stopped}");
    snap(&untrusting, "op-1-untrusted-certificate").await;
    untrusting.close().await.unwrap();

    // Pinned to the server certificate's key.
    let pin = format!(
        "--ignore-certificate-errors-spki-list={}",
        spki_pin(&certs.cert)
    );
    let client = browser_with(&webdriver, &[resolve, &pin]).await;
    client.goto(&link).await.unwrap();
    page_with(&client, "action=\"/sign-in\"").await;
    // That key only: another certificate the same CA would not sign
    // differently — a key of its own — is not trusted by the pin.
    let other = dir.join("other");
    std::fs::create_dir(&other).unwrap();
    let other = common::tls::certs(&other);
    let (_other_inbox, other_url) = inbox_serving(
        dir,
        "127.0.0.1:0",
        &[
            "--tls-cert",
            other.cert.to_str().unwrap(),
            "--tls-key",
            other.key.to_str().unwrap(),
        ],
        "https",
    );
    let _ = client.goto(&format!("{other_url}/")).await;
    let stopped = client.source().await.unwrap();
    assert!(stopped.contains("ERR_CERT_AUTHORITY_INVALID"), "{stopped}");
    client.goto(&link).await.unwrap();
    page_with(&client, "action=\"/sign-in\"").await;
    snap(&client, "op-2-https-sign-in").await;
    let base = signed_in(&client, &link).await;
    assert!(base.starts_with(&format!("{public}/s/")), "{base}");
    let list = page_with(&client, &run).await;
    assert!(list.contains("bob"), "{list}");
    let secure_context = client
        .execute("return window.isSecureContext;", vec![])
        .await
        .unwrap();
    assert_eq!(secure_context, json!(true), "an https page, trusted");
    snap(&client, "op-3-https-list").await;

    // The session's cookie, as the browser keeps it.
    let cookie = client
        .get_named_cookie(toolgate_inbox::SESSION_COOKIE)
        .await
        .unwrap();
    assert_eq!(cookie.secure(), Some(true), "{cookie:?}");
    assert_eq!(cookie.http_only(), Some(true), "{cookie:?}");
    // Sent to the session's own pages only.
    let own_path = format!("{}/", base.trim_start_matches(&url));
    assert_eq!(cookie.path(), Some(own_path.as_str()), "{cookie:?}");

    // Approve every call: a write, so the page asks once more.
    client.goto(&format!("{base}/runs/{run}")).await.unwrap();
    page_with(&client, "Approve every call").await;
    snap(&client, "op-4-https-run").await;
    click_button(&client, "Approve every call").await;
    page_with(&client, "Approve this write?").await;
    assert_eq!(json_of(dir, &["runs", "show", &run])["state"], "open");
    click_button(&client, "Yes, approve").await;
    page_with(&client, "will resume it").await;
    snap(&client, "op-5-https-decided").await;
    let decided = json_of(dir, &["runs", "show", &run]);
    assert_eq!(decided["state"], "decided", "{decided}");
    assert_eq!(decided["decisions"][0]["by"], "bob", "{decided}");
    assert_eq!(decided["decisions"][0]["channel"], "inbox", "{decided}");
    assert_eq!(decided["decisions"][0]["verdict"], "approved", "{decided}");
    client.close().await.unwrap();
}

/// A page on another port of the inbox's host, which sets cookies of the
/// session's name on narrower paths — sent before the inbox's own — and
/// says so in its title.
fn cookie_tosser(paths: &[&str]) -> (u16, std::thread::JoinHandle<()>) {
    let sets: Vec<String> = paths
        .iter()
        .map(|path| {
            format!(
                "document.cookie = '{}=junk{}; Path={path}';",
                toolgate_inbox::SESSION_COOKIE,
                path.len()
            )
        })
        .collect();
    let sets = sets.join(" ");
    another_port(format!(
        "<!DOCTYPE html><html><head><title>tossing</title></head><body><script>{sets} document.title = 'tossed';</script></body></html>"
    ))
}

/// A server on another port of 127.0.0.1 that answers one request with a
/// `Set-Cookie` header of the session's name — `HttpOnly`, on the whole
/// host's path, which would replace a session cookie of that path.
fn header_tosser() -> (u16, std::thread::JoinHandle<()>) {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer);
            let page = "<!DOCTYPE html><html><head><title>tossed by a header</title></head><body></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nSet-Cookie: {}=junk-header; Path=/; HttpOnly; SameSite=Strict\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                toolgate_inbox::SESSION_COOKIE,
                page.len()
            );
        }
    });
    (port, handle)
}

/// The cookies of the session's name the browser keeps for the inbox:
/// their paths.
async fn session_cookie_paths(client: &fantoccini::Client) -> Vec<String> {
    let mut paths: Vec<String> = client
        .get_all_cookies()
        .await
        .unwrap()
        .into_iter()
        .filter(|cookie| cookie.name() == toolgate_inbox::SESSION_COOKIE)
        .map(|cookie| cookie.path().unwrap_or_default().to_owned())
        .collect();
    paths.sort();
    paths
}

/// A page on another port of 127.0.0.1 tosses cookies of the session's
/// name into the browser (cookies know no ports), on paths narrower than
/// the inbox's own, so the browser sends them first. The operator signs in
/// with a fresh link all the same, and a toss after signing in locks them
/// out of nothing: they decide, recorded as theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cookie_tossed_from_another_port_locks_no_one_out() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let run = demo_run(dir, &[]);
    let (_inbox, url) = inbox(dir);
    let (_driver, webdriver) = chromedriver();
    let client = browser(&webdriver).await;

    // Before signing in.
    let (port, site) = cookie_tosser(&["/s"]);
    client
        .goto(&format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap();
    let _ = site.join();
    assert_eq!(client.title().await.unwrap(), "tossed");
    let link = link_for(dir, "bob", &url, &[]);
    let base = signed_in(&client, &link).await;
    assert!(base.starts_with(&format!("{url}/s/")), "{base}");
    let list = page_with(&client, &run).await;
    assert!(list.contains("bob"), "{list}");
    let own_path = format!("{}/", base.trim_start_matches(&url));
    assert_eq!(
        session_cookie_paths(&client).await,
        ["/s".to_owned(), own_path.clone()]
    );
    snap(&client, "op-6-tossed-cookie-signed-in").await;

    // After signing in: more of them, narrower still — and one on the
    // session's own path, which a script may not put in place of a cookie
    // the page cannot read (`HttpOnly`).
    let session = client
        .get_all_cookies()
        .await
        .unwrap()
        .into_iter()
        .find(|cookie| cookie.http_only() == Some(true))
        .expect("the session's cookie")
        .value()
        .to_owned();
    let (port, site) = cookie_tosser(&["/s/", "/runs", "/"]);
    client
        .goto(&format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap();
    let _ = site.join();
    assert_eq!(client.title().await.unwrap(), "tossed");
    // And by a response's header, `HttpOnly`, on the whole host: what a
    // script cannot, a server on another port can set.
    let (port, site) = header_tosser();
    client
        .goto(&format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap();
    let _ = site.join();
    assert_eq!(client.title().await.unwrap(), "tossed by a header");
    client.goto(&format!("{base}/runs/{run}")).await.unwrap();
    page_with(&client, "Deny every call").await;
    // WebDriver lists the cookies the page's address is sent.
    assert_eq!(
        session_cookie_paths(&client).await,
        [
            "/".to_owned(),
            "/s".to_owned(),
            "/s/".to_owned(),
            own_path.clone()
        ]
    );
    let kept = client.get_all_cookies().await.unwrap();
    assert!(
        kept.iter()
            .any(|cookie| cookie.path() == Some(own_path.as_str()) && cookie.value() == session),
        "the session's cookie is kept: {kept:?}"
    );
    // The run's stable address too, where the `/runs` cookie goes first.
    client
        .goto(&toolgate_inbox::run_link(&url, &run))
        .await
        .unwrap();
    page_with(&client, "Deny every call").await;
    assert_eq!(
        client.current_url().await.unwrap().as_str(),
        format!("{base}/runs/{run}")
    );
    client
        .find(Locator::Css("input[name=reason]"))
        .await
        .unwrap()
        .send_keys("not today")
        .await
        .unwrap();
    click_button(&client, "Deny every call").await;
    page_with(&client, "will resume it").await;
    snap(&client, "op-7-tossed-cookie-decided").await;
    let decided = json_of(dir, &["runs", "show", &run]);
    assert_eq!(decided["state"], "decided", "{decided}");
    assert_eq!(decided["decisions"][0]["by"], "bob", "{decided}");
    assert_eq!(decided["decisions"][0]["channel"], "inbox", "{decided}");
    assert_eq!(decided["decisions"][0]["verdict"], "denied", "{decided}");
    client.close().await.unwrap();
}

/// The edited arguments bob gives the changelog's write.
const EDITED: &str = "## 0.2.0\n- edited by bob, approved by carol\n";

/// A run that needs two approvers: bob approves call by call, the
/// changelog's write with edited arguments, in his browser; carol, in a
/// browser of her own, is shown his verdicts and the edit, and approving
/// exactly that decides the run — the original, which she is shown too,
/// is refused and records nothing. The host runs the edit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one story, two browsers, step by step"
)]
async fn a_second_approver_sees_and_approves_the_first_ones_edit() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let run = demo_run(dir, &["--approvals", "2"]);
    let (_inbox, url) = inbox(dir);
    let (_driver, webdriver) = chromedriver();
    let waiting = json_of(dir, &["runs", "show", &run]);
    let writes: Vec<(String, Value)> = waiting["pending"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|call| call["name"] == "write_file")
        .map(|call| {
            (
                call["id"].as_str().unwrap().to_owned(),
                call["arguments"].clone(),
            )
        })
        .collect();
    let [(approved, _), (edited, original)] = writes.as_slice() else {
        panic!("two writes wait: {writes:?}");
    };
    assert_eq!(original["path"], "CHANGELOG.md", "{original}");
    let edit = json!({"path": "CHANGELOG.md", "content": EDITED});

    // bob, call by call: one write as it is, the changelog's edited.
    let bob = browser(&webdriver).await;
    let base = signed_in(&bob, &link_for(dir, "bob", &url, &[])).await;
    bob.goto(&format!("{base}/runs/{run}")).await.unwrap();
    page_with(&bob, "Record these verdicts").await;
    click(
        &bob,
        &format!("input[name='call:{approved}'][value='approve']"),
    )
    .await;
    click(&bob, &format!("input[name='call:{edited}'][value='edit']")).await;
    let arguments = bob
        .find(Locator::Css(&format!("textarea[name='args:{edited}']")))
        .await
        .unwrap();
    arguments.clear().await.unwrap();
    arguments.send_keys(&edit.to_string()).await.unwrap();
    snap(&bob, "op-8-two-approvers-bob-edits").await;
    click_button(&bob, "Record these verdicts").await;
    let asked = page_with(&bob, "Approve this write?").await;
    assert!(asked.contains("edited by bob"), "{asked}");
    click_button(&bob, "Yes, approve").await;
    let after = page_with(&bob, "You approved this turn").await;
    assert!(after.contains("edited by bob"), "{after}");
    // Bob approved: no approval is offered to him again.
    assert!(after.contains("You approved this turn"), "{after}");
    assert!(!after.contains("Approve exactly this"), "{after}");
    assert!(!after.contains("Approve every call"), "{after}");
    let partial = json_of(dir, &["runs", "show", &run]);
    assert_eq!(partial["state"], "open", "one approval of two: {partial}");
    assert_eq!(partial["approvals"]["have"], 1, "{partial}");
    assert_eq!(partial["decisions"][0]["by"], "bob", "{partial}");
    assert_eq!(partial["decisions"][0]["partial"], true, "{partial}");
    bob.close().await.unwrap();

    // carol, in a browser of her own: bob's verdicts, the edit as it will
    // run, and a form that approves exactly that.
    let carol = browser(&webdriver).await;
    let base = signed_in(&carol, &link_for(dir, "carol", &url, &[])).await;
    carol.goto(&format!("{base}/runs/{run}")).await.unwrap();
    page_with(&carol, "Approve exactly this").await;
    let shown = carol
        .execute(
            "const h = [...document.querySelectorAll('h2')].find(h => h.textContent === 'Approved so far'); \
             const section = []; for (let e = h.nextElementSibling; e && e.tagName !== 'H2'; e = e.nextElementSibling) section.push(e.innerText); \
             const form = h.nextElementSibling.nextElementSibling; \
             return [section.join('\\n'), Object.fromEntries(new FormData(form))];",
            vec![],
        )
        .await
        .unwrap();
    let text = shown[0].as_str().unwrap();
    assert!(
        text.contains("bob approved this turn call by call"),
        "{text}"
    );
    assert!(text.contains("edited by bob, approved by carol"), "{text}");
    let carried = &shown[1];
    assert_eq!(carried[format!("call:{approved}")], "approve", "{carried}");
    assert_eq!(carried[format!("call:{edited}")], "edit", "{carried}");
    let carried_edit: Value =
        serde_json::from_str(carried[format!("args:{edited}")].as_str().unwrap()).unwrap();
    assert_eq!(carried_edit, edit, "{carried}");
    scroll_to_heading(&carol, "Approved so far").await;
    snap(&carol, "op-9-two-approvers-carol-sees-the-edit").await;

    // The original, approved as it waits, is not offered: the store would
    // refuse it (a hand-made form is refused at once — the router tests).
    let page = carol.source().await.unwrap();
    assert!(!page.contains("Approve every call"), "{page}");
    assert!(!page.contains("approve with these arguments"), "{page}");
    assert!(page.contains("Deny every call"), "{page}");
    let still = json_of(dir, &["runs", "show", &run]);
    assert_eq!(still["state"], "open", "{still}");
    assert_eq!(still["decisions"].as_array().unwrap().len(), 1, "{still}");

    // Exactly bob's verdicts: asked once more, showing the edit; decided.
    carol.goto(&format!("{base}/runs/{run}")).await.unwrap();
    page_with(&carol, "Approve exactly this").await;
    click_button(&carol, "Approve exactly this").await;
    let asked = page_with(&carol, "Approve this write?").await;
    assert!(asked.contains("edited by bob"), "{asked}");
    assert!(!asked.contains("(the model&#39;s summary)"), "{asked}");
    click_button(&carol, "Yes, approve").await;
    page_with(&carol, "will resume it").await;
    snap(&carol, "op-11-two-approvers-decided").await;
    let decided = json_of(dir, &["runs", "show", &run]);
    assert_eq!(decided["state"], "decided", "{decided}");
    let deciders: Vec<&str> = decided["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["by"].as_str().unwrap())
        .collect();
    assert_eq!(deciders, ["bob", "carol"], "{decided}");

    // The host runs the edit, not the original.
    toolgate(dir, &["host", "--once"]);
    let ran = json_of(dir, &["runs", "show", &run]);
    let call = ran["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|call| call["call"] == edited.as_str())
        .unwrap_or_else(|| panic!("the edited call ran: {ran}"));
    assert_eq!(call["state"], "ended", "{ran}");
    let changelog = std::fs::read_to_string(dir.join("demo-workspace/CHANGELOG.md")).unwrap();
    assert_eq!(changelog, EDITED);
    carol.refresh().await.unwrap();
    let after = page_with(&carol, "Calls the host ran").await;
    assert!(after.contains("edited by bob"), "{after}");
    carol.close().await.unwrap();
}

/// Points `notes` at the test server with `write_note` described as
/// `description`, and imports it again: a tool changed under its server.
fn describe_write_note(dir: &Path, description: &str) {
    let describe = format!("write_note={description}");
    common::set_transport(
        dir,
        "notes",
        &["--drop", "tidy_notes", "--describe", &describe],
    );
    toolgate(dir, &["import", "notes"]);
}

/// `notes.write_note`'s row in `server show notes`.
fn write_note(dir: &Path) -> Value {
    json_of(dir, &["server", "show", "notes"])["catalogue"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["local_name"] == "notes.write_note")
        .cloned()
        .unwrap()
}

/// The notes test server (stdio), imported; `notes.write_note` declared
/// "no approval" by olga at the console for its definition as shown; then
/// its description changed by the server: quarantined under its own
/// declaration.
fn quarantined_write_note(dir: &Path) {
    toolgate(
        dir,
        &[
            "server",
            "add",
            "notes",
            "--name",
            "Notes",
            "--data-class",
            "editor_content",
            "--",
            common::TOOLGATE,
            "mcp-test-server",
            "--drop",
            "tidy_notes",
        ],
    );
    toolgate(dir, &["import", "notes"]);
    let shown = common::command(dir)
        .args(["--json", "tool", "set-approval", "notes.write_note", "off"])
        .output()
        .unwrap();
    assert_eq!(shown.status.code(), Some(3), "shown, nothing changed");
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let digest = shown["digest"].as_str().unwrap();
    toolgate(
        dir,
        &[
            "tool",
            "set-approval",
            "notes.write_note",
            "off",
            "--digest",
            digest,
            "--as",
            "olga",
        ],
    );
    describe_write_note(dir, "Appends a note, and mails it.");
    let row = write_note(dir);
    assert!(
        row["gate"].as_str().unwrap().contains("quarantined"),
        "{row}"
    );
}

/// A quarantined tool on the servers page: the diff from the definition
/// accepted; for an operator who may not declare, only the console's
/// command; for one who may, a button — which, from a page whose diff went
/// stale (the server changed the tool again), records nothing and says
/// so, and from the page as it is now accepts the tool, recorded as that
/// operator's declaration through the inbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::too_many_lines, reason = "one story, step by step")]
async fn a_quarantined_tool_is_accepted_from_the_servers_page_as_its_diff_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    quarantined_write_note(dir);
    let (_inbox, url) = inbox(dir);
    let (_driver, webdriver) = chromedriver();

    // carol may not declare: the diff, and the console's command.
    let carol = browser(&webdriver).await;
    let base = signed_in(&carol, &link_for(dir, "carol", &url, &[])).await;
    carol.goto(&format!("{base}/servers")).await.unwrap();
    let page = page_with(&carol, "Quarantined:").await;
    assert!(!page.contains("/servers/accept"), "{page}");
    assert!(page.contains("toolgate server accept"), "{page}");
    carol.close().await.unwrap();

    // alice may.
    let alice = browser(&webdriver).await;
    let link = link_for(dir, "alice", &url, &["--may-declare"]);
    let base = signed_in(&alice, &link).await;
    alice.goto(&format!("{base}/servers")).await.unwrap();
    page_with(&alice, "Quarantined:").await;
    let diff = quarantine_text(&alice).await;
    assert!(diff.contains("notes.write_note"), "{diff}");
    assert!(
        diff.contains("Appends a note.") && diff.contains("Appends a note, and mails it."),
        "the description accepted and the one now: {diff}"
    );
    scroll_to_heading(&alice, "Quarantined:").await;
    snap(&alice, "op-12-quarantined-diff").await;

    // The server changes the tool again while the page is open.
    describe_write_note(dir, "Deletes every note.");
    click(
        &alice,
        "form[action$='/servers/accept'] button[type=submit]",
    )
    .await;
    let stale = page_with(&alice, "It changed again since this page").await;
    assert!(stale.contains("Nothing was recorded"), "{stale}");
    snap(&alice, "op-13-quarantined-stale-refused").await;
    let row = write_note(dir);
    assert!(
        row["gate"].as_str().unwrap().contains("quarantined"),
        "{row}"
    );
    assert_eq!(row["declared"]["by"], "olga", "{row}");

    // The page as it is now: the diff shows the latest; accepting it works.
    alice
        .find(Locator::LinkText(
            "See the servers and tools as they are now",
        ))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    page_with(&alice, "Quarantined:").await;
    let diff = quarantine_text(&alice).await;
    assert!(diff.contains("Deletes every note."), "{diff}");
    click(
        &alice,
        "form[action$='/servers/accept'] button[type=submit]",
    )
    .await;
    let mut after = String::new();
    for _ in 0..100 {
        after = alice.source().await.unwrap();
        if after.contains("Servers and tools") && !after.contains("Quarantined:") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(!after.contains("Quarantined:"), "{after}");
    assert!(
        alice
            .current_url()
            .await
            .unwrap()
            .as_str()
            .ends_with("/servers"),
        "back on the servers page"
    );
    snap(&alice, "op-14-quarantined-accepted").await;
    let row = write_note(dir);
    assert_eq!(row["declaration"], "off", "{row}");
    assert!(
        !row["gate"].as_str().unwrap().contains("quarantined"),
        "{row}"
    );
    assert_eq!(row["declared"]["by"], "alice", "{row}");
    assert_eq!(row["declared"]["channel"], "inbox", "{row}");
    assert_eq!(row["declared"]["source"], "signed_in", "{row}");
    let tools = json_of(dir, &["tools"]);
    let gate = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "notes.write_note")
        .map(|tool| tool["gate"].clone());
    assert_eq!(gate, Some(json!("runs")), "{tools}");
    alice.close().await.unwrap();
}

/// The text of the servers page's quarantined tools, as shown.
async fn quarantine_text(client: &fantoccini::Client) -> String {
    client
        .execute(
            "return [...document.querySelectorAll('section.quarantine')].map(s => s.innerText).join('\\n');",
            vec![],
        )
        .await
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned()
}
