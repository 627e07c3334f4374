// A tool function cannot take `self`: the attribute makes a tool type of its
// own from a free function.
#![allow(dead_code)]
use toolgate::ToolOutput;

struct Files;

impl Files {
    /// Reads a file.
    #[toolgate::tool(effect = read_only)]
    async fn read_file(&self, path: String) -> ToolOutput {
        ToolOutput::text(path)
    }
}

fn main() {}
