//! A stdio gateway that opens no store: it forwards its client's requests
//! to a gateway served over HTTP ([`crate::http`]) with a token, so that a
//! machine where an agent has a shell holds no database, no integrity key
//! and nothing that decides — only a token that submits calls.
//!
//! What it forwards: `tools/list` and `tools/call` (a held call's progress
//! and a client's cancellation included, its client's own name and version
//! passed on as the request's), and the upstream gateway's
//! `notifications/tools/list_changed`. The upstream gateway judges every
//! call, as the token's person; nothing here can lower a gate.

use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleClient, RoleServer};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServerHandler, ServiceExt as _};

/// Why forwarding could not start or ended.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// The upstream gateway could not be reached or refused the token.
    #[error("the gateway at {url} cannot be reached, or refused the token: {reason}")]
    Upstream {
        /// Its URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The client on stdio could not be served.
    #[error("the client on stdio cannot be served: {0}")]
    Client(String),
}

/// The client on stdio, once it is connected: told what the upstream
/// gateway tells.
#[derive(Clone, Default)]
struct Downstream(Arc<OnceLock<Peer<RoleServer>>>);

/// What the upstream gateway sends to this forwarder, passed on.
#[derive(Clone)]
struct Relay {
    downstream: Downstream,
}

impl ClientHandler for Relay {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolgate-forward", env!("CARGO_PKG_VERSION")),
        );
        // A session's stream carries the offer's changes.
        info.protocol_version = ProtocolVersion::V_2025_11_25;
        info
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        if let Some(peer) = self.downstream.0.get()
            && let Err(error) = peer.notify_tool_list_changed().await
        {
            tracing::debug!(%error, "the client was not told the tools changed");
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        if let Some(peer) = self.downstream.0.get()
            && let Err(error) = peer.notify_progress(params).await
        {
            tracing::debug!(%error, "the client was not told a held call's progress");
        }
    }
}

/// The server the client on stdio talks to.
#[derive(Clone)]
struct Forward {
    upstream: Peer<RoleClient>,
    downstream: Downstream,
}

fn upstream_error(error: &rmcp::service::ServiceError) -> ErrorData {
    ErrorData::internal_error(
        format!(
            "the upstream toolgate gateway did not answer: {error}; the call was not made here"
        ),
        None,
    )
}

impl ServerHandler for Forward {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::default();
        info.capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        info.instructions = self
            .upstream
            .peer_info()
            .and_then(|peer| peer.instructions.clone());
        info
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let _ = self.downstream.0.set(context.peer);
    }

    async fn list_tools(
        &self,
        params: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.upstream
            .list_tools(params)
            .await
            .map_err(|error| upstream_error(&error))
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The request's own metadata — its progress token, and the client's
        // name as it declared it — goes with it.
        let mut meta = context.meta.clone();
        if meta.client_info().is_none()
            && let Some(info) = context.peer.peer_info()
        {
            meta.set_client_info(info.client_info.clone());
        }
        request.meta = Some(meta);
        // Dropped when the client cancels: the upstream request is
        // cancelled with it.
        self.upstream
            .call_tool_once(request)
            .await
            .map_err(|error| upstream_error(&error))
    }
}

/// Serves the client on stdin/stdout, forwarding to the gateway at `url`
/// (`http://HOST:PORT/mcp`) with `token`, until the client goes away.
pub async fn forward_stdio(url: &str, token: &str) -> Result<(), ForwardError> {
    let downstream = Downstream::default();
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token);
    let upstream = Relay {
        downstream: downstream.clone(),
    }
    .serve(StreamableHttpClientTransport::from_config(config))
    .await
    .map_err(|error| ForwardError::Upstream {
        url: url.to_owned(),
        reason: error.to_string(),
    })?;
    let forward = Forward {
        upstream: upstream.peer().clone(),
        downstream,
    };
    let served = forward
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|error| ForwardError::Client(error.to_string()))?;
    let ended = served.waiting().await;
    let _ = upstream.cancel().await;
    ended
        .map(drop)
        .map_err(|error| ForwardError::Client(error.to_string()))
}
