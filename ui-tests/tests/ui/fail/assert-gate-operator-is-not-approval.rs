// An operator can declare a server's tools free of approval, so `approval`
// does not admit the operator's gate: pin `approval by operator`.
#![allow(dead_code)]
use toolgate::{assert_gate, OperatorDeclaration, RemoteApproval, RemoteTool, Tool};

#[derive(Tool)]
#[tool(remote, operator_approval, effect = non_idempotent_write, name = "gh.create_issue")]
/// via the external MCP server `gh`: creates an issue
struct CreateIssue(OperatorDeclaration);
impl RemoteTool for CreateIssue {
    fn server(&self) -> &str { "gh" }
}
impl RemoteApproval for CreateIssue {
    fn operator_declaration(&self) -> OperatorDeclaration { self.0 }
}

assert_gate!(CreateIssue: approval);

fn main() {}
