//! The live pages' event stream against a real store, on SQLite and again
//! on PostgreSQL: a session's stream is sent a run that starts waiting, is
//! decided and resumes — each as the run's id and one word, never what
//! anyone wrote — and what it missed since its page was shown; outside a
//! session there is no stream, a revoked session's stream ends and is
//! sent nothing more, a session holds a bounded number of streams, and
//! the pages name their stream under a policy that lets them connect to
//! the inbox only.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::time::Duration;

use axum::body::{Body, BodyDataStream};
use axum::http::{Request, StatusCode, header};
use futures_util::StreamExt as _;
use serde_json::{Map, Value, json};
use toolgate::identity::{IdentitySource, Operator};
use toolgate::run::{Outcome, Reply, RunRequest, ToolCall};
use toolgate::suspend::SuspendedRun;
use toolgate::testing::{MemoryLog, ScriptedModel};
use toolgate::{Agent, Execute, Registry, Tool, ToolOutput};
use toolgate_inbox::{Inbox, SESSION_CHECK, SESSION_COOKIE, STREAMS_PER_SESSION};
use toolgate_store::{Answer, Host, Store};
use tower::ServiceExt as _;

#[path = "../../store/tests/backend/mod.rs"]
mod backend;
use backend::TestDb;

mod common;
use common::{HOST, get, inbox, send, signed_in};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    backend::rerun_on_postgres();
}

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

fn registry() -> Registry {
    Registry::builder().builtin(DeleteBranch).build().unwrap()
}

/// The model that deletes a branch whose name is markup, then answers.
fn model() -> ScriptedModel {
    ScriptedModel::new([
        Reply::Calls {
            content: None,
            calls: vec![ToolCall {
                id: "c1".into(),
                name: "delete_branch".into(),
                arguments: json!({"branch": "<b>old</b>"}),
            }],
        },
        Reply::Text("done".to_owned()),
    ])
}

/// A run of alice's, paused on the model's deletion, saved for host `demo`.
async fn paused_run(store: &Store, registry: &Registry, model: &ScriptedModel) -> SuspendedRun {
    let log = MemoryLog::new();
    let agent = Agent::new(registry, model, &log);
    let Ok(Outcome::AwaitingApproval(run)) = agent
        .start(RunRequest::new("alice", "tidy the branches"))
        .await
    else {
        panic!("an approval pause");
    };
    let run = SuspendedRun::AwaitingApproval(run);
    store.save_suspended(&run, "demo").await.unwrap();
    run
}

fn bob() -> Operator {
    Operator::new("bob", IdentitySource::Flag).unwrap()
}

/// An event as the stream sent it.
#[derive(Debug)]
struct Sent {
    name: String,
    id: Option<String>,
    data: Value,
}

/// What a stream did next.
#[derive(Debug)]
enum Next {
    Event(Sent),
    Ended,
    Quiet,
}

/// A session's event stream, read as a browser reads it.
struct Events {
    body: BodyDataStream,
    buffer: String,
}

impl Events {
    /// The next event within `within` — comments (the greeting, keep-alive)
    /// skipped — or that the stream ended, or stayed quiet.
    async fn next(&mut self, within: Duration) -> Next {
        let until = tokio::time::Instant::now() + within;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut sent = Sent {
                    name: String::new(),
                    id: None,
                    data: Value::Null,
                };
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event:") {
                        name.trim().clone_into(&mut sent.name);
                    } else if let Some(id) = line.strip_prefix("id:") {
                        sent.id = Some(id.trim().to_owned());
                    } else if let Some(text) = line.strip_prefix("data:") {
                        data.push_str(text.trim());
                    }
                }
                if data.is_empty() {
                    continue;
                }
                sent.data = serde_json::from_str(&data).unwrap();
                return Next::Event(sent);
            }
            match tokio::time::timeout_at(until, self.body.next()).await {
                Err(_) => return Next::Quiet,
                Ok(None) => return Next::Ended,
                Ok(Some(chunk)) => {
                    self.buffer
                        .push_str(&String::from_utf8_lossy(&chunk.unwrap()));
                }
            }
        }
    }

    /// The next event, which must come within a few seconds.
    async fn event(&mut self) -> Sent {
        match self.next(Duration::from_secs(15)).await {
            Next::Event(sent) => sent,
            other => panic!("an event, not {other:?}"),
        }
    }
}

fn events_request(csrf: &str, cookie: Option<&str>, query: &str) -> Request<Body> {
    let mut request = Request::get(format!("/s/{csrf}/events{query}")).header(header::HOST, HOST);
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, format!("{SESSION_COOKIE}={cookie}"));
    }
    request.body(Body::empty()).unwrap()
}

/// Opens the stream; its status, and the stream when it is one.
async fn open(inbox: &Inbox, request: Request<Body>) -> (StatusCode, Option<Events>) {
    let response = inbox.clone().router().oneshot(request).await.unwrap();
    let status = response.status();
    if status != StatusCode::OK {
        return (status, None);
    }
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/event-stream",
        "{:?}",
        response.headers()
    );
    let events = Events {
        body: response.into_body().into_data_stream(),
        buffer: String::new(),
    };
    (status, Some(events))
}

/// The `since` a page names for its stream.
fn since_of(page: &str) -> i64 {
    let at = page
        .find("/events?since=")
        .expect("the page follows the runs");
    page[at + "/events?since=".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_is_sent_a_run_that_waits_is_decided_and_resumes() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let list = send(&inbox, get(&format!("/s/{csrf}/"), Some(&cookie))).await;
    assert_eq!(list.status, StatusCode::OK);
    let since = since_of(&list.body);
    let (status, events) = open(
        &inbox,
        events_request(&csrf, Some(&cookie), &format!("?since={since}")),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let mut events = events.unwrap();

    let (registry, model) = (registry(), model());
    let run = paused_run(&store, &registry, &model).await;
    let waiting = events.event().await;
    assert_eq!(waiting.name, "run");
    assert_eq!(
        waiting.data,
        json!({"run": run.run_id(), "kind": "waiting"}),
        "the run's id and one word: nothing anyone wrote"
    );
    let first: i64 = waiting.id.unwrap().parse().unwrap();
    assert!(first > since);

    store
        .decide(run.run_id(), Some(&run.digest()), &bob(), Answer::Approve)
        .await
        .unwrap();
    let decided = events.event().await;
    assert_eq!(
        decided.data,
        json!({"run": run.run_id(), "kind": "decided"})
    );
    let second: i64 = decided.id.unwrap().parse().unwrap();
    assert!(second > first, "numbered in order");

    let host = Host::new(store.clone(), "demo").unwrap();
    let task = host.next().await.unwrap().unwrap();
    host.resume(task, &registry, &model).await.unwrap();
    let resumed = events.event().await;
    assert_eq!(
        resumed.data,
        json!({"run": run.run_id(), "kind": "resumed"})
    );

    // A browser that reconnects after the first is sent what came after
    // it, in order, and nothing before.
    let (_, again) = open(&inbox, {
        let mut request = events_request(&csrf, Some(&cookie), &format!("?since={since}"));
        request
            .headers_mut()
            .insert("last-event-id", first.to_string().parse().unwrap());
        request
    })
    .await;
    let mut again = again.unwrap();
    assert_eq!(again.event().await.data["kind"], "decided");
    assert_eq!(again.event().await.data["kind"], "resumed");
    assert!(matches!(
        again.next(Duration::from_millis(1500)).await,
        Next::Quiet
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_is_sent_what_changed_between_its_showing_and_its_stream() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let (registry, model) = (registry(), model());
    let run = paused_run(&store, &registry, &model).await;
    let page = send(
        &inbox,
        get(&format!("/s/{csrf}/runs/{}", run.run_id()), Some(&cookie)),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK);
    // The page says where it follows the run, and holds what it says
    // once the run changed — hidden, for the script to show.
    assert!(page.body.contains("data-live=\"run\""), "{}", page.body);
    // Hidden until the script says the run changed: without JavaScript the
    // page is as it was, its forms acting as before.
    assert!(
        page.body
            .contains("<div class=\"changed\" id=\"live\" role=\"alert\" hidden"),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains(&format!("data-run-id=\"{}\"", run.run_id())),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("This run changed since this page was shown"),
        "{}",
        page.body
    );
    let since = since_of(&page.body);
    // Decided elsewhere before the page's stream opened.
    store
        .decide(run.run_id(), Some(&run.digest()), &bob(), Answer::Deny)
        .await
        .unwrap();
    let (_, events) = open(
        &inbox,
        events_request(&csrf, Some(&cookie), &format!("?since={since}")),
    )
    .await;
    let mut events = events.unwrap();
    assert_eq!(
        events.event().await.data,
        json!({"run": run.run_id(), "kind": "decided"})
    );
    // A number from the future follows from now: nothing is skipped.
    let (_, future) = open(
        &inbox,
        events_request(&csrf, Some(&cookie), "?since=999999999"),
    )
    .await;
    let mut future = future.unwrap();
    let next = paused_run(&store, &registry, &self::model()).await;
    assert_eq!(
        future.event().await.data,
        json!({"run": next.run_id(), "kind": "waiting"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_a_session_there_is_no_stream_and_a_revoked_one_ends() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;

    // No cookie, a cookie of no session, the key of another: no stream,
    // and a browser stops asking.
    for request in [
        events_request(&csrf, None, ""),
        events_request(&csrf, Some("not-a-session"), ""),
        events_request("another-key", Some(&cookie), ""),
    ] {
        let (status, _) = open(&inbox, request).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
    }

    let (_, events) = open(&inbox, events_request(&csrf, Some(&cookie), "")).await;
    let mut events = events.unwrap();
    store.revoke_operator("bob").await.unwrap();
    let (registry, model) = (registry(), model());
    paused_run(&store, &registry, &model).await;
    // Nothing more is sent, and the stream ends.
    let limit = SESSION_CHECK + Duration::from_secs(5);
    match events.next(limit).await {
        Next::Ended => {}
        other => panic!("the stream of a revoked session ends, sending nothing: {other:?}"),
    }
    let (status, _) = open(&inbox, events_request(&csrf, Some(&cookie), "")).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_holds_a_bounded_number_of_streams_and_signing_out_ends_them() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let mut open_streams = Vec::new();
    for _ in 0..STREAMS_PER_SESSION {
        let (status, events) = open(&inbox, events_request(&csrf, Some(&cookie), "")).await;
        assert_eq!(status, StatusCode::OK);
        open_streams.push(events.unwrap());
    }
    let (status, _) = open(&inbox, events_request(&csrf, Some(&cookie), "")).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    // Another session is counted on its own.
    let (carol, carol_csrf) = signed_in(&inbox, &store, "carol").await;
    let (status, _) = open(&inbox, events_request(&carol_csrf, Some(&carol), "")).await;
    assert_eq!(status, StatusCode::OK);
    // A stream closed gives its place back.
    drop(open_streams.pop());
    let (status, events) = open(&inbox, events_request(&csrf, Some(&cookie), "")).await;
    assert_eq!(status, StatusCode::OK);
    open_streams.push(events.unwrap());

    // Signed out: every stream of the session ends.
    let signed_out = send(
        &inbox,
        common::post(
            &format!("/s/{csrf}/sign-out"),
            Some(&cookie),
            Some(common::ORIGIN),
            &[("csrf", &csrf)],
        ),
    )
    .await;
    assert_eq!(signed_out.status, StatusCode::SEE_OTHER);
    let (registry, model) = (registry(), model());
    paused_run(&store, &registry, &model).await;
    for mut events in open_streams {
        let limit = SESSION_CHECK + Duration::from_secs(5);
        assert!(matches!(events.next(limit).await, Next::Ended));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_connect_to_the_inbox_only_and_hold_no_script() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let list = send(&inbox, get(&format!("/s/{csrf}/"), Some(&cookie))).await;
    let csp = list.headers[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap();
    assert!(csp.contains("script-src 'self';"), "{csp}");
    assert!(csp.contains("connect-src 'self';"), "{csp}");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(!csp.contains("unsafe"), "{csp}");
    // The one script is the inbox's file; the list follows from its
    // marker, and what the script reads again is marked too.
    assert_eq!(list.body.matches("<script").count(), 1, "{}", list.body);
    assert!(list.body.contains("<script src=\"/inbox.js\" defer>"));
    assert!(list.body.contains("data-live=\"list\""), "{}", list.body);
    assert!(list.body.contains("id=\"listing\""), "{}", list.body);
    assert!(list.body.contains("id=\"count\""), "{}", list.body);
    let script = send(&inbox, get("/inbox.js", None)).await;
    assert!(script.body.contains("EventSource"));
    // The script writes no text it was sent into the page.
    assert!(!script.body.contains("innerHTML"), "{}", script.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_streams_ends_them_so_a_shutdown_is_not_held() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let (_, events) = open(&inbox, events_request(&csrf, Some(&cookie), "")).await;
    let mut events = events.unwrap();
    // A copy of the inbox closes the streams of every copy.
    inbox.clone().close_streams();
    assert!(matches!(
        events.next(Duration::from_secs(2)).await,
        Next::Ended
    ));
    let (status, _) = open(&inbox, events_request(&csrf, Some(&cookie), "")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    // The pages work on.
    let list = send(&inbox, get(&format!("/s/{csrf}/"), Some(&cookie))).await;
    assert_eq!(list.status, StatusCode::OK);
    // The store's watcher hands its connection back when the store closes.
    tokio::time::timeout(Duration::from_secs(5), store.close())
        .await
        .expect("the store closes while its watcher runs");
}
