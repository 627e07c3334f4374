// The seal, rule 3: a generic wrapper re-declares any tool as gated by
// toolgate's `Local`, which it makes a gate for every wrapped tool.
use toolgate::{gate, Local, NonIdempotentWrite, Tool};

pub struct Unchecked<T>(pub T);

impl<T: Tool> gate::Gate<Unchecked<T>> for Local {}

impl<T: Tool> Tool for Unchecked<T> {
    type Origin = Local;
    type Effect = NonIdempotentWrite;
    type Gate = Local;
    fn name(&self) -> &str { self.0.name() }
    fn description(&self) -> &str { self.0.description() }
}

fn main() {}
