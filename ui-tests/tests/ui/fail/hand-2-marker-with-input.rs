// Rule 2 by hand: the explicit approval marker and input on one read-only tool (approval gate).
#![allow(unused_imports)]
use toolgate::{gate, Local, Remote, Tool, ReadOnly, IdempotentWrite, NonIdempotentWrite, RemoteTool, RemoteApproval, RequiresApproval, RequiresInput, OperatorDeclaration};

struct Lookup;

impl Tool for Lookup {
    type Origin = Local;
    type Effect = ReadOnly;
    type Gate = gate::ApprovalByMarker;
    fn name(&self) -> &str { "lookup" }
    fn description(&self) -> &str { "A tool." }
}

impl RequiresApproval for Lookup {}

impl RequiresInput for Lookup {
    type Input = String;
}

fn main() {}
