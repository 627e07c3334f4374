//! A turn's plan is made only by toolgate, for a turn its gate cleared or a
//! decision let run: a program cannot build one field by field and hand it
//! to `Agent::recover`.
use toolgate::journal::{Action, Step, TurnPlan};
use toolgate::run::{RunState, ToolCall};

fn forge(run: RunState, call: ToolCall, action: Action) {
    let step = Step { call, action };
    let built = TurnPlan {
        run,
        steps: vec![step],
    };
    drop(built);
}

fn main() {
    let _ = forge;
}
