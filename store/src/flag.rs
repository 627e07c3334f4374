//! The reading of the operator's `requires_approval` flag (SPEC §8).
//!
//! One pure, total function — [`approval_from_stored`] — turns whatever the
//! store holds (or its absence, or a failed read) into the decision. Only
//! what the typed write path stores for "off" means "no approval": the
//! integer 0 in SQLite, the label `not_required` of the `toolgate_approval`
//! type in PostgreSQL. Everything else, including anything a future schema
//! might write, reads as "approval required".

use toolgate::OperatorDeclaration;

use crate::db::{Arg, Backend, Row, Val};

/// PostgreSQL's type for the flag, and its label for "off".
const APPROVAL_TYPE: &str = "toolgate_approval";
const NOT_REQUIRED: &str = "not_required";

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
    /// A label of a PostgreSQL enumerated type.
    Label {
        /// The type.
        ty: String,
        /// The label.
        label: String,
    },
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
            StoredFlag::Label { ty, label } => write!(f, "{ty} {label:?}"),
        }
    }
}

/// The decision the gate acts on, from the stored flag. Total and pure: only
/// [`StoredFlag::Integer`] of 0 (SQLite's typed "off") and the label
/// `not_required` of the `toolgate_approval` type (PostgreSQL's) yield
/// [`OperatorDeclaration::NoApproval`].
pub fn approval_from_stored(flag: &StoredFlag) -> OperatorDeclaration {
    match flag {
        StoredFlag::Integer(0) => OperatorDeclaration::NoApproval,
        StoredFlag::Label { ty, label } if ty == APPROVAL_TYPE && label == NOT_REQUIRED => {
            OperatorDeclaration::NoApproval
        }
        _ => OperatorDeclaration::ApprovalRequired,
    }
}

/// What the typed write path stores for a declaration on a backend — the
/// integer 1 or 0 in SQLite, the label `required` or `not_required` in
/// PostgreSQL — and the SQL expression that writes it from one `?`.
pub(crate) fn stored_for(
    backend: Backend,
    declaration: OperatorDeclaration,
) -> (Arg, &'static str) {
    let off = declaration == OperatorDeclaration::NoApproval;
    match backend {
        Backend::Sqlite => (Arg::Int(Some(i64::from(!off))), "?"),
        Backend::Postgres => (
            Arg::Text(Some(if off { NOT_REQUIRED } else { "required" }.to_owned())),
            "CAST(? AS toolgate_approval)",
        ),
    }
}

/// Reads the raw `requires_approval` column of a row, keeping its storage
/// class: a text `'0'` stays text.
pub(crate) fn read_stored_flag(row: &Row) -> StoredFlag {
    match row.value("requires_approval") {
        None => StoredFlag::Missing,
        Some(Val::Null) => StoredFlag::Null,
        Some(Val::Int(v)) => StoredFlag::Integer(*v),
        Some(Val::Real(v)) => StoredFlag::Real(*v),
        Some(Val::Text(v)) => StoredFlag::Text(v.clone()),
        Some(Val::Blob(v)) => StoredFlag::Blob(v.clone()),
        Some(Val::Label { ty, label }) => StoredFlag::Label {
            ty: ty.clone(),
            label: label.clone(),
        },
    }
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
            StoredFlag::Text(NOT_REQUIRED.into()),
            StoredFlag::Label {
                ty: "other_enum".into(),
                label: NOT_REQUIRED.into(),
            },
            StoredFlag::Label {
                ty: APPROVAL_TYPE.into(),
                label: "required".into(),
            },
            StoredFlag::Label {
                ty: APPROVAL_TYPE.into(),
                label: "Not_Required".into(),
            },
        ] {
            assert_eq!(approval_from_stored(&flag), required, "{flag:?}");
        }
        assert_eq!(
            approval_from_stored(&StoredFlag::Integer(0)),
            OperatorDeclaration::NoApproval
        );
    }

    #[test]
    fn the_write_path_stores_what_the_reading_takes_for_off_and_nothing_else() {
        for backend in [Backend::Sqlite, Backend::Postgres] {
            for declaration in [
                OperatorDeclaration::ApprovalRequired,
                OperatorDeclaration::NoApproval,
            ] {
                let stored = match stored_for(backend, declaration).0 {
                    Arg::Int(Some(v)) => StoredFlag::Integer(v),
                    Arg::Text(Some(label)) => StoredFlag::Label {
                        ty: APPROVAL_TYPE.into(),
                        label,
                    },
                    other => panic!("unexpected {other:?}"),
                };
                assert_eq!(approval_from_stored(&stored), declaration, "{backend}");
            }
        }
        assert!(matches!(
            stored_for(Backend::Sqlite, OperatorDeclaration::ApprovalRequired).0,
            Arg::Int(Some(1))
        ));
    }
}
