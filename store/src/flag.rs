//! The reading of the operator's `requires_approval` flag (SPEC §8).
//!
//! One pure, total function — [`approval_from_stored`] — turns whatever the
//! store holds (or its absence, or a failed read) into the decision. Only an
//! integer 0 means "no approval"; everything else, including anything a
//! future schema might write, reads as "approval required".

use sqlx::sqlite::SqliteRow;
use sqlx::{Row, TypeInfo, ValueRef};
use toolgate::OperatorDeclaration;

/// The flag as stored, before any interpretation.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredFlag {
    /// The column does not exist (a schema older than the flag).
    Missing,
    /// The value could not be read.
    Unreadable(String),
    /// SQL NULL.
    Null,
    /// An integer.
    Integer(i64),
    /// A floating-point number.
    Real(f64),
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

/// The stored value as an operator reads it: `integer 1`, `NULL`, `text
/// "yes"`, `missing column`…
impl std::fmt::Display for StoredFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoredFlag::Missing => f.write_str("missing column"),
            StoredFlag::Unreadable(why) => write!(f, "unreadable: {why}"),
            StoredFlag::Null => f.write_str("NULL"),
            StoredFlag::Integer(value) => write!(f, "integer {value}"),
            StoredFlag::Real(value) => write!(f, "real {value}"),
            StoredFlag::Text(text) => write!(f, "text {text:?}"),
            StoredFlag::Blob(bytes) => write!(f, "blob of {} bytes", bytes.len()),
        }
    }
}

/// The decision the gate acts on, from the stored flag. Total and pure: only
/// [`StoredFlag::Integer`] of 0 yields [`OperatorDeclaration::NoApproval`].
pub fn approval_from_stored(flag: &StoredFlag) -> OperatorDeclaration {
    match flag {
        StoredFlag::Integer(0) => OperatorDeclaration::NoApproval,
        _ => OperatorDeclaration::ApprovalRequired,
    }
}

/// The integer the typed write path stores for a declaration: 1 or 0.
pub(crate) fn stored_for(declaration: OperatorDeclaration) -> i64 {
    match declaration {
        OperatorDeclaration::ApprovalRequired => 1,
        OperatorDeclaration::NoApproval => 0,
    }
}

/// Reads the raw `requires_approval` column of a row, keeping its storage
/// class: a text `'0'` stays text.
pub(crate) fn read_stored_flag(row: &SqliteRow) -> StoredFlag {
    let raw = match row.try_get_raw("requires_approval") {
        Ok(raw) => raw,
        Err(sqlx::Error::ColumnNotFound(_)) => return StoredFlag::Missing,
        Err(error) => return StoredFlag::Unreadable(error.to_string()),
    };
    if raw.is_null() {
        return StoredFlag::Null;
    }
    let kind = raw.type_info().name().to_ascii_uppercase();
    let decoded = match kind.as_str() {
        "INTEGER" => row
            .try_get::<i64, _>("requires_approval")
            .map(StoredFlag::Integer),
        "REAL" => row
            .try_get::<f64, _>("requires_approval")
            .map(StoredFlag::Real),
        "TEXT" => row
            .try_get::<String, _>("requires_approval")
            .map(StoredFlag::Text),
        "BLOB" => row
            .try_get::<Vec<u8>, _>("requires_approval")
            .map(StoredFlag::Blob),
        other => return StoredFlag::Unreadable(format!("unexpected storage class {other}")),
    };
    decoded.unwrap_or_else(|error| StoredFlag::Unreadable(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_integer_zero_means_no_approval() {
        let required = OperatorDeclaration::ApprovalRequired;
        for flag in [
            StoredFlag::Missing,
            StoredFlag::Unreadable("disk error".into()),
            StoredFlag::Null,
            StoredFlag::Integer(1),
            StoredFlag::Integer(2),
            StoredFlag::Integer(-1),
            StoredFlag::Integer(i64::MIN),
            StoredFlag::Real(0.0),
            StoredFlag::Real(-0.0),
            StoredFlag::Text("0".into()),
            StoredFlag::Text(String::new()),
            StoredFlag::Text("false".into()),
            StoredFlag::Blob(vec![0]),
            StoredFlag::Blob(Vec::new()),
        ] {
            assert_eq!(approval_from_stored(&flag), required, "{flag:?}");
        }
        assert_eq!(
            approval_from_stored(&StoredFlag::Integer(0)),
            OperatorDeclaration::NoApproval
        );
    }

    #[test]
    fn the_write_path_stores_only_zero_or_one() {
        assert_eq!(stored_for(OperatorDeclaration::ApprovalRequired), 1);
        assert_eq!(stored_for(OperatorDeclaration::NoApproval), 0);
        for declaration in [
            OperatorDeclaration::ApprovalRequired,
            OperatorDeclaration::NoApproval,
        ] {
            let read = approval_from_stored(&StoredFlag::Integer(stored_for(declaration)));
            assert_eq!(read, declaration);
        }
    }
}
