//! One way to talk to either backend.
//!
//! The store's queries are written once, in the SQL both SQLite and
//! PostgreSQL understand, with `$1`, `$2`, … placeholders. [`Query`] carries
//! the text and its arguments; running it on a [`Pool`] or inside a [`Tx`]
//! binds them to the backend's own driver and reads every row into a
//! [`Row`] of plain values, so the code above never names a backend. Where
//! the dialects differ (row locks, the typed approval column) the caller
//! picks by [`Backend`].
//!
//! [`pool`] holds the connections and transactions, [`query`] a statement
//! and its arguments, [`arity`] the one check of a statement's text before
//! it runs, and [`row`] what comes back: rows of plain values, read from
//! each driver's own types.

mod arity;
mod pool;
// Public only behind `test-util`, re-exported for tests that write to the
// database behind the store's back.
#[cfg_attr(
    not(feature = "test-util"),
    expect(unreachable_pub, reason = "public only behind `test-util`")
)]
mod query;
#[cfg_attr(
    not(feature = "test-util"),
    expect(unreachable_pub, reason = "public only behind `test-util`")
)]
mod row;

pub(crate) use pool::{On, Pool, Tx};
pub(crate) use query::placeholders;
/// With `test-util`, for `lib.rs` to re-export to the tests.
#[cfg(feature = "test-util")]
pub use {
    query::{Arg, IntoArg, Query},
    row::{ColumnRef, FromVal, Row, Val},
};
#[cfg(not(feature = "test-util"))]
pub(crate) use {
    query::{Arg, Query},
    row::{FromVal, Row, Val},
};

/// Which database a store is kept in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    /// An SQLite file: the embedded default.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        })
    }
}
