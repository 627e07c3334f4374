// Rule 3 through the derive: a write tries an invented opt-out key.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]
/// Wipes the disk.
#[tool(effect = non_idempotent_write, skip_approval)]
struct Wipe;

fn main() {}
