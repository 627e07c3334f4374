//! An import's catalogue, staged page by page in the database and swapped in
//! at the end: the one way a catalogue is replaced.
//!
//! Each page is written to `catalogue_stage_tool` as it arrives, in a short
//! transaction of its own, so an import holds one page at a time whatever
//! the server lists, and no write lock is held while the server is asked
//! for the next one. The replacement — what changed, what is orphaned, what
//! is quarantined, the bounds — is then worked out by the database from the
//! staged rows and the stored ones, in one transaction, reading back only
//! names.

use std::collections::HashMap;

use crate::db::{Arg, Query, Tx, placeholders};
use crate::{Store, StoreError, now_ms};

use super::bounds::within_bounds;
use super::{CatalogueBounds, CatalogueChange, CatalogueRow, ImportedTool, json, tool_definition};

/// An import's staged pages, until they replace the server's catalogue
/// ([`Store::replace_catalogue_staged`]) or are dropped
/// ([`Store::drop_stage`]). A stage is the import's own: two imports of one
/// server stage apart, and each replaces the catalogue with what it listed.
#[derive(Debug)]
#[must_use = "a stage is replaced from or dropped; one left behind is cleared a day later"]
pub struct CatalogueStage {
    id: i64,
    server_id: String,
    /// The next row's place in the listing.
    next_seq: i64,
}

impl CatalogueStage {
    /// How long a stage may stand untouched before a later import takes it
    /// for a killed import's and deletes it: a day, far past any page's
    /// deadline.
    pub const KEPT_FOR_MS: i64 = 24 * 60 * 60 * 1000;

    /// The server whose catalogue is staged.
    pub fn server_id(&self) -> &str {
        &self.server_id
    }

    /// Rows staged so far (a name listed again counts once).
    pub fn staged(&self) -> i64 {
        self.next_seq
    }
}

/// Staged rows written by one statement (eight arguments each, so a
/// statement stays well under SQLite's 32,766 and PostgreSQL's 65,535).
const ROWS_PER_INSERT: usize = 500;

/// # Staged imports
///
/// What `toolgate servers import` does between its first page and its last.
impl Store {
    /// Opens a stage for an import of `server_id`'s catalogue, first
    /// deleting stages no import has touched for
    /// [`CatalogueStage::KEPT_FOR_MS`] (left by a killed import).
    pub async fn stage_catalogue(&self, server_id: &str) -> Result<CatalogueStage, StoreError> {
        let (_writer, mut tx) = self.write().await?;
        let stage = open_in(&mut tx, server_id, now_ms()).await?;
        tx.commit().await?;
        Ok(stage)
    }

    /// Adds a page of tools to `stage`, in its own transaction. A remote name
    /// staged before is replaced, in its new place: a name listed twice
    /// counts once, as its last listing.
    pub async fn stage_tools(
        &self,
        stage: &mut CatalogueStage,
        tools: &[ImportedTool],
    ) -> Result<(), StoreError> {
        let (_writer, mut tx) = self.write().await?;
        write_in(&mut tx, stage, tools).await?;
        let touched = Query::new("UPDATE catalogue_stage SET touched_at = $1 WHERE id = $2")
            .bind(now_ms())
            .bind(stage.id)
            .execute(&mut tx)
            .await?;
        if touched == 0 {
            return Err(StoreError::StageCleared {
                server: stage.server_id.clone(),
            });
        }
        tx.commit().await?;
        Ok(())
    }

    /// Replaces the server's catalogue with what `stage` holds, in one
    /// transaction, and deletes the stage: staged rows are added or update
    /// the stored ones, rows the server no longer lists are marked orphaned
    /// (kept, not deleted). With `bounds`, a catalogue that would be past
    /// them, orphaned rows included, is refused with
    /// [`StoreError::CatalogueOverBounds`] and nothing is replaced. On any
    /// failure the stage is kept: drop it with [`Store::drop_stage`].
    pub async fn replace_catalogue_staged(
        &self,
        stage: &CatalogueStage,
        bounds: Option<CatalogueBounds>,
    ) -> Result<CatalogueChange, StoreError> {
        let (_writer, mut tx) = self.write().await?;
        let change = replace_in(&mut tx, stage, bounds, now_ms()).await?;
        tx.commit().await?;
        Ok(change)
    }

    /// Deletes a stage and its rows; the stored catalogue is untouched.
    pub async fn drop_stage(&self, stage: CatalogueStage) -> Result<(), StoreError> {
        let (_writer, mut tx) = self.write().await?;
        delete_in(&mut tx, stage.id).await?;
        tx.commit().await?;
        Ok(())
    }
}

/// Opens a stage in `tx`, once stale ones are deleted.
pub(super) async fn open_in(
    tx: &mut Tx,
    server_id: &str,
    now: i64,
) -> Result<CatalogueStage, StoreError> {
    let stale = now.saturating_sub(CatalogueStage::KEPT_FOR_MS);
    delete_stages(tx, "touched_at < $1", Arg::Int(Some(stale))).await?;
    known_server(tx, server_id).await?;
    let id: i64 = Query::new(
        "INSERT INTO catalogue_stage (server_id, touched_at) VALUES ($1, $2) RETURNING id",
    )
    .bind(server_id)
    .bind(now)
    .scalar(&mut *tx)
    .await?;
    Ok(CatalogueStage {
        id,
        server_id: server_id.to_owned(),
        next_seq: 0,
    })
}

/// Refuses a server that is not registered.
async fn known_server(tx: &mut Tx, server_id: &str) -> Result<(), StoreError> {
    let known: Option<String> = Query::new("SELECT id FROM mcp_server WHERE id = $1")
        .bind(server_id)
        .scalar_optional(&mut *tx)
        .await?;
    match known {
        Some(_) => Ok(()),
        None => Err(StoreError::NoSuchServer(server_id.to_owned())),
    }
}

/// Stages `tools`, many rows per statement: a large catalogue is a few
/// hundred round trips, not one per tool. Each row's schema, annotations and
/// definition are written here, as they will be stored.
pub(super) async fn write_in(
    tx: &mut Tx,
    stage: &mut CatalogueStage,
    tools: &[ImportedTool],
) -> Result<(), StoreError> {
    // One statement may not name a row twice (PostgreSQL refuses to update
    // a row twice in one statement): of a name listed twice here, the last
    // listing is written; one staged by an earlier call is replaced.
    let mut last: HashMap<&str, usize> = HashMap::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        last.insert(tool.remote_name.as_str(), i);
    }
    let mut rows = Vec::with_capacity(last.len());
    for (i, tool) in tools.iter().enumerate() {
        if last.get(tool.remote_name.as_str()) != Some(&i) {
            continue;
        }
        let schema = json(&tool.input_schema, "an input schema")?;
        let annotations = tool
            .annotations
            .as_ref()
            .map(|a| json(a, "an annotations block"))
            .transpose()?;
        let definition = tool_definition(
            &tool.remote_name,
            &tool.description,
            &schema,
            annotations.as_deref(),
        );
        rows.push((tool, schema, annotations, definition));
    }
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        let values = (0..chunk.len())
            .map(|row| format!("({})", placeholders(row * 8 + 1, 8)))
            .collect::<Vec<_>>()
            .join(", ");
        let mut insert = Query::new(format!(
            "INSERT INTO catalogue_stage_tool (stage_id, seq, remote_name, local_name, description, input_schema, annotations, definition)
             VALUES {values}
             ON CONFLICT (stage_id, remote_name) DO UPDATE SET
               seq = excluded.seq, local_name = excluded.local_name,
               description = excluded.description, input_schema = excluded.input_schema,
               annotations = excluded.annotations, definition = excluded.definition"
        ));
        for (tool, schema, annotations, definition) in chunk {
            insert = insert
                .bind(stage.id)
                .bind(stage.next_seq)
                .bind(&tool.remote_name)
                .bind(&tool.local_name)
                .bind(&tool.description)
                .bind(schema.as_str())
                .bind(annotations.as_deref())
                .bind(definition.as_str());
            stage.next_seq += 1;
        }
        insert.execute(&mut *tx).await?;
    }
    Ok(())
}

/// Replaces the server's catalogue with the stage's rows in `tx`, and
/// deletes the stage: the one home of what an import changes.
pub(super) async fn replace_in(
    tx: &mut Tx,
    stage: &CatalogueStage,
    bounds: Option<CatalogueBounds>,
    now: i64,
) -> Result<CatalogueChange, StoreError> {
    let server_id = stage.server_id.as_str();
    tx.lock_server(server_id).await?;
    known_server(tx, server_id).await?;
    let kept: Option<i64> = Query::new("SELECT id FROM catalogue_stage WHERE id = $1")
        .bind(stage.id)
        .scalar_optional(&mut *tx)
        .await?;
    if kept.is_none() {
        return Err(StoreError::StageCleared {
            server: server_id.to_owned(),
        });
    }
    let mut change = CatalogueChange::default();
    // What each staged row is to the stored catalogue, in listing order,
    // read back as names.
    Query::new(
        "SELECT s.local_name,
                CAST(CASE WHEN t.remote_name IS NULL THEN 0
                          WHEN t.orphaned = 1 THEN 1
                          WHEN t.description <> s.description OR t.input_schema <> s.input_schema
                               OR t.local_name <> s.local_name
                               OR t.annotations IS DISTINCT FROM s.annotations THEN 2
                          ELSE 3 END AS BIGINT) AS kind
         FROM catalogue_stage_tool s
         LEFT JOIN mcp_tool t ON t.server_id = $1 AND t.remote_name = s.remote_name
         WHERE s.stage_id = $2
         ORDER BY s.seq",
    )
    .bind(server_id)
    .bind(stage.id)
    .fetch_each(&mut *tx, |row| {
        let name: String = row.take(0)?;
        match row.take::<i64, _>(1)? {
            0 => change.added.push(name),
            1 => change.restored.push(name),
            2 => change.changed.push(name),
            _ => change.unchanged += 1,
        }
        Ok::<_, StoreError>(())
    })
    .await?;
    // Rows the server no longer lists are kept, marked orphaned.
    let unlisted = "server_id = $1 AND orphaned = 0 AND NOT EXISTS
        (SELECT 1 FROM catalogue_stage_tool s WHERE s.stage_id = $2 AND s.remote_name = mcp_tool.remote_name)";
    Query::new(format!(
        "SELECT local_name FROM mcp_tool WHERE {unlisted} ORDER BY local_name"
    ))
    .bind(server_id)
    .bind(stage.id)
    .fetch_each(&mut *tx, |row| {
        change.orphaned.push(row.take(0)?);
        Ok::<_, StoreError>(())
    })
    .await?;
    Query::new(format!("UPDATE mcp_tool SET orphaned = 1 WHERE {unlisted}"))
        .bind(server_id)
        .bind(stage.id)
        .execute(&mut *tx)
        .await?;
    Query::new(
        "INSERT INTO mcp_tool (server_id, remote_name, local_name, description, input_schema, annotations, orphaned, first_seen_at, last_seen_at, definition)
         SELECT $1, remote_name, local_name, description, input_schema, annotations, 0, $2, $3, definition
         FROM catalogue_stage_tool WHERE stage_id = $4
         ON CONFLICT (server_id, remote_name) DO UPDATE SET
           local_name = excluded.local_name, description = excluded.description,
           input_schema = excluded.input_schema, annotations = excluded.annotations,
           orphaned = 0, last_seen_at = excluded.last_seen_at,
           definition = excluded.definition",
    )
    .bind(server_id)
    .bind(now)
    .bind(now)
    .bind(stage.id)
    .execute(&mut *tx)
    .await?;
    // Every live row, read a batch at a time: the digest of the catalogue
    // as stored (what an operator reviews before accepting it), and — on a
    // server whose approval is off, the only kind that quarantines — each
    // row judged by the one rule of pinning.
    let server = Query::new("SELECT * FROM mcp_server WHERE id = $1")
        .bind(server_id)
        .fetch_one(&mut *tx)
        .await?;
    let (_, approval) = crate::flag::approval_of(&server);
    let mut digest = toolgate::suspend::DefinitionsDigest::new(server_id);
    Query::new("SELECT * FROM mcp_tool WHERE server_id = $1 AND orphaned = 0 ORDER BY local_name")
        .bind(server_id)
        .fetch_each(&mut *tx, |row| {
            let row = CatalogueRow::from_row(row)?;
            digest.add(&row.local_name, &row.definition());
            change.live += 1;
            if let Some(why) = row.gate(approval).quarantine() {
                change.quarantined.push((row.local_name, why));
            }
            Ok::<_, StoreError>(())
        })
        .await?;
    change.digest = digest.finish();
    if let Some(bounds) = bounds {
        within_bounds(tx, server_id, bounds).await?;
    }
    delete_in(tx, stage.id).await?;
    Ok(change)
}

/// Deletes a stage's rows, then the stage.
pub(super) async fn delete_in(tx: &mut Tx, id: i64) -> Result<(), StoreError> {
    delete_stages(tx, "id = $1", Arg::Int(Some(id))).await
}

/// Deletes the stages `filter` (over `catalogue_stage`, one placeholder,
/// `value`) picks, their rows first.
async fn delete_stages(tx: &mut Tx, filter: &str, value: Arg) -> Result<(), StoreError> {
    Query::new(format!(
        "DELETE FROM catalogue_stage_tool WHERE stage_id IN
           (SELECT id FROM catalogue_stage WHERE {filter})"
    ))
    .bind(value.clone())
    .execute(&mut *tx)
    .await?;
    Query::new(format!("DELETE FROM catalogue_stage WHERE {filter}"))
        .bind(value)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Deletes every stage of `server_id`, with its rows: the server is being
/// removed, and an import of it still running must not outlive it.
pub(crate) async fn drop_stages_of(tx: &mut Tx, server_id: &str) -> Result<(), StoreError> {
    delete_stages(tx, "server_id = $1", Arg::Text(Some(server_id.to_owned()))).await
}
