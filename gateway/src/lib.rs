//! An MCP server that puts toolgate's gate in front of every registered MCP
//! server — and a Rust host's own builtins — for any MCP client.
//!
//! Its tools are the registry's offer under their wire names
//! ([`toolgate::wire`]). Every `tools/call` is resolved by its wire name
//! alone (a name that is no offered tool's is refused) and made a run of one
//! call ([`toolgate::Agent::call`]): a call the gate lets run — a server
//! whose approval its operator turned off, a local `read_only` tool — runs at
//! once; any other is saved, owned by this gateway's host of runs of one
//! call ([`toolgate_store::CallHost`]), and held while an operator decides it
//! (`toolgate runs approve|deny`), up to [`Gateway::wait`]. Decided in time,
//! the run is resumed and the held call answered — an approval runs it once,
//! a denial answers with its reason as an error result. Past the wait, the
//! client is answered with an error that names the run and how to decide
//! it; the run stays, visible and decidable.
//!
//! ```no_run
//! # async fn serve(store: toolgate_store::Store) -> Result<(), Box<dyn std::error::Error>> {
//! use rmcp::ServiceExt;
//!
//! let gateway = toolgate_gateway::Gateway::builder(store)
//!     .user("alice")
//!     .build()?;
//! gateway.serve(rmcp::transport::stdio()).await?.waiting().await?;
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::Value;
use toolgate::Execute;
use toolgate::erased::ErasedTool;
use toolgate::identity::DeclaredClient;
use toolgate::registry::{Registry, ToolProvider};
use toolgate::run::{CallRequest, Message, NoModel, Outcome, RunError, RunState, ToolCall};
use toolgate::suspend::SuspendedRun;
use toolgate_mcp::{Deadlines, McpProvider};
use toolgate_store::{CallHost, Ended, Store, StoreError};

/// How long a gated call is held for a decision by default: 50 seconds,
/// below the 60 seconds most clients give a tool call.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(50);

/// The gateway could not be built.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The registry refused its tools.
    #[error(transparent)]
    Boot(#[from] toolgate::registry::BootError),
    /// The store refused the gateway's host name.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The requester's name cannot stand for a person.
    #[error("the gateway's user `{name}` cannot be a requester: {error}")]
    User {
        /// The name, escaped.
        name: String,
        /// Why.
        error: toolgate::identity::IdentityError,
    },
}

/// Builds a [`Gateway`].
pub struct GatewayBuilder {
    store: Store,
    registry: toolgate::registry::RegistryBuilder,
    host: String,
    user: String,
    wait: Duration,
    poll: Duration,
    changes: Duration,
}

impl GatewayBuilder {
    /// Serves a builtin of the host's own beside the imported tools, gated
    /// by the same rule: a write is never served unapproved.
    #[must_use]
    pub fn builtin<T>(mut self, tool: T) -> Self
    where
        T: Execute<Origin: toolgate::gate::IsLocal>,
    {
        self.registry = self.registry.builtin(tool);
        self
    }

    /// Serves the tools of another provider beside every registered
    /// server's.
    #[must_use]
    pub fn provider(mut self, provider: impl ToolProvider) -> Self {
        self.registry = self.registry.provider(provider);
        self
    }

    /// The requester of every call this gateway serves: the operator's name
    /// for the gateway's user. Default: `gateway`.
    #[must_use]
    pub fn user(mut self, user: &str) -> Self {
        user.clone_into(&mut self.user);
        self
    }

    /// The name of the gateway's host of runs of one call: `gateway` or a
    /// name that begins `gateway.`. Default: `gateway`.
    #[must_use]
    pub fn host(mut self, name: &str) -> Self {
        name.clone_into(&mut self.host);
        self
    }

    /// How long a gated call is held for a decision. Default: [`DEFAULT_WAIT`].
    #[must_use]
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// How often a held call looks for its decision when nothing wakes it.
    /// Default: 200 ms.
    #[must_use]
    pub fn poll(mut self, poll: Duration) -> Self {
        self.poll = poll.max(Duration::from_millis(10));
        self
    }

    /// How often the offer is read again to tell a connected client it
    /// changed (`notifications/tools/list_changed`). Default: 1 s; reading
    /// it costs one read of the operator's revision.
    #[must_use]
    pub fn changes(mut self, every: Duration) -> Self {
        self.changes = every.max(Duration::from_millis(10));
        self
    }

    /// The gateway, its registry booted.
    pub fn build(self) -> Result<Gateway, GatewayError> {
        toolgate::identity::Operator::new(&self.user, toolgate::identity::IdentitySource::Given)
            .map_err(|error| GatewayError::User {
                name: toolgate::visible::visible(&self.user).into_owned(),
                error,
            })?;
        let provider = Arc::new(McpProvider::new(self.store.clone(), Deadlines::default()));
        let registry = self.registry.provider(Arc::clone(&provider)).build()?;
        let host = CallHost::new(self.store, &self.host)?;
        Ok(Gateway {
            inner: Arc::new(Inner {
                registry,
                provider,
                host,
                user: self.user,
                wait: self.wait,
                poll: self.poll,
                changes: self.changes,
                waiting: std::sync::Mutex::default(),
            }),
        })
    }
}

/// The gateway: an MCP server over a store. Cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    provider: Arc<McpProvider>,
    host: CallHost,
    user: String,
    wait: Duration,
    poll: Duration,
    /// How often the offer is read again for changes to tell the client.
    changes: Duration,
    /// Calls answered "waits for approval", by what makes a call the same
    /// call: a retry of one waits on (or is answered by) its run rather than
    /// starting another.
    waiting: std::sync::Mutex<HashMap<SameCall, Held>>,
}

/// What makes a retry the same call: the client, the tool and the
/// arguments as canonical JSON.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SameCall {
    client: Option<DeclaredClient>,
    tool: String,
    arguments: String,
}

/// A held call's run, and the digest its decision must carry.
#[derive(Debug, Clone)]
struct Held {
    run_id: String,
    digest: String,
}

impl Gateway {
    /// Starts a gateway over `store`.
    pub fn builder(store: Store) -> GatewayBuilder {
        GatewayBuilder {
            store,
            registry: Registry::builder(),
            host: "gateway".to_owned(),
            user: "gateway".to_owned(),
            wait: DEFAULT_WAIT,
            poll: Duration::from_millis(200),
            changes: Duration::from_secs(1),
        }
    }

    /// How long a gated call is held for a decision.
    pub fn wait(&self) -> Duration {
        self.inner.wait
    }

    /// Closes the connections to upstream servers.
    pub async fn close(&self) {
        self.inner.provider.close().await;
    }

    /// The offer as an MCP client is shown it: each tool under its wire
    /// name, with its description and parameter schema.
    pub async fn tools(&self) -> Vec<Tool> {
        let offered = self.inner.registry.offer_all().await;
        offered
            .specs()
            .into_iter()
            .filter_map(|spec| match spec.parameters {
                Value::Object(schema) => {
                    Some(Tool::new(spec.name, spec.description, Arc::new(schema)))
                }
                // A registry's schemas are objects; one that is not is not served.
                _ => None,
            })
            .collect()
    }

    /// What the client is shown, as one number: it moves when the offer does.
    async fn fingerprint(&self) -> u64 {
        use std::hash::{Hash as _, Hasher as _};
        let mut hasher = std::hash::DefaultHasher::new();
        for spec in self.inner.registry.offer_all().await.specs() {
            spec.name.hash(&mut hasher);
            spec.description.hash(&mut hasher);
            spec.parameters.to_string().hash(&mut hasher);
        }
        hasher.finish()
    }

    /// Answers one `tools/call`: the tool named by its wire name, through
    /// the gate.
    pub async fn call(
        &self,
        wire_name: &str,
        arguments: Value,
        client: Option<DeclaredClient>,
    ) -> CallToolResult {
        let catalogue = self.inner.registry.catalogue().await;
        // By wire name alone: what the client was shown.
        let Some(local) = catalogue.by_wire(wire_name).map(ErasedTool::name) else {
            return refusal(format!(
                "no tool `{}` is offered by this gateway",
                toolgate::visible::visible(wire_name)
            ));
        };
        let same = SameCall {
            client: client.clone(),
            tool: local.to_owned(),
            arguments: arguments.to_string(),
        };
        // The same call again, after it was answered "waits for approval":
        // its run, not a new one.
        let earlier = self.waiting().remove(&same);
        if let Some(held) = earlier
            && let Some(answer) = self.again(&same, held).await
        {
            return answer;
        }
        let call = ToolCall {
            id: format!("call_{}", uuid::Uuid::new_v4().simple()),
            name: local.to_owned(),
            arguments,
        };
        let context = match &client {
            Some(client) => format!("`tools/call` of `{wire_name}` from client `{client}`"),
            None => format!("`tools/call` of `{wire_name}`"),
        };
        let request = CallRequest {
            client,
            ..CallRequest::new(self.inner.user.clone(), context, call)
        };
        let agent = toolgate::Agent::new(&self.inner.registry, &NoModel, &NoDecisions);
        match agent.call(request).await {
            Ok(Outcome::Finished { state, .. }) => answer(&state),
            Ok(Outcome::AwaitingApproval(run)) => {
                self.hold(same, SuspendedRun::AwaitingApproval(run)).await
            }
            Ok(Outcome::WaitingForInput(run)) => {
                match self
                    .inner
                    .host
                    .save(&SuspendedRun::WaitingForInput(run.clone()))
                    .await
                {
                    Ok(_) => refusal(format!(
                        "the call waits for a user's input: run `{}`; give it with `toolgate runs input {} --digest {} --json DATA`",
                        run.run_id(),
                        run.run_id(),
                        run.digest().as_str()
                    )),
                    Err(error) => refusal(format!("the call could not be held: {error}")),
                }
            }
            Ok(other) => refusal(format!("the call ended unexpectedly: {other:?}")),
            Err(error) => refusal(run_error(&error)),
        }
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<SameCall, Held>> {
        self.inner
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Saves a paused call and holds it for its decision, up to the wait.
    async fn hold(&self, same: SameCall, run: SuspendedRun) -> CallToolResult {
        if let Err(error) = self.inner.host.save(&run).await {
            return refusal(format!("the call could not be held for approval: {error}"));
        }
        let held = Held {
            run_id: run.run_id().to_owned(),
            digest: run.digest().as_str().to_owned(),
        };
        tracing::info!(run = %held.run_id, "a gated call waits for a decision");
        self.await_decision(same, held).await
    }

    /// The same call asked again: its run answers it once decided, or is
    /// waited on again while it waits; `None` when the run is gone (it ran
    /// its course elsewhere, or was asked again as a new turn), and the call
    /// is a new one.
    async fn again(&self, same: &SameCall, held: Held) -> Option<CallToolResult> {
        let inner = &self.inner;
        let waits = inner.host.is_waiting(&held.run_id).await;
        match waits {
            Ok(true) => Some(self.await_decision(same.clone(), held).await),
            Ok(false) => match inner.host.claim(&held.run_id).await {
                Ok(Some(task)) => Some(self.resume(&held.run_id, task).await),
                Ok(None) => None,
                Err(error) => Some(refusal(format!(
                    "run `{}` could not be resumed: {error}",
                    held.run_id
                ))),
            },
            Err(error) => Some(refusal(format!(
                "run `{}` could not be read: {error}",
                held.run_id
            ))),
        }
    }

    /// Waits, up to the wait, for the held call's decision, and answers with
    /// the resumed run's result — or, past the wait, with the run and how to
    /// decide it, remembering it for the same call asked again.
    async fn await_decision(&self, same: SameCall, held: Held) -> CallToolResult {
        let inner = &self.inner;
        let waited =
            tokio::time::timeout(inner.wait, inner.host.wait_for(&held.run_id, inner.poll)).await;
        match waited {
            Ok(Ok(task)) => self.resume(&held.run_id, task).await,
            Ok(Err(error)) => refusal(format!(
                "run `{}` could not be resumed: {error}",
                held.run_id
            )),
            Err(_) => {
                let answer = refusal(format!(
                    "the call waits for approval: run `{run}` (digest {digest}). An operator decides it with `toolgate runs show {run}` and `toolgate runs approve {run} --digest {digest}` (or `deny`); it was not run. Asked again once decided, the same call is answered by that decision",
                    run = held.run_id,
                    digest = held.digest
                ));
                self.waiting().insert(same, held);
                answer
            }
        }
    }

    /// Resumes a claimed run of one call, and answers with its result.
    async fn resume(&self, run_id: &str, task: toolgate_store::Resumable) -> CallToolResult {
        match self.inner.host.resume(task, &self.inner.registry).await {
            Ok(resumed) => match (&resumed.ended, &resumed.state) {
                (Ended::Finished { .. }, Some(state)) => answer(state),
                (ended, _) => refusal(format!("run `{run_id}` did not finish: {ended:?}")),
            },
            Err(error) => refusal(format!("run `{run_id}` could not be resumed: {error}")),
        }
    }
}

/// Starting a run of one call records no decision: a held call is decided
/// through the store, and its decision recorded there.
struct NoDecisions;

impl toolgate::audit::DecisionLog for NoDecisions {
    fn record<'a>(
        &'a self,
        record: &'a toolgate::audit::DecisionRecord,
    ) -> toolgate::erased::BoxFuture<'a, Result<(), toolgate::audit::LogError>> {
        Box::pin(async move {
            Err(toolgate::audit::LogError::new(format!(
                "the gateway records no decision itself ({} by {}): decisions are recorded in the store",
                record.verdict.as_str(),
                record.decided_by
            )))
        })
    }
}

/// The call's result as the run recorded it: its text, an error when it
/// failed or was denied.
fn answer(state: &RunState) -> CallToolResult {
    let result = state.transcript.iter().rev().find_map(|m| match m {
        Message::Tool {
            content, is_error, ..
        } => Some((content.clone(), *is_error)),
        _ => None,
    });
    match result {
        Some((content, false)) => CallToolResult::success(vec![ContentBlock::text(content)]),
        Some((content, true)) => CallToolResult::error(vec![ContentBlock::text(content)]),
        None => refusal("the call has no result".to_owned()),
    }
}

/// An error result the model reads.
fn refusal(text: String) -> CallToolResult {
    tracing::warn!(%text, "a call was answered with an error");
    CallToolResult::error(vec![ContentBlock::text(text)])
}

fn run_error(error: &RunError) -> String {
    format!("the call could not be made: {error}")
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::default();
        info.capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        info.instructions = Some(
            "toolgate: every tool call passes its gate; a write waits for a human's approval."
                .into(),
        );
        info
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // The offer follows the operator: when it changes (an import, an
        // approval changed, a tool accepted, a server disabled or removed),
        // the client is told to list it again.
        let gateway = self.clone();
        tokio::spawn(async move {
            let mut seen = gateway.fingerprint().await;
            loop {
                tokio::time::sleep(gateway.inner.changes).await;
                let now = gateway.fingerprint().await;
                if now == seen {
                    continue;
                }
                seen = now;
                tracing::info!("the offer changed; the client is told");
                if context.peer.notify_tool_list_changed().await.is_err() {
                    // The client is gone.
                    break;
                }
            }
        });
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools().await))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let client = context.peer.peer_info().map(|info| {
            DeclaredClient::new(&info.client_info.name, Some(&info.client_info.version))
        });
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        Ok(self.call(&request.name, arguments, client).await.into())
    }
}
