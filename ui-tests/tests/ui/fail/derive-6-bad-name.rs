// Rule 6: a name the model APIs refuse.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]
/// Reads a file.
#[tool(effect = read_only, name = "read file")]
struct ReadFile;

fn main() {}
