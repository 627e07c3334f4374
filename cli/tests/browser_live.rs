//! The inbox's live pages in a real browser: Debian's Chromium, driven over
//! WebDriver (chromedriver) — without them this test fails, it does not
//! skip. On SQLite and again on PostgreSQL: the list, open, shows a run
//! that arrives without a reload; a run's page, open while the run is
//! decided from the command line, says so before the operator acts, and
//! its buttons no longer act. Each page is saved as a screenshot under the
//! target directory (`inbox-screenshots/`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::time::Duration;

use fantoccini::{Client, Locator};
use serde_json::Value;

#[path = "common/browser.rs"]
mod browsing;
mod common;
use browsing::{browser, chromedriver, inbox, json_of, page_with, snap};
use common::toolgate;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

/// The value of `script` in the page.
async fn eval(client: &Client, script: &str) -> Value {
    client.execute(script, vec![]).await.unwrap()
}

/// Waits until `script` is true in the page.
async fn until(client: &Client, script: &str, what: &str) {
    for _ in 0..150 {
        if eval(client, script).await == Value::Bool(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: {}", client.source().await.unwrap());
}

/// The runs that wait, newest first.
fn waiting(dir: &std::path::Path) -> Vec<String> {
    json_of(dir, &["runs", "list"])
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["run"].as_str().unwrap().to_owned())
        .collect()
}

/// Signs in with the link `toolgate operator add` printed: its page, then
/// its button.
async fn sign_in(client: &Client, link: &str) {
    client.goto(link).await.unwrap();
    client
        .find(Locator::Css("button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// Interrupts `toolgate inbox` (Ctrl-C) while a page follows the runs: it
/// must stop, its streams ended rather than holding the shutdown.
async fn stops_on_interrupt(mut served: browsing::Killed) {
    // The page opens its stream as it loads; on loopback a moment is
    // plenty.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let stopped = std::process::Command::new("kill")
        .args(["-INT", &served.0.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let mut exited = None;
    for _ in 0..100 {
        exited = served.0.try_wait().unwrap();
        if exited.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        exited.is_some_and(|status| status.success()),
        "the inbox stops on Ctrl-C with a page open: {exited:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one operator's session: the list, then a run's page, then the inbox stopped, in the order they are met"
)]
async fn a_live_update_arrives_while_a_page_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    toolgate(dir, &["demo", "--detach"]);
    let first = waiting(dir)[0].clone();
    let (served, url) = inbox(dir);
    let link = json_of(dir, &["operator", "add", "bob", "--public-url", &url])["link"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_driver, webdriver) = chromedriver();
    let client = browser(&webdriver).await;
    sign_in(&client, &link).await;
    let list = page_with(&client, &first).await;
    assert!(list.contains("1 run waiting"), "{list}");
    let base = client.current_url().await.unwrap().to_string();
    let base = base.trim_end_matches('/').to_owned();

    // A mark of this very page: a reload would lose it.
    eval(&client, "window.__kept = 'this page'; return true;").await;

    // A run arrives: the open list shows it, and its count, unreloaded.
    toolgate(dir, &["demo", "--detach"]);
    let second = waiting(dir)
        .into_iter()
        .find(|run| run != &first)
        .expect("a second run waits");
    page_with(&client, &second).await;
    page_with(&client, "2 runs waiting").await;
    assert_eq!(
        eval(&client, "return window.__kept;").await,
        "this page",
        "the list was updated, not reloaded"
    );
    snap(&client, "live-1-list-updated").await;

    // A run's page, open while the run is decided from the command line.
    client.goto(&format!("{base}/runs/{first}")).await.unwrap();
    page_with(&client, "Approve every call").await;
    assert_eq!(
        eval(
            &client,
            "return document.querySelector('main p.state').textContent;"
        )
        .await,
        "awaiting approval"
    );
    until(
        &client,
        "return document.getElementById('live').hidden === true;",
        "the page says nothing while the run waits",
    )
    .await;
    assert_eq!(
        eval(
            &client,
            "return [...document.querySelectorAll('main form button')].some(b => b.disabled);"
        )
        .await,
        false
    );
    eval(&client, "window.__kept = 'the run'; return true;").await;
    let digest = json_of(dir, &["runs", "show", &first])["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    toolgate(
        dir,
        &[
            "runs", "approve", &first, "--digest", &digest, "--as", "carol",
        ],
    );
    until(
        &client,
        "return document.getElementById('live').hidden === false;",
        "the page says the run changed",
    )
    .await;
    let banner = client
        .find(Locator::Id("live"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        banner.contains("This run changed since this page was shown: it was decided elsewhere"),
        "{banner}"
    );
    assert!(banner.contains("See the run as it is now"), "{banner}");
    assert_eq!(
        eval(
            &client,
            "const b = [...document.querySelectorAll('main form button')]; \
             return b.length > 0 && b.every(x => x.disabled);"
        )
        .await,
        true,
        "every button of the page's forms is disabled"
    );
    assert_eq!(eval(&client, "return window.__kept;").await, "the run");
    // Where it stands now, read again in place.
    until(
        &client,
        "return document.querySelector('main p.state').textContent !== 'awaiting approval';",
        "the page shows where the run stands now",
    )
    .await;
    snap(&client, "live-2-run-decided-elsewhere").await;

    // The way on: the run as it is now, decided, with no decision form.
    client
        .find(Locator::LinkText("See the run as it is now"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let now = page_with(&client, "carol</bdi>").await;
    assert!(!now.contains("Approve every call"), "{now}");

    // Interrupted while a page follows the runs, the inbox stops: its
    // streams end rather than hold the shutdown.
    stops_on_interrupt(served).await;
}
