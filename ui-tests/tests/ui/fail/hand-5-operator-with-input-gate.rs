// Rule 5 by hand: the same, naming the input gate.
#![allow(unused_imports)]
use toolgate::{gate, Local, Remote, Tool, ReadOnly, IdempotentWrite, NonIdempotentWrite, RemoteTool, RemoteApproval, RequiresApproval, RequiresInput, OperatorDeclaration};

struct Issue;

impl Tool for Issue {
    type Origin = Remote;
    type Effect = NonIdempotentWrite;
    type Gate = gate::WaitsForInput;
    fn name(&self) -> &str { "issue" }
    fn description(&self) -> &str { "A tool." }
}

impl RemoteTool for Issue {
    fn server(&self) -> &str { "github" }
}

impl RemoteApproval for Issue {
    fn operator_declaration(&self) -> OperatorDeclaration {
        OperatorDeclaration::NoApproval
    }
}

impl RequiresInput for Issue {
    type Input = String;
}

fn main() {}
