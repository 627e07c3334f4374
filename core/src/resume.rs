//! Resuming a suspended run: the verdict or the data is checked,
//! recorded, and the run driven on with the host's agent. The suspended types
//! and their checks live in `suspend`; this is the only part that needs an
//! [`Agent`].

use std::fmt;

use crate::audit::CallVerdict;
use crate::audit::{DecisionKind, DecisionRecord};
use crate::digest::TurnDigest;
use crate::digest::{denial_key, tool_definition_digest};
use crate::erased::BoxFuture;
use crate::input;
use crate::journal::{Action, Step, TurnPlan};
use crate::pause::{
    CallDecisions, Decision, InputSubmission, Refusal, Suspended, TakesInput, TakesVerdict, Verdict,
};
use crate::registry::Offered;
use crate::run::{Agent, Outcome, RunError, not_offered};
use crate::tool::ToolOutput;
use crate::transcript::DeniedCall;
use crate::transcript::ToolCall;

fn answer(output: ToolOutput) -> Action {
    Action::Answer { output }
}

/// Runs a decided turn's plan — journaled when the agent has a journal —
/// then drives the run on.
async fn run_decided<S>(
    agent: &Agent<'_>,
    offered: &Offered,
    state: crate::transcript::RunState,
    steps: Vec<Step>,
) -> Result<Outcome, ResumeError<S>> {
    let plan = TurnPlan {
        run: state,
        steps,
        decided: true,
    };
    let state = agent
        .run_plan(offered, plan)
        .await
        .map_err(ResumeError::Run)?;
    agent.drive(state).await.map_err(ResumeError::Run)
}

/// What the model reads for a denied call.
pub(crate) fn denied_text(by: &str, reason: &str) -> String {
    if reason.trim().is_empty() {
        format!("the call was denied by {by}; it was not executed")
    } else {
        format!("the call was denied by {by}: {reason}; it was not executed")
    }
}

/// The step for an approved call: it runs with `arguments`, unless its tool
/// is no longer offered or waits for input the approval does not carry.
fn runnable(offered: &Offered, call: &ToolCall, arguments: &serde_json::Value) -> Action {
    match offered.get(&call.name) {
        None => answer(not_offered(offered, call)),
        Some(tool) if tool.requires_input() => answer(ToolOutput::error(format!(
            "tool `{}` requires user input that was not provided; the call was not executed",
            call.name
        ))),
        Some(tool) => Action::Execute {
            arguments: arguments.clone(),
            effect: tool.effect(),
        },
    }
}

/// A resume did not end in an [`Outcome`].
///
/// A refused decision hands the run back, unchanged and still waiting:
/// decide it again, or keep it ([`ResumeError::into_run`]). Applying `?` to a
/// resume's result drops that run with the error — the pause is then lost
/// unless it was stored before the decision was taken.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "a refusal hands the whole run back by value, as it was; it is the rare path"
)]
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

impl<S> ResumeError<S> {
    /// The run a refused decision handed back, still waiting for a decision;
    /// `None` when the decision was taken and the run stopped afterwards
    /// ([`ResumeError::Run`], whose error carries the run's state).
    pub fn into_run(self) -> Option<Suspended<S>> {
        match self {
            ResumeError::Refused { run, .. } => Some(run),
            ResumeError::Run(_) => None,
        }
    }
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
    /// An approval runs only when as many distinct people approved as the
    /// run needs: the decider and those before (with four eyes, none of them
    /// the requester — each was checked as they decided).
    fn check_approvers(&self, decision: &CallDecisions) -> Result<(), Refusal> {
        let need = self.state.options.approvals_required.max(1);
        if need == 1 || !decision.approves_any() {
            return Ok(());
        }
        let mut people: Vec<&str> = Vec::new();
        for name in std::iter::once(&decision.decided_by).chain(&decision.also_approved_by) {
            let own_run = crate::identity::same_person(name, &self.state.requested_by);
            if (own_run && self.state.options.four_eyes)
                || people.iter().any(|p| crate::identity::same_person(p, name))
            {
                continue;
            }
            people.push(name);
        }
        let have = u32::try_from(people.len()).unwrap_or(u32::MAX);
        if have < need {
            return Err(Refusal::TooFewApprovals { have, need });
        }
        Ok(())
    }

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

    /// Approves or denies the whole pending turn, then drives the run on:
    /// [`Suspended::decide_calls`] with the same verdict for every call
    /// ([`Decision::per_call`]).
    pub fn decide<'a>(
        self,
        agent: &'a Agent<'a>,
        decision: Decision,
    ) -> BoxFuture<'a, Result<Outcome, ResumeError<S>>>
    where
        S: TakesVerdict,
    {
        let decisions = decision.into_calls(&self.pending);
        Box::pin(self.decide_now(agent, decisions))
    }

    /// Decides the pending turn call by call — keyed by call id — then drives
    /// the run on.
    ///
    /// Refused, with the run handed back unchanged, when
    /// [`Suspended::check_calls`] refuses (digest, coverage, edits, four
    /// eyes, expiry), when the record cannot be written and the turn would
    /// run a write, or when the receipt no longer holds: a tool to run is not
    /// the one the reviewer saw ([`Refusal::ToolChanged`]), or a call shown as
    /// needing no approval needs it now ([`Refusal::PolicyTightened`]) — then
    /// the turn must be paused and reviewed afresh
    /// ([`Suspended::reviewed_again`]).
    ///
    /// Otherwise an approved call runs with the model's arguments, an edited
    /// one with the edited arguments, a call without a verdict runs as the
    /// model made it (it needed no approval), and a denied call gets an
    /// error result with the reason — and is remembered, so the model asking
    /// for it again is answered with the denial ([`RunOptions::denied_repeats`](crate::run::RunOptions::denied_repeats)).
    /// Calls whose tool is no longer offered, or requires input, do not run.
    pub fn decide_calls<'a>(
        self,
        agent: &'a Agent<'a>,
        decisions: CallDecisions,
    ) -> BoxFuture<'a, Result<Outcome, ResumeError<S>>>
    where
        S: TakesVerdict,
    {
        Box::pin(self.decide_now(agent, decisions))
    }

    async fn decide_now(
        self,
        agent: &Agent<'_>,
        decision: CallDecisions,
    ) -> Result<Outcome, ResumeError<S>>
    where
        S: TakesVerdict,
    {
        let digest = match self.check_calls(&decision) {
            Ok(digest) => digest,
            Err(reason) => return Err(self.refuse(reason)),
        };
        if let Err(reason) = self.check_approvers(&decision) {
            return Err(self.refuse(reason));
        }
        let offered = agent
            .registry
            .offer(self.state.options.allow.as_deref())
            .await;
        if let Err(reason) = self.check_receipt(&offered, &decision) {
            return Err(self.refuse(reason));
        }
        let approve = decision.approves_any();
        let verdict = if approve {
            DecisionKind::Approved
        } else {
            DecisionKind::Denied
        };
        let record = self.record(&decision.decided_by, verdict, digest, Some(&decision));
        let runs = self
            .pending
            .iter()
            .filter(|c| decision.calls.get(&c.id).is_none_or(CallVerdict::approves));
        let blocks = approve && runs_a_write(&offered, runs);
        if let Err(reason) = self.write_record(agent, &record, blocks).await {
            return Err(self.refuse(reason));
        }
        tracing::info!(run = %self.state.run_id, by = %decision.decided_by, verdict = verdict.as_str(), "turn decided");
        let Suspended {
            mut state, pending, ..
        } = self;
        let by = record.decided_by;
        let steps = pending
            .into_iter()
            .map(|call| {
                let action = match decision.calls.get(&call.id) {
                    Some(CallVerdict::Deny { reason }) => {
                        let parameters = offered.get(&call.name).map(|t| t.parameters().as_value());
                        state.denied.push(DeniedCall {
                            tool: call.name.clone(),
                            arguments: denial_key(&call.arguments, parameters),
                            by: by.clone(),
                            reason: reason.clone(),
                            repeats: 0,
                        });
                        answer(ToolOutput::error(denied_text(&by, reason)))
                    }
                    Some(CallVerdict::Edit { arguments }) => runnable(&offered, &call, arguments),
                    Some(CallVerdict::Approve) | None => runnable(&offered, &call, &call.arguments),
                };
                Step { call, action }
            })
            .collect();
        run_decided(agent, &offered, state, steps).await
    }

    /// The receipt: every call that would run runs as reviewed — its tool's
    /// definition (name, description, schema, effect) is the one the reviewer
    /// saw, it was offered then, and a call shown as needing no approval
    /// still needs none. Turns paused before reviews were kept carry no
    /// receipt.
    fn check_receipt(&self, offered: &Offered, decision: &CallDecisions) -> Result<(), Refusal> {
        if self.review.tools.is_empty() {
            return Ok(());
        }
        for (call, reviewed) in self.pending.iter().zip(&self.review.tools) {
            let verdict = decision.calls.get(&call.id);
            if verdict.is_some_and(|v| !v.approves()) {
                continue;
            }
            let Some(now) = offered.gated(&call.name) else {
                // Not offered now: it gets an error result and does not run.
                continue;
            };
            let changed = || Refusal::ToolChanged {
                call: call.id.clone(),
                tool: call.name.clone(),
            };
            let Some(reviewed) = reviewed else {
                // Offered now, not when the reviewer looked.
                return Err(changed());
            };
            let definition = tool_definition_digest(
                now.tool.name(),
                now.tool.description(),
                now.tool.parameters().as_value(),
                now.tool.effect(),
            );
            if definition != reviewed.definition_digest() {
                return Err(changed());
            }
            // The reviewer was shown this call as running without approval;
            // it needs approval now. Whatever the verdict — a whole-turn
            // approval gives one to every call — the turn is reviewed again
            // as it is now.
            if !reviewed.needs_approval && now.requires_approval {
                return Err(Refusal::PolicyTightened {
                    call: call.id.clone(),
                    tool: call.name.clone(),
                });
            }
        }
        Ok(())
    }

    /// Approves the pending turn: [`Suspended::decide`] with
    /// [`Verdict::Approve`].
    pub fn approve<'a>(
        self,
        agent: &'a Agent<'a>,
        decided_by: impl Into<String>,
        digest: TurnDigest,
    ) -> BoxFuture<'a, Result<Outcome, ResumeError<S>>>
    where
        S: TakesVerdict,
    {
        let decision = Decision {
            verdict: Verdict::Approve,
            digest,
            decided_by: decided_by.into(),
        };
        let decisions = decision.per_call(&self.pending);
        Box::pin(self.decide_now(agent, decisions))
    }

    /// Denies the pending turn: [`Suspended::decide`] with
    /// [`Verdict::Deny`].
    pub fn deny<'a>(
        self,
        agent: &'a Agent<'a>,
        decided_by: impl Into<String>,
        digest: TurnDigest,
    ) -> BoxFuture<'a, Result<Outcome, ResumeError<S>>>
    where
        S: TakesVerdict,
    {
        let decision = Decision {
            verdict: Verdict::Deny,
            digest,
            decided_by: decided_by.into(),
        };
        let decisions = decision.per_call(&self.pending);
        Box::pin(self.decide_now(agent, decisions))
    }
}

impl Suspended<crate::pause::AwaitingApproval> {
    /// The same turn, paused afresh: what each call's tool is now and whether
    /// it needs approval now, paused now — for a turn whose decision was
    /// refused because a tool or the policy changed since the reviewer looked
    /// ([`Refusal::needs_fresh_review`]). It has a digest of its own, so no
    /// decision on the turn as it was applies to it.
    pub async fn reviewed_again(mut self, registry: &crate::registry::Registry) -> Self {
        let offered = registry.offer(self.state.options.allow.as_deref()).await;
        self.review = crate::run::review_of(&offered, &self.pending);
        self
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
            None,
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
        run_decided(agent, &offered, state, steps).await
    }
}
