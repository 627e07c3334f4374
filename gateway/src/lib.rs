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
//! decidable, and the same call asked again — same tool, same arguments by
//! [`toolgate::suspend::arguments_digest`], same client — waits on it or is
//! answered by it: an approved call runs once, a call that ran answers its
//! kept result ([`GatewayBuilder::remember`]), never runs twice.
//!
//! A forwarded call costs one hop and the scan: the operator's revision is
//! read at most once per [`GatewayBuilder::follow`], not per call. A run
//! whose gateway was killed mid-call is picked up from its journal by the
//! next gateway of the same name ([`Gateway::recover`]). What a tool answers
//! beyond its text — images, resources, structured content — reaches the
//! client as the tool gave it ([`toolgate::RichOutput`]).
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
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig, Tool,
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
use toolgate_store::{CallHost, Ended, Store, StoreError, WaitsFor};

mod follow;
use follow::Followed;

/// How long a gated call is held for a decision by default: 50 seconds,
/// below the 60 seconds most clients give a tool call.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(50);

/// How old the gateway's reading of the operator's revision may be when a
/// call is judged, by default: 100 ms. See [`GatewayBuilder::follow`].
pub const DEFAULT_FOLLOW: Duration = Duration::from_millis(100);

/// How long a held call's answer is kept for the same call asked again, by
/// default: 10 minutes. See [`GatewayBuilder::remember`].
pub const DEFAULT_REMEMBER: Duration = Duration::from_mins(10);

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

/// Builds a [`Gateway`].
pub struct GatewayBuilder {
    store: Store,
    registry: toolgate::registry::RegistryBuilder,
    host: String,
    user: String,
    wait: Duration,
    poll: Duration,
    changes: Duration,
    follow: Duration,
    remember: Duration,
    lease: Option<Duration>,
    four_eyes: bool,
    approvals: u32,
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

    /// How old the gateway's reading of the operator's revision may be when
    /// a call is judged. The revision is read at most once per interval,
    /// not once per call: an operator's change — approval turned on, a
    /// server disabled or removed, a tool changed and so quarantined —
    /// reaches every call judged more than this after it. A held call is
    /// resumed on a fresh reading. Zero reads it for every call. Default:
    /// [`DEFAULT_FOLLOW`].
    #[must_use]
    pub fn follow(mut self, within: Duration) -> Self {
        self.follow = within;
        self
    }

    /// How long the answer of a held call is kept once it was given, so
    /// that the same call asked again — a client that gave up waiting and
    /// retried — is answered with it rather than run again. Default:
    /// [`DEFAULT_REMEMBER`].
    #[must_use]
    pub fn remember(mut self, how_long: Duration) -> Self {
        self.remember = how_long;
        self
    }

    /// How long a run this gateway resumes stays its own without a sign of
    /// life ([`CallHost::with_lease`]): a gateway of the same name picks up
    /// a run whose gateway stopped mid-call once it ran out. Default: the
    /// host's, 30 seconds.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// Four eyes: a held call is decided by someone other than the
    /// gateway's user, who asked for it. Default: off.
    #[must_use]
    pub fn four_eyes(mut self, on: bool) -> Self {
        self.four_eyes = on;
        self
    }

    /// How many distinct people approve a held call before it runs (at
    /// least 1); with [`GatewayBuilder::four_eyes`], none of them the
    /// gateway's user. Default: 1.
    #[must_use]
    pub fn approvals(mut self, people: u32) -> Self {
        self.approvals = people.max(1);
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
        let follow = Arc::new(Followed::new(Arc::clone(&provider), self.follow));
        let registry = self.registry.provider(Arc::clone(&follow)).build()?;
        let host = CallHost::new(self.store, &self.host)?;
        let host = match self.lease {
            Some(lease) => host.with_lease(lease),
            None => host,
        };
        Ok(Gateway {
            inner: Arc::new(Inner {
                registry,
                provider,
                follow,
                host,
                user: self.user,
                wait: self.wait,
                poll: self.poll,
                changes: self.changes,
                remember: self.remember,
                four_eyes: self.four_eyes,
                approvals: self.approvals,
                held: std::sync::Mutex::default(),
                left: tokio::sync::watch::Sender::new(false),
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
    four_eyes: bool,
    approvals: u32,
    /// Calls held for a decision, from the moment their run is saved, by
    /// what makes a call the same call: the same call asked again — while
    /// it is held, or after it was answered "waits for approval" — waits on
    /// (or is answered by) its run rather than starting another.
    held: std::sync::Mutex<HashMap<SameCall, Arc<HeldCall>>>,
    /// Set when the client went away ([`Gateway::client_left`]).
    left: tokio::sync::watch::Sender<bool>,
}

/// What makes a retry the same call: the client, the tool and the
/// arguments' digest ([`toolgate::suspend::arguments_digest`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SameCall {
    client: Option<DeclaredClient>,
    tool: String,
    arguments: String,
}

/// A held call: its run and — once the run was resumed — its answer.
#[derive(Debug)]
struct HeldCall {
    run_id: String,
    /// Whoever holds it waits for the decision and resumes the run: one at a
    /// time, so a run is resumed once however many times its call is asked.
    /// The answer is kept in it once given.
    turn: tokio::sync::Mutex<Option<Answered>>,
}

#[derive(Debug, Clone)]
struct Answered {
    result: CallToolResult,
    at: Instant,
}

/// What the client that asked a call can be told while it is held, and how
/// it says it no longer waits.
struct Asker {
    /// Resolves when the client cancels the request, or goes away.
    cancelled: Pin<Box<dyn Future<Output = ()> + Send>>,
    /// Where to send progress, when the client asked for it.
    progress: Option<(ProgressToken, rmcp::Peer<RoleServer>)>,
}

impl Asker {
    /// A caller that never cancels and asked for no progress.
    fn patient() -> Self {
        Self {
            cancelled: Box::pin(std::future::pending()),
            progress: None,
        }
    }
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
            follow: DEFAULT_FOLLOW,
            remember: DEFAULT_REMEMBER,
            lease: None,
            four_eyes: false,
            approvals: 1,
        }
    }

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

    /// What the client is shown, as one number: it moves when the offer
    /// does. Hashed again only when the catalogue was read again.
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
        let mut hasher = std::hash::DefaultHasher::new();
        for spec in self.inner.registry.offer_all().await.specs() {
            spec.name.hash(&mut hasher);
            spec.description.hash(&mut hasher);
            spec.parameters.to_string().hash(&mut hasher);
        }
        let print = hasher.finish();
        *last = Some((catalogue, print));
        print
    }

    /// Picks up the runs of this gateway's name whose gateway stopped while
    /// it ran their call ([`CallHost::stopped`]), by the rule every host
    /// follows: the journal tells what became of the call — one that started
    /// and never ended is an outcome unknown, which waits for an operator's
    /// choice, never run again unasked. The same call asked again of this
    /// gateway is answered by its run. Returns how many were picked up; done
    /// by a served gateway every few seconds.
    pub async fn recover(&self) -> usize {
        let inner = &self.inner;
        let stopped = match inner.host.stopped().await {
            Ok(stopped) => stopped,
            Err(error) => {
                tracing::warn!(%error, "cannot look for runs whose gateway stopped");
                return 0;
            }
        };
        let mut picked = 0;
        for run_id in stopped {
            let task = match inner.host.claim(&run_id).await {
                Ok(Some(task)) => task,
                Ok(None) => continue,
                Err(error) => {
                    tracing::warn!(run = %run_id, %error, "a run whose gateway stopped cannot be claimed");
                    continue;
                }
            };
            tracing::warn!(run = %run_id, "a run whose gateway stopped mid-call is picked up from its journal");
            picked += 1;
            let paused = inner.host.store().latest_suspended(&run_id).await.ok();
            let held = Arc::new(HeldCall {
                run_id: run_id.clone(),
                turn: tokio::sync::Mutex::new(None),
            });
            let (result, over) = self.resume(&run_id, task).await;
            if over {
                *held.turn.lock().await = Some(Answered {
                    result,
                    at: Instant::now(),
                });
            }
            // Known again as the call it was, when it was this gateway
            // user's: the same call asked again is answered by it.
            let same = paused.as_ref().and_then(|run| {
                let state = run.state();
                let call = run.pending().first()?;
                (state.requested_by == inner.user).then(|| SameCall {
                    client: state.client.clone(),
                    tool: call.name.clone(),
                    arguments: toolgate::suspend::arguments_digest(&call.arguments),
                })
            });
            if let Some(same) = same {
                self.held().insert(same, held);
            }
        }
        picked
    }

    /// Answers one `tools/call`: the tool named by its wire name, through
    /// the gate.
    pub async fn call(
        &self,
        wire_name: &str,
        arguments: Value,
        client: Option<DeclaredClient>,
    ) -> CallToolResult {
        self.asked(wire_name, arguments, client, Asker::patient())
            .await
    }

    async fn asked(
        &self,
        wire_name: &str,
        arguments: Value,
        client: Option<DeclaredClient>,
        asker: Asker,
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
            arguments: toolgate::suspend::arguments_digest(&arguments),
        };
        // The same call again, held or answered: its run, not a new one.
        let earlier = self.held().get(&same).cloned();
        if let Some(held) = earlier {
            match self.join(&held, asker).await {
                Joined::Answered(answer) => return answer,
                Joined::Gone(asker) => {
                    self.forget(&same, &held);
                    return Box::pin(self.asked(wire_name, arguments, client, asker)).await;
                }
            }
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
        let mut request = CallRequest {
            client,
            ..CallRequest::new(self.inner.user.clone(), context, call)
        };
        request.options.four_eyes = self.inner.four_eyes;
        request.options.approvals_required = self.inner.approvals;
        let agent = toolgate::Agent::new(&self.inner.registry, &NoModel, &NoDecisions);
        match agent.call(request).await {
            Ok(Outcome::Finished { state, .. }) => answer(&state),
            Ok(Outcome::AwaitingApproval(run)) => {
                self.hold(same, SuspendedRun::AwaitingApproval(run), asker)
                    .await
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
            Err(error) => refusal(run_error(&error)),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<SameCall, Arc<HeldCall>>> {
        self.inner
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forgets a held call, if it is still the one held under `same`.
    fn forget(&self, same: &SameCall, held: &Arc<HeldCall>) {
        let mut calls = self.held();
        if calls.get(same).is_some_and(|now| Arc::ptr_eq(now, held)) {
            calls.remove(same);
        }
    }

    /// Saves a paused call and holds it for its decision, up to the wait.
    async fn hold(&self, same: SameCall, run: SuspendedRun, asker: Asker) -> CallToolResult {
        if let Err(error) = self.inner.host.save(&run).await {
            return refusal(format!("the call could not be held for approval: {error}"));
        }
        let held = Arc::new(HeldCall {
            run_id: run.run_id().to_owned(),
            turn: tokio::sync::Mutex::new(None),
        });
        tracing::info!(run = %held.run_id, "a gated call waits for a decision");
        {
            let remember = self.inner.remember;
            let mut calls = self.held();
            // Answers kept past their time are let go.
            calls.retain(|_, call| {
                call.turn.try_lock().map_or(true, |answered| {
                    answered.as_ref().is_none_or(|a| a.at.elapsed() < remember)
                })
            });
            calls.insert(same, Arc::clone(&held));
        }
        match self.join(&held, asker).await {
            Joined::Answered(answer) => answer,
            // Saved a moment ago and gone already: ended by someone else.
            Joined::Gone(_) => refusal(format!(
                "run `{}` ended before its call was answered; `toolgate runs show {}` tells how",
                held.run_id, held.run_id
            )),
        }
    }

    /// Waits, up to the wait, for a held call's decision, and answers with
    /// the resumed run's result; answers at once when it was answered
    /// before. Past the wait — or cancelled by the client — the answer names
    /// the run and how to decide it, and the call stays held for the same
    /// call asked again. `Gone` when the run no longer waits and was not
    /// resumed here (it expired, say): the call is a new one.
    ///
    /// The wait and the resume run in a task of their own: a client that
    /// cancels, or goes away, never cuts a resume short.
    async fn join(&self, held: &Arc<HeldCall>, mut asker: Asker) -> Joined {
        let deadline = tokio::time::Instant::now() + self.inner.wait;
        // Told when the client gives up: the wait ends — never a resume
        // under way — and a decision taken later is applied when the same
        // call is asked again.
        let (client_left, left) = tokio::sync::watch::channel(false);
        let waiting = {
            let gateway = self.clone();
            let held = Arc::clone(held);
            tokio::spawn(async move {
                let stop = || {
                    let mut left = left.clone();
                    async move {
                        tokio::select! {
                            () = tokio::time::sleep_until(deadline) => {}
                            _ = left.wait_for(|gone| *gone) => {}
                        }
                    }
                };
                gateway.wait_and_resume(&held, stop).await
            })
        };
        let progress = progress(held, asker.progress.take());
        tokio::select! {
            waited = waiting => match waited {
                Ok(Waited::Answer(answer)) => Joined::Answered(answer),
                Ok(Waited::Undecided(WaitsFor::Decision)) => {
                    Joined::Answered(waits_for_approval(held))
                }
                Ok(Waited::Undecided(WaitsFor::Choice)) => {
                    Joined::Answered(waits_for_a_choice(held))
                }
                Ok(Waited::Gone) => Joined::Gone(asker),
                Err(error) => Joined::Answered(refusal(format!(
                    "the wait for run `{}` ended: {error}",
                    held.run_id
                ))),
            },
            () = &mut asker.cancelled => {
                tracing::info!(run = %held.run_id, "the client cancelled a held call, or went away; its run stays");
                let _ = client_left.send(true);
                Joined::Answered(waits_for_approval(held))
            }
            () = progress => Joined::Answered(waits_for_approval(held)),
        }
    }

    /// One waiter at a time, until `stop` resolves: the answer given
    /// before, or the run's decision and the resumed run's result.
    async fn wait_and_resume<S: Future<Output = ()>>(
        &self,
        held: &HeldCall,
        stop: impl Fn() -> S,
    ) -> Waited {
        let inner = &self.inner;
        let mut turn = tokio::select! {
            turn = held.turn.lock() => turn,
            () = stop() => return Waited::Undecided(WaitsFor::Decision),
        };
        if let Some(answered) = turn.as_ref() {
            return Waited::Answer(answered.result.clone());
        }
        let mut waits = WaitsFor::Decision;
        let task = match inner.host.waits_for(&held.run_id).await {
            Ok(Some(what)) => {
                waits = what;
                inner
                    .host
                    .wait_until(&held.run_id, inner.poll, stop())
                    .await
            }
            // Decided while no one waited, or picked up after a host stopped.
            Ok(None) => match inner.host.claim(&held.run_id).await {
                Ok(None) => return Waited::Gone,
                claimed => claimed,
            },
            Err(error) => Err(error),
        };
        let task = match task {
            Ok(Some(task)) => task,
            Ok(None) => return Waited::Undecided(waits),
            // Not kept: the same call asked again tries again.
            Err(error) => {
                return Waited::Answer(refusal(format!(
                    "run `{}` could not be resumed: {error}",
                    held.run_id
                )));
            }
        };
        let (result, over) = self.resume(&held.run_id, task).await;
        // A run that waits again — for an operator's choice on a call whose
        // outcome is unknown — answers the same call asked again once it is
        // over, not before.
        if over {
            *turn = Some(Answered {
                result: result.clone(),
                at: Instant::now(),
            });
        }
        Waited::Answer(result)
    }

    /// Resumes a claimed run of one call, on a fresh reading of the
    /// operator's revision, and answers with its result; `true` when the
    /// run is over.
    async fn resume(
        &self,
        run_id: &str,
        task: toolgate_store::Resumable,
    ) -> (CallToolResult, bool) {
        self.inner.follow.forget();
        match self.inner.host.resume(task, &self.inner.registry).await {
            Ok(resumed) => match (&resumed.ended, &resumed.state) {
                (Ended::Finished { .. }, Some(state)) => (answer(state), true),
                (Ended::OutcomeUnknown { why, .. }, _) => (
                    refusal(format!(
                        "run `{run_id}`: the call's outcome is unknown ({why}); it may have run. A person chooses to run it again or not (`toolgate runs show {run_id}`); asked again, the same call is answered by that choice"
                    )),
                    false,
                ),
                (ended, _) => (refusal(not_finished(run_id, ended)), false),
            },
            Err(error) => (
                refusal(format!("run `{run_id}` could not be resumed: {error}")),
                false,
            ),
        }
    }
}

/// How a wait on a held call ended, for the client that asked.
enum Joined {
    Answered(CallToolResult),
    Gone(Asker),
}

/// How a wait on a held call ended.
enum Waited {
    /// The call's answer.
    Answer(CallToolResult),
    /// Not decided in time: it still waits for this.
    Undecided(WaitsFor),
    /// The run no longer waits and was not resumed here.
    Gone,
}

/// The answer to a held call whose outcome is unknown, not chosen in time.
fn waits_for_a_choice(held: &HeldCall) -> CallToolResult {
    refusal(format!(
        "run `{run}`: the call's outcome is unknown; it may have run. A person chooses to run it again or not (`toolgate runs show {run}`); asked again once chosen, the same call is answered by that choice",
        run = held.run_id,
    ))
}

/// Why a resumed run of one call gave no answer, in words.
fn not_finished(run_id: &str, ended: &Ended) -> String {
    match ended {
        Ended::Refused { reason } => format!(
            "the decision on run `{run_id}` was refused when the call was to run: {reason}. It was not run; the run waits for a fresh decision (`toolgate runs show {run_id}`)"
        ),
        Ended::Suspended { status } => format!(
            "run `{run_id}` waits again ({}); it was not run (`toolgate runs show {run_id}`)",
            status.as_str()
        ),
        Ended::Failed { error } => format!("run `{run_id}` failed: {error}"),
        Ended::Interrupted { error } => format!(
            "run `{run_id}` stopped: its record could not be written ({error}); a gateway of this name picks it up from its journal once its lease runs out"
        ),
        Ended::Lost => format!(
            "run `{run_id}` was taken over by another gateway of this name; `toolgate runs show {run_id}` tells how it ended"
        ),
        _ => format!("run `{run_id}` ended without an answer (`toolgate runs show {run_id}`)"),
    }
}

/// The answer to a held call not decided in time.
///
/// It names the run, never the digest a decision carries or the command
/// that decides it: what the client reads, the model reads, and a decision
/// is an operator's to take, from what `toolgate runs show` shows them.
fn waits_for_approval(held: &HeldCall) -> CallToolResult {
    refusal(format!(
        "the call waits for approval: run `{run}`; it was not run. A person decides it (`toolgate runs show {run}`); asked again once decided, the same call is answered by that decision",
        run = held.run_id,
    ))
}

/// Tells a client that asked for progress, every few seconds, that its
/// call still waits; never resolves.
async fn progress(held: &HeldCall, to: Option<(ProgressToken, rmcp::Peer<RoleServer>)>) {
    let Some((token, peer)) = to else {
        return std::future::pending().await;
    };
    let mut ticks = 0u32;
    loop {
        tokio::time::sleep(PROGRESS_EVERY).await;
        ticks += 1;
        let message = format!(
            "waits for a person's decision: run `{}` (`toolgate runs show {}`)",
            held.run_id, held.run_id
        );
        let sent = peer
            .notify_progress(
                ProgressNotificationParam::new(token.clone(), f64::from(ticks))
                    .with_message(message),
            )
            .await;
        if sent.is_err() {
            // The client is gone; the wait goes on until it ends.
            return std::future::pending().await;
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

/// The call's result as the run recorded it: what the tool answered —
/// images, resources and structured content as it gave them, when it gave
/// any, else its text — an error when it failed or was denied.
fn answer(state: &RunState) -> CallToolResult {
    let result = state.transcript.iter().rev().find_map(|m| match m {
        Message::Tool {
            content,
            is_error,
            rich,
            ..
        } => Some((content, *is_error, rich)),
        _ => None,
    });
    match result {
        Some((content, false, Some(rich))) => {
            let blocks: Vec<ContentBlock> = rich
                .blocks
                .iter()
                .map(|block| {
                    serde_json::from_value(block.clone())
                        .unwrap_or_else(|_| ContentBlock::text(block.to_string()))
                })
                .collect();
            let mut result = CallToolResult::success(if blocks.is_empty() {
                vec![ContentBlock::text(content.clone())]
            } else {
                blocks
            });
            result.structured_content.clone_from(&rich.structured);
            result
        }
        Some((content, false, None)) => {
            CallToolResult::success(vec![ContentBlock::text(content.clone())])
        }
        Some((content, true, _)) => {
            CallToolResult::error(vec![ContentBlock::text(content.clone())])
        }
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
        // Runs whose gateway of this name stopped mid-call are picked up
        // too.
        let gateway = self.clone();
        tokio::spawn(async move {
            let mut last = None;
            let mut seen = gateway.fingerprint(&mut last).await;
            loop {
                gateway.recover().await;
                tokio::time::sleep(gateway.inner.changes).await;
                let now = gateway.fingerprint(&mut last).await;
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
        // As the client declared itself: in this request, or at initialize.
        let client = context
            .meta
            .client_info()
            .or_else(|| {
                context
                    .peer
                    .peer_info()
                    .map(|info| info.client_info.clone())
            })
            .map(|info| DeclaredClient::new(&info.name, Some(&info.version)));
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let gone = {
            let peer = context.peer.clone();
            let poll = self.inner.poll;
            async move {
                while !peer.is_transport_closed() {
                    tokio::time::sleep(poll).await;
                }
            }
        };
        let cancelled = context.ct.clone().cancelled_owned();
        let mut left = self.inner.left.subscribe();
        let asker = Asker {
            cancelled: Box::pin(async move {
                tokio::select! {
                    () = cancelled => {}
                    () = gone => {}
                    _ = left.wait_for(|gone| *gone) => {}
                }
            }),
            progress: context
                .meta
                .get_progress_token()
                .map(|token| (token, context.peer.clone())),
        };
        Ok(self
            .asked(&request.name, arguments, client, asker)
            .await
            .into())
    }
}
