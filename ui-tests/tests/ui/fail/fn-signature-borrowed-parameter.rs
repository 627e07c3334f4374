// A tool function's parameters are owned: the arguments are deserialised
// from the model's JSON.
#![allow(dead_code)]
use toolgate::ToolOutput;

/// Reads a file.
#[toolgate::tool(effect = read_only)]
async fn read_file(path: &str) -> ToolOutput {
    ToolOutput::text(path)
}

fn main() {}
