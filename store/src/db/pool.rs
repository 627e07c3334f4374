//! Connections and write transactions on either backend.

#[cfg(feature = "postgres")]
use sqlx::postgres::{PgPool, Postgres};
use sqlx::sqlite::{Sqlite, SqlitePool};

use super::{Backend, Query};
use crate::StoreError;

/// A connection pool on either backend.
#[derive(Clone, Debug)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    #[cfg(feature = "postgres")]
    Postgres(PgPool),
}

impl Pool {
    pub(crate) fn backend(&self) -> Backend {
        match self {
            Pool::Sqlite(_) => Backend::Sqlite,
            #[cfg(feature = "postgres")]
            Pool::Postgres(_) => Backend::Postgres,
        }
    }

    /// True once [`Pool::close`] was called.
    pub(crate) fn is_closed(&self) -> bool {
        match self {
            Pool::Sqlite(pool) => pool.is_closed(),
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => pool.is_closed(),
        }
    }

    pub(crate) async fn close(&self) {
        match self {
            Pool::Sqlite(pool) => pool.close().await,
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => pool.close().await,
        }
    }

    /// Begins a write transaction. On SQLite it takes the database's write
    /// lock at once (`BEGIN IMMEDIATE`), so a transaction that reads and
    /// then writes never fails half-way on a lock upgrade; on PostgreSQL it
    /// is a plain `BEGIN` (read committed), and the callers take row locks
    /// ([`Tx::lock_run`], [`Tx::lock_server`]) where they read to decide.
    pub(crate) async fn begin(&self) -> Result<Tx, sqlx::Error> {
        Ok(match self {
            Pool::Sqlite(pool) => Tx::Sqlite(pool.begin_with("BEGIN IMMEDIATE").await?),
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => Tx::Postgres(pool.begin().await?),
        })
    }
}

/// A write transaction on either backend; rolled back when dropped
/// uncommitted.
#[derive(Debug)]
pub(crate) enum Tx {
    Sqlite(sqlx::Transaction<'static, Sqlite>),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::Transaction<'static, Postgres>),
}

impl Tx {
    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Tx::Sqlite(tx) => tx.commit().await,
            #[cfg(feature = "postgres")]
            Tx::Postgres(tx) => tx.commit().await,
        }
    }

    /// Locks every suspension row of a run until the transaction ends, so
    /// that a decision, a claim or a release on the run reads what it acts
    /// on with no other writer in between. SQLite's transactions hold the
    /// whole database already; this is a row lock on PostgreSQL.
    pub(crate) async fn lock_run(&mut self, run_id: &str) -> Result<(), StoreError> {
        self.lock(
            "SELECT id FROM suspended_run WHERE run_id = $1 FOR UPDATE",
            run_id,
        )
        .await
    }

    /// Locks a run's open suspension, if it has one, until the transaction
    /// ends: concurrent deciders of the run take turns, and once it is
    /// decided the losers find nothing to lock — they do not hold up the
    /// host that claims it. A no-op on SQLite, as [`Tx::lock_run`].
    pub(crate) async fn lock_open_suspension(&mut self, run_id: &str) -> Result<(), StoreError> {
        self.lock(
            &format!(
                "SELECT id FROM suspended_run WHERE run_id = $1 AND {} FOR UPDATE",
                crate::suspension::when::OPEN
            ),
            run_id,
        )
        .await
    }

    /// Locks a server's row until the transaction ends, so that an import,
    /// a pin and an approval change on one server take turns.
    pub(crate) async fn lock_server(&mut self, server: &str) -> Result<(), StoreError> {
        self.lock("SELECT id FROM mcp_server WHERE id = $1 FOR UPDATE", server)
            .await
    }

    async fn lock(&mut self, sql: &str, key: &str) -> Result<(), StoreError> {
        if self.backend() == Backend::Sqlite {
            return Ok(());
        }
        Query::new(sql.to_owned())
            .bind(key)
            .fetch_all(self)
            .await
            .map(drop)
    }

    pub(crate) fn backend(&self) -> Backend {
        match self {
            Tx::Sqlite(_) => Backend::Sqlite,
            #[cfg(feature = "postgres")]
            Tx::Postgres(_) => Backend::Postgres,
        }
    }
}

/// Where a query runs: on the pool, or inside a transaction.
pub(crate) enum On<'e> {
    Pool(&'e Pool),
    Tx(&'e mut Tx),
}

impl On<'_> {
    /// The same place, borrowed again: for a loop of queries on one `On`.
    pub(crate) fn reborrow(&mut self) -> On<'_> {
        match self {
            On::Pool(pool) => On::Pool(pool),
            On::Tx(tx) => On::Tx(tx),
        }
    }
}

impl<'e> From<&'e Pool> for On<'e> {
    fn from(pool: &'e Pool) -> Self {
        On::Pool(pool)
    }
}

impl<'e> From<&'e mut Tx> for On<'e> {
    fn from(tx: &'e mut Tx) -> Self {
        On::Tx(tx)
    }
}
