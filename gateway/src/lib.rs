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
//! client is answered with an error that names the run (never the digest a
//! decision carries: the model reads it); the run stays, visible and
//! decidable, and the same call asked again — same gateway name, requester,
//! tool, arguments by [`toolgate::suspend::arguments_digest`] and client
//! name — waits on it or is answered by it, whichever gateway process of
//! the name it is asked of: the held call is registered in the store under
//! that key ([`toolgate_store::CallHost::hold`]), in one statement, so calls
//! asked at once join one run. An approved call runs once, a call that ran
//! answers its kept result ([`GatewayBuilder::remember`]), never runs twice;
//! a decided call never asked again expires
//! ([`GatewayBuilder::expire_unasked`]).
//!
//! A forwarded call costs one hop, the scan and one indexed read of its
//! key: the operator's revision is read at most once per
//! [`GatewayBuilder::follow`], not per call. Nothing is written before a
//! call the gate lets run is forwarded, so a gateway killed while it runs
//! leaves no record of it; when its answer is lost after it reached its
//! server, its run is recorded then, under its key, its outcome unknown
//! until an operator chooses to run it again or not, and the same call
//! asked again is answered by that choice. A run
//! whose gateway was killed mid-call is picked up from its journal by the
//! next gateway of the same name ([`Gateway::recover`]). What a tool answers
//! beyond its text — images, resources, structured content — reaches the
//! client as the tool gave it ([`toolgate::RichOutput`]).
//!
//! Where the operator allows it, the client's own user decides a held call
//! in a form: sent as `elicitation/create` to a client of protocol
//! 2025-11-25 or earlier, and to a client of the stateless protocol
//! (2026-07-28) in an `input_required` answer whose request state is sealed
//! under a key derived from the store's integrity key
//! ([`GatewayBuilder::answer_within`]). A client of that protocol, which
//! never initialises, listens for changes to the tools with
//! `subscriptions/listen`.
//!
//! Served over stdio ([`stdio`]) it has one requester, its
//! [`GatewayBuilder::user`]; served over streamable HTTP ([`http`]) every
//! request carries a token of the store's, and the token's person is the
//! requester of the calls it makes.
//!
//! ```no_run
//! # async fn serve(store: toolgate_store::Store) -> Result<(), Box<dyn std::error::Error>> {
//! use rmcp::ServiceExt;
//!
//! let gateway = toolgate_gateway::Gateway::builder(store)
//!     .user("alice")
//!     .build()?;
//! // Runs a stopped gateway left are picked up from now on, whether or not
//! // the client ever initialises.
//! gateway.maintain();
//! // Every line the client sends is answered, one that does not read too.
//! gateway.serve(toolgate_gateway::stdio::stdio()).await?.waiting().await?;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{CallToolResponse, CallToolResult, ProgressToken, RequestStateCodec, Tool};
use serde_json::Value;
use toolgate::erased::ErasedTool;
use toolgate::identity::DeclaredClient;
use toolgate::registry::Registry;
use toolgate::run::{CallRequest, NoModel, Outcome, RunError, ToolCall};
use toolgate::suspend::SuspendedRun;
use toolgate_mcp::McpProvider;
use toolgate_store::{CallHost, StoreError};

mod answers;
mod builder;
mod elicit;
mod follow;
pub mod forward;
mod handler;
mod held;
pub mod hook;
pub mod http;
mod known;
mod lost;
mod mrtr;
mod same;
pub mod stdio;
pub mod tls;

pub use builder::GatewayBuilder;

use answers::{answer, refusal, run_error};
use follow::Followed;
use held::Joined;
use same::SameCall;

/// How long a gated call is held for a decision by default: 50 seconds,
/// below the 60 seconds most clients give a tool call.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(50);

/// How old the gateway's reading of the operator's revision may be when a
/// call is judged, by default: 100 ms. See [`GatewayBuilder::follow`].
pub const DEFAULT_FOLLOW: Duration = Duration::from_millis(100);

/// How long a held call's answer is kept for the same call asked again, by
/// default: 10 minutes. See [`GatewayBuilder::remember`].
pub const DEFAULT_REMEMBER: Duration = Duration::from_mins(10);

/// How long a decided run of one call waits for its call to be asked again
/// before it expires, by default: 24 hours. See
/// [`GatewayBuilder::expire_unasked`].
pub const DEFAULT_EXPIRE_UNASKED: Duration = Duration::from_hours(24);

/// How long a client of the stateless protocol (2026-07-28) has to answer
/// the form it was sent for a held call, by default: 5 minutes. See
/// [`GatewayBuilder::answer_within`].
pub const DEFAULT_ANSWER_WITHIN: Duration = Duration::from_mins(5);

/// How long [`Gateway::close`] waits for the resumes under way to end.
pub const CLOSE_WITHIN: Duration = Duration::from_mins(10);

/// How often a held call tells a client that asked for progress that it
/// still waits.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

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

/// The gateway: an MCP server over a store. Cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    /// The registered servers' tools; none for a gateway of another source
    /// ([`GatewayBuilder::source`]).
    provider: Option<Arc<McpProvider>>,
    /// The operator's revision, as the registry reads it.
    follow: Arc<Followed>,
    host: CallHost,
    user: String,
    wait: Duration,
    poll: Duration,
    /// How often the offer is read again for changes to tell the client.
    changes: Duration,
    /// How long a held call's answer is kept for the same call again.
    remember: Duration,
    /// How long a decided run waits for its call to be asked again.
    expire_unasked: Duration,
    /// Whether the recovery loop runs ([`Gateway::maintain`]).
    maintaining: std::sync::atomic::AtomicBool,
    /// How many resumes are under way in this process.
    resuming: tokio::sync::watch::Sender<usize>,
    four_eyes: bool,
    approvals: u32,
    /// Set when the client went away ([`Gateway::client_left`]).
    left: tokio::sync::watch::Sender<bool>,
    /// Seals and opens the request state of a form sent as an
    /// `input_required` answer; none without the store's integrity key.
    states: Option<RequestStateCodec>,
    /// How long such a form may take to be answered.
    answer_within: Duration,
    /// The held calls' keys of this gateway's name, as last read: a call
    /// whose key surely names no run reads nothing of the store.
    known: known::KnownKeys,
    /// How often the keys are read again ([`GatewayBuilder::follow`]).
    follow_every: Duration,
}

/// A held call: its run, and the key its answer is kept under (none for a
/// run picked up from a stopped gateway that was never held under one).
#[derive(Debug, Clone)]
struct HeldCall {
    run_id: String,
    key: Option<String>,
}

/// What the client that asked a call can be told while it is held, and how
/// it says it no longer waits.
struct Asker {
    /// Resolves when the client cancels the request, or goes away.
    cancelled: Pin<Box<dyn Future<Output = ()> + Send>>,
    /// Where to send progress, when the client asked for it.
    progress: Option<(ProgressToken, rmcp::Peer<RoleServer>)>,
    /// The client, to ask its own user to decide a held call
    /// (elicitation), when it can show forms.
    forms: Option<rmcp::Peer<RoleServer>>,
    /// The client speaks the stateless protocol (2026-07-28) and shows
    /// forms: its own user is asked in an `input_required` answer instead.
    input: bool,
    /// Who asks: the gateway's user, or over HTTP the person of the
    /// request's token.
    requester: String,
    /// What asked for the call, in words, when the caller says it better
    /// than "`tools/call` of …" (a hook: its client, session and directory).
    context: Option<String>,
}

impl Asker {
    /// `requester`, who never cancels and asked for no progress.
    fn patient(requester: String) -> Self {
        Self {
            cancelled: Box::pin(std::future::pending()),
            progress: None,
            forms: None,
            input: false,
            requester,
            context: None,
        }
    }
}

impl Gateway {
    /// How long a gated call is held for a decision.
    pub fn wait(&self) -> Duration {
        self.inner.wait
    }

    /// Tells the gateway its client went away — over stdio, its input
    /// ended: every held call stops waiting, and its run stays, decidable; a
    /// decision is applied when the same call is asked again. (A transport
    /// may end only once the calls in flight are answered, so the end of the
    /// input is the first sign.)
    pub fn client_left(&self) {
        tracing::info!("the client went away; held calls stop waiting");
        self.inner.left.send_replace(true);
    }

    /// Closes the connections to upstream servers — once the resumes under
    /// way ended (a client that went away never cuts its approved call
    /// short), or after [`CLOSE_WITHIN`] at most.
    pub async fn close(&self) {
        let mut resuming = self.inner.resuming.subscribe();
        let ended = tokio::time::timeout(CLOSE_WITHIN, resuming.wait_for(|n| *n == 0)).await;
        if ended.is_err() {
            tracing::warn!("resumes still under way are cut short: the gateway closes");
        }
        if let Some(provider) = &self.inner.provider {
            provider.close().await;
        }
    }

    /// The offer as an MCP client is shown it: each tool under its wire
    /// name, with its description, parameter schema and title, and the
    /// annotations the gateway writes for it — fail-closed for a remote
    /// tool, whatever its server says; by its declared effect for a
    /// builtin.
    pub async fn tools(&self) -> Vec<Tool> {
        let offered = self.inner.registry.offer_all().await;
        let titles = handler::titles(self.inner.host.store()).await;
        handler::shown(&offered, &titles)
            .into_iter()
            .map(|(tool, _)| tool)
            .collect()
    }

    /// What the client is shown, and each tool's gate, as one number: it
    /// moves when the offer does, and when a tool's gate does (approval
    /// turned on or off, a tool quarantined or accepted), so that a client
    /// that keeps its own list of which tools ask is told to list again.
    /// Hashed again only when the catalogue was read again.
    async fn fingerprint(
        &self,
        last: &mut Option<(Arc<toolgate::registry::Catalogue>, u64)>,
    ) -> u64 {
        use std::hash::{Hash as _, Hasher as _};
        let catalogue = self.inner.registry.catalogue().await;
        if let Some((seen, print)) = last.as_ref()
            && Arc::ptr_eq(seen, &catalogue)
        {
            return *print;
        }
        let offered = self.inner.registry.offer_all().await;
        let titles = handler::titles(self.inner.host.store()).await;
        let mut hasher = std::hash::DefaultHasher::new();
        for (shown, tool) in handler::shown(&offered, &titles) {
            // Name, title, description, schema and annotations, as sent.
            match serde_json::to_string(&shown) {
                Ok(text) => text.hash(&mut hasher),
                Err(_) => shown.name.hash(&mut hasher),
            }
            tool.facts().hash(&mut hasher);
            tool.judgement().hash(&mut hasher);
        }
        let print = hasher.finish();
        *last = Some((catalogue, print));
        print
    }

    /// Answers one `tools/call`: the tool named by its wire name, through
    /// the gate.
    pub async fn call(
        &self,
        wire_name: &str,
        arguments: Value,
        client: Option<DeclaredClient>,
    ) -> CallToolResult {
        match self
            .asked(
                wire_name,
                arguments,
                client,
                Asker::patient(self.inner.user.clone()),
            )
            .await
        {
            CallToolResponse::Complete(answer) => answer,
            // A patient asker is never sent a form.
            _ => refusal("the call was answered with a request for input".to_owned()),
        }
    }

    /// The tool offered under `wire_name` — by wire name alone: what the
    /// client was shown — its local name, and the key of the call of it
    /// with `arguments` from `client` asked by `requester` ([`SameCall`]);
    /// else the refusal.
    async fn same_call(
        &self,
        wire_name: &str,
        arguments: &Value,
        client: Option<&DeclaredClient>,
        requester: &str,
    ) -> Result<(String, String), CallToolResult> {
        let catalogue = self.inner.registry.catalogue().await;
        let Some(local) = catalogue.by_wire(wire_name).map(ErasedTool::name) else {
            return Err(refusal(format!(
                "no tool `{}` is offered by this gateway",
                toolgate::visible::visible(wire_name)
            )));
        };
        let same = SameCall {
            gateway: self.inner.host.name(),
            // As the run records it: a name is kept trimmed.
            requester: requester.trim(),
            tool: local,
            arguments,
            client: client.map(|c| c.name.as_str()),
        };
        Ok((local.to_owned(), same.key()))
    }

    async fn asked(
        &self,
        wire_name: &str,
        arguments: Value,
        client: Option<DeclaredClient>,
        asker: Asker,
    ) -> CallToolResponse {
        // The same call asked before — by this process or another gateway
        // of the name — is found by its key: a run of it that ran or was
        // decided answers it (below); one that waits for a decision is
        // joined when the call is held, which saves nothing.
        let (local, key) = match self
            .same_call(wire_name, &arguments, client.as_ref(), &asker.requester)
            .await
        {
            Ok(found) => found,
            Err(refused) => return refused.into(),
        };
        // A run of the same call that ran or was decided — its outcome
        // unknown, say, waiting for an operator's choice — answers it: it
        // is never run again unasked.
        // Read only when the keys in memory cannot say it names no run.
        let live = if self.inner.known.surely_absent(&key) {
            Ok(lost::Live::Nothing)
        } else {
            self.live(&key).await
        };
        match live {
            Ok(lost::Live::Nothing) => {}
            Ok(lost::Live::Answer(answer)) => return answer.into(),
            Ok(lost::Live::Join(held)) => {
                return match self.join(&held, asker).await {
                    Joined::Answered(answer) => answer.into(),
                    Joined::Input(input) => input.into(),
                    Joined::Gone => refusal(
                        "the call's run ended before its call was answered; `toolgate runs list` tells how".to_owned(),
                    )
                    .into(),
                };
            }
            Err(refused) => return refused.into(),
        }
        let call = ToolCall {
            id: format!("call_{}", uuid::Uuid::new_v4().simple()),
            name: local,
            arguments,
        };
        let context = match (asker.context.clone(), &client) {
            (Some(context), _) => context,
            (None, Some(client)) => format!("`tools/call` of `{wire_name}` from client `{client}`"),
            (None, None) => format!("`tools/call` of `{wire_name}`"),
        };
        let mut request = CallRequest {
            client,
            ..CallRequest::new(asker.requester.clone(), context, call)
        };
        request.options.four_eyes = self.inner.four_eyes;
        request.options.approvals_required = self.inner.approvals;
        let agent = toolgate::Agent::new(&self.inner.registry, &NoModel, &NoDecisions);
        let answered = match agent.call(request).await {
            Ok(Outcome::Finished { state, .. }) => answer(&state),
            Ok(Outcome::AwaitingApproval(run)) => {
                match self
                    .hold(key, SuspendedRun::AwaitingApproval(run), asker)
                    .await
                {
                    Joined::Answered(answer) => answer,
                    Joined::Input(input) => return input.into(),
                    // Saved a moment ago and over already: ended by someone
                    // else (denied and closed, say).
                    Joined::Gone => refusal(
                        "the call's run ended before its call was answered; `toolgate runs list` tells how".to_owned(),
                    ),
                }
            }
            Ok(Outcome::WaitingForInput(run)) => {
                match self
                    .inner
                    .host
                    .save(&SuspendedRun::WaitingForInput(run.clone()))
                    .await
                {
                    Ok(_) => refusal(format!(
                        "the call waits for a user's input: run `{}`; it was not run. A person gives it (`toolgate runs show {}`)",
                        run.run_id(),
                        run.run_id(),
                    )),
                    Err(error) => refusal(format!("the call could not be held: {error}")),
                }
            }
            Ok(Outcome::LimitReached(_)) => {
                refusal("the call's run reached its cap of turns without an answer".to_owned())
            }
            // Run at once and its answer lost: recorded now, so that the
            // same call asked again is answered by an operator's choice.
            Err(RunError::OutcomeUnknown {
                reason,
                unknown,
                known,
                ..
            }) => self.lost(&key, &unknown, &known, &reason).await,
            Err(error) => refusal(run_error(&error)),
        };
        answered.into()
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
