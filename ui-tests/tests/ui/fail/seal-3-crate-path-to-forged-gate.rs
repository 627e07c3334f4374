// The seal, rule 3: `#[tool(crate = path)]` points the derive at a module of
// the crate's own that re-exports toolgate but puts `Local` where the write's
// gate should be, and makes `Local` a gate for the tool.
mod fake {
    pub use toolgate::*;
    pub mod gate {
        pub use toolgate::Local as ApprovalByEffect;
    }
}

impl toolgate::gate::Gate<Wipe> for toolgate::Local {}

/// Wipes the disk.
#[derive(toolgate::Tool)]
#[tool(crate = fake, effect = non_idempotent_write)]
pub struct Wipe;

fn main() {}
