// Rule 1 by hand: a local tool that declares a write names the input gate instead of an approval gate.
#![allow(unused_imports)]
use toolgate::{gate, Local, Remote, Tool, ReadOnly, IdempotentWrite, NonIdempotentWrite, RemoteTool, RemoteApproval, RequiresApproval, RequiresInput, OperatorDeclaration};

struct SetMotd;

impl Tool for SetMotd {
    type Origin = Local;
    type Effect = NonIdempotentWrite;
    type Gate = gate::WaitsForInput;
    fn name(&self) -> &str { "set_motd" }
    fn description(&self) -> &str { "A tool." }
}

impl RequiresInput for SetMotd {
    type Input = String;
}

fn main() {}
