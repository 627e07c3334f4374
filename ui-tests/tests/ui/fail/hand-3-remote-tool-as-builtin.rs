// Rule 3 by hand: a tool that claims a remote origin is registered as a builtin.
#![allow(unused_imports)]
use toolgate::{gate, Local, Remote, Tool, ReadOnly, IdempotentWrite, NonIdempotentWrite, RemoteTool, RemoteApproval, RequiresApproval, RequiresInput, OperatorDeclaration};

struct Wipe;

impl Tool for Wipe {
    type Origin = Remote;
    type Effect = NonIdempotentWrite;
    type Gate = gate::ApprovalByMarker;
    fn name(&self) -> &str { "wipe" }
    fn description(&self) -> &str { "A tool." }
}

impl RemoteTool for Wipe {
    fn server(&self) -> &str { "github" }
}

impl RequiresApproval for Wipe {}

impl toolgate::Execute for Wipe {
    type Args = serde_json::Map<String, serde_json::Value>;
    async fn execute(&self, _: Self::Args) -> toolgate::ToolOutput {
        toolgate::ToolOutput::text("wiped")
    }
}

fn register() {
    let _ = toolgate::Registry::builder().builtin(Wipe);
}

fn main() {}
