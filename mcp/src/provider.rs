//! Supplies remote tools to a registry from stored rows only: no network I/O.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use toolgate::{
    erased::{BoxFuture, ErasedTool},
    registry::{ProviderError, Revision, ToolProvider},
};
use toolgate_store::{Store, StoreError, ToolGate};

use crate::client::{Connection, Deadlines};
use crate::names::{SkipReason, check_local_name};
use crate::schema::is_object_schema_text;
use crate::tool::McpTool;

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
    /// JSON object, whose name still maps and which its operator did not
    /// block. Rows that do not are returned with the reason.
    pub async fn build_tools(&self) -> Result<(Vec<McpTool>, Vec<SkippedRow>), StoreError> {
        let servers = self.store.usable_servers().await?;
        let mut tools = Vec::new();
        let mut skipped = Vec::new();
        let mut blocked = Vec::new();
        let usable: HashMap<&str, (&toolgate_store::ServerRecord, Arc<Connection>)> = servers
            .iter()
            .filter(|s| s.is_usable())
            .map(|s| (s.id.as_str(), (s, self.connection(&s.id, &s.transport))))
            .collect();
        // Rows come by server, then local name: the tools keep that order.
        self.store.each_live_tool(|row| {
            let Some((server, connection)) = usable.get(row.server_id.as_str()) else {
                return;
            };
            let skip = |reason| SkippedRow {
                server: server.id.clone(),
                local_name: row.local_name.clone(),
                reason,
            };
            if let Err(reason) = check_local_name(&server.id, &row.remote_name, &row.local_name) {
                skipped.push(skip(reason));
                return;
            }
            // MCP requires an object schema: `"type": "object"`.
            if !is_object_schema_text(&row.input_schema) {
                skipped.push(skip(SkipReason::SchemaNotAnObject));
                return;
            }
            // The operator's declarations, the server's and the tool's own,
            // put together by the one rule (`LiveTool::gate`): a blocked
            // tool is not offered at all; a tool under "no approval" that
            // is not the definition an operator accepted — new, or changed
            // since — requires approval all the same (tool pinning). The
            // quarantine is a fact the gate judges, beside the declaration:
            // its cause reads true everywhere.
            let (approval, scope, quarantine) = match row.gate(server.approval) {
                ToolGate::Blocked => {
                    blocked.push(skip(SkipReason::Blocked));
                    return;
                }
                ToolGate::Offered {
                    approval,
                    scope,
                    quarantine,
                } => (approval, scope, quarantine),
            };
            if let Some(why) = quarantine {
                tracing::info!(server = %server.id, tool = %row.local_name, reason = why.as_str(), "quarantined");
            }
            tools.push(
                McpTool::checked(
                    row.local_name,
                    row.remote_name,
                    row.description,
                    row.input_schema,
                    approval,
                    Arc::clone(connection),
                )
                .with_quarantine(quarantine)
                .declared_for(scope),
            );
        })
        .await?;
        for row in &skipped {
            tracing::warn!(server = %row.server, tool = %row.local_name, reason = %row.reason, "stored tool skipped");
        }
        for row in &blocked {
            tracing::debug!(server = %row.server, tool = %row.local_name, "blocked by its operator: not offered");
        }
        skipped.extend(blocked);
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
    fn revision(&self) -> BoxFuture<'_, Result<Revision, ProviderError>> {
        Box::pin(async move {
            self.store
                .operator_revision()
                .await
                .map(Revision::At)
                .map_err(|e| ProviderError::with_source("cannot read the operator revision", e))
        })
    }
}
