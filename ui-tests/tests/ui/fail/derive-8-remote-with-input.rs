// Rule 8 through the derive: a remote tool that waits for input names no
// approval source (and none could be added: rules 2 and 5).
use toolgate::{RemoteTool, Tool};

/// Asks the wiki.
#[derive(Tool)]
#[tool(remote, effect = read_only, input = String)]
struct Ask;

impl RemoteTool for Ask {
    fn server(&self) -> &str { "wiki" }
}

fn main() {}
