//! A stored suspension's life: the one owner of the `state` and `execution`
//! columns of `suspended_run`, of every value they take and of every
//! transition between them. No other SQL of the store spells a state.
//!
//! ```text
//!   state   open ──decided──▶ decided ──────────────┐
//!             ▲                  │                  │
//!           release        execution: pending ◀───────── hand back (an operator's choice)
//!             │                  │ claim             │
//!             └──────────── resuming ──conclude──▶ done | outcome_unknown
//!                              │ ▲ unclaim / renew
//!
//!   open ──outcome lost──▶ decided, outcome_unknown   (a call run with no
//!                                                      decision, answer lost)
//! ```
//!
//! An open suspension that expired is closed (`decided`, `done`) when it is
//! asked again; its successor is a new, open suspension.

use crate::db::{Query, Tx};
use crate::{StoreError, now_ms};

/// Whether a suspension waits for a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Waiting for a decision.
    Open,
    /// Decided (or closed); its execution says what became of it.
    Decided,
}

impl State {
    /// The stored spelling.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            State::Open => "open",
            State::Decided => "decided",
        }
    }

    /// Reads a stored spelling; `None` for anything else.
    pub(crate) fn from_stored(text: &str) -> Option<Self> {
        [State::Open, State::Decided]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// What became of a decided suspension's turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Execution {
    /// Waiting for its host to claim it.
    Pending,
    /// A host holds it under a lease.
    Resuming,
    /// A call started and never ended, and is not safe to run again: it
    /// waits for an operator's choice.
    OutcomeUnknown,
    /// Finished with it (finished, paused afresh, failed or closed).
    Done,
}

impl Execution {
    /// The stored spelling.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Execution::Pending => "pending",
            Execution::Resuming => "resuming",
            Execution::OutcomeUnknown => "outcome_unknown",
            Execution::Done => "done",
        }
    }

    /// Reads a stored spelling; `None` for anything else.
    pub(crate) fn from_stored(text: &str) -> Option<Self> {
        [
            Execution::Pending,
            Execution::Resuming,
            Execution::OutcomeUnknown,
            Execution::Done,
        ]
        .into_iter()
        .find(|e| e.as_str() == text)
    }
}

/// Conditions over a `suspended_run` row, for the store's queries.
pub(crate) mod when {
    /// The row waits for a decision.
    pub(crate) const OPEN: &str = "state = 'open'";
    /// `s`, the row as aliased, is not done with: open, or decided and not
    /// finished.
    pub(crate) const S_NOT_DONE: &str = "s.state = 'open' OR s.execution != 'done'";
    /// `s` waits for an operator's choice on a call whose outcome is unknown.
    pub(crate) const S_OUTCOME_UNKNOWN: &str = "s.execution = 'outcome_unknown'";
    /// The row is decided and free for a host to claim: waiting, or held
    /// under a lease that ran out — `now` is the placeholder (`$2`, …) of
    /// the current time.
    pub(crate) fn claimable(now: &str) -> String {
        format!(
            "state = 'decided'
               AND (execution = 'pending' OR (execution = 'resuming' AND lease_until < {now}))"
        )
    }
}

/// The execution a newly stored suspension starts with.
pub(crate) const NEW_EXECUTION: Execution = Execution::Pending;

/// Open → decided, its turn waiting for its host — the conditional update of
/// which, of any number of concurrent deciders, exactly one wins. False when
/// it was not open any more.
pub(crate) async fn mark_decided(
    tx: &mut Tx,
    suspension_id: i64,
    decided_by: &str,
    now: i64,
) -> Result<bool, StoreError> {
    let marked = Query::new(
        "UPDATE suspended_run SET state = 'decided', decided_by = $1, decided_at = $2,
                execution = 'pending', updated_at = $3
         WHERE id = $4 AND state = 'open'",
    )
    .bind(decided_by)
    .bind(now)
    .bind(now)
    .bind(suspension_id)
    .execute(&mut *tx)
    .await?;
    Ok(marked == 1)
}

/// Open → closed (decided, done) with `why` as its outcome: an expired pause
/// asked again, whose successor is stored beside it.
pub(crate) async fn close(
    tx: &mut Tx,
    suspension_id: i64,
    by: &str,
    why: &str,
    now: i64,
) -> Result<(), StoreError> {
    Query::new(
        "UPDATE suspended_run SET state = 'decided', decided_by = $1, decided_at = $2,
                execution = 'done', outcome = $3, updated_at = $4
         WHERE id = $5 AND state = 'open'",
    )
    .bind(by)
    .bind(now)
    .bind(why)
    .bind(now)
    .bind(suspension_id)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Decided → open again, when its resume was refused before anything of the
/// turn ran: only by the claim `instance` that holds it. True when it was
/// released.
pub(crate) async fn release(
    tx: &mut Tx,
    suspension_id: i64,
    instance: &str,
) -> Result<bool, StoreError> {
    let released = Query::new(
        "UPDATE suspended_run SET state = 'open', decided_by = NULL, decided_at = NULL,
                execution = 'pending', resumed_by = NULL, lease_until = NULL, updated_at = $1
         WHERE id = $2 AND state = 'decided' AND resumed_by = $3",
    )
    .bind(now_ms())
    .bind(suspension_id)
    .bind(instance)
    .execute(&mut *tx)
    .await?;
    Ok(released == 1)
}

/// Claimable → resuming, held by `token` until `lease_until`. True when this
/// claim won.
pub(crate) async fn claim(
    tx: &mut Tx,
    suspension_id: i64,
    token: &str,
    lease_until: i64,
    now: i64,
) -> Result<bool, StoreError> {
    let claimed = Query::new(format!(
        "UPDATE suspended_run SET execution = 'resuming', resumed_by = $1, lease_until = $2, updated_at = $3
         WHERE id = $4 AND {}",
        when::claimable("$3")
    ))
    .bind(token)
    .bind(lease_until)
    .bind(now)
    .bind(suspension_id)
    .execute(&mut *tx)
    .await?;
    Ok(claimed == 1)
}

/// Resuming → as it was before the claim: waiting for a host, or — when a
/// turn was planned — a resume any host of the name picks up.
pub(crate) async fn unclaim(
    tx: &mut Tx,
    suspension_id: i64,
    token: &str,
) -> Result<(), StoreError> {
    Query::new(
        "UPDATE suspended_run SET
             execution = CASE WHEN EXISTS (SELECT 1 FROM turn_plan WHERE suspension_id = $1)
                              THEN 'resuming' ELSE 'pending' END,
             resumed_by = NULL, lease_until = 0, updated_at = $2
         WHERE id = $3 AND resumed_by = $4 AND execution = 'resuming'",
    )
    .bind(suspension_id)
    .bind(now_ms())
    .bind(suspension_id)
    .bind(token)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Renews the lease of the claim `token` holds. False when it no longer
/// holds the suspension.
pub(crate) async fn renew(
    tx: &mut Tx,
    suspension_id: i64,
    token: &str,
    lease_until: i64,
    now: i64,
) -> Result<bool, StoreError> {
    let held = Query::new(
        "UPDATE suspended_run SET lease_until = $1, updated_at = $2
         WHERE id = $3 AND resumed_by = $4 AND execution = 'resuming'",
    )
    .bind(lease_until)
    .bind(now)
    .bind(suspension_id)
    .bind(token)
    .execute(&mut *tx)
    .await?;
    Ok(held == 1)
}

/// Resuming → `to` (done, or waiting for an operator's choice), with
/// `outcome` in words. False when the claim `token` no longer holds it.
pub(crate) async fn conclude(
    tx: &mut Tx,
    suspension_id: i64,
    token: &str,
    to: Execution,
    outcome: &str,
) -> Result<bool, StoreError> {
    let concluded = Query::new(
        "UPDATE suspended_run SET execution = $1, outcome = $2, resumed_by = NULL,
                lease_until = NULL, updated_at = $3
         WHERE id = $4 AND resumed_by = $5 AND execution = 'resuming'",
    )
    .bind(to.as_str())
    .bind(outcome)
    .bind(now_ms())
    .bind(suspension_id)
    .bind(token)
    .execute(&mut *tx)
    .await?;
    Ok(concluded == 1)
}

/// Decided → done, for the decided runs of a host of runs of one call
/// (`owner`) that no client claimed since before `decided_before`: their
/// call was never asked again. The suspensions closed and their runs.
pub(crate) async fn expire_unclaimed(
    tx: &mut Tx,
    owner: &str,
    decided_before: i64,
    why: &str,
    now: i64,
) -> Result<Vec<(i64, String)>, StoreError> {
    let rows = Query::new(
        "UPDATE suspended_run SET execution = 'done', outcome = $1, updated_at = $2
         WHERE owner = $3 AND state = 'decided' AND execution = 'pending' AND decided_at < $4
         RETURNING id, run_id",
    )
    .bind(why)
    .bind(now)
    .bind(owner)
    .bind(decided_before)
    .fetch_all(&mut *tx)
    .await?;
    rows.iter()
        .map(|row| Ok((row.try_get("id")?, row.try_get("run_id")?)))
        .collect()
}

/// Where the newest suspension of a run stands, as a run of one call's
/// host reads it.
pub(crate) fn standing_of(state: &str, execution: &str) -> Option<(State, Execution)> {
    Some((
        State::from_stored(state)?,
        Execution::from_stored(execution)?,
    ))
}

/// Open (just stored) → decided, its call's outcome unknown, with `outcome`
/// in words: a turn that ran with no decision and no host journaling it —
/// a call the gate let run at once — whose answer was lost. It stands as a
/// run whose host stopped mid-call and that was picked up: it waits for an
/// operator's choice ([`hand_back`] once it stands). No decision is
/// recorded: none was taken. False when it was not open.
pub(crate) async fn outcome_lost(
    tx: &mut Tx,
    suspension_id: i64,
    outcome: &str,
    now: i64,
) -> Result<bool, StoreError> {
    let marked = Query::new(
        "UPDATE suspended_run SET state = 'decided', decided_at = $1, execution = 'outcome_unknown',
                outcome = $2, updated_at = $3
         WHERE id = $4 AND state = 'open'",
    )
    .bind(now)
    .bind(outcome)
    .bind(now)
    .bind(suspension_id)
    .execute(&mut *tx)
    .await?;
    Ok(marked == 1)
}

/// Outcome unknown → waiting for its host again, once an operator's choice
/// stands.
pub(crate) async fn hand_back(tx: &mut Tx, suspension_id: i64, now: i64) -> Result<(), StoreError> {
    Query::new(
        "UPDATE suspended_run SET execution = 'pending', outcome = NULL, updated_at = $1
         WHERE id = $2 AND execution = 'outcome_unknown'",
    )
    .bind(now)
    .bind(suspension_id)
    .execute(&mut *tx)
    .await?;
    Ok(())
}
