// Rule 8 by hand: a remote tool names the gate that runs without approval.
use toolgate::{gate, NonIdempotentWrite, Remote, RemoteTool, Tool};

struct Search;

impl Tool for Search {
    type Origin = Remote;
    type Effect = NonIdempotentWrite;
    type Gate = gate::Runs;
    fn name(&self) -> &str { "wiki.search" }
    fn description(&self) -> &str { "Searches the wiki." }
}

impl RemoteTool for Search {
    fn server(&self) -> &str { "wiki" }
}

fn main() {}
