// The seal, rule 3: a crate adds its write to the tools `gate::Runs` admits.
use toolgate::{gate, Local, NonIdempotentWrite, Tool};

pub struct Wipe;

impl gate::Gate<Wipe> for gate::Runs {}

impl Tool for Wipe {
    type Origin = Local;
    type Effect = NonIdempotentWrite;
    type Gate = gate::Runs;
    fn name(&self) -> &str { "wipe" }
    fn description(&self) -> &str { "Wipes the disk." }
}

fn main() {}
