// Rule 2 through the derive: the explicit approval marker with input.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]
/// Looks up a record the user names.
#[tool(effect = read_only, requires_approval, input = Motd)]
struct Lookup;

fn main() {}
