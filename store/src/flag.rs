//! The reading of the operator's declarations: a server's
//! `requires_approval` flag, and each tool's own declaration beside it.
//!
//! One pure, total function each — [`approval_from_stored`] for the flag,
//! [`tool_declaration_from_stored`] for a tool — turns whatever the store
//! holds (or its absence, or a failed read) into the declaration, and one
//! more, [`effective_approval`], combines the two. Only what the typed
//! write path stores for "off" means "no approval": for the flag, the
//! integer 0 in SQLite, the label `not_required` of the `toolgate_approval`
//! type in PostgreSQL; for a tool, the text `not_required` in SQLite, the
//! label `not_required` of the `toolgate_tool_approval` type in PostgreSQL.
//! Everything else, including anything a future schema might write, reads
//! as "approval required" — never as "blocked", never as "inherit".

use toolgate::{DeclarationScope, OperatorDeclaration};

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

/// The decision the gate acts on, from the flag as a backend stored it.
/// Total and pure: only what that backend's typed write path stores for
/// "off" yields [`OperatorDeclaration::NoApproval`] — [`StoredFlag::Integer`]
/// of 0 in SQLite, the label `not_required` of the `toolgate_approval` type
/// in PostgreSQL. An integer 0 read from PostgreSQL (a column someone
/// retyped to a number or a boolean) is not "off" there; a label read from
/// SQLite cannot happen and is not "off" either.
pub fn approval_from_stored(backend: Backend, flag: &StoredFlag) -> OperatorDeclaration {
    match (backend, flag) {
        (Backend::Sqlite, StoredFlag::Integer(0)) => OperatorDeclaration::NoApproval,
        (Backend::Postgres, StoredFlag::Label { ty, label })
            if ty == APPROVAL_TYPE && label == NOT_REQUIRED =>
        {
            OperatorDeclaration::NoApproval
        }
        _ => OperatorDeclaration::ApprovalRequired,
    }
}

/// What the typed write path stores for a declaration on a backend — the
/// integer 1 or 0 in SQLite, the label `required` or `not_required` in
/// PostgreSQL — and the SQL expression that writes it from `$1`: the
/// statement binds it first.
pub(crate) fn stored_for(
    backend: Backend,
    declaration: OperatorDeclaration,
) -> (Arg, &'static str) {
    let off = declaration == OperatorDeclaration::NoApproval;
    match backend {
        Backend::Sqlite => (Arg::Int(Some(i64::from(!off))), "$1"),
        Backend::Postgres => (
            Arg::Text(Some(if off { NOT_REQUIRED } else { "required" }.to_owned())),
            "CAST($1 AS toolgate_approval)",
        ),
    }
}

/// PostgreSQL's type for a tool's declaration.
const TOOL_APPROVAL_TYPE: &str = "toolgate_tool_approval";

/// An operator's declaration for one imported tool (SPEC §14): never
/// derived from anything its server says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolDeclaration {
    /// The server's flag decides: what every tool reads until an operator
    /// declares otherwise.
    Inherit,
    /// Every call of the tool waits for approval, whatever the server's
    /// flag says.
    ApprovalRequired,
    /// The tool's calls run unattended, whatever the server's flag says —
    /// for the definition the operator reviewed: a tool changed since is
    /// quarantined until accepted.
    NoApproval,
    /// The tool is not offered at all: absent from every model request and
    /// every `tools/list`, and a call naming it is refused as not offered.
    Blocked,
    /// What is stored is none of the labels the typed write path writes —
    /// another spelling, another type, NULL, a missing column, a failed
    /// read: it reads as approval required, never as blocked or inherit.
    /// Never stored as such: declaring it stores approval required.
    Unreadable,
}

impl ToolDeclaration {
    /// The label the store keeps for it.
    pub const fn label(self) -> &'static str {
        match self {
            ToolDeclaration::Inherit => "inherit",
            // Unreadable is never stored as such: what it reads as.
            ToolDeclaration::ApprovalRequired | ToolDeclaration::Unreadable => "required",
            ToolDeclaration::NoApproval => NOT_REQUIRED,
            ToolDeclaration::Blocked => "blocked",
        }
    }

    /// The word the console takes and shows for it: `inherit`, `on`,
    /// `off`, `block`.
    pub const fn word(self) -> &'static str {
        match self {
            ToolDeclaration::Inherit => "inherit",
            ToolDeclaration::ApprovalRequired => "on",
            ToolDeclaration::NoApproval => "off",
            ToolDeclaration::Blocked => "block",
            ToolDeclaration::Unreadable => "unreadable",
        }
    }

    /// Whether the declaration lowers what a tool needs below what it
    /// needs now — only "no approval" can: it is taken with the digest of
    /// the definition reviewed, the others need none.
    pub const fn lowers(self) -> bool {
        matches!(self, ToolDeclaration::NoApproval)
    }
}

/// A tool's declaration, from the value its backend stored. Total and
/// pure: each state is read only from its own label as the typed write
/// path stores it — text in SQLite, a label of `toolgate_tool_approval` in
/// PostgreSQL, compared exactly — and anything else (another spelling,
/// another type, NULL, a missing column, a failed read) reads as
/// [`ToolDeclaration::Unreadable`], which reads as approval required: the
/// stricter state, never "blocked" (which would hide the fault) and never
/// "inherit" (which could lower it).
pub fn tool_declaration_from_stored(backend: Backend, stored: &StoredFlag) -> ToolDeclaration {
    let label = match (backend, stored) {
        (Backend::Sqlite, StoredFlag::Text(text)) => text.as_str(),
        (Backend::Postgres, StoredFlag::Label { ty, label }) if ty == TOOL_APPROVAL_TYPE => {
            label.as_str()
        }
        _ => return ToolDeclaration::Unreadable,
    };
    match label {
        "inherit" => ToolDeclaration::Inherit,
        "required" => ToolDeclaration::ApprovalRequired,
        NOT_REQUIRED => ToolDeclaration::NoApproval,
        "blocked" => ToolDeclaration::Blocked,
        _ => ToolDeclaration::Unreadable,
    }
}

/// What a tool needs, from its server's flag and its own declaration — the
/// one rule of precedence: "blocked" beats everything, then the tool's own
/// "approval required" or "no approval", then the server's flag. `None`
/// for a blocked tool; otherwise the declaration the gate reads, and whose
/// it is.
pub fn effective_approval(
    server: OperatorDeclaration,
    tool: ToolDeclaration,
) -> Option<(OperatorDeclaration, DeclarationScope)> {
    match tool {
        ToolDeclaration::Blocked => None,
        ToolDeclaration::ApprovalRequired => Some((
            OperatorDeclaration::ApprovalRequired,
            DeclarationScope::Tool,
        )),
        ToolDeclaration::NoApproval => {
            Some((OperatorDeclaration::NoApproval, DeclarationScope::Tool))
        }
        ToolDeclaration::Inherit => Some((server, DeclarationScope::Server)),
        ToolDeclaration::Unreadable => Some((
            OperatorDeclaration::ApprovalRequired,
            DeclarationScope::Unreadable,
        )),
    }
}

/// What the typed write path stores for a tool's declaration on a backend,
/// and the SQL expression that writes it from `$1`.
pub(crate) fn stored_for_tool(
    backend: Backend,
    declaration: ToolDeclaration,
) -> (Arg, &'static str) {
    let label = Arg::Text(Some(declaration.label().to_owned()));
    match backend {
        Backend::Sqlite => (label, "$1"),
        Backend::Postgres => (label, "CAST($1 AS toolgate_tool_approval)"),
    }
}

/// A tool row's declaration, as stored and as read.
pub(crate) fn tool_declaration_of(row: &Row, column: &str) -> (StoredFlag, ToolDeclaration) {
    let stored = stored_value(row.value(column));
    let declaration = tool_declaration_from_stored(row.backend(), &stored);
    (stored, declaration)
}

/// The decision of a row's stored flag: [`approval_from_stored`] for the
/// backend the row came from.
pub(crate) fn approval_of(row: &Row) -> (StoredFlag, OperatorDeclaration) {
    let flag = read_stored_flag(row);
    let approval = approval_from_stored(row.backend(), &flag);
    (flag, approval)
}

/// Reads the raw `requires_approval` column of a row, keeping its storage
/// class: a text `'0'` stays text.
fn read_stored_flag(row: &Row) -> StoredFlag {
    stored_value(row.value("requires_approval"))
}

/// A column's raw value as read, keeping its storage class; `None`, a
/// column the row does not have.
fn stored_value(value: Option<&Val>) -> StoredFlag {
    match value {
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
    fn only_each_backends_own_off_means_no_approval() {
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
            for backend in [Backend::Sqlite, Backend::Postgres] {
                assert_eq!(
                    approval_from_stored(backend, &flag),
                    required,
                    "{backend}: {flag:?}"
                );
            }
        }
        let sqlite_off = StoredFlag::Integer(0);
        let postgres_off = StoredFlag::Label {
            ty: APPROVAL_TYPE.into(),
            label: NOT_REQUIRED.into(),
        };
        assert_eq!(
            approval_from_stored(Backend::Sqlite, &sqlite_off),
            OperatorDeclaration::NoApproval
        );
        assert_eq!(
            approval_from_stored(Backend::Postgres, &postgres_off),
            OperatorDeclaration::NoApproval
        );
        // Each backend's "off" is nothing on the other: a PostgreSQL column
        // retyped to an integer or a boolean reads 0 as "required".
        assert_eq!(
            approval_from_stored(Backend::Postgres, &sqlite_off),
            required
        );
        assert_eq!(
            approval_from_stored(Backend::Sqlite, &postgres_off),
            required
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
                assert_eq!(
                    approval_from_stored(backend, &stored),
                    declaration,
                    "{backend}"
                );
            }
        }
        assert!(matches!(
            stored_for(Backend::Sqlite, OperatorDeclaration::ApprovalRequired).0,
            Arg::Int(Some(1))
        ));
    }
}
