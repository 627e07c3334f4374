//! `toolgate inbox`: the operator's inbox on the web (`toolgate_inbox`),
//! served on a loopback address — or beyond it over HTTPS
//! (`--tls-cert`, `--tls-key`) or behind an authenticating proxy
//! (`--behind-proxy`), never in the clear to anyone else.

use toolgate_store::Store;

use crate::output::say;
use crate::{Failure, InboxArgs};

pub(super) async fn inbox(
    store: &Store,
    workspace: &crate::agent::Workspace,
    args: InboxArgs,
) -> Result<(), Failure> {
    let tls = super::serving::tls(args.tls_cert.as_ref(), args.tls_key.as_ref())?;
    let proxy = trusted_proxy(&args)?;
    if !args.listen.ip().is_loopback() {
        if tls.is_none() && proxy.is_none() {
            return Err(Failure::Refused(format!(
                "the inbox serves plain HTTP on a loopback address only (127.0.0.1 or ::1), not {}: beyond it, give a certificate and its key to serve HTTPS (`--tls-cert PATH --tls-key PATH`), or put it behind a proxy that signs operators in (`--behind-proxy --user-header NAME --proxy-secret-file PATH`), with `--public-url URL`, the address browsers reach it at",
                args.listen
            )));
        }
        if args.public_url.is_none() {
            return Err(Failure::Refused(format!(
                "the inbox listens on {}, beyond loopback: give `--public-url URL`, the address browsers reach it at (every change must come from there)",
                args.listen
            )));
        }
    }
    if tls.is_some()
        && let Some(url) = &args.public_url
        && !super::serving::is_https(url)
    {
        return Err(Failure::Refused(format!(
            "the inbox serves HTTPS, but --public-url {url} is not an https:// URL: browsers reach it over HTTPS, and changes are accepted from that origin only"
        )));
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| Failure::Error(format!("cannot listen on {}: {e}", args.listen)))?;
    // The address bound (a port of 0 is chosen by the system).
    let bound = listener.local_addr().unwrap_or(args.listen);
    let scheme = if tls.is_some() { "https" } else { "http" };
    let public_url = args
        .public_url
        .clone()
        .unwrap_or_else(|| format!("{scheme}://{bound}"));
    // Answering at its public URL's host, and at the address it listens on.
    // The tools as the hosts offer them: "and from now on" is checked
    // against them.
    let (registry, provider) = crate::agent::registry(store, workspace).map_err(Failure::Error)?;
    let mut inbox = toolgate_inbox::Inbox::new(store.clone(), &public_url)
        .answering_at(&bound.to_string())
        .with_registry(std::sync::Arc::new(registry));
    let behind_proxy = proxy.is_some();
    if let Some(proxy) = proxy {
        inbox = inbox.behind_proxy(proxy);
    }
    if behind_proxy {
        say!(
            "the inbox is at {} behind your proxy (changes accepted from {} only); the proxy signs operators in — each must be one (`toolgate operator add NAME`) — and proves itself with its secret in {}",
            public_url,
            inbox.origin(),
            toolgate_inbox::SECRET_HEADER
        );
    } else {
        say!(
            "the inbox is at {} (changes accepted from {} only); sign in with a link from `toolgate operator add NAME --public-url {}`",
            public_url,
            inbox.origin(),
            public_url
        );
    }
    tracing::info!(listen = %bound, origin = inbox.origin(), tls = tls.is_some(), behind_proxy, "inbox serving");
    // The outbox is delivered from here by default: the inbox is the
    // process an operator keeps running, and it knows the address its
    // runs' links need. A dispatcher elsewhere (`toolgate notify run`)
    // shares the work safely.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let dispatcher = if args.no_notify {
        None
    } else {
        let options = toolgate_notify::DispatchOptions {
            inbox_url: url::Url::parse(&public_url).ok(),
            ..toolgate_notify::DispatchOptions::default()
        };
        let dispatcher = toolgate_notify::Dispatcher::new(store.clone(), options);
        let mut stopped = stopped.clone();
        Some(tokio::spawn(async move {
            dispatcher
                .run(async move {
                    let _ = stopped.wait_for(|stop| *stop).await;
                })
                .await;
        }))
    };
    let served = match tls {
        Some(tls) => {
            let listener = tls
                .listen(listener)
                .map_err(|e| Failure::Error(e.to_string()))?;
            serve(listener, inbox).await
        }
        None => serve(listener, inbox).await,
    };
    let _ = stop.send(true);
    if let Some(dispatcher) = dispatcher {
        let _ = dispatcher.await;
    }
    provider.close().await;
    served
}

/// Serves `inbox` on `listener` until the process is interrupted; then
/// its live pages' streams end, which would otherwise hold the shutdown.
async fn serve<L>(listener: L, inbox: toolgate_inbox::Inbox) -> Result<(), Failure>
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    let closing = inbox.clone();
    axum::serve(listener, inbox.router())
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            closing.close_streams();
        })
        .await
        .map_err(|e| Failure::Error(format!("the inbox stopped: {e}")))
}

/// The proxy `--behind-proxy` trusts: its user header, and the secret read
/// from `--proxy-secret-file`.
fn trusted_proxy(args: &InboxArgs) -> Result<Option<toolgate_inbox::TrustedProxy>, Failure> {
    if !args.behind_proxy {
        return Ok(None);
    }
    let (Some(header), Some(file)) = (&args.user_header, &args.proxy_secret_file) else {
        // clap requires both with --behind-proxy.
        return Err(Failure::Usage(
            "--behind-proxy needs --user-header NAME and --proxy-secret-file PATH".to_owned(),
        ));
    };
    let secret = toolgate_store::proxy::ProxySecret::read(file)
        .map_err(|e| Failure::Refused(e.to_string()))?;
    toolgate_inbox::TrustedProxy::with_secret(header, secret)
        .map(Some)
        .map_err(|e| Failure::Refused(e.to_string()))
}
