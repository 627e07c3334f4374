//! Building a [`Gateway`]: its source of tools, its host name and
//! requester, and how long and how it holds a call.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::RequestStateCodec;
use toolgate::Execute;
use toolgate::registry::{Registry, ToolProvider};
use toolgate_mcp::{Deadlines, McpProvider};
use toolgate_store::{CallHost, Store};

use crate::follow::Followed;
use crate::{
    DEFAULT_ANSWER_WITHIN, DEFAULT_EXPIRE_UNASKED, DEFAULT_FOLLOW, DEFAULT_REMEMBER, DEFAULT_WAIT,
    Gateway, GatewayError, Inner, known,
};

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
    expire_unasked: Duration,
    lease: Option<Duration>,
    four_eyes: bool,
    approvals: u32,
    answer_within: Duration,
    source: Option<Arc<dyn ToolProvider>>,
}

impl GatewayBuilder {
    /// Serves `source`'s tools in place of the registered servers': a
    /// gateway of a source of its own (a coding agent's tools, reached
    /// through its hooks — [`crate::hook`]). Its host name keeps its runs apart:
    /// no gateway of another name resumes them.
    #[must_use]
    pub fn source(mut self, source: impl ToolProvider) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

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

    /// How long a decided run waits for its call to be asked again: a
    /// client that never comes back leaves a run decided and never run;
    /// past this after its decision it is closed as expired, and shown so.
    /// Default: [`DEFAULT_EXPIRE_UNASKED`].
    #[must_use]
    pub fn expire_unasked(mut self, after: Duration) -> Self {
        self.expire_unasked = after;
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

    /// How long a client of MCP's stateless protocol (2026-07-28) has to
    /// answer the form it is sent for a held call: the request state it
    /// hands back expires this long after it was sealed, and an answer that
    /// comes later is refused, nothing recorded. Default:
    /// [`DEFAULT_ANSWER_WITHIN`].
    #[must_use]
    pub fn answer_within(mut self, within: Duration) -> Self {
        self.answer_within = within;
        self
    }

    /// The gateway, its registry booted.
    pub fn build(self) -> Result<Gateway, GatewayError> {
        toolgate::identity::Operator::new(&self.user, toolgate::identity::IdentitySource::Given)
            .map_err(|error| GatewayError::User {
                name: toolgate::visible::visible(&self.user).into_owned(),
                error,
            })?;
        // A client's form answered through the request state it hands back
        // (2026-07-28) is read only under a key of the store's own: without
        // one, that form is never sent.
        let states = self
            .store
            .request_state_key()
            // 32 bytes: the codec's own minimum.
            .map(|key| RequestStateCodec::new_unchecked(key.to_vec()));
        let (provider, source): (Option<Arc<McpProvider>>, Arc<dyn ToolProvider>) =
            if let Some(source) = self.source {
                (None, source)
            } else {
                let provider = Arc::new(McpProvider::new(self.store.clone(), Deadlines::default()));
                (Some(Arc::clone(&provider)), provider)
            };
        let follow = Arc::new(Followed::new(source, self.follow));
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
                expire_unasked: self.expire_unasked,
                maintaining: std::sync::atomic::AtomicBool::new(false),
                resuming: tokio::sync::watch::Sender::new(0),
                four_eyes: self.four_eyes,
                approvals: self.approvals,
                left: tokio::sync::watch::Sender::new(false),
                states,
                answer_within: self.answer_within,
                known: known::KnownKeys::new(self.follow),
                follow_every: self.follow,
            }),
        })
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
            expire_unasked: DEFAULT_EXPIRE_UNASKED,
            lease: None,
            four_eyes: false,
            approvals: 1,
            answer_within: DEFAULT_ANSWER_WITHIN,
            source: None,
        }
    }
}
