// Rule 1 through the derive: a declared write that requires input.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]
/// Sets the message of the day to what the user types.
#[tool(effect = non_idempotent_write, input = Motd)]
struct SetMotd;

fn main() {}
