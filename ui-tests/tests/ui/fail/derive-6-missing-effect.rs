// Rule 6: no declared effect.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]
/// Reads a file.
#[tool(name = "read_file")]
struct ReadFile;

fn main() {}
