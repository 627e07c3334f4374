//! Opening a store: the backend's pool, its migrations under a lock, and the
//! schema histories both backends tell.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::{MigrateError, Migrator};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

#[cfg(not(feature = "postgres"))]
use crate::Backend;
use crate::location::redact_password;
use crate::{Pool, StoreError};

/// The SQLite schema history, embedded at build time. Not public API: for
/// the workspace's migration tests.
#[doc(hidden)]
pub(crate) static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// The PostgreSQL schema history: the same versions, telling the same story,
/// in PostgreSQL's types. Not public API: for the workspace's migration tests.
#[doc(hidden)]
#[cfg(feature = "postgres")]
pub(crate) static POSTGRES_MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// The newest schema version this build knows (both histories end on it).
pub fn latest_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// How far to migrate when opening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrateTo {
    /// Every known migration.
    Latest,
    /// Up to and including this version (for upgrade tests).
    #[cfg_attr(
        not(feature = "test-util"),
        expect(dead_code, reason = "named only by tests, behind `test-util`")
    )]
    Version(i64),
}

/// Applies migrations up to `to`: the backend's own history.
pub(crate) async fn run_migrations(pool: &Pool, to: MigrateTo) -> Result<(), StoreError> {
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
pub(crate) async fn open_sqlite(path: &Path) -> Result<sqlx::SqlitePool, StoreError> {
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
pub(crate) async fn open_postgres(url: &str) -> Result<Pool, StoreError> {
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
pub(crate) async fn open_postgres(url: &str) -> Result<Pool, StoreError> {
    Err(StoreError::BackendNotBuilt {
        location: redact_password(url),
        backend: Backend::Postgres,
    })
}

/// Takes the exclusive migration lock of the database at `path` (a file
/// beside it, `<file>.migrate-lock`), waiting for any other process that
/// holds it; released when the returned file is dropped.
pub(crate) async fn migration_lock(path: &Path) -> Result<std::fs::File, StoreError> {
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
