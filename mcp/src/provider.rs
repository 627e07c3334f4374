//! Supplies remote tools to a registry from stored rows only: no network I/O.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use schemars::Schema;
use serde_json::Value;
use toolgate::{
    erased::{BoxFuture, ErasedTool},
    registry::{ProviderError, ToolProvider},
};
use toolgate_store::{Store, StoreError};

use crate::client::{Connection, Deadlines};
use crate::names::{SkipReason, local_name};
use crate::tool::McpTool;
use toolgate::OperatorDeclaration;

/// A stored catalogue row the provider did not turn into a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedRow {
    /// The server.
    pub server: String,
    /// The row's local name.
    pub local_name: String,
    /// Why.
    pub reason: SkipReason,
}

/// The tools of every usable server, built from the store.
pub struct McpProvider {
    store: Store,
    deadlines: Deadlines,
    connections: Mutex<HashMap<String, Arc<Connection>>>,
}

impl std::fmt::Debug for McpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpProvider").finish_non_exhaustive()
    }
}

impl McpProvider {
    /// A provider over `store`.
    pub fn new(store: Store, deadlines: Deadlines) -> Self {
        Self {
            store,
            deadlines,
            connections: Mutex::new(HashMap::new()),
        }
    }

    /// Builds the tools: for each usable server (enabled, with a known data
    /// class — checked again here), each live catalogue row whose schema is a
    /// JSON object and whose name still maps. Rows that do not are returned
    /// with the reason.
    pub async fn build_tools(&self) -> Result<(Vec<McpTool>, Vec<SkippedRow>), StoreError> {
        let servers = self.store.usable_servers().await?;
        let rows = self.store.live_tools().await?;
        let mut tools = Vec::with_capacity(rows.len());
        let mut skipped = Vec::new();
        let usable: HashMap<&str, (&toolgate_store::ServerRecord, Arc<Connection>)> = servers
            .iter()
            .filter(|s| s.is_usable())
            .map(|s| (s.id.as_str(), (s, self.connection(&s.id, &s.transport))))
            .collect();
        // Rows come by server, then local name: the tools keep that order.
        for row in rows {
            let Some((server, connection)) = usable.get(row.server_id.as_str()) else {
                continue;
            };
            let skip = |reason| SkippedRow {
                server: server.id.clone(),
                local_name: row.local_name.clone(),
                reason,
            };
            match local_name(&server.id, &row.remote_name) {
                Ok(name) if name == row.local_name => {}
                Ok(name) => {
                    skipped.push(skip(SkipReason::NameMismatch(name)));
                    continue;
                }
                Err(reason) => {
                    skipped.push(skip(reason));
                    continue;
                }
            }
            // MCP requires an object schema: `"type": "object"`.
            let schema = match serde_json::from_str::<Value>(&row.input_schema) {
                Ok(value @ Value::Object(_))
                    if crate::names::is_object_schema(value.get("type")) =>
                {
                    Schema::try_from(value).ok()
                }
                _ => None,
            };
            let Some(schema) = schema else {
                skipped.push(skip(SkipReason::SchemaNotAnObject));
                continue;
            };
            // A tool the operator has not accepted as it is now — new, or
            // changed since — requires approval even on a server whose
            // approval is off (tool pinning).
            let approval = if row.unpinned {
                OperatorDeclaration::ApprovalRequired
            } else {
                server.approval
            };
            if row.unpinned && server.approval == OperatorDeclaration::NoApproval {
                tracing::info!(server = %server.id, tool = %row.local_name, "quarantined: its definition is not the one an operator accepted");
            }
            tools.push(McpTool::new(
                row.local_name,
                row.remote_name,
                &row.description,
                schema,
                approval,
                Arc::clone(connection),
            ));
        }
        for row in &skipped {
            tracing::warn!(server = %row.server, tool = %row.local_name, reason = %row.reason, "stored tool skipped");
        }
        Ok((tools, skipped))
    }

    fn connection(&self, server: &str, transport: &toolgate_store::Transport) -> Arc<Connection> {
        let mut connections = match self.connections.lock() {
            Ok(connections) => connections,
            Err(poisoned) => poisoned.into_inner(),
        };
        Arc::clone(
            connections
                .entry(server.to_owned())
                .or_insert_with(|| Connection::new(server, transport.clone(), self.deadlines)),
        )
    }

    /// Closes every connection the provider's tools opened.
    pub async fn close(&self) {
        let connections: Vec<_> = match self.connections.lock() {
            Ok(connections) => connections.values().cloned().collect(),
            Err(poisoned) => poisoned.into_inner().values().cloned().collect(),
        };
        for connection in connections {
            connection.close().await;
        }
    }
}

impl ToolProvider for McpProvider {
    fn name(&self) -> &str {
        "mcp"
    }

    fn provide(&self) -> BoxFuture<'_, Result<Vec<ErasedTool>, ProviderError>> {
        Box::pin(async move {
            let (tools, _) = self
                .build_tools()
                .await
                .map_err(|e| ProviderError::with_source("cannot read the MCP servers", e))?;
            Ok(tools.into_iter().map(ErasedTool::new).collect())
        })
    }

    /// The store's operator revision: an operator who turns approval on for a
    /// server, disables it, lowers its data class or changes its catalogue is
    /// obeyed at the host's next turn.
    fn revision(&self) -> BoxFuture<'_, Result<Option<u64>, ProviderError>> {
        Box::pin(async move {
            self.store
                .operator_revision()
                .await
                .map(Some)
                .map_err(|e| ProviderError::with_source("cannot read the operator revision", e))
        })
    }
}
