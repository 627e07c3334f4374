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
mod class;
mod db;
mod flag;
mod host;
pub mod json;
mod names;
mod runs;
mod servers;
mod suspension;
mod tags;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::migrate::{MigrateError, Migrator};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use toolgate::integrity::IntegrityKey;

pub use db::{Arg, Backend, ColumnRef, FromVal, IntoArg, Query, Row, Val};
pub(crate) use db::{Pool, Tx};

pub use catalogue::{
    Acceptance, Accepted, CatalogueChange, CatalogueRow, ImportedTool, LiveTool, Quarantine,
    tool_definition,
};
pub use class::{DataClass, UnknownDataClass};
pub use flag::{StoredFlag, approval_from_stored};
pub use host::choose::{Choice, Choosing, Chosen, RecordedChoice, UnknownCall};
pub use host::{Ended, Host, Resumable, Resumed, SetAside};
pub use names::host_name_problem;
pub use runs::{
    Answer, CallRow, ClaimError, LoadError, OpenRun, Recorded, RunHistory, StoredDecision,
};
pub use servers::{ImportState, NewServer, ServerRecord, Transport, server_id_problem};

/// The SQLite schema history, embedded at build time.
pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// The PostgreSQL schema history: the same versions, telling the same story,
/// in PostgreSQL's types.
pub static POSTGRES_MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// The newest schema version this build knows (both histories end on it).
pub fn latest_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// Where a store is kept: an SQLite file (the embedded default) or a
/// PostgreSQL database.
///
/// Parsed from what an operator types: `postgres://…` or `postgresql://…`
/// is a server; `sqlite:PATH` or `sqlite://PATH`, or anything else, is the
/// path of an SQLite file.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file, created on first use.
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL (the database must exist).
    Postgres(String),
}

impl Location {
    /// Reads a path or a database URL. Surrounding white space is ignored;
    /// anything that begins with `postgres:` or `postgresql:` (any case) is
    /// a PostgreSQL location, well formed or not — a mistyped URL is refused
    /// when opened, never taken for the name of an SQLite file.
    pub fn parse(text: &str) -> Location {
        let text = text.trim();
        let lower = text.get(..11).unwrap_or(text).to_ascii_lowercase();
        if lower.starts_with("postgres:") || lower.starts_with("postgresql:") {
            Location::Postgres(text.to_owned())
        } else if let Some(rest) = text.strip_prefix("sqlite://") {
            Location::Sqlite(PathBuf::from(rest))
        } else if let Some(rest) = text.strip_prefix("sqlite:") {
            Location::Sqlite(PathBuf::from(rest))
        } else {
            Location::Sqlite(PathBuf::from(text))
        }
    }

    /// The backend this location names.
    pub fn backend(&self) -> Backend {
        match self {
            Location::Sqlite(_) => Backend::Sqlite,
            Location::Postgres(_) => Backend::Postgres,
        }
    }

    /// The location as an operator reads it: a path, or a URL with its
    /// password left out.
    pub fn display(&self) -> String {
        match self {
            Location::Sqlite(path) => path.display().to_string(),
            Location::Postgres(url) => redact_password(url),
        }
    }
}

/// Debug output never shows a password either.
impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Location::Postgres(url) => f
                .debug_tuple("Postgres")
                .field(&redact_password(url))
                .finish(),
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display())
    }
}

impl From<&str> for Location {
    fn from(text: &str) -> Self {
        Location::parse(text)
    }
}

impl From<String> for Location {
    fn from(text: String) -> Self {
        Location::parse(&text)
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Self {
        match path.to_str() {
            Some(text) => Location::parse(text),
            None => Location::Sqlite(path.to_owned()),
        }
    }
}

impl From<PathBuf> for Location {
    fn from(path: PathBuf) -> Self {
        Location::from(path.as_path())
    }
}

impl From<&PathBuf> for Location {
    fn from(path: &PathBuf) -> Self {
        Location::from(path.as_path())
    }
}

impl From<&Location> for Location {
    fn from(location: &Location) -> Self {
        location.clone()
    }
}

/// A URL with every password in it — in its user information, or as a
/// `password` parameter — replaced by `***`.
fn redact_password(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let mut out = match base.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.find('/') {
                Some(at) => rest.split_at(at),
                None => (rest, ""),
            };
            match authority.rsplit_once('@') {
                Some((userinfo, host)) => match userinfo.split_once(':') {
                    Some((user, _password)) => format!("{scheme}://{user}:***@{host}{path}"),
                    None => base.to_owned(),
                },
                None => base.to_owned(),
            }
        }
        // No authority to read: keep the scheme only.
        None => match base.split_once(':') {
            Some((scheme, rest)) if !rest.is_empty() => format!("{scheme}:***"),
            _ => base.to_owned(),
        },
    };
    if let Some(query) = query {
        out.push('?');
        let parameters: Vec<String> = query
            .split('&')
            .map(|parameter| match parameter.split_once('=') {
                Some((name, _)) if name.eq_ignore_ascii_case("password") => format!("{name}=***"),
                _ => parameter.to_owned(),
            })
            .collect();
        out.push_str(&parameters.join("&"));
    }
    out
}

/// How far to migrate when opening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrateTo {
    /// Every known migration.
    Latest,
    /// Up to and including this version (for upgrade tests and tools).
    Version(i64),
}

/// A store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Runs in this store were saved under an integrity key, and this handle
    /// has none.
    #[error(
        "this store authenticates its runs and decisions: open it with its integrity key (`--integrity-key-file` or TOOLGATE_INTEGRITY_KEY_FILE); read without it, a run could have been rewritten by anyone who can write the database"
    )]
    KeyRequired,
    /// The database could not be opened or created.
    #[error("cannot open the database at {location}: {source}")]
    Open {
        /// The file or URL (a password left out).
        location: String,
        /// Why.
        source: sqlx::Error,
    },
    /// The location names a backend this build leaves out.
    #[error(
        "{location} is a {backend} database, and this build of toolgate-store has no {backend} backend (enable the crate's `{backend}` feature)"
    )]
    BackendNotBuilt {
        /// The URL (a password left out).
        location: String,
        /// The backend.
        backend: Backend,
    },
    /// The database has a migration this build does not know.
    #[error(
        "the database was written by a newer toolgate: it has schema version {version}, which this build (up to version {known}) does not know; refusing to open it"
    )]
    NewerSchema {
        /// The unknown version found in the database.
        version: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// An applied migration's text differs from this build's.
    #[error(
        "schema version {version} was changed after it was applied to this database (its checksum differs); refusing to open it"
    )]
    EditedMigration {
        /// The migration.
        version: i64,
    },
    /// Migrating failed otherwise.
    #[error("migrating the database failed: {0}")]
    Migrate(MigrateError),
    /// A query failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// No server has that identifier.
    #[error("no server `{0}`")]
    NoSuchServer(String),
    /// The server's tools are not the ones whose digest the operator was
    /// shown: its catalogue changed in between. Nothing was changed.
    #[error(
        "the tools of server `{server}` changed since they were shown: nothing was accepted; review them again and act with the digest shown then"
    )]
    CatalogueChanged {
        /// The server.
        server: String,
    },
    /// Turning a server's approval off makes its tools run without a human:
    /// it carries the digest of the tools the operator was shown.
    #[error(
        "turning approval off for server `{server}` makes its tools run unattended, so it needs the digest of the tools you reviewed"
    )]
    ReviewRequired {
        /// The server.
        server: String,
    },
    /// The server has no live tool of that name.
    #[error("server `{server}` has no tool `{tool}`")]
    NoSuchTool {
        /// The server.
        server: String,
        /// The tool's local name, with hidden characters made visible.
        tool: String,
    },
    /// A server with that identifier exists.
    #[error("a server `{0}` exists already")]
    ServerExists(String),
    /// The identifier is unusable.
    #[error("unusable server identifier `{id}`: {problem}")]
    InvalidServerId {
        /// The identifier.
        id: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// The run does not wait for a choice on a call whose outcome is unknown.
    #[error("run `{0}` has no call whose outcome is unknown: nothing to rerun or skip")]
    NotUnknown(String),
    /// A host name is unusable.
    #[error("unusable host name `{name}`: {problem}")]
    InvalidHostName {
        /// The name, with hidden characters made visible.
        name: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// A value could not be encoded.
    #[error("cannot encode {what}: {source}")]
    Encode {
        /// What.
        what: &'static str,
        /// Why.
        source: serde_json::Error,
    },
    /// A suspended run could not be encoded.
    #[error(transparent)]
    EncodeRun(#[from] toolgate::suspend::EncodeError),
    /// A transport that was read as unreadable cannot be written back.
    #[error("cannot store an unreadable transport: {0}")]
    UnreadableTransport(String),
    /// A stored row does not read back; nothing is guessed in its place.
    #[error("stored {what} is unreadable: {reason}")]
    Unreadable {
        /// What.
        what: &'static str,
        /// Why.
        reason: String,
    },
}

/// The store: one SQLite file, or one PostgreSQL database.
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
}

impl Store {
    /// Opens the store at `location` — an SQLite path (created if needed)
    /// or a `postgres://` URL — and migrates it to the latest schema. A
    /// database from a newer build, or one whose applied migrations were
    /// edited, is refused.
    pub async fn open(location: impl Into<Location>) -> Result<Self, StoreError> {
        Self::open_to(location, MigrateTo::Latest).await
    }

    /// Opens the store at `location`, migrating only as far as `to`.
    pub async fn open_to(location: impl Into<Location>, to: MigrateTo) -> Result<Self, StoreError> {
        let location = location.into();
        let pool = match &location {
            Location::Sqlite(path) => {
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
        };
        store.keyed = store.applied_versions().await?.contains(&5)
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

    /// Migrates the database to `to` and hands back a fresh handle on it.
    /// The handle is consumed: its pooled connections were opened on the old
    /// schema and are closed, so nothing reads the new tables through them.
    /// The key, if any, carries over. A second run is a no-op.
    pub async fn migrate(self, to: MigrateTo) -> Result<Store, StoreError> {
        let key = self.key.clone();
        self.pool.close().await;
        let store = Self::open_to(&self.location, to).await?;
        Ok(match key {
            Some(key) => store.with_integrity_key(key),
            None => store,
        })
    }

    /// The versions applied to this database, in order.
    pub async fn applied_versions(&self) -> Result<Vec<i64>, StoreError> {
        Ok(
            Query::new("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|row| row.try_get(0))
                .collect::<Result<_, _>>()?,
        )
    }

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
                            tokio::time::sleep(Duration::from_millis(200)).await;
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

/// Applies migrations up to `to`: the backend's own history.
async fn run_migrations(pool: &Pool, to: MigrateTo) -> Result<(), StoreError> {
    let result = match (pool, to) {
        (Pool::Sqlite(pool), MigrateTo::Latest) => MIGRATOR.run(pool).await,
        (Pool::Sqlite(pool), MigrateTo::Version(v)) => MIGRATOR.run_to(v, pool).await,
        #[cfg(feature = "postgres")]
        (Pool::Postgres(pool), MigrateTo::Latest) => POSTGRES_MIGRATOR.run(pool).await,
        #[cfg(feature = "postgres")]
        (Pool::Postgres(pool), MigrateTo::Version(v)) => POSTGRES_MIGRATOR.run_to(v, pool).await,
    };
    result.map_err(|error| match error {
        MigrateError::VersionMissing(version) => StoreError::NewerSchema {
            version,
            known: latest_version(),
        },
        MigrateError::VersionMismatch(version) => StoreError::EditedMigration { version },
        other => StoreError::Migrate(other),
    })?;
    tracing::debug!(?to, backend = %pool.backend(), "database migrated");
    Ok(())
}

/// Opens an SQLite file, creating it if needed.
async fn open_sqlite(path: &Path) -> Result<sqlx::SqlitePool, StoreError> {
    let open_error = |source| StoreError::Open {
        location: path.display().to_string(),
        source,
    };
    if path.as_os_str().is_empty() {
        return Err(open_error(sqlx::Error::Configuration(
            "an SQLite location needs the path of a file (`sqlite:PATH`)".into(),
        )));
    }
    let options = SqliteConnectOptions::from_str("sqlite:")
        .map_err(open_error)?
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(30));
    SqlitePoolOptions::new()
        .max_connections(8)
        .connect_with(options)
        .await
        .map_err(open_error)
}

/// Connects to a PostgreSQL database. One connection is made first, on its
/// own, so that a server that refuses, a wrong password or a missing
/// database is reported as such — a pool only says it timed out.
#[cfg(feature = "postgres")]
async fn open_postgres(url: &str) -> Result<Pool, StoreError> {
    use sqlx::Connection as _;
    let open_error = |source| StoreError::Open {
        location: redact_password(url),
        source,
    };
    let options = sqlx::postgres::PgConnectOptions::from_str(url).map_err(open_error)?;
    let first = tokio::time::timeout(
        Duration::from_secs(30),
        sqlx::postgres::PgConnection::connect_with(&options),
    )
    .await
    .map_err(|_| open_error(sqlx::Error::PoolTimedOut))?
    .map_err(open_error)?;
    let _ = first.close().await;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(Duration::from_secs(30))
        .connect_with(options)
        .await
        .map_err(open_error)?;
    Ok(Pool::Postgres(pool))
}

/// This build has no PostgreSQL backend.
#[cfg(not(feature = "postgres"))]
#[allow(
    clippy::unused_async,
    reason = "the same signature as the backend it stands in for"
)]
async fn open_postgres(url: &str) -> Result<Pool, StoreError> {
    Err(StoreError::BackendNotBuilt {
        location: redact_password(url),
        backend: Backend::Postgres,
    })
}

/// Takes the exclusive migration lock of the database at `path` (a file
/// beside it, `<file>.migrate-lock`), waiting for any other process that
/// holds it; released when the returned file is dropped.
async fn migration_lock(path: &Path) -> Result<std::fs::File, StoreError> {
    let mut name = path.as_os_str().to_owned();
    name.push(".migrate-lock");
    let lock_path = PathBuf::from(name);
    let open_error = |error: std::io::Error| StoreError::Open {
        location: lock_path.display().to_string(),
        source: sqlx::Error::Io(error),
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(open_error)?;
    tokio::task::spawn_blocking(move || file.lock().map(|()| file))
        .await
        .map_err(|error| open_error(std::io::Error::other(error)))?
        .map_err(open_error)
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_read_from_what_an_operator_types() {
        assert_eq!(
            Location::parse("postgres://u:p@db/toolgate"),
            Location::Postgres("postgres://u:p@db/toolgate".into())
        );
        assert_eq!(
            Location::parse("PostgreSQL://db/toolgate").backend(),
            Backend::Postgres
        );
        assert_eq!(
            Location::parse("sqlite:///var/lib/toolgate.db"),
            Location::Sqlite("/var/lib/toolgate.db".into())
        );
        assert_eq!(
            Location::parse("sqlite:data/toolgate.db"),
            Location::Sqlite("data/toolgate.db".into())
        );
        assert_eq!(
            Location::parse("toolgate.db"),
            Location::Sqlite("toolgate.db".into())
        );
        assert_eq!(Location::parse("é").backend(), Backend::Sqlite);
        // Mistyped URLs are PostgreSQL locations, refused when opened, never
        // files named after a password.
        assert_eq!(
            Location::parse(" postgres://u:pw@db/x").backend(),
            Backend::Postgres
        );
        assert_eq!(
            Location::parse("postgres:u:pw@db/x").backend(),
            Backend::Postgres
        );
    }

    #[test]
    fn a_password_is_never_displayed() {
        for (url, shown) in [
            (
                "postgres://tg:s3cret@db:5432/toolgate",
                "postgres://tg:***@db:5432/toolgate",
            ),
            (
                "postgres://tg:p@ss@word@db/toolgate?sslmode=require",
                "postgres://tg:***@db/toolgate?sslmode=require",
            ),
            ("postgres://tg@db/toolgate", "postgres://tg@db/toolgate"),
            (
                "postgres://db/toolgate?host=/run/pg",
                "postgres://db/toolgate?host=/run/pg",
            ),
            (
                "postgres://tg@db/toolgate?host=/run/pg&password=s3cret&sslmode=require",
                "postgres://tg@db/toolgate?host=/run/pg&password=***&sslmode=require",
            ),
            (
                "postgres://tg@db/toolgate?PASSWORD=s3cret",
                "postgres://tg@db/toolgate?PASSWORD=***",
            ),
            ("postgres:tg:s3cret@db/toolgate", "postgres:***"),
            (
                "  postgres://tg:s3cret@db/toolgate ",
                "postgres://tg:***@db/toolgate",
            ),
        ] {
            assert_eq!(Location::parse(url).display(), shown, "{url}");
            assert!(
                !format!("{:?}", Location::parse(url)).contains("s3cret"),
                "{url}"
            );
        }
    }
}
