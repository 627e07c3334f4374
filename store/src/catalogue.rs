//! The tool catalogue imported from each server.

use serde_json::Value;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::{Store, StoreError, now_ms};

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
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

impl CatalogueRow {
    fn from_row(row: &SqliteRow) -> Result<Self, sqlx::Error> {
        Ok(Self {
            server_id: row.try_get("server_id")?,
            remote_name: row.try_get("remote_name")?,
            local_name: row.try_get("local_name")?,
            description: row.try_get("description")?,
            input_schema: row.try_get("input_schema")?,
            annotations: row.try_get("annotations")?,
            orphaned: row.try_get::<i64, _>("orphaned")? == 1,
            first_seen_at: row.try_get("first_seen_at")?,
            last_seen_at: row.try_get("last_seen_at")?,
        })
    }
}

/// What a provider needs of a live catalogue row to build a tool — and
/// nothing else: the server's annotations are not read on this path.
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
}

fn json(value: &Value, what: &'static str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|source| StoreError::Encode { what, source })
}

impl Store {
    /// Replaces a server's catalogue with what an import found, in one
    /// transaction: new rows are added, known rows updated, rows the server
    /// no longer lists are marked orphaned (kept, not deleted).
    pub async fn replace_catalogue(
        &self,
        server_id: &str,
        tools: &[ImportedTool],
    ) -> Result<CatalogueChange, StoreError> {
        let now = now_ms();
        let (_writer, mut tx) = self.write().await?;
        let known: Option<String> = sqlx::query_scalar("SELECT id FROM mcp_server WHERE id = ?")
            .bind(server_id)
            .fetch_optional(&mut *tx)
            .await?;
        if known.is_none() {
            return Err(StoreError::NoSuchServer(server_id.to_owned()));
        }
        let existing = sqlx::query("SELECT * FROM mcp_tool WHERE server_id = ?")
            .bind(server_id)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(CatalogueRow::from_row)
            .collect::<Result<Vec<_>, _>>()?;
        let mut change = CatalogueChange::default();
        for tool in tools {
            let schema = json(&tool.input_schema, "an input schema")?;
            let annotations = tool
                .annotations
                .as_ref()
                .map(|a| json(a, "an annotations block"))
                .transpose()?;
            match existing.iter().find(|r| r.remote_name == tool.remote_name) {
                None => change.added.push(tool.local_name.clone()),
                Some(row) if row.orphaned => change.restored.push(tool.local_name.clone()),
                Some(row)
                    if row.description != tool.description
                        || row.input_schema != schema
                        || row.annotations != annotations
                        || row.local_name != tool.local_name =>
                {
                    change.changed.push(tool.local_name.clone());
                }
                Some(_) => change.unchanged += 1,
            }
            sqlx::query(
                "INSERT INTO mcp_tool (server_id, remote_name, local_name, description, input_schema, annotations, orphaned, first_seen_at, last_seen_at)
                 VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)
                 ON CONFLICT (server_id, remote_name) DO UPDATE SET
                   local_name = excluded.local_name, description = excluded.description,
                   input_schema = excluded.input_schema, annotations = excluded.annotations,
                   orphaned = 0, last_seen_at = excluded.last_seen_at",
            )
            .bind(server_id)
            .bind(&tool.remote_name)
            .bind(&tool.local_name)
            .bind(&tool.description)
            .bind(schema)
            .bind(annotations)
            .bind(now)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        for row in existing.iter().filter(|r| !r.orphaned) {
            if !tools.iter().any(|t| t.remote_name == row.remote_name) {
                sqlx::query(
                    "UPDATE mcp_tool SET orphaned = 1 WHERE server_id = ? AND remote_name = ?",
                )
                .bind(server_id)
                .bind(&row.remote_name)
                .execute(&mut *tx)
                .await?;
                change.orphaned.push(row.local_name.clone());
            }
        }
        tx.commit().await?;
        Ok(change)
    }

    /// A server's catalogue, orphaned rows included, by local name.
    pub async fn catalogue(&self, server_id: &str) -> Result<Vec<CatalogueRow>, StoreError> {
        let rows = sqlx::query("SELECT * FROM mcp_tool WHERE server_id = ? ORDER BY local_name")
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
        let rows = sqlx::query(
            "SELECT server_id, remote_name, local_name, description, input_schema
             FROM mcp_tool WHERE orphaned = 0 ORDER BY server_id, local_name",
        )
        .fetch_all(&self.pool)
        .await?;
        let mut tools = Vec::with_capacity(rows.len());
        for row in &rows {
            tools.push(LiveTool {
                server_id: row.try_get(0)?,
                remote_name: row.try_get(1)?,
                local_name: row.try_get(2)?,
                description: row.try_get(3)?,
                input_schema: row.try_get(4)?,
            });
        }
        Ok(tools)
    }

    /// Every catalogue row that is not orphaned, of every server, by server
    /// and local name.
    pub async fn live_catalogue(&self) -> Result<Vec<CatalogueRow>, StoreError> {
        let rows =
            sqlx::query("SELECT * FROM mcp_tool WHERE orphaned = 0 ORDER BY server_id, local_name")
                .fetch_all(&self.pool)
                .await?;
        Ok(rows
            .iter()
            .map(CatalogueRow::from_row)
            .collect::<Result<_, _>>()?)
    }
}
