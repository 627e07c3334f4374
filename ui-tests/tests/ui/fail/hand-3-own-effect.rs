// Rule 3 by hand: a tool brings its own effect marker, to declare a write that
// the gates do not know about.
use toolgate::gate::{Effect, EffectMarker};

enum Harmless {}

impl EffectMarker for Harmless {
    const EFFECT: Effect = Effect::NonIdempotentWrite;
}

fn main() {}
