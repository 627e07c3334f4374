//! Suspended runs as types: `Suspended<AwaitingApproval>` and
//! `Suspended<WaitingForInput>`, each with only its own way forward.

use schemars::Schema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::audit::{AuditedCall, CallVerdict, DecisionKind, DecisionRecord, LogError, now_unix_ms};
use crate::digest::{Review, TurnDigest, reviewed_turn_digest, turn_digest};
use crate::identity::{self, IdentityError, IdentitySource, Operator};
use crate::input::{self, InputError};
use crate::sealed::{PauseBinding, Sealed};
use crate::transcript::{RunState, ToolCall};

/// A run paused on a turn. `S` is the kind of pause and decides which way
/// forward exists: [`AwaitingApproval`] has [`Suspended::decide`] (and
/// [`Suspended::approve`], [`Suspended::deny`]); [`WaitingForInput`] has
/// [`Suspended::submit_input`].
///
/// A suspended run is a value: it can be cloned, stored and decoded again,
/// and each copy that is decided runs its turn. Keep one copy, or let a store
/// decide it — a store records each decision against its stored pause, and
/// of any number of deciders exactly one wins.
#[derive(Debug, Clone, PartialEq)]
pub struct Suspended<S> {
    pub(crate) state: RunState,
    pub(crate) pending: Vec<ToolCall>,
    pub(crate) pause: S,
    pub(crate) review: Review,
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

/// A kind of pause: [`AwaitingApproval`] or [`WaitingForInput`], and no
/// other (sealed). What every [`Suspended`] run offers whatever its pause —
/// its id, its state, its pending turn and the digest that names it — is
/// implemented for `Suspended<S: Pause>`.
#[allow(
    private_bounds,
    reason = "sealed: the bounds name this crate's private seal, so no other type is a pause"
)]
pub trait Pause: Sealed + PauseBinding + Send + Sync + 'static {}
impl Pause for AwaitingApproval {}
impl Pause for WaitingForInput {}

/// The pauses that take a verdict.
#[diagnostic::on_unimplemented(
    message = "a run waiting for input cannot be approved or denied",
    label = "this run is `Suspended<{Self}>`",
    note = "submit the user's data with `submit_input`; an input submission is never an approval, and a verdict carries no data"
)]
pub trait TakesVerdict: Pause {}
impl TakesVerdict for AwaitingApproval {}

/// The pauses that take input.
#[diagnostic::on_unimplemented(
    message = "a run suspended for approval cannot take input",
    label = "this run is `Suspended<{Self}>`",
    note = "approve or deny it with `decide`, `approve` or `deny`; the approval path carries no data"
)]
pub trait TakesInput: Pause {
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

    /// What the reviewer is shown of each pending call's tool, and when the
    /// turn paused; empty for turns paused before reviews were kept.
    pub fn review(&self) -> &Review {
        &self.review
    }

    /// Whether call `index` of the turn needs a verdict: it needed approval
    /// when the turn paused (every call of a turn paused before reviews were
    /// kept does).
    pub fn needs_verdict(&self, index: usize) -> bool {
        if self.review.tools.is_empty() {
            return true;
        }
        self.review
            .tools
            .get(index)
            .is_some_and(|t| t.as_ref().is_some_and(|t| t.needs_approval))
    }

    /// When approving the turn stops being possible (milliseconds since the
    /// Unix epoch), when the run has a decision time limit.
    pub fn expires_at_ms(&self) -> Option<u64> {
        self.state
            .options
            .decision_ttl_ms
            .map(|ttl| self.review.paused_at_ms.saturating_add(ttl))
    }

    /// True when the run's decision time limit has passed: the turn can be
    /// denied or asked again, never approved.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms().is_some_and(|at| now_ms > at)
    }

    /// The same turn asked again: paused now, so its time limit starts over
    /// and its digest is new.
    #[must_use]
    pub fn asked_again(mut self) -> Self {
        self.review.paused_at_ms = now_unix_ms();
        self
    }
}

impl<S: Pause> Suspended<S> {
    /// The digest a decider must carry back: see [`TurnDigest`]. Show it
    /// beside the turn itself, and nowhere else.
    pub fn digest(&self) -> TurnDigest {
        if self.review.tools.is_empty() {
            turn_digest(
                &self.state.run_id,
                self.state.iterations,
                &self.pending,
                self.pause.input_binding(),
            )
        } else {
            reviewed_turn_digest(
                &self.state.run_id,
                self.state.iterations,
                &self.pending,
                self.pause.input_binding(),
                &self.review,
            )
        }
    }

    /// The digest check: a decision names the pending turn, or it is refused.
    pub(crate) fn check_digest(&self, carried: &TurnDigest) -> Result<TurnDigest, Refusal> {
        let expected = self.digest();
        if *carried == expected {
            Ok(expected)
        } else {
            Err(Refusal::UnknownTurn)
        }
    }

    pub(crate) fn record(
        &self,
        decided_by: &str,
        verdict: DecisionKind,
        digest: TurnDigest,
        verdicts: Option<&CallDecisions>,
    ) -> DecisionRecord {
        // The checks ran before: the name normalises. Recorded as normalised.
        let decided_by = Operator::new(decided_by, IdentitySource::Given)
            .map_or_else(|_| decided_by.to_owned(), |o| o.name().to_owned());
        DecisionRecord {
            run_id: self.state.run_id.clone(),
            self_decided: identity::same_person(&decided_by, &self.state.requested_by),
            decided_by,
            decided_by_source: IdentitySource::Given,
            channel: Some(identity::Channel::Library),
            requested_by: self.state.requested_by.clone(),
            at_unix_ms: now_unix_ms(),
            verdict,
            digest,
            tools: self.pending.iter().map(|c| c.name.clone()).collect(),
            voided: None,
            calls: verdicts.map(|v| self.audited(v)).unwrap_or_default(),
        }
    }

    /// The turn call by call, as the audit trail keeps a decision on it.
    pub fn audited(&self, verdicts: &CallDecisions) -> Vec<AuditedCall> {
        self.pending
            .iter()
            .enumerate()
            .map(|(index, call)| AuditedCall {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                verdict: verdicts.calls.get(&call.id).cloned(),
                arguments: call.arguments.clone(),
                arguments_digest: crate::digest::arguments_digest(&call.arguments),
                edited_digest: match verdicts.calls.get(&call.id) {
                    Some(CallVerdict::Edit { arguments }) => {
                        Some(crate::digest::arguments_digest(arguments))
                    }
                    _ => None,
                },
                definition: self.review.tools.get(index).and_then(|t| {
                    t.as_ref()
                        .map(crate::digest::ReviewedTool::definition_digest)
                }),
            })
            .collect()
    }
}

impl Suspended<AwaitingApproval> {
    pub(crate) fn awaiting_approval(
        state: RunState,
        pending: Vec<ToolCall>,
        review: Review,
    ) -> Self {
        Self {
            state,
            pending,
            pause: AwaitingApproval { _seal: () },
            review,
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
        review: Review,
    ) -> Self {
        Self {
            state,
            pending,
            pause: WaitingForInput {
                tool,
                call_index,
                schema,
            },
            review,
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
    /// The digest of the turn the decider saw ([`Suspended::digest`], shown
    /// beside the turn); one that is not the pending turn's is refused.
    pub digest: TurnDigest,
    /// Who decided.
    pub decided_by: String,
}

impl Decision {
    /// The same decision, call by call: approving the turn approves every
    /// call; denying it denies every call.
    pub fn per_call(&self, pending: &[ToolCall]) -> CallDecisions {
        self.clone().into_calls(pending)
    }

    /// [`Decision::per_call`], consuming the decision.
    pub fn into_calls(self, pending: &[ToolCall]) -> CallDecisions {
        let verdict = match self.verdict {
            Verdict::Approve => CallVerdict::Approve,
            Verdict::Deny => CallVerdict::Deny {
                reason: String::new(),
            },
        };
        CallDecisions {
            calls: pending
                .iter()
                .map(|c| (c.id.clone(), verdict.clone()))
                .collect(),
            digest: self.digest,
            decided_by: self.decided_by,
            also_approved_by: Vec::new(),
        }
    }
}

/// A human's decision on a paused turn, call by call — keyed by call id,
/// never by position. Every call that needs approval must have a verdict; a
/// call that does not need one may be given one (to deny it, say), and runs
/// otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallDecisions {
    /// The verdicts, by call id.
    pub calls: std::collections::BTreeMap<String, CallVerdict>,
    /// The digest of the turn the decider saw ([`Suspended::digest`]).
    pub digest: TurnDigest,
    /// Who decided.
    pub decided_by: String,
    /// On a run that needs several approvers
    /// ([`RunOptions::approvals_required`](crate::run::RunOptions::approvals_required)),
    /// the others who approved the same verdicts on this turn before (a
    /// store collects them one at a time); empty otherwise. An approval runs
    /// only when `decided_by` and these are as many distinct people as the
    /// run needs.
    pub also_approved_by: Vec<String>,
}

impl CallDecisions {
    /// True when any call is approved.
    pub fn approves_any(&self) -> bool {
        self.calls.values().any(CallVerdict::approves)
    }
}

/// A user's data for a turn that waits for input.
#[derive(Debug, Clone, PartialEq)]
pub struct InputSubmission {
    /// The data, validated against the input schema.
    pub data: Value,
    /// The digest of the turn the user saw ([`Suspended::digest`]).
    pub digest: TurnDigest,
    /// Who submitted it.
    pub submitted_by: String,
}

/// Why a decision was refused. The run is handed back unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The decision carries a digest that is not the pending turn's. The
    /// pending turn's digest is deliberately not part of the refusal: it is
    /// shown only beside the turn itself ([`Suspended::digest`]), so that
    /// nobody approves a turn they were not shown by pasting it from an
    /// error.
    #[error(
        "the decision names a different turn: the reviewed turn is unknown; review the pending turn and decide with the digest shown beside it"
    )]
    UnknownTurn,
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
    /// An approval of a run that needs several approvers came from fewer
    /// distinct people (with four eyes, none of them the requester): the
    /// others approve first, and the last approval carries their names
    /// ([`CallDecisions::also_approved_by`]).
    #[error(
        "the turn needs approvals from {need} distinct people and has {have}: record each approval, and resume with the last"
    )]
    TooFewApprovals {
        /// Distinct approvers the decision names.
        have: u32,
        /// How many the run needs.
        need: u32,
    },
    /// An approval through the requester's own client (elicitation) that
    /// the run's rules do not take
    /// ([`audit::elicited_answer_problem`](crate::audit::elicited_answer_problem)).
    #[error("{why}")]
    ElicitedApproval {
        /// Why, in words.
        why: &'static str,
    },
    /// The requester chose to run again a call whose outcome is unknown, and
    /// the run requires four eyes or several approvers: the choice must come
    /// from someone else.
    #[error("`{who}` started this run, and running its call again must be chosen by someone else")]
    SelfRerun {
        /// The requester.
        who: String,
    },
    /// The decision log failed and the turn would run a write.
    #[error("the decision could not be recorded, and the turn would run a write: {0}")]
    NotRecorded(LogError),
    /// The input does not fit the schema.
    #[error("the input does not fit the schema: {}", join(.0))]
    InvalidInput(Vec<InputError>),
    /// Calls that need approval have no verdict.
    #[error("the decision leaves calls that need approval without a verdict: {}; decide each (or approve or deny them all)", .0.join(", "))]
    Uncovered(Vec<String>),
    /// Verdicts name calls that are not in the turn.
    #[error("the decision names calls that are not in the pending turn: {}", .0.join(", "))]
    UnknownCalls(Vec<String>),
    /// Edited arguments do not fit the tool's parameter schema.
    #[error(
        "the edited arguments of call `{call}` do not fit the parameter schema of `{tool}`: {}",
        join(errors)
    )]
    InvalidEdit {
        /// The call.
        call: String,
        /// Its tool.
        tool: String,
        /// What is wrong, with field paths.
        errors: Vec<InputError>,
    },
    /// The run's decision time limit passed: the turn can be denied or
    /// asked again, never approved.
    #[error(
        "the turn expired at {at_ms} ms after the epoch: it can be denied or asked again, not approved"
    )]
    Expired {
        /// When it expired.
        at_ms: u64,
    },
    /// A tool changed after the reviewer saw it: the decision is void, and
    /// the turn must be reviewed again as it is now.
    #[error(
        "tool `{tool}` (call `{call}`) is not the one the reviewer saw: its definition changed since the turn paused; review the turn again"
    )]
    ToolChanged {
        /// The call.
        call: String,
        /// The tool.
        tool: String,
    },
    /// A call that needed no approval when the turn paused needs it now (an
    /// operator tightened the policy): the decision is void, whatever it said
    /// of the call, and the turn must be reviewed again as it is now.
    #[error(
        "call `{call}` ({tool}) needed no approval when the turn paused and needs it now; review the turn again"
    )]
    PolicyTightened {
        /// The call.
        call: String,
        /// The tool.
        tool: String,
    },
}

impl Refusal {
    /// True when the turn must be reviewed again as it is now (a tool or the
    /// policy changed since it paused): the host pauses it afresh.
    pub fn needs_fresh_review(&self) -> bool {
        matches!(
            self,
            Refusal::ToolChanged { .. } | Refusal::PolicyTightened { .. }
        )
    }
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
        self.check_calls(&decision.per_call(&self.pending))
    }

    /// The checks a call-by-call decision must pass that need nothing but
    /// the run: the digest; the decider's name; every verdict names a call of
    /// the turn, and every call that needs approval has one; edited arguments
    /// fit the tool's parameter schema as the reviewer saw it; four eyes; and
    /// the run's decision time limit (an expired turn can only be denied).
    pub fn check_calls(&self, decision: &CallDecisions) -> Result<TurnDigest, Refusal>
    where
        S: TakesVerdict,
    {
        let digest = self.check_digest(&decision.digest)?;
        let decider = Operator::new(&decision.decided_by, IdentitySource::Given)
            .map_err(Refusal::InvalidIdentity)?;
        let unknown: Vec<String> = decision
            .calls
            .keys()
            .filter(|id| !self.pending.iter().any(|c| &c.id == *id))
            .map(|id| format!("`{id}`"))
            .collect();
        if !unknown.is_empty() {
            return Err(Refusal::UnknownCalls(unknown));
        }
        let uncovered: Vec<String> = self
            .pending
            .iter()
            .enumerate()
            .filter(|(i, c)| self.needs_verdict(*i) && !decision.calls.contains_key(&c.id))
            .map(|(_, c)| format!("`{}` ({})", c.id, c.name))
            .collect();
        if !uncovered.is_empty() {
            return Err(Refusal::Uncovered(uncovered));
        }
        for (index, call) in self.pending.iter().enumerate() {
            if let Some(CallVerdict::Edit { arguments }) = decision.calls.get(&call.id) {
                self.check_edit(index, call, arguments)?;
            }
        }
        if decision.approves_any() {
            if self.state.options.four_eyes
                && identity::same_person(decider.name(), &self.state.requested_by)
            {
                return Err(Refusal::SelfApproval {
                    who: decider.name().to_owned(),
                });
            }
            if let Some(at_ms) = self.expires_at_ms().filter(|at| now_unix_ms() > *at) {
                return Err(Refusal::Expired { at_ms });
            }
        }
        Ok(digest)
    }

    /// Edited arguments fit the parameter schema the reviewer saw.
    fn check_edit(&self, index: usize, call: &ToolCall, arguments: &Value) -> Result<(), Refusal> {
        let refuse = |message: &str| Refusal::InvalidEdit {
            call: call.id.clone(),
            tool: call.name.clone(),
            errors: vec![InputError {
                path: String::new(),
                message: message.to_owned(),
            }],
        };
        let Some(tool) = self.review.tools.get(index) else {
            return Err(refuse(
                "the turn was paused before reviews were kept, so the parameter schema it was shown with is unknown; approve or deny it",
            ));
        };
        let Some(tool) = tool else {
            return Err(refuse("the tool was not offered when the turn paused"));
        };
        let schema = Schema::try_from(tool.parameters.clone())
            .map_err(|_| refuse("the tool's parameter schema is not a schema"))?;
        input::validate(schema.as_value(), arguments).map_err(|errors| Refusal::InvalidEdit {
            call: call.id.clone(),
            tool: call.name.clone(),
            errors,
        })
    }

    /// The checks an input submission must pass that need nothing but the
    /// run: the digest names the pending turn, and the data fits the full
    /// input schema.
    pub fn check_input(&self, submission: &InputSubmission) -> Result<TurnDigest, Refusal>
    where
        S: TakesInput,
    {
        let digest = self.check_digest(&submission.digest)?;
        Operator::new(&submission.submitted_by, IdentitySource::Given)
            .map_err(Refusal::InvalidIdentity)?;
        input::validate(self.pause.input_pause().schema.as_value(), &submission.data)
            .map_err(Refusal::InvalidInput)?;
        Ok(digest)
    }
}
