//! A permit to run a call is made only by the gate: neither a permit nor a
//! cleared turn can be built outside toolgate.
use toolgate::run::{Cleared, Permit, ToolCall};
use toolgate::registry::Offered;

fn forge<'a>(offered: &'a Offered, call: &'a ToolCall) {
    let permit = Permit {
        tool: offered.get("wipe").unwrap(),
        call,
    };
    let cleared = Cleared {
        offered,
        calls: std::slice::from_ref(call),
    };
    drop((permit, cleared));
}

fn main() {
    let _ = forge;
}
