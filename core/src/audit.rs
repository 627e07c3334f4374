//! The decision record: every decision is handed
//! to the host's [`DecisionLog`] before anything of the turn executes.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::digest::TurnDigest;
use crate::erased::BoxFuture;
use crate::identity::{Channel, Operator};
use crate::transcript::RunOptions;

/// What was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// The turn may run.
    Approved,
    /// No call of the turn runs.
    Denied,
    /// A user supplied the input a call waited for.
    InputSubmitted,
}

impl DecisionKind {
    /// The word an operator reads.
    pub const fn as_str(self) -> &'static str {
        match self {
            DecisionKind::Approved => "approved",
            DecisionKind::Denied => "denied",
            DecisionKind::InputSubmitted => "input submitted",
        }
    }
}

/// A human's verdict on one call of a paused turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case", deny_unknown_fields)]
pub enum CallVerdict {
    /// Run the call as the model made it.
    Approve,
    /// Do not run it; the model reads the reason.
    Deny {
        /// Why, for the model (may be empty).
        reason: String,
    },
    /// Run the call with these arguments instead of the model's; they are
    /// checked against the tool's parameter schema as the reviewer saw it.
    Edit {
        /// The arguments to run with.
        arguments: Value,
    },
}

impl CallVerdict {
    /// True for an approval, edited or not.
    pub fn approves(&self) -> bool {
        !matches!(self, CallVerdict::Deny { .. })
    }

    /// The word an operator reads.
    pub fn as_str(&self) -> &'static str {
        match self {
            CallVerdict::Approve => "approve",
            CallVerdict::Deny { .. } => "deny",
            CallVerdict::Edit { .. } => "approve with edited arguments",
        }
    }
}

/// One call of a decided turn, as the audit trail keeps it: the model's
/// arguments as reviewed, the verdict (with edited arguments, if any) and
/// the definition of the tool the reviewer saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditedCall {
    /// The call's id.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// The verdict; `None` for a call that needed no approval and got no
    /// verdict (it runs as the model made it).
    pub verdict: Option<CallVerdict>,
    /// The model's arguments, as reviewed.
    pub arguments: Value,
    /// The digest of those arguments.
    pub arguments_digest: String,
    /// The digest of the edited arguments, when the verdict edited them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_digest: Option<String>,
    /// The digest of the tool's definition as the reviewer saw it; `None`
    /// when the turn was paused before reviews were kept, or the tool was not
    /// offered.
    pub definition: Option<String>,
}

/// One decision, as the audit trail keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// The run.
    pub run_id: String,
    /// Who decided, normalised (see [`identity`](crate::identity)).
    pub decided_by: String,
    /// Where the decider's name came from.
    #[serde(default)]
    pub decided_by_source: crate::identity::IdentitySource,
    /// How the decision reached the record; `None` in records written
    /// before channels were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<Channel>,
    /// Who started the run.
    pub requested_by: String,
    /// True when the decider is the requester — always visible, whether or
    /// not the run required four eyes.
    pub self_decided: bool,
    /// When, in milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
    /// The verdict.
    pub verdict: DecisionKind,
    /// The digest of the turn decided on.
    pub digest: TurnDigest,
    /// The names of the turn's calls, in order.
    pub tools: Vec<String>,
    /// Why the decision was voided after it was recorded (its resume was
    /// refused, so the run waits for a fresh decision); `None` while it
    /// stands. Voided decisions stay in the audit trail.
    #[serde(default)]
    pub voided: Option<String>,
    /// The turn call by call: each call's verdict, the model's arguments and
    /// the tool definition reviewed. Empty in records written before
    /// decisions were kept per call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<AuditedCall>,
}

impl DecisionRecord {
    /// What was decided, in words, exactly: `approved`, `denied` or `input
    /// submitted` when every call got the same verdict (or the decision was
    /// not kept per call), and otherwise each verdict with the calls it was
    /// given — `approved call_2, call_2b (edited); denied call_2c` — so a
    /// call denied beside approved ones is never summed up as "approved".
    /// The one wording every view of a decision uses.
    pub fn summary(&self) -> String {
        let verdicts: Vec<(&str, &CallVerdict)> = self
            .calls
            .iter()
            .filter_map(|c| c.verdict.as_ref().map(|v| (c.call_id.as_str(), v)))
            .collect();
        let approved: Vec<String> = verdicts
            .iter()
            .filter(|(_, v)| v.approves())
            .map(|(id, v)| match v {
                CallVerdict::Edit { .. } => format!("{id} (edited)"),
                _ => (*id).to_owned(),
            })
            .collect();
        let denied: Vec<&str> = verdicts
            .iter()
            .filter(|(_, v)| !v.approves())
            .map(|(id, _)| *id)
            .collect();
        if approved.is_empty() || denied.is_empty() {
            return self.verdict.as_str().to_owned();
        }
        format!(
            "approved {}; denied {}",
            approved.join(", "),
            denied.join(", ")
        )
    }
}

pub(crate) fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

crate::error::message_error!(
    /// The decision log could not record. Carries the log's own error (a
    /// database's, a file system's) as its source when there is one.
    LogError,
    "the decision log failed: "
);

/// Where decisions are recorded, supplied by the host.
///
/// If recording fails, an approval of a turn containing a write is refused
/// and the run stays suspended; a read-only turn continues with the failure
/// logged; a denial is never blocked.
pub trait DecisionLog: Send + Sync {
    /// Records one decision.
    fn record<'a>(&'a self, record: &'a DecisionRecord) -> BoxFuture<'a, Result<(), LogError>>;
}

/// Why an approval on a run under `options` cannot also declare its tool
/// "no approval" from now on, if it cannot — the one rule of "and from now
/// on": refused on a run under four eyes or needing several approvers. One
/// approver must not switch off, for every call to come, a gate that needs
/// two people.
pub fn standing_declaration_problem(options: &RunOptions) -> Option<&'static str> {
    if options.four_eyes {
        Some(
            "the run requires four eyes: one approver must not switch off, for every call to come, a gate that needs two people; approve the call alone, and declare the tool with `toolgate tool set-approval` if it should run unattended",
        )
    } else if options.approvals_required > 1 {
        Some(
            "the run needs several approvers: one of them must not switch off, for every call to come, a gate that needs several people; approve the call alone, and declare the tool with `toolgate tool set-approval` if it should run unattended",
        )
    } else {
        None
    }
}

/// Why an answer through `channel` by `decider` — an approval when
/// `approves` — cannot be recorded on a run that `requested_by` started
/// under `options`, if it cannot: the one rule of answers through the
/// requester's own client. An answer through elicitation is the requester
/// answering — so it is taken only under the requester's name exactly as the
/// run records it (not another spelling that folds to it), it is no approval
/// at all when the run requires four eyes, and it never counts toward
/// several approvers. A denial or input is bound by the name alone: the
/// requester may always refuse their own call, and input is theirs to give.
pub fn elicited_answer_problem(
    channel: Channel,
    decider: &Operator,
    requested_by: &str,
    options: &RunOptions,
    approves: bool,
) -> Option<&'static str> {
    if channel != Channel::Elicitation {
        None
    } else if decider.name() != requested_by {
        Some(
            "an answer through the requester's own client is the requester's: it is recorded under the requester's name as the run records it, never another's",
        )
    } else if approves && options.four_eyes {
        Some(
            "the run requires four eyes, and an answer through the requester's own client is the requester's own approval: an operator approves it",
        )
    } else if approves && options.approvals_required > 1 {
        Some(
            "the run needs several approvers, and an answer through the requester's own client never counts toward them: operators approve it",
        )
    } else {
        None
    }
}
