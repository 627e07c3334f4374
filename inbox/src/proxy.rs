//! The inbox behind an authenticating reverse proxy
//! ([`Inbox::behind_proxy`]): the proxy signs people in, and names the
//! signed-in one in a header of its choosing; that name is the operator,
//! recorded through the channel `proxy`.
//!
//! - **Trusted only from the proxy.** The proxy proves itself on every
//!   request with a shared secret ([`SECRET_HEADER`]), compared in
//!   constant time and removed before anything else reads the request. A
//!   request without it, or with another, is refused and told why —
//!   whatever address it comes from: on loopback any local process (an
//!   agent's shell among them) could send a name.
//! - **Only operators.** The name must be an operator's who was added
//!   (`toolgate operator add NAME`) and not revoked: whoever the proxy
//!   lets in, only operators decide, and revoking one shuts them out here
//!   too.
//! - **Every other check holds.** The proxy's word opens a session as a
//!   sign-in link does (`/` shows who the proxy names, a button opens the
//!   inbox); its pages live under the session's key, every change is a
//!   `POST` from the public URL's origin (`Origin`, or `Sec-Fetch-Site:
//!   same-origin`) carrying the session's token, and the session is used
//!   only while the proxy names its operator on that very request — a
//!   session opened for alice is refused once the proxy names bob.
//!   Sign-in links are not used here.
//! - **A run's stable address** (`/runs/ID`, what a notification links
//!   to) goes on to the run in the named operator's session, or — without
//!   one — shows the same button, which opens the session on that run.
//!   It answers only requests from the proxy that name an operator, and a
//!   page of another site that opens it cannot read where it leads.

use axum::extract::{Form, Path, Request, State};
use axum::http::{HeaderMap, HeaderName, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use maud::html;
use toolgate::identity::{IdentitySource, Operator};
use toolgate_store::StoreError;
use toolgate_store::proxy::{ProxySecret, ProxySecretError, Unproven};

use crate::guard::{same_origin, session_cookie};
use crate::{Inbox, Refused, SESSION_COOKIE, pages};

// The proxy's proof is the store's, the gateway's too: the header, the
// shortest secret, the check in constant time.
pub use toolgate_store::proxy::{MIN_SECRET_LEN, SECRET_HEADER};

/// The proxy the inbox trusts: the header it names the signed-in person
/// in, and the secret it proves itself with.
pub struct TrustedProxy {
    user_header: HeaderName,
    /// The secret: compared, in constant time, with a request's.
    secret: ProxySecret,
}

impl std::fmt::Debug for TrustedProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrustedProxy")
            .field("user_header", &self.user_header)
            .field("secret", &"[redacted]")
            .finish()
    }
}

/// A trusted proxy that cannot be set up as given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The user header's name is not a header name, or one the inbox reads
    /// for itself.
    #[error(
        "`{0}` cannot carry the operator's name: give the name of the header your proxy sets to the signed-in user (e.g. `X-Forwarded-User`), not one of Host, Cookie, Origin, Authorization or {SECRET_HEADER}"
    )]
    UserHeader(String),
    /// The secret is too short to be one.
    #[error(
        "the proxy's secret is {0} bytes long: it must be at least {MIN_SECRET_LEN} (make one with `openssl rand -hex 32`)"
    )]
    ShortSecret(usize),
    /// The secret cannot be taken (its file unreadable, say).
    #[error(transparent)]
    Secret(ProxySecretError),
}

impl TrustedProxy {
    /// A proxy that names the signed-in person in `user_header` and sends
    /// `secret` in [`SECRET_HEADER`] with every request (surrounding
    /// whitespace, a file's final newline say, is not part of it).
    pub fn new(user_header: &str, secret: &str) -> Result<Self, ProxyError> {
        let secret = ProxySecret::new(secret).map_err(|error| match error {
            ProxySecretError::Short(len) => ProxyError::ShortSecret(len),
            other => ProxyError::Secret(other),
        })?;
        Self::with_secret(user_header, secret)
    }

    /// A proxy that names the signed-in person in `user_header` and sends
    /// `secret` in [`SECRET_HEADER`] with every request (read from a file
    /// with [`ProxySecret::read`], say).
    pub fn with_secret(user_header: &str, secret: ProxySecret) -> Result<Self, ProxyError> {
        let name = HeaderName::from_bytes(user_header.trim().as_bytes())
            .map_err(|_| ProxyError::UserHeader(user_header.to_owned()))?;
        let own = [
            header::HOST,
            header::COOKIE,
            header::ORIGIN,
            header::AUTHORIZATION,
            HeaderName::from_static(SECRET_HEADER),
        ];
        if own.contains(&name) {
            return Err(ProxyError::UserHeader(user_header.to_owned()));
        }
        Ok(Self {
            user_header: name,
            secret,
        })
    }

    /// The header the proxy names the signed-in person in.
    pub fn user_header(&self) -> &HeaderName {
        &self.user_header
    }
}

/// Why a request did not come from the trusted proxy.
#[derive(Debug, thiserror::Error)]
enum Untrusted {
    #[error(
        "this inbox is served behind a proxy and answers only requests that come through it: this one carried no proxy secret ({SECRET_HEADER})"
    )]
    NoSecret,
    #[error(
        "this inbox is served behind a proxy and answers only requests that come through it: this one carried a proxy secret ({SECRET_HEADER}) that is not the inbox's"
    )]
    WrongSecret,
    #[error(
        "the proxy named the signed-in user more than once, or in characters that do not read: it must set its header ({0}) to one name, replacing any the browser sent"
    )]
    UnreadableUser(String),
}

/// Behind a trusted proxy, the first to read every request: refused unless
/// it carries the proxy's secret, which is then removed; the name the proxy
/// gives must read as one. Without a trusted proxy, the request goes on
/// untouched.
pub(crate) async fn trusted(
    State(inbox): State<Inbox>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(proxy) = inbox.inner.proxy.as_deref() else {
        return next.run(request).await;
    };
    // Whatever the verdict, no one further reads the secret.
    let verdict = match proxy.secret.take_proof(request.headers_mut()) {
        Err(Unproven::Missing) => Err(Untrusted::NoSecret),
        Err(_) => Err(Untrusted::WrongSecret),
        Ok(()) => {
            let mut users = request.headers().get_all(&proxy.user_header).iter();
            match (users.next(), users.next()) {
                (Some(user), None) if user.to_str().is_err() => Err(Untrusted::UnreadableUser(
                    proxy.user_header.as_str().to_owned(),
                )),
                (Some(_), Some(_)) => Err(Untrusted::UnreadableUser(
                    proxy.user_header.as_str().to_owned(),
                )),
                _ => Ok(()),
            }
        }
    };
    match verdict {
        Ok(()) => next.run(request).await,
        Err(why) => {
            let status = match why {
                Untrusted::UnreadableUser(_) => StatusCode::BAD_REQUEST,
                Untrusted::NoSecret | Untrusted::WrongSecret => StatusCode::FORBIDDEN,
            };
            tracing::warn!(status = status.as_u16(), reason = %why, "a request not from the trusted proxy was refused");
            (status, pages::refused(None, &why.to_string(), None)).into_response()
        }
    }
}

/// The operator the trusted proxy names on this request — `None` when the
/// inbox trusts no proxy, or the proxy named no one or a name that is no
/// name. Read only behind [`trusted`], which refused the request unless it
/// came from the proxy.
pub(crate) fn named(inbox: &Inbox, headers: &HeaderMap) -> Option<Operator> {
    let proxy = inbox.inner.proxy.as_deref()?;
    let name = headers.get(&proxy.user_header)?.to_str().ok()?;
    Operator::new(name, IdentitySource::SignedIn).ok()
}

/// The routes that open a session behind the proxy, in place of sign-in
/// links.
pub(crate) fn routes() -> axum::Router<Inbox> {
    axum::Router::new()
        .route("/", get(enter_page))
        .route("/signed-out", get(enter_page))
        .route("/enter", post(enter))
        .route("/runs/{run}", get(run_address))
        .route("/sign-in", get(no_links).post(no_links))
}

/// The refusal of a request the proxy named no one in.
fn no_one(inbox: &Inbox) -> Response {
    let header = inbox
        .inner
        .proxy
        .as_deref()
        .map_or("", |proxy| proxy.user_header.as_str());
    (
        StatusCode::UNAUTHORIZED,
        pages::refused(
            None,
            &format!(
                "the proxy in front of this inbox named no one (or a name that is none): it must sign you in and set `{header}` to your name"
            ),
            None,
        ),
    )
        .into_response()
}

/// `/` behind the proxy: a browser whose session is the named operator's
/// goes on to it; another is shown who the proxy names, and a button that
/// opens the inbox (a `POST`, checked for its origin as a sign-in is).
async fn enter_page(State(inbox): State<Inbox>, headers: HeaderMap) -> Response {
    entering(&inbox, &headers, None).await
}

/// A run's stable address behind the proxy: on to the run in the named
/// operator's session, or the button that opens one on it.
async fn run_address(
    State(inbox): State<Inbox>,
    Path(run): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !is_run_id(&run) {
        return (
            StatusCode::NOT_FOUND,
            pages::refused(
                None,
                "this is not the address of a run: a run's address is /runs/ followed by its id",
                Some("/"),
            ),
        )
            .into_response();
    }
    entering(&inbox, &headers, Some(&run)).await
}

/// Whether `run` has the shape of a run id: 1 to 128 ASCII letters,
/// digits, `-` and `_`.
fn is_run_id(run: &str) -> bool {
    (1..=128).contains(&run.len())
        && run
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

/// Where the named operator's session goes: its pages, or `run` in them.
fn to(session: &toolgate_store::Session, run: Option<&str>) -> Redirect {
    match run {
        Some(run) => Redirect::to(&format!("{}/runs/{run}", pages::base(session))),
        None => Redirect::to(&format!("{}/", pages::base(session))),
    }
}

/// On to the named operator's session (at `run`, if given), or the page
/// with the button that opens one.
async fn entering(inbox: &Inbox, headers: &HeaderMap, run: Option<&str>) -> Response {
    let Some(operator) = named(inbox, headers) else {
        return no_one(inbox);
    };
    for secret in session_cookies(headers) {
        if let Ok(Some(session)) = inbox.store().session(&secret).await
            && Operator::new(&session.operator, IdentitySource::SignedIn)
                .is_ok_and(|theirs| theirs.is_same_person(&operator))
        {
            return to(&session, run).into_response();
        }
    }
    pages::page(
        "Inbox",
        None,
        &html! {
            h1 { "toolgate inbox" }
            p {
                "Your proxy signed you in as " strong { bdi { (toolgate::visible::visible(operator.name())) } } "."
            }
            form method="post" action="/enter" {
                @if let Some(run) = run {
                    input type="hidden" name="run" value=(run);
                }
                button type="submit" {
                    @if run.is_some() { "Open the run" } @else { "Open the inbox" }
                }
            }
        },
    )
    .into_response()
}

/// Every session cookie the request carries, a bounded few.
fn session_cookies(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .filter_map(Result::ok)
        .filter(|cookie| cookie.name() == SESSION_COOKIE)
        .map(|cookie| cookie.value().to_owned())
        .take(8)
        .collect()
}

/// The button's form: the run to go on to, if any.
#[derive(serde::Deserialize)]
struct EnterForm {
    #[serde(default)]
    run: String,
}

/// Opens a session for the operator the proxy names, from the inbox's own
/// origin: the cookie, and on to the session's pages — or to the run the
/// form names.
async fn enter(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Form(form): Form<EnterForm>,
) -> Result<Response, Refused> {
    same_origin(&inbox, &headers)?;
    let run = Some(form.run.as_str()).filter(|run| is_run_id(run));
    let Some(operator) = named(&inbox, &headers) else {
        return Ok(no_one(&inbox));
    };
    match inbox
        .store()
        .open_session(operator.name(), inbox.inner.session_for)
        .await
    {
        Ok(opened) => {
            let cookie = session_cookie(
                &inbox,
                &opened.session,
                opened.secret,
                cookie::time::Duration::seconds(
                    i64::try_from(inbox.inner.session_for.as_secs()).unwrap_or(i64::MAX),
                ),
            );
            tracing::info!(operator = %opened.session.operator, "signed in to the inbox by the proxy");
            Ok((
                [(header::SET_COOKIE, cookie.to_string())],
                to(&opened.session, run),
            )
                .into_response())
        }
        Err(StoreError::NoSuchOperator(_) | StoreError::InvalidOperatorName { .. }) => {
            let shown = toolgate::visible::visible(operator.name()).into_owned();
            tracing::warn!(name = %shown, "the proxy named someone who is not an operator");
            Ok((
                StatusCode::FORBIDDEN,
                pages::refused(
                    None,
                    &format!(
                        "the proxy signed you in as `{shown}`, who is not an operator of this inbox (or was revoked): whoever administers it adds you with `toolgate operator add {shown}`"
                    ),
                    None,
                ),
            )
                .into_response())
        }
        Err(error) => Err(Refused::Store(error)),
    }
}

/// Sign-in links behind the proxy: not used — the proxy signs people in.
async fn no_links() -> Response {
    (
        StatusCode::FORBIDDEN,
        pages::refused(
            None,
            "this inbox is behind a proxy that signs you in: sign-in links are not used here — open the inbox's first page",
            Some("/"),
        ),
    )
        .into_response()
}
