// The pins are sealed: an impl outside toolgate cannot make a gate satisfy a
// pin it does not.
#![allow(dead_code)]
use toolgate::{assert_gate, Tool};

/// Deletes a file below the workspace root.
#[derive(Tool)]
#[tool(effect = read_only)]
struct DeleteFile;

impl toolgate::assert::PinnedApproval<DeleteFile> for toolgate::gate::Runs {}

assert_gate!(DeleteFile: approval);

fn main() {}
