// `assert_gate!` holds for every gate its pin admits.
use toolgate::{assert_gate, OperatorDeclaration, RemoteApproval, RemoteTool, Tool, ToolOutput};

/// Reads a file.
#[derive(Tool)]
#[tool(effect = read_only)]
struct ReadFile;

/// Shows a secret: read-only, but asks anyway.
#[derive(Tool)]
#[tool(effect = read_only, requires_approval)]
struct ShowSecret;

/// Picks a branch the user chooses.
#[derive(Tool)]
#[tool(effect = read_only, input = String)]
struct PickBranch;

/// Deletes a file.
#[toolgate::tool(effect = non_idempotent_write)]
async fn delete_file(path: String) -> ToolOutput {
    ToolOutput::text(path)
}

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

#[derive(Tool)]
#[tool(crate = toolgate, effect = idempotent_write)]
/// Stores a value.
struct Put<S: Send + Sync + 'static>(S);

assert_gate!(ReadFile: runs);
assert_gate!(ShowSecret: approval);
assert_gate!(ShowSecret: approval by marker);
assert_gate!(PickBranch: input);
assert_gate!(DeleteFile: approval);
assert_gate!(DeleteFile: approval by effect);
assert_gate!(CreateIssue: approval by operator);
assert_gate!(Put<()>: approval);

fn main() {
    fn inside_a_function() {
        toolgate::assert_gate!(ReadFile: runs);
    }
    inside_a_function();
}
