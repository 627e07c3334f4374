// Rule 6 through the attribute: no doc comment and no description.
#![allow(dead_code)]
use toolgate::ToolOutput;

#[toolgate::tool(effect = read_only)]
async fn read_file(path: String) -> ToolOutput {
    ToolOutput::text(path)
}

fn main() {}
