//! The inbox in a real browser: Debian's Chromium, driven over WebDriver
//! (chromedriver) — without them this test fails, it does not skip. An
//! operator signs in with the link `toolgate operator add` printed, sees the
//! demo's paused run, denies one call and approves another with edited
//! arguments — a write, so the page asks once more, showing the edit — and
//! `toolgate host` resumes it and the page shows what ran. A run
//! whose arguments hold markup renders it as text and runs nothing; a form
//! posted from another port of 127.0.0.1 — same-site, so the cookie is sent
//! — is refused. Each page is saved as a screenshot under the target
//! directory (`inbox-screenshots/`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::time::Duration;

use fantoccini::{Client, Locator};
use serde_json::{Map, Value, json};
use toolgate::run::{CallRequest, NoModel, Outcome, ToolCall};
use toolgate::suspend::SuspendedRun;
use toolgate::{Agent, Execute, Registry, Tool, ToolOutput};

#[path = "common/browser.rs"]
mod browsing;
mod common;
use browsing::{
    another_port, browser, browser_with, chromedriver, free_port, inbox, inbox_with, json_of,
    page_with, snap,
};
use common::toolgate;

/// Deletes a branch: a write, so a call of it waits for approval.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct DeleteBranch;

impl Execute for DeleteBranch {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("deleted")
    }
}

/// Pausing a call records no decision.
struct NoDecisions;

impl toolgate::audit::DecisionLog for NoDecisions {
    fn record<'a>(
        &'a self,
        _: &'a toolgate::audit::DecisionRecord,
    ) -> toolgate::erased::BoxFuture<'a, Result<(), toolgate::audit::LogError>> {
        Box::pin(async {
            Err(toolgate::audit::LogError::new(
                "no decision is recorded here",
            ))
        })
    }
}

/// A run whose one call's arguments hold markup, saved in `dir`'s store.
async fn hostile_run(dir: &Path) -> String {
    let store = toolgate_store::Store::open(&common::location(dir))
        .await
        .unwrap();
    let registry = Registry::builder().builtin(DeleteBranch).build().unwrap();
    let log = NoDecisions;
    let agent = Agent::new(&registry, &NoModel, &log);
    let call = ToolCall {
        id: "c1".into(),
        name: "delete_branch".into(),
        arguments: json!({
            "branch": "<script>window.__xss = 1</script>",
            "image": "<img src=x onerror=\"window.__xss = 2\">",
            "link": "<a href=\"javascript:window.__xss=3\">click</a>",
            "style": "</pre><style>body{display:none}</style>",
            "rtl": "abc\u{202e}fed",
            "hidden": "a\u{200b}b",
        }),
    };
    let Ok(Outcome::AwaitingApproval(run)) = agent
        .call(CallRequest::new("carol", "a hostile call", call))
        .await
    else {
        panic!("an approval pause");
    };
    let run = SuspendedRun::AwaitingApproval(run);
    toolgate_store::CallHost::new(store.clone(), "gateway.browser")
        .unwrap()
        .save(&run)
        .await
        .unwrap();
    store.close().await;
    run.run_id().to_owned()
}

/// A page on another port of 127.0.0.1 with a form that posts a decision
/// to the inbox: what a hostile site the operator visits would send.
fn hostile_site(target: &str) -> (u16, std::thread::JoinHandle<()>) {
    another_port(format!(
        "<!DOCTYPE html><html><body><form method=\"post\" action=\"{target}\">\
         <input name=\"verdict\" value=\"approve\"><input name=\"digest\" value=\"x\">\
         <input name=\"csrf\" value=\"guess\"><button id=\"go\" type=\"submit\">win</button></form></body></html>"
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_decides_in_a_real_browser_and_nothing_injected_runs() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    toolgate(dir, &["demo", "--detach"]);
    let runs = json_of(dir, &["runs", "list"]);
    let run = runs[0]["run"].as_str().unwrap().to_owned();
    let hostile = hostile_run(dir).await;
    let (_inbox, url) = inbox(dir);
    let link = json_of(dir, &["operator", "add", "bob", "--public-url", &url])["link"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_driver, webdriver) = chromedriver();
    let client = browser(&webdriver).await;

    // Sign in with the printed link: its page, then its button.
    client.goto(&link).await.unwrap();
    snap(&client, "1-sign-in").await;
    client
        .find(Locator::Css("button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let waiting = page_with(&client, &run).await;
    assert!(
        waiting.contains(&run) && waiting.contains(&hostile),
        "{waiting}"
    );
    assert!(waiting.contains("signed in as"), "{waiting}");
    snap(&client, "2-waiting").await;

    // The session's pages live under the address signing in led to.
    let base = client.current_url().await.unwrap().to_string();
    assert!(base.starts_with(&format!("{url}/s/")), "{base}");
    let base = base.trim_end_matches('/').to_owned();
    let edited = decide_call_by_call(&client, dir, &base, &run).await;

    // The host resumes it; the page shows what ran.
    toolgate(dir, &["host", "--once"]);
    client.refresh().await.unwrap();
    let after = page_with(&client, "Calls the host ran").await;
    assert!(after.contains("Arguments it ran with"), "{after}");
    // The host ran the edited call and skipped the denied one.
    let ran = json_of(dir, &["runs", "show", &run]);
    let ended: Vec<&str> = ran["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|call| call["state"] == "ended")
        .map(|call| call["call"].as_str().unwrap())
        .collect();
    assert!(ended.contains(&edited.as_str()), "{ran}");
    snap(&client, "5-ran").await;
    // What ran, further down the page: scrolled to, and saved too.
    client
        .execute(
            "[...document.querySelectorAll('h2')].find(h => h.textContent === 'Calls the host ran').scrollIntoView();",
            vec![],
        )
        .await
        .unwrap();
    snap(&client, "5-ran-calls").await;

    // The history holds the decided run; the search narrows the list.
    client.goto(&format!("{base}/?view=history")).await.unwrap();
    let history = page_with(&client, "decided by").await;
    assert!(
        history.contains(&run) && !history.contains(&hostile),
        "{history}"
    );
    snap(&client, "5a-history").await;
    client.goto(&format!("{base}/")).await.unwrap();
    client
        .find(Locator::Css("form.filters input[name=q]"))
        .await
        .unwrap()
        .send_keys("carol")
        .await
        .unwrap();
    client
        .find(Locator::Css("form.filters button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let narrowed = page_with(&client, "matching the filter").await;
    assert!(
        narrowed.contains(&hostile) && !narrowed.contains(&run),
        "{narrowed}"
    );
    assert!(
        client
            .current_url()
            .await
            .unwrap()
            .as_str()
            .contains("q=carol"),
        "a plain GET form"
    );
    snap(&client, "5b-search").await;

    hostile_checks(&client, dir, &base, &hostile).await;
    client.close().await.unwrap();
}

/// On the demo's run, one write denied with a reason and the other
/// approved with edited arguments, call by call; the edited call's id.
async fn decide_call_by_call(client: &Client, dir: &Path, url: &str, run: &str) -> String {
    client.goto(&format!("{url}/runs/{run}")).await.unwrap();
    snap(client, "3-run").await;
    let pending: Vec<String> = json_of(dir, &["runs", "show", run])["pending"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|call| call["name"] == "write_file")
        .map(|call| call["id"].as_str().unwrap().to_owned())
        .collect();
    let [denied, edited] = pending.as_slice() else {
        panic!("two writes wait: {pending:?}");
    };
    let css = |selector: String| Locator::Css(Box::leak(selector.into_boxed_str()));
    client
        .find(css(format!("input[name='call:{denied}'][value='deny']")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    client
        .find(css(format!("input[name='reason:{denied}']")))
        .await
        .unwrap()
        .send_keys("not this file")
        .await
        .unwrap();
    client
        .find(css(format!("input[name='call:{edited}'][value='edit']")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let arguments = client
        .find(css(format!("textarea[name='args:{edited}']")))
        .await
        .unwrap();
    arguments.clear().await.unwrap();
    arguments
        .send_keys(r#"{"path": "NOTES.md", "content": "edited in the inbox\n"}"#)
        .await
        .unwrap();
    client
        .find(Locator::Css("form.calls button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    // Approving a write asks once more, showing the edit as it will run;
    // nothing is recorded until the second click.
    let asked = page_with(client, "Approve this write?").await;
    assert!(
        asked.contains("edited in the inbox") && asked.contains("not this file"),
        "{asked}"
    );
    let waiting = json_of(dir, &["runs", "show", run]);
    assert_eq!(waiting["state"], "open", "{waiting}");
    snap(client, "3a-approve-this-write").await;
    client
        .find(Locator::Css("main form button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    // The form's answer is a navigation: wait for the page it leads to.
    page_with(client, "will resume it").await;
    let decided = json_of(dir, &["runs", "show", run]);
    assert_eq!(decided["state"], "decided", "{decided}");
    assert_eq!(decided["decisions"][0]["by"], "bob", "{decided}");
    assert_eq!(decided["decisions"][0]["channel"], "inbox", "{decided}");
    snap(client, "4-decided").await;

    edited.clone()
}

/// The hostile run: every piece of markup shown as text, none of it run;
/// and a form posted to it from another port of 127.0.0.1 refused.
async fn hostile_checks(client: &Client, dir: &Path, url: &str, hostile: &str) {
    client.goto(&format!("{url}/runs/{hostile}")).await.unwrap();
    snap(client, "6-hostile").await;
    let probe = client
        .execute(
            "return [typeof window.__xss, document.querySelectorAll('script:not([src=\"/inbox.js\"]), img, style, main a[href^=\"javascript\"]').length, document.body.innerText, document.scripts.length];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(probe[0], "undefined", "a script ran: {probe}");
    assert_eq!(probe[1], 0, "an element was injected: {probe}");
    assert_eq!(probe[3], 1, "the inbox's own script only: {probe}");
    let text = probe[2].as_str().unwrap();
    assert!(text.contains("<script>window.__xss = 1</script>"), "{text}");
    assert!(
        text.contains("\\u{202e}") && text.contains("\\u{200b}"),
        "{text}"
    );

    // A form posted from another port of 127.0.0.1: same-site, so the
    // cookie goes with it; the origin and the missing token refuse it.
    let (port, site) = hostile_site(&format!("{url}/runs/{hostile}/decide"));
    client
        .goto(&format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap();
    client
        .find(Locator::Id("go"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let refused = page_with(client, "Refused").await;
    assert!(refused.contains("Refused"), "{refused}");
    snap(client, "7-cross-origin-refused").await;
    let _ = site.join();
    let shown = json_of(dir, &["runs", "show", hostile]);
    assert_eq!(shown["state"], "open", "nothing recorded: {shown}");
}

/// An inbox at a plain-http public URL whose host is a name, not a
/// loopback address — where a browser sends no `Sec-Fetch-Site` — signs
/// in and decides: its forms carry their origin. A page reached under
/// another name that resolves to the inbox is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_http_public_url_signs_in_and_another_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    toolgate(dir, &["demo", "--detach"]);
    let run = json_of(dir, &["runs", "list"])[0]["run"]
        .as_str()
        .unwrap()
        .to_owned();
    let port = free_port();
    let public = format!("http://inbox.test:{port}");
    let (_inbox, url) = inbox_with(
        dir,
        &format!("127.0.0.1:{port}"),
        &["--public-url", &public],
    );
    assert_eq!(url, public);
    let link = json_of(dir, &["operator", "add", "bob", "--public-url", &public])["link"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_driver, webdriver) = chromedriver();
    let client = browser_with(
        &webdriver,
        &["--host-resolver-rules=MAP inbox.test 127.0.0.1, MAP evil.test 127.0.0.1"],
    )
    .await;

    client.goto(&link).await.unwrap();
    client
        .find(Locator::Css("button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let waiting = page_with(&client, &run).await;
    assert!(waiting.contains("signed in as"), "{waiting}");
    let base = client.current_url().await.unwrap().to_string();
    assert!(base.starts_with(&format!("{public}/s/")), "{base}");

    // A decision from the page is recorded: the form carried its origin.
    client.goto(&format!("{base}runs/{run}")).await.unwrap();
    let page = page_with(&client, "Deny every call").await;
    assert!(page.contains(&run), "{page}");
    client
        .find(Locator::XPath("//button[contains(., 'Deny every call')]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    page_with(&client, "denied").await;
    let shown = json_of(dir, &["runs", "show", &run]);
    assert_eq!(shown["decisions"][0]["by"], "bob", "{shown}");
    assert_eq!(shown["decisions"][0]["channel"], "inbox", "{shown}");

    // The same session's address under another name: refused, nothing
    // shown.
    let rebound = base.replace("inbox.test", "evil.test");
    client.goto(&rebound).await.unwrap();
    let refused = page_with(&client, "answers at").await;
    assert!(!refused.contains(&run), "{refused}");
    client.close().await.unwrap();
}

/// `GET path` on the inbox at `url` with only the session's cookie, as
/// another program holding the cookie would send it: the answer's head
/// and body.
fn with_the_cookie_alone(url: &str, path: &str, cookie: &str) -> String {
    let authority = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nCookie: {}={cookie}\r\nConnection: close\r\n\r\n",
        toolgate_inbox::SESSION_COOKIE
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// A run's stable address, the link a notification carries: a browser
/// signed in lands on the run, in its session; a fresh browser profile is
/// told how to sign in; the session's cookie alone — in a program or in
/// a browser that kept no address — reveals no session's address; signed
/// out, the link opens nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_stable_address_opens_it_in_the_signed_in_browser_only() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    toolgate(dir, &["demo", "--detach"]);
    let run = json_of(dir, &["runs", "list"])[0]["run"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_inbox, url) = inbox(dir);
    let link = json_of(dir, &["operator", "add", "bob", "--public-url", &url])["link"]
        .as_str()
        .unwrap()
        .to_owned();
    let stable = toolgate_inbox::run_link(&url, &run);
    assert_eq!(stable, format!("{url}/runs/{run}"));
    let (_driver, webdriver) = chromedriver();

    // Signed in: the stable address lands on the run, in the session.
    let signed = browser(&webdriver).await;
    signed.goto(&link).await.unwrap();
    signed
        .find(Locator::Css("button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    page_with(&signed, "signed in as").await;
    let base = signed.current_url().await.unwrap().to_string();
    let base = base.trim_end_matches('/').to_owned();
    assert!(base.starts_with(&format!("{url}/s/")), "{base}");
    let key = base.rsplit('/').next().unwrap().to_owned();
    signed.goto(&stable).await.unwrap();
    page_with(&signed, "Deny every call").await;
    assert_eq!(
        signed.current_url().await.unwrap().as_str(),
        format!("{base}/runs/{run}")
    );
    snap(&signed, "8-stable-address-signed-in").await;
    let cookie = signed
        .get_named_cookie(toolgate_inbox::SESSION_COOKIE)
        .await
        .unwrap()
        .value()
        .to_owned();

    // A fresh browser profile: the sign-in hint, and the same address.
    let fresh = browser(&webdriver).await;
    fresh.goto(&stable).await.unwrap();
    let hint = page_with(&fresh, "toolgate operator add YOUR-NAME").await;
    assert!(hint.contains("is not signed in to the inbox"), "{hint}");
    assert!(!hint.contains(&key), "{hint}");
    assert_eq!(fresh.current_url().await.unwrap().as_str(), stable);
    snap(&fresh, "9-stable-address-not-signed-in").await;

    fresh.close().await.unwrap();

    // The cookie alone, from a program: no answer holds the address.
    let path = format!("/runs/{run}");
    for path in [path.as_str(), "/", "/signed-out", "/inbox.js"] {
        let answer = with_the_cookie_alone(&url, path, &cookie);
        assert!(answer.starts_with("HTTP/1.1 200"), "{path}: {answer}");
        assert!(!answer.contains(&key), "{path} gave the address away");
    }

    // A page on another port opens the stable address in a window of the
    // signed-in browser and tries to read where it went: it cannot.
    opened_from_another_port(&signed, &url, &base, &run, &key).await;
    signed.goto(&format!("{url}/")).await.unwrap();

    // The cookie alone in a browser: the signed-in one, its kept address
    // gone — still only the hint.
    signed
        .execute("window.localStorage.clear(); return null;", vec![])
        .await
        .unwrap();
    signed.goto(&stable).await.unwrap();
    let hint = page_with(&signed, "toolgate operator add YOUR-NAME").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(signed.current_url().await.unwrap().as_str(), stable);
    assert!(!hint.contains(&key), "{hint}");

    // Its session's pages keep the address again; signed out, the
    // browser keeps none, and the link opens nothing.
    signed.goto(&format!("{base}/")).await.unwrap();
    page_with(&signed, "signed in as").await;
    signed.goto(&stable).await.unwrap();
    page_with(&signed, "Deny every call").await;
    signed.goto(&format!("{base}/")).await.unwrap();
    signed
        .find(Locator::Css("form.sign-out button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    page_with(&signed, "Not signed in here").await;
    signed.goto(&stable).await.unwrap();
    page_with(&signed, "toolgate operator add YOUR-NAME").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(signed.current_url().await.unwrap().as_str(), stable);
    signed.close().await.unwrap();
}

/// A page on another port of the host opens a run's stable address in a
/// window of `client` (signed in, its session at `base`) and tries to read
/// where it went: the window goes on to the run, and the page learns
/// nothing of it.
async fn opened_from_another_port(client: &Client, url: &str, base: &str, run: &str, key: &str) {
    let stable = toolgate_inbox::run_link(url, run);
    let (port, site) = another_port(format!(
        "<!DOCTYPE html><html><head><title>waiting</title></head><body><script>\
         var w = window.open({stable:?});\
         setTimeout(function () {{\
           var seen;\
           try {{ seen = 'read: ' + w.location.href; }} catch (e) {{ seen = 'refused: ' + e.name; }}\
           document.title = seen;\
         }}, 1500);</script></body></html>"
    ));
    let windows = client.windows().await.unwrap();
    client
        .goto(&format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap();
    let mut title = String::new();
    for _ in 0..50 {
        title = client.title().await.unwrap();
        if title != "waiting" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = site.join();
    assert!(title.starts_with("refused: "), "{title}");
    assert!(!title.contains(key), "{title}");
    let opened: Vec<_> = client
        .windows()
        .await
        .unwrap()
        .into_iter()
        .filter(|w| !windows.contains(w))
        .collect();
    assert!(!opened.is_empty(), "the other port's page opened a window");
    for window in opened {
        // The window it opened did go on to the run, in the session.
        client.switch_to_window(window).await.unwrap();
        assert_eq!(
            client.current_url().await.unwrap().as_str(),
            format!("{base}/runs/{run}")
        );
        client.close_window().await.unwrap();
    }
    client.switch_to_window(windows[0].clone()).await.unwrap();
}
