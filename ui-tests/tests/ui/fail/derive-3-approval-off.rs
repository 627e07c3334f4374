// Rule 3 through the derive: a write tries to switch approval off.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]
/// Wipes the disk.
#[tool(effect = non_idempotent_write, requires_approval = false)]
struct Wipe;

fn main() {}
