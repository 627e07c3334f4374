// A tool must be a struct or an enum.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]
/// Reads a file.
#[tool(effect = read_only)]
union ReadFile { a: u32 }

fn main() {}
