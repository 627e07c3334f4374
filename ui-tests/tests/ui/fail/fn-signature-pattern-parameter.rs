// A tool function's parameters are plain names: each one is an argument the
// model fills in by its name.
#![allow(dead_code)]
use toolgate::ToolOutput;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Span { from: u32, to: u32 }

/// Reads lines of a file.
#[toolgate::tool(effect = read_only)]
async fn read_lines(path: String, Span { from, to }: Span, _: bool) -> ToolOutput {
    ToolOutput::text(format!("{path}:{from}-{to}"))
}

fn main() {}
