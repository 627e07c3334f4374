// A tool function's future must be `Send`: a host spawns calls on its runtime.
#![allow(dead_code)]
use std::rc::Rc;
use toolgate::ToolOutput;

async fn yield_now() {}

/// Reads a file.
#[toolgate::tool(effect = read_only)]
async fn read_file(path: String) -> ToolOutput {
    let shared = Rc::new(path);
    yield_now().await;
    ToolOutput::text(shared.to_string())
}

fn main() {}
