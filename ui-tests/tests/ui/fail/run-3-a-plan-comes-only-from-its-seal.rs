//! A turn's plan is what `Agent::recover` runs without asking anyone, so it
//! is made only by toolgate and read back only through its sealed codec
//! (`TurnPlan::decode_with`): it cannot be deserialized from JSON a program
//! wrote (`run-3-a-plan-cannot-be-built.rs`: nor built field by field), and
//! neither can its steps.
use toolgate::journal::{Action, Step, TurnPlan};

fn forge(written: serde_json::Value) {
    let plan: TurnPlan = serde_json::from_value(written.clone()).unwrap();
    let step: Step = serde_json::from_value(written.clone()).unwrap();
    let action: Action = serde_json::from_value(written).unwrap();
    drop((plan, step, action));
}

fn main() {
    let _ = forge;
}
