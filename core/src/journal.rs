//! Crash-safe execution: what a turn will do is written down before any of it
//! runs, and each call is recorded as started before it runs and as ended
//! after, so a host that dies mid-turn can be followed by one that knows
//! exactly what ran.
//!
//! An [`Agent`](crate::Agent) given a [`Journal`] (with
//! [`Agent::with_journal`](crate::Agent::with_journal)) hands it, for every
//! turn it runs — the decided turn of a resume and every unpaused turn after
//! it:
//!
//! 1. the [`TurnPlan`]: the run as it stood, and for each call either the
//!    exact arguments it will run with (the model's, or with a user's input
//!    laid over them) and the tool's effect, or the result it gets without
//!    running (denied, not offered, waiting for input it did not get);
//! 2. for each call that runs, [`Journal::started`] before the tool is
//!    called and [`Journal::ended`] with its result after.
//!
//! A journal that cannot record stops the run before the next call: a call
//! whose start was not recorded never runs. The host that picks the run up
//! again hands [`Agent::recover`](crate::Agent::recover) the last plan and
//! what the journal knows of each call ([`CallRecord`]): ended calls keep
//! their recorded result and are not run again; a call that started and never
//! ended is run again only when its effect is safe to retry
//! ([`Effect::is_safe_to_retry`]) — a `non_idempotent_write`, which every
//! remote call counts as, makes the run [`Recovered::OutcomeUnknown`](crate::run::Recovered::OutcomeUnknown) until an
//! operator chooses to run it again or to skip it.
//!
//! A call whose answer was lost after it reached its tool
//! ([`ToolOutput::answer_lost`]) is left the same way: it started, and no end
//! is recorded. When it is not safe to run again the run stops with
//! [`RunError::OutcomeUnknown`](crate::run::RunError::OutcomeUnknown), and the
//! host that journals it holds it as after a crash until an operator chooses.
//!
//! # What a program can make a recovery run
//!
//! [`Agent::recover`](crate::Agent::recover) runs what a [`TurnPlan`] says,
//! without asking anyone: the plan is the record of a turn a decision let
//! run, or of one that needed none. So a plan comes only from the crate.
//!
//! - **Made by the crate alone.** A plan is built by the run driver, for a
//!   turn its gate cleared or a decision let run, and handed to the
//!   [`Journal`]. It has no public constructor and no `Deserialize`: the one
//!   way back from storage is [`TurnPlan::decode_with`], which reads only the
//!   document [`TurnPlan::encode_with`] wrote, after its seal.
//! - **A program without the integrity key** — one that can write the
//!   store's tables but does not hold the store's key — cannot make a plan
//!   that [`TurnPlan::decode_with`] reads under that key: the document is
//!   tagged with HMAC-SHA-256 over its format, its version and its body's
//!   bytes, and any change to any of them, a plan written without the key,
//!   or one tagged under another key, is refused as a [`CorruptPlan`]. It
//!   can delete a plan (the run then has nothing to recover, and nothing
//!   runs) but not change what one runs.
//! - **Without a key configured,** the seal is a plain checksum that anyone
//!   can compute: it catches a damaged document, not a writer. Whoever can
//!   write the store can then write a plan that runs. Configure a key
//!   wherever the store's writers are not all trusted.
//! - **A program that holds the key, or links this crate,** can run any
//!   tool it holds directly; the crate does not defend against its own
//!   host. What it guarantees the host is that no value the crate reads from
//!   outside — a model's answer, a stored document — makes a gated call run
//!   without a decision bound to what it runs.
//! - **A tool that changed since the turn was planned** does not run from
//!   the plan: a recovery checks each step it would run against the offer
//!   as it is now. A step whose tool's effect is no longer the one planned,
//!   or — in a turn no decision let run — whose tool now needs approval, is
//!   answered with an error the model reads, and not run: the model may ask
//!   again, and the gate then applies as it is.
//! - **What the journal knows of each call** ([`CallRecord`]) is the host's
//!   account, built from the rows it wrote through this trait and from its
//!   operators' choices — as a [`Decision`](crate::suspend::Decision) is
//!   the host's account of who approved. The crate applies its rules to it:
//!   a call runs again only when it is safe to retry, or when a choice to
//!   run it again stands ([`rerun_stands`]: as many distinct people as the
//!   run's approvals, never the requester under four eyes). Keeping those
//!   rows and choices honest is the store's part (a store tags them under
//!   the same key).

use serde::Serialize;
use serde_json::Value;

use crate::digest::{RerunDigest, TurnDigest, UnknownCall, rerun_digest};
use crate::effect::Effect;
use crate::erased::BoxFuture;
use crate::identity;
use crate::pause::Refusal;
use crate::tool::ToolOutput;
use crate::transcript::{RunOptions, RunState, ToolCall};

crate::error::message_error!(
    /// A journal could not record a step of a turn; the run stopped before
    /// anything else of it ran. Carries the journal's own error as its source
    /// when there is one.
    JournalError,
    "the execution journal failed: "
);

crate::error::message_error!(
    /// A stored turn plan could not be read: its seal does not hold, or it is
    /// not a plan this crate writes. The message says which; nothing of it
    /// runs.
    CorruptPlan,
    "unreadable turn plan: "
);

/// What a turn will do, written down before any of it runs.
///
/// Only this crate makes a plan — for a turn a decision let run, or one that
/// needed none — and hands it to the [`Journal`] before any of it runs. A
/// host stores it as [`TurnPlan::encode_with`] writes it, under its
/// integrity key, and reads it back only with [`TurnPlan::decode_with`] for
/// [`Agent::recover`](crate::Agent::recover), which runs what the plan says.
/// It cannot be built outside this crate, and has no `Deserialize`: see
/// [what a program can make a recovery run](self#what-a-program-can-make-a-recovery-run).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnPlan {
    pub(crate) run: RunState,
    pub(crate) steps: Vec<Step>,
    /// True when a person's decision let the turn run; false for a turn the
    /// gate let run with none. A recovery runs a step of an undecided plan
    /// only while its tool still needs no approval.
    pub(crate) decided: bool,
}

impl TurnPlan {
    /// The run as it stood before the turn's first result: its transcript
    /// ends with the turn's assistant message, and `iterations` is the turn's
    /// number.
    pub fn run(&self) -> &RunState {
        &self.run
    }

    /// One step per call of the turn, in the model's order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// True when a person's decision let the turn run; false for a turn
    /// that needed none.
    pub fn decided(&self) -> bool {
        self.decided
    }

    /// The turn's number in its run (`run.iterations`).
    pub fn turn(&self) -> u32 {
        self.run.iterations
    }

    /// The digest an operator is shown beside call `index` of this turn when
    /// its outcome is unknown after `attempt` starts, and carries back with
    /// a choice to run it again or to skip it: the run, the suspension whose
    /// decision let the turn run, the turn, the call, the arguments it runs
    /// with and the attempt ([`rerun_digest`]).
    /// `None` when the turn has no such call or the call does not run.
    pub fn rerun_digest(
        &self,
        suspension: &TurnDigest,
        index: usize,
        attempt: u32,
    ) -> Option<RerunDigest> {
        let step = self.steps.get(index)?;
        let Action::Execute { arguments, .. } = &step.action else {
            return None;
        };
        Some(rerun_digest(&UnknownCall {
            run_id: &self.run.run_id,
            suspension,
            turn: self.turn(),
            call_index: index,
            call_id: &step.call.id,
            tool: &step.call.name,
            arguments,
            attempt,
        }))
    }
}

/// How many distinct people must choose to run again a call whose outcome
/// is unknown: as many as must approve one of the run's turns. A rerun may
/// make a write happen a second time, so it is a decision at least as grave
/// as the approval that let it run first.
pub fn reruns_required(options: &RunOptions) -> u32 {
    options.approvals_required.max(1)
}

/// The people among `by` whose choice to run a call again counts: each
/// admitted by [`check_rerun`], each once (names compared as people).
pub fn rerun_choosers<'a>(run: &RunState, by: &'a [String]) -> Vec<&'a str> {
    let mut people: Vec<&str> = Vec::new();
    for name in by {
        if check_rerun(run, name).is_ok() && !people.iter().any(|p| identity::same_person(p, name))
        {
            people.push(name);
        }
    }
    people
}

/// Whether a choice to run a call again, made by `by`, stands: as many
/// distinct people as [`reruns_required`], each of whom [`check_rerun`]
/// admits ([`rerun_choosers`]). The one rule a store counts choices by and a
/// recovery obeys.
pub fn rerun_stands(run: &RunState, by: &[String]) -> bool {
    rerun_choosers(run, by).len()
        >= usize::try_from(reruns_required(&run.options)).unwrap_or(usize::MAX)
}

/// The rule for who may choose to run again a call whose outcome is unknown:
/// under four eyes, and on a run that needs several approvers, not the run's
/// requester (names compared as people, see [`identity`]).
/// A choice to skip the call cannot make anything run, so this rule does not
/// bind it.
///
/// `by` is the chooser's name as an [`Operator`](crate::identity::Operator)
/// gives it, or as a decision record keeps it.
pub fn check_rerun(run: &RunState, by: &str) -> Result<(), Refusal> {
    let guarded = run.options.four_eyes || reruns_required(&run.options) > 1;
    if guarded && identity::same_person(by, &run.requested_by) {
        return Err(Refusal::SelfRerun { who: by.to_owned() });
    }
    Ok(())
}

/// One call of a planned turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub(crate) call: ToolCall,
    pub(crate) action: Action,
}

impl Step {
    /// The call, as the model made it.
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// What happens to it.
    pub fn action(&self) -> &Action {
        &self.action
    }
}

/// What happens to one call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// The tool runs with these arguments.
    Execute {
        /// The arguments it runs with: the model's, or with the user's input
        /// laid over them.
        arguments: Value,
        /// The tool's effect when the turn was planned (every remote tool
        /// counts as `non_idempotent_write`): whether running it again after
        /// an unclear ending is safe.
        effect: Effect,
    },
    /// The call gets this result without running.
    Answer {
        /// The result.
        output: ToolOutput,
    },
}

/// What the journal knows of one planned call, for
/// [`Agent::recover`](crate::Agent::recover).
#[derive(Debug, Clone, PartialEq)]
pub enum CallRecord {
    /// Never started: it runs.
    NotStarted,
    /// Started and never ended: the host stopped while it ran.
    Started,
    /// Ended with this result: it is not run again.
    Ended(ToolOutput),
    /// Started, never ended, and operators chose to run it again. It runs
    /// again only when their choice stands ([`rerun_stands`]): otherwise it
    /// is read as [`CallRecord::Started`].
    Rerun {
        /// Who chose, one name each.
        by: Vec<String>,
    },
    /// Started, never ended, and an operator chose not to run it again.
    Skip {
        /// Who chose.
        by: String,
    },
}

/// The result a skipped call gets: the model reads that its outcome is
/// unknown.
pub(crate) fn skipped(call: &ToolCall, by: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "the call `{}` ({}) was started and never ended — the host stopped, or its answer was lost; its outcome is unknown, and {by} chose not to run it again",
        call.id, call.name
    ))
}

/// Records a turn's plan and each call's start and end, before and after it
/// runs. Implemented by a host's store; see the module documentation.
pub trait Journal: Send + Sync {
    /// The turn's plan, before any of it runs.
    fn planned<'a>(&'a self, plan: &'a TurnPlan) -> BoxFuture<'a, Result<(), JournalError>>;

    /// Call `index` of `plan` is about to run.
    fn started<'a>(
        &'a self,
        plan: &'a TurnPlan,
        index: usize,
    ) -> BoxFuture<'a, Result<(), JournalError>>;

    /// Call `index` of `plan` ran, with this result.
    fn ended<'a>(
        &'a self,
        plan: &'a TurnPlan,
        index: usize,
        output: &'a ToolOutput,
    ) -> BoxFuture<'a, Result<(), JournalError>>;
}
