// Rule 4, as a caller meets it: a local tool handed to code that takes only
// tools whose approval an operator declares.
use toolgate::{RemoteApproval, Tool};

/// Reads a file.
#[derive(Tool)]
#[tool(effect = read_only)]
struct ReadFile;

fn judged_by_operator<T: RemoteApproval>(_: &T) {}

fn main() {
    judged_by_operator(&ReadFile);
}
