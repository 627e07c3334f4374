// Rule 3 by hand: a tool names the marker's gate without carrying the marker.
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

fn main() {}
