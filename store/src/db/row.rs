//! What a query reads back: rows of plain values, each read from its
//! driver's own types — SQLite's storage classes, PostgreSQL's types and
//! enumerated labels — without guessing.

use std::sync::Arc;

#[cfg(feature = "postgres")]
use sqlx::postgres::{PgRow, Postgres};
use sqlx::sqlite::{Sqlite, SqliteRow};
use sqlx::{Column, Row as _, TypeInfo, ValueRef};

use super::Backend;
use crate::StoreError;

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
    #[cfg_attr(
        not(feature = "postgres"),
        allow(dead_code, reason = "only PostgreSQL's driver reads a label")
    )]
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
pub(super) trait ReadRow: sqlx::Row {
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
pub(super) async fn each_row<R: ReadRow, E: From<StoreError>>(
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

pub(super) fn one<R: ReadRow>(row: &R) -> Result<Row, sqlx::Error> {
    read_with(row, names_of(row))
}

pub(super) fn rows_of<R: ReadRow>(rows: &[R]) -> Result<Vec<Row>, sqlx::Error> {
    let Some(first) = rows.first() else {
        return Ok(Vec::new());
    };
    let names = names_of(first);
    rows.iter()
        .map(|row| read_with(row, names.clone()))
        .collect()
}
