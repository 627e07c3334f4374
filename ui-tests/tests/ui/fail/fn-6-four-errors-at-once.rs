// Rule 6 and the signature rules: four mistakes, four errors in one build.
#![allow(dead_code)]
use toolgate::ToolOutput;

/// Reads a file.
#[toolgate::tool(effect = read_onyl, nmae = "x")]
fn read_file<P: Into<String>>(path: P) -> ToolOutput {
    ToolOutput::text(path.into())
}

fn main() {}
