// Rule 6: three mistakes, three errors in one build.
#![allow(dead_code)]
use toolgate::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Motd { text: String }

#[derive(Tool)]

#[tool(effect = read_onyl, nmae = "x", requires_approval = yes)]
struct ReadFile;

fn main() {}
