//! The gateway over MCP's streamable HTTP transport: one gateway for a
//! team, a person behind every token.
//!
//! rmcp's [`StreamableHttpService`] answers at `/mcp`, behind a layer that
//! sees every request first and lets through only what it should:
//!
//! - **Proxy** (behind a trusted proxy only,
//!   [`HttpGateway::behind_proxy`]): the secret the proxy shares with the
//!   gateway, on every request, before anything else reads it
//!   ([`toolgate_store::proxy`]: compared in constant time, then removed,
//!   never logged). A request without it — from anyone but the proxy —
//!   or with another, `403 Forbidden`.
//! - **Host**: only the address the gateway listens on (and `localhost` at
//!   its port) — a page that rebinds a name of its own to the loopback
//!   address is refused, `421 Misdirected Request`.
//! - **Origin**: a request that carries one — a browser's — only from an
//!   origin given with [`HttpGateway::allow_origin`]; by default none is,
//!   `403 Forbidden`.
//! - **Token**: every request, on every address, loopback included (else
//!   any local process would be anyone), carries `Authorization: Bearer
//!   TOKEN`, a live token of the store's
//!   ([`toolgate_store::Store::gateway_token_holder`]: found by its id, its
//!   secret's hash compared in constant time). Without one, or with one
//!   that is unknown or revoked, `401 Unauthorized`, and nothing reaches
//!   rmcp. A token is never logged.
//! - **Session**: a client of a protocol before 2026-07-28 opens a session
//!   (`Mcp-Session-Id`); it is bound to the token that opened it, and a
//!   request of that session with another token is refused, `403`. One
//!   that names no session of this gateway's is answered `404`, as MCP
//!   says, and the client opens a new one. A revoked token's sessions are
//!   ended within [`SWEEP_EVERY`], and the streams they kept open with
//!   them; a call its token holds for a decision — in a session or not —
//!   stops waiting, and its run stays, decidable: approved later, it runs
//!   only when the same call is asked again. So does a call held in a
//!   session its client ends (`DELETE`). The stateless protocol (2026-07-28) has no session: every
//!   request's token is checked.
//!
//! The token's person is the requester of every call the request makes —
//! four eyes and several approvers hold across people exactly as across
//! gateways of different users. A token submits calls and reads their
//! answers; there is no request by which it decides one. (Where the
//! server's operator lets the requester's own client decide a held call in
//! a form — see the crate's docs — that holds here as over stdio.)
//!
//! The bounds of the stdio gateway hold: a request body is at most
//! [`crate::stdio::MAX_LINE_LENGTH`] bytes, JSON nested deeper than
//! `serde_json` reads is refused, and a held call waits at most
//! [`crate::Gateway::wait`].
//!
//! **Beyond loopback**, only over TLS ([`bind_tls`], [`crate::tls`]): a
//! token must not cross a network in the clear, so [`bind`] takes a
//! loopback address only. Clients then name the gateway by its public
//! name, which [`HttpGateway::public_url`] adds to the hosts a request may
//! name; tokens and sessions are checked exactly as on loopback. Or in
//! plain HTTP behind a stated, trusted proxy ([`bind_behind_proxy`],
//! [`HttpGateway::behind_proxy`]) that ends TLS for the clients and proves
//! itself on every request with the secret the two share — never trusted
//! by the address a request comes from. The proxy proves the transport,
//! not the person: every request still carries its person's token.
//! Or, for a proxy on the same machine, on a Unix socket
//! ([`bind_unix`], [`Gateway::over_unix_socket`]) whose file only the
//! gateway's account may open (mode `0600`): no network between the two;
//! a request over it carries its token as ever, and names `localhost` or
//! the public URL's host.
//!
//! ```no_run
//! # async fn serve(store: toolgate_store::Store) -> Result<(), Box<dyn std::error::Error>> {
//! // A token for each person (`toolgate gateway token add NAME`).
//! let made = store.add_gateway_token("alice").await?;
//! println!("alice's client sends `Authorization: Bearer {}`", made.token);
//!
//! let gateway = toolgate_gateway::Gateway::builder(store).four_eyes(true).build()?;
//! let listener = toolgate_gateway::http::bind("127.0.0.1:8650".parse()?).await?;
//! let bound = listener.local_addr()?;
//! gateway
//!     .over_http(bound)
//!     // Until the process is stopped.
//!     .serve(listener, std::future::pending())
//!     .await?;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use toolgate_store::proxy::ProxySecret;

use crate::Gateway;

mod guard;
#[cfg(unix)]
mod unix;

use guard::Guard;
pub use guard::SWEEP_EVERY;
pub(crate) use guard::{Asking, Person, asking};
#[cfg(unix)]
pub use unix::{UnixSocket, bind_unix};

/// The gateway could not be served over HTTP.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The address is not a loopback one, and neither TLS nor a trusted
    /// proxy was given.
    #[error(
        "the gateway serves plain HTTP on a loopback address only (127.0.0.1 or ::1), not {0}: a token must not cross a network in the clear — serve it over TLS there, with a certificate and its key (`--tls-cert PATH --tls-key PATH`), or behind a reverse proxy that serves TLS to clients and proves itself with a secret you share with the gateway (`--behind-proxy --proxy-secret-file PATH`)"
    )]
    NotLoopback(SocketAddr),
    /// The certificate or key for TLS could not be used.
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    /// A public URL is not one.
    #[error(
        "`{0}` is not a URL the gateway can be reached at: write its scheme and host, and its port unless the scheme's own, e.g. `https://gateway.example.com` or `https://gateway.example.com:8650`"
    )]
    PublicUrl(String),
    /// The Unix socket could not be listened on.
    #[error("cannot listen on the socket {}: {error}", path.display())]
    Socket {
        /// The socket's path.
        path: std::path::PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A process listens on the Unix socket already.
    #[error(
        "another process listens on the socket {}: stop it, or give the gateway another path",
        .0.display()
    )]
    SocketInUse(std::path::PathBuf),
    /// The Unix socket's path is a file that is not a socket.
    #[error(
        "{} exists and is not a socket: give the gateway a path of its own for its socket (it makes the file)",
        .0.display()
    )]
    NotASocket(std::path::PathBuf),
    /// The address could not be listened on.
    #[error("cannot listen on {address}: {error}")]
    Listen {
        /// The address.
        address: SocketAddr,
        /// Why.
        error: std::io::Error,
    },
    /// An origin to allow is not one.
    #[error(
        "`{0}` is not an origin: write its scheme, host and port, e.g. `https://app.example.com:443`, without a path"
    )]
    Origin(String),
    /// Serving stopped.
    #[error("the gateway stopped serving: {0}")]
    Serve(std::io::Error),
}

/// A listener on `address`, which must be a loopback address (a port of 0
/// is chosen by the system): plain HTTP goes no further.
pub async fn bind(address: SocketAddr) -> Result<tokio::net::TcpListener, HttpError> {
    if !address.ip().is_loopback() {
        return Err(HttpError::NotLoopback(address));
    }
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| HttpError::Listen { address, error })
}

/// A listener on `address`, any address, of plain HTTP: for a gateway
/// served behind a trusted proxy only ([`HttpGateway::behind_proxy`]),
/// which every request must prove it came through.
pub async fn bind_behind_proxy(address: SocketAddr) -> Result<tokio::net::TcpListener, HttpError> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| HttpError::Listen { address, error })
}

/// A listener on `address`, any address, whose connections are TLS with
/// `tls`'s certificate.
pub async fn bind_tls(
    address: SocketAddr,
    tls: crate::tls::Tls,
) -> Result<crate::tls::TlsListener, HttpError> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| HttpError::Listen { address, error })?;
    Ok(tls.listen(listener)?)
}

/// The hosts a request may name to reach `public_url`
/// (`scheme://host[:port][/path]`): `host:port`, and `host` alone at the
/// scheme's own port.
fn public_hosts(public_url: &str) -> Option<Vec<String>> {
    let url = public_url.trim();
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.is_empty() || authority.contains(['@', ' ', '*']) {
        return None;
    }
    let authority: axum::http::uri::Authority = authority.parse().ok()?;
    let host = authority.host().to_ascii_lowercase();
    let port = authority.port_u16().unwrap_or(default_port);
    let mut hosts = vec![format!("{host}:{port}")];
    if port == default_port {
        hosts.push(host);
    }
    Some(hosts)
}

/// The gateway served over streamable HTTP; see the module.
pub struct HttpGateway {
    gateway: Gateway,
    /// The address listened on; none on a Unix socket.
    bound: Option<SocketAddr>,
    origins: Vec<String>,
    /// How long a hook's held call waits, when hooks are answered.
    hooks: Option<Duration>,
    /// The hosts of the public URL ([`HttpGateway::public_url`]).
    public: Vec<String>,
    /// The secret of the trusted proxy in front, if any
    /// ([`HttpGateway::behind_proxy`]).
    proxy: Option<ProxySecret>,
}

impl Gateway {
    /// This gateway served over HTTP at `bound`, the address its listener
    /// is bound to ([`bind`]): the only one a request's `Host` may name.
    #[must_use]
    pub fn over_http(self, bound: SocketAddr) -> HttpGateway {
        self.served_at(Some(bound))
    }

    /// This gateway served over HTTP at `bound`, or on a Unix socket.
    fn served_at(self, bound: Option<SocketAddr>) -> HttpGateway {
        HttpGateway {
            gateway: self,
            bound,
            origins: Vec::new(),
            hooks: None,
            public: Vec::new(),
            proxy: None,
        }
    }

    /// This gateway served over HTTP on a Unix socket ([`bind_unix`]):
    /// a request's `Host` may name `localhost`, and the public URL's host
    /// ([`HttpGateway::public_url`]).
    #[must_use]
    pub fn over_unix_socket(self) -> HttpGateway {
        self.served_at(None)
    }
}

impl HttpGateway {
    /// Lets a browser's request from `origin` (`scheme://host:port`) in:
    /// by default a request that carries an `Origin` is refused.
    pub fn allow_origin(mut self, origin: &str) -> Result<Self, HttpError> {
        let origin = origin.trim().trim_end_matches('/');
        let rest = origin
            .strip_prefix("https://")
            .or_else(|| origin.strip_prefix("http://"));
        match rest {
            Some(rest) if !rest.is_empty() && !rest.contains(['/', '?', '#', '*', ' ']) => {
                self.origins.push(origin.to_ascii_lowercase());
                Ok(self)
            }
            _ => Err(HttpError::Origin(origin.to_owned())),
        }
    }

    /// Answers requests that name `public_url`'s host too
    /// (`https://gateway.example.com`, say — the address clients are given,
    /// in front of a listener on every address): by default only the
    /// address listened on is. Tokens and sessions are checked as ever.
    pub fn public_url(mut self, public_url: &str) -> Result<Self, HttpError> {
        let hosts =
            public_hosts(public_url).ok_or_else(|| HttpError::PublicUrl(public_url.to_owned()))?;
        for host in hosts {
            if !self.public.contains(&host) {
                self.public.push(host);
            }
        }
        Ok(self)
    }

    /// Served behind a trusted reverse proxy, which sends `secret` in
    /// [`toolgate_store::proxy::SECRET_HEADER`] with every request: a
    /// request without it, or with another, is refused (`403`) before
    /// anything else reads it, and it is removed from the one let through.
    /// The proxy proves the transport, not the person: the token is
    /// required as ever. Give the address clients reach the proxy at with
    /// [`HttpGateway::public_url`].
    #[must_use]
    pub fn behind_proxy(mut self, secret: ProxySecret) -> Self {
        self.proxy = Some(secret);
        self
    }

    /// Answers coding agents' hooks too, at `POST /hook/CLIENT`
    /// ([`crate::hook`]), holding each gated call up to `wait`: a hook
    /// submits with a token, whose person is the requester; the token
    /// never decides.
    #[must_use]
    pub fn with_hooks(mut self, wait: Duration) -> Self {
        self.hooks = Some(wait);
        self
    }

    /// The hosts a request may name: the address listened on, and
    /// `localhost` at its port — on a Unix socket, `localhost`.
    fn hosts(&self) -> Vec<String> {
        let mut hosts = match self.bound {
            None => vec!["localhost".to_owned()],
            Some(bound) => {
                let mut hosts = vec![bound.to_string(), format!("localhost:{}", bound.port())];
                // At port 80 a client may leave the port out.
                if bound.port() == 80 {
                    let ip = match bound.ip() {
                        std::net::IpAddr::V4(ip) => ip.to_string(),
                        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
                    };
                    hosts.extend([ip, "localhost".to_owned()]);
                }
                hosts
            }
        };
        for host in &self.public {
            if !hosts.contains(host) {
                hosts.push(host.clone());
            }
        }
        hosts
    }

    /// The router (`/mcp` behind the layer), the layer's state, the session
    /// manager, and what ends every session's streams.
    fn router(
        &self,
    ) -> (
        axum::Router,
        Guard,
        Arc<LocalSessionManager>,
        impl Fn() + Send + Sync + 'static,
    ) {
        let hosts = self.hosts();
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts.clone())
            .with_allowed_origins(self.origins.clone())
            .with_legacy_session_mode(true)
            .with_max_request_body_bytes(crate::stdio::MAX_LINE_LENGTH);
        // rmcp leaves `Origin` unchecked when no origin is allowed, unless
        // told to check it: then every request that carries one is refused.
        if self.origins.is_empty() {
            config = config.enforce_origin_validation();
        }
        let cancel = config.cancellation_token.clone();
        let stop = move || cancel.cancel();
        let sessions = Arc::new(LocalSessionManager::default());
        let gateway = self.gateway.clone();
        let service =
            StreamableHttpService::new(move || Ok(gateway.clone()), Arc::clone(&sessions), config);
        let guard = Guard::new(
            self.gateway.inner.host.store().clone(),
            hosts,
            self.origins.clone(),
            self.proxy.clone(),
        );
        let mut router = axum::Router::new().nest_service("/mcp", service);
        if let Some(wait) = self.hooks {
            router = router.merge(crate::hook::serve::routes(
                crate::hook::serve::HookService {
                    store: self.gateway.inner.host.store().clone(),
                    wait,
                    four_eyes: self.gateway.inner.four_eyes,
                    approvals: self.gateway.inner.approvals,
                },
            ));
        }
        let router = router.layer(axum::middleware::from_fn_with_state(
            guard.clone(),
            guard::guarded,
        ));
        (router, guard, sessions, stop)
    }

    /// Serves `listener` — [`bind`]'s, or [`bind_tls`]'s for HTTPS — until
    /// `shutdown` resolves; then the sessions end, and the connections to
    /// upstream servers close once the resumes under way ended
    /// ([`Gateway::close`]).
    pub async fn serve<L>(
        self,
        listener: L,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), HttpError>
    where
        L: axum::serve::Listener,
        L::Addr: std::fmt::Debug,
    {
        let (router, guard, sessions, stop) = self.router();
        let stop = Arc::new(stop);
        // A held call's runs stopped gateways left are picked up from the
        // start, whether or not any client ever initialises.
        self.gateway.maintain();
        tokio::spawn(guard.sweep(sessions));
        drop(guard);
        let stopping = Arc::clone(&stop);
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                // Streams kept open (a session's own, a held call's) end.
                stopping();
            })
            .await
            .map_err(HttpError::Serve);
        stop();
        self.gateway.close().await;
        served
    }
}

#[cfg(test)]
mod tests {
    use super::public_hosts;

    #[test]
    fn a_public_url_names_its_host_with_and_without_its_default_port() {
        assert_eq!(
            public_hosts("https://Gateway.Example.com/").as_deref(),
            Some(
                &[
                    "gateway.example.com:443".to_owned(),
                    "gateway.example.com".to_owned()
                ][..]
            )
        );
        assert_eq!(
            public_hosts("https://gw.example:8650/mcp").as_deref(),
            Some(&["gw.example:8650".to_owned()][..])
        );
        assert_eq!(
            public_hosts("http://[::1]:80").as_deref(),
            Some(&["[::1]:80".to_owned(), "[::1]".to_owned()][..])
        );
        for no in [
            "gateway.example.com",
            "ftp://x",
            "https://",
            "https://a@b",
            "https://*.example",
        ] {
            assert_eq!(public_hosts(no), None, "{no}");
        }
    }
}
