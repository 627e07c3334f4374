//! The inbox behind an authenticating proxy, against a real store (SQLite,
//! and again on PostgreSQL): the name the proxy gives is the operator,
//! recorded through the channel `proxy`, on requests that carry the
//! proxy's secret — and only on those; a session is used only while the
//! proxy names its operator; a change still comes from the inbox's origin
//! with the session's token.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, Request, StatusCode, header};
use serde_json::{Map, Value, json};
use toolgate::run::{Outcome, Reply, RunOptions, RunRequest, ToolCall};
use toolgate::suspend::SuspendedRun;
use toolgate::testing::{MemoryLog, ScriptedModel};
use toolgate::{Agent, Execute, Registry, Tool, ToolOutput};
use toolgate_inbox::{Inbox, SECRET_HEADER, SESSION_COOKIE, TrustedProxy};
use toolgate_store::Store;

#[path = "../../store/tests/backend/mod.rs"]
mod backend;
use backend::TestDb;

mod common;
use common::{Answer, ORIGIN, get, post, send};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    backend::rerun_on_postgres();
}

const SECRET: &str = "7f3c1e9a0b5d4c2e8f6a1b3c5d7e9f00";
const USER: &str = "x-forwarded-user";

/// An inbox behind a proxy that names people in `X-Forwarded-User`.
async fn proxied(db: &TestDb) -> (Store, Inbox) {
    let store = Store::open(db.location()).await.unwrap();
    let proxy = TrustedProxy::new("X-Forwarded-User", &format!("{SECRET}\n")).unwrap();
    let inbox = Inbox::new(store.clone(), &format!("{ORIGIN}/")).behind_proxy(proxy);
    (store, inbox)
}

/// `request` as the proxy sends it: its secret (`secret`), and `user` as
/// the signed-in name.
fn through(mut request: Request<Body>, secret: Option<&str>, user: Option<&str>) -> Request<Body> {
    if let Some(secret) = secret {
        request
            .headers_mut()
            .insert(SECRET_HEADER, HeaderValue::from_str(secret).unwrap());
    }
    if let Some(user) = user {
        request
            .headers_mut()
            .insert(USER, HeaderValue::from_str(user).unwrap());
    }
    request
}

/// Opens the inbox as the proxy's `user`: the session cookie's value and
/// the session's key.
async fn entered(inbox: &Inbox, user: &str) -> (String, String) {
    let page = send(inbox, through(get("/", None), Some(SECRET), Some(user))).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("signed you in as"), "{}", page.body);
    assert!(page.body.contains(user), "{}", page.body);
    let opened = send(
        inbox,
        through(
            post("/enter", None, Some(ORIGIN), &[]),
            Some(SECRET),
            Some(user),
        ),
    )
    .await;
    assert_eq!(opened.status, StatusCode::SEE_OTHER, "{}", opened.body);
    let set = opened.headers[header::SET_COOKIE].to_str().unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let secret = set
        .split(';')
        .next()
        .and_then(|pair| pair.strip_prefix(&format!("{SESSION_COOKIE}=")))
        .unwrap()
        .to_owned();
    let location = opened.headers[header::LOCATION].to_str().unwrap();
    let key = location
        .strip_prefix("/s/")
        .and_then(|rest| rest.strip_suffix('/'))
        .unwrap()
        .to_owned();
    (secret, key)
}

#[tokio::test]
async fn a_request_without_the_proxys_secret_is_refused_and_says_why() {
    let db = TestDb::new().await;
    let (store, inbox) = proxied(&db).await;
    store
        .add_operator("bob", Duration::from_mins(10))
        .await
        .unwrap();
    let (cookie, key) = entered(&inbox, "bob").await;
    let list = format!("/s/{key}/");
    for (secret, why) in [
        (None, "carried no proxy secret"),
        (Some("0000"), "is not the inbox's"),
        (Some(&SECRET[1..]), "is not the inbox's"),
    ] {
        for path in ["/", list.as_str(), "/sign-in"] {
            let answer = send(
                &inbox,
                through(get(path, Some(&cookie)), secret, Some("bob")),
            )
            .await;
            assert_eq!(
                answer.status,
                StatusCode::FORBIDDEN,
                "{path}: {}",
                answer.body
            );
            assert!(answer.body.contains(why), "{path}: {}", answer.body);
            assert!(answer.body.contains("behind a proxy"), "{}", answer.body);
        }
        // Nothing opens a session either.
        let enter = send(
            &inbox,
            through(post("/enter", None, Some(ORIGIN), &[]), secret, Some("bob")),
        )
        .await;
        assert_eq!(enter.status, StatusCode::FORBIDDEN, "{}", enter.body);
        assert!(enter.headers.get(header::SET_COOKIE).is_none());
    }
    // The name sent twice is no name.
    let mut twice = through(get("/", None), Some(SECRET), Some("bob"));
    twice
        .headers_mut()
        .append(USER, HeaderValue::from_static("alice"));
    let answer = send(&inbox, twice).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
    // The same session, the secret given: the list.
    let answer = send(
        &inbox,
        through(get(&list, Some(&cookie)), Some(SECRET), Some("bob")),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
}

#[tokio::test]
async fn a_session_serves_only_the_operator_the_proxy_names() {
    let db = TestDb::new().await;
    let (store, inbox) = proxied(&db).await;
    for name in ["bob", "carol"] {
        store
            .add_operator(name, Duration::from_mins(10))
            .await
            .unwrap();
    }
    let (cookie, key) = entered(&inbox, "Bob").await;
    let list = format!("/s/{key}/");
    let answer = send(
        &inbox,
        through(get(&list, Some(&cookie)), Some(SECRET), Some("bob")),
    )
    .await;
    assert_eq!(
        answer.status,
        StatusCode::OK,
        "the same person: {}",
        answer.body
    );
    for user in [Some("carol"), None] {
        let answer = send(
            &inbox,
            through(get(&list, Some(&cookie)), Some(SECRET), user),
        )
        .await;
        assert_eq!(
            answer.status,
            StatusCode::SEE_OTHER,
            "{user:?}: {}",
            answer.body
        );
        assert!(!answer.body.contains(&key));
    }
    // `/` takes bob on to his session; carol is offered her own.
    let back = send(
        &inbox,
        through(get("/", Some(&cookie)), Some(SECRET), Some("bob")),
    )
    .await;
    assert_eq!(back.status, StatusCode::SEE_OTHER, "{}", back.body);
    assert_eq!(back.headers[header::LOCATION], list.as_str());
    let other = send(
        &inbox,
        through(get("/", Some(&cookie)), Some(SECRET), Some("carol")),
    )
    .await;
    assert_eq!(other.status, StatusCode::OK, "{}", other.body);
    assert!(!other.body.contains(&key));

    // A name the proxy signed in that is no operator's opens nothing.
    let stranger = send(
        &inbox,
        through(
            post("/enter", None, Some(ORIGIN), &[]),
            Some(SECRET),
            Some("mallory"),
        ),
    )
    .await;
    assert_eq!(stranger.status, StatusCode::FORBIDDEN, "{}", stranger.body);
    assert!(
        stranger.body.contains("not an operator"),
        "{}",
        stranger.body
    );
    assert!(stranger.headers.get(header::SET_COOKIE).is_none());
    // Nor does a revoked operator's name; and their session ends.
    store.revoke_operator("bob").await.unwrap();
    let revoked = send(
        &inbox,
        through(
            post("/enter", None, Some(ORIGIN), &[]),
            Some(SECRET),
            Some("bob"),
        ),
    )
    .await;
    assert_eq!(revoked.status, StatusCode::FORBIDDEN, "{}", revoked.body);
    let answer = send(
        &inbox,
        through(get(&list, Some(&cookie)), Some(SECRET), Some("bob")),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
}

#[tokio::test]
async fn entering_and_sign_in_links_are_checked_as_a_sign_in_is() {
    let db = TestDb::new().await;
    let (store, inbox) = proxied(&db).await;
    let link = store
        .add_operator("bob", Duration::from_mins(10))
        .await
        .unwrap();
    // From another origin, or saying nothing of it: refused.
    for origin in [Some("http://evil.example"), None] {
        let answer = send(
            &inbox,
            through(post("/enter", None, origin, &[]), Some(SECRET), Some("bob")),
        )
        .await;
        assert_eq!(
            answer.status,
            StatusCode::FORBIDDEN,
            "{origin:?}: {}",
            answer.body
        );
        assert!(answer.headers.get(header::SET_COOKIE).is_none());
    }
    // A link is not used behind the proxy: the proxy signs people in.
    let answer = send(
        &inbox,
        through(
            post("/sign-in", None, Some(ORIGIN), &[("token", &link.secret)]),
            Some(SECRET),
            Some("bob"),
        ),
    )
    .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.body);
    assert!(
        answer.body.contains("sign-in links are not used"),
        "{}",
        answer.body
    );
}

/// Deletes a branch.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct DeleteBranch;

impl Execute for DeleteBranch {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("deleted")
    }
}

/// A run of alice's, paused for approval of `delete_branch`.
async fn paused(store: &Store) -> SuspendedRun {
    let registry = Registry::builder().builtin(DeleteBranch).build().unwrap();
    let model = ScriptedModel::new([Reply::Calls {
        content: None,
        calls: vec![ToolCall {
            id: "c1".into(),
            name: "delete_branch".into(),
            arguments: json!({"branch": "old"}),
        }],
    }]);
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    let request = RunRequest {
        options: RunOptions::default(),
        ..RunRequest::new("alice", "tidy the branches")
    };
    let Ok(Outcome::AwaitingApproval(run)) = agent.start(request).await else {
        panic!("an approval pause");
    };
    let run = SuspendedRun::AwaitingApproval(run);
    store.save_suspended(&run, "demo").await.unwrap();
    run
}

#[tokio::test]
async fn a_decision_is_the_named_operators_through_the_proxy() {
    let db = TestDb::new().await;
    let (store, inbox) = proxied(&db).await;
    store
        .add_operator("bob", Duration::from_mins(10))
        .await
        .unwrap();
    let run = paused(&store).await;
    let (cookie, key) = entered(&inbox, "bob").await;
    let path = format!("/s/{key}/runs/{}/decide", run.run_id());
    let digest = run.digest();
    let form = [
        ("csrf", key.as_str()),
        ("digest", digest.as_str()),
        ("verdict", "deny"),
    ];
    // The checks of a change hold: another origin, or no token, records
    // nothing.
    let refused: [(Option<&str>, &str); 2] = [
        (Some("http://evil.example"), key.as_str()),
        (Some(ORIGIN), ""),
    ];
    for (origin, csrf) in refused {
        let answer: Answer = send(
            &inbox,
            through(
                post(
                    &path,
                    Some(&cookie),
                    origin,
                    &[
                        ("csrf", csrf),
                        ("digest", digest.as_str()),
                        ("verdict", "deny"),
                    ],
                ),
                Some(SECRET),
                Some("bob"),
            ),
        )
        .await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.body);
    }
    assert!(
        store
            .run_history(run.run_id())
            .await
            .unwrap()
            .decisions
            .is_empty()
    );
    let decided = send(
        &inbox,
        through(
            post(&path, Some(&cookie), Some(ORIGIN), &form),
            Some(SECRET),
            Some("bob"),
        ),
    )
    .await;
    assert_eq!(decided.status, StatusCode::SEE_OTHER, "{}", decided.body);
    let history = store.run_history(run.run_id()).await.unwrap();
    let [decision] = history.decisions.as_slice() else {
        panic!("one decision: {:?}", history.decisions);
    };
    assert_eq!(decision.record.decided_by, "bob");
    assert_eq!(decision.record.decided_by_source.as_str(), "signed_in");
    assert_eq!(
        decision
            .record
            .channel
            .map(toolgate::identity::Channel::as_str),
        Some("proxy")
    );
}

#[tokio::test]
async fn a_runs_stable_address_opens_the_run_in_the_named_operators_session() {
    let db = TestDb::new().await;
    let (store, inbox) = proxied(&db).await;
    store
        .add_operator("bob", Duration::from_mins(10))
        .await
        .unwrap();
    let run = paused(&store).await;
    let address = format!("/runs/{}", run.run_id());
    // Not from the proxy: refused, as everything is.
    let answer = send(&inbox, through(get(&address, None), None, Some("bob"))).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.body);
    // No session yet: the button, which opens one on the run.
    let page = send(
        &inbox,
        through(get(&address, None), Some(SECRET), Some("bob")),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("Open the run"), "{}", page.body);
    assert!(page.body.contains(run.run_id()), "{}", page.body);
    let opened = send(
        &inbox,
        through(
            post("/enter", None, Some(ORIGIN), &[("run", run.run_id())]),
            Some(SECRET),
            Some("bob"),
        ),
    )
    .await;
    assert_eq!(opened.status, StatusCode::SEE_OTHER, "{}", opened.body);
    let location = opened.headers[header::LOCATION].to_str().unwrap();
    assert!(
        location.starts_with("/s/") && location.ends_with(&format!("/runs/{}", run.run_id())),
        "{location}"
    );
    // With bob's session: straight on to the run in it.
    let (cookie, key) = entered(&inbox, "bob").await;
    let on = send(
        &inbox,
        through(get(&address, Some(&cookie)), Some(SECRET), Some("bob")),
    )
    .await;
    assert_eq!(on.status, StatusCode::SEE_OTHER, "{}", on.body);
    assert_eq!(
        on.headers[header::LOCATION],
        format!("/s/{key}/runs/{}", run.run_id()).as_str()
    );
    let shown = send(
        &inbox,
        through(
            get(&format!("/s/{key}/runs/{}", run.run_id()), Some(&cookie)),
            Some(SECRET),
            Some("bob"),
        ),
    )
    .await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    // Not a run's shape: not a run's address.
    let odd = send(
        &inbox,
        through(get("/runs/a.b", None), Some(SECRET), Some("bob")),
    )
    .await;
    assert_eq!(odd.status, StatusCode::NOT_FOUND, "{}", odd.body);
}
