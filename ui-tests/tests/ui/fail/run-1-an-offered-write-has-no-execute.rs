//! An offered tool has no public way to run: a host's own loop cannot run a
//! write the gate did not clear. Calls run by the permits of a turn the scan
//! cleared (`run::scan_turn`), or through an `Agent` and a decision.
use toolgate::{Execute, Registry, Tool, ToolOutput};

/// Wipes the disk.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct Wipe;

impl Execute for Wipe {
    type Args = serde_json::Map<String, serde_json::Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("wiped")
    }
}

async fn host_loop(registry: &Registry) -> ToolOutput {
    let offered = registry.offer_all().await;
    let tool = offered.get("wipe").unwrap();
    tool.execute(serde_json::json!({})).await
}

fn main() {
    let _ = host_loop;
}
