//! What every request passes: the inbox's own host, its security headers,
//! refusals as pages — and, for a session's pages, the session itself,
//! the origin of a change and its token.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use toolgate::identity::{Channel, IdentitySource, Operator};
use toolgate_store::{Session, StoreError};

use crate::{FORM_LIMIT, Inbox, Refused, SESSION_COOKIE, pages};

/// `scheme://host[:port]` of a URL, lower-cased, without a path or a
/// trailing slash.
pub(crate) fn origin_of(url: &str) -> String {
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
pub(crate) async fn own_host(
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
                    None,
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
pub(crate) async fn as_a_page(response: Response) -> Response {
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
    (status, pages::refused(None, &why, Some("/"))).into_response()
}

/// The security headers of every answer: no script but the inbox's own
/// file (`/inbox.js`, never inline), no connection but to the inbox itself
/// (its pages' event stream, the list read again), no frame, no window shared with
/// another origin, no referrer to another origin, no caching, no
/// sniffing.
pub(crate) async fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let set = |headers: &mut HeaderMap, name: header::HeaderName, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(
        headers,
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    // The inbox's own forms keep their origin (`Origin` is the inbox's, not
    // `null`, so a plain-http public URL signs in); no other origin is ever
    // sent a referrer, which would carry a session's key.
    set(headers, header::REFERRER_POLICY, "same-origin");
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::CACHE_CONTROL, "no-store");
    // A page of another origin that opens the inbox in a window keeps no
    // handle on it — it cannot watch a run's stable address go on to the
    // session's pages — and embeds none of its answers.
    set(
        headers,
        header::HeaderName::from_static("cross-origin-opener-policy"),
        "same-origin",
    );
    set(
        headers,
        header::HeaderName::from_static("cross-origin-resource-policy"),
        "same-origin",
    );
    response
}

/// The session the request's cookie names, if it is live and `key` — the
/// path its pages live under — is its own. The cookie alone opens nothing:
/// a browser sends it to every port of the inbox's host, the key only to
/// the inbox.
pub(crate) async fn session_of(
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
    // Behind a proxy, a session is used only while the proxy names its
    // operator on this very request.
    let proxy_names = if inbox.inner.proxy.is_some() {
        Some(crate::proxy::named(inbox, headers).ok_or(Refused::NotSignedIn)?)
    } else {
        None
    };
    for secret in secrets {
        let Some(session) = inbox.store().session(&secret).await? else {
            continue;
        };
        if token_matches(&session, key).is_err() {
            continue;
        }
        if let Some(named) = &proxy_names {
            let theirs = Operator::new(&session.operator, IdentitySource::SignedIn);
            if !theirs.is_ok_and(|theirs| theirs.is_same_person(named)) {
                tracing::warn!("a session of another operator than the proxy names was refused");
                return Err(Refused::NotSignedIn);
            }
        }
        return Ok((secret, session));
    }
    Err(Refused::NotSignedIn)
}

/// How many cookies of the session's name a request may carry and have
/// tried.
const SESSION_COOKIES_TRIED: usize = 8;

/// The session's cookie: `HttpOnly`, `SameSite=Strict`, `Secure` under an
/// https public URL, living `max_age` (zero clears it) — and sent only to
/// the session's own pages (`Path=/s/KEY/`). A server on another port of
/// the host can set a cookie of the same name, which the browser sends to
/// the inbox too; one on a path of its own it cannot replace, since the
/// path holds the session's key: the inbox tries every cookie of the name,
/// and the session's own is among them.
pub(crate) fn session_cookie(
    inbox: &Inbox,
    session: &Session,
    value: String,
    max_age: cookie::time::Duration,
) -> cookie::Cookie<'static> {
    cookie::Cookie::build((SESSION_COOKIE, value))
        .http_only(true)
        .same_site(cookie::SameSite::Strict)
        .path(format!("{}/", pages::base(session)))
        .secure(inbox.inner.secure)
        .max_age(max_age)
        .build()
}

/// Who decides through this session: the signed-in name, named by signing
/// in, through the inbox — or, behind a trusted proxy, through the channel
/// `proxy`, the proxy having signed them in — under the same identity
/// rules as the console.
pub(crate) fn decider(inbox: &Inbox, session: &Session) -> Result<Operator, Refused> {
    let channel = if inbox.inner.proxy.is_some() {
        Channel::Proxy
    } else {
        Channel::Inbox
    };
    Operator::new(&session.operator, IdentitySource::SignedIn)
        .map(|operator| operator.via(channel))
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
pub(crate) fn same_origin(inbox: &Inbox, headers: &HeaderMap) -> Result<(), Refused> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    let fetched_from = text("sec-fetch-site");
    // A browser that says where the request came from is taken at its
    // word whatever the origin says: only the inbox's own pages.
    if fetched_from.is_some_and(|site| site != "same-origin") {
        return Err(Refused::WrongOrigin);
    }
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
pub(crate) fn token_matches(session: &Session, given: &str) -> Result<(), Refused> {
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
