//! Claims and leases: which of a host's processes resumes a decided run.

use std::time::Duration;

use crate::db::{Backend, Query};
use crate::{StoreError, now_ms};

use super::{Host, Work};

/// How many times [`Host::next`] looks again for a waiting run it could not
/// take at once (about half a second in all).
pub(super) const CLAIM_ATTEMPTS: u64 = 50;

impl Host {
    /// Gives a claim back as it was: the run waits for a host again.
    pub(super) async fn unclaim(&self, suspension_id: i64, token: &str) -> Result<(), StoreError> {
        let (_writer, mut tx) = self.store.write().await?;
        // Back to what it was: waiting for a host, or — when a turn was
        // planned — a resume any host of the name picks up.
        crate::suspension::unclaim(&mut tx, suspension_id, token).await?;
        tx.commit().await?;
        Ok(())
    }

    pub(super) async fn claim(&self) -> Result<Option<(i64, String, String)>, StoreError> {
        self.claim_of(None).await
    }

    /// [`Host::claim`], of any decided run of this host's or only of the
    /// run `run_id`.
    pub(super) async fn claim_of(
        &self,
        run_id: Option<&str>,
    ) -> Result<Option<(i64, String, String)>, StoreError> {
        self.store.check_keyed()?;
        self.heartbeat().await;
        // A candidate can be out of reach for a moment — another host of the
        // name is claiming it, or a decider's transaction that lost is still
        // rolling back on PostgreSQL — while the poll still sees it waiting:
        // look again, briefly, rather than report nothing to do.
        for attempt in 0..CLAIM_ATTEMPTS {
            if !self.anything_waiting_of(run_id).await? {
                return Ok(None);
            }
            if let Some(claimed) = self.try_claim(run_id).await? {
                return Ok(Some(claimed));
            }
            tokio::time::sleep(Duration::from_millis(2 * (attempt + 1).min(10))).await;
        }
        Ok(None)
    }

    /// The poll — of any run, or only of `run_id`: one indexed read, no
    /// write lock, while nothing is decided.
    async fn anything_waiting_of(&self, run_id: Option<&str>) -> Result<bool, StoreError> {
        let (only, next) = one_run(run_id, 3);
        let (passed_over, ids) = self.passed_over(next);
        let mut query = Query::new(format!(
            "SELECT id FROM suspended_run
             WHERE owner = $1 AND {claimable}{only}{passed_over}
             LIMIT 1",
            claimable = crate::suspension::when::claimable("$2")
        ))
        .bind(&self.name)
        .bind(now_ms());
        if let Some(run_id) = run_id {
            query = query.bind(run_id);
        }
        for id in ids {
            query = query.bind(id);
        }
        let waiting: Option<i64> = query.scalar_optional(&self.store.pool).await?;
        Ok(waiting.is_some())
    }

    /// One attempt: the oldest waiting run, claimed by a conditional update.
    async fn try_claim(
        &self,
        run_id: Option<&str>,
    ) -> Result<Option<(i64, String, String)>, StoreError> {
        let (_writer, mut tx) = self.store.write().await?;
        let now = now_ms();
        // On PostgreSQL, hosts of one name on several machines each take a
        // different row: one another's candidates are skipped, not waited
        // on. The update below stays conditional either way.
        let pick = match tx.backend() {
            Backend::Sqlite => "",
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        };
        let (only, next) = one_run(run_id, 3);
        let (passed_over, ids) = self.passed_over(next);
        let mut query = Query::new(format!(
            "SELECT id, run_id FROM suspended_run
             WHERE owner = $1 AND {claimable}{only}{passed_over}
             ORDER BY decided_at, id LIMIT 1{pick}",
            claimable = crate::suspension::when::claimable("$2")
        ))
        .bind(&self.name)
        .bind(now);
        if let Some(run_id) = run_id {
            query = query.bind(run_id);
        }
        for id in ids {
            query = query.bind(id);
        }
        let row = query.fetch_optional(&mut tx).await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let id: i64 = row.try_get("id")?;
        let run_id: String = row.try_get("run_id")?;
        let token = format!("{}/{}", self.name, claim_token());
        let claimed = crate::suspension::claim(
            &mut tx,
            id,
            &token,
            now.saturating_add(self.lease_ms()),
            now,
        )
        .await?;
        if claimed {
            self.store
                .announce(&mut tx, id, crate::outbox::Happened::Resumed)
                .await?;
        }
        tx.commit().await?;
        if claimed {
            tracing::info!(run = %run_id, claim = %token, "decided run claimed");
            Ok(Some((id, run_id, token)))
        } else {
            Ok(None)
        }
    }

    /// What resuming a claimed run means: the last planned turn and what the
    /// journal knows of it, or — when nothing was planned — the decision.
    pub(super) async fn work(&self, suspension_id: i64) -> Result<Work, Unresumable> {
        // Nothing of the run is read for running before its record is known
        // complete.
        self.store.verify_record(suspension_id).await?;
        if let Some((plan_id, plan)) = self.store.last_plan(suspension_id).await? {
            self.may_resume(plan.run())?;
            let known = self
                .store
                .known_calls(suspension_id, &plan, plan_id)
                .await?;
            return Ok(Work::Recover { plan, known });
        }
        let row = Query::new(
            "SELECT run_id, status, document, digest, requested_by FROM suspended_run WHERE id = $1",
        )
        .bind(suspension_id)
        .fetch_one(&self.store.pool)
        .await?;
        let run = self.store.read_document(&row).map_err(StoreError::from)??;
        self.may_resume(run.state())?;
        let (record, input) = self
            .store
            .standing_decision(suspension_id)
            .await?
            .ok_or(Unresumable::NoDecision)?;
        Ok(Work::Fresh {
            run: Box::new(run),
            record,
            input,
        })
    }
}

/// Why a decided run cannot be resumed by this host: it is given back and
/// set aside, and the others are resumed.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unresumable {
    /// The store could not read it (under a key: it does not verify).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Its document does not decode.
    #[error(transparent)]
    Corrupt(#[from] toolgate::suspend::CorruptState),
    /// It is decided, but no decision stands on it.
    #[error("it is decided, but holds no standing decision")]
    NoDecision,
    /// A run of one call, claimed by a host that resumes runs with a model
    /// (its row's owner was changed): only the gateway's host resumes it.
    #[error(
        "it is a run of one call, which only the gateway's host that holds the call resumes; its row names this host as its owner, which no save wrote"
    )]
    OneCall,
    /// A run with a model, claimed by a host of runs of one call.
    #[error(
        "it is a run with a model, which a host of runs of one call never resumes; its row names this host as its owner, which no save wrote"
    )]
    NotOneCall,
}

impl Host {
    /// Refuses a run this host may not resume, whatever its row's owner
    /// says: a run of one call, unless this is a host of runs of one call,
    /// and only such a run if it is — the rule a run is saved under, held
    /// again when it is resumed.
    fn may_resume(&self, run: &toolgate::run::RunState) -> Result<(), Unresumable> {
        if run.options.one_call == crate::names::is_reserved_host_name(&self.name) {
            Ok(())
        } else if run.options.one_call {
            Err(Unresumable::OneCall)
        } else {
            Err(Unresumable::NotOneCall)
        }
    }
}

/// A claim token unique to this claim: the process, the time and a counter,
/// so no two claims — of two processes, or of two clones of one host in one
/// process — are ever the same.
pub(super) fn claim_token() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{nanos:x}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// ` AND run_id = $n` when only `run_id` is looked for, and the number of
/// the next placeholder.
fn one_run(run_id: Option<&str>, first: usize) -> (String, usize) {
    match run_id {
        Some(_) => (format!(" AND run_id = ${first}"), first + 1),
        None => (String::new(), first),
    }
}
