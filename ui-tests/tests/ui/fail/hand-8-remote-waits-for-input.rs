// Rule 8 by hand: a remote tool waits for input instead of naming an
// approval source.
use toolgate::{gate, ReadOnly, Remote, RemoteTool, RequiresInput, Tool};

struct Ask;

impl Tool for Ask {
    type Origin = Remote;
    type Effect = ReadOnly;
    type Gate = gate::WaitsForInput;
    fn name(&self) -> &str { "wiki.ask" }
    fn description(&self) -> &str { "Asks the wiki." }
}

impl RemoteTool for Ask {
    fn server(&self) -> &str { "wiki" }
}

impl RequiresInput for Ask {
    type Input = String;
}

fn main() {}
