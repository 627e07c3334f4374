//! Suspended runs as types (SPEC §6): `Suspended<AwaitingApproval>` and
//! `Suspended<WaitingForInput>`, each with only its own way forward.

use std::fmt;

use schemars::Schema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::audit::{DecisionRecord, LogError, Verdict, now_unix_ms};
use crate::digest::{TurnDigest, turn_digest};
use crate::erased::BoxFuture;
use crate::identity::{self, IdentityError, IdentitySource, Operator};
use crate::input::{self, InputError};
use crate::registry::Offered;
use crate::run::{Agent, Message, Outcome, RunError, RunState, ToolCall, not_offered};
use crate::sealed::Sealed;
use crate::tool::ToolOutput;

/// A run paused on a turn. `S` is the kind of pause and decides which way
/// forward exists: [`AwaitingApproval`] has [`Suspended::decide`] (and
/// [`Suspended::approve`], [`Suspended::deny`]); [`WaitingForInput`] has
/// [`Suspended::submit_input`].
#[derive(Debug, Clone, PartialEq)]
pub struct Suspended<S> {
    pub(crate) state: RunState,
    pub(crate) pending: Vec<ToolCall>,
    pub(crate) pause: S,
}

/// The pause of a turn that waits for a human's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwaitingApproval {
    _seal: (),
}

/// The pause of a turn that waits for a human's data.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingForInput {
    pub(crate) tool: String,
    pub(crate) call_index: usize,
    pub(crate) schema: Schema,
}

impl Sealed for AwaitingApproval {}
impl Sealed for WaitingForInput {}

/// The pauses that take a verdict.
#[diagnostic::on_unimplemented(
    message = "a run waiting for input cannot be approved or denied",
    label = "this run is `Suspended<{Self}>`",
    note = "submit the user's data with `submit_input`; an input submission is never an approval, and a verdict carries no data"
)]
pub trait TakesVerdict: Sealed + Send + Sync + 'static {}
impl TakesVerdict for AwaitingApproval {}

/// The pauses that take input.
#[diagnostic::on_unimplemented(
    message = "a run suspended for approval cannot take input",
    label = "this run is `Suspended<{Self}>`",
    note = "approve or deny it with `decide`, `approve` or `deny`; the approval path carries no data"
)]
pub trait TakesInput: Sealed + Send + Sync + 'static {
    #[doc(hidden)]
    fn input_pause(&self) -> &WaitingForInput;
}
impl TakesInput for WaitingForInput {
    fn input_pause(&self) -> &WaitingForInput {
        self
    }
}

impl<S> Suspended<S> {
    /// The run's identifier.
    pub fn run_id(&self) -> &str {
        &self.state.run_id
    }

    /// The run as it was when it paused.
    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// The turn that waits.
    pub fn pending(&self) -> &[ToolCall] {
        &self.pending
    }

    /// The digest a decider must carry back: see [`turn_digest`]. Show it
    /// beside the turn itself, and nowhere else.
    pub fn digest(&self) -> TurnDigest {
        turn_digest(&self.state.run_id, self.state.iterations, &self.pending)
    }

    /// The digest check of SPEC §7: a missing digest and a wrong one are the
    /// same failure.
    fn check_digest(&self, carried: Option<&TurnDigest>) -> Result<TurnDigest, Refusal> {
        let expected = self.digest();
        if carried == Some(&expected) {
            Ok(expected)
        } else {
            Err(Refusal::UnknownTurn {
                carried: carried.is_some(),
            })
        }
    }

    fn record(&self, decided_by: &str, verdict: Verdict, digest: TurnDigest) -> DecisionRecord {
        // The checks ran before: the name normalises. Recorded as normalised.
        let decided_by = Operator::new(decided_by, IdentitySource::Given)
            .map_or_else(|_| decided_by.to_owned(), |o| o.name().to_owned());
        DecisionRecord {
            run_id: self.state.run_id.clone(),
            self_decided: identity::same_person(&decided_by, &self.state.requested_by),
            decided_by,
            decided_by_source: IdentitySource::Given,
            requested_by: self.state.requested_by.clone(),
            at_unix_ms: now_unix_ms(),
            verdict,
            digest,
            tools: self.pending.iter().map(|c| c.name.clone()).collect(),
        }
    }

    fn refuse(self, reason: Refusal) -> ResumeError<S> {
        tracing::warn!(run = %self.state.run_id, %reason, "decision refused; the run stays suspended");
        ResumeError::Refused(Refused { run: self, reason })
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
}

/// True when any call that would run is a write. Remote tools always count:
/// their effect is assumed to be `non_idempotent_write`.
fn runs_a_write<'a>(offered: &Offered, calls: impl IntoIterator<Item = &'a ToolCall>) -> bool {
    calls
        .into_iter()
        .filter_map(|c| offered.get(&c.name))
        .any(|t| t.effect().is_write())
}

impl Suspended<AwaitingApproval> {
    pub(crate) fn awaiting_approval(state: RunState, pending: Vec<ToolCall>) -> Self {
        Self {
            state,
            pending,
            pause: AwaitingApproval { _seal: () },
        }
    }
}

impl Suspended<WaitingForInput> {
    pub(crate) fn waiting_for_input(
        state: RunState,
        pending: Vec<ToolCall>,
        tool: String,
        call_index: usize,
        schema: Schema,
    ) -> Self {
        Self {
            state,
            pending,
            pause: WaitingForInput {
                tool,
                call_index,
                schema,
            },
        }
    }

    /// The tool that waits for input.
    pub fn input_tool(&self) -> &str {
        &self.pause.tool
    }

    /// The call that waits for input.
    pub fn input_call(&self) -> &ToolCall {
        &self.pending[self.pause.call_index]
    }

    /// The schema the input must satisfy.
    pub fn input_schema(&self) -> &Schema {
        &self.pause.schema
    }
}

/// A verdict on a pending turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalVerdict {
    /// Run the turn.
    Approve,
    /// Run nothing of it.
    Deny,
}

/// A human's decision on a turn that awaits approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalDecision {
    /// Approve or deny.
    pub verdict: ApprovalVerdict,
    /// The digest of the turn the decider saw; `None` is refused like a
    /// wrong one.
    pub digest: Option<TurnDigest>,
    /// Who decided.
    pub decided_by: String,
}

/// A user's data for a turn that waits for input.
#[derive(Debug, Clone, PartialEq)]
pub struct InputSubmission {
    /// The data, validated against the input schema.
    pub data: Value,
    /// The digest of the turn the user saw.
    pub digest: Option<TurnDigest>,
    /// Who submitted it.
    pub submitted_by: String,
}

/// Why a decision was refused. The run is handed back unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The decision carries no digest, or not the pending turn's. The
    /// pending turn's digest is deliberately not part of the refusal: it is
    /// shown only beside the turn itself, so that nobody approves a turn they
    /// were not shown by pasting it from an error.
    #[error(
        "the decision {}: the reviewed turn is unknown; review the pending turn (`runs show`) and decide with the digest shown beside it",
        if *carried { "names a different turn" } else { "names no turn (no digest)" }
    )]
    UnknownTurn {
        /// Whether the decision carried a digest at all.
        carried: bool,
    },
    /// The decider's or submitter's name cannot stand for a person.
    #[error("{0}: name the person who decides")]
    InvalidIdentity(IdentityError),
    /// The requester approved their own run, and the run requires four eyes.
    /// Names are compared as people (see [`identity`]), not as strings.
    #[error("`{who}` started this run, and its approval must come from someone else")]
    SelfApproval {
        /// The requester.
        who: String,
    },
    /// The decision log failed and the turn would run a write.
    #[error("the decision could not be recorded, and the turn would run a write: {0}")]
    NotRecorded(LogError),
    /// The input does not fit the schema.
    #[error("the input does not fit the schema: {}", join(.0))]
    InvalidInput(Vec<InputError>),
}

fn join(errors: &[InputError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// A refused decision: the reason, and the run as it was.
#[derive(Debug)]
pub struct Refused<S> {
    /// The run, unchanged: decide again.
    pub run: Suspended<S>,
    /// Why.
    pub reason: Refusal,
}

/// A resume did not end in an [`Outcome`].
#[derive(Debug)]
pub enum ResumeError<S> {
    /// The decision was refused; the run is still suspended.
    Refused(Refused<S>),
    /// The decision was taken and the turn ran, but the run could not go on.
    Run(RunError),
}

impl<S> fmt::Display for ResumeError<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResumeError::Refused(refused) => write!(f, "refused: {}", refused.reason),
            ResumeError::Run(error) => write!(f, "{error}"),
        }
    }
}

impl<S: fmt::Debug> std::error::Error for ResumeError<S> {}

impl<S> Suspended<S> {
    /// The checks a decision must pass that need nothing but the run: the
    /// digest names the pending turn, and a four-eyes run is not approved by
    /// its requester. [`Suspended::decide`] runs them first; a host that
    /// claims the decision elsewhere (a shared store) runs them before the
    /// claim.
    pub fn check_decision(&self, decision: &ApprovalDecision) -> Result<TurnDigest, Refusal>
    where
        S: TakesVerdict,
    {
        let digest = self.check_digest(decision.digest.as_ref())?;
        let decider = Operator::new(&decision.decided_by, IdentitySource::Given)
            .map_err(Refusal::InvalidIdentity)?;
        if decision.verdict == ApprovalVerdict::Approve
            && self.state.options.four_eyes
            && identity::same_person(decider.name(), &self.state.requested_by)
        {
            return Err(Refusal::SelfApproval {
                who: decider.name().to_owned(),
            });
        }
        Ok(digest)
    }

    /// The checks an input submission must pass that need nothing but the
    /// run: the digest names the pending turn, and the data fits the full
    /// input schema.
    pub fn check_input(&self, submission: &InputSubmission) -> Result<TurnDigest, Refusal>
    where
        S: TakesInput,
    {
        let digest = self.check_digest(submission.digest.as_ref())?;
        Operator::new(&submission.submitted_by, IdentitySource::Given)
            .map_err(Refusal::InvalidIdentity)?;
        input::validate(&self.pause.input_pause().schema, &submission.data)
            .map_err(Refusal::InvalidInput)?;
        Ok(digest)
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
        decision: ApprovalDecision,
    ) -> BoxFuture<'a, Result<Outcome, ResumeError<S>>>
    where
        S: TakesVerdict,
    {
        Box::pin(self.decide_now(agent, decision))
    }

    async fn decide_now(
        self,
        agent: &Agent<'_>,
        decision: ApprovalDecision,
    ) -> Result<Outcome, ResumeError<S>>
    where
        S: TakesVerdict,
    {
        let digest = match self.check_decision(&decision) {
            Ok(digest) => digest,
            Err(reason) => return Err(self.refuse(reason)),
        };
        let approve = decision.verdict == ApprovalVerdict::Approve;
        let offered = agent
            .registry
            .offer(self.state.options.allow.as_deref())
            .await;
        let verdict = if approve {
            Verdict::Approved
        } else {
            Verdict::Denied
        };
        let record = self.record(&decision.decided_by, verdict, digest);
        let blocks = approve && runs_a_write(&offered, &self.pending);
        if let Err(reason) = self.write_record(agent, &record, blocks).await {
            return Err(self.refuse(reason));
        }
        tracing::info!(run = %self.state.run_id, by = %decision.decided_by, verdict = verdict.as_str(), "turn decided");
        let Suspended {
            mut state, pending, ..
        } = self;
        for call in &pending {
            let output = if approve {
                match offered.get(&call.name) {
                    None => not_offered(&offered, call),
                    Some(tool) if tool.requires_input() => ToolOutput::error(format!(
                        "tool `{}` requires user input that was not provided; the call was not executed",
                        call.name
                    )),
                    Some(tool) => tool.execute(call.arguments.clone()).await,
                }
            } else {
                ToolOutput::error(format!(
                    "the operator ({}) denied this call; it was not executed",
                    decision.decided_by
                ))
            };
            state.transcript.push(Message::result(call, output));
        }
        agent.drive(state).await.map_err(ResumeError::Run)
    }

    /// Approves the pending turn: [`Suspended::decide`] with
    /// [`ApprovalVerdict::Approve`].
    pub fn approve<'a>(
        self,
        agent: &'a Agent<'a>,
        decided_by: impl Into<String>,
        digest: Option<TurnDigest>,
    ) -> BoxFuture<'a, Result<Outcome, ResumeError<S>>>
    where
        S: TakesVerdict,
    {
        let decision = ApprovalDecision {
            verdict: ApprovalVerdict::Approve,
            digest,
            decided_by: decided_by.into(),
        };
        Box::pin(self.decide_now(agent, decision))
    }

    /// Denies the pending turn: [`Suspended::decide`] with
    /// [`ApprovalVerdict::Deny`].
    pub fn deny<'a>(
        self,
        agent: &'a Agent<'a>,
        decided_by: impl Into<String>,
        digest: Option<TurnDigest>,
    ) -> BoxFuture<'a, Result<Outcome, ResumeError<S>>>
    where
        S: TakesVerdict,
    {
        let decision = ApprovalDecision {
            verdict: ApprovalVerdict::Deny,
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
                !t.decision().requires_approval() && (*i == pause.call_index || !t.requires_input())
            })
        });
        let blocks = runs_a_write(&offered, runnable.map(|(_, c)| c));
        let record = self.record(&submission.submitted_by, Verdict::InputSubmitted, digest);
        if let Err(reason) = self.write_record(agent, &record, blocks).await {
            return Err(self.refuse(reason));
        }
        tracing::info!(run = %self.state.run_id, by = %submission.submitted_by, tool = %pause.tool, "input submitted");
        let schema = pause.schema.clone();
        let target = pause.call_index;
        let Suspended {
            mut state, pending, ..
        } = self;
        for (index, call) in pending.iter().enumerate() {
            let output = match offered.get(&call.name) {
                None => not_offered(&offered, call),
                Some(tool) if tool.decision().requires_approval() => ToolOutput::error(format!(
                    "tool `{}` requires approval that was not given (an input submission is not an approval); the call was not executed",
                    call.name
                )),
                Some(tool) if index == target => {
                    let arguments = input::overlay(&schema, &call.arguments, &submission.data);
                    tool.execute(arguments).await
                }
                Some(tool) if tool.requires_input() => ToolOutput::error(format!(
                    "tool `{}` requires user input that was not provided (one call per turn can wait for input); the call was not executed",
                    call.name
                )),
                Some(tool) => tool.execute(call.arguments.clone()).await,
            };
            state.transcript.push(Message::result(call, output));
        }
        agent.drive(state).await.map_err(ResumeError::Run)
    }
}
