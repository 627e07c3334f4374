//! What the inbox's test suites share: requests as a browser sends them
//! to the inbox's own host, and an operator signed in through its pages.
#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test binary uses part of it"
)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause"
)]

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use toolgate_inbox::{Inbox, SESSION_COOKIE};
use toolgate_store::Store;
use tower::ServiceExt as _;

use super::backend::TestDb;

pub mod catalogue;

/// The inbox's origin, as its public URL gives it.
pub const ORIGIN: &str = "http://127.0.0.1:8640";

pub struct Answer {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: String,
}

pub async fn send(inbox: &Inbox, request: Request<Body>) -> Answer {
    let response = inbox.clone().router().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 24)
        .await
        .unwrap();
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// The inbox's own host, as a browser names it.
pub const HOST: &str = "127.0.0.1:8640";

pub fn get(path: &str, cookie: Option<&str>) -> Request<Body> {
    let mut request = Request::get(path).header(header::HOST, HOST);
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, format!("{SESSION_COOKIE}={cookie}"));
    }
    request.body(Body::empty()).unwrap()
}

pub fn post(
    path: &str,
    cookie: Option<&str>,
    origin: Option<&str>,
    form: &[(&str, &str)],
) -> Request<Body> {
    let mut request = Request::post(path)
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, format!("{SESSION_COOKIE}={cookie}"));
    }
    if let Some(origin) = origin {
        request = request.header(header::ORIGIN, origin);
    }
    let body = form
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    request.body(Body::from(body)).unwrap()
}

/// Form encoding: every byte but the unreserved ones percent-encoded.
pub fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Signs `name` in through the inbox, as a browser does: the link's page,
/// then its form. Returns the session cookie's value and the page's token.
pub async fn signed_in(inbox: &Inbox, store: &Store, name: &str) -> (String, String) {
    let link = store
        .add_operator(name, Duration::from_mins(10))
        .await
        .unwrap();
    let page = send(inbox, get(&format!("/sign-in?token={}", link.secret), None)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.body.contains(&link.secret),
        "the form carries the token"
    );
    let answer = send(
        inbox,
        post("/sign-in", None, Some(ORIGIN), &[("token", &link.secret)]),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let set = answer.headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age="] {
        assert!(set.contains(attribute), "{set}");
    }
    let secret = set
        .split(';')
        .next()
        .and_then(|pair| pair.strip_prefix(&format!("{SESSION_COOKIE}=")))
        .unwrap()
        .to_owned();
    let session = store.session(&secret).await.unwrap().unwrap();
    // The session's pages live under its own key, which only this answer
    // gives.
    assert_eq!(
        answer.headers[header::LOCATION],
        format!("/s/{}/", session.csrf_token).as_str()
    );
    (secret, session.csrf_token)
}

pub async fn inbox(db: &TestDb) -> (Store, Inbox) {
    let store = Store::open(db.location()).await.unwrap();
    let inbox = Inbox::new(store.clone(), &format!("{ORIGIN}/"));
    (store, inbox)
}
