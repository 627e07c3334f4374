//! How much a server's stored catalogue may hold, checked in the import's
//! own transaction before it commits.

use crate::StoreError;
use crate::db::{Query, Tx};

/// The most a server's stored catalogue may hold — the tools it lists and
/// those it listed before, kept as orphaned — counted as stored: rows, and
/// the bytes of every text they store (names, description, schema,
/// annotations, and the definitions written from them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogueBounds {
    /// The most rows.
    pub max_tools: usize,
    /// The most bytes.
    pub max_bytes: usize,
}

/// Refuses a catalogue, as written so far in `tx`, past `bounds`: its rows,
/// orphaned ones included, and the bytes of every text they store.
pub(super) async fn within_bounds(
    tx: &mut Tx,
    server_id: &str,
    bounds: CatalogueBounds,
) -> Result<(), StoreError> {
    // Bytes, not characters, of every text a row stores — its definition,
    // the server's texts written again as JSON, included.
    let bytes = match tx.backend() {
        crate::Backend::Sqlite => |column: &str| format!("LENGTH(CAST({column} AS BLOB))"),
        crate::Backend::Postgres => |column: &str| format!("OCTET_LENGTH({column})"),
    };
    let texts = [
        "remote_name",
        "local_name",
        "description",
        "input_schema",
        "annotations",
        "definition",
        "pinned_definition",
    ]
    .map(|column| format!("COALESCE({}, 0)", bytes(column)))
    .join(" + ");
    let stored = Query::new(format!(
        "SELECT COUNT(*) AS tools, COALESCE(SUM(CASE WHEN orphaned = 1 THEN 1 ELSE 0 END), 0) AS orphaned,
                COALESCE(SUM({texts}), 0) AS bytes
         FROM mcp_tool WHERE server_id = $1"
    ))
    .bind(server_id)
    .fetch_one(&mut *tx)
    .await?;
    let count = |column: &str| -> Result<u64, StoreError> {
        Ok(u64::try_from(stored.try_get::<i64, _>(column)?).unwrap_or(0))
    };
    let (tools, orphaned, bytes) = (count("tools")?, count("orphaned")?, count("bytes")?);
    let over = |value: u64, bound: usize| usize::try_from(value).map_or(true, |v| v > bound);
    if over(tools, bounds.max_tools) || over(bytes, bounds.max_bytes) {
        // Dropped unfinished, the transaction writes nothing.
        return Err(StoreError::CatalogueOverBounds {
            server: server_id.to_owned(),
            tools,
            orphaned,
            bytes,
            max_tools: bounds.max_tools,
            max_bytes: bounds.max_bytes,
        });
    }
    Ok(())
}
