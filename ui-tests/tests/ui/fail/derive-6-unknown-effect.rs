// Rule 6: an unknown effect name.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]
/// Reads a file.
#[tool(effect = readonly)]
struct ReadFile;

fn main() {}
