//! The tool catalogue imported from each server.

use serde_json::Value;

use crate::db::{Query, Row};
use crate::flag::{StoredFlag, ToolDeclaration, effective_approval, tool_declaration_of};
use crate::{Store, StoreError, now_ms};

mod accept;
mod bounds;
mod declare;
mod stage;

pub(crate) use accept::pin_in;
pub use accept::{Acceptance, Accepted};
pub use bounds::CatalogueBounds;
pub use stage::CatalogueStage;
pub(crate) use stage::drop_stages_of;

/// One tool as an import found it.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedTool {
    /// The server's name for it.
    pub remote_name: String,
    /// The name the model will see.
    pub local_name: String,
    /// The server's description.
    pub description: String,
    /// The server's input schema.
    pub input_schema: Value,
    /// The server's `annotations` block, kept verbatim for display.
    pub annotations: Option<Value>,
}

/// One stored catalogue row.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogueRow {
    /// The server.
    pub server_id: String,
    /// The server's name for the tool.
    pub remote_name: String,
    /// The name the model sees.
    pub local_name: String,
    /// The server's description.
    pub description: String,
    /// The input schema as stored (JSON text).
    pub input_schema: String,
    /// The `annotations` block as stored (JSON text), if any.
    pub annotations: Option<String>,
    /// True when the tool vanished from the server at a later import.
    pub orphaned: bool,
    /// When an import first saw it.
    pub first_seen_at: i64,
    /// When an import last saw it.
    pub last_seen_at: i64,
    /// The definition an operator accepted, as canonical JSON; `None` when
    /// none was.
    pub pinned_definition: Option<String>,
    /// The definition the last import stored, as canonical JSON: a record
    /// of what it saw. Pinning compares with the definition rebuilt from the
    /// columns ([`CatalogueRow::definition`]), so a row changed by hand after
    /// its import is judged as it is now.
    pub stored_definition: Option<String>,
    /// The operator's declaration for the tool, read fail-closed
    /// ([`crate::ToolDeclaration`]).
    pub declaration: ToolDeclaration,
    /// The declaration's value as stored, before any reading.
    pub stored_declaration: StoredFlag,
    /// Who declared it, when an operator did.
    pub declared: Option<Declared>,
}

/// Who made a tool's declaration, through which channel, when, and — for
/// "no approval" — the digest of the definition they reviewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The operator's name.
    pub by: String,
    /// Where the name came from ([`toolgate::identity::IdentitySource`]'s
    /// word).
    pub source: String,
    /// The channel the act came through ([`toolgate::identity::Channel`]'s
    /// word).
    pub channel: String,
    /// The digest of the definition reviewed, for "no approval".
    pub digest: Option<String>,
    /// When, in milliseconds since the epoch.
    pub at: i64,
}

/// A tool's gate as its operators declared it: blocked, or offered with
/// the declaration the gate reads, whose it is, and whether the tool is
/// quarantined. The one place a server's flag, a tool's declaration and
/// pinning are put together: the provider builds tools from it, and every
/// listing says what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolGate {
    /// Never offered.
    Blocked,
    /// Offered.
    Offered {
        /// The declaration the gate reads.
        approval: toolgate::OperatorDeclaration,
        /// Whether it is the server's or the tool's own.
        scope: toolgate::DeclarationScope,
        /// Whether the tool is held in quarantine: under "no approval", not
        /// the definition an operator accepted.
        quarantine: Option<Quarantine>,
    },
}

impl ToolGate {
    /// Why the tool is held in quarantine, when it is.
    pub fn quarantine(self) -> Option<Quarantine> {
        match self {
            ToolGate::Offered { quarantine, .. } => quarantine,
            ToolGate::Blocked => None,
        }
    }

    /// The gate in words, and why — what every listing of a tool's gate
    /// says (`toolgate tools`, `toolgate server show`, the inbox's servers
    /// page): blocked, approval required or runs unattended, whose
    /// declaration decides, and a quarantine's reason.
    pub fn words(self) -> String {
        let whose = |scope| match scope {
            toolgate::DeclarationScope::Server => "the server's flag",
            toolgate::DeclarationScope::Tool => "the tool's declaration",
            toolgate::DeclarationScope::Unreadable => {
                "the tool's stored declaration, which is unreadable"
            }
        };
        match self {
            ToolGate::Blocked => "blocked: never offered (the tool's declaration)".to_owned(),
            ToolGate::Offered {
                approval: toolgate::OperatorDeclaration::ApprovalRequired,
                scope,
                ..
            } => format!("approval required ({})", whose(scope)),
            ToolGate::Offered {
                approval: toolgate::OperatorDeclaration::NoApproval,
                scope,
                quarantine: None,
            } => format!("runs unattended ({} is off)", whose(scope)),
            ToolGate::Offered {
                approval: toolgate::OperatorDeclaration::NoApproval,
                scope,
                quarantine: Some(why),
            } => format!(
                "approval required (quarantined: {}; {} is off for the definition accepted)",
                why.as_str(),
                whose(scope)
            ),
        }
    }
}

pub use toolgate::gate::Quarantine;

/// A tool's definition as pinned: its name, description, input schema and
/// annotations, as canonical JSON — one object, as `serde_json` writes a
/// `Value` (without its `preserve_order` feature, keys sorted); a stored
/// text that does not read as JSON is kept as a JSON string of itself. The
/// one rule for what an operator accepts and what quarantine compares.
pub(crate) fn tool_definition(
    remote_name: &str,
    description: &str,
    input_schema: &str,
    annotations: Option<&str>,
) -> String {
    // A text that is not JSON is kept as a JSON string of itself.
    let canonical = |text: &str| match serde_json::from_str::<Value>(text) {
        Ok(value) => value.to_string(),
        Err(_) => Value::from(text).to_string(),
    };
    definition_text(
        remote_name,
        description,
        &canonical(input_schema),
        &annotations.map_or_else(|| "null".to_owned(), canonical),
    )
}

/// The layout of a definition: one JSON object, its keys in order, with the
/// schema and annotations written in as the JSON texts given.
fn definition_text(
    remote_name: &str,
    description: &str,
    input_schema: &str,
    annotations: &str,
) -> String {
    let mut text = String::with_capacity(
        64 + remote_name.len() + description.len() + input_schema.len() + annotations.len(),
    );
    text.push_str(r#"{"annotations":"#);
    text.push_str(annotations);
    text.push_str(r#","description":"#);
    push_json_string(&mut text, description);
    text.push_str(r#","input_schema":"#);
    text.push_str(input_schema);
    text.push_str(r#","name":"#);
    push_json_string(&mut text, remote_name);
    text.push('}');
    text
}

/// Appends `value` as a JSON string, escaped as `serde_json` writes it.
fn push_json_string(text: &mut String, value: &str) {
    match serde_json::to_string(value) {
        Ok(quoted) => text.push_str(&quoted),
        // Writing a `str` to memory cannot fail; were it to, the `Value`'s
        // own writing gives the same text.
        Err(_) => text.push_str(&Value::from(value).to_string()),
    }
}

impl CatalogueRow {
    /// The tool's current definition, as pinning writes it from the row's
    /// columns as they are now: one JSON object of its remote name,
    /// description, input schema and annotations, each written as serde_json
    /// writes it.
    pub fn definition(&self) -> String {
        tool_definition(
            &self.remote_name,
            &self.description,
            &self.input_schema,
            self.annotations.as_deref(),
        )
    }

    /// The tool's gate on a server whose flag reads `server`
    /// ([`ToolGate`]).
    pub fn gate(&self, server: toolgate::OperatorDeclaration) -> ToolGate {
        gate(
            server,
            self.declaration,
            self.pinned_definition.as_deref(),
            &self.remote_name,
            &self.description,
            &self.input_schema,
            self.annotations.as_deref(),
        )
    }

    fn from_row(row: &Row) -> Result<Self, sqlx::Error> {
        let (stored_declaration, declaration) = tool_declaration_of(row, "approval");
        let declared = match row.try_get::<Option<String>, _>("approval_declared_by") {
            Ok(Some(by)) => Some(Declared {
                by,
                source: row
                    .try_get::<Option<String>, _>("approval_declared_source")?
                    .unwrap_or_default(),
                channel: row
                    .try_get::<Option<String>, _>("approval_declared_channel")?
                    .unwrap_or_default(),
                digest: row.try_get("approval_declared_digest")?,
                at: row
                    .try_get::<Option<i64>, _>("approval_declared_at")?
                    .unwrap_or_default(),
            }),
            // Not declared, or a schema older than declarations.
            Ok(None) | Err(_) => None,
        };
        Ok(Self {
            declaration,
            stored_declaration,
            declared,
            server_id: row.try_get("server_id")?,
            remote_name: row.try_get("remote_name")?,
            local_name: row.try_get("local_name")?,
            description: row.try_get("description")?,
            input_schema: row.try_get("input_schema")?,
            annotations: row.try_get("annotations")?,
            orphaned: row.try_get::<i64, _>("orphaned")? == 1,
            first_seen_at: row.try_get("first_seen_at")?,
            last_seen_at: row.try_get("last_seen_at")?,
            pinned_definition: row.try_get("pinned_definition")?,
            stored_definition: row.try_get("definition")?,
        })
    }
}

/// What a provider needs of a live catalogue row to build a tool — and
/// nothing else: the server's annotations are not read on this path, except
/// to tell whether the definition is the pinned one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveTool {
    /// The server.
    pub server_id: String,
    /// The server's name for the tool.
    pub remote_name: String,
    /// The name the model sees.
    pub local_name: String,
    /// The server's description.
    pub description: String,
    /// The input schema as stored (JSON text).
    pub input_schema: String,
    /// The `annotations` block as stored (JSON text), if any.
    pub annotations: Option<String>,
    /// The definition an operator accepted, as canonical JSON; `None` when
    /// none was.
    pub pinned_definition: Option<String>,
    /// The operator's declaration for the tool, read fail-closed.
    pub declaration: ToolDeclaration,
}

impl LiveTool {
    /// The tool's gate on a server whose flag reads `server` — the same
    /// rule as [`CatalogueRow::gate`]. Only a tool whose declaration reads
    /// "no approval" can be quarantined, so only then is the definition
    /// rebuilt and compared.
    pub fn gate(&self, server: toolgate::OperatorDeclaration) -> ToolGate {
        gate(
            server,
            self.declaration,
            self.pinned_definition.as_deref(),
            &self.remote_name,
            &self.description,
            &self.input_schema,
            self.annotations.as_deref(),
        )
    }
}

/// The tool's gate: [`effective_approval`] of the server's flag and the
/// tool's declaration, then pinning under the declaration that results.
fn gate(
    server: toolgate::OperatorDeclaration,
    declaration: ToolDeclaration,
    pinned: Option<&str>,
    remote_name: &str,
    description: &str,
    input_schema: &str,
    annotations: Option<&str>,
) -> ToolGate {
    match effective_approval(server, declaration) {
        None => ToolGate::Blocked,
        Some((approval, scope)) => ToolGate::Offered {
            approval,
            scope,
            quarantine: quarantine(
                approval,
                pinned,
                remote_name,
                description,
                input_schema,
                annotations,
            ),
        },
    }
}

/// The one rule of pinning. Under "no approval" — the server's or the
/// tool's own — a tool no
/// operator accepted is new, and a tool whose definition — rebuilt from its
/// columns as they are now ([`tool_definition`]), never taken from a stored
/// copy — is not the one pinned has changed; either is quarantined. On a
/// server whose approval is required nothing is quarantined (every tool asks
/// anyway), and nothing is compared.
fn quarantine(
    approval: toolgate::OperatorDeclaration,
    pinned: Option<&str>,
    remote_name: &str,
    description: &str,
    input_schema: &str,
    annotations: Option<&str>,
) -> Option<Quarantine> {
    if approval == toolgate::OperatorDeclaration::ApprovalRequired {
        return None;
    }
    match pinned {
        None => Some(Quarantine::New),
        Some(pinned)
            if is_definition(pinned, remote_name, description, input_schema, annotations) =>
        {
            None
        }
        Some(_) => Some(Quarantine::Changed),
    }
}

/// Whether `pinned` is the tool's definition: `pinned ==
/// tool_definition(…)`, answered without reading the texts into values when
/// they are stored as the definition writes them.
///
/// When the schema and the annotations are each canonical — exactly what
/// `serde_json` writes for what they read as ([`crate::stored_json::is_canonical`])
/// — `tool_definition` writes them back unchanged, so laying the definition
/// out around them as stored *is* `tool_definition(…)`, and comparing that
/// with `pinned` is the rule itself, whatever `pinned` holds. In every other
/// case the definition is rebuilt and compared; a property test pins that the
/// two answers never differ.
fn is_definition(
    pinned: &str,
    remote_name: &str,
    description: &str,
    input_schema: &str,
    annotations: Option<&str>,
) -> bool {
    if crate::stored_json::is_canonical(input_schema)
        && annotations.is_none_or(crate::stored_json::is_canonical)
    {
        return pinned
            == definition_text(
                remote_name,
                description,
                input_schema,
                annotations.unwrap_or("null"),
            );
    }
    pinned == tool_definition(remote_name, description, input_schema, annotations)
}

/// What an import changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogueChange {
    /// Tools seen for the first time.
    pub added: Vec<String>,
    /// Tools whose description, schema or annotations changed.
    pub changed: Vec<String>,
    /// Tools that came back after being orphaned.
    pub restored: Vec<String>,
    /// Tools seen before and unchanged.
    pub unchanged: usize,
    /// Tools the server no longer lists; kept, marked orphaned.
    pub orphaned: Vec<String>,
    /// Tools that require approval until an operator accepts them: the
    /// server's approval is off and their definition is new or changed.
    pub quarantined: Vec<(String, Quarantine)>,
    /// How many tools are live after the import (its digest covers them).
    pub live: usize,
    /// The digest of every live tool's definition as the import left them
    /// — what [`Store::acceptance`] gives for all of them until the
    /// catalogue changes again, taken in the import's own transaction.
    pub digest: String,
}

fn json(value: &Value, what: &'static str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|source| StoreError::Encode { what, source })
}

/// # Catalogues
///
/// A server's tools as its last import found them (`toolgate servers
/// import`), and as hydration reads them (the MCP crate's provider).
impl Store {
    /// Replaces a server's catalogue with what an import found, in one
    /// transaction: new rows are added, known rows updated, rows the server
    /// no longer lists are marked orphaned (kept, not deleted).
    pub async fn replace_catalogue(
        &self,
        server_id: &str,
        tools: &[ImportedTool],
    ) -> Result<CatalogueChange, StoreError> {
        self.replace_catalogue_within(server_id, tools, None).await
    }

    /// [`Store::replace_catalogue`], refused with
    /// [`StoreError::CatalogueOverBounds`] — nothing written — when the
    /// catalogue it would leave, orphaned rows included, is past `bounds`.
    pub async fn replace_catalogue_within(
        &self,
        server_id: &str,
        tools: &[ImportedTool],
        bounds: Option<CatalogueBounds>,
    ) -> Result<CatalogueChange, StoreError> {
        let now = now_ms();
        let (_writer, mut tx) = self.write().await?;
        // Staged and replaced in one transaction: what an import does page
        // by page, at once.
        let mut stage = stage::open_in(&mut tx, server_id, now).await?;
        stage::write_in(&mut tx, &mut stage, tools).await?;
        let change = stage::replace_in(&mut tx, &stage, bounds, now).await?;
        tx.commit().await?;
        Ok(change)
    }

    /// A server's catalogue, orphaned rows included, by local name.
    pub async fn catalogue(&self, server_id: &str) -> Result<Vec<CatalogueRow>, StoreError> {
        let rows = Query::new("SELECT * FROM mcp_tool WHERE server_id = $1 ORDER BY local_name")
            .bind(server_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(CatalogueRow::from_row)
            .collect::<Result<_, _>>()?)
    }

    /// The live rows of every server, by server and local name, with only
    /// the columns a provider builds tools from.
    pub async fn live_tools(&self) -> Result<Vec<LiveTool>, StoreError> {
        let mut tools = Vec::new();
        self.each_live_tool(|tool| tools.push(tool)).await?;
        Ok(tools)
    }

    /// [`Store::live_tools`], each row handed to `each` as it is read rather
    /// than gathered first: a large catalogue is never held twice.
    pub async fn each_live_tool(&self, mut each: impl FnMut(LiveTool)) -> Result<(), StoreError> {
        Query::new(
            "SELECT server_id, remote_name, local_name, description, input_schema, annotations,
                    pinned_definition, approval
             FROM mcp_tool WHERE orphaned = 0 ORDER BY server_id, local_name",
        )
        .fetch_each(&self.pool, |row| {
            let (_, declaration) = tool_declaration_of(row, "approval");
            each(LiveTool {
                declaration,
                server_id: row.take(0)?,
                remote_name: row.take(1)?,
                local_name: row.take(2)?,
                description: row.take(3)?,
                input_schema: row.take(4)?,
                annotations: row.take(5)?,
                pinned_definition: row.take(6)?,
            });
            Ok::<_, StoreError>(())
        })
        .await
    }

    /// Every catalogue row that is not orphaned, of every server, by server
    /// and local name.
    pub async fn live_catalogue(&self) -> Result<Vec<CatalogueRow>, StoreError> {
        let rows =
            Query::new("SELECT * FROM mcp_tool WHERE orphaned = 0 ORDER BY server_id, local_name")
                .fetch_all(&self.pool)
                .await?;
        Ok(rows
            .iter()
            .map(CatalogueRow::from_row)
            .collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// The definition as earlier builds wrote it — one `Value`, serialised:
    /// definitions pinned then still compare equal.
    fn as_a_value(
        name: &str,
        description: &str,
        schema: &str,
        annotations: Option<&str>,
    ) -> String {
        let parse = |text: &str| {
            serde_json::from_str::<Value>(text).unwrap_or_else(|_| Value::String(text.to_owned()))
        };
        json!({
            "name": name,
            "description": description,
            "input_schema": parse(schema),
            "annotations": annotations.map(parse),
        })
        .to_string()
    }

    /// Stored texts near a canonical one: white space, key order, number
    /// spellings, escapes, and texts that are not JSON at all.
    fn stored_text() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(r#"{"properties":{"q":{"type":"string"}},"type":"object"}"#.to_owned()),
            Just(r#"{"type":"object","properties":{"q":{"type":"string"}}}"#.to_owned()),
            Just(r#" {"properties":{"q":{"type":"string"}},"type":"object"}"#.to_owned()),
            Just(r#"{"type":"object","maximum":1.0}"#.to_owned()),
            Just(r#"{"maximum":1.00,"type":"object"}"#.to_owned()),
            Just(r#"{"maximum":1.0,"type":"object"}"#.to_owned()),
            Just(r#"{"type":"obj\u0065ct"}"#.to_owned()),
            Just(r#"{"type":"object"}"#.to_owned()),
            Just(r#"{"type":"object"},"name":"x""#.to_owned()),
            Just(r#"{"type":"object","a":1e0}"#.to_owned()),
            Just(r#"{"a":1.0,"type":"object"}"#.to_owned()),
            Just(r#"{"type":"object","$serde_json::private::RawValue":"x"}"#.to_owned()),
            Just(r#"{"$serde_json::private::RawValue":"x","type":"object"}"#.to_owned()),
            Just(r#"{"$serde_json::private::RawValue":"{\"type\":\"object\"}"}"#.to_owned()),
            Just("null".to_owned()),
            Just("not json".to_owned()),
            Just(r#""quoted""#.to_owned()),
            "[ -~]{0,12}",
        ]
    }

    proptest! {
        /// The quick answer is the rule's answer: `pinned ==
        /// tool_definition(…)`, whatever the stored texts and whatever was
        /// pinned.
        #[test]
        fn a_pinned_definition_is_recognised_exactly_as_the_rule_says(
            name in "[a-z_]{1,6}|x\",\"name\":\"y",
            description in "[ -~]{0,12}|d\"",
            schema in stored_text(),
            annotations in proptest::option::of(stored_text()),
            pinned_schema in stored_text(),
            pinned_annotations in proptest::option::of(stored_text()),
            same_schema in any::<bool>(),
            same_annotations in any::<bool>(),
            written_by_hand in any::<bool>(),
        ) {
            let pinned_schema = if same_schema { schema.clone() } else { pinned_schema };
            let pinned_annotations = if same_annotations { annotations.clone() } else { pinned_annotations };
            let pinned = tool_definition(&name, &description, &pinned_schema, pinned_annotations.as_deref());
            // And the rule writes what earlier builds wrote.
            prop_assert_eq!(&pinned, &as_a_value(&name, &description, &pinned_schema, pinned_annotations.as_deref()));
            // A pinned text written into the database by hand need not be
            // one the rule writes: here, the row's texts laid out as stored.
            let pinned = if written_by_hand {
                definition_text(&name, &description, &pinned_schema, pinned_annotations.as_deref().unwrap_or("null"))
            } else {
                pinned
            };
            prop_assert_eq!(
                is_definition(&pinned, &name, &description, &schema, annotations.as_deref()),
                pinned == tool_definition(&name, &description, &schema, annotations.as_deref())
            );
        }
    }

    #[test]
    fn a_definition_stored_as_written_is_recognised_without_reading_it() {
        let schema = r#"{"properties":{"q":{"type":"string"}},"type":"object"}"#;
        let annotations = r#"{"readOnlyHint":true}"#;
        let pinned = tool_definition("find", "Finds.", schema, Some(annotations));
        assert_eq!(
            pinned,
            definition_text("find", "Finds.", schema, annotations),
            "a canonical row lays out as its definition"
        );
        assert!(is_definition(
            &pinned,
            "find",
            "Finds.",
            schema,
            Some(annotations)
        ));
        assert!(!is_definition(
            &pinned,
            "find",
            "Finds!",
            schema,
            Some(annotations)
        ));
        assert!(!is_definition(&pinned, "find", "Finds.", schema, None));
        // The same schema, stored with its keys in another order: the same
        // definition, found by rebuilding it.
        let reordered = r#"{"type":"object","properties":{"q":{"type":"string"}}}"#;
        assert!(is_definition(
            &pinned,
            "find",
            "Finds.",
            reordered,
            Some(annotations)
        ));
    }
}
