// Rule 5 through the derive: operator-declared approval with input.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]
/// Files an issue the user describes.
#[tool(remote, operator_approval, effect = non_idempotent_write, input = Motd)]
struct FileIssue;

impl toolgate::RemoteTool for FileIssue {
    fn server(&self) -> &str { "gh" }
}

impl toolgate::RemoteApproval for FileIssue {
    fn operator_declaration(&self) -> toolgate::OperatorDeclaration {
        toolgate::OperatorDeclaration::ApprovalRequired
    }
}

fn main() {}
