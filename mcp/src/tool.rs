//! The remote tool type.

use std::sync::{Arc, OnceLock};

use schemars::Schema;
use serde_json::{Map, Value};
use toolgate::gate::{ApprovalByOperator, Quarantine};
use toolgate::{
    DeclarationScope, Execute, NonIdempotentWrite, OperatorDeclaration, Remote, RemoteApproval,
    RemoteTool, Tool, ToolOutput,
};

use crate::client::Connection;
use crate::names::SkipReason;

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
    server_description: String,
    description: OnceLock<String>,
    input_schema: String,
    declaration: OperatorDeclaration,
    scope: DeclarationScope,
    quarantine: Option<Quarantine>,
    connection: Arc<Connection>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("local_name", &self.local_name)
            .field("declaration", &self.declaration)
            .field("quarantine", &self.quarantine)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    /// A remote tool. `declaration` is the operator's, from the same server
    /// record the connection was built from; `input_schema` is the server's
    /// schema as JSON text.
    ///
    /// A schema that does not read as a JSON object of `"type": "object"`
    /// (MCP requires one) is refused with [`SkipReason::SchemaNotAnObject`].
    /// An accepted text is kept as it is and read into the tool's
    /// [`parameters`](Execute::parameters) when they are first asked for,
    /// and the description the model reads is written when it is first
    /// asked for: a catalogue of many tools is built without building what
    /// only the tools a model is offered need.
    pub fn new(
        local_name: String,
        remote_name: String,
        server_description: String,
        input_schema: String,
        declaration: OperatorDeclaration,
        connection: Arc<Connection>,
    ) -> Result<Self, SkipReason> {
        if !crate::schema::is_object_schema_text(&input_schema) {
            return Err(SkipReason::SchemaNotAnObject);
        }
        Ok(Self::checked(
            local_name,
            remote_name,
            server_description,
            input_schema,
            declaration,
            connection,
        ))
    }

    /// [`McpTool::new`] for a schema text the caller has just checked with
    /// [`is_object_schema_text`](crate::schema::is_object_schema_text).
    pub(crate) fn checked(
        local_name: String,
        remote_name: String,
        server_description: String,
        input_schema: String,
        declaration: OperatorDeclaration,
        connection: Arc<Connection>,
    ) -> Self {
        Self {
            local_name,
            remote_name,
            server_description,
            description: OnceLock::new(),
            input_schema,
            declaration,
            scope: DeclarationScope::Server,
            quarantine: None,
            connection,
        }
    }

    /// The tool, quarantined (or not): on a server whose approval is off, a
    /// quarantined tool requires approval all the same, and says why.
    #[must_use]
    pub fn with_quarantine(self, quarantine: Option<Quarantine>) -> Self {
        Self { quarantine, ..self }
    }

    /// The tool, its declaration said to be `scope`'s: the server's (the
    /// default), or the tool's own.
    #[must_use]
    pub fn declared_for(self, scope: DeclarationScope) -> Self {
        Self { scope, ..self }
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
        self.description.get_or_init(|| {
            // The model reads remote text as instruction: say where it comes
            // from before anything the server wrote.
            format!(
                "via the external MCP server `{}`: {}",
                self.connection.server(),
                crate::output::remote_text(&self.server_description)
            )
        })
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

    fn quarantine(&self) -> Option<Quarantine> {
        self.quarantine
    }

    fn declaration_scope(&self) -> DeclarationScope {
        self.scope
    }
}

impl Execute for McpTool {
    type Args = Map<String, Value>;

    fn parameters(&self) -> Schema {
        // The text read as an object when the tool was built, checked with
        // a reading that accepts exactly what this one accepts.
        // Its titles and descriptions are remote text the model reads, cleaned
        // as the description is.
        if let Ok(Ok(schema)) = serde_json::from_str::<Value>(&self.input_schema).map(|mut v| {
            crate::output::clean_schema(&mut v);
            Schema::try_from(v)
        }) {
            return schema;
        }
        tracing::error!(tool = %self.local_name, "the input schema does not read as an object; the tool is offered with no parameters");
        Schema::from(Map::from_iter([("type".to_owned(), Value::from("object"))]))
    }

    async fn execute(&self, args: Self::Args) -> ToolOutput {
        self.connection.call(&self.remote_name, args).await
    }
}
