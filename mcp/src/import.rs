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
    /// The server lists more tools than the import takes
    /// ([`ImportLimits::max_tools`]).
    #[error(
        "server `{server}` lists more than {limit} tools ({seen} seen in {pages} pages); the import stopped and the previous catalogue is kept (raise the bound with `--max-tools`)"
    )]
    TooManyTools {
        /// The server.
        server: String,
        /// The bound.
        limit: usize,
        /// Tools listed when the import stopped.
        seen: usize,
        /// Pages read.
        pages: usize,
    },
    /// The server's catalogue is larger than the import takes
    /// ([`ImportLimits::max_bytes`]).
    #[error(
        "server `{server}` lists a catalogue of more than {} MiB ({} bytes in {tools} tools over {pages} pages); the import stopped and the previous catalogue is kept (raise the bound with `--max-catalogue-mib`)",
        limit / (1024 * 1024),
        seen
    )]
    CatalogueTooLarge {
        /// The server.
        server: String,
        /// The bound, in bytes.
        limit: usize,
        /// Bytes counted when the import stopped.
        seen: usize,
        /// Tools listed by then.
        tools: usize,
        /// Pages read.
        pages: usize,
    },
    /// The server sent a cursor it had sent before.
    #[error("server `{server}` repeated the cursor `{cursor}`; the import stopped")]
    CursorLoop {
        /// The server.
        server: String,
        /// The cursor, escaped and cut to 200 characters.
        cursor: String,
    },
}

/// The most pages an import reads.
pub const MAX_PAGES: usize = 10_000;

/// How large a catalogue an import takes from one server. Past either bound
/// the whole import is refused, as soon as a page crosses it, and the stored
/// catalogue is kept as it was: a server cannot fill the operator's memory
/// or database by listing without end. The same bounds hold for what the
/// store would keep after the import, the tools a server listed before and
/// no longer lists (kept as orphaned) included, so a server that renames its
/// tools at each import cannot grow its stored catalogue without end. What
/// is stored is counted in bytes of every text a row keeps, the definition
/// written from the tool's texts included: about twice what the listing
/// counts, so a catalogue stores at most about half the bound's worth of
/// listed text.
///
/// The defaults are far above what real servers list (tens to a few hundred
/// tools, each a few KiB): **5,000 tools** and **32 MiB**, counted as the
/// catalogue is stored — each tool's name, description, input schema and
/// annotations as JSON text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportLimits {
    /// The most tools a server may list (skipped ones included).
    pub max_tools: usize,
    /// The most bytes its catalogue may take, as stored.
    pub max_bytes: usize,
}

impl ImportLimits {
    /// The default bound on tools: 5,000.
    pub const DEFAULT_MAX_TOOLS: usize = 5_000;
    /// The default bound on a catalogue's stored bytes: 32 MiB.
    pub const DEFAULT_MAX_BYTES: usize = 32 * 1024 * 1024;
}

impl Default for ImportLimits {
    fn default() -> Self {
        Self {
            max_tools: Self::DEFAULT_MAX_TOOLS,
            max_bytes: Self::DEFAULT_MAX_BYTES,
        }
    }
}

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
    import_within(
        store,
        server_id,
        deadlines,
        ImportLimits::default(),
        progress,
    )
    .await
}

/// [`import`], with bounds of the operator's own on the catalogue.
pub async fn import_within(
    store: &Store,
    server_id: &str,
    deadlines: Deadlines,
    limits: ImportLimits,
    progress: &mut (dyn FnMut(ImportProgress) + Send),
) -> Result<ImportReport, ImportError> {
    let server = store.server(server_id).await?;
    let connection = Connection::new(&server.id, server.transport.clone(), deadlines);
    let result = list_and_store(store, &connection, limits, progress).await;
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
    limits: ImportLimits,
    progress: &mut (dyn FnMut(ImportProgress) + Send),
) -> Result<ImportReport, ImportError> {
    let server = connection.server().to_owned();
    progress(ImportProgress::Connecting);
    // Each page is staged in the store as it arrives and dropped: the import
    // holds one page, and the names it has seen, whatever the server lists.
    let mut stage = store.stage_catalogue(&server).await?;
    let listed = list_into(store, connection, &mut stage, limits, progress).await;
    let finished = match listed {
        Ok(listing) => {
            progress(ImportProgress::Storing {
                tools: usize::try_from(stage.staged()).unwrap_or(usize::MAX),
            });
            let bounds = toolgate_store::CatalogueBounds {
                max_tools: limits.max_tools,
                max_bytes: limits.max_bytes,
            };
            store
                .replace_catalogue_staged(&stage, Some(bounds))
                .await
                .map(|change| ImportReport {
                    server: server.clone(),
                    pages: listing.pages,
                    listed: listing.listed,
                    change,
                    skipped: listing.skipped,
                })
                .map_err(ImportError::from)
        }
        Err(error) => Err(error),
    };
    if finished.is_err() {
        // A replaced stage is deleted with the replacement; one that was not
        // is deleted here, or cleared by a later import should this fail.
        if let Err(error) = store.drop_stage(stage).await {
            tracing::warn!(server = %server, error = %error, "an import's staged pages could not be deleted; a later import clears them");
        }
    }
    finished
}

/// What the listing found, once every page is staged.
struct Listing {
    pages: usize,
    listed: usize,
    skipped: Vec<SkippedTool>,
}

/// Reads every page into `stage`, refusing the import as soon as a page
/// crosses `limits`.
async fn list_into(
    store: &Store,
    connection: &Connection,
    stage: &mut toolgate_store::CatalogueStage,
    limits: ImportLimits,
    progress: &mut (dyn FnMut(ImportProgress) + Send),
) -> Result<Listing, ImportError> {
    let server = connection.server().to_owned();
    let mut admitted = Admitted::default();
    let mut cursor: Option<String> = None;
    let mut seen_cursors = HashSet::new();
    let mut pages = 0;
    loop {
        let page = connection.list_page(cursor.clone()).await?;
        pages += 1;
        let more = page.next_cursor.clone();
        let mut kept = Vec::with_capacity(page.tools.len());
        for tool in page.tools {
            if let Some(tool) = admitted.admit(&server, tool) {
                kept.push(tool);
            }
        }
        if admitted.listed > limits.max_tools {
            return Err(ImportError::TooManyTools {
                server,
                limit: limits.max_tools,
                seen: admitted.listed,
                pages,
            });
        }
        if admitted.bytes > limits.max_bytes {
            return Err(ImportError::CatalogueTooLarge {
                server,
                limit: limits.max_bytes,
                seen: admitted.bytes,
                tools: admitted.listed,
                pages,
            });
        }
        store.stage_tools(stage, &kept).await?;
        drop(kept);
        progress(ImportProgress::Page {
            pages,
            tools: admitted.listed,
            more: more.is_some(),
        });
        match more {
            None => break,
            Some(next) => {
                if pages >= MAX_PAGES {
                    return Err(ImportError::TooManyPages {
                        server,
                        limit: MAX_PAGES,
                    });
                }
                // Each cursor is remembered by a hash of it, never whole: a
                // server's cursors, however long, cost the import a few bytes
                // each. Two cursors that hashed alike would only refuse the
                // import, never let a loop through.
                if !seen_cursors.insert(cursor_hash(&next)) {
                    return Err(ImportError::CursorLoop {
                        server,
                        cursor: shown_name(&next),
                    });
                }
                cursor = Some(next);
            }
        }
    }
    Ok(Listing {
        pages,
        listed: admitted.listed,
        skipped: admitted.skipped,
    })
}

/// The catalogue as it is read, page by page: the names taken, the tools
/// left out, and what was listed — never the tools kept, which are staged
/// page by page.
#[derive(Default)]
struct Admitted {
    skipped: Vec<SkippedTool>,
    /// Local names taken so far.
    names: HashSet<String>,
    /// Tools listed, skipped ones included.
    listed: usize,
    /// The catalogue's bytes as stored: names, descriptions, schemas and
    /// annotations as JSON text.
    bytes: usize,
}

impl Admitted {
    /// Reads one listed tool: the row to store, or `None` when it is
    /// skipped (kept with the reason).
    fn admit(&mut self, server: &str, tool: rmcp::model::Tool) -> Option<ImportedTool> {
        self.listed += 1;
        let remote = tool.name.to_string();
        let description = tool.description.as_deref().unwrap_or_default().to_owned();
        let input_schema =
            serde_json::Value::Object(std::sync::Arc::unwrap_or_clone(tool.input_schema));
        let schema_text = input_schema.to_string();
        let annotations = tool
            .annotations
            .as_ref()
            .and_then(|a| serde_json::to_value(a).ok());
        self.bytes = self.bytes.saturating_add(
            remote.len()
                + description.len()
                + schema_text.len()
                + annotations.as_ref().map_or(0, |a| a.to_string().len()),
        );
        // The schema as it will be stored and read back at hydration, judged
        // by the same reading.
        let object = crate::schema::is_object_schema_text(&schema_text);
        let hidden = crate::output::hidden_in_names(&input_schema);
        let mapped = local_name(server, &remote).and_then(|local| {
            if !object {
                Err(SkipReason::SchemaNotAnObject)
            } else if let Some(at) = hidden {
                Err(SkipReason::HiddenInSchema(at))
            } else if self.names.insert(local.clone()) {
                Ok(local)
            } else {
                Err(SkipReason::Duplicate)
            }
        });
        match mapped {
            Ok(local_name) => Some(ImportedTool {
                remote_name: remote,
                local_name,
                description,
                input_schema,
                annotations,
            }),
            Err(reason) => {
                self.skipped.push(SkippedTool {
                    remote_name: shown_name(&remote),
                    reason,
                });
                None
            }
        }
    }
}

/// The most characters of a skipped name — or a repeated cursor — a report
/// keeps: a text too long is shown by its start and its length, so what a
/// report holds does not grow with what a server sends.
const SHOWN_NAME_CHARS: usize = 200;

/// A skipped remote name, escaped for display, cut after
/// [`SHOWN_NAME_CHARS`] characters.
fn shown_name(remote: &str) -> String {
    let visible = toolgate::visible::visible(remote);
    match visible.char_indices().nth(SHOWN_NAME_CHARS) {
        None => visible.into_owned(),
        Some((cut, _)) => format!("{}… ({} bytes in all)", &visible[..cut], remote.len()),
    }
}

/// A cursor's hash, by which the import tells a cursor it was sent before.
fn cursor_hash(cursor: &str) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::hash::DefaultHasher::new();
    cursor.hash(&mut hasher);
    hasher.finish()
}
