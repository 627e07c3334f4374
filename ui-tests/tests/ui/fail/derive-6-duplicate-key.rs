// Rule 6: a key given twice.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]
/// Reads a file.
#[tool(effect = read_only)]
#[tool(effect = non_idempotent_write)]
struct ReadFile;

fn main() {}
