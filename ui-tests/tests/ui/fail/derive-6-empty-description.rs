// Rule 6: an empty description.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]

#[tool(effect = read_only, description = "  ")]
struct ReadFile;

fn main() {}
