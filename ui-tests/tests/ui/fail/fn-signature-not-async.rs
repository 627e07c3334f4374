// A tool function must be `async`.
#![allow(dead_code)]
use toolgate::ToolOutput;

/// Reads a file.
#[toolgate::tool(effect = read_only)]
fn read_file(path: String) -> ToolOutput {
    ToolOutput::text(path)
}

fn main() {}
