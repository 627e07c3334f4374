// Rule 6 through the attribute: no declared effect.
#![allow(dead_code)]
use toolgate::ToolOutput;

/// Reads a file.
#[toolgate::tool(name = "read_file")]
async fn read(path: String) -> ToolOutput {
    ToolOutput::text(path)
}

fn main() {}
