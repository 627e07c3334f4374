// A tool function returns a `ToolOutput`, or a type that converts into one.
#![allow(dead_code)]

/// Reads a file.
#[toolgate::tool(effect = read_only)]
async fn read_file(path: String) -> String {
    path
}

fn main() {}
