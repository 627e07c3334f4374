// Rule 3 by hand: a write claims a remote origin without being a remote tool, to run unapproved.
#![allow(unused_imports)]
use toolgate::{gate, Local, Remote, Tool, ReadOnly, IdempotentWrite, NonIdempotentWrite, RemoteTool, RemoteApproval, RequiresApproval, RequiresInput, OperatorDeclaration};

struct Wipe;

impl Tool for Wipe {
    type Origin = Remote;
    type Effect = NonIdempotentWrite;
    type Gate = gate::Runs;
    fn name(&self) -> &str { "wipe" }
    fn description(&self) -> &str { "A tool." }
}

fn main() {}
