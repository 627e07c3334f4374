// Rule 6: a name taken from the type's name is held to the tool-name rule as
// well; the registry would refuse it at boot.
#![allow(dead_code)]
use toolgate::Tool;

/// Reads a file.
#[derive(Tool)]
#[tool(effect = read_only)]
struct DateiGröße;

fn main() {}
