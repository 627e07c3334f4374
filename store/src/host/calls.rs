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

/// A host of runs of one call ([`toolgate::Agent::call`]), named `gateway`
/// or `gateway.…` — names a [`Host`] is refused. It saves only runs of one
/// call, claims only the run it is asked for, by id — never "the next
/// decided run" — and resumes them with no model, so a run of one call is
/// resumed by the process that started it (or, by id, the one that serves
/// the client's retry), never by a host that does not know the call.
#[derive(Debug, Clone)]
pub struct CallHost {
    host: Host,
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
