// Rule 8 through the derive: a remote tool that names no approval source.
use toolgate::{RemoteTool, Tool};

/// Searches the wiki.
#[derive(Tool)]
#[tool(remote, effect = read_only)]
struct Search;

impl RemoteTool for Search {
    fn server(&self) -> &str { "wiki" }
}

fn main() {}
