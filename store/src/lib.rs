//! toolgate's store: the operator's MCP server declarations, the tool
//! catalogue imported from each server, and suspended runs — in an SQLite file
//! through versioned, checksummed migrations.
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
mod flag;
mod host;
mod runs;
mod servers;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::migrate::{MigrateError, Migrator};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use toolgate::integrity::IntegrityKey;

pub use catalogue::{
    Accepted, CatalogueChange, CatalogueRow, ImportedTool, LiveTool, Quarantine, tool_definition,
};
pub use class::{DataClass, UnknownDataClass};
pub use flag::{StoredFlag, approval_from_stored};
pub use host::{Choice, Chosen, Ended, Host, Resumable, Resumed, host_name_problem};
pub use runs::{
    Answer, CallRow, ClaimError, LoadError, OpenRun, Recorded, RunHistory, StoredDecision,
};
pub use servers::{ImportState, NewServer, ServerRecord, Transport, server_id_problem};

/// The schema history, embedded at build time.
pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// The newest schema version this build knows.
pub fn latest_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
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
    /// The database file could not be opened or created.
    #[error("cannot open the database at {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: sqlx::Error,
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

/// The store: one SQLite file.
#[derive(Clone, Debug)]
pub struct Store {
    pool: SqlitePool,
    /// The database file, for reopening after a migration.
    path: PathBuf,
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
    /// handle of it; hosts in other processes poll.
    inbox: Arc<tokio::sync::Notify>,
}

impl Store {
    /// Opens (creating if needed) the database at `path` and migrates it to
    /// the latest schema. A database from a newer build, or one whose applied
    /// migrations were edited, is refused.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_to(path, MigrateTo::Latest).await
    }

    /// Opens the database at `path`, migrating only as far as `to`.
    pub async fn open_to(path: impl AsRef<Path>, to: MigrateTo) -> Result<Self, StoreError> {
        let path = path.as_ref();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| StoreError::Open {
                path: path.to_owned(),
                source: sqlx::Error::Io(e),
            })?;
        }
        let options = SqliteConnectOptions::from_str("sqlite:")
            .map_err(|source| StoreError::Open {
                path: path.to_owned(),
                source,
            })?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(30));
        // Migrations are serialised across processes by an exclusive lock on
        // a file beside the database, held from before the first connection
        // until the schema is settled: several processes opening a database
        // that needs migrating take turns instead of racing the same DDL.
        let lock = migration_lock(path).await?;
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await
            .map_err(|source| StoreError::Open {
                path: path.to_owned(),
                source,
            })?;
        let store = Self {
            pool,
            path: path.to_owned(),
            writer: Arc::new(tokio::sync::Mutex::new(())),
            key: None,
            keyed: false,
            inbox: Arc::new(tokio::sync::Notify::new()),
        };
        store.run_migrations(to).await?;
        drop(lock);
        let mut store = store;
        store.keyed = store.applied_versions().await?.contains(&5)
            && sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM integrity")
                .fetch_one(&store.pool)
                .await?
                > 0;
        Ok(store)
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
        let value: i64 = sqlx::query_scalar("SELECT value FROM operator_revision WHERE id = 1")
            .fetch_one(&self.pool)
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
        let store = Self::open_to(&self.path, to).await?;
        Ok(match key {
            Some(key) => store.with_integrity_key(key),
            None => store,
        })
    }

    /// Applies migrations up to `to`, under the migration lock.
    async fn run_migrations(&self, to: MigrateTo) -> Result<(), StoreError> {
        let result = match to {
            MigrateTo::Latest => MIGRATOR.run(&self.pool).await,
            MigrateTo::Version(version) => MIGRATOR.run_to(version, &self.pool).await,
        };
        result.map_err(|error| match error {
            MigrateError::VersionMissing(version) => StoreError::NewerSchema {
                version,
                known: latest_version(),
            },
            MigrateError::VersionMismatch(version) => StoreError::EditedMigration { version },
            other => StoreError::Migrate(other),
        })?;
        tracing::debug!(?to, "database migrated");
        Ok(())
    }

    /// The versions applied to this database, in order.
    pub async fn applied_versions(&self) -> Result<Vec<i64>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// The connection pool, for an operator's own queries and for tests that
    /// write rows the way an older schema did.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Begins a write transaction, queued behind this process's other writers.
    pub(crate) async fn write(
        &self,
    ) -> Result<
        (
            tokio::sync::MutexGuard<'_, ()>,
            sqlx::Transaction<'static, sqlx::Sqlite>,
        ),
        sqlx::Error,
    > {
        let guard = self.writer.lock().await;
        let tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        Ok((guard, tx))
    }

    /// Closes every connection.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Takes the exclusive migration lock of the database at `path` (a file
/// beside it, `<file>.migrate-lock`), waiting for any other process that
/// holds it; released when the returned file is dropped.
async fn migration_lock(path: &Path) -> Result<std::fs::File, StoreError> {
    let mut name = path.as_os_str().to_owned();
    name.push(".migrate-lock");
    let lock_path = PathBuf::from(name);
    let open_error = |error: std::io::Error| StoreError::Open {
        path: lock_path.clone(),
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
