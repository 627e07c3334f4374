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
//!   (`/s/KEY/`), which only the sign-in's answer gives, and the cookie
//!   is sent there only (`Path=/s/KEY/`) — a browser sends a host's
//!   cookies to every port of it, the key to none, and a cookie of the
//!   same name set from another port cannot take the session's place.
//! - **Every change** is a `POST` that carries the session's own token
//!   against cross-site requests and comes from the inbox's own origin; a
//!   decision carries the digest the page was shown with, and a run that
//!   changed since is refused with a link to it as it is now.
//! - **Everything a model, a server or the database wrote** is rendered as
//!   text: escaped by the markup ([`maud`]), its hidden characters shown as
//!   escapes ([`toolgate::visible`]), each in a direction-isolated element.
//!   No page holds a script: the content security policy allows the
//!   inbox's one file (`/inbox.js`) only, which keeps the session's address
//!   for a run's stable address and follows the runs (below); every
//!   action is a form, and works without it.
//! - **The list** (`/s/KEY/`) says how many runs wait and, per row, the
//!   server, tools, requester and channel, the arguments in one line and
//!   the age; it narrows by server, tool, requester, state and a search
//!   (a plain `GET` form), and keeps a history of decided runs — each
//!   filter the store's, in SQL, a page at a time
//!   ([`toolgate_store::RunFilter`]).
//! - **A run's page** (`/s/KEY/runs/ID`): the conversation that led to
//!   the turn, each call's gate and why in the store's words, who resumes
//!   the run and whether such a host was seen lately (its heartbeat,
//!   [`toolgate_store::Store::host_seen`]), and once it ran, the
//!   arguments each call ran with, its outcome and the final answer
//!   ([`toolgate_store::Store::ran_calls`]). Approving a write asks once
//!   more, on a page of its own, before anything is recorded. Where the
//!   turn needs several approvers, a later one is offered the first's
//!   verdicts and edits (or a denial), and one who approved nothing again.
//! - **Forms from schemas**: a call's arguments, edited, and the input a
//!   call waits for are given in fields built from the schema the
//!   reviewer was shown — strings, numbers and integers with their
//!   bounds, booleans, enums, arrays of primitives, objects one level
//!   deep — checked on the server by the one validator
//!   ([`toolgate::suspend::validate`]), each error beside its field, the
//!   page sent back as typed and nothing recorded until it fits; what
//!   fields cannot express is edited as JSON, and the page says so.
//! - **Servers and tools** (`/s/KEY/servers`): each server's declaration,
//!   data class, state and last import; each tool's wire name, its gate
//!   and why in the store's words ([`toolgate_store::ToolGate::words`], as
//!   the console says it), its own declaration, and a quarantined tool's
//!   change since it was accepted. An operator who may declare declares
//!   a server's approval and each tool's own there, and accepts a tool
//!   quarantined under its own "no approval": what tightens at once, what
//!   lets calls run without a person shown first and bound to the digest
//!   of the definitions shown.
//! - **Live**: the list and a run's page follow the runs as they
//!   change — a run starts waiting, is decided elsewhere, resumes or
//!   expires — through server-sent events under the session
//!   (`/s/KEY/events`), each the run's id and one word from the store's
//!   outbox ([`toolgate_store::Store::changes`]: PostgreSQL's `LISTEN`,
//!   polling on SQLite). The list reads its rows again in place; a run's
//!   page whose run changed says so before the operator acts and disables
//!   its buttons. A page connects to the inbox alone
//!   (`connect-src 'self'`); a stream is bounded ([`STREAMS_PER_SESSION`],
//!   [`STREAMS`]) and ends with its session. Without JavaScript the pages
//!   are as they were.
//! - **A run's stable address**, [`run_link`] (`/runs/ID`), is what a
//!   notification links to: a browser signed in to the inbox opens it on
//!   the run, in its session; another is told how to sign in. Its answer
//!   is the same with the cookie or without, so it reveals no session's
//!   address (the browser keeps that, in the inbox origin's storage).
//! - **Only at its own address**: a request whose `Host` is not the public
//!   URL's (or the listen address given) is refused, so a page served
//!   under another name that resolves to the inbox reads and decides
//!   nothing; a refusal below the handlers (a form past
//!   [`FORM_LIMIT`]) is an inbox page too.
//! - **Beyond loopback**: behind an authenticating reverse proxy
//!   ([`Inbox::behind_proxy`]), whose word — proven with a shared secret
//!   on every request, never by its address — names the operator,
//!   recorded through the channel `proxy`; or over HTTPS, the router
//!   served on a TLS listener (the command line's is
//!   `toolgate_gateway::tls`).
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
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use toolgate_store::{Store, StoreError};

mod confirm;
mod conversation;
mod declare;
mod finished;
mod form;
mod gates;
mod guard;
mod links;
mod list;
mod live;
mod pages;
mod proxy;
mod resumer;
mod run;
mod servers;

pub use links::run_link;
pub use live::{KEEP_ALIVE, SESSION_CHECK, STREAMS, STREAMS_PER_SESSION};
pub use proxy::{MIN_SECRET_LEN, ProxyError, SECRET_HEADER, TrustedProxy};

use guard::{origin_of, same_origin, session_cookie, session_of, token_matches};
use run::{choose, decide, run_page};

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
    /// The authenticating proxy in front, whose word names the operator
    /// ([`Inbox::behind_proxy`]); none, and people sign in with links.
    proxy: Option<Arc<TrustedProxy>>,
    /// The event streams open now, shared by every copy of the inbox
    /// made from this one.
    streams: Arc<live::Streams>,
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
                proxy: None,
                streams: Arc::default(),
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
                proxy: inner.proxy.clone(),
                streams: Arc::clone(&inner.streams),
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
                proxy: inner.proxy.clone(),
                streams: Arc::clone(&inner.streams),
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
                proxy: inner.proxy.clone(),
                streams: Arc::clone(&inner.streams),
            }),
        }
    }

    /// The same inbox, behind an authenticating reverse proxy: the name
    /// `proxy` gives is the operator, recorded through the channel
    /// `proxy`, on requests that carry its secret — every other request is
    /// refused. Sign-in links are not used; every other check holds. See
    /// [`TrustedProxy`] and the module docs of the proxy's routes: `/`
    /// shows who the proxy names and opens the inbox for them.
    #[must_use]
    pub fn behind_proxy(self, proxy: TrustedProxy) -> Self {
        let inner = &self.inner;
        Self {
            inner: Arc::new(Inner {
                store: inner.store.clone(),
                origin: inner.origin.clone(),
                secure: inner.secure,
                hosts: inner.hosts.clone(),
                session_for: inner.session_for,
                failures: Mutex::default(),
                registry: inner.registry.clone(),
                proxy: Some(Arc::new(proxy)),
                streams: Arc::clone(&inner.streams),
            }),
        }
    }

    /// Ends every live page's event stream open now, and opens none
    /// from now on: call it when the server begins to shut down — a
    /// graceful shutdown waits for every connection to end, and a stream
    /// does not end by itself. The pages go on working without it.
    pub fn close_streams(&self) {
        self.inner.streams.close();
    }

    /// The origin every change must come from.
    pub fn origin(&self) -> &str {
        &self.inner.origin
    }

    /// Every page and action, each answer with the inbox's security
    /// headers.
    pub fn router(self) -> Router {
        // Behind a proxy, its word opens a session; else a sign-in link.
        let entry = if self.inner.proxy.is_some() {
            proxy::routes()
        } else {
            Router::new()
                .route("/", get(links::root))
                .route("/runs/{run}", get(links::run_address))
                .route("/sign-in", get(sign_in_page).post(sign_in))
                .route("/signed-out", get(links::signed_out))
        };
        Router::new()
            .merge(entry)
            .route("/inbox.js", get(links::script))
            .route("/s/{key}/", get(list::list))
            .route("/s/{key}/events", get(live::events))
            .route("/style.css", get(style))
            .route("/s/{key}/sign-out", post(sign_out))
            .route("/s/{key}/runs/{run}", get(run_page))
            .route("/s/{key}/runs/{run}/decide", post(decide))
            .route("/s/{key}/runs/{run}/choose", post(choose))
            .route("/s/{key}/servers", get(servers::servers))
            .route("/s/{key}/servers/accept", post(servers::accept))
            .route("/s/{key}/servers/declare", post(declare::declare_tool))
            .route("/s/{key}/servers/approval", post(declare::server_approval))
            .layer(axum::middleware::map_response(guard::as_a_page))
            .layer(axum::middleware::from_fn_with_state(
                self.clone(),
                guard::own_host,
            ))
            // The first to read a request: behind a proxy, its secret.
            .layer(axum::middleware::from_fn_with_state(
                self.clone(),
                proxy::trusted,
            ))
            .layer(axum::middleware::map_response(guard::secured))
            .with_state(self)
    }

    fn store(&self) -> &Store {
        &self.inner.store
    }
}

/// The largest form body the inbox reads: axum's default.
pub const FORM_LIMIT: usize = 2 * 1024 * 1024;

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
        (status, pages::refused(None, &self.to_string(), None)).into_response()
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
                &opened.session,
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
    let cleared = session_cookie(
        &inbox,
        &session,
        String::new(),
        cookie::time::Duration::ZERO,
    );
    Ok((
        [(header::SET_COOKIE, cleared.to_string())],
        Redirect::to("/signed-out"),
    )
        .into_response())
}

/// Now, in milliseconds since the Unix epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}
