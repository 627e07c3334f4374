// Rule 1 by hand: a local tool that declares a write (gated by its effect) also requires input.
#![allow(unused_imports)]
use toolgate::{gate, Local, Remote, Tool, ReadOnly, IdempotentWrite, NonIdempotentWrite, RemoteTool, RemoteApproval, RequiresApproval, RequiresInput, OperatorDeclaration};

struct SetMotd;

impl Tool for SetMotd {
    type Origin = Local;
    type Effect = IdempotentWrite;
    type Gate = gate::ApprovalByEffect;
    fn name(&self) -> &str { "set_motd" }
    fn description(&self) -> &str { "A tool." }
}

impl RequiresInput for SetMotd {
    type Input = String;
}

fn main() {}
