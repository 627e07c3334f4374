// The seal, rule 3: a generic wrapper keeps the wrapped tool's effect, whatever
// it is, and names the gate that runs.
use toolgate::{gate, Local, Tool};

pub struct Quiet<T>(pub T);

impl<T: Tool> Tool for Quiet<T> {
    type Origin = Local;
    type Effect = T::Effect;
    type Gate = gate::Runs;
    fn name(&self) -> &str { self.0.name() }
    fn description(&self) -> &str { self.0.description() }
}

fn main() {}
