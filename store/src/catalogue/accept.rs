//! An operator's acceptance of a server's tools — turning its approval off,
//! or accepting tools quarantined since: shown first (what would be pinned,
//! and the digest of every definition the act covers), then pinned exactly
//! as shown.

use crate::db::{Query, Tx};
use crate::{Store, StoreError, now_ms};

use super::CatalogueRow;

/// A tool an operator accepted: what was pinned before, and now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The tool's local name.
    pub local_name: String,
    /// The definition pinned before, if any.
    pub before: Option<String>,
    /// The definition pinned now.
    pub after: String,
}

/// What an operator is shown before accepting a server's tools — every live
/// one, or those named: each tool whose definition would be pinned (what was
/// pinned before, and now), and the digest of every definition acted on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acceptance {
    /// The server.
    pub server: String,
    /// The tools whose definition is not the one pinned: new, or changed.
    pub changes: Vec<Accepted>,
    /// How many tools the act covers (changed or not).
    pub tools: usize,
    /// The digest of their definitions
    /// ([`accepted_definitions_digest`](toolgate::suspend::accepted_definitions_digest)),
    /// which the act carries back.
    pub digest: String,
}

/// Reads what accepting a server's live tools (all, or the named ones) would
/// pin, inside the caller's transaction. A name that is not a live tool of
/// the server is refused.
pub(crate) async fn acceptance_in(
    tx: &mut Tx,
    server_id: &str,
    names: Option<&[String]>,
) -> Result<(Acceptance, Vec<CatalogueRow>), StoreError> {
    tx.lock_server(server_id).await?;
    let known: Option<String> = Query::new("SELECT id FROM mcp_server WHERE id = $1")
        .bind(server_id)
        .scalar_optional(&mut *tx)
        .await?;
    if known.is_none() {
        return Err(StoreError::NoSuchServer(server_id.to_owned()));
    }
    let rows = Query::new(
        "SELECT * FROM mcp_tool WHERE server_id = $1 AND orphaned = 0 ORDER BY local_name",
    )
    .bind(server_id)
    .fetch_all(&mut *tx)
    .await?
    .iter()
    .map(CatalogueRow::from_row)
    .collect::<Result<Vec<_>, _>>()?;
    if let Some(missing) = names.filter(|n| !n.is_empty()).and_then(|names| {
        names
            .iter()
            .find(|n| !rows.iter().any(|r| &r.local_name == *n))
    }) {
        return Err(StoreError::NoSuchTool {
            server: server_id.to_owned(),
            tool: toolgate::visible::visible(missing).into_owned(),
        });
    }
    let wanted = |row: &CatalogueRow| {
        names
            .filter(|n| !n.is_empty())
            .is_none_or(|n| n.contains(&row.local_name))
    };
    let rows: Vec<CatalogueRow> = rows.into_iter().filter(|r| wanted(r)).collect();
    let definitions: Vec<String> = rows.iter().map(CatalogueRow::definition).collect();
    let digest = toolgate::suspend::accepted_definitions_digest(
        server_id,
        rows.iter()
            .zip(&definitions)
            .map(|(row, definition)| (row.local_name.as_str(), definition.as_str())),
    );
    let changes = rows
        .iter()
        .zip(definitions)
        .filter(|(row, after)| row.pinned_definition.as_deref() != Some(after.as_str()))
        .map(|(row, after)| Accepted {
            local_name: row.local_name.clone(),
            before: row.pinned_definition.clone(),
            after,
        })
        .collect();
    Ok((
        Acceptance {
            server: server_id.to_owned(),
            changes,
            tools: rows.len(),
            digest,
        },
        rows,
    ))
}

/// Pins the current definitions of a server's live tools (all, or the named
/// ones) inside the caller's transaction — only when they are exactly the
/// ones whose digest the operator was shown. A name that is not a live tool
/// of the server, or a catalogue that changed since, is refused.
pub(crate) async fn pin_in(
    tx: &mut Tx,
    server_id: &str,
    names: Option<&[String]>,
    shown: &str,
) -> Result<Vec<Accepted>, StoreError> {
    let (acceptance, rows) = acceptance_in(tx, server_id, names).await?;
    if acceptance.digest != shown.trim() {
        return Err(StoreError::CatalogueChanged {
            server: server_id.to_owned(),
        });
    }
    let now = now_ms();
    for accepted in &acceptance.changes {
        let Some(row) = rows.iter().find(|r| r.local_name == accepted.local_name) else {
            continue;
        };
        Query::new(
            "UPDATE mcp_tool SET pinned_definition = $1, definition = $2, pinned_at = $3
             WHERE server_id = $4 AND remote_name = $5",
        )
        .bind(&accepted.after)
        .bind(&accepted.after)
        .bind(now)
        .bind(server_id)
        .bind(&row.remote_name)
        .execute(&mut *tx)
        .await?;
    }
    Ok(acceptance.changes)
}

/// # Acceptance
///
/// An operator's review of a server's tool definitions, which tool pinning
/// holds the server to: the console's `set-approval` and `accept`.
impl Store {
    /// What accepting a server's tools — every live one, or those named (by
    /// local name) — would pin, with the digest the act must carry. Nothing
    /// is written.
    pub async fn acceptance(
        &self,
        server_id: &str,
        names: &[String],
    ) -> Result<Acceptance, StoreError> {
        let (_writer, mut tx) = self.write().await?;
        let (acceptance, _) = acceptance_in(&mut tx, server_id, Some(names)).await?;
        // Nothing was written: the transaction ends unapplied.
        drop(tx);
        Ok(acceptance)
    }

    /// Pins the current definition of a server's tools — every live one, or
    /// those named (by local name) — as accepted by an operator who was shown
    /// them: `digest` is [`Acceptance::digest`] as [`Store::acceptance`]
    /// gave it. A catalogue changed since (an import, say) is refused with
    /// [`StoreError::CatalogueChanged`], and nothing is pinned. Returns, for
    /// each tool pinned, what was pinned before (if anything) and now.
    pub async fn accept_tools(
        &self,
        server_id: &str,
        names: &[String],
        digest: &str,
    ) -> Result<Vec<Accepted>, StoreError> {
        let (_writer, mut tx) = self.write().await?;
        let accepted = pin_in(&mut tx, server_id, Some(names), digest).await?;
        tx.commit().await?;
        Ok(accepted)
    }
}
