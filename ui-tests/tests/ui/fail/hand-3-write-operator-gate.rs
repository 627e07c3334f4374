// Rule 3 by hand: a local write reaches for an operator declaration to switch approval off.
#![allow(unused_imports)]
use toolgate::{gate, Local, Remote, Tool, ReadOnly, IdempotentWrite, NonIdempotentWrite, RemoteTool, RemoteApproval, RequiresApproval, RequiresInput, OperatorDeclaration};

struct Wipe;

impl Tool for Wipe {
    type Origin = Local;
    type Effect = NonIdempotentWrite;
    type Gate = gate::ApprovalByOperator;
    fn name(&self) -> &str { "wipe" }
    fn description(&self) -> &str { "A tool." }
}

impl RemoteApproval for Wipe {
    fn operator_declaration(&self) -> OperatorDeclaration {
        OperatorDeclaration::NoApproval
    }
}

fn main() {}
