//! A held call's one tool: a client's tool as a remote tool of a source of
//! its own, whose running is the client's once approved.

use serde_json::{Map, Value, json};
use toolgate::erased::{BoxFuture, ErasedTool};
use toolgate::gate::ApprovalByOperator;
use toolgate::registry::{ProviderError, Revision, ToolProvider};
use toolgate::{
    DeclarationScope, Execute, NonIdempotentWrite, OperatorDeclaration, Remote, RemoteApproval,
    RemoteTool, RichOutput, Tool, ToolOutput,
};

use super::Client;

/// The key of the marker an approved call's run answers with.
pub(super) const MARKER: &str = "toolgate_hook";

/// Marks an approved client call's answer with the run it came from: the
/// one allow a run gives is taken by that run, never by whichever run the
/// call's key names by the time its answer is read.
pub(crate) fn stamp_run(answer: &mut rmcp::model::CallToolResult, run_id: &str) {
    if let Some(Value::Object(marker)) = answer
        .structured_content
        .as_mut()
        .and_then(|s| s.get_mut(MARKER))
    {
        marker.insert("run".to_owned(), Value::String(run_id.to_owned()));
    }
}

/// The one tool of a held call of a client's, as a source of tools.
pub(super) struct ClientSource {
    pub(super) client: Client,
    pub(super) tool: String,
}

impl ToolProvider for ClientSource {
    fn name(&self) -> &str {
        self.client.name()
    }

    fn provide(&self) -> BoxFuture<'_, Result<Vec<ErasedTool>, ProviderError>> {
        Box::pin(async move {
            Ok(vec![ErasedTool::new(ClientTool {
                client: self.client,
                name: self.tool.clone(),
            })])
        })
    }

    fn revision(&self) -> BoxFuture<'_, Result<Revision, ProviderError>> {
        Box::pin(async move { Ok(Revision::Fixed) })
    }
}

/// A client's tool: remote — its body is the client's — and requiring
/// approval: a tool the gate let through is never held, so every tool of
/// this source that is held requires it.
#[derive(Debug)]
struct ClientTool {
    client: Client,
    name: String,
}

impl Tool for ClientTool {
    type Origin = Remote;
    type Effect = NonIdempotentWrite;
    type Gate = ApprovalByOperator;

    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "a coding agent's own tool, run by the agent once approved"
    }
}

impl RemoteTool for ClientTool {
    fn server(&self) -> &str {
        self.client.name()
    }
}

impl RemoteApproval for ClientTool {
    fn operator_declaration(&self) -> OperatorDeclaration {
        OperatorDeclaration::ApprovalRequired
    }

    fn declaration_scope(&self) -> DeclarationScope {
        DeclarationScope::Tool
    }
}

impl Execute for ClientTool {
    type Args = Map<String, Value>;

    fn parameters(&self) -> schemars::Schema {
        schemars::Schema::from(Map::from_iter([("type".to_owned(), Value::from("object"))]))
    }

    /// Running an approved call of a client's is letting the client run
    /// it: the answer carries the arguments approved, which the hook
    /// compares with what the client asked.
    async fn execute(&self, args: Self::Args) -> ToolOutput {
        let structured = json!({ MARKER: { "arguments": Value::Object(args) } });
        ToolOutput::text(format!("approved: {} runs the call itself", self.client)).with_rich(Some(
            Box::new(RichOutput {
                blocks: Vec::new(),
                structured: Some(structured),
            }),
        ))
    }
}
