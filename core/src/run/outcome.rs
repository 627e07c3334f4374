//! Where a run or a turn stands when the driver returns, and why it
//! stopped.

use super::ModelError;
use crate::journal::{JournalError, TurnPlan};
use crate::pause::{AwaitingApproval, Suspended, WaitingForInput};
use crate::persist::SuspendedRun;
use crate::transcript::{RunState, ToolCall};

/// Where a run stands when the driver returns.
#[derive(Debug)]
pub enum Outcome {
    /// The model gave its final answer.
    Finished {
        /// The answer.
        answer: String,
        /// The run, answer included.
        state: RunState,
    },
    /// A turn waits for a human's verdict.
    AwaitingApproval(Suspended<AwaitingApproval>),
    /// A turn waits for a human's data.
    WaitingForInput(Suspended<WaitingForInput>),
    /// The iteration cap was reached before a final answer.
    LimitReached(RunState),
}

/// A run could not go on. The state is handed back: nothing is lost.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The run names no person as its requester; nothing started.
    #[error("the run's requester cannot be recorded: {0}")]
    InvalidRequester(crate::identity::IdentityError),
    /// The model failed.
    #[error("{error}")]
    Model {
        /// The failure.
        error: ModelError,
        /// The run as it was before the request.
        state: Box<RunState>,
    },
    /// A tool that requires input has a schema that cannot be used; a
    /// programming error in the tool, refused rather than persisted.
    #[error("tool `{tool}` requires input but its input schema cannot be used: {problem}")]
    UnusableInputSchema {
        /// The tool.
        tool: String,
        /// What is wrong.
        problem: &'static str,
        /// The run, with the turn not yet answered.
        state: Box<RunState>,
    },
    /// A host's own loop handed [`Agent::process_turn`](super::Agent::process_turn) a turn past the run's
    /// `max_iterations`; nothing of it ran.
    #[error(
        "the run has reached its cap of {limit} turns (`max_iterations`); nothing of this turn ran"
    )]
    IterationCap {
        /// The run's cap.
        limit: u32,
        /// The run, with the turn not answered.
        state: Box<RunState>,
    },
    /// The model's turn holds more calls than the run allows.
    #[error(
        "the model's turn holds {calls} calls, more than the {limit} this run allows (`max_calls_per_turn`); nothing of it ran"
    )]
    TurnTooLarge {
        /// How many calls the turn held.
        calls: usize,
        /// The run's cap.
        limit: u32,
        /// The run, with the turn not answered.
        state: Box<RunState>,
    },
    /// The execution journal could not record a step of a turn; nothing else
    /// of the turn ran (see [`journal`](crate::journal)). The host that picks
    /// the run up again reads what the journal has.
    #[error("{error}; the run stopped before anything else of the turn ran")]
    Journal {
        /// The failure.
        error: JournalError,
        /// The run, with the results the turn got before the failure.
        state: Box<RunState>,
    },
    /// The model kept asking for a call a human denied in this run (same
    /// tool, same arguments) more often than `denied_repeats` allows; each
    /// time it was answered with the denial. The run ends here.
    #[error(
        "the model asked {repeats} times again for a call of `{tool}` that was denied in this run; the run ends (`denied_repeats`)"
    )]
    DeniedCallRepeated {
        /// The tool.
        tool: String,
        /// How often it was asked for again.
        repeats: u32,
        /// The run, with the turn not answered.
        state: Box<RunState>,
    },
    /// A call reached its tool and its answer was lost
    /// ([`ToolOutput::answer_lost`](crate::ToolOutput::answer_lost)), and its
    /// effect is not safe to run again: its outcome is unknown. Nothing after
    /// it ran, and the model was told nothing. With a journal the host holds
    /// the run as after a crash (the call started and never ended) until an
    /// operator chooses; without one, `known` is what the journal would hold,
    /// for [`Agent::recover`](crate::Agent::recover) with the operator's
    /// choice in place of the unknown call's [`CallRecord::Started`](crate::journal::CallRecord::Started).
    #[error(
        "{reason}; call `{call}` ({tool}) is a non_idempotent_write, so its outcome is unknown and it is not run again unless an operator chooses `rerun` (or `skip`)"
    )]
    OutcomeUnknown {
        /// The call whose answer was lost.
        call: String,
        /// Its tool.
        tool: String,
        /// How the answer was lost, as the tool said.
        reason: String,
        /// The turn's plan and the call's place in it.
        unknown: Box<OutcomeUnknown>,
        /// What each call of the turn came to: ended ones with their
        /// results, the unknown one started, the rest not started.
        known: Vec<crate::journal::CallRecord>,
    },
    /// Two calls of a turn a host's own loop handed
    /// [`Agent::process_turn`](super::Agent::process_turn) share an id, so
    /// results and decisions could not be told apart. (A model's reply to
    /// [`Agent::start`](super::Agent::start) with such a turn is answered
    /// instead, for the model to correct: see [`Response`](super::Response).)
    #[error("the model's turn holds the call id `{id}` twice; nothing of it ran")]
    DuplicateCallId {
        /// The id.
        id: String,
        /// The run, with the turn not answered.
        state: Box<RunState>,
    },
}

/// Where a recovery stopped when it could not go on alone.
#[derive(Debug)]
pub struct OutcomeUnknown {
    /// The plan of the turn, unchanged.
    pub plan: TurnPlan,
    /// The call that started and never ended, whose effect makes running it
    /// again unsafe.
    pub index: usize,
}

impl OutcomeUnknown {
    /// The call whose outcome is unknown.
    pub fn call(&self) -> Option<&ToolCall> {
        self.plan.steps.get(self.index).map(|s| &s.call)
    }

    /// The turn of the plan as a store keeps a run that stopped on it: the
    /// run as it stood before the turn's first result, its calls as the
    /// paused turn, each reviewed as `registry` offers its tool now — what
    /// a host saves for a turn that ran with no host journaling it (a call
    /// the gate let run at once, whose answer was lost), beside the plan
    /// and what is known of each call, so that the run stands exactly as
    /// one whose host stopped mid-call: its outcome unknown until an
    /// operator chooses.
    ///
    /// It is never put to anyone for approval: its turn ran. Its digest
    /// names the turn, and a choice to run the call again or to skip it
    /// carries a digest bound to it ([`TurnPlan::rerun_digest`]).
    pub async fn suspension(&self, registry: &crate::registry::Registry) -> SuspendedRun {
        let run = self.plan.run.clone();
        let calls: Vec<ToolCall> = self.plan.steps.iter().map(|s| s.call.clone()).collect();
        let offered = registry.offer(run.options.allow.as_deref()).await;
        let review = super::review_of(&offered, &calls);
        SuspendedRun::AwaitingApproval(Suspended::awaiting_approval(run, calls, review))
    }
}

/// What [`Agent::recover`](crate::Agent::recover) ended in.
#[derive(Debug)]
pub enum Recovered {
    /// The turn was completed and the run driven on.
    Outcome(Outcome),
    /// A call started and never ended, and is not safe to run again: an
    /// operator chooses ([`CallRecord::Rerun`](crate::journal::CallRecord::Rerun) or [`CallRecord::Skip`](crate::journal::CallRecord::Skip)).
    /// Nothing ran.
    OutcomeUnknown(OutcomeUnknown),
}

/// What [`Agent::process_turn`](super::Agent::process_turn) did with a turn.
#[derive(Debug)]
pub enum TurnOutcome {
    /// Every call ran (or got an error result); the results are in the
    /// transcript.
    Ran(RunState),
    /// The turn waits for a human's verdict.
    AwaitingApproval(Suspended<AwaitingApproval>),
    /// The turn waits for a human's data.
    WaitingForInput(Suspended<WaitingForInput>),
}
