// A tool function is local: its body is the function. `remote` is refused, as
// rule 3 refuses a builtin that claims a remote origin to reach an operator's
// declaration.
#![allow(dead_code)]
use toolgate::ToolOutput;

/// Creates an issue.
#[toolgate::tool(remote, effect = non_idempotent_write)]
async fn create_issue(title: String) -> ToolOutput {
    ToolOutput::text(title)
}

fn main() {}
