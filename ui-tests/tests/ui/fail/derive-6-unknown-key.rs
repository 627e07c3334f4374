// Rule 6: an unknown #[tool] key.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]
/// Reads a file.
#[tool(effect = read_only, retries = 3)]
struct ReadFile;

fn main() {}
