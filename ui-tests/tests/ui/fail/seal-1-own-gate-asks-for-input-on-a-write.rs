// The seal, rule 1: a crate's own gate, for every tool, so that a write could
// pause for input instead of approval.
use toolgate::{gate, Local, NonIdempotentWrite, RequiresInput, Tool};

pub enum AskInstead {}

impl<T> gate::Gate<T> for AskInstead {}

pub struct Send;

impl Tool for Send {
    type Origin = Local;
    type Effect = NonIdempotentWrite;
    type Gate = AskInstead;
    fn name(&self) -> &str { "send" }
    fn description(&self) -> &str { "Sends a message." }
}

impl RequiresInput for Send {
    type Input = String;
}

fn main() {}
