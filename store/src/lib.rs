//! toolgate's store: the operator's MCP server declarations, the tool
//! catalogue imported from each server, and suspended runs — in an SQLite
//! file, or in a PostgreSQL database shared by hosts on many machines (the
//! `postgres` feature), through versioned, checksummed migrations. One API
//! serves both: [`Store::open`] takes a path or a `postgres://` URL
//! ([`Location`]).
//!
//! A tool author's build never pulls this crate in; hosts that run remote
//! tools or keep suspended runs across processes do. Deciding a stored run
//! only records ([`Store::decide`]: exactly one of any number of concurrent
//! deciders wins, and none runs a tool). The run's owner, a [`Host`], claims
//! each decided run for exactly one of its processes and resumes it with its
//! own registry and model, journaling every call (see [`Host`] and
//! [`toolgate::journal`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), toolgate_store::StoreError> {
//! use toolgate_store::{DataClass, NewServer, Store, Transport};
//!
//! let store = Store::open("toolgate.db").await?;
//! let server = store
//!     .add_server(NewServer {
//!         id: "docs".into(),
//!         name: "Documentation search".into(),
//!         transport: Transport::Http { url: "http://127.0.0.1:8080/mcp".into() },
//!         data_class: Some(DataClass::PublicContent),
//!     })
//!     .await?;
//! // A new server requires approval until an operator turns it off.
//! assert!(server.approval == toolgate::OperatorDeclaration::ApprovalRequired);
//! # Ok(()) }
//! ```

mod catalogue;
mod chain;
mod class;
mod client_tools;
mod db;
mod error;
#[cfg_attr(
    not(feature = "test-util"),
    expect(unreachable_pub, reason = "public only behind `test-util`")
)]
mod flag;
mod gateway_tokens;
mod host;
mod location;
#[cfg_attr(
    not(feature = "test-util"),
    expect(unreachable_pub, reason = "public only behind `test-util`")
)]
mod names;
#[cfg_attr(
    not(feature = "test-util"),
    expect(unreachable_pub, reason = "public only behind `test-util`")
)]
mod open;
mod operators;
pub mod outbox;
pub mod proxy;
mod runs;
mod servers;
mod stored_json;
mod suspension;
mod tags;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use toolgate::integrity::IntegrityKey;

pub use db::Backend;
pub use runs::{ListedCall, RunFilter, RunView, Standing, server_of};
// With `test-util`, the re-export below brings it in.
pub use client_tools::{
    ClientOutcome, ClientToolRecord, CommandRule, MAX_RULE_WORDS, client_name_problem,
};
#[cfg(not(feature = "test-util"))]
use db::Query;
/// Not public API: the query layer, for the workspace's tests (statements an
/// operator or an older schema would write), with the `test-util` feature.
#[cfg(feature = "test-util")]
#[doc(hidden)]
pub use db::{Arg, ColumnRef, FromVal, IntoArg, Query, Row, Val};
pub(crate) use db::{Pool, Tx};
pub use error::{ArityMismatch, StoreError};
pub use gateway_tokens::{GatewayTokenHolder, GatewayTokenRecord, NewGatewayToken};
pub use location::{Location, LocationError};
#[cfg(not(feature = "test-util"))]
use open::MigrateTo;
/// Not public API: migrating step by step, for the store's own tests of its
/// migrations (`test-util`).
#[cfg(feature = "test-util")]
#[doc(hidden)]
pub use open::{MigrateTo, latest_version};
use open::{migration_lock, open_postgres, open_sqlite, run_migrations};
pub use operators::{NewSession, OperatorRecord, Session, SignInLink};

pub use catalogue::{
    Acceptance, Accepted, CatalogueBounds, CatalogueChange, CatalogueRow, CatalogueStage, Declared,
    ImportedTool, LiveTool, Quarantine, ToolGate,
};
pub use class::{DataClass, UnknownDataClass};
pub use flag::{StoredFlag, ToolDeclaration, effective_approval};
/// Not public API: the one reading of a stored operator flag, and of a
/// tool's declaration, for the store's tests of odd stored values
/// (`test-util`).
#[cfg(feature = "test-util")]
#[doc(hidden)]
pub use flag::{approval_from_stored, tool_declaration_from_stored};
pub use host::choose::{Choice, Choosing, Chosen, RecordedChoice, UnknownCall};
pub use host::{
    ANSWER_GRACE, CallHost, CallStanding, Ended, HOST_HEARTBEAT, HeldCall, Holding, Host, HostSeen,
    LostAnswer, RanCall, RanOutcome, Resumable, Resumed, SetAside, WaitsFor,
};
/// Not public API: the rule for a host's name, for tests (`test-util`);
/// [`Host::new`] applies it.
#[cfg(feature = "test-util")]
#[doc(hidden)]
pub use names::host_name_problem;
pub use names::is_reserved_host_name;
pub use runs::{
    AllowedFromNowOn, Answer, CallRow, ClaimError, FromNowOn, LoadError, MIN_RUN_PREFIX, OpenRun,
    Recorded, RunHistory, RunPrefixError, StoredDecision,
};
pub use servers::{ImportState, NewServer, ServerRecord, Transport, server_id_problem};
/// Not public API: the one-pass reading of a stored schema's top-level
/// `"type"`, for the workspace's MCP crate.
#[doc(hidden)]
pub use stored_json::object_type_passes;

/// The store: one SQLite file, or one PostgreSQL database.
///
/// Its methods come in groups, each an `impl` block of its own below:
///
/// | group | who uses it |
/// |---|---|
/// | opening | everyone |
/// | servers | the operator's console |
/// | catalogues | imports, and the MCP crate's provider |
/// | acceptance | the console (tool pinning) |
/// | suspended runs | hosts, and the console |
/// | decisions | the console |
/// | unknown outcomes | the console |
/// | what hosts ran | the inbox's run page |
/// | hosts seen | the inbox's run page (a host writes its heartbeat) |
/// | changes | the inbox's live pages ([`Store::changes`]) |
///
/// A host resumes decided runs through a [`Host`], not through these.
#[derive(Clone, Debug)]
pub struct Store {
    pool: Pool,
    /// Where it is, for reopening after a migration.
    location: Location,
    /// Write transactions of this process queue here rather than in SQLite's
    /// busy handler, which sleeps in steps of up to 100 ms. Other processes
    /// are still serialised by SQLite's own lock.
    writer: Arc<tokio::sync::Mutex<()>>,
    /// Authenticates suspended-run documents and decision rows when set.
    key: Option<IntegrityKey>,
    /// True when runs were saved under a key: a handle without one refuses
    /// them.
    keyed: bool,
    /// Wakes this process's hosts when a decision is recorded through any
    /// handle of it — and, on PostgreSQL, when the database announces one
    /// from any process on any machine (`LISTEN`). Hosts poll as well.
    inbox: Arc<tokio::sync::Notify>,
    /// Set once this handle's PostgreSQL listener runs.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    listening: Arc<std::sync::OnceLock<()>>,
    /// The one watcher of the outbox that every follower of this handle
    /// and its clones shares ([`Store::changes`]); started by the first.
    followers: outbox::live::Followers,
}

/// # Opening
///
/// Every user: a host, the console, the MCP crate's provider.
impl Store {
    /// Opens the store at `location` — an SQLite path (created if needed)
    /// or a `postgres://` URL — and migrates it to the latest schema. A
    /// database from a newer build, or one whose applied migrations were
    /// edited, is refused.
    pub async fn open(location: impl Into<Location>) -> Result<Self, StoreError> {
        Self::opened(location, MigrateTo::Latest).await
    }

    /// Not public API (`test-util`): opens the store at `location`,
    /// migrating only as far as `to`.
    #[cfg(feature = "test-util")]
    #[doc(hidden)]
    pub async fn open_to(location: impl Into<Location>, to: MigrateTo) -> Result<Self, StoreError> {
        Self::opened(location, to).await
    }

    async fn opened(location: impl Into<Location>, to: MigrateTo) -> Result<Self, StoreError> {
        let location = location.into();
        let pool = match &location {
            Location::Sqlite(path) => {
                // `mysql://…` given as a location is a mistake, never a file
                // to create (`Location::try_parse` says which forms work).
                if location::names_a_url(path) {
                    return Err(StoreError::Open {
                        location: location::redact_password(&path.display().to_string()),
                        source: sqlx::Error::Configuration(
                            "not an SQLite path: it names a URL (give `postgres://…`, `sqlite:PATH` or a file path)".into(),
                        ),
                    });
                }
                // Migrations are serialised across processes by an exclusive
                // lock on a file beside the database, held from before the
                // first connection until the schema is settled: several
                // processes opening a database that needs migrating take
                // turns instead of racing the same DDL.
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| StoreError::Open {
                        location: path.display().to_string(),
                        source: sqlx::Error::Io(e),
                    })?;
                }
                let lock = migration_lock(path).await?;
                let pool = open_sqlite(path).await?;
                let pool = Pool::Sqlite(pool);
                run_migrations(&pool, to).await?;
                drop(lock);
                pool
            }
            Location::Postgres(url) => {
                // The migrator holds PostgreSQL's advisory lock for the
                // database while it migrates, so processes on any machine
                // take turns.
                let pool = open_postgres(url).await?;
                run_migrations(&pool, to).await?;
                pool
            }
        };
        let mut store = Self {
            pool,
            location,
            writer: Arc::new(tokio::sync::Mutex::new(())),
            key: None,
            keyed: false,
            inbox: Arc::new(tokio::sync::Notify::new()),
            listening: Arc::new(std::sync::OnceLock::new()),
            followers: Arc::new(std::sync::OnceLock::new()),
        };
        store.keyed = store.versions_applied().await?.contains(&5)
            && Query::new("SELECT COUNT(*) FROM integrity")
                .scalar::<i64>(&store.pool)
                .await?
                > 0;
        Ok(store)
    }

    /// Which backend this store is kept in.
    pub fn backend(&self) -> Backend {
        self.pool.backend()
    }

    /// Where this store is kept.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Authenticates what this handle writes and requires what it reads to
    /// verify: suspended-run documents carry an HMAC-SHA-256 tag instead of a
    /// plain checksum, and decision rows carry a tag. The key lives outside
    /// the database (an environment variable or a key file), so a database
    /// writer who changes a document cannot re-seal it.
    #[must_use]
    pub fn with_integrity_key(mut self, key: IntegrityKey) -> Self {
        self.key = Some(key);
        self
    }

    /// True when this handle authenticates documents and decisions. Without
    /// a key, anyone who can write the database file can change a stored run
    /// (four eyes, requester, arguments) and recompute its plain checksum.
    pub fn is_authenticated(&self) -> bool {
        self.key.is_some()
    }

    /// The key that seals the request state a gateway hands a client of
    /// MCP's stateless protocol to answer with
    /// ([`IntegrityKey::request_state_key`]), when this handle has an
    /// integrity key; `None` without one.
    pub fn request_state_key(&self) -> Option<[u8; 32]> {
        self.key.as_ref().map(IntegrityKey::request_state_key)
    }

    /// The operator revision: a number every change to a server or a
    /// catalogue moves (kept by triggers in the database, so every writer
    /// moves it). One cheap query; a provider reads it once per turn.
    pub async fn operator_revision(&self) -> Result<u64, StoreError> {
        let value: i64 = Query::new("SELECT value FROM operator_revision WHERE id = 1")
            .scalar(&self.pool)
            .await?;
        u64::try_from(value).map_err(|_| StoreError::Unreadable {
            what: "operator revision",
            reason: format!("the revision is {value}, below zero"),
        })
    }

    /// True when runs in this store were saved under an integrity key: a
    /// handle without the key refuses to read or write runs and decisions.
    pub fn requires_key(&self) -> bool {
        self.keyed
    }

    /// Refuses when this store needs a key this handle lacks.
    pub(crate) fn check_keyed(&self) -> Result<(), StoreError> {
        if self.keyed && self.key.is_none() {
            Err(StoreError::KeyRequired)
        } else {
            Ok(())
        }
    }

    pub(crate) fn key(&self) -> Option<&IntegrityKey> {
        self.key.as_ref()
    }

    /// Not public API (`test-util`): migrates the database to `to` and hands
    /// back a fresh handle on it.
    /// The handle is consumed: its pooled connections were opened on the old
    /// schema and are closed, so nothing reads the new tables through them.
    /// The key, if any, carries over. A second run is a no-op.
    #[cfg(feature = "test-util")]
    #[doc(hidden)]
    pub async fn migrate(self, to: MigrateTo) -> Result<Store, StoreError> {
        let key = self.key.clone();
        self.pool.close().await;
        let store = Self::opened(&self.location, to).await?;
        Ok(match key {
            Some(key) => store.with_integrity_key(key),
            None => store,
        })
    }

    /// Not public API (`test-util`): the versions applied to this
    /// database, in order.
    #[cfg(feature = "test-util")]
    #[doc(hidden)]
    pub async fn applied_versions(&self) -> Result<Vec<i64>, StoreError> {
        self.versions_applied().await
    }

    async fn versions_applied(&self) -> Result<Vec<i64>, StoreError> {
        Ok(
            Query::new("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|row| row.try_get(0))
                .collect::<Result<_, _>>()?,
        )
    }

    /// The pool, for the query layer's test helpers (`test-util`).
    #[cfg(feature = "test-util")]
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Begins a write transaction. On SQLite it queues behind this
    /// process's other writers (the database has one writer at a time, and
    /// SQLite's busy handler sleeps in steps of up to 100 ms); on PostgreSQL
    /// writers run side by side and take row locks.
    pub(crate) async fn write(
        &self,
    ) -> Result<(Option<tokio::sync::MutexGuard<'_, ()>>, Tx), sqlx::Error> {
        let guard = match self.backend() {
            Backend::Sqlite => Some(self.writer.lock().await),
            Backend::Postgres => None,
        };
        let tx = self.pool.begin().await?;
        Ok((guard, tx))
    }

    /// On PostgreSQL, starts (once per handle and its clones) a task that
    /// listens for the database's announcements — a run decided, asked
    /// again or given a choice (`toolgate_inbox`), an operator change
    /// (`toolgate_operator`), sent by triggers whoever wrote — and wakes
    /// this process's waiting hosts. Polling stays the fallback: a lost
    /// connection only slows waking down until the listener reconnects.
    #[cfg_attr(
        not(feature = "postgres"),
        allow(clippy::unused_self, reason = "only PostgreSQL listens")
    )]
    pub(crate) fn listen(&self) {
        #[cfg(feature = "postgres")]
        if let Pool::Postgres(pool) = &self.pool {
            if self.listening.set(()).is_err() {
                return;
            }
            let pool = pool.clone();
            let inbox = Arc::downgrade(&self.inbox);
            tokio::spawn(async move {
                let mut listener = match sqlx::postgres::PgListener::connect_with(&pool).await {
                    Ok(listener) => listener,
                    Err(error) => {
                        tracing::warn!(%error, "cannot listen for decided runs; polling only");
                        return;
                    }
                };
                if let Err(error) = listener
                    .listen_all(["toolgate_inbox", "toolgate_operator"])
                    .await
                {
                    tracing::warn!(%error, "cannot listen for decided runs; polling only");
                    return;
                }
                loop {
                    match listener.recv().await {
                        Ok(note) => {
                            let Some(inbox) = inbox.upgrade() else { return };
                            tracing::debug!(channel = note.channel(), "announcement received");
                            inbox.notify_waiters();
                        }
                        Err(error) => {
                            if inbox.strong_count() == 0 || pool.is_closed() {
                                return;
                            }
                            tracing::debug!(%error, "listener interrupted; reconnecting");
                            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                        }
                    }
                }
            });
        }
    }

    /// Closes every connection.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
