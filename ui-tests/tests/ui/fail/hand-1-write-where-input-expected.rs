// Rule 1, as a caller meets it: a local write handed to code that takes only
// tools that wait for input.
use toolgate::{RequiresInput, Tool};

/// Sends a message.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct Send;

fn asks_the_user<T: RequiresInput>(_: &T) {}

fn main() {
    asks_the_user(&Send);
}
