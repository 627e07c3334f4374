// Rule 3 by hand: a local tool that declares a write names the gate that runs without approval.
#![allow(unused_imports)]
use toolgate::{gate, Local, Remote, Tool, ReadOnly, IdempotentWrite, NonIdempotentWrite, RemoteTool, RemoteApproval, RequiresApproval, RequiresInput, OperatorDeclaration};

struct Wipe;

impl Tool for Wipe {
    type Origin = Local;
    type Effect = NonIdempotentWrite;
    type Gate = gate::Runs;
    fn name(&self) -> &str { "wipe" }
    fn description(&self) -> &str { "A tool." }
}

fn main() {}
