//! The host of runs of one call: the process that holds an MCP client's
//! call saves the run it became, waits for its decision, and resumes it —
//! and no other host ever does.

use std::time::Duration;

use toolgate::Registry;
use toolgate::run::NoModel;
use toolgate::suspend::SuspendedRun;

use super::{Host, Resumable, Resumed};
use crate::{Store, StoreError};

/// What a run of one call waits for from a person ([`CallHost::waits_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitsFor {
    /// A verdict (or input) on its call.
    Decision,
    /// An operator's choice — run again or not — on a call whose outcome
    /// is unknown.
    Choice,
}

/// Where a run of one call stands, as the process that answers its call
/// reads it ([`CallHost::run_standing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStanding {
    /// It waits for a verdict (or input) on its call.
    Open,
    /// Decided, and no process resumes it yet: the next to claim it does.
    Decided,
    /// A process resumes it now (its call may be running), under a lease
    /// that has not run out.
    Running,
    /// Decided and claimed, but the process resuming it stopped: its lease
    /// ran out, and the next to claim it picks it up from its journal.
    Stopped,
    /// Its call's outcome is unknown: it waits for an operator's choice.
    OutcomeUnknown,
    /// Over: finished, refused, expired or closed.
    Done,
}

/// A call held under its key ([`CallHost::hold`], [`CallHost::held`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldCall {
    /// The run the call became.
    pub run_id: String,
    /// Its answer, as the host stored it, once the run is over.
    pub answer: Option<String>,
}

/// What [`CallHost::hold`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holding {
    /// The run was saved, and the key names it.
    Held,
    /// The key already names a live run — the same call, asked earlier or
    /// at the same time, by this process or another: nothing was saved, and
    /// the call joins that run.
    Joined(HeldCall),
}

/// A host of runs of one call ([`toolgate::Agent::call`]), named `gateway`
/// or `gateway.…` — names a [`Host`] is refused. It saves only runs of one
/// call, claims only the run it is asked for, by id — never "the next
/// decided run" — and resumes them with no model, so a run of one call is
/// resumed by the process that started it (or, by id, the one that serves
/// the client's retry), never by a host that does not know the call.
#[derive(Debug, Clone)]
pub struct CallHost {
    pub(super) host: Host,
}

impl CallHost {
    /// A host of runs of one call named `name`: `gateway`, or a name that
    /// begins `gateway.`.
    pub fn new(store: Store, name: &str) -> Result<Self, StoreError> {
        if !crate::names::is_reserved_host_name(name) {
            return Err(StoreError::InvalidHostName {
                name: toolgate::visible::visible(name).into_owned(),
                problem: "a host of runs of one call is named `gateway` or `gateway.` and more, names no other host may take",
            });
        }
        Ok(Self {
            host: Host::named(store, name)?,
        })
    }

    /// The same host with another lease (see [`Host::with_lease`]).
    #[must_use]
    pub fn with_lease(self, lease: Duration) -> Self {
        Self {
            host: self.host.with_lease(lease),
        }
    }

    /// The host's name.
    pub fn name(&self) -> &str {
        self.host.name()
    }

    /// Saves the pause of a run of one call, owned by this host; any other
    /// run is refused, nothing saved.
    pub async fn save(&self, run: &SuspendedRun) -> Result<i64, StoreError> {
        self.host.store.save_suspended(run, self.host.name()).await
    }

    /// Saves the pause of a run of one call and registers it under `key` —
    /// what makes a call the same call — in one transaction, unless the key
    /// already names a live run: a run that is not over, or one whose
    /// answer was given less than `keep` ago. Then nothing is saved and the
    /// call joins that run ([`Holding::Joined`]). Of calls with one key
    /// asked at once, by any number of processes, exactly one is saved.
    pub async fn hold(
        &self,
        key: &str,
        run: &SuspendedRun,
        keep: Duration,
    ) -> Result<Holding, StoreError> {
        let store = &self.host.store;
        let (_writer, mut tx) = store.write().await?;
        if let Some(existing) = register(&mut tx, key, run.run_id(), self.host.name(), keep).await?
        {
            // Nothing was written: dropped, the transaction rolls back.
            drop(tx);
            return Ok(Holding::Joined(existing));
        }
        store
            .insert_suspended(&mut tx, run, self.host.name())
            .await?;
        tx.commit().await?;
        Ok(Holding::Held)
    }

    /// The live run `key` names, if any: not over, or over with its answer
    /// given less than `keep` ago.
    pub async fn held(&self, key: &str, keep: Duration) -> Result<Option<HeldCall>, StoreError> {
        let row = held_row(&self.host.store.pool, key, self.host.name(), keep).await?;
        Ok(row.and_then(|(held, stale)| (!stale).then_some(held)))
    }

    /// Keeps the answer of the run `run_id`, held under `key`, for the same
    /// call asked again.
    pub async fn answered(&self, key: &str, run_id: &str, answer: &str) -> Result<(), StoreError> {
        crate::db::Query::new(
            "UPDATE held_call SET answer = $1, answered_at = $2 WHERE call_key = $3 AND run_id = $4",
        )
        .bind(answer)
        .bind(crate::now_ms())
        .bind(key)
        .bind(run_id)
        .execute(&self.host.store.pool)
        .await?;
        Ok(())
    }

    /// The answer kept for the run `run_id`, whatever key it was held
    /// under.
    pub async fn answer_of(&self, run_id: &str) -> Result<Option<String>, StoreError> {
        crate::db::Query::new(
            "SELECT answer FROM held_call WHERE run_id = $1 AND owner = $2 AND answer IS NOT NULL",
        )
        .bind(run_id)
        .bind(self.host.name())
        .scalar_optional(&self.host.store.pool)
        .await
    }

    /// The keys of this host's held calls registered at or after
    /// `since_ms` (milliseconds since the epoch, as the registering
    /// process's clock wrote them), with when each was: what a gateway
    /// keeps in memory to tell, without a read per call, that a call asked
    /// now names no run.
    pub async fn held_keys_since(&self, since_ms: i64) -> Result<Vec<(String, i64)>, StoreError> {
        let mut keys = Vec::new();
        crate::db::Query::new(
            "SELECT call_key, created_at FROM held_call WHERE owner = $1 AND created_at >= $2",
        )
        .bind(self.host.name())
        .bind(since_ms)
        .fetch_each(&self.host.store.pool, |row| {
            keys.push((row.take(0)?, row.take(1)?));
            Ok::<_, StoreError>(())
        })
        .await?;
        Ok(keys)
    }

    /// The key the run `run_id` was held under, if it was.
    pub async fn key_of(&self, run_id: &str) -> Result<Option<String>, StoreError> {
        crate::db::Query::new("SELECT call_key FROM held_call WHERE run_id = $1 AND owner = $2")
            .bind(run_id)
            .bind(self.host.name())
            .scalar_optional(&self.host.store.pool)
            .await
    }

    /// Where the run `run_id`, of this host's, stands; `None` when it is no
    /// run of this host's.
    pub async fn run_standing(&self, run_id: &str) -> Result<Option<CallStanding>, StoreError> {
        use crate::suspension::{Execution, State};
        let row = crate::db::Query::new(
            "SELECT state, execution, lease_until FROM suspended_run WHERE run_id = $1 AND owner = $2
             ORDER BY id DESC LIMIT 1",
        )
        .bind(run_id)
        .bind(self.host.name())
        .fetch_optional(&self.host.store.pool)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let state: String = row.try_get("state")?;
        let execution: String = row.try_get("execution")?;
        let lease_until: Option<i64> = row.try_get("lease_until")?;
        let standing = crate::suspension::standing_of(&state, &execution).ok_or_else(|| {
            StoreError::Unreadable {
                what: "suspended run",
                reason: format!("it stands `{state}`, `{execution}`"),
            }
        })?;
        Ok(Some(match standing {
            (State::Open, _) => CallStanding::Open,
            (State::Decided, Execution::Pending) => CallStanding::Decided,
            (State::Decided, Execution::Resuming)
                if lease_until.is_some_and(|until| until < crate::now_ms()) =>
            {
                CallStanding::Stopped
            }
            (State::Decided, Execution::Resuming) => CallStanding::Running,
            (State::Decided, Execution::OutcomeUnknown) => CallStanding::OutcomeUnknown,
            (State::Decided, Execution::Done) => CallStanding::Done,
        }))
    }

    /// Closes the decided runs of this host's that no process claimed for
    /// `unasked` after their decision — their call was never asked again —
    /// as expired, saying why. The runs closed.
    pub async fn expire_unasked(&self, unasked: Duration) -> Result<Vec<String>, StoreError> {
        let now = crate::now_ms();
        let before = now.saturating_sub(i64::try_from(unasked.as_millis()).unwrap_or(i64::MAX));
        let why = format!(
            "expired: decided, but its client did not ask for the call again within {}",
            shown_duration(unasked)
        );
        let (_writer, mut tx) = self.host.store.write().await?;
        let closed =
            crate::suspension::expire_unclaimed(&mut tx, self.host.name(), before, &why, now)
                .await?;
        // Their calls are new calls now.
        for (suspension_id, run_id) in &closed {
            crate::db::Query::new("DELETE FROM held_call WHERE run_id = $1 AND owner = $2")
                .bind(run_id)
                .bind(self.host.name())
                .execute(&mut tx)
                .await?;
            self.host
                .store
                .announce(
                    &mut tx,
                    *suspension_id,
                    crate::outbox::Happened::Expired { why: &why },
                )
                .await?;
        }
        tx.commit().await?;
        Ok(closed.into_iter().map(|(_, run_id)| run_id).collect())
    }

    /// Claims the run `run_id` once it is decided ([`Host::claim_run`]);
    /// `None` while it waits, or when it is not this host's.
    pub async fn claim(&self, run_id: &str) -> Result<Option<Resumable>, StoreError> {
        self.host.claim_run(run_id).await
    }

    /// The store.
    pub fn store(&self) -> &Store {
        self.host.store()
    }

    /// The runs of this host's name whose process stopped while it resumed
    /// them — claimed, their lease run out, as a living process's never does
    /// (it is renewed while a call runs) — oldest first: the runs a process
    /// of this name picks up with [`CallHost::claim`], by the rule every host
    /// follows, so their journal tells what became of the call.
    pub async fn stopped(&self) -> Result<Vec<String>, StoreError> {
        let rows = crate::db::Query::new(
            "SELECT run_id FROM suspended_run WHERE owner = $1 AND state = 'decided'
               AND execution = 'resuming' AND lease_until < $2 ORDER BY id",
        )
        .bind(self.host.name())
        .bind(crate::now_ms())
        .fetch_all(&self.host.store.pool)
        .await?;
        rows.iter()
            .map(|row| Ok(row.try_get::<String, _>("run_id")?))
            .collect()
    }

    /// What the run `run_id`, of this host's, waits for from a person: a
    /// decision, or an operator's choice on a call whose outcome is
    /// unknown; `None` when it waits for no one.
    pub async fn waits_for(&self, run_id: &str) -> Result<Option<WaitsFor>, StoreError> {
        let row = crate::db::Query::new(
            "SELECT state, execution FROM suspended_run WHERE run_id = $1 AND owner = $2
               AND (state = 'open' OR execution = 'outcome_unknown')
             ORDER BY id DESC LIMIT 1",
        )
        .bind(run_id)
        .bind(self.host.name())
        .fetch_optional(&self.host.store.pool)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let state: String = row.try_get("state")?;
        Ok(Some(if state == "open" {
            WaitsFor::Decision
        } else {
            WaitsFor::Choice
        }))
    }

    /// Waits for the run `run_id` to be decided and claims it: polls every
    /// `poll`, and wakes at once when a decision is recorded through a
    /// handle of this process's store (or, on PostgreSQL, by anyone).
    pub async fn wait_for(&self, run_id: &str, poll: Duration) -> Result<Resumable, StoreError> {
        loop {
            if let Some(task) = self
                .host
                .wait_to_claim(poll, Some(run_id), std::future::pending())
                .await?
            {
                return Ok(task);
            }
        }
    }

    /// [`CallHost::wait_for`] until `stop` resolves (a deadline, a client
    /// that no longer waits): `None` when the run was not decided by then.
    /// `stop` is looked at between claims, never during one, so no run is
    /// left claimed with no one to resume it — as a timeout around
    /// [`CallHost::wait_for`] may leave one, cutting its claim short.
    pub async fn wait_until(
        &self,
        run_id: &str,
        poll: Duration,
        stop: impl Future<Output = ()>,
    ) -> Result<Option<Resumable>, StoreError> {
        self.host.wait_to_claim(poll, Some(run_id), stop).await
    }

    /// Resumes a claimed run of one call: the turn runs as decided, through
    /// the journal, and the run finishes with the call's result
    /// ([`crate::Ended::Finished`]) — or waits again, for input say — asking
    /// no model.
    pub async fn resume(
        &self,
        task: Resumable,
        registry: &Registry,
    ) -> Result<Resumed, StoreError> {
        self.host.resume(task, registry, &NoModel).await
    }
}

/// How long a run of one call that is over may stay without its answer
/// kept before its key names it no more: the process that resumed it keeps
/// the answer right after the run ends.
pub const ANSWER_GRACE: Duration = Duration::from_secs(10);

/// When a held call's row no longer names a live run: its answer was given
/// before `kept_since` (the placeholder given), or it was never answered
/// and its run is over — for longer than [`ANSWER_GRACE`], before
/// `over_since` — or gone.
fn stale(kept_since: &str, over_since: &str) -> String {
    format!(
        "(answered_at IS NOT NULL AND answered_at < {kept_since})
         OR (answered_at IS NULL AND NOT EXISTS (
               SELECT 1 FROM suspended_run s WHERE s.run_id = held_call.run_id
                 AND s.owner = held_call.owner
                 AND ({live} OR s.updated_at > {over_since})))",
        live = crate::suspension::when::S_NOT_DONE
    )
}

/// Registers the run `run_id` under `key` — what makes a call the same
/// call — in the caller's transaction, unless the key already names a live
/// run of `owner`'s: a run that is not over, or one whose answer was given
/// less than `keep` ago. That run, when it does; then nothing was written.
/// One statement on the key: of calls with one key registered at once, by
/// any number of processes, exactly one is.
pub(super) async fn register(
    tx: &mut crate::db::Tx,
    key: &str,
    run_id: &str,
    owner: &str,
    keep: Duration,
) -> Result<Option<HeldCall>, StoreError> {
    let now = crate::now_ms();
    let (kept_since, over_since) = cutoffs(keep);
    // The first writer of a key inserts it, and a concurrent one waits for
    // it and inserts nothing.
    let inserted = crate::db::Query::new(
        "INSERT INTO held_call (call_key, run_id, owner, created_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (call_key) DO NOTHING RETURNING run_id",
    )
    .bind(key)
    .bind(run_id)
    .bind(owner)
    .bind(now)
    .fetch_optional(&mut *tx)
    .await?;
    if inserted.is_some() {
        return Ok(None);
    }
    // A row whose run is over — its answer given and no longer kept, or
    // never answered (expired, closed) — is the key's no more.
    let replaced = crate::db::Query::new(format!(
        "UPDATE held_call SET run_id = $1, created_at = $2, answer = NULL, answered_at = NULL
         WHERE call_key = $3 AND owner = $4 AND ({stale})
         RETURNING run_id",
        stale = stale("$5", "$6")
    ))
    .bind(run_id)
    .bind(now)
    .bind(key)
    .bind(owner)
    .bind(kept_since)
    .bind(over_since)
    .fetch_optional(&mut *tx)
    .await?;
    if replaced.is_some() {
        return Ok(None);
    }
    match held_row(&mut *tx, key, owner, keep).await? {
        Some((held, false)) => Ok(Some(held)),
        // The key is another host's (the key covers the host's name, so it
        // never is), or went stale between the two statements (it cannot,
        // under one writer).
        _ => Err(StoreError::Unreadable {
            what: "held call",
            reason: "its key names another host's run".to_owned(),
        }),
    }
}

/// The two cut-offs of [`stale`], in milliseconds since the epoch.
fn cutoffs(keep: Duration) -> (i64, i64) {
    let now = crate::now_ms();
    let ago = |d: Duration| now.saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    (ago(keep), ago(ANSWER_GRACE))
}

/// The row of `key`, of `owner`'s, and whether it is stale.
async fn held_row<'e>(
    on: impl Into<crate::db::On<'e>>,
    key: &str,
    owner: &str,
    keep: Duration,
) -> Result<Option<(HeldCall, bool)>, StoreError> {
    let (kept_since, over_since) = cutoffs(keep);
    let row = crate::db::Query::new(format!(
        "SELECT run_id, answer, CAST(CASE WHEN {stale} THEN 1 ELSE 0 END AS BIGINT) AS stale
         FROM held_call WHERE call_key = $1 AND owner = $2",
        stale = stale("$3", "$4")
    ))
    .bind(key)
    .bind(owner)
    .bind(kept_since)
    .bind(over_since)
    .fetch_optional(on)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let stale: i64 = row.try_get("stale")?;
    Ok(Some((
        HeldCall {
            run_id: row.try_get("run_id")?,
            answer: row.try_get("answer")?,
        },
        stale != 0,
    )))
}

/// A duration as an operator reads it: `90 s`, `15 min`, `2 h`.
fn shown_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds.is_multiple_of(3600) && seconds > 0 {
        format!("{} h", seconds / 3600)
    } else if seconds.is_multiple_of(60) && seconds > 0 {
        format!("{} min", seconds / 60)
    } else {
        format!("{seconds} s")
    }
}
