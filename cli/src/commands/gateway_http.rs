//! `toolgate gateway --listen ADDR`: the gateway over streamable HTTP
//! (`toolgate_gateway::http`), a person behind every token; and `toolgate
//! gateway token add|list|revoke`, the tokens.

use serde_json::json;
use toolgate_gateway::http::HttpError;
use toolgate_store::{Store, StoreError};

use crate::output::{Col, Out, say, timestamp};
use crate::{Failure, GatewayArgs};

/// `toolgate gateway`'s options for serving over HTTP.
#[derive(clap::Args, Debug)]
pub(crate) struct GatewayHttpArgs {
    /// Serve streamable HTTP at `http://ADDR/mcp` instead of stdio: a
    /// loopback address and port (a port of 0 is chosen by the system) —
    /// or any address over HTTPS (`--tls-cert`, `--tls-key`) or behind a
    /// trusted proxy (`--behind-proxy`), with `--public-url`; or
    /// `unix:PATH`, a Unix socket the gateway makes (mode 0600) for a
    /// proxy on the same machine. Every request carries a token
    /// (`toolgate gateway token add NAME`), whose person is the requester
    /// of its calls; `--user` is not used.
    #[arg(long, value_name = "ADDR", value_parser = listen_at)]
    pub(crate) listen: Option<Listen>,
    /// Serve HTTPS with this certificate (PEM: the server's certificate,
    /// then any intermediates).
    #[arg(long, value_name = "PATH", requires_all = ["listen", "tls_key"])]
    pub(crate) tls_cert: Option<std::path::PathBuf>,
    /// The certificate's private key (PEM, unencrypted).
    #[arg(long, value_name = "PATH", requires_all = ["listen", "tls_cert"])]
    pub(crate) tls_key: Option<std::path::PathBuf>,
    /// The address clients are given (`https://gateway.example.com`, say):
    /// requests naming its host are answered, besides the address listened
    /// on. Needed beyond loopback.
    #[arg(long, value_name = "URL", requires = "listen")]
    pub(crate) public_url: Option<String>,
    /// Behind a reverse proxy that serves clients (over TLS) and proves
    /// itself on every request with the secret of `--proxy-secret-file` in
    /// `X-Toolgate-Proxy-Secret`; any other request is refused. Plain HTTP
    /// between the two, on any address. Every request still carries its
    /// person's token. Needs `--public-url`, the proxy's address.
    #[arg(long, requires_all = ["listen", "proxy_secret_file", "public_url"])]
    pub(crate) behind_proxy: bool,
    /// A file holding the secret the proxy sends with every request, in
    /// `X-Toolgate-Proxy-Secret` (at least 16 bytes; `openssl rand -hex
    /// 32` makes one).
    #[arg(long, value_name = "PATH", requires = "behind_proxy")]
    pub(crate) proxy_secret_file: Option<std::path::PathBuf>,
    /// Let a browser's requests from this origin in (`scheme://host:port`);
    /// by default a request that carries an `Origin` is refused. May be
    /// given more than once.
    #[arg(long, value_name = "ORIGIN", requires = "listen")]
    pub(crate) allow_origin: Vec<String>,
    /// Answer coding agents' hooks too, at `http://ADDR/hook/claude-code`
    /// and `…/hook/codex` (`toolgate hook claude-code --service URL`): a
    /// held call waits `--wait` seconds for its decision. The token a hook
    /// sends submits calls and never decides one.
    #[arg(long, requires = "listen")]
    pub(crate) hooks: bool,
}

/// Where `--listen` says to listen.
#[derive(Clone, Debug)]
pub(crate) enum Listen {
    /// An address and port.
    Address(std::net::SocketAddr),
    /// A Unix socket's path (`unix:PATH`).
    Unix(std::path::PathBuf),
}

/// `--listen`'s value: `unix:PATH`, or an address and port.
fn listen_at(value: &str) -> Result<Listen, String> {
    if let Some(path) = value.strip_prefix("unix:") {
        if path.is_empty() {
            return Err(
                "give the socket's path after `unix:`, e.g. `unix:/run/toolgate/gateway.sock`"
                    .to_owned(),
            );
        }
        return Ok(Listen::Unix(path.into()));
    }
    value.parse().map(Listen::Address).map_err(|_| {
        format!("`{value}` is not an address and port (e.g. `127.0.0.1:8650`) nor `unix:PATH`")
    })
}

/// `toolgate gateway …`.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum GatewayCommand {
    /// The tokens of the gateway served over HTTP: one per person.
    #[command(subcommand)]
    Token(TokenCommand),
}

/// `toolgate gateway token …`.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum TokenCommand {
    /// Make a token for a person — the requester of every call made with
    /// it — and print it once: only its hash is stored. A token submits
    /// calls and reads their answers; it never decides one.
    Add {
        /// The person's name, as runs will record their requester.
        name: String,
    },
    /// Every token: its id, its person, when it was made and last used,
    /// whether it was revoked.
    List,
    /// Revoke a token by its id, or every token of a person by their name:
    /// the next request with it is refused.
    Revoke {
        /// A token's id (`token list`), or a person's name.
        id_or_name: String,
    },
}

pub(super) async fn command(
    store: &Store,
    out: Out,
    command: GatewayCommand,
) -> Result<(), Failure> {
    let GatewayCommand::Token(command) = command;
    match command {
        TokenCommand::Add { name } => {
            let made = store.add_gateway_token(&name).await?;
            if out.json {
                return out.json(&json!({
                    "id": made.id, "person": made.person,
                    "token": made.token, "created_at": made.created_at,
                }));
            }
            say!(
                "token `{}` for `{}` — shown this once; the client sends it as `Authorization: Bearer TOKEN`:\n{}",
                made.id,
                made.person,
                made.token
            );
            Ok(())
        }
        TokenCommand::List => {
            let tokens = store.gateway_tokens().await?;
            if out.json {
                return out.json(
                    &tokens
                        .iter()
                        .map(|t| {
                            json!({
                                "id": t.id, "person": t.person, "created_at": t.created_at,
                                "last_used_at": t.last_used_at, "revoked_at": t.revoked_at,
                            })
                        })
                        .collect::<Vec<_>>(),
                );
            }
            let mut table = out.table(&["ID", "PERSON", "MADE", "LAST USED", "STATE"]);
            for t in &tokens {
                table.row([
                    Col::from(&t.id),
                    Col::from(&t.person),
                    Col::from(timestamp(t.created_at)),
                    Col::from(t.last_used_at.map_or_else(|| "never".to_owned(), timestamp)),
                    Col::from(t.revoked_at.map_or_else(
                        || "active".to_owned(),
                        |at| format!("revoked at {}", timestamp(at)),
                    )),
                ]);
            }
            table.print();
            Ok(())
        }
        TokenCommand::Revoke { id_or_name } => {
            let revoked = match store.revoke_gateway_tokens(&id_or_name).await {
                Err(error @ StoreError::NoSuchGatewayToken(_)) => {
                    return Err(Failure::NotFound(error.to_string()));
                }
                other => other?,
            };
            if out.json {
                return out.json(&json!({
                    "revoked": revoked.iter().map(|t| json!({"id": t.id, "person": t.person})).collect::<Vec<_>>(),
                }));
            }
            if revoked.is_empty() {
                say!(
                    "`{}`: nothing to revoke, every such token was revoked before",
                    id_or_name
                );
            }
            for t in &revoked {
                say!(
                    "token `{}` of `{}`: revoked; its next request is refused",
                    t.id,
                    t.person
                );
            }
            Ok(())
        }
    }
}

/// Serves `gateway` over HTTP at `listen`; see the module.
pub(super) async fn serve(
    gateway: toolgate_gateway::Gateway,
    listen: Listen,
    args: &GatewayArgs,
) -> Result<(), Failure> {
    match listen {
        Listen::Address(address) => serve_at(gateway, address, args).await,
        Listen::Unix(path) => serve_unix(gateway, &path, args).await,
    }
}

/// What the command line says of `error`.
fn refused(error: &HttpError) -> Failure {
    match error {
        HttpError::NotLoopback(_)
        | HttpError::Origin(_)
        | HttpError::PublicUrl(_)
        | HttpError::Tls(_)
        | HttpError::SocketInUse(_)
        | HttpError::NotASocket(_) => Failure::Refused(error.to_string()),
        _ => Failure::Error(error.to_string()),
    }
}

/// Serves `gateway` at `listen`, an address and port.
async fn serve_at(
    gateway: toolgate_gateway::Gateway,
    listen: std::net::SocketAddr,
    args: &GatewayArgs,
) -> Result<(), Failure> {
    let tls = super::serving::tls(args.http.tls_cert.as_ref(), args.http.tls_key.as_ref())?;
    let proxy = proxy_secret(&args.http)?;
    if !listen.ip().is_loopback() {
        if tls.is_none() && proxy.is_none() {
            return Err(refused(&HttpError::NotLoopback(listen)));
        }
        if args.http.public_url.is_none() {
            return Err(Failure::Refused(format!(
                "the gateway listens on {listen}, beyond loopback: give `--public-url URL`, the address clients are given (its host one the certificate names), e.g. `--public-url https://gateway.example.com:{}`",
                listen.port()
            )));
        }
    }
    if tls.is_some()
        && let Some(url) = &args.http.public_url
        && !super::serving::is_https(url)
    {
        return Err(Failure::Refused(format!(
            "the gateway serves HTTPS, but --public-url {url} is not an https:// URL"
        )));
    }
    let (plain, secured) = if let Some(tls) = tls {
        let secured = toolgate_gateway::http::bind_tls(listen, tls)
            .await
            .map_err(|e| refused(&e))?;
        (None, Some(secured))
    } else {
        // Plain HTTP beyond loopback only to a stated proxy.
        let plain = if proxy.is_some() {
            toolgate_gateway::http::bind_behind_proxy(listen).await
        } else {
            toolgate_gateway::http::bind(listen).await
        };
        (Some(plain.map_err(|e| refused(&e))?), None)
    };
    let bound = match (&plain, &secured) {
        (Some(plain), _) => plain.local_addr().unwrap_or(listen),
        (None, Some(secured)) => secured.local_addr(),
        (None, None) => listen,
    };
    let scheme = if secured.is_some() { "https" } else { "http" };
    let behind_proxy = proxy.is_some();
    let http = configured(gateway.over_http(bound), args, proxy)?;
    told(
        &base(args, &format!("{scheme}://{bound}")),
        behind_proxy.then(|| bound.to_string()).as_deref(),
        behind_proxy,
        args.http.hooks,
    );
    tracing::info!(listen = %bound, host = %args.name, tls = secured.is_some(), behind_proxy, "gateway serving over HTTP");
    match (plain, secured) {
        (Some(plain), _) => http.serve(plain, stopped()).await,
        (None, Some(secured)) => http.serve(secured, stopped()).await,
        (None, None) => Ok(()),
    }
    .map_err(|e| refused(&e))
}

/// Serves `gateway` on the Unix socket `path`, which it makes (mode 0600)
/// and removes when it stops.
#[cfg(unix)]
async fn serve_unix(
    gateway: toolgate_gateway::Gateway,
    path: &std::path::Path,
    args: &GatewayArgs,
) -> Result<(), Failure> {
    if args.http.tls_cert.is_some() || args.http.tls_key.is_some() {
        return Err(Failure::Refused(
            "TLS is not served on a Unix socket: the proxy in front serves it to clients — leave out --tls-cert and --tls-key".to_owned(),
        ));
    }
    let proxy = proxy_secret(&args.http)?;
    let socket = toolgate_gateway::http::bind_unix(path)
        .await
        .map_err(|e| refused(&e))?;
    let behind_proxy = proxy.is_some();
    let http = configured(gateway.over_unix_socket(), args, proxy)?;
    told(
        &base(args, "http://localhost"),
        Some(&format!("the socket {}", path.display())),
        behind_proxy,
        args.http.hooks,
    );
    tracing::info!(socket = %path.display(), host = %args.name, behind_proxy, "gateway serving over HTTP on a Unix socket");
    http.serve(socket, stopped()).await.map_err(|e| refused(&e))
}

/// A Unix socket where there is none.
#[cfg(not(unix))]
async fn serve_unix(
    _: toolgate_gateway::Gateway,
    _: &std::path::Path,
    _: &GatewayArgs,
) -> Result<(), Failure> {
    Err(Failure::Refused(
        "Unix sockets are served on Unix only: give an address and port".to_owned(),
    ))
}

/// Resolves when the process is interrupted.
async fn stopped() {
    let _ = tokio::signal::ctrl_c().await;
}

/// `http` with the options of `args`: origins, the public URL, the proxy's
/// `proxy` secret, hooks.
fn configured(
    mut http: toolgate_gateway::http::HttpGateway,
    args: &GatewayArgs,
    proxy: Option<toolgate_store::proxy::ProxySecret>,
) -> Result<toolgate_gateway::http::HttpGateway, Failure> {
    for origin in &args.http.allow_origin {
        http = http.allow_origin(origin).map_err(|e| refused(&e))?;
    }
    if let Some(url) = &args.http.public_url {
        http = http.public_url(url).map_err(|e| refused(&e))?;
    }
    if let Some(secret) = proxy {
        http = http.behind_proxy(secret);
    }
    if args.http.hooks {
        http = http.with_hooks(std::time::Duration::from_secs(args.wait));
    }
    Ok(http)
}

/// Where clients are told to go: the public URL, else `own`.
fn base(args: &GatewayArgs, own: &str) -> String {
    args.http.public_url.as_ref().map_or_else(
        || own.to_owned(),
        |url| url.trim().trim_end_matches('/').to_owned(),
    )
}

/// The secret of the proxy `--behind-proxy` states, read from
/// `--proxy-secret-file`; none without it.
fn proxy_secret(
    args: &GatewayHttpArgs,
) -> Result<Option<toolgate_store::proxy::ProxySecret>, Failure> {
    match (&args.proxy_secret_file, args.behind_proxy) {
        (Some(file), true) => toolgate_store::proxy::ProxySecret::read(file)
            .map(Some)
            .map_err(|e| Failure::Refused(e.to_string())),
        // clap requires the file with --behind-proxy.
        (None, true) => Err(Failure::Usage(
            "--behind-proxy needs --proxy-secret-file PATH".to_owned(),
        )),
        (_, false) => Ok(None),
    }
}

/// Tells where the gateway is, at `base`, listening on `on` when that is
/// not where clients go: its first line names the address (what a script
/// reads first).
fn told(base: &str, on: Option<&str>, behind_proxy: bool, hooks: bool) {
    match (on, behind_proxy) {
        (Some(on), true) => say!(
            "the gateway is at {}/mcp behind your proxy — every request carries a token (`toolgate gateway token add NAME`), and the proxy's secret in {} (it listens on {})",
            base,
            toolgate_store::proxy::SECRET_HEADER,
            on
        ),
        (Some(on), false) => say!(
            "the gateway is at {}/mcp — every request carries a token (`toolgate gateway token add NAME`) (it listens on {})",
            base,
            on
        ),
        (None, _) => say!(
            "the gateway is at {}/mcp — every request carries a token (`toolgate gateway token add NAME`)",
            base
        ),
    }
    if hooks {
        say!(
            "coding agents' hooks submit to {}/hook/claude-code and {}/hook/codex (`toolgate hook claude-code --service {}`)",
            base,
            base,
            base
        );
    }
}
