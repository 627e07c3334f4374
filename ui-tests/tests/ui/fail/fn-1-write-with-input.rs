// Rule 1 through the attribute: a tool function that declares a write and
// requires input.
#![allow(dead_code)]
use toolgate::ToolOutput;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

/// Sets the message of the day to what the user types.
#[toolgate::tool(effect = non_idempotent_write, input = Motd)]
async fn set_motd(text: String) -> ToolOutput {
    ToolOutput::text(text)
}

fn main() {}
