// Rule 6: no #[tool] attribute at all, so no effect.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]
/// Reads a file.

struct ReadFile;

fn main() {}
