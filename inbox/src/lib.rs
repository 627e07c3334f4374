//! The operator's inbox on the web: the runs that wait, each call readable,
//! and a decision from a browser — at least as safe as the console.
//!
//! - **Who decides.** An operator signs in once with the one-time link
//!   `toolgate operator add NAME` printed; the session cookie that opens is
//!   `HttpOnly`, `SameSite=Strict`, expiring, and new at every sign-in. The
//!   signed-in name decides, through the channel `inbox`, under the same
//!   identity rules as the console: four eyes and several approvers hold
//!   across both. Revoking the operator ends their sessions at once. The
//!   cookie alone opens nothing: a session's pages live under its own key
//!   (`/s/KEY/`), which only the sign-in's answer gives — a browser sends
//!   the cookie to every port of the inbox's host, the key to none.
//! - **Every change** is a `POST` that carries the session's own token
//!   against cross-site requests and comes from the inbox's own origin; a
//!   decision carries the digest the page was shown with, and a run that
//!   changed since is refused with a link to it as it is now.
//! - **Everything a model, a server or the database wrote** is rendered as
//!   text: escaped by the markup ([`maud`]), its hidden characters shown as
//!   escapes ([`toolgate::visible`]), each in a direction-isolated element.
//!   No script runs on any page (the content security policy allows none);
//!   every action is a form.
//! - **Only at its own address**: a request whose `Host` is not the public
//!   URL's (or the listen address given) is refused, so a page served
//!   under another name that resolves to the inbox reads and decides
//!   nothing; a refusal below the handlers (a form past
//!   [`FORM_LIMIT`]) is an inbox page too.
//!
//! ```no_run
//! # async fn serve(store: toolgate_store::Store) -> std::io::Result<()> {
//! let inbox = toolgate_inbox::Inbox::new(store, "http://127.0.0.1:8640");
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8640").await?;
//! axum::serve(listener, inbox.router()).await
//! # }
//! ```

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use toolgate::identity::{Channel, IdentitySource, Operator};
use toolgate::suspend::{CallVerdict, TurnDigest};
use toolgate_store::{Answer, ClaimError, Session, Store, StoreError};

mod pages;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "toolgate_session";

/// How long a session lasts by default: 12 hours.
pub const DEFAULT_SESSION: Duration = Duration::from_hours(12);

/// How many failed sign-ins a minute the inbox takes before it refuses every
/// sign-in for the rest of that minute.
pub const SIGN_IN_FAILURES_PER_MINUTE: usize = 10;

/// How many runs a page of the waiting list shows.
pub const PAGE: u32 = 50;

/// The inbox over a store. Cheap to clone.
#[derive(Clone)]
pub struct Inbox {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    /// The origin a browser reaches the inbox at (`scheme://host:port`):
    /// every change must come from it.
    origin: String,
    /// Whether the cookie is sent over HTTPS only.
    secure: bool,
    /// The `Host` values the inbox answers: its public URL's authority,
    /// and those added ([`Inbox::answering_at`]). Any other is refused — a
    /// page of another name (DNS rebinding) never reads or decides.
    hosts: Vec<String>,
    session_for: Duration,
    /// When recent sign-ins failed, for the rate limit.
    failures: Mutex<VecDeque<Instant>>,
    /// The tools as offered, for "and from now on": a tool is declared
    /// "no approval" only when it is, now, the one the turn's reviewer was
    /// shown, which takes the registry to tell. Without it the inbox does
    /// not offer that act.
    registry: Option<Arc<toolgate::Registry>>,
}

impl Inbox {
    /// An inbox over `store`, reached by browsers at `public_url`
    /// (`http://127.0.0.1:8640`, say): its origin is the one every change
    /// must come from.
    pub fn new(store: Store, public_url: &str) -> Self {
        let origin = origin_of(public_url);
        let hosts = origin
            .split_once("://")
            .map(|(_, authority)| vec![authority.to_owned()])
            .unwrap_or_default();
        Self {
            inner: Arc::new(Inner {
                secure: origin.starts_with("https://"),
                hosts,
                origin,
                store,
                session_for: DEFAULT_SESSION,
                failures: Mutex::default(),
                registry: None,
            }),
        }
    }

    /// The same inbox, its sessions lasting `session_for`.
    #[must_use]
    pub fn with_session_for(self, session_for: Duration) -> Self {
        let inner = &self.inner;
        Self {
            inner: Arc::new(Inner {
                store: inner.store.clone(),
                origin: inner.origin.clone(),
                secure: inner.secure,
                hosts: inner.hosts.clone(),
                session_for,
                failures: Mutex::default(),
                registry: inner.registry.clone(),
            }),
        }
    }

    /// The same inbox, offering operators who may declare tools
    /// ([`toolgate_store::Store::set_may_declare`]) to approve a call "and
    /// from now on", checked against `registry` — the tools as its hosts
    /// offer them.
    #[must_use]
    pub fn with_registry(self, registry: Arc<toolgate::Registry>) -> Self {
        let inner = &self.inner;
        Self {
            inner: Arc::new(Inner {
                store: inner.store.clone(),
                origin: inner.origin.clone(),
                secure: inner.secure,
                hosts: inner.hosts.clone(),
                session_for: inner.session_for,
                failures: Mutex::default(),
                registry: Some(registry),
            }),
        }
    }

    /// The same inbox, answering requests that name `host` (`host[:port]`,
    /// as a `Host` header does — the address it listens on, say) besides
    /// its public URL's. Pages read there still make no change: a change
    /// comes from the public URL's origin only.
    #[must_use]
    pub fn answering_at(self, host: &str) -> Self {
        let inner = &self.inner;
        let mut hosts = inner.hosts.clone();
        let host = host.trim().to_ascii_lowercase();
        if !hosts.contains(&host) {
            hosts.push(host);
        }
        Self {
            inner: Arc::new(Inner {
                store: inner.store.clone(),
                origin: inner.origin.clone(),
                secure: inner.secure,
                hosts,
                session_for: inner.session_for,
                failures: Mutex::default(),
                registry: inner.registry.clone(),
            }),
        }
    }

    /// The origin every change must come from.
    pub fn origin(&self) -> &str {
        &self.inner.origin
    }

    /// Every page and action, each answer with the inbox's security
    /// headers.
    pub fn router(self) -> Router {
        Router::new()
            .route("/", get(signed_out))
            .route("/s/{key}/", get(waiting))
            .route("/style.css", get(style))
            .route("/sign-in", get(sign_in_page).post(sign_in))
            .route("/s/{key}/sign-out", post(sign_out))
            .route("/signed-out", get(signed_out))
            .route("/s/{key}/runs/{run}", get(run_page))
            .route("/s/{key}/runs/{run}/decide", post(decide))
            .route("/s/{key}/runs/{run}/choose", post(choose))
            .layer(axum::middleware::map_response(as_a_page))
            .layer(axum::middleware::from_fn_with_state(self.clone(), own_host))
            .layer(axum::middleware::map_response(secured))
            .with_state(self)
    }

    fn store(&self) -> &Store {
        &self.inner.store
    }
}

/// `scheme://host[:port]` of a URL, lower-cased, without a path or a
/// trailing slash.
fn origin_of(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    format!(
        "{}://{}",
        scheme.to_ascii_lowercase(),
        authority.to_ascii_lowercase()
    )
}

/// Whether `host` (a `Host` header's value) is one the inbox answers: one
/// of `hosts`, compared without case, an `http` URL's `:80` or an `https`
/// URL's `:443` the same as none.
fn is_own_host(hosts: &[String], secure: bool, host: &str) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let default_port = if secure { ":443" } else { ":80" };
    let bare = host.strip_suffix(default_port).unwrap_or(&host);
    hosts
        .iter()
        .any(|own| own == &host || own.strip_suffix(default_port).unwrap_or(own) == bare)
}

/// Every request must name the inbox's own host: a page served under
/// another name that resolves to the inbox's address (DNS rebinding) is
/// its own origin to the browser, and must read and decide nothing.
async fn own_host(
    State(inbox): State<Inbox>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .or_else(|| {
            request
                .uri()
                .authority()
                .map(axum::http::uri::Authority::as_str)
        });
    match host {
        Some(host) if is_own_host(&inbox.inner.hosts, inbox.inner.secure, host) => {
            next.run(request).await
        }
        _ => {
            tracing::warn!(
                host = %toolgate::visible::visible(host.unwrap_or("(none)")),
                "a request naming another host is refused"
            );
            (
                StatusCode::MISDIRECTED_REQUEST,
                pages::refused(
                    &format!(
                        "this inbox answers at {} only, not at the address this request named",
                        inbox.inner.origin
                    ),
                    Some("/"),
                ),
            )
                .into_response()
        }
    }
}

/// A refusal made below the inbox's own handlers — a body past the limit,
/// a form that does not read — answered as an inbox page that says so and
/// leads back, not as bare text.
async fn as_a_page(response: Response) -> Response {
    let is_text = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|kind| kind.starts_with("text/plain"));
    let status = response.status();
    if !is_text || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let why = match status {
        StatusCode::PAYLOAD_TOO_LARGE => format!(
            "the form is larger than the inbox takes ({} MiB); nothing was recorded",
            FORM_LIMIT / (1024 * 1024)
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE
        | StatusCode::UNPROCESSABLE_ENTITY
        | StatusCode::BAD_REQUEST => "the form could not be read; nothing was recorded".to_owned(),
        StatusCode::METHOD_NOT_ALLOWED => "this address takes no such request".to_owned(),
        _ => "the request could not be answered; nothing was recorded".to_owned(),
    };
    (status, pages::refused(&why, Some("/"))).into_response()
}

/// The largest form body the inbox reads: axum's default.
pub const FORM_LIMIT: usize = 2 * 1024 * 1024;

/// The security headers of every answer: no script, no frame, no referrer
/// to another origin, no caching, no sniffing.
async fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let set = |headers: &mut HeaderMap, name: header::HeaderName, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(
        headers,
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    // The inbox's own forms keep their origin (`Origin` is the inbox's, not
    // `null`, so a plain-http public URL signs in); no other origin is ever
    // sent a referrer, which would carry a session's key.
    set(headers, header::REFERRER_POLICY, "same-origin");
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::CACHE_CONTROL, "no-store");
    response
}

async fn style() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        pages::STYLE,
    )
        .into_response()
}

/// Why a request was refused, as the page that says so.
#[derive(Debug, thiserror::Error)]
enum Refused {
    #[error("you are not signed in, or your session ended")]
    NotSignedIn,
    #[error("this request did not come from the inbox's own pages")]
    WrongOrigin,
    #[error("this form is not one the inbox gave this session")]
    BadToken,
    #[error("too many sign-ins failed in the last minute; wait a minute")]
    TooManySignIns,
    #[error("{0}")]
    SignIn(StoreError),
    #[error("{0}")]
    Store(#[from] StoreError),
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let status = match &self {
            Refused::NotSignedIn => return Redirect::to("/signed-out").into_response(),
            Refused::WrongOrigin | Refused::BadToken => StatusCode::FORBIDDEN,
            Refused::TooManySignIns => StatusCode::TOO_MANY_REQUESTS,
            Refused::SignIn(_) => StatusCode::UNAUTHORIZED,
            Refused::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        tracing::warn!(status = status.as_u16(), reason = %self, "inbox request refused");
        (status, pages::refused(&self.to_string(), None)).into_response()
    }
}

/// The session the request's cookie names, if it is live and `key` — the
/// path its pages live under — is its own. The cookie alone opens nothing:
/// a browser sends it to every port of the inbox's host, the key only to
/// the inbox.
async fn session_of(
    inbox: &Inbox,
    headers: &HeaderMap,
    key: &str,
) -> Result<(String, Session), Refused> {
    // Every cookie of the name, not the first: a page on another port of
    // the host can set one of its own (on a narrower path, sent first),
    // and must not lock the operator out. A bounded few are tried.
    let secrets: Vec<String> = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .filter_map(Result::ok)
        .filter(|cookie| cookie.name() == SESSION_COOKIE)
        .map(|cookie| cookie.value().to_owned())
        .take(SESSION_COOKIES_TRIED)
        .collect();
    for secret in secrets {
        let Some(session) = inbox.store().session(&secret).await? else {
            continue;
        };
        if token_matches(&session, key).is_ok() {
            return Ok((secret, session));
        }
    }
    Err(Refused::NotSignedIn)
}

/// How many cookies of the session's name a request may carry and have
/// tried.
const SESSION_COOKIES_TRIED: usize = 8;

/// The session's cookie: `HttpOnly`, `SameSite=Strict`, the whole inbox's,
/// `Secure` under an https public URL, living `max_age` (zero clears it).
fn session_cookie(
    inbox: &Inbox,
    value: String,
    max_age: cookie::time::Duration,
) -> cookie::Cookie<'static> {
    cookie::Cookie::build((SESSION_COOKIE, value))
        .http_only(true)
        .same_site(cookie::SameSite::Strict)
        .path("/")
        .secure(inbox.inner.secure)
        .max_age(max_age)
        .build()
}

/// Who decides through this session: the signed-in name, named by signing
/// in, through the inbox — under the same identity rules as the console.
fn decider(session: &Session) -> Result<Operator, Refused> {
    Operator::new(&session.operator, IdentitySource::SignedIn)
        .map(|operator| operator.via(Channel::Inbox))
        .map_err(|error| {
            Refused::Store(StoreError::InvalidOperatorName {
                name: toolgate::visible::visible(&session.operator).into_owned(),
                reason: error.to_string(),
            })
        })
}

/// A change must come from the inbox's own origin: its `Origin` header
/// names it — or, where the browser withholds the origin (under a
/// `Referrer-Policy: no-referrer`, say, a form's `Origin` is `null`),
/// the browser says the request comes from the same origin
/// (`Sec-Fetch-Site: same-origin`, which no page can set). Anything else —
/// another origin, another port of the same host (same-site, not
/// same-origin), no word at all — is refused.
fn same_origin(inbox: &Inbox, headers: &HeaderMap) -> Result<(), Refused> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    let fetched_from = text("sec-fetch-site");
    match text(header::ORIGIN.as_str()) {
        Some(origin) if origin != "null" => {
            if origin_of(origin) == inbox.origin() {
                Ok(())
            } else {
                Err(Refused::WrongOrigin)
            }
        }
        // No origin given, or `null`: only the browser's word will do.
        _ if fetched_from == Some("same-origin") => Ok(()),
        _ => Err(Refused::WrongOrigin),
    }
}

/// The form's token must be the session's own.
fn token_matches(session: &Session, given: &str) -> Result<(), Refused> {
    let expected = session.csrf_token.as_bytes();
    let given = given.as_bytes();
    // Compared in full whatever the first difference, so the time taken
    // tells nothing.
    let differs = expected.len() != given.len()
        || expected
            .iter()
            .zip(given)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            != 0;
    if differs {
        Err(Refused::BadToken)
    } else {
        Ok(())
    }
}

#[derive(Deserialize)]
struct SignInQuery {
    #[serde(default)]
    token: String,
}

/// The page a sign-in link opens: a button that signs in. Opening a link
/// uses nothing up — a preview of the link cannot spend it.
async fn sign_in_page(Query(query): Query<SignInQuery>) -> Response {
    pages::sign_in(&query.token).into_response()
}

#[derive(Deserialize)]
struct SignInForm {
    #[serde(default)]
    token: String,
}

async fn sign_in(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Form(form): Form<SignInForm>,
) -> Result<Response, Refused> {
    same_origin(&inbox, &headers)?;
    let minute = Duration::from_mins(1);
    let attempt = Instant::now();
    {
        let mut failures = inbox
            .inner
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while failures.front().is_some_and(|at| at.elapsed() > minute) {
            failures.pop_front();
        }
        if failures.len() >= SIGN_IN_FAILURES_PER_MINUTE {
            return Err(Refused::TooManySignIns);
        }
        // Counted before the check, as a failure until it succeeds: sign-ins
        // sent at once cannot all be tried before any is counted.
        failures.push_back(attempt);
    }
    match inbox
        .store()
        .sign_in(&form.token, inbox.inner.session_for)
        .await
    {
        Ok(opened) => {
            // A sign-in that succeeded is no failure: its count is taken
            // back.
            {
                let mut failures = inbox
                    .inner
                    .failures
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(at) = failures.iter().rposition(|at| *at == attempt) {
                    failures.remove(at);
                }
            }
            let cookie = session_cookie(
                &inbox,
                opened.secret,
                cookie::time::Duration::seconds(
                    i64::try_from(inbox.inner.session_for.as_secs()).unwrap_or(i64::MAX),
                ),
            );
            tracing::info!(operator = %opened.session.operator, "signed in to the inbox");
            Ok((
                [(header::SET_COOKIE, cookie.to_string())],
                Redirect::to(&format!("{}/", pages::base(&opened.session))),
            )
                .into_response())
        }
        // Counted already.
        Err(StoreError::SignInRefused) => Err(Refused::SignIn(StoreError::SignInRefused)),
        Err(error) => Err(Refused::Store(error)),
    }
}

#[derive(Deserialize)]
struct TokenForm {
    #[serde(default)]
    csrf: String,
}

async fn sign_out(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path(key): Path<String>,
    Form(form): Form<TokenForm>,
) -> Result<Response, Refused> {
    same_origin(&inbox, &headers)?;
    let (secret, session) = session_of(&inbox, &headers, &key).await?;
    token_matches(&session, &form.csrf)?;
    inbox.store().end_session(&secret).await?;
    let cleared = session_cookie(&inbox, String::new(), cookie::time::Duration::ZERO);
    Ok((
        [(header::SET_COOKIE, cleared.to_string())],
        Redirect::to("/signed-out"),
    )
        .into_response())
}

async fn signed_out() -> Response {
    pages::signed_out().into_response()
}

#[derive(Deserialize)]
struct PageQuery {
    before: Option<i64>,
}

async fn waiting(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path(key): Path<String>,
    Query(query): Query<PageQuery>,
) -> Result<Response, Refused> {
    let (_, session) = session_of(&inbox, &headers, &key).await?;
    let runs = inbox.store().waiting_page(query.before, PAGE).await?;
    let next = (runs.len() == PAGE as usize)
        .then(|| runs.last().map(|r| r.suspension_id))
        .flatten();
    Ok(pages::waiting(&session, &runs, next).into_response())
}

async fn run_page(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path((key, run)): Path<(String, String)>,
) -> Result<Response, Refused> {
    let (_, session) = session_of(&inbox, &headers, &key).await?;
    let history = inbox.store().run_history(&run).await?;
    let paused = inbox.store().latest_suspended(&run).await.ok();
    let unknown = inbox.store().unknown_calls(&run).await?;
    if history.suspensions.is_empty() {
        return Ok((
            StatusCode::NOT_FOUND,
            pages::refused("there is no such run", None),
        )
            .into_response());
    }
    let may_declare = session.may_declare && inbox.inner.registry.is_some();
    Ok(pages::run(
        &session,
        &run,
        paused.as_ref(),
        &history,
        &unknown,
        may_declare,
    )
    .into_response())
}

/// A decision form's fields, each named once: `csrf`, `digest`, `verdict`
/// (`approve`, `deny`, or `calls` — then `call:ID` = `approve`, `deny` or
/// `edit` for each call, with `reason:ID` and `args:ID`).
struct DecideForm {
    fields: std::collections::BTreeMap<String, String>,
}

impl DecideForm {
    /// The fields, or the first one named twice: a form whose meaning
    /// depends on which copy is read is refused.
    fn new(pairs: Vec<(String, String)>) -> Result<Self, String> {
        let mut fields = std::collections::BTreeMap::new();
        for (name, value) in pairs {
            if fields.contains_key(&name) {
                return Err(name);
            }
            fields.insert(name, value);
        }
        Ok(Self { fields })
    }

    fn get(&self, name: &str) -> &str {
        self.fields.get(name).map_or("", String::as_str)
    }

    /// The answer the form gives, or why it gives none.
    fn answer(&self) -> Result<Answer, String> {
        match self.get("verdict") {
            "approve" => Ok(Answer::Approve),
            "deny" => Ok(Answer::Deny),
            "input" => serde_json::from_str(self.get("input"))
                .map(Answer::Input)
                .map_err(|error| format!("the input is not JSON: {error}")),
            "calls" => {
                let mut calls = std::collections::BTreeMap::new();
                for (name, choice) in &self.fields {
                    let Some(call) = name.strip_prefix("call:") else {
                        continue;
                    };
                    let verdict = match choice.as_str() {
                        "approve" => CallVerdict::Approve,
                        "deny" => CallVerdict::Deny {
                            reason: self.get(&format!("reason:{call}")).trim().to_owned(),
                        },
                        "edit" => {
                            let text = self.get(&format!("args:{call}"));
                            let arguments = serde_json::from_str(text).map_err(|error| {
                                format!(
                                    "the edited arguments of call `{}` are not JSON: {error}",
                                    toolgate::visible::visible(call)
                                )
                            })?;
                            CallVerdict::Edit { arguments }
                        }
                        other => {
                            return Err(format!(
                                "call `{}`: `{}` is no verdict (approve, deny or edit)",
                                toolgate::visible::visible(call),
                                toolgate::visible::visible(other)
                            ));
                        }
                    };
                    calls.insert(call.to_owned(), verdict);
                }
                Ok(Answer::Calls(calls))
            }
            _ => Err("the form names no verdict: approve, deny, call by call, or input".to_owned()),
        }
    }
}

async fn decide(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path((key, run)): Path<(String, String)>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Result<Response, Refused> {
    same_origin(&inbox, &headers)?;
    let (_, session) = session_of(&inbox, &headers, &key).await?;
    let bad_form =
        |why: String| (StatusCode::BAD_REQUEST, pages::refused(&why, None)).into_response();
    // A field named twice: no form the inbox gave names one twice.
    let form = DecideForm::new(pairs).map_err(|twice| {
        tracing::warn!(field = %toolgate::visible::visible(&twice), "a decision form names a field twice");
        Refused::BadToken
    })?;
    token_matches(&session, form.get("csrf"))?;
    let answer = match form.answer() {
        Ok(answer) => answer,
        Err(why) => return Ok(bad_form(why)),
    };
    let decider = decider(&session)?;
    let digest = TurnDigest::from_text(form.get("digest"));
    let fresh = format!(
        "{}/runs/{}",
        pages::base(&session),
        pages::path_segment(&run)
    );
    let allow_tool = form.get("allow_tool").trim();
    if !allow_tool.is_empty() {
        return from_now_on(&inbox, &session, &run, &digest, answer, allow_tool, &fresh).await;
    }
    match inbox
        .store()
        .decide(&run, Some(&digest), &decider, answer)
        .await
    {
        Ok(_) => Ok(Redirect::to(&fresh).into_response()),
        Err(ClaimError::StaleDigest { .. }) => Ok((
            StatusCode::CONFLICT,
            pages::refused(
                "this run changed since the page was shown — decided elsewhere, or paused afresh; nothing was recorded",
                Some(&fresh),
            ),
        )
            .into_response()),
        Err(ClaimError::NotFound(_)) => Ok((
            StatusCode::CONFLICT,
            pages::refused(
                "this run no longer waits for a decision; nothing was recorded",
                Some(&fresh),
            ),
        )
            .into_response()),
        Err(error @ ClaimError::AlreadyDecided { .. }) => Ok((
            StatusCode::CONFLICT,
            pages::refused(&error.to_string(), Some(&fresh)),
        )
            .into_response()),
        Err(error) => Ok((
            StatusCode::FORBIDDEN,
            pages::refused(&error.to_string(), Some(&fresh)),
        )
            .into_response()),
    }
}

/// An approval "and from now on": the decision, and `tool` declared "no
/// approval" — only for an operator given that power, only where the
/// inbox can tell the tool is, now, the one the reviewer was shown.
async fn from_now_on(
    inbox: &Inbox,
    session: &Session,
    run: &str,
    digest: &TurnDigest,
    answer: Answer,
    tool: &str,
    fresh: &str,
) -> Result<Response, Refused> {
    let refused = |status: StatusCode, why: String| {
        Ok((status, pages::refused(&why, Some(fresh))).into_response())
    };
    let Some(registry) = inbox
        .inner
        .registry
        .as_ref()
        .filter(|_| session.may_declare)
    else {
        return refused(
            StatusCode::FORBIDDEN,
            "you may not declare tools from the inbox (an operator gives that with `toolgate operator add NAME --may-declare`); nothing was recorded".to_owned(),
        );
    };
    let Some((server, _)) = tool.split_once('.') else {
        return refused(
            StatusCode::BAD_REQUEST,
            format!(
                "`{}` is not an imported tool; nothing was recorded",
                toolgate::visible::visible(tool)
            ),
        );
    };
    let decider = decider(session)?;
    let shown = match inbox.store().acceptance(server, &[tool.to_owned()]).await {
        Ok(acceptance) => acceptance.digest,
        Err(error) => return refused(StatusCode::FORBIDDEN, error.to_string()),
    };
    let Ok(toolgate::suspend::SuspendedRun::AwaitingApproval(waiting)) =
        inbox.store().load_suspended(run).await
    else {
        return refused(
            StatusCode::CONFLICT,
            "this run no longer waits for approval; nothing was recorded".to_owned(),
        );
    };
    let now = waiting.reviewed_again(registry).await;
    let binding = toolgate_store::FromNowOn {
        tool,
        shown: &shown,
        now: now.review(),
    };
    match inbox
        .store()
        .decide_and_allow_tool(run, Some(digest), &decider, answer, binding)
        .await
    {
        Ok(allowed) => match allowed.declared {
            Ok(_) => Ok(Redirect::to(fresh).into_response()),
            Err(error) => refused(
                StatusCode::CONFLICT,
                format!(
                    "the call is approved, but tool `{}` was not declared: {error}",
                    toolgate::visible::visible(tool)
                ),
            ),
        },
        Err(ClaimError::StaleDigest { .. }) => refused(
            StatusCode::CONFLICT,
            "this run changed since the page was shown — decided elsewhere, or paused afresh; nothing was recorded".to_owned(),
        ),
        Err(error) => refused(StatusCode::FORBIDDEN, error.to_string()),
    }
}

/// Run again, or not, a call whose outcome is unknown: `csrf`, `call`,
/// `digest` (the one shown beside the call), `choice` (`rerun` or `skip`)
/// and `reason`.
async fn choose(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path((key, run)): Path<(String, String)>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Result<Response, Refused> {
    same_origin(&inbox, &headers)?;
    let (_, session) = session_of(&inbox, &headers, &key).await?;
    let form = DecideForm::new(pairs).map_err(|_| Refused::BadToken)?;
    token_matches(&session, form.get("csrf"))?;
    let choice = match form.get("choice") {
        "rerun" => toolgate_store::Choice::Rerun,
        "skip" => toolgate_store::Choice::Skip,
        _ => {
            return Ok((
                StatusCode::BAD_REQUEST,
                pages::refused("the form names no choice: rerun or skip", None),
            )
                .into_response());
        }
    };
    let decider = decider(&session)?;
    let digest = toolgate::suspend::RerunDigest::from_text(form.get("digest"));
    let choosing = toolgate_store::Choosing {
        call_id: form.get("call"),
        digest: &digest,
        choice,
        reason: form.get("reason"),
    };
    let fresh = format!(
        "{}/runs/{}",
        pages::base(&session),
        pages::path_segment(&run)
    );
    match inbox.store().choose(&run, &decider, &choosing).await {
        Ok(_) => Ok(Redirect::to(&fresh).into_response()),
        Err(error) => Ok((
            StatusCode::FORBIDDEN,
            pages::refused(&error.to_string(), Some(&fresh)),
        )
            .into_response()),
    }
}
