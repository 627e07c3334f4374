//! Suspended runs as types (SPEC §6): `Suspended<AwaitingApproval>` and
//! `Suspended<WaitingForInput>`, each with only its own way forward.

use schemars::Schema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::audit::{DecisionKind, DecisionRecord, LogError, now_unix_ms};
use crate::digest::{TurnDigest, turn_digest};
use crate::identity::{self, IdentityError, IdentitySource, Operator};
use crate::input::{self, InputError};
use crate::sealed::{PauseBinding, Sealed};
use crate::transcript::{RunState, ToolCall};

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

impl PauseBinding for AwaitingApproval {
    fn input_binding(&self) -> Option<(&str, usize, &Schema)> {
        None
    }
}

impl PauseBinding for WaitingForInput {
    fn input_binding(&self) -> Option<(&str, usize, &Schema)> {
        Some((&self.tool, self.call_index, &self.schema))
    }
}

/// The pauses that take a verdict.
#[diagnostic::on_unimplemented(
    message = "a run waiting for input cannot be approved or denied",
    label = "this run is `Suspended<{Self}>`",
    note = "submit the user's data with `submit_input`; an input submission is never an approval, and a verdict carries no data"
)]
pub trait TakesVerdict: Sealed + PauseBinding + Send + Sync + 'static {}
impl TakesVerdict for AwaitingApproval {}

/// The pauses that take input.
#[diagnostic::on_unimplemented(
    message = "a run suspended for approval cannot take input",
    label = "this run is `Suspended<{Self}>`",
    note = "approve or deny it with `decide`, `approve` or `deny`; the approval path carries no data"
)]
pub trait TakesInput: Sealed + PauseBinding + Send + Sync + 'static {
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
}

impl<S: PauseBinding> Suspended<S> {
    /// The digest a decider must carry back: see [`turn_digest`]. Show it
    /// beside the turn itself, and nowhere else.
    pub fn digest(&self) -> TurnDigest {
        turn_digest(
            &self.state.run_id,
            self.state.iterations,
            &self.pending,
            self.pause.input_binding(),
        )
    }

    /// The digest check of SPEC §7: a missing digest and a wrong one are the
    /// same failure.
    pub(crate) fn check_digest(&self, carried: Option<&TurnDigest>) -> Result<TurnDigest, Refusal> {
        let expected = self.digest();
        if carried == Some(&expected) {
            Ok(expected)
        } else {
            Err(Refusal::UnknownTurn {
                carried: carried.is_some(),
            })
        }
    }

    pub(crate) fn record(
        &self,
        decided_by: &str,
        verdict: DecisionKind,
        digest: TurnDigest,
    ) -> DecisionRecord {
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
            voided: None,
        }
    }
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
pub enum Verdict {
    /// Run the turn.
    Approve,
    /// Run nothing of it.
    Deny,
}

/// A human's decision on a turn that awaits approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Approve or deny.
    pub verdict: Verdict,
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
#[non_exhaustive]
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

impl<S> Suspended<S> {
    /// The checks a decision must pass that need nothing but the run: the
    /// digest names the pending turn, and a four-eyes run is not approved by
    /// its requester. [`Suspended::decide`] runs them first; a host that
    /// claims the decision elsewhere (a shared store) runs them before the
    /// claim.
    pub fn check_decision(&self, decision: &Decision) -> Result<TurnDigest, Refusal>
    where
        S: TakesVerdict,
    {
        let digest = self.check_digest(decision.digest.as_ref())?;
        let decider = Operator::new(&decision.decided_by, IdentitySource::Given)
            .map_err(Refusal::InvalidIdentity)?;
        if decision.verdict == Verdict::Approve
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
}
