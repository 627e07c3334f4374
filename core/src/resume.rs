//! Resuming a suspended run (SPEC §6): the verdict or the data is checked,
//! recorded, and the run driven on with the host's agent. The suspended types
//! and their checks live in `suspend`; this is the only part that needs an
//! [`Agent`].

use std::fmt;

use crate::audit::{DecisionKind, DecisionRecord};
use crate::digest::TurnDigest;
use crate::erased::BoxFuture;
use crate::input;
use crate::journal::{Action, Step, TurnPlan};
use crate::pause::{
    Decision, InputSubmission, Refusal, Suspended, TakesInput, TakesVerdict, Verdict,
};
use crate::registry::Offered;
use crate::run::{Agent, Outcome, RunError, not_offered};
use crate::tool::ToolOutput;
use crate::transcript::ToolCall;

fn answer(output: ToolOutput) -> Action {
    Action::Answer { output }
}

/// A resume did not end in an [`Outcome`].
#[derive(Debug)]
#[non_exhaustive]
pub enum ResumeError<S> {
    /// The decision was refused; the run is handed back unchanged, still
    /// suspended: decide again.
    Refused {
        /// The run, as it was.
        run: Suspended<S>,
        /// Why.
        reason: Refusal,
    },
    /// The decision was taken and the turn ran, but the run could not go on.
    Run(RunError),
}

impl<S> fmt::Display for ResumeError<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResumeError::Refused { reason, .. } => write!(f, "refused: {reason}"),
            ResumeError::Run(error) => write!(f, "{error}"),
        }
    }
}

impl<S: fmt::Debug> std::error::Error for ResumeError<S> {}

/// True when any call that would run is a write. Remote tools always count:
/// their effect is assumed to be `non_idempotent_write`.
fn runs_a_write<'a>(offered: &Offered, calls: impl IntoIterator<Item = &'a ToolCall>) -> bool {
    calls
        .into_iter()
        .filter_map(|c| offered.get(&c.name))
        .any(|t| t.effect().is_write())
}

impl<S> Suspended<S> {
    fn refuse(self, reason: Refusal) -> ResumeError<S> {
        tracing::warn!(run = %self.state.run_id, %reason, "decision refused; the run stays suspended");
        ResumeError::Refused { run: self, reason }
    }

    /// Hands the record to the log. A failure refuses the decision when
    /// `blocks` says the turn would run a write; otherwise it is logged and the
    /// decision stands.
    async fn write_record(
        &self,
        agent: &Agent<'_>,
        record: &DecisionRecord,
        blocks: bool,
    ) -> Result<(), Refusal> {
        match agent.log.record(record).await {
            Ok(()) => Ok(()),
            Err(error) if blocks => Err(Refusal::NotRecorded(error)),
            Err(error) => {
                tracing::error!(run = %self.state.run_id, %error, verdict = record.verdict.as_str(), "decision not recorded; it stands because the turn runs no write");
                Ok(())
            }
        }
    }

    /// Approves or denies the whole pending turn, then drives the run on.
    ///
    /// Refused, with the run handed back unchanged, when the digest is missing
    /// or stale, when a four-eyes run is approved by its requester, or when the
    /// record cannot be written and the turn would run a write. On approval,
    /// each call runs unless its tool is no longer offered (the offer is
    /// recomputed now) or requires input (the approval path carries none). On
    /// denial, every call gets an error result saying so.
    pub fn decide<'a>(
        self,
        agent: &'a Agent<'a>,
        decision: Decision,
    ) -> BoxFuture<'a, Result<Outcome, ResumeError<S>>>
    where
        S: TakesVerdict,
    {
        Box::pin(self.decide_now(agent, decision))
    }

    async fn decide_now(
        self,
        agent: &Agent<'_>,
        decision: Decision,
    ) -> Result<Outcome, ResumeError<S>>
    where
        S: TakesVerdict,
    {
        let digest = match self.check_decision(&decision) {
            Ok(digest) => digest,
            Err(reason) => return Err(self.refuse(reason)),
        };
        let approve = decision.verdict == Verdict::Approve;
        let offered = agent
            .registry
            .offer(self.state.options.allow.as_deref())
            .await;
        let verdict = if approve {
            DecisionKind::Approved
        } else {
            DecisionKind::Denied
        };
        let record = self.record(&decision.decided_by, verdict, digest);
        let blocks = approve && runs_a_write(&offered, &self.pending);
        if let Err(reason) = self.write_record(agent, &record, blocks).await {
            return Err(self.refuse(reason));
        }
        tracing::info!(run = %self.state.run_id, by = %decision.decided_by, verdict = verdict.as_str(), "turn decided");
        let Suspended { state, pending, .. } = self;
        let steps = pending
            .into_iter()
            .map(|call| {
                let action = if approve {
                    match offered.get(&call.name) {
                        None => answer(not_offered(&offered, &call)),
                        Some(tool) if tool.requires_input() => answer(ToolOutput::error(format!(
                            "tool `{}` requires user input that was not provided; the call was not executed",
                            call.name
                        ))),
                        Some(tool) => Action::Execute {
                            arguments: call.arguments.clone(),
                            effect: tool.effect(),
                        },
                    }
                } else {
                    answer(ToolOutput::error(format!(
                        "the operator ({}) denied this call; it was not executed",
                        decision.decided_by
                    )))
                };
                Step { call, action }
            })
            .collect();
        let plan = TurnPlan { run: state, steps };
        let state = agent
            .run_plan(&offered, plan)
            .await
            .map_err(ResumeError::Run)?;
        agent.drive(state).await.map_err(ResumeError::Run)
    }

    /// Approves the pending turn: [`Suspended::decide`] with
    /// [`Verdict::Approve`].
    pub fn approve<'a>(
        self,
        agent: &'a Agent<'a>,
        decided_by: impl Into<String>,
        digest: Option<TurnDigest>,
    ) -> BoxFuture<'a, Result<Outcome, ResumeError<S>>>
    where
        S: TakesVerdict,
    {
        let decision = Decision {
            verdict: Verdict::Approve,
            digest,
            decided_by: decided_by.into(),
        };
        Box::pin(self.decide_now(agent, decision))
    }

    /// Denies the pending turn: [`Suspended::decide`] with
    /// [`Verdict::Deny`].
    pub fn deny<'a>(
        self,
        agent: &'a Agent<'a>,
        decided_by: impl Into<String>,
        digest: Option<TurnDigest>,
    ) -> BoxFuture<'a, Result<Outcome, ResumeError<S>>>
    where
        S: TakesVerdict,
    {
        let decision = Decision {
            verdict: Verdict::Deny,
            digest,
            decided_by: decided_by.into(),
        };
        Box::pin(self.decide_now(agent, decision))
    }
}

impl<S> Suspended<S> {
    /// Submits the user's data for the waiting call, then drives the run on.
    ///
    /// The data is validated against the full input schema *before* anything
    /// is consumed: invalid data hands the run back intact with every error.
    /// The waiting call runs with the user's values laid over the model's
    /// arguments, bounded to the schema's declared keys. Of its siblings, one
    /// that needs approval is refused (an input submission is never an
    /// approval), a second one that requires input is refused, a non-offered
    /// one is refused, and the rest run.
    pub fn submit_input<'a>(
        self,
        agent: &'a Agent<'a>,
        submission: InputSubmission,
    ) -> BoxFuture<'a, Result<Outcome, ResumeError<S>>>
    where
        S: TakesInput,
    {
        Box::pin(self.submit_now(agent, submission))
    }

    async fn submit_now(
        self,
        agent: &Agent<'_>,
        submission: InputSubmission,
    ) -> Result<Outcome, ResumeError<S>>
    where
        S: TakesInput,
    {
        let digest = match self.check_input(&submission) {
            Ok(digest) => digest,
            Err(reason) => return Err(self.refuse(reason)),
        };
        let pause = self.pause.input_pause();
        let offered = agent
            .registry
            .offer(self.state.options.allow.as_deref())
            .await;
        let runnable = self.pending.iter().enumerate().filter(|(i, c)| {
            offered.get(&c.name).is_some_and(|t| {
                !t.ruling().requires_approval() && (*i == pause.call_index || !t.requires_input())
            })
        });
        let blocks = runs_a_write(&offered, runnable.map(|(_, c)| c));
        let record = self.record(
            &submission.submitted_by,
            DecisionKind::InputSubmitted,
            digest,
        );
        if let Err(reason) = self.write_record(agent, &record, blocks).await {
            return Err(self.refuse(reason));
        }
        tracing::info!(run = %self.state.run_id, by = %submission.submitted_by, tool = %pause.tool, "input submitted");
        let schema = pause.schema.clone();
        let target = pause.call_index;
        let Suspended { state, pending, .. } = self;
        let steps = pending
            .into_iter()
            .enumerate()
            .map(|(index, call)| {
                let action = match offered.get(&call.name) {
                    None => answer(not_offered(&offered, &call)),
                    Some(tool) if tool.ruling().requires_approval() => answer(ToolOutput::error(format!(
                        "tool `{}` requires approval that was not given (an input submission is not an approval); the call was not executed",
                        call.name
                    ))),
                    Some(tool) if index == target => Action::Execute {
                        arguments: input::overlay(&schema, &call.arguments, &submission.data),
                        effect: tool.effect(),
                    },
                    Some(tool) if tool.requires_input() => answer(ToolOutput::error(format!(
                        "tool `{}` requires user input that was not provided (one call per turn can wait for input); the call was not executed",
                        call.name
                    ))),
                    Some(tool) => Action::Execute {
                        arguments: call.arguments.clone(),
                        effect: tool.effect(),
                    },
                };
                Step { call, action }
            })
            .collect();
        let plan = TurnPlan { run: state, steps };
        let state = agent
            .run_plan(&offered, plan)
            .await
            .map_err(ResumeError::Run)?;
        agent.drive(state).await.map_err(ResumeError::Run)
    }
}
