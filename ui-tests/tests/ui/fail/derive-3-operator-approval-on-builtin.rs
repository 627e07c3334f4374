// Rule 3 (and 4) through the derive: a builtin write asks for an operator declaration.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]
/// Wipes the disk.
#[tool(effect = non_idempotent_write, operator_approval)]
struct Wipe;

fn main() {}
