// The seal, rule 3: a crate makes toolgate's own marker gate a gate for a
// write that carries no marker, hoping to pick the gate without its bound.
use toolgate::{gate, Local, NonIdempotentWrite, Tool};

pub struct Wipe;

impl gate::Gate<Wipe> for gate::ApprovalByMarker {}

impl Tool for Wipe {
    type Origin = Local;
    type Effect = NonIdempotentWrite;
    type Gate = gate::ApprovalByMarker;
    fn name(&self) -> &str { "wipe" }
    fn description(&self) -> &str { "Wipes the disk." }
}

fn main() {}
