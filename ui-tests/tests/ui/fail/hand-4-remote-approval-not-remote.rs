// Rule 4 by hand: an operator declaration on a tool that is not a RemoteTool.
#![allow(unused_imports)]
use toolgate::{gate, Local, Remote, Tool, ReadOnly, IdempotentWrite, NonIdempotentWrite, RemoteTool, RemoteApproval, RequiresApproval, RequiresInput, OperatorDeclaration};

struct Search;

impl Tool for Search {
    type Origin = Local;
    type Effect = ReadOnly;
    type Gate = gate::Runs;
    fn name(&self) -> &str { "search" }
    fn description(&self) -> &str { "A tool." }
}

impl RemoteApproval for Search {
    fn operator_declaration(&self) -> OperatorDeclaration {
        OperatorDeclaration::NoApproval
    }
}

fn main() {}
