//! One way to talk to either backend.
//!
//! The store's queries are written once, in the SQL both SQLite and
//! PostgreSQL understand, with `$1`, `$2`, … placeholders. [`Query`] carries
//! the text and its arguments; running it on a [`Pool`] or inside a [`Tx`]
//! binds them to the backend's own driver and reads every row into a
//! [`Row`] of plain values, so the code above never names a backend. Where
//! the dialects differ (row locks, the typed approval column) the caller
//! picks by [`Backend`].

use std::borrow::Cow;
use std::sync::Arc;

use crate::{ArityMismatch, StoreError};

use sqlx::sqlite::{Sqlite, SqlitePool, SqliteRow};
use sqlx::{AssertSqlSafe, Column, Row as _, TypeInfo, ValueRef};

#[cfg(feature = "postgres")]
use sqlx::postgres::{PgPool, PgRow, Postgres};

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
    pub async fn execute_on(self, store: &crate::Store) -> Result<u64, StoreError> {
        self.execute(store.pool()).await
    }

    /// Runs an operator's own query on a store's database and reads every
    /// row; see [`Query::execute_on`].
    pub async fn fetch_all_on(self, store: &crate::Store) -> Result<Vec<Row>, StoreError> {
        self.fetch_all(store.pool()).await
    }

    /// Runs an operator's own query and reads the first row, failing when
    /// there is none; see [`Query::execute_on`].
    pub async fn fetch_one_on(self, store: &crate::Store) -> Result<Row, StoreError> {
        self.fetch_one(store.pool()).await
    }

    /// Runs an operator's own query and reads the first column of the first
    /// row; see [`Query::execute_on`].
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
    pub(crate) async fn fetch_each<E>(
        self,
        pool: &Pool,
        mut each: impl FnMut(&mut Row) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<StoreError>,
    {
        match pool {
            Pool::Sqlite(pool) => each_row(self.sqlite()?.fetch(pool), &mut each).await,
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => each_row(self.postgres()?.fetch(pool), &mut each).await,
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
    for n in first..first + count {
        let separator = if n == first { "" } else { ", " };
        // Writing to a `String` cannot fail.
        let _ = write!(out, "{separator}${n}");
    }
    out
}

/// The most arguments a statement binds: PostgreSQL's limit (SQLite's,
/// 32,766, is lower still).
const MAX_ARGS: usize = 65_535;

/// Checks that the placeholders of `sql` outside quoted text are `$1` …
/// `$bound`, each used at least once (one may be used more than once): in
/// one pass over its bytes, allocating nothing. SQLite's driver binds a
/// missing argument as NULL and ignores an unused one, silently; this
/// refuses both before either driver sees the statement.
///
/// A `$` that continues an identifier (`a$1`) or is not followed by a digit
/// is no placeholder. The store's statements use no dollar-quoted strings
/// and no comments, so they are not looked for.
pub(crate) fn check_arity(sql: &str, bound: usize) -> Result<(), ArityMismatch> {
    if bound <= 64 {
        check_with::<1>(sql, bound)
    } else if bound <= MAX_ARGS {
        check_with::<{ MAX_ARGS.div_ceil(64) }>(sql, bound)
    } else {
        Err(ArityMismatch::TooMany {
            bound,
            max: MAX_ARGS,
        })
    }
}

/// [`check_arity`] for `bound` of at most `64 * WORDS`: a bit a placeholder,
/// on the stack.
fn check_with<const WORDS: usize>(sql: &str, bound: usize) -> Result<(), ArityMismatch> {
    let mut used = [0u64; WORDS];
    let bytes = sql.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        i += 1;
        if let Some(open) = quote {
            if byte == open {
                quote = None;
            }
            continue;
        }
        match byte {
            b'\'' | b'"' => quote = Some(byte),
            b'$' => {
                let continues_identifier = i >= 2
                    && bytes
                        .get(i - 2)
                        .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$'));
                let digits = i;
                let mut placeholder = 0usize;
                while let Some(digit) = bytes.get(i).filter(|b| b.is_ascii_digit()) {
                    placeholder = placeholder
                        .saturating_mul(10)
                        .saturating_add(usize::from(digit - b'0'));
                    i += 1;
                }
                if continues_identifier || i == digits {
                    continue;
                }
                if placeholder == 0 || placeholder > bound {
                    return Err(ArityMismatch::Unbound { placeholder, bound });
                }
                let at = placeholder - 1;
                if let Some(word) = used.get_mut(at / 64) {
                    *word |= 1 << (at % 64);
                }
            }
            _ => {}
        }
    }
    // The first argument no placeholder used, if any.
    for (index, word) in used.iter().enumerate() {
        let first = index * 64;
        if first >= bound {
            break;
        }
        let expected = match bound - first {
            64.. => u64::MAX,
            left => (1u64 << left) - 1,
        };
        let missing = expected & !word;
        if missing != 0 {
            return Err(ArityMismatch::Unused {
                placeholder: first + missing.trailing_zeros() as usize + 1,
                bound,
            });
        }
    }
    Ok(())
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

/// A value read from a row, with the storage class it was read in.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// SQL NULL.
    Null,
    /// An integer (a PostgreSQL boolean reads as 0 or 1).
    Int(i64),
    /// A floating-point number.
    Real(f64),
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
    /// A label of a PostgreSQL enumerated type, with the type's name.
    Label {
        /// The enumerated type.
        ty: String,
        /// The label.
        label: String,
    },
}

/// One row, read into plain values, and the backend it was read from.
#[derive(Debug, Clone)]
pub struct Row {
    names: Arc<[String]>,
    values: Vec<Val>,
    backend: Backend,
}

/// A column by position or by name.
pub trait ColumnRef: Copy + std::fmt::Display {
    /// The position in `names`.
    fn position(self, names: &[String]) -> Option<usize>;
}

impl ColumnRef for usize {
    fn position(self, names: &[String]) -> Option<usize> {
        (self < names.len()).then_some(self)
    }
}

impl ColumnRef for &str {
    fn position(self, names: &[String]) -> Option<usize> {
        names.iter().position(|n| n == self)
    }
}

impl Row {
    /// The backend the row was read from: what a stored value means can
    /// depend on it (the operator flag's "off" is the integer 0 in SQLite,
    /// the label `not_required` in PostgreSQL).
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The value of a column as stored, or `None` when the row has no such
    /// column.
    pub fn value(&self, column: impl ColumnRef) -> Option<&Val> {
        column
            .position(&self.names)
            .and_then(|i| self.values.get(i))
    }

    /// A column's value as `T`, moved out of the row (the row keeps NULL in
    /// its place): no copy of the text.
    ///
    /// # Errors
    /// [`sqlx::Error::ColumnNotFound`] or [`sqlx::Error::ColumnDecode`].
    pub fn take<T: FromVal, I: ColumnRef>(&mut self, column: I) -> Result<T, sqlx::Error> {
        let at = column
            .position(&self.names)
            .ok_or_else(|| sqlx::Error::ColumnNotFound(column.to_string()))?;
        let value = std::mem::replace(&mut self.values[at], Val::Null);
        T::from_owned(value).map_err(|value| sqlx::Error::ColumnDecode {
            index: column.to_string(),
            source: format!(
                "a {} column holds {}",
                std::any::type_name::<T>(),
                describe(&value)
            )
            .into(),
        })
    }

    /// A column's value as `T`.
    ///
    /// # Errors
    /// [`sqlx::Error::ColumnNotFound`] or [`sqlx::Error::ColumnDecode`].
    pub fn try_get<T: FromVal, I: ColumnRef>(&self, column: I) -> Result<T, sqlx::Error> {
        let value = self
            .value(column)
            .ok_or_else(|| sqlx::Error::ColumnNotFound(column.to_string()))?;
        T::from_val(value).ok_or_else(|| sqlx::Error::ColumnDecode {
            index: column.to_string(),
            source: format!(
                "a {} column holds {}",
                std::any::type_name::<T>(),
                describe(value)
            )
            .into(),
        })
    }
}

fn describe(value: &Val) -> String {
    match value {
        Val::Null => "NULL".into(),
        Val::Int(_) => "an integer".into(),
        Val::Real(_) => "a real".into(),
        Val::Text(_) => "text".into(),
        Val::Blob(_) => "bytes".into(),
        Val::Label { ty, .. } => format!("a label of {ty}"),
    }
}

/// A Rust value read from a [`Val`].
pub trait FromVal: Sized {
    /// `None` when the value is of another kind.
    fn from_val(value: &Val) -> Option<Self>;

    /// The value moved out; the value back when it is of another kind.
    fn from_owned(value: Val) -> Result<Self, Val> {
        Self::from_val(&value).ok_or(value)
    }
}

impl FromVal for i64 {
    fn from_val(value: &Val) -> Option<Self> {
        match value {
            Val::Int(v) => Some(*v),
            _ => None,
        }
    }
}

impl FromVal for f64 {
    fn from_val(value: &Val) -> Option<Self> {
        match value {
            Val::Real(v) => Some(*v),
            _ => None,
        }
    }
}

impl FromVal for bool {
    fn from_val(value: &Val) -> Option<Self> {
        match value {
            Val::Int(v) => Some(*v != 0),
            _ => None,
        }
    }
}

impl FromVal for String {
    fn from_val(value: &Val) -> Option<Self> {
        match value {
            Val::Text(v) => Some(v.clone()),
            _ => None,
        }
    }

    fn from_owned(value: Val) -> Result<Self, Val> {
        match value {
            Val::Text(v) => Ok(v),
            other => Err(other),
        }
    }
}

impl FromVal for Vec<u8> {
    fn from_val(value: &Val) -> Option<Self> {
        match value {
            Val::Blob(v) => Some(v.clone()),
            _ => None,
        }
    }
}

impl FromVal for Val {
    fn from_val(value: &Val) -> Option<Self> {
        Some(value.clone())
    }
}

impl<T: FromVal> FromVal for Option<T> {
    fn from_val(value: &Val) -> Option<Self> {
        match value {
            Val::Null => Some(None),
            other => T::from_val(other).map(Some),
        }
    }

    fn from_owned(value: Val) -> Result<Self, Val> {
        match value {
            Val::Null => Ok(None),
            other => T::from_owned(other).map(Some),
        }
    }
}

/// A driver row that reads into plain values.
trait ReadRow: sqlx::Row {
    const BACKEND: Backend;
    fn read(&self, index: usize) -> Result<Val, sqlx::Error>;
}

impl ReadRow for SqliteRow {
    const BACKEND: Backend = Backend::Sqlite;
    fn read(&self, i: usize) -> Result<Val, sqlx::Error> {
        let raw = self.try_get_raw(i)?;
        if raw.is_null() {
            return Ok(Val::Null);
        }
        // The value's own storage class, not the column's declared type: a
        // text '0' in an untyped column stays text.
        let Some(kind) = Kind::of_sqlite(raw.type_info().name()) else {
            let class = raw.type_info().name().to_owned();
            return Err(decode_error(
                i,
                format!("unexpected storage class {class}").into(),
            ));
        };
        // Decoded once, from the value just classified.
        let decoded = match kind {
            Kind::Text => <String as sqlx::Decode<Sqlite>>::decode(raw).map(Val::Text),
            Kind::Int => <i64 as sqlx::Decode<Sqlite>>::decode(raw).map(Val::Int),
            Kind::Real => <f64 as sqlx::Decode<Sqlite>>::decode(raw).map(Val::Real),
            Kind::Blob => <Vec<u8> as sqlx::Decode<Sqlite>>::decode(raw).map(Val::Blob),
        };
        decoded.map_err(|source| decode_error(i, source))
    }
}

/// The plain value a column's value is read into.
enum Kind {
    Text,
    Int,
    Real,
    Blob,
}

impl Kind {
    /// The value an SQLite storage class is read into.
    fn of_sqlite(class: &str) -> Option<Self> {
        let is = |name: &str| class.eq_ignore_ascii_case(name);
        Some(if is("TEXT") {
            Kind::Text
        } else if is("INTEGER") || is("INT4") || is("BOOLEAN") {
            Kind::Int
        } else if is("REAL") {
            Kind::Real
        } else if is("BLOB") {
            Kind::Blob
        } else {
            return None;
        })
    }
}

fn decode_error(index: usize, source: sqlx::error::BoxDynError) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: index.to_string(),
        source,
    }
}

#[cfg(feature = "postgres")]
impl ReadRow for PgRow {
    const BACKEND: Backend = Backend::Postgres;
    fn read(&self, i: usize) -> Result<Val, sqlx::Error> {
        let raw = self.try_get_raw(i)?;
        if raw.is_null() {
            return Ok(Val::Null);
        }
        let type_info = raw.type_info().into_owned();
        // Decoded once, from the value just typed.
        let decoded = match type_info.name() {
            "INT8" => <i64 as sqlx::Decode<Postgres>>::decode(raw).map(Val::Int),
            "INT4" => <i32 as sqlx::Decode<Postgres>>::decode(raw).map(|v| Val::Int(v.into())),
            "INT2" => <i16 as sqlx::Decode<Postgres>>::decode(raw).map(|v| Val::Int(v.into())),
            "BOOL" => <bool as sqlx::Decode<Postgres>>::decode(raw).map(|v| Val::Int(v.into())),
            "FLOAT8" => <f64 as sqlx::Decode<Postgres>>::decode(raw).map(Val::Real),
            "FLOAT4" => <f32 as sqlx::Decode<Postgres>>::decode(raw).map(|v| Val::Real(v.into())),
            "TEXT" | "VARCHAR" | "NAME" | "BPCHAR" => {
                <String as sqlx::Decode<Postgres>>::decode(raw).map(Val::Text)
            }
            "BYTEA" => <Vec<u8> as sqlx::Decode<Postgres>>::decode(raw).map(Val::Blob),
            // An enumerated type's value is its label, as text on the wire.
            ty => raw.as_str().map(|label| Val::Label {
                ty: ty.to_owned(),
                label: label.to_owned(),
            }),
        };
        decoded.map_err(|source| decode_error(i, source))
    }
}

/// Hands each row of a driver's stream to `each`, read into plain values,
/// the column names shared by all of them.
async fn each_row<R: ReadRow, E: From<StoreError>>(
    rows: impl futures_util::Stream<Item = Result<R, sqlx::Error>>,
    each: &mut impl FnMut(&mut Row) -> Result<(), E>,
) -> Result<(), E> {
    use futures_util::TryStreamExt as _;
    let mut rows = std::pin::pin!(rows);
    // Rows are taken off the driver's stream a batch at a time, then read:
    // a driver that produces rows on another thread (SQLite's worker) is
    // woken once a batch rather than once a row, and no more than a batch
    // is ever held besides what `each` keeps.
    let mut batch = Vec::with_capacity(ROWS_PER_BATCH);
    // One row of plain values, refilled for each row the driver hands over.
    let mut read: Option<Row> = None;
    loop {
        while batch.len() < ROWS_PER_BATCH {
            match rows.try_next().await.map_err(StoreError::from)? {
                Some(row) => batch.push(row),
                None => break,
            }
        }
        let last = batch.len() < ROWS_PER_BATCH;
        for row in batch.drain(..) {
            let read = read.get_or_insert_with(|| Row {
                names: names_of(&row),
                values: Vec::new(),
                backend: R::BACKEND,
            });
            read.values.clear();
            for i in 0..read.names.len() {
                read.values.push(row.read(i).map_err(StoreError::from)?);
            }
            each(read)?;
        }
        if last {
            return Ok(());
        }
    }
}

/// How many rows [`each_row`] takes off a driver's stream before reading
/// them.
const ROWS_PER_BATCH: usize = 256;

fn names_of<R: sqlx::Row>(row: &R) -> Arc<[String]> {
    row.columns().iter().map(|c| c.name().to_owned()).collect()
}

fn read_with<R: ReadRow>(row: &R, names: Arc<[String]>) -> Result<Row, sqlx::Error> {
    let values = (0..names.len())
        .map(|i| row.read(i))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Row {
        names,
        values,
        backend: R::BACKEND,
    })
}

fn one<R: ReadRow>(row: &R) -> Result<Row, sqlx::Error> {
    read_with(row, names_of(row))
}

fn rows_of<R: ReadRow>(rows: &[R]) -> Result<Vec<Row>, sqlx::Error> {
    let Some(first) = rows.first() else {
        return Ok(Vec::new());
    };
    let names = names_of(first);
    rows.iter()
        .map(|row| read_with(row, names.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{ArityMismatch, check_arity, placeholders};

    #[test]
    fn every_argument_has_one_placeholder_and_every_placeholder_an_argument() {
        for (sql, bound) in [
            ("SELECT 1", 0),
            ("SELECT $1", 1),
            ("UPDATE t SET a = $1, b = $2 WHERE c = $3", 3),
            // A placeholder used twice, and in any order.
            ("UPDATE t SET a = $2, b = $1 WHERE c < $2", 2),
            ("SELECT $1||$2", 2),
            // Quoted text, a `$` continuing an identifier and a bare `$`
            // hold no placeholders.
            (
                "SELECT '$2', \"$3\", a$4, 'it''s $5' FROM t WHERE a = $1",
                1,
            ),
            ("SELECT '$' || $1 || '$$'", 1),
            ("SELECT ?", 0),
        ] {
            assert_eq!(check_arity(sql, bound), Ok(()), "{sql}");
        }
        let unbound = |placeholder, bound| Err(ArityMismatch::Unbound { placeholder, bound });
        let unused = |placeholder, bound| Err(ArityMismatch::Unused { placeholder, bound });
        assert_eq!(check_arity("SELECT $1", 0), unbound(1, 0));
        assert_eq!(check_arity("SELECT $1, $2", 1), unbound(2, 1));
        assert_eq!(check_arity("SELECT $0", 1), unbound(0, 1));
        assert_eq!(
            check_arity("SELECT $99999999999999999999999", 1),
            unbound(usize::MAX, 1)
        );
        assert_eq!(check_arity("SELECT 1", 1), unused(1, 1));
        assert_eq!(check_arity("SELECT $1, $3", 3), unused(2, 3));
        assert_eq!(check_arity("SELECT '$1'", 1), unused(1, 1));
        // `?` is no placeholder any more: SQLite would take it for one.
        assert_eq!(check_arity("SELECT ?", 1), unused(1, 1));
        assert_eq!(
            check_arity("SELECT 1", 65_536),
            Err(ArityMismatch::TooMany {
                bound: 65_536,
                max: 65_535
            })
        );
        // Past the first 64, across words of the bitmap, and at the limit.
        for bound in [63, 64, 65, 127, 128, 129, 4_500, 65_535] {
            let all = format!("SELECT {}", placeholders(1, bound));
            assert_eq!(check_arity(&all, bound), Ok(()), "{bound}");
            for gap in [1, 64, 65, bound - 1, bound]
                .into_iter()
                .filter(|&gap| gap <= bound)
            {
                let without = format!(
                    "SELECT {}, {}",
                    placeholders(1, gap - 1),
                    placeholders(gap + 1, bound - gap)
                );
                assert_eq!(check_arity(&without, bound), unused(gap, bound), "{bound}");
            }
            assert_eq!(check_arity(&all, bound - 1), unbound(bound, bound - 1));
        }
    }
}
