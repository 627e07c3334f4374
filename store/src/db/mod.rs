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

/// An item that is `pub` with the `test-util` feature, for `lib.rs` to
/// re-export to the tests that write to the database behind the store's
/// back, and `pub(crate)` without it.
macro_rules! pub_for_tests {
    ($(#[$meta:meta])* $keyword:ident $($item:tt)*) => {
        #[cfg(feature = "test-util")]
        $(#[$meta])*
        pub $keyword $($item)*

        #[cfg(not(feature = "test-util"))]
        $(#[$meta])*
        pub(crate) $keyword $($item)*
    };
}

mod arity;
mod pool;
mod query;
mod row;

pub(crate) use pool::{On, Pool, Tx};
pub(crate) use query::placeholders;
pub_for_tests! {
    use query::{Arg, Query};
}
pub_for_tests! {
    use row::{FromVal, Row, Val};
}
/// The argument and column traits: outside their modules, only tests name
/// them.
#[cfg(feature = "test-util")]
pub use {query::IntoArg, row::ColumnRef};

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
