//! A stdio gateway that opens no store: it forwards its client's requests
//! to a gateway served over HTTP ([`crate::http`]) with a token, so that a
//! machine where an agent has a shell holds no database, no integrity key
//! and nothing that decides — only a token that submits calls.
//!
//! What it forwards: `tools/list` and `tools/call` (a held call's progress
//! under the client's own progress token, and a client's cancellation,
//! its client's own name and version passed on as the request's), the
//! upstream gateway's `notifications/tools/list_changed`, and its forms
//! (`elicitation/create`) to a client that declared it shows them — the
//! upstream gateway is told exactly the client's own form capabilities.
//! The upstream gateway judges every call, as the token's person; nothing
//! here can lower a gate.
//!
//! What it bounds, as the stdio gateway does: every line the client sends
//! is answered ([`crate::stdio`]) — a request too long or nested too deep
//! gets an error naming why, never silence. A call in flight, or a list of
//! the tools, whose upstream gateway stops answering (killed, restarted,
//! stopped, unreachable) is answered with an error within a ping's
//! interval and [`UPSTREAM_SILENCE`] — a call's saying that if it was held
//! it is still held there, and that asking again joins it; the next
//! request connects anew, within [`CONNECT_WITHIN`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult,
    CancelledNotification, CancelledNotificationParam, ClientCapabilities, ClientConfig,
    ClientRequest, ElicitRequestParams, ElicitResult, ElicitationCapability, ErrorData,
    Implementation, InitializeRequestParams, InitializeResult, ListToolsResult,
    PaginatedRequestParams, PingRequest, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    RequestId, ServerCapabilities, ServerConfig, ServerResult,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestContext, RoleClient, RoleServer,
    RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServerHandler, ServiceExt as _};

/// How long a call in flight waits on an upstream gateway that answers no
/// ping: past it the call is answered with an error. The upstream is asked
/// every `PING_EVERY` (5 s), each ping given this long.
pub const UPSTREAM_SILENCE: Duration = Duration::from_secs(10);

/// How long connecting to the upstream gateway may take.
pub const CONNECT_WITHIN: Duration = Duration::from_secs(15);

/// How often a call in flight checks that its upstream gateway answers.
const PING_EVERY: Duration = Duration::from_secs(5);

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

/// What the forwarder's two sides share.
#[derive(Default)]
struct Shared {
    /// The client on stdio, once it is connected: told what the upstream
    /// gateway tells.
    downstream: OnceLock<Peer<RoleServer>>,
    /// Each call in flight's progress token upstream (numbered by the
    /// forwarder's connection) and the client's own, which its progress
    /// goes back under. A call whose client gave none is not here.
    progress: Mutex<HashMap<ProgressToken, ProgressToken>>,
}

impl Shared {
    fn progress(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, ProgressToken>> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the upstream gateway sends to this forwarder, passed on.
#[derive(Clone)]
struct Relay {
    shared: Arc<Shared>,
    /// The client's own form capabilities, declared upstream as its.
    elicitation: Option<ElicitationCapability>,
}

impl ClientHandler for Relay {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation.clone_from(&self.elicitation);
        let mut info = ClientConfig::new(
            capabilities,
            Implementation::new("toolgate-forward", env!("CARGO_PKG_VERSION")),
        );
        // A session's stream carries the offer's changes.
        info.protocol_version = ProtocolVersion::V_2025_11_25;
        info
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        if let Some(peer) = self.shared.downstream.get()
            && let Err(error) = peer.notify_tool_list_changed().await
        {
            tracing::debug!(%error, "the client was not told the tools changed");
        }
    }

    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let Some(own) = self.shared.progress().get(&params.progress_token).cloned() else {
            // No call in flight asked for it under that token.
            return;
        };
        params.progress_token = own;
        if let Some(peer) = self.shared.downstream.get()
            && let Err(error) = peer.notify_progress(params).await
        {
            tracing::debug!(%error, "the client was not told a held call's progress");
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(peer) = self.shared.downstream.get() else {
            return Err(ErrorData::internal_error(
                "the forwarder's client is not connected yet",
                None,
            ));
        };
        peer.create_elicitation(request).await.map_err(|error| {
            ErrorData::internal_error(
                format!("the forwarder's client did not answer the form: {error}"),
                None,
            )
        })
    }
}

/// A connection to the upstream gateway.
type Upstream = RunningService<RoleClient, Relay>;

/// Connects to the gateway at `url` with `token`.
/// Connects to the gateway at `url` with `token`, within
/// [`CONNECT_WITHIN`].
async fn connect(url: &str, token: &str, relay: Relay) -> Result<Upstream, ForwardError> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token);
    let connected = tokio::time::timeout(
        CONNECT_WITHIN,
        relay.serve(StreamableHttpClientTransport::from_config(config)),
    )
    .await
    .map_err(|_| ForwardError::Upstream {
        url: url.to_owned(),
        reason: format!("no answer in {} s", CONNECT_WITHIN.as_secs()),
    })?;
    connected.map_err(|error| ForwardError::Upstream {
        url: url.to_owned(),
        reason: error.to_string(),
    })
}

/// The server the client on stdio talks to.
#[derive(Clone)]
struct Forward {
    url: Arc<str>,
    token: Arc<str>,
    shared: Arc<Shared>,
    /// The client's form capabilities, once it said them.
    elicitation: Arc<OnceLock<Option<ElicitationCapability>>>,
    /// The upstream connection: made when the client initializes, made
    /// again by the next request after it closed.
    upstream: Arc<tokio::sync::Mutex<Option<Upstream>>>,
    /// The upstream gateway's instructions, as it gave them at start.
    instructions: Option<String>,
}

fn upstream_error(error: &rmcp::service::ServiceError) -> ErrorData {
    ErrorData::internal_error(
        format!(
            "the upstream toolgate gateway did not answer: {error}; the call was not made here"
        ),
        None,
    )
}

impl Forward {
    /// The upstream connection, made anew if it closed.
    async fn upstream(&self) -> Result<Peer<RoleClient>, ErrorData> {
        let mut upstream = self.upstream.lock().await;
        if let Some(open) = upstream.as_ref()
            && !open.is_closed()
            && !open.peer().is_transport_closed()
        {
            return Ok(open.peer().clone());
        }
        let relay = Relay {
            shared: Arc::clone(&self.shared),
            elicitation: self.elicitation.get().cloned().flatten(),
        };
        let opened = connect(&self.url, &self.token, relay)
            .await
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        let peer = opened.peer().clone();
        if let Some(closed) = upstream.replace(opened) {
            drop(closed.cancel());
        }
        Ok(peer)
    }

    async fn close(&self) {
        if let Some(open) = self.upstream.lock().await.take() {
            let _ = open.cancel().await;
        }
    }
}

/// Sends the upstream gateway a cancellation for a request whose answer
/// is no longer awaited (its client cancelled, or it was given up), and
/// forgets its progress token — unless disarmed by the answer.
struct InFlight {
    peer: Peer<RoleClient>,
    id: RequestId,
    progress: ProgressToken,
    shared: Arc<Shared>,
    answered: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.shared.progress().remove(&self.progress);
        if self.answered {
            return;
        }
        let peer = self.peer.clone();
        let notification = CancelledNotification::new(CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("the client cancelled the call".to_owned()),
        ));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.send_notification(notification.into()).await;
            });
        }
    }
}

/// Resolves when the upstream gateway has answered no ping for
/// [`UPSTREAM_SILENCE`]; pending while it answers.
async fn silence(peer: &Peer<RoleClient>) -> String {
    loop {
        tokio::time::sleep(PING_EVERY).await;
        let ping = ClientRequest::PingRequest(PingRequest::default());
        match tokio::time::timeout(UPSTREAM_SILENCE, peer.send_request(ping)).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => return error.to_string(),
            Err(_) => {
                return format!("no answer to a ping in {} s", UPSTREAM_SILENCE.as_secs());
            }
        }
    }
}

/// A `tools/call` reply as rmcp's own `call_tool_once` reads it.
fn call_response(result: ServerResult) -> Result<CallToolResponse, ErrorData> {
    match result {
        ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
        ServerResult::InputRequiredResult(result) => Ok(CallToolResponse::InputRequired(result)),
        ServerResult::CreateTaskResult(result) => Ok(CallToolResponse::Task(result)),
        // A reply without `content` reads as another variant of the
        // untagged result: read again as what it is.
        other => serde_json::to_value(&other)
            .and_then(serde_json::from_value::<CallToolResult>)
            .map(CallToolResponse::Complete)
            .map_err(|error| {
                ErrorData::internal_error(
                    format!("the upstream toolgate gateway answered the call with something that is no call's result: {error}"),
                    None,
                )
            }),
    }
}

impl ServerHandler for Forward {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::default();
        info.capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        info.instructions.clone_from(&self.instructions);
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let _ = self
            .elicitation
            .set(request.capabilities.elicitation.clone());
        // Connected with the client's own capabilities.
        self.upstream().await?;
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let _ = self.shared.downstream.set(context.peer);
    }

    async fn list_tools(
        &self,
        params: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let upstream = self.upstream().await?;
        tokio::select! {
            listed = upstream.list_tools(params) => listed.map_err(|error| upstream_error(&error)),
            silent = silence(&upstream) => Err(ErrorData::internal_error(
                format!("the upstream toolgate gateway stopped answering ({silent}); ask again once it answers"),
                None,
            )),
        }
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let upstream = self.upstream().await?;
        // The request's own metadata — the client's name as it declared
        // it — goes with it; its progress token comes back as its own.
        let mut meta = context.meta.clone();
        let own_progress = meta.get_progress_token();
        if meta.client_info().is_none()
            && let Some(info) = context.peer.peer_info()
        {
            meta.set_client_info(info.client_info.clone());
        }
        request.meta = Some(meta);
        let handle = upstream
            .send_request_with_option(
                ClientRequest::CallToolRequest(CallToolRequest::new(request)),
                PeerRequestOptions::no_options(),
            )
            .await
            .map_err(|error| upstream_error(&error))?;
        if let Some(own) = own_progress {
            self.shared
                .progress()
                .insert(handle.progress_token.clone(), own);
        }
        // Dropped when the client cancels: the upstream request is
        // cancelled with it.
        let mut in_flight = InFlight {
            peer: upstream.clone(),
            id: handle.id.clone(),
            progress: handle.progress_token.clone(),
            shared: Arc::clone(&self.shared),
            answered: false,
        };
        let answer = tokio::select! {
            answer = handle.await_response() => answer,
            silent = silence(&upstream) => {
                tracing::warn!(reason = %silent, "the upstream gateway stopped answering a call in flight");
                return Err(ErrorData::internal_error(
                    format!(
                        "the upstream toolgate gateway stopped answering while the call was in flight ({silent}); \
                         if the call was held for a decision it is still held there, and asking again once \
                         the gateway answers joins it"
                    ),
                    None,
                ));
            }
        };
        in_flight.answered = true;
        drop(in_flight);
        call_response(answer.map_err(|error| upstream_error(&error))?)
    }
}

/// Serves the client on stdin/stdout, forwarding to the gateway at `url`
/// (`http://HOST:PORT/mcp`) with `token`, until the client goes away.
///
/// The token is tried before the client is served: a gateway that cannot
/// be reached, or refuses it, ends forwarding at once.
pub async fn forward_stdio(url: &str, token: &str) -> Result<(), ForwardError> {
    let shared = Arc::new(Shared::default());
    let checked = connect(
        url,
        token,
        Relay {
            shared: Arc::clone(&shared),
            elicitation: None,
        },
    )
    .await?;
    let instructions = checked
        .peer_info()
        .and_then(|peer| peer.instructions.clone());
    let _ = checked.cancel().await;
    let forward = Forward {
        url: Arc::from(url),
        token: Arc::from(token),
        shared,
        elicitation: Arc::default(),
        upstream: Arc::default(),
        instructions,
    };
    let served = forward
        .clone()
        .serve(crate::stdio::stdio())
        .await
        .map_err(|error| ForwardError::Client(error.to_string()))?;
    let ended = served.waiting().await;
    forward.close().await;
    ended
        .map(drop)
        .map_err(|error| ForwardError::Client(error.to_string()))
}
