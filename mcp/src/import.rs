//! Import: an explicit operator action that reads a server's whole catalogue
//! and stores it.

use std::collections::HashSet;

use toolgate_store::{CatalogueChange, ImportedTool, Store, StoreError};

use crate::client::{ClientError, Connection, Deadlines};
use crate::names::{SkipReason, local_name};

/// How far an import has got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportProgress {
    /// Starting the server and shaking hands.
    Connecting,
    /// A page of the catalogue arrived.
    Page {
        /// Pages so far.
        pages: usize,
        /// Tools listed so far.
        tools: usize,
        /// Whether the server said more pages follow.
        more: bool,
    },
    /// Writing the catalogue.
    Storing {
        /// Tools to store.
        tools: usize,
    },
}

/// A tool the import left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedTool {
    /// The server's name for it, escaped for display.
    pub remote_name: String,
    /// Why.
    pub reason: SkipReason,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// The server.
    pub server: String,
    /// Pages read.
    pub pages: usize,
    /// Tools the server listed.
    pub listed: usize,
    /// What changed in the stored catalogue.
    pub change: CatalogueChange,
    /// Tools left out, with the reason.
    pub skipped: Vec<SkippedTool>,
}

/// An import failed; the previous catalogue is intact.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The store failed (or has no such server).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The server failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The server's pages never end.
    #[error("server `{server}` returned more than {limit} pages; the import stopped")]
    TooManyPages {
        /// The server.
        server: String,
        /// The limit.
        limit: usize,
    },
    /// The server sent a cursor it had sent before.
    #[error("server `{server}` repeated the cursor `{cursor}`; the import stopped")]
    CursorLoop {
        /// The server.
        server: String,
        /// The cursor.
        cursor: String,
    },
}

/// The most pages an import reads.
pub const MAX_PAGES: usize = 10_000;

/// Imports a server's catalogue: lists every page, maps names (skipping those
/// that do not fit, with the reason), and replaces the stored catalogue in
/// one transaction — tools the server no longer lists are marked orphaned.
/// On any failure the stored catalogue is left as it was and the failure is
/// recorded on the server.
pub async fn import(
    store: &Store,
    server_id: &str,
    deadlines: Deadlines,
    progress: &mut (dyn FnMut(ImportProgress) + Send),
) -> Result<ImportReport, ImportError> {
    let server = store.server(server_id).await?;
    let connection = Connection::new(&server.id, server.transport.clone(), deadlines);
    let result = list_and_store(store, &connection, progress).await;
    connection.close().await;
    match &result {
        Ok(report) => {
            store.record_import(server_id, None).await?;
            tracing::info!(server = %server_id, listed = report.listed, skipped = report.skipped.len(), "import finished");
        }
        Err(error) => {
            let message = error.to_string();
            store.record_import(server_id, Some(&message)).await?;
            tracing::warn!(server = %server_id, error = %message, "import failed; the previous catalogue is kept");
        }
    }
    result
}

async fn list_and_store(
    store: &Store,
    connection: &Connection,
    progress: &mut (dyn FnMut(ImportProgress) + Send),
) -> Result<ImportReport, ImportError> {
    let server = connection.server().to_owned();
    progress(ImportProgress::Connecting);
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen_cursors = HashSet::new();
    let mut pages = 0;
    loop {
        let page = connection.list_page(cursor.clone()).await?;
        pages += 1;
        listed.extend(page.tools);
        let more = page.next_cursor.is_some();
        progress(ImportProgress::Page {
            pages,
            tools: listed.len(),
            more,
        });
        match page.next_cursor {
            None => break,
            Some(next) => {
                if pages >= MAX_PAGES {
                    return Err(ImportError::TooManyPages {
                        server,
                        limit: MAX_PAGES,
                    });
                }
                if !seen_cursors.insert(next.clone()) {
                    return Err(ImportError::CursorLoop {
                        server,
                        cursor: next,
                    });
                }
                cursor = Some(next);
            }
        }
    }
    let mut tools = Vec::with_capacity(listed.len());
    let mut skipped = Vec::new();
    let mut names = HashSet::new();
    for tool in &listed {
        let remote = tool.name.to_string();
        let input_schema = serde_json::Value::Object((*tool.input_schema).clone());
        // The schema as it will be stored and read back at hydration, judged
        // by the same reading.
        let object = crate::schema::is_object_schema_text(&input_schema.to_string());
        let hidden = crate::output::hidden_in_names(&input_schema);
        let mapped = local_name(&server, &remote).and_then(|local| {
            if !object {
                Err(SkipReason::SchemaNotAnObject)
            } else if let Some(at) = hidden {
                Err(SkipReason::HiddenInSchema(at))
            } else if names.insert(local.clone()) {
                Ok(local)
            } else {
                Err(SkipReason::Duplicate)
            }
        });
        match mapped {
            Ok(local_name) => tools.push(ImportedTool {
                remote_name: remote,
                local_name,
                description: tool.description.as_deref().unwrap_or_default().to_owned(),
                input_schema,
                annotations: tool
                    .annotations
                    .as_ref()
                    .and_then(|a| serde_json::to_value(a).ok()),
            }),
            Err(reason) => skipped.push(SkippedTool {
                remote_name: toolgate::visible::visible(&remote).into_owned(),
                reason,
            }),
        }
    }
    progress(ImportProgress::Storing { tools: tools.len() });
    let change = store.replace_catalogue(&server, &tools).await?;
    Ok(ImportReport {
        server,
        pages,
        listed: listed.len(),
        change,
        skipped,
    })
}
