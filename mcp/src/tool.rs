//! The remote tool type (SPEC §8).

use std::sync::Arc;

use schemars::Schema;
use serde_json::{Map, Value};
use toolgate::gate::ApprovalByOperator;
use toolgate::{
    Execute, NonIdempotentWrite, OperatorDeclaration, Remote, RemoteApproval, RemoteTool, Tool,
    ToolOutput,
};

use crate::client::Connection;

/// A tool of an MCP server, built from a stored catalogue row.
///
/// Its origin is remote and its effect `non_idempotent_write` whatever the
/// server says: the body cannot be read, so that is assumed for retries and
/// audit. Its approval is the operator's declaration for its server, carried
/// in from the server record it was built from; the turn scan reads this
/// field and looks nothing up.
pub struct McpTool {
    local_name: String,
    remote_name: String,
    description: String,
    parameters: Schema,
    declaration: OperatorDeclaration,
    connection: Arc<Connection>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("local_name", &self.local_name)
            .field("declaration", &self.declaration)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    /// A remote tool. `declaration` is the operator's, from the same server
    /// record the connection was built from.
    pub fn new(
        local_name: String,
        remote_name: String,
        server_description: &str,
        parameters: Schema,
        declaration: OperatorDeclaration,
        connection: Arc<Connection>,
    ) -> Self {
        // The model reads remote text as instruction: say where it comes from
        // before anything the server wrote.
        let description = format!(
            "via the external MCP server `{}`: {}",
            connection.server(),
            crate::output::sanitize(server_description)
        );
        Self {
            local_name,
            remote_name,
            description,
            parameters,
            declaration,
            connection,
        }
    }

    /// The server's name for the tool.
    pub fn remote_name(&self) -> &str {
        &self.remote_name
    }
}

impl Tool for McpTool {
    type Origin = Remote;
    type Effect = NonIdempotentWrite;
    type Gate = ApprovalByOperator;

    fn name(&self) -> &str {
        &self.local_name
    }

    fn description(&self) -> &str {
        &self.description
    }
}

impl RemoteTool for McpTool {
    fn server(&self) -> &str {
        self.connection.server()
    }
}

impl RemoteApproval for McpTool {
    fn operator_declaration(&self) -> OperatorDeclaration {
        self.declaration
    }
}

impl Execute for McpTool {
    type Args = Map<String, Value>;

    fn parameters(&self) -> Schema {
        self.parameters.clone()
    }

    async fn execute(&self, args: Self::Args) -> ToolOutput {
        self.connection.call(&self.remote_name, args).await
    }
}
