//! The layer in front of rmcp's streamable HTTP service: every request's
//! host, origin, token and session checked before rmcp sees it; see
//! [`crate::http`].

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use rmcp::transport::streamable_http_server::SessionId;
use rmcp::transport::streamable_http_server::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use toolgate_store::proxy::ProxySecret;
use toolgate_store::{GatewayTokenHolder, Store};

/// A stream of events (`text/event-stream`: a call's answer, a session's
/// or a stateless `subscriptions/listen` stream) ended once its asker is
/// `gone` — its token revoked, its session ended — so a revoked token is
/// told nothing more; any other answer as it is.
fn ended_with(
    response: Response<Body>,
    gone: impl Future<Output = ()> + Send + 'static,
) -> Response<Body> {
    let streaming = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"));
    if !streaming {
        return response;
    }
    let (parts, body) = response.into_parts();
    let stream = futures_util::StreamExt::take_until(body.into_data_stream(), gone);
    Response::from_parts(parts, Body::from_stream(stream))
}

/// The header a legacy session's id travels in.
const SESSION_HEADER: &str = "mcp-session-id";

/// How often the sessions are swept: the bindings of those that ended
/// dropped, those of revoked tokens ended.
pub const SWEEP_EVERY: Duration = Duration::from_secs(5);

/// The person of the token a request carries: put in the request's
/// extensions by the layer, read by the gateway as the call's requester.
#[derive(Debug, Clone)]
pub(crate) struct Person {
    /// The token's public id.
    token: String,
    /// The person, as their name was first written.
    name: String,
    /// The ids of the tokens found revoked while this gateway serves.
    revoked: tokio::sync::watch::Receiver<Arc<HashSet<String>>>,
    /// The session the request was sent in, if any.
    session: Option<String>,
    /// The sessions bound to their tokens, told when one ends.
    sessions: Sessions,
}

impl Person {
    /// The person, as their name was first written.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Whether the request's token is revoked now, as the store says —
    /// not waiting for the next sweep; a store that cannot be read says
    /// it is (an allow is never given on a token not known to be live).
    pub(crate) async fn revoked_now(&self, store: &Store) -> bool {
        match store.gateway_tokens().await {
            Ok(tokens) => tokens
                .iter()
                .find(|t| t.id == self.token)
                .is_none_or(|t| t.revoked_at.is_some()),
            Err(error) => {
                tracing::warn!(%error, "the gateway's tokens cannot be read: the token is taken as revoked");
                true
            }
        }
    }

    /// Resolves once the request's asker is gone: its token found revoked,
    /// or the session it was sent in ended — never, when the gateway stops
    /// looking.
    pub(crate) fn gone(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut revoked = self.revoked.clone();
        let token = self.token.clone();
        let session = self.session.clone();
        let sessions = self.sessions.clone();
        async move {
            let revoked = async move {
                if revoked.wait_for(|ids| ids.contains(&token)).await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            let ended = async move {
                let Some(session) = session else {
                    return std::future::pending::<()>().await;
                };
                let mut ended = sessions.ended.subscribe();
                let closed = ended
                    .wait_for(|_| sessions.opener(&session).is_none())
                    .await
                    .is_err();
                if closed {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                () = revoked => {}
                () = ended => {}
            }
        }
    }
}

/// Each live legacy session's id and the id of the token that opened it;
/// told when one ends.
#[derive(Debug, Clone, Default)]
struct Sessions {
    bound: Arc<Mutex<HashMap<String, String>>>,
    /// Moves each time a session's binding is dropped.
    ended: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Sessions {
    /// The id of the token that opened `session`, while it is bound.
    fn opener(&self, session: &str) -> Option<String> {
        self.bound
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session)
            .cloned()
    }

    fn bind(&self, session: String, token: String) {
        self.bound
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session, token);
    }

    /// Drops `session`'s binding, and tells whoever waits on it.
    fn end(&self, session: &str) {
        let removed = self
            .bound
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session);
        if removed.is_some() {
            self.ended.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Every binding.
    fn all(&self) -> Vec<(String, String)> {
        self.bound
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(session, token)| (session.clone(), token.clone()))
            .collect()
    }
}

/// Who asks a call, as a request's extensions say.
pub(crate) enum Asking<'a> {
    /// The request did not come over HTTP: the gateway's user.
    Local,
    /// The person of the request's token.
    Person(&'a Person),
    /// A request over HTTP without a token's person — which the layer
    /// never lets through.
    Nobody,
}

impl Asking<'_> {
    /// The requester: `user` for a request that did not come over HTTP,
    /// else the token's person; `None` for a request over HTTP without one.
    pub(crate) fn requester(&self, user: &str) -> Option<String> {
        match self {
            Self::Local => Some(user.to_owned()),
            Self::Person(person) => Some(person.name.clone()),
            Self::Nobody => None,
        }
    }
}

/// Who asks the request whose extensions are `extensions`.
pub(crate) fn asking(extensions: &rmcp::model::Extensions) -> Asking<'_> {
    match extensions.get::<axum::http::request::Parts>() {
        None => Asking::Local,
        Some(parts) => parts
            .extensions
            .get::<Person>()
            .map_or(Asking::Nobody, Asking::Person),
    }
}

/// The state of the layer.
#[derive(Clone)]
pub(super) struct Guard {
    store: Store,
    hosts: Arc<[String]>,
    origins: Arc<[String]>,
    /// The secret of the trusted proxy in front, if any: every request
    /// proves with it that it came through the proxy.
    proxy: Option<Arc<ProxySecret>>,
    /// Each live legacy session, bound to the token that opened it.
    sessions: Sessions,
    /// The ids of the tokens found revoked while this gateway serves: a
    /// held call of theirs stops waiting.
    revoked: tokio::sync::watch::Sender<Arc<HashSet<String>>>,
}

impl Guard {
    /// The layer's state: requests may name `hosts`, and come from
    /// `origins` — and through the proxy that knows `proxy`, if given;
    /// tokens are `store`'s.
    pub(super) fn new(
        store: Store,
        hosts: Vec<String>,
        origins: Vec<String>,
        proxy: Option<ProxySecret>,
    ) -> Self {
        Self {
            store,
            hosts: hosts.into(),
            origins: origins.into(),
            proxy: proxy.map(Arc::new),
            sessions: Sessions::default(),
            revoked: tokio::sync::watch::Sender::new(Arc::default()),
        }
    }

    /// The sweep of this layer's sessions ([`sweep`]), `manager`'s: it ends
    /// once the layer (the router) is dropped.
    pub(super) fn sweep(
        &self,
        manager: Arc<LocalSessionManager>,
    ) -> impl Future<Output = ()> + Send + 'static {
        sweep(
            Arc::downgrade(&self.sessions.bound),
            Arc::downgrade(&self.sessions.ended),
            manager,
            self.store.clone(),
            self.revoked.clone(),
        )
    }
}

/// Every [`SWEEP_EVERY`], drops the bindings of sessions rmcp ended (a
/// session idle too long, say) and ends the sessions of tokens revoked
/// since they were opened — a stream kept open (a held call's, the
/// session's own) ends with them, and a call held in one stops waiting;
/// ends with the router.
async fn sweep(
    bindings: Weak<Mutex<HashMap<String, String>>>,
    ended: Weak<tokio::sync::watch::Sender<u64>>,
    manager: Arc<LocalSessionManager>,
    store: Store,
    revocations: tokio::sync::watch::Sender<Arc<HashSet<String>>>,
) {
    loop {
        tokio::time::sleep(SWEEP_EVERY).await;
        let (Some(bound), Some(ended)) = (bindings.upgrade(), ended.upgrade()) else {
            return;
        };
        let sessions = Sessions { bound, ended };
        match store.gateway_tokens().await {
            Ok(tokens) => {
                let revoked: HashSet<String> = tokens
                    .into_iter()
                    .filter(|t| t.revoked_at.is_some())
                    .map(|t| t.id)
                    .collect();
                revocations.send_if_modified(|known| {
                    let changed = **known != revoked;
                    if changed {
                        *known = Arc::new(revoked);
                    }
                    changed
                });
            }
            Err(error) => {
                tracing::warn!(%error, "the gateway's tokens cannot be read; sessions are swept later");
                continue;
            }
        }
        let revoked_now = revocations.borrow().clone();
        for (session, token) in sessions.all() {
            let id = SessionId::from(session.as_str());
            let open = manager.has_session(&id).await.unwrap_or(true);
            let revoked = revoked_now.contains(&token);
            if open && revoked {
                tracing::info!(token = %token, "a revoked token's session is ended");
                if let Err(error) = manager.close_session(&id).await {
                    tracing::warn!(%error, "a revoked token's session could not be ended");
                    continue;
                }
            }
            if !open || revoked {
                sessions.end(&session);
            }
        }
    }
}

/// A refusal: under its status, a JSON-RPC error without an id (the
/// request was not read) that says what to do.
struct Refusal {
    status: StatusCode,
    message: String,
}

fn refused(status: StatusCode, message: impl Into<String>) -> Refusal {
    Refusal {
        status,
        message: message.into(),
    }
}

impl axum::response::IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": -32001, "message": self.message},
        });
        let mut response = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"toolgate gateway\""),
            );
        }
        response
    }
}

/// The bearer token of `headers`, when there is exactly one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let value = value.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Behind a trusted proxy, refused unless `headers` carry its secret, once;
/// the secret is removed from them whatever the answer.
fn through_proxy(guard: &Guard, headers: &mut HeaderMap) -> Result<(), Refusal> {
    let Some(secret) = guard.proxy.as_deref() else {
        return Ok(());
    };
    secret.take_proof(headers).map_err(|why| {
        tracing::warn!(reason = %why, "a request that did not come through the trusted proxy was refused");
        refused(
            StatusCode::FORBIDDEN,
            format!(
                "this gateway is served behind a proxy and answers only requests that come through it: this one {why}"
            ),
        )
    })
}

/// Refused unless `headers` name an allowed host, and an allowed origin
/// if any.
fn admitted(guard: &Guard, headers: &HeaderMap) -> Result<(), Refusal> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_ascii_lowercase);
    if !host.is_some_and(|host| guard.hosts.contains(&host)) {
        tracing::warn!("a request naming another host was refused");
        return Err(refused(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "this gateway answers at {} only: connect to that address",
                guard.hosts.join(" or ")
            ),
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let allowed = origin
            .to_str()
            .is_ok_and(|o| guard.origins.contains(&o.to_ascii_lowercase()));
        if !allowed {
            tracing::warn!("a request from an origin not allowed was refused");
            return Err(refused(
                StatusCode::FORBIDDEN,
                "requests from this origin are refused: a page of another site may not call this gateway (an operator allows an origin with `--allow-origin`)",
            ));
        }
    }
    Ok(())
}

/// Who the token of `headers` stands for, or the refusal.
async fn holder(guard: &Guard, headers: &HeaderMap) -> Result<GatewayTokenHolder, Refusal> {
    let Some(token) = bearer(headers) else {
        tracing::info!("a request without a token was refused");
        return Err(refused(
            StatusCode::UNAUTHORIZED,
            "this gateway answers only requests that carry a token: send `Authorization: Bearer TOKEN`, with a token an operator made for you (`toolgate gateway token add NAME`)",
        ));
    };
    match guard.store.gateway_token_holder(token).await {
        Ok(Some(holder)) => Ok(holder),
        Ok(None) => {
            tracing::info!("a request with a token that is not live was refused");
            Err(refused(
                StatusCode::UNAUTHORIZED,
                "this token is not one of this gateway's, or it was revoked: ask an operator for a new one (`toolgate gateway token add NAME`)",
            ))
        }
        Err(error) => {
            tracing::error!(%error, "the gateway's tokens cannot be read; the request was refused");
            Err(refused(
                StatusCode::SERVICE_UNAVAILABLE,
                "the gateway cannot read its tokens now: try again shortly",
            ))
        }
    }
}

/// The session `headers` name, bound to `holder`'s token; none when they
/// name none; else the refusal.
fn session_of(
    guard: &Guard,
    headers: &HeaderMap,
    holder: &GatewayTokenHolder,
) -> Result<Option<String>, Refusal> {
    let Some(id) = headers.get(SESSION_HEADER) else {
        return Ok(None);
    };
    let Ok(id) = id.to_str() else {
        return Err(refused(
            StatusCode::BAD_REQUEST,
            "the session id does not read",
        ));
    };
    let opener = guard.sessions.opener(id);
    match opener {
        None => Err(refused(
            StatusCode::NOT_FOUND,
            "no session of this gateway has this id (it ended, or the gateway restarted): initialize a new one",
        )),
        Some(opener) if opener != holder.id => {
            tracing::warn!(token = %holder.id, person = %holder.person, "a session opened with another token was refused");
            Err(refused(
                StatusCode::FORBIDDEN,
                "this session was opened with another token: a session is used only with the token that opened it",
            ))
        }
        Some(_) => Ok(Some(id.to_owned())),
    }
}

/// The layer in front of rmcp; see [`crate::http`].
pub(super) async fn guarded(
    State(guard): State<Guard>,
    mut request: Request,
    next: Next,
) -> Response {
    // First, before anything reads the request: the proxy's secret.
    if let Err(refusal) = through_proxy(&guard, request.headers_mut()) {
        return refusal.into_response();
    }
    if let Err(refusal) = admitted(&guard, request.headers()) {
        return refusal.into_response();
    }
    let holder = match holder(&guard, request.headers()).await {
        Ok(holder) => holder,
        Err(refusal) => return refusal.into_response(),
    };
    let session = match session_of(&guard, request.headers(), &holder) {
        Ok(session) => session,
        Err(refusal) => return refusal.into_response(),
    };
    let deleting = request.method() == Method::DELETE;
    let token = holder.id.clone();
    // No one downstream reads the token again.
    request.headers_mut().remove(header::AUTHORIZATION);
    let person = Person {
        token: holder.id,
        revoked: guard.revoked.subscribe(),
        name: holder.person,
        session: session.clone(),
        sessions: guard.sessions.clone(),
    };
    let gone = person.gone();
    request.extensions_mut().insert(person);
    let response: Response<Body> = ended_with(next.run(request).await, gone);
    match session {
        None => {
            if let Some(opened) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|s| s.to_str().ok())
            {
                guard.sessions.bind(opened.to_owned(), token);
            }
        }
        Some(id) if deleting && response.status().is_success() => guard.sessions.end(&id),
        Some(_) => {}
    }
    response
}
