//! A turn's plan as a sealed document: the one way a plan comes back from
//! storage.
//!
//! ```json
//! {"format":"toolgate/turn-plan","version":1,"checksum":"hmac-sha256:…","body":{"run":{…},"steps":[…]}}
//! ```
//!
//! The seal is taken over the lines `toolgate/turn-plan` and the version,
//! then the body's bytes exactly as they stand in the document — an HMAC-SHA-256
//! tag under the store's [`IntegrityKey`], or without a key a plain XXH3-128
//! checksum, which proves the document undamaged and nothing more.
//!
//! [`TurnPlan`] has no `Deserialize` of its own: [`Agent::recover`](crate::Agent::recover)
//! runs what a plan says, so a plan is read back only here, after its seal.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{seal_of, seal_problem};
use crate::effect::Effect;
use crate::integrity::IntegrityKey;
use crate::journal::{Action, CorruptPlan, JournalError, Step, TurnPlan};
use crate::tool::ToolOutput;
use crate::transcript::{RunState, ToolCall, first_duplicate_id};

const FORMAT: &str = "toolgate/turn-plan";
const VERSION: u64 = 1;

/// What the seal covers before the body.
fn header(version: u64) -> String {
    format!("{FORMAT}\n{version}\n")
}

fn seal(body: &str, key: Option<&IntegrityKey>) -> String {
    seal_of(&[header(VERSION).as_bytes(), body.as_bytes()], key)
}

#[derive(Serialize)]
struct DocumentOut<'a> {
    format: &'static str,
    version: u64,
    checksum: &'a str,
    body: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DocumentIn<'a> {
    format: String,
    version: u64,
    checksum: String,
    #[serde(borrow)]
    body: &'a RawValue,
}

/// The body as it is read: the crate's own mirror of [`TurnPlan`], so that
/// no public type of the crate can be deserialized into a plan.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BodyIn {
    run: RunState,
    steps: Vec<StepIn>,
    decided: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StepIn {
    call: ToolCall,
    action: ActionIn,
}

#[derive(Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
enum ActionIn {
    Execute { arguments: Value, effect: Effect },
    Answer { output: ToolOutput },
}

fn corrupt<T>(reason: impl Into<String>) -> Result<T, CorruptPlan> {
    Err(CorruptPlan::new(reason))
}

impl TurnPlan {
    /// The plan as a sealed document, tagged under `key` when one is given
    /// and with a plain checksum otherwise: what a [`Journal`](crate::journal::Journal)
    /// stores, and the only form [`TurnPlan::decode_with`] reads.
    pub fn encode_with(&self, key: Option<&IntegrityKey>) -> Result<String, JournalError> {
        let body = serde_json::to_string(self)
            .map_err(|e| JournalError::with_source("cannot encode the turn's plan", e))?;
        let checksum = seal(&body, key);
        let body = RawValue::from_string(body)
            .map_err(|e| JournalError::with_source("cannot encode the turn's plan", e))?;
        serde_json::to_string(&DocumentOut {
            format: FORMAT,
            version: VERSION,
            checksum: &checksum,
            body: &body,
        })
        .map_err(|e| JournalError::with_source("cannot encode the turn's plan", e))
    }

    /// Reads a plan that [`TurnPlan::encode_with`] wrote. With a key, the
    /// document must carry a tag that verifies under it; without one, a
    /// plain checksum that matches (which anyone can compute: it catches a
    /// damaged document, not a writer — see the [journal's threat
    /// model](crate::journal#what-a-program-can-make-a-recovery-run)).
    /// The plan must also be one the crate could have written: no call id
    /// twice, and no more calls than the run's cap on a turn.
    pub fn decode_with(text: &str, key: Option<&IntegrityKey>) -> Result<TurnPlan, CorruptPlan> {
        let document: DocumentIn<'_> = serde_json::from_str(text)
            .map_err(|e| CorruptPlan::with_source(format!("not a turn-plan document: {e}"), e))?;
        if document.format != FORMAT {
            return corrupt(format!(
                "the document's format is `{}`, not `{FORMAT}`",
                document.format
            ));
        }
        if document.version != VERSION {
            return corrupt(format!(
                "the document's version is {}, and this build reads version {VERSION}",
                document.version
            ));
        }
        let body = document.body.get();
        let header = header(document.version);
        let parts = [header.as_bytes(), body.as_bytes()];
        if let Some(problem) = seal_problem(&document.checksum, &parts, key) {
            return corrupt(problem);
        }
        let body: BodyIn = serde_json::from_str(body)
            .map_err(|e| CorruptPlan::with_source(format!("the plan's body: {e}"), e))?;
        let steps: Vec<Step> = body
            .steps
            .into_iter()
            .map(|step| Step {
                call: step.call,
                action: match step.action {
                    ActionIn::Execute { arguments, effect } => {
                        Action::Execute { arguments, effect }
                    }
                    ActionIn::Answer { output } => Action::Answer { output },
                },
            })
            .collect();
        let calls: Vec<ToolCall> = steps.iter().map(|step| step.call.clone()).collect();
        if let Some(id) = first_duplicate_id(&calls) {
            return corrupt(format!("the turn holds the call id `{id}` twice"));
        }
        if steps.len() > body.run.options.max_calls_per_turn as usize {
            return corrupt(format!(
                "the turn holds {} calls, more than the run's cap of {}",
                steps.len(),
                body.run.options.max_calls_per_turn
            ));
        }
        Ok(TurnPlan {
            run: body.run,
            steps,
            decided: body.decided,
        })
    }
}

/// The plain checksum of a plan document's `body`, for a test that writes
/// one by hand.
#[cfg(feature = "test-util")]
pub fn plan_checksum(body: &str) -> String {
    seal(body, None)
}
