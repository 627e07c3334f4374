//! The host side of a stored run: the process that owns a run — its model
//! client, its tools, its credentials — resumes it once somebody decided.
//!
//! Deciding only records ([`Store::decide`]). A [`Host`] names itself (the
//! name its runs are saved under), finds decided runs it owns, claims each
//! for exactly one of its processes under a lease, and resumes it through the
//! core's typed API with its own registry and model, journaling every turn it
//! runs so that a host that dies mid-turn is followed by one that knows
//! exactly what ran (see [`toolgate::journal`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use toolgate::Registry;
use toolgate::audit::DecisionRecord;
use toolgate::journal::{CallRecord, TurnPlan};
use toolgate::run::{Model, RunState};
use toolgate::suspend::{Refusal, SuspendedRun, SuspendedStatus};

use crate::{Store, StoreError};

pub use calls::{ANSWER_GRACE, CallHost, CallStanding, HeldCall, Holding, WaitsFor};
pub use lost::LostAnswer;

mod calls;
pub(crate) mod choose;
mod claim;
mod journal;
mod lost;
mod ran;
mod resume;
mod seen;

pub use ran::{RanCall, RanOutcome};
pub use seen::{HOST_HEARTBEAT, HostSeen};

/// A host: the name its runs are saved under, and this process's claim on
/// the runs it resumes.
#[derive(Debug, Clone)]
pub struct Host {
    store: Store,
    name: String,
    lease: Duration,
    /// Decided runs this host could not read, by suspension: passed over
    /// (and left as they are, for an operator) so the others still run.
    set_aside: Arc<Mutex<BTreeMap<i64, SetAside>>>,
    /// When this host last wrote that it was seen (its heartbeat), in
    /// milliseconds since the epoch: the heartbeat is written at most every
    /// [`HOST_HEARTBEAT`].
    seen_at: Arc<std::sync::atomic::AtomicI64>,
}

/// A decided run a host could not read — no key, the wrong key, a row
/// changed outside the store — and so passed over. It is not closed: it
/// stays decided and waiting, for an operator to see (`runs list`) and for a
/// host that can read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetAside {
    /// The run.
    pub run_id: String,
    /// Why it could not be read.
    pub reason: String,
}

/// A decided run this host claimed, ready for [`Host::resume`].
#[derive(Debug)]
pub struct Resumable {
    suspension_id: i64,
    run_id: String,
    /// This claim's own token: every write of the resume is conditional on
    /// it, so no other claim — of another process, or of a clone of this
    /// host in this one — can write for the run while this one holds it.
    token: String,
    work: Work,
}

#[derive(Debug)]
enum Work {
    /// The decision was never acted on: resume with it.
    Fresh {
        run: Box<SuspendedRun>,
        record: DecisionRecord,
        input: Option<Value>,
    },
    /// A host stopped mid-turn: pick the turn up from the journal.
    Recover {
        plan: TurnPlan,
        known: Vec<CallRecord>,
    },
}

impl Resumable {
    /// The run.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// True when a host stopped while it ran this run, and its journal is
    /// picked up.
    pub fn is_recovery(&self) -> bool {
        matches!(self.work, Work::Recover { .. })
    }
}

/// Where a run stands after [`Host::resume`].
#[derive(Debug)]
#[non_exhaustive]
pub enum Ended {
    /// The model gave its final answer.
    Finished {
        /// The answer.
        answer: String,
    },
    /// The run reached its cap of model requests.
    LimitReached,
    /// The run paused again; the pause is saved, owned by this host.
    Suspended {
        /// The kind of pause.
        status: SuspendedStatus,
    },
    /// A call started and never ended — a host stopped while it ran, or its
    /// answer was lost after it reached its server — and is not safe to run
    /// again: the run waits for an operator to choose (`rerun` or `skip`).
    OutcomeUnknown {
        /// The call's id.
        call_id: String,
        /// Its tool.
        tool: String,
        /// What happened, in words: "started and never ended when a host
        /// stopped", or how its answer was lost.
        why: String,
    },
    /// The recorded decision was refused at resume (before anything of the
    /// turn ran): it is voided, and the run waits for a fresh decision.
    Refused {
        /// Why.
        reason: Refusal,
    },
    /// The run could not go on (its model failed, say); the failure is the
    /// run's stored outcome.
    Failed {
        /// What happened.
        error: String,
    },
    /// The journal could not record, so the run stopped where it was; a host
    /// picks it up from the journal once this one's lease has run out.
    Interrupted {
        /// What happened.
        error: String,
    },
    /// Another host took the run over (this one's lease ran out); what this
    /// one did after that was not stored.
    Lost,
}

/// One resumed run.
#[derive(Debug)]
pub struct Resumed {
    /// The run.
    pub run_id: String,
    /// Where it stands.
    pub ended: Ended,
    /// The run as it ended, when there is one to show.
    pub state: Option<RunState>,
}

impl Host {
    /// A host of this name over `store`, holding what it claims for 30
    /// seconds at a time (renewed while it works).
    ///
    /// The names of hosts of runs of one call (`gateway`, `gateway.…`,
    /// [`CallHost`]) are refused here.
    pub fn new(store: Store, name: &str) -> Result<Self, StoreError> {
        if crate::names::is_reserved_host_name(name) {
            return Err(StoreError::InvalidHostName {
                name: toolgate::visible::visible(name).into_owned(),
                problem: "`gateway` and names beginning `gateway.` are kept for the gateway's runs of one call, which only the process that started them resumes",
            });
        }
        Self::named(store, name)
    }

    /// A host of any usable name, reserved ones included.
    fn named(store: Store, name: &str) -> Result<Self, StoreError> {
        if let Some(problem) = crate::names::host_name_problem(name) {
            return Err(StoreError::InvalidHostName {
                name: toolgate::visible::visible(name).into_owned(),
                problem,
            });
        }
        Ok(Self {
            store,
            name: name.to_owned(),
            lease: Duration::from_secs(30),
            set_aside: Arc::default(),
            seen_at: Arc::default(),
        })
    }

    /// The same host with another lease: how long a run it claimed stays
    /// its own without a sign of life. A host that dies is followed once the
    /// lease runs out; it is renewed at every journal entry and every third
    /// of it while a call runs.
    #[must_use]
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(10));
        self
    }

    /// The host's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    fn lease_ms(&self) -> i64 {
        i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX)
    }

    /// Saves a run's pause, owned by this host. A run of one call
    /// ([`toolgate::Agent::call`]) is refused: it is saved by the
    /// [`CallHost`] of the process that holds the call, which alone resumes
    /// it.
    pub async fn save(&self, run: &SuspendedRun) -> Result<i64, StoreError> {
        self.store.save_suspended(run, &self.name).await
    }

    /// Claims the run `run_id`, if this host owns it and it is decided (or
    /// its host stopped and its lease ran out), for this process alone —
    /// the same conditional claim as [`Host::next`], of one run. `None` when
    /// it is not this host's, or not ready to resume.
    pub async fn claim_run(&self, run_id: &str) -> Result<Option<Resumable>, StoreError> {
        let Some((suspension_id, run_id, token)) = self.claim_of(Some(run_id)).await? else {
            return Ok(None);
        };
        match self.work(suspension_id).await {
            Ok(work) => Ok(Some(Resumable {
                suspension_id,
                run_id,
                token,
                work,
            })),
            Err(reason) => {
                tracing::error!(run = %run_id, %reason, "a decided run cannot be read by this host; it is given back");
                self.unclaim(suspension_id, &token).await?;
                Err(StoreError::Unresumable {
                    run_id: toolgate::visible::visible(&run_id).into_owned(),
                    reason: reason.to_string(),
                })
            }
        }
    }

    /// Claims the next decided run this host owns — or one whose host
    /// stopped and whose lease ran out — for this process alone, with a
    /// conditional update: of any number of processes of this host, exactly
    /// one gets each run. `None` when there is nothing to do.
    ///
    /// A decided run this host cannot read — no key, the wrong key, a row
    /// changed outside the store — is given back untouched and set aside
    /// ([`Host::set_aside`]), logged as an error, and the next one is
    /// claimed: one unreadable run never holds up the others, and a run is
    /// never closed for what one host cannot read.
    pub async fn next(&self) -> Result<Option<Resumable>, StoreError> {
        loop {
            let Some((suspension_id, run_id, token)) = self.claim().await? else {
                return Ok(None);
            };
            match self.work(suspension_id).await {
                Ok(work) => {
                    return Ok(Some(Resumable {
                        suspension_id,
                        run_id,
                        token,
                        work,
                    }));
                }
                Err(reason) => {
                    tracing::error!(run = %run_id, %reason, "a decided run cannot be read by this host; it is given back and set aside");
                    self.unclaim(suspension_id, &token).await?;
                    let reason = format!(
                        "run `{}` cannot be resumed by this host: {reason}",
                        toolgate::visible::visible(&run_id)
                    );
                    self.set_aside
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(suspension_id, SetAside { run_id, reason });
                }
            }
        }
    }

    /// The decided runs this host passed over because it could not read
    /// them, oldest first. They stay decided and waiting.
    pub fn set_aside(&self) -> Vec<SetAside> {
        self.set_aside
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    /// ` AND id NOT IN (…)` over the runs set aside, their placeholders
    /// numbered from `$first`, and their ids to bind.
    fn passed_over(&self, first: usize) -> (String, Vec<i64>) {
        let ids: Vec<i64> = self
            .set_aside
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .copied()
            .collect();
        if ids.is_empty() {
            return (String::new(), ids);
        }
        let marks = crate::db::placeholders(first, ids.len());
        (format!(" AND id NOT IN ({marks})"), ids)
    }

    /// Waits for the next decided run this host owns: polls every `poll`,
    /// and wakes at once when a decision is recorded through a handle of this
    /// process's store.
    pub async fn wait(&self, poll: Duration) -> Result<Resumable, StoreError> {
        loop {
            if let Some(task) = self
                .wait_to_claim(poll, None, std::future::pending())
                .await?
            {
                return Ok(task);
            }
        }
    }

    /// Waits until a decided run of this host's — any ([`Host::next`]), or
    /// only `run_id` ([`Host::claim_run`]) — is claimed.
    pub(super) async fn wait_to_claim(
        &self,
        poll: Duration,
        run_id: Option<&str>,
        stop: impl Future<Output = ()>,
    ) -> Result<Option<Resumable>, StoreError> {
        self.store.listen();
        let mut stop = std::pin::pin!(stop);
        loop {
            let notified = self.store.inbox.notified();
            let claimed = match run_id {
                None => self.next().await?,
                Some(run_id) => self.claim_run(run_id).await?,
            };
            if claimed.is_some() {
                return Ok(claimed);
            }
            // `stop` is looked at between claims, never during one: a claim
            // is never cut short with its run claimed and not handed on.
            tokio::select! {
                () = notified => {}
                () = tokio::time::sleep(poll) => {}
                () = &mut stop => return Ok(None),
            }
        }
    }

    /// Resumes every decided run this host owns, one after another, until
    /// none is left.
    pub async fn resume_all(
        &self,
        registry: &Registry,
        model: &dyn Model,
    ) -> Result<Vec<Resumed>, StoreError> {
        let mut resumed = Vec::new();
        while let Some(task) = self.next().await? {
            resumed.push(self.resume(task, registry, model).await?);
        }
        Ok(resumed)
    }
}
