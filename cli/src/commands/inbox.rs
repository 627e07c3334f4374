//! `toolgate inbox`: the operator's inbox on the web (`toolgate_inbox`),
//! served on a loopback address.

use toolgate_store::Store;

use crate::output::say;
use crate::{Failure, InboxArgs};

pub(super) async fn inbox(
    store: &Store,
    workspace: &crate::agent::Workspace,
    args: InboxArgs,
) -> Result<(), Failure> {
    if !args.listen.ip().is_loopback() {
        return Err(Failure::Refused(format!(
            "the inbox listens on a loopback address only (127.0.0.1 or ::1), not {}: reach it from elsewhere through a proxy of your own",
            args.listen
        )));
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| Failure::Error(format!("cannot listen on {}: {e}", args.listen)))?;
    // The address bound (a port of 0 is chosen by the system).
    let bound = listener.local_addr().unwrap_or(args.listen);
    let public_url = args.public_url.unwrap_or_else(|| format!("http://{bound}"));
    // Answering at its public URL's host, and at the address it listens on.
    // The tools as the hosts offer them: "and from now on" is checked
    // against them.
    let (registry, provider) = crate::agent::registry(store, workspace).map_err(Failure::Error)?;
    let inbox = toolgate_inbox::Inbox::new(store.clone(), &public_url)
        .answering_at(&bound.to_string())
        .with_registry(std::sync::Arc::new(registry));
    say!(
        "the inbox is at {} (changes accepted from {} only); sign in with a link from `toolgate operator add NAME --public-url {}`",
        public_url,
        inbox.origin(),
        public_url
    );
    tracing::info!(listen = %bound, origin = inbox.origin(), "inbox serving");
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
    let served = axum::serve(listener, inbox.router())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| Failure::Error(format!("the inbox stopped: {e}")));
    let _ = stop.send(true);
    if let Some(dispatcher) = dispatcher {
        let _ = dispatcher.await;
    }
    provider.close().await;
    served
}
