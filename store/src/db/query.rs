//! A statement and its arguments, run on either backend.

use std::borrow::Cow;

use sqlx::AssertSqlSafe;
#[cfg(feature = "postgres")]
use sqlx::postgres::Postgres;
use sqlx::sqlite::Sqlite;

use super::arity::check_arity;
use super::row::{each_row, one, rows_of};
use super::{FromVal, On, Pool, Row, Tx};
use crate::StoreError;

/// An argument, typed even when NULL: PostgreSQL checks a parameter's type
/// against its column.
#[derive(Debug, Clone)]
pub enum Arg {
    /// A 64-bit integer.
    Int(Option<i64>),
    /// A floating-point number.
    Real(Option<f64>),
    /// Text.
    Text(Option<String>),
    /// Bytes.
    Blob(Option<Vec<u8>>),
}

/// A value that binds as a query argument.
pub trait IntoArg {
    /// The argument.
    fn into_arg(self) -> Arg;
}

macro_rules! into_arg {
    ($($ty:ty => $variant:ident($conv:expr)),* $(,)?) => {$(
        impl IntoArg for $ty {
            fn into_arg(self) -> Arg {
                #[allow(clippy::redundant_closure_call)]
                Arg::$variant(Some(($conv)(self)))
            }
        }
        impl IntoArg for Option<$ty> {
            fn into_arg(self) -> Arg {
                #[allow(clippy::redundant_closure_call)]
                Arg::$variant(self.map($conv))
            }
        }
    )*};
}

into_arg! {
    i64 => Int(|v| v),
    i32 => Int(i64::from),
    u32 => Int(i64::from),
    bool => Int(i64::from),
    f64 => Real(|v| v),
    String => Text(|v| v),
    &str => Text(str::to_owned),
    &String => Text(String::clone),
    Vec<u8> => Blob(|v| v),
}

impl IntoArg for Arg {
    fn into_arg(self) -> Arg {
        self
    }
}

/// A query and its arguments, for either backend.
#[derive(Debug, Clone)]
#[must_use = "a query does nothing until it is run"]
pub struct Query {
    sql: Cow<'static, str>,
    args: Vec<Arg>,
}

impl Query {
    /// A query with `$1`, `$2`, … placeholders, bound in order.
    pub fn new(sql: impl Into<Cow<'static, str>>) -> Self {
        Self {
            sql: sql.into(),
            args: Vec::new(),
        }
    }

    /// Binds the next argument: `$1` first, then `$2`, ….
    pub fn bind(mut self, value: impl IntoArg) -> Self {
        self.args.push(value.into_arg());
        self
    }

    /// Runs an operator's own statement — or a test's, writing rows the way
    /// an older schema did — on a store's database; the number of rows it
    /// changed. Nothing is checked: what it writes is read back by the same
    /// fail-closed readers as everything else.
    #[cfg(feature = "test-util")]
    pub async fn execute_on(self, store: &crate::Store) -> Result<u64, StoreError> {
        self.execute(store.pool()).await
    }

    /// Runs an operator's own query on a store's database and reads every
    /// row; see [`Query::execute_on`].
    #[cfg(feature = "test-util")]
    pub async fn fetch_all_on(self, store: &crate::Store) -> Result<Vec<Row>, StoreError> {
        self.fetch_all(store.pool()).await
    }

    /// Runs an operator's own query and reads the first row, failing when
    /// there is none; see [`Query::execute_on`].
    #[cfg(feature = "test-util")]
    pub async fn fetch_one_on(self, store: &crate::Store) -> Result<Row, StoreError> {
        self.fetch_one(store.pool()).await
    }

    /// Runs an operator's own query and reads the first column of the first
    /// row; see [`Query::execute_on`].
    #[cfg(feature = "test-util")]
    pub async fn scalar_on<T: FromVal>(self, store: &crate::Store) -> Result<T, StoreError> {
        self.scalar(store.pool()).await
    }

    /// Runs a statement; the number of rows it changed.
    pub(crate) async fn execute<'e>(self, on: impl Into<On<'e>>) -> Result<u64, StoreError> {
        let done = match on.into() {
            On::Pool(Pool::Sqlite(pool)) => self.sqlite()?.execute(pool).await?.rows_affected(),
            On::Tx(Tx::Sqlite(tx)) => self.sqlite()?.execute(&mut **tx).await?.rows_affected(),
            #[cfg(feature = "postgres")]
            On::Pool(Pool::Postgres(pool)) => self.postgres()?.execute(pool).await?.rows_affected(),
            #[cfg(feature = "postgres")]
            On::Tx(Tx::Postgres(tx)) => self.postgres()?.execute(&mut **tx).await?.rows_affected(),
        };
        Ok(done)
    }

    /// Every row.
    pub(crate) async fn fetch_all<'e>(self, on: impl Into<On<'e>>) -> Result<Vec<Row>, StoreError> {
        let rows = match on.into() {
            On::Pool(Pool::Sqlite(pool)) => rows_of(&self.sqlite()?.fetch_all(pool).await?),
            On::Tx(Tx::Sqlite(tx)) => rows_of(&self.sqlite()?.fetch_all(&mut **tx).await?),
            #[cfg(feature = "postgres")]
            On::Pool(Pool::Postgres(pool)) => rows_of(&self.postgres()?.fetch_all(pool).await?),
            #[cfg(feature = "postgres")]
            On::Tx(Tx::Postgres(tx)) => rows_of(&self.postgres()?.fetch_all(&mut **tx).await?),
        };
        Ok(rows?)
    }

    /// Every row, handed to `each` as it arrives rather than gathered
    /// first: a large result is never held twice. The one [`Row`] handed
    /// over is refilled for each row; take what you keep out of it.
    pub(crate) async fn fetch_each<'e, E>(
        self,
        on: impl Into<On<'e>>,
        mut each: impl FnMut(&mut Row) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<StoreError>,
    {
        match on.into() {
            On::Pool(Pool::Sqlite(pool)) => each_row(self.sqlite()?.fetch(pool), &mut each).await,
            On::Tx(Tx::Sqlite(tx)) => each_row(self.sqlite()?.fetch(&mut **tx), &mut each).await,
            #[cfg(feature = "postgres")]
            On::Pool(Pool::Postgres(pool)) => {
                each_row(self.postgres()?.fetch(pool), &mut each).await
            }
            #[cfg(feature = "postgres")]
            On::Tx(Tx::Postgres(tx)) => {
                each_row(self.postgres()?.fetch(&mut **tx), &mut each).await
            }
        }
    }

    /// The first row, if any.
    pub(crate) async fn fetch_optional<'e>(
        self,
        on: impl Into<On<'e>>,
    ) -> Result<Option<Row>, StoreError> {
        let row = match on.into() {
            On::Pool(Pool::Sqlite(pool)) => {
                self.sqlite()?.fetch_optional(pool).await?.as_ref().map(one)
            }
            On::Tx(Tx::Sqlite(tx)) => self
                .sqlite()?
                .fetch_optional(&mut **tx)
                .await?
                .as_ref()
                .map(one),
            #[cfg(feature = "postgres")]
            On::Pool(Pool::Postgres(pool)) => self
                .postgres()?
                .fetch_optional(pool)
                .await?
                .as_ref()
                .map(one),
            #[cfg(feature = "postgres")]
            On::Tx(Tx::Postgres(tx)) => self
                .postgres()?
                .fetch_optional(&mut **tx)
                .await?
                .as_ref()
                .map(one),
        };
        Ok(row.transpose()?)
    }

    /// The first row; [`sqlx::Error::RowNotFound`] when there is none.
    pub(crate) async fn fetch_one<'e>(self, on: impl Into<On<'e>>) -> Result<Row, StoreError> {
        self.fetch_optional(on)
            .await?
            .ok_or(StoreError::Database(sqlx::Error::RowNotFound))
    }

    /// The first column of the first row, if there is a row.
    pub(crate) async fn scalar_optional<'e, T: FromVal>(
        self,
        on: impl Into<On<'e>>,
    ) -> Result<Option<T>, StoreError> {
        Ok(self
            .fetch_optional(on)
            .await?
            .map(|row| row.try_get(0))
            .transpose()?)
    }

    /// The first column of the first row.
    pub(crate) async fn scalar<'e, T: FromVal>(
        self,
        on: impl Into<On<'e>>,
    ) -> Result<T, StoreError> {
        Ok(self.fetch_one(on).await?.try_get(0)?)
    }

    /// The query for SQLite's driver, once its arity is checked.
    fn sqlite(
        self,
    ) -> Result<
        sqlx::query::Query<'static, Sqlite, <Sqlite as sqlx::Database>::Arguments>,
        StoreError,
    > {
        self.check()?;
        Ok(bound(sqlx::query(AssertSqlSafe(self.sql)), self.args))
    }

    /// The query for PostgreSQL's driver, once its arity is checked.
    #[cfg(feature = "postgres")]
    fn postgres(
        self,
    ) -> Result<
        sqlx::query::Query<'static, Postgres, <Postgres as sqlx::Database>::Arguments>,
        StoreError,
    > {
        self.check()?;
        Ok(bound(sqlx::query(AssertSqlSafe(self.sql)), self.args))
    }

    /// Refuses a statement whose placeholders are not `$1` … `$n` for its
    /// `n` arguments ([`check_arity`]).
    fn check(&self) -> Result<(), StoreError> {
        check_arity(&self.sql, self.args.len()).map_err(|mismatch| StoreError::Arity {
            statement: self.sql.clone().into_owned(),
            mismatch,
        })
    }
}

/// `count` placeholders numbered from `$first`, separated by commas: `$3,
/// $4, $5` — for a statement built for a number of values known only when
/// it runs.
pub(crate) fn placeholders(first: usize, count: usize) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(count * 6);
    for n in first..first.saturating_add(count) {
        let separator = if n == first { "" } else { ", " };
        // Writing to a `String` cannot fail.
        let _ = write!(out, "{separator}${n}");
    }
    out
}

/// A driver's query with `args` bound in order, each with its type.
fn bound<DB: sqlx::Database>(
    mut query: sqlx::query::Query<'static, DB, DB::Arguments>,
    args: Vec<Arg>,
) -> sqlx::query::Query<'static, DB, DB::Arguments>
where
    Option<i64>: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<f64>: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<String>: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<Vec<u8>>: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    for arg in args {
        query = match arg {
            Arg::Int(v) => query.bind(v),
            Arg::Real(v) => query.bind(v),
            Arg::Text(v) => query.bind(v),
            Arg::Blob(v) => query.bind(v),
        };
    }
    query
}
