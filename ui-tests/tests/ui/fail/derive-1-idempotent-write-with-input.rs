// Rule 1 through the derive, with the effect and input in separate attributes.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]
/// Sets the message of the day to what the user types.
#[tool(input = Motd)]
#[tool(effect = idempotent_write)]
struct SetMotd;

fn main() {}
