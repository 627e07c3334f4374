// Rule 6: no doc comment and no description.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]

#[tool(effect = read_only)]
struct ReadFile;

fn main() {}
