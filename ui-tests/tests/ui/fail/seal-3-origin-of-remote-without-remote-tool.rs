// The seal, rule 3: a crate declares its write remote without implementing
// `RemoteTool`, by implementing `OriginOf<Wipe>` for toolgate's `Remote`, and
// names the gate that runs.
use toolgate::{gate, NonIdempotentWrite, Remote, Tool};

pub struct Wipe;

impl gate::OriginOf<Wipe> for Remote {}

impl Tool for Wipe {
    type Origin = Remote;
    type Effect = NonIdempotentWrite;
    type Gate = gate::Runs;
    fn name(&self) -> &str { "wipe" }
    fn description(&self) -> &str { "Wipes the disk." }
}

fn main() {}
