// Rule 3 by hand: a tool brings its own gate type, for every tool, to gate a
// write by an impl of its own.
use toolgate::gate::Gate;
use toolgate::{Local, NonIdempotentWrite, Tool};

enum Unchecked {}

impl<T> Gate<T> for Unchecked {}

struct Wipe;

impl Tool for Wipe {
    type Origin = Local;
    type Effect = NonIdempotentWrite;
    type Gate = Unchecked;
    fn name(&self) -> &str { "wipe" }
    fn description(&self) -> &str { "Wipes the disk." }
}

fn main() {}
