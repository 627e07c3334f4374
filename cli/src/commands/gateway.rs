//! `toolgate gateway`: every registered server's tools as one MCP server
//! over stdio — or over HTTP (`gateway_http`) — each call through the gate
//! (`toolgate_gateway`).

use std::time::Duration;

use rmcp::ServiceExt as _;
use toolgate_store::Store;

use crate::output::Out;
use crate::{Failure, GatewayArgs};

pub(super) async fn gateway(store: &Store, out: Out, args: GatewayArgs) -> Result<(), Failure> {
    if let Some(command) = args.command {
        return super::gateway_http::command(store, out, command).await;
    }
    let gateway = toolgate_gateway::Gateway::builder(store.clone())
        .user(&args.user)
        .host(&args.name)
        .wait(Duration::from_secs(args.wait))
        .follow(Duration::from_millis(args.follow_ms))
        .lease(Duration::from_millis(args.lease_ms))
        .expire_unasked(Duration::from_secs(args.expire_unasked))
        .four_eyes(args.four_eyes)
        .approvals(args.approvals)
        .answer_within(Duration::from_secs(args.answer_within))
        .build()
        .map_err(|e| Failure::Refused(e.to_string()))?;
    if let Some(listen) = args.http.listen.clone() {
        return super::gateway_http::serve(gateway, listen, &args).await;
    }
    tracing::info!(user = %args.user, host = %args.name, "gateway serving over stdio");
    // Runs a stopped gateway of the name left are picked up from the start,
    // whether or not the client ever initialises.
    gateway.maintain();
    // Every line the client sends is answered, one that does not read too
    // (rmcp's own stdio transport drops it unanswered).
    // Standard input and output on the runtime's reactor, not a blocking
    // thread handed every message (`stdio::handles`).
    let (input, output) = toolgate_gateway::stdio::handles();
    let input = UntilEnd {
        inner: input,
        gateway: Some(gateway.clone()),
    };
    let transport = toolgate_gateway::stdio::StdioTransport::new(input, output);
    let running = gateway
        .clone()
        .serve(transport)
        .await
        .map_err(|e| Failure::Error(format!("cannot serve over stdio: {e}")))?;
    let ended = running.waiting().await;
    gateway.close().await;
    ended
        .map(drop)
        .map_err(|e| Failure::Error(format!("the gateway stopped: {e}")))
}

/// The client's input, which tells the gateway when it ends: a client that
/// closed its side is gone, and its held calls stop waiting.
struct UntilEnd<R> {
    inner: R,
    gateway: Option<toolgate_gateway::Gateway>,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for UntilEnd<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = matches!(polled, std::task::Poll::Ready(Ok(())))
            && buf.filled().len() == before
            && buf.remaining() > 0;
        if ended && let Some(gateway) = self.gateway.take() {
            gateway.client_left();
        }
        polled
    }
}
