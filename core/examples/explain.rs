//! Registers a handful of tools — builtins, a provider's remote tools, and a
//! hand-erased tool the boot check refuses — and prints each tool's gate.
//!
//! Run with `cargo run -p toolgate --example explain`.

use std::sync::Arc;

use schemars::{JsonSchema, Schema};
use serde::Deserialize;
use serde_json::Value;
use toolgate::{
    Execute, OperatorDeclaration, Registry, RemoteApproval, RemoteTool, Tool, ToolOutput,
    erased::{BoxFuture, DynTool, ErasedTool},
    gate::{Effect, Origin},
    registry::{ProviderError, Revision, ToolProvider},
};

#[derive(Deserialize, JsonSchema)]
struct PathArgs {
    /// A path below the workspace root.
    path: String,
}

/// Reads a file below the workspace root.
#[derive(Tool)]
#[tool(effect = read_only)]
struct ReadFile;

impl Execute for ReadFile {
    type Args = PathArgs;
    async fn execute(&self, args: PathArgs) -> ToolOutput {
        ToolOutput::text(format!("contents of {}", args.path))
    }
}

/// Writes a file below the workspace root, replacing it.
#[derive(Tool)]
#[tool(effect = idempotent_write)]
struct WriteFile;

impl Execute for WriteFile {
    type Args = PathArgs;
    async fn execute(&self, args: PathArgs) -> ToolOutput {
        ToolOutput::text(format!("wrote {}", args.path))
    }
}

/// Shows the deployment's secrets: changes nothing, but a human should see it asked.
#[derive(Tool)]
#[tool(effect = read_only, requires_approval)]
struct ShowSecrets;

impl Execute for ShowSecrets {
    type Args = serde_json::Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("(secrets)")
    }
}

#[derive(Deserialize, JsonSchema)]
struct Choice {
    /// The branch the user picks.
    branch: String,
}

/// Checks out the branch the user picks.
#[derive(Tool)]
#[tool(effect = read_only, input = Choice)]
struct PickBranch;

impl Execute for PickBranch {
    type Args = Choice;
    async fn execute(&self, args: Choice) -> ToolOutput {
        ToolOutput::text(format!("picked {}", args.branch))
    }
}

/// A remote tool as a provider would build it from a stored server record.
struct McpTool {
    server: &'static str,
    name: String,
    description: String,
    declaration: OperatorDeclaration,
}

impl Tool for McpTool {
    type Origin = toolgate::Remote;
    type Effect = toolgate::NonIdempotentWrite;
    type Gate = toolgate::gate::ApprovalByOperator;
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
}

impl RemoteTool for McpTool {
    fn server(&self) -> &str {
        self.server
    }
}

impl RemoteApproval for McpTool {
    fn operator_declaration(&self) -> OperatorDeclaration {
        self.declaration
    }
}

impl Execute for McpTool {
    type Args = serde_json::Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::error("this example has no server to call")
    }
}

struct Servers;

impl ToolProvider for Servers {
    fn name(&self) -> &str {
        "mcp"
    }
    fn provide(&self) -> BoxFuture<'_, Result<Vec<ErasedTool>, ProviderError>> {
        Box::pin(async {
            let tool = |server, remote: &str, declaration| {
                ErasedTool::new(McpTool {
                    server,
                    name: format!("{server}.{remote}"),
                    description: format!("via the external MCP server `{server}`: {remote}"),
                    declaration,
                })
            };
            Ok(vec![
                tool("gh", "create_issue", OperatorDeclaration::ApprovalRequired),
                tool("docs", "search", OperatorDeclaration::NoApproval),
                // A remote tool may not take a builtin's name: builtins win.
                ErasedTool::new(McpTool {
                    server: "docs",
                    name: "read_file".into(),
                    description: "via the external MCP server `docs`: read_file".into(),
                    declaration: OperatorDeclaration::NoApproval,
                }),
            ])
        })
    }
    fn revision(&self) -> BoxFuture<'_, Result<Revision, ProviderError>> {
        Box::pin(async { Ok(Revision::Fixed) })
    }
}

/// A tool erased by hand that declares a local write and input at once
/// (rule 1): it could never run.
struct Deadlock {
    schema: Schema,
}

impl DynTool for Deadlock {
    fn name(&self) -> &str {
        "send_message"
    }
    fn description(&self) -> &str {
        "Sends a message the user types."
    }
    fn parameters(&self) -> &Schema {
        &self.schema
    }
    fn origin(&self) -> Origin {
        Origin::Local
    }
    fn effect(&self) -> Effect {
        Effect::NonIdempotentWrite
    }
    fn input_schema(&self) -> Option<&Schema> {
        Some(&self.schema)
    }
    fn execute(&self, _: Value) -> BoxFuture<'_, ToolOutput> {
        Box::pin(async { ToolOutput::error("never runs") })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), toolgate::registry::BootError> {
    let refused = Registry::builder()
        .builtin(ReadFile)
        .erased(Arc::new(Deadlock {
            schema: schemars::schema_for!(String),
        }))
        .build();
    if let Err(error) = refused {
        println!("{error}\n");
    }

    let registry = Registry::builder()
        .builtin(ReadFile)
        .builtin(WriteFile)
        .builtin(ShowSecrets)
        .builtin(PickBranch)
        .provider(Servers)
        .build()?;

    let rows = registry.explain_all().await;
    let width = rows.iter().map(|e| e.name.len()).max().unwrap_or(4).max(4);
    println!(
        "{:<width$}  {:<6}  {:<20}  {:<8}  CAUSE",
        "TOOL", "ORIGIN", "EFFECT", "GATE"
    );
    for row in &rows {
        println!(
            "{:<width$}  {:<6}  {:<20}  {:<8}  {}",
            row.name,
            row.origin.as_str(),
            row.effect.as_str(),
            row.ruling.pause.as_str(),
            row.cause_text()
        );
    }
    for dropped in registry.catalogue().await.dropped() {
        println!(
            "\nleft out: `{}` from provider `{}`: {}",
            dropped.name, dropped.provider, dropped.reason
        );
    }
    Ok(())
}
