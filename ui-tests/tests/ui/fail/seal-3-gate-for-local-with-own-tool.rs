// The seal, rule 3: a crate makes toolgate's origin `Local` a gate for its own
// write tool — the orphan rules allow `impl toolgate::Trait<MyType> for
// toolgate::Type` — so that the write would be gated by an impl it wrote.
use toolgate::{gate, Local, NonIdempotentWrite, Tool};

pub struct Wipe;

impl gate::Gate<Wipe> for Local {}

impl Tool for Wipe {
    type Origin = Local;
    type Effect = NonIdempotentWrite;
    type Gate = Local;
    fn name(&self) -> &str { "wipe" }
    fn description(&self) -> &str { "Wipes the disk." }
}

fn main() {}
