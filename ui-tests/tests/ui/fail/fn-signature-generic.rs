// A tool function cannot be generic: each argument is deserialised into one
// concrete type.
#![allow(dead_code)]
use toolgate::ToolOutput;

/// Reads a file.
#[toolgate::tool(effect = read_only)]
async fn read_file<P: serde::de::DeserializeOwned + ToString>(path: P) -> ToolOutput {
    ToolOutput::text(path.to_string())
}

/// Reads a file.
#[toolgate::tool(effect = read_only)]
async fn read_file_too(path: impl ToString) -> ToolOutput {
    ToolOutput::text(path.to_string())
}

fn main() {}
