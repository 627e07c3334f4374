// `assert_gate!` takes one of its pins.
#![allow(dead_code)]
use toolgate::{assert_gate, Tool};

/// Reads a file.
#[derive(Tool)]
#[tool(effect = read_only)]
struct ReadFile;

assert_gate!(ReadFile: read_only);

fn main() {}
