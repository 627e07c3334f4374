// A tool function pinned to `input` whose `input` key was replaced by the
// explicit marker.
#![allow(dead_code)]
use toolgate::{assert_gate, ToolOutput};

/// Picks a branch.
#[toolgate::tool(effect = read_only, requires_approval)] // was `input = String`
async fn pick_branch(name: String) -> ToolOutput {
    ToolOutput::text(name)
}

assert_gate!(PickBranch: input);

fn main() {}
