// A tool's gate drifts from its pin: its effect was changed to `read_only`,
// and `assert_gate!` stops the build.
#![allow(dead_code)]
use toolgate::{assert_gate, Tool};

/// Deletes a file below the workspace root.
#[derive(Tool)]
#[tool(effect = read_only)] // was `non_idempotent_write`
struct DeleteFile;

assert_gate!(DeleteFile: approval);

fn main() {}
