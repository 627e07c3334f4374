//! Why a stored run could not be loaded or claimed.

use toolgate::audit::DecisionKind;
use toolgate::suspend::{CorruptState, Refusal, SuspendedStatus};

use crate::StoreError;

/// A stored run could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// No open suspension for that run.
    #[error("no suspended run `{0}` waits for a decision")]
    NotFound(String),
    /// The stored document does not decode; the row is left as it is for an
    /// operator to inspect.
    #[error("suspended run `{run_id}` is stored but unreadable: {error}")]
    Corrupt {
        /// The run.
        run_id: String,
        /// Why.
        error: CorruptState,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A claim was not granted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClaimError {
    /// No such run waits.
    #[error("no suspended run `{0}` waits for a decision")]
    NotFound(String),
    /// Someone decided first.
    #[error("run `{run_id}` was already decided{}", by.as_ref().map(|b| format!(" by `{b}`")).unwrap_or_default())]
    AlreadyDecided {
        /// The run.
        run_id: String,
        /// Who won.
        by: Option<String>,
    },
    /// The decision does not name the pending turn. The pending turn's digest
    /// is deliberately not part of the error: it is shown only beside the turn.
    #[error(
        "the decision names a different turn than the one run `{run_id}` waits on: the reviewed turn is unknown; review it with `runs show {run_id}` and decide with the digest shown there"
    )]
    StaleDigest {
        /// The run.
        run_id: String,
    },
    /// Only an expired turn can be asked again.
    #[error("run `{run_id}` has not expired: decide it as it is")]
    NotExpired {
        /// The run.
        run_id: String,
    },
    /// This person's approval is already recorded on this run, which needs
    /// several distinct approvers.
    #[error(
        "`{by}` has already approved run `{run_id}`, which needs approvals from distinct people"
    )]
    AlreadyApproved {
        /// The run.
        run_id: String,
        /// Who.
        by: String,
    },
    /// An approval of a run that needs several approvers differs from the
    /// approvals already recorded on it: every approver approves the same
    /// verdicts.
    #[error(
        "the approval of run `{run_id}` differs from the approvals already recorded on it (see `runs show {run_id}`): approve the same verdicts, or deny"
    )]
    DiffersFromPending {
        /// The run.
        run_id: String,
    },
    /// The decision does not fit the kind of pause the run waits in — a
    /// verdict for a run waiting for input, input for a run awaiting
    /// approval; nothing was changed.
    #[error(
        "run `{run_id}` {}, and a decision `{}` does not fit it",
        waits_for(*status),
        verdict.as_str()
    )]
    DoesNotFit {
        /// The run.
        run_id: String,
        /// The kind of pause the run waits in.
        status: SuspendedStatus,
        /// The decision offered.
        verdict: DecisionKind,
    },
    /// The decision was refused by the run's own rules (four eyes, the
    /// input schema, an unusable name); nothing was changed.
    #[error("the decision on run `{run_id}` was refused, and the run waits as it was: {reason}")]
    Refused {
        /// The run.
        run_id: String,
        /// Why.
        reason: Refusal,
    },
    /// A decision through the requester's own client (elicitation) on a
    /// call whose server's operator did not turn elicitation on — or on a
    /// tool no server supplies; nothing was changed.
    #[error(
        "run `{run_id}` cannot be decided through the requester's own client: {why}; an operator turns elicitation on per server (`toolgate server elicitation SERVER on`)"
    )]
    ElicitationOff {
        /// The run.
        run_id: String,
        /// Which call's tool, and why.
        why: String,
    },
    /// A rerun or skip chosen through the requester's own client: whether a
    /// call that may have run runs again is an operator's choice.
    #[error(
        "run `{run_id}`: whether a call whose outcome is unknown runs again is an operator's choice, never made through the requester's own client"
    )]
    ChoiceThroughClient {
        /// The run.
        run_id: String,
    },
    /// A choice names a call that is not the one whose outcome is unknown.
    #[error(
        "run `{run_id}` has no call `{call_id}` whose outcome is unknown; {}",
        if waiting.is_empty() { "it waits for no choice".to_owned() } else { format!("it waits for a choice on {}", waiting.join(", ")) }
    )]
    NotTheUnknownCall {
        /// The run.
        run_id: String,
        /// The call named.
        call_id: String,
        /// The calls that wait for a choice.
        waiting: Vec<String>,
    },
    /// A choice does not carry the digest shown beside the call it names:
    /// another call, another attempt, other arguments, another run.
    #[error(
        "the choice names a different call or attempt than the one run `{run_id}` waits on: the call shown is unknown; review it with `runs show {run_id}` and choose with the digest shown beside the call"
    )]
    StaleChoice {
        /// The run.
        run_id: String,
    },
    /// A choice on a call whose outcome is unknown says why.
    #[error(
        "a choice on run `{run_id}` needs a reason in words: say why the call runs again or not"
    )]
    NoReason {
        /// The run.
        run_id: String,
    },
    /// This person already chose to run the call again, and the run needs
    /// several distinct people to.
    #[error(
        "`{by}` has already chosen to run the call of run `{run_id}` again, which needs choices from distinct people"
    )]
    AlreadyChose {
        /// The run.
        run_id: String,
        /// Who.
        by: String,
    },
    /// The stored document does not decode; nothing was changed.
    #[error("suspended run `{run_id}` is stored but unreadable, and was left untouched: {error}")]
    Corrupt {
        /// The run.
        run_id: String,
        /// Why.
        error: CorruptState,
    },
    /// An approval "and from now on" that cannot be given: nothing was
    /// recorded.
    #[error(
        "nothing was recorded on run `{run_id}`: its tool cannot be declared \"no approval\" from now on: {why}"
    )]
    NotFromNowOn {
        /// The run.
        run_id: String,
        /// Why.
        why: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for ClaimError {
    fn from(error: sqlx::Error) -> Self {
        ClaimError::Store(StoreError::Database(error))
    }
}

fn waits_for(status: SuspendedStatus) -> &'static str {
    match status {
        SuspendedStatus::AwaitingApproval => "awaits approval",
        SuspendedStatus::WaitingForInput => "waits for input",
    }
}
