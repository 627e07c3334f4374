// Rule 3 by hand: a tool brings its own gate, to decide "runs" for a write.
use toolgate::gate::Gate;
use toolgate::{Cause, Decision, Local, NonIdempotentWrite, Pause, Tool};

enum Unchecked {}

impl<T> Gate<T> for Unchecked {
    fn decide(_: &T) -> Decision {
        Decision { pause: Pause::None, cause: Cause::LocalReadOnly }
    }
}

struct Wipe;

impl Tool for Wipe {
    type Origin = Local;
    type Effect = NonIdempotentWrite;
    type Gate = Unchecked;
    fn name(&self) -> &str { "wipe" }
    fn description(&self) -> &str { "Wipes the disk." }
}

fn main() {}
