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
use toolgate::audit::{DecisionKind, DecisionLog, DecisionRecord, LogError};
use toolgate::erased::BoxFuture;
use toolgate::journal::{
    Action, CallRecord, Journal, JournalError, OutcomeUnknown, Recovered, TurnPlan,
};
use toolgate::run::{Model, Outcome, RunError, RunState};
use toolgate::suspend::{
    CallDecisions, Decision, InputSubmission, Refusal, ResumeError, SuspendedRun, SuspendedStatus,
    Verdict,
};
use toolgate::{Agent, Registry, ToolOutput};

use crate::db::{Backend, Query, Tx};
use crate::runs::RecordedLog;
use crate::{Store, StoreError, now_ms};

/// Why a host name cannot be used, or `None` when it can: 1 to 64 ASCII
/// letters, digits, `-`, `_` and `.` — so no two names that read alike are
/// different hosts (a Cyrillic `е` in `dеmo` is refused, not a host nobody
/// runs).
pub fn host_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it is empty")
    } else if name.len() > 64 {
        Some("it is longer than 64 characters")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        Some("only ASCII letters, digits, `-`, `_` and `.` may name a host")
    } else {
        None
    }
}

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
    /// A call started and never ended when a host stopped, and is not safe to
    /// run again: the run waits for an operator to choose (`rerun` or
    /// `skip`).
    OutcomeUnknown {
        /// The call's id.
        call_id: String,
        /// Its tool.
        tool: String,
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
    pub fn new(store: Store, name: &str) -> Result<Self, StoreError> {
        if let Some(problem) = host_name_problem(name) {
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

    /// Saves a run's pause, owned by this host.
    pub async fn save(&self, run: &SuspendedRun) -> Result<i64, StoreError> {
        self.store.save_suspended(run, &self.name).await
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
            match self.work(suspension_id, &run_id).await {
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

    /// ` AND id NOT IN (…)` over the runs set aside, and their ids to bind.
    fn passed_over(&self) -> (String, Vec<i64>) {
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
        let marks = vec!["?"; ids.len()].join(", ");
        (format!(" AND id NOT IN ({marks})"), ids)
    }

    /// Waits for the next decided run this host owns: polls every `poll`,
    /// and wakes at once when a decision is recorded through a handle of this
    /// process's store.
    pub async fn wait(&self, poll: Duration) -> Result<Resumable, StoreError> {
        self.store.listen();
        loop {
            let notified = self.store.inbox.notified();
            if let Some(next) = self.next().await? {
                return Ok(next);
            }
            tokio::select! {
                () = notified => {}
                () = tokio::time::sleep(poll) => {}
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

    /// Gives a claim back as it was: the run waits for a host again.
    async fn unclaim(&self, suspension_id: i64, token: &str) -> Result<(), StoreError> {
        let (_writer, mut tx) = self.store.write().await?;
        // Back to what it was: waiting for a host, or — when a turn was
        // planned — a resume any host of the name picks up.
        Query::new(
            "UPDATE suspended_run SET
                 execution = CASE WHEN EXISTS (SELECT 1 FROM turn_plan WHERE suspension_id = ?)
                                  THEN 'resuming' ELSE 'pending' END,
                 resumed_by = NULL, lease_until = 0, updated_at = ?
             WHERE id = ? AND resumed_by = ? AND execution = 'resuming'",
        )
        .bind(suspension_id)
        .bind(now_ms())
        .bind(suspension_id)
        .bind(token)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn claim(&self) -> Result<Option<(i64, String, String)>, StoreError> {
        self.store.check_keyed()?;
        // A candidate can be out of reach for a moment — another host of the
        // name is claiming it, or a decider's transaction that lost is still
        // rolling back on PostgreSQL — while the poll still sees it waiting:
        // look again, briefly, rather than report nothing to do.
        for attempt in 0..CLAIM_ATTEMPTS {
            if !self.anything_waiting().await? {
                return Ok(None);
            }
            if let Some(claimed) = self.try_claim().await? {
                return Ok(Some(claimed));
            }
            tokio::time::sleep(Duration::from_millis(2 * (attempt + 1).min(10))).await;
        }
        Ok(None)
    }

    /// The poll: one indexed read, no write lock, while nothing is decided.
    async fn anything_waiting(&self) -> Result<bool, StoreError> {
        let (passed_over, ids) = self.passed_over();
        let mut query = Query::new(format!(
            "SELECT id FROM suspended_run
             WHERE owner = ? AND state = 'decided'
               AND (execution = 'pending' OR (execution = 'resuming' AND lease_until < ?)){passed_over}
             LIMIT 1"
        ))
        .bind(&self.name)
        .bind(now_ms());
        for id in ids {
            query = query.bind(id);
        }
        let waiting: Option<i64> = query.scalar_optional(&self.store.pool).await?;
        Ok(waiting.is_some())
    }

    /// One attempt: the oldest waiting run, claimed by a conditional update.
    async fn try_claim(&self) -> Result<Option<(i64, String, String)>, StoreError> {
        let (_writer, mut tx) = self.store.write().await?;
        let now = now_ms();
        // On PostgreSQL, hosts of one name on several machines each take a
        // different row: one another's candidates are skipped, not waited
        // on. The update below stays conditional either way.
        let pick = match tx.backend() {
            Backend::Sqlite => "",
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        };
        let (passed_over, ids) = self.passed_over();
        let mut query = Query::new(format!(
            "SELECT id, run_id FROM suspended_run
             WHERE owner = ? AND state = 'decided'
               AND (execution = 'pending' OR (execution = 'resuming' AND lease_until < ?)){passed_over}
             ORDER BY decided_at, id LIMIT 1{pick}"
        ))
        .bind(&self.name)
        .bind(now);
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
        let claimed = Query::new(
            "UPDATE suspended_run SET execution = 'resuming', resumed_by = ?, lease_until = ?, updated_at = ?
             WHERE id = ? AND state = 'decided'
               AND (execution = 'pending' OR (execution = 'resuming' AND lease_until < ?))",
        )
        .bind(&token)
        .bind(now.saturating_add(self.lease_ms()))
        .bind(now)
        .bind(id)
        .bind(now)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        if claimed == 1 {
            tracing::info!(run = %run_id, claim = %token, "decided run claimed");
            Ok(Some((id, run_id, token)))
        } else {
            Ok(None)
        }
    }

    /// What resuming a claimed run means: the last planned turn and what the
    /// journal knows of it, or — when nothing was planned — the decision.
    async fn work(&self, suspension_id: i64, run_id: &str) -> Result<Work, String> {
        if let Some((plan_id, plan)) = self
            .store
            .last_plan(suspension_id)
            .await
            .map_err(|e| e.to_string())?
        {
            let known = self
                .store
                .known_calls(suspension_id, &plan, plan_id)
                .await
                .map_err(|e| e.to_string())?;
            return Ok(Work::Recover { plan, known });
        }
        let row = Query::new(
            "SELECT run_id, status, document, digest, requested_by FROM suspended_run WHERE id = ?",
        )
        .bind(suspension_id)
        .fetch_one(&self.store.pool)
        .await
        .map_err(|e| e.to_string())?;
        let run = self
            .store
            .read_document(&row)
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        let (record, input) = self
            .store
            .standing_decision(suspension_id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("run `{run_id}` is decided, but holds no standing decision"))?;
        Ok(Work::Fresh {
            run: Box::new(run),
            record,
            input,
        })
    }

    /// Resumes a claimed run with this host's registry and model, journaling
    /// every turn, and stores where it ended: finished, paused again (the
    /// pause saved for this host), outcome unknown, or failed. A decision
    /// refused at resume is voided and the run waits again.
    pub async fn resume(
        &self,
        task: Resumable,
        registry: &Registry,
        model: &dyn Model,
    ) -> Result<Resumed, StoreError> {
        let Resumable {
            suspension_id,
            run_id,
            token,
            work,
        } = task;
        let journal = StoreJournal {
            store: self.store.clone(),
            suspension_id,
            instance: token.clone(),
            lease: self.lease_ms(),
        };
        // Stops renewing when the resume ends — or is dropped mid-way, as a
        // host that dies would.
        let _renewal = AbortOnDrop(tokio::spawn(renew(journal.clone(), self.lease / 3)));
        let result = match work {
            Work::Fresh { run, record, input } => {
                let log = RecordedLog {
                    record: record.clone(),
                };
                let agent = Agent::new(registry, model, &log).with_journal(&journal);
                self.fresh(&agent, *run, &record, input).await
            }
            Work::Recover { plan, known } => {
                let log = NoDecisions;
                let agent = Agent::new(registry, model, &log).with_journal(&journal);
                match agent.recover(plan, &known).await {
                    Ok(Recovered::Outcome(outcome)) => Step::Outcome(outcome),
                    Ok(Recovered::OutcomeUnknown(unknown)) => Step::Unknown(unknown),
                    Err(error) => Step::Error(error),
                }
            }
        };
        let (ended, state) = match result {
            Step::Outcome(outcome) => self.finish(suspension_id, &token, outcome).await?,
            Step::Unknown(unknown) => (self.unknown(suspension_id, &token, &unknown).await?, None),
            Step::Refused(reason) => {
                self.store
                    .release(
                        suspension_id,
                        &token,
                        &format!("refused at resume: {reason}"),
                    )
                    .await?;
                tracing::info!(run = %run_id, %reason, "decision refused at resume; voided, the run waits again");
                (Ended::Refused { reason }, None)
            }
            Step::Review(run, reason) => {
                let fresh = SuspendedRun::AwaitingApproval(run.reviewed_again(registry).await);
                let why = format!(
                    "voided at resume: {reason}; the turn was paused again for a fresh review"
                );
                let ended = if self
                    .close_voided(suspension_id, &token, &why, &fresh)
                    .await?
                {
                    Ended::Refused { reason }
                } else {
                    Ended::Lost
                };
                tracing::info!(run = %run_id, why, "the receipt no longer holds; paused again");
                (ended, None)
            }
            Step::Error(RunError::Journal { error, state }) => (
                Ended::Interrupted {
                    error: error.to_string(),
                },
                Some(*state),
            ),
            Step::Failed(message) => {
                let closed = self
                    .close(suspension_id, &token, &format!("failed: {message}"), None)
                    .await?;
                let ended = if closed {
                    Ended::Failed { error: message }
                } else {
                    Ended::Lost
                };
                (ended, None)
            }
            Step::Error(error) => {
                let message = error.to_string();
                let state = failed_state(error);
                let ended = if self
                    .close(suspension_id, &token, &format!("failed: {message}"), None)
                    .await?
                {
                    Ended::Failed { error: message }
                } else {
                    Ended::Lost
                };
                (ended, state)
            }
        };
        tracing::info!(run = %run_id, ?ended, "resume ended");
        Ok(Resumed {
            run_id,
            ended,
            state,
        })
    }

    async fn fresh(
        &self,
        agent: &Agent<'_>,
        run: SuspendedRun,
        record: &DecisionRecord,
        input: Option<Value>,
    ) -> Step {
        let digest = record.digest.clone();
        match run {
            SuspendedRun::AwaitingApproval(pending) => {
                // The decision as recorded, call by call; a record from
                // before decisions were kept per call decided the whole turn.
                let decisions = if record.calls.is_empty() {
                    Decision {
                        verdict: if record.verdict == DecisionKind::Approved {
                            Verdict::Approve
                        } else {
                            Verdict::Deny
                        },
                        digest,
                        decided_by: record.decided_by.clone(),
                    }
                    .per_call(pending.pending())
                } else {
                    CallDecisions {
                        calls: record
                            .calls
                            .iter()
                            .filter_map(|c| c.verdict.clone().map(|v| (c.call_id.clone(), v)))
                            .collect(),
                        digest,
                        decided_by: record.decided_by.clone(),
                    }
                };
                let kept = pending.clone();
                match pending.decide_calls(agent, decisions).await {
                    Ok(outcome) => Step::Outcome(outcome),
                    Err(ResumeError::Refused { reason, .. }) if reason.needs_fresh_review() => {
                        Step::Review(Box::new(kept), reason)
                    }
                    Err(ResumeError::Refused { reason, .. }) => Step::Refused(reason),
                    Err(ResumeError::Run(error)) => Step::Error(error),
                    Err(other) => Step::Failed(other.to_string()),
                }
            }
            SuspendedRun::WaitingForInput(pending) => {
                let Some(data) = input else {
                    return Step::Refused(Refusal::NotRecorded(LogError::new(
                        "the input decision holds no data",
                    )));
                };
                let submission = InputSubmission {
                    data,
                    digest,
                    submitted_by: record.decided_by.clone(),
                };
                match pending.submit_input(agent, submission).await {
                    Ok(outcome) => Step::Outcome(outcome),
                    Err(ResumeError::Refused { reason, .. }) => Step::Refused(reason),
                    Err(ResumeError::Run(error)) => Step::Error(error),
                    Err(other) => Step::Failed(other.to_string()),
                }
            }
        }
    }

    /// Stores where a resumed run ended; its next pause, if any, in the same
    /// transaction.
    async fn finish(
        &self,
        suspension_id: i64,
        token: &str,
        outcome: Outcome,
    ) -> Result<(Ended, Option<RunState>), StoreError> {
        let (ended, state, next) = match outcome {
            Outcome::Finished { answer, state } => (Ended::Finished { answer }, state, None),
            Outcome::LimitReached(state) => (Ended::LimitReached, state, None),
            Outcome::AwaitingApproval(run) => (
                Ended::Suspended {
                    status: SuspendedStatus::AwaitingApproval,
                },
                run.state().clone(),
                Some(SuspendedRun::AwaitingApproval(run)),
            ),
            Outcome::WaitingForInput(run) => (
                Ended::Suspended {
                    status: SuspendedStatus::WaitingForInput,
                },
                run.state().clone(),
                Some(SuspendedRun::WaitingForInput(run)),
            ),
        };
        let words = match &ended {
            Ended::Finished { .. } => "finished".to_owned(),
            Ended::LimitReached => "stopped at its limit of model requests".to_owned(),
            Ended::Suspended { status } => format!("paused again: {}", status.as_str()),
            _ => String::new(),
        };
        if self
            .close(suspension_id, token, &words, next.as_ref())
            .await?
        {
            Ok((ended, Some(state)))
        } else {
            Ok((Ended::Lost, Some(state)))
        }
    }

    /// Marks the execution done with `outcome`, saving `next` beside it;
    /// false when this process no longer holds the run.
    async fn close(
        &self,
        suspension_id: i64,
        token: &str,
        outcome: &str,
        next: Option<&SuspendedRun>,
    ) -> Result<bool, StoreError> {
        let (_writer, mut tx) = self.store.write().await?;
        if !conclude(&mut tx, suspension_id, token, "done", outcome).await? {
            tracing::warn!(
                suspension = suspension_id,
                "the run was taken over by another host; nothing stored"
            );
            return Ok(false);
        }
        if let Some(next) = next {
            self.store
                .insert_suspended(&mut tx, next, &self.name)
                .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Voids the decision and pauses the turn afresh (a new suspension,
    /// owned by this host) in one transaction; false when this process no
    /// longer holds the run.
    async fn close_voided(
        &self,
        suspension_id: i64,
        token: &str,
        why: &str,
        fresh: &SuspendedRun,
    ) -> Result<bool, StoreError> {
        let (_writer, mut tx) = self.store.write().await?;
        if !conclude(&mut tx, suspension_id, token, "done", why).await? {
            return Ok(false);
        }
        Query::new("UPDATE decision SET voided = ? WHERE suspension_id = ? AND voided IS NULL")
            .bind(why)
            .bind(suspension_id)
            .execute(&mut tx)
            .await?;
        self.store
            .insert_suspended(&mut tx, fresh, &self.name)
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn unknown(
        &self,
        suspension_id: i64,
        token: &str,
        unknown: &OutcomeUnknown,
    ) -> Result<Ended, StoreError> {
        let (call_id, tool) = unknown
            .call()
            .map(|c| (c.id.clone(), c.name.clone()))
            .unwrap_or_default();
        let (_writer, mut tx) = self.store.write().await?;
        let marked = conclude(
            &mut tx,
            suspension_id,
            token,
            "outcome_unknown",
            &format!(
                "outcome unknown: call `{call_id}` ({tool}) started and never ended; it is a non_idempotent_write, so it is not run again unless an operator chooses `rerun` (or `skip`)"
            ),
        )
        .await?;
        tx.commit().await?;
        Ok(if marked {
            Ended::OutcomeUnknown { call_id, tool }
        } else {
            Ended::Lost
        })
    }
}

/// How many times [`Host::next`] looks again for a waiting run it could not
/// take at once (about half a second in all).
const CLAIM_ATTEMPTS: u64 = 50;

/// Ends this claim's hold on a suspension — `execution` becomes `to`, with
/// `outcome` in words — inside the caller's transaction; false when the
/// claim's token no longer holds it (another host took the run over).
async fn conclude(
    tx: &mut Tx,
    suspension_id: i64,
    token: &str,
    to: &str,
    outcome: &str,
) -> Result<bool, StoreError> {
    let concluded = Query::new(
        "UPDATE suspended_run SET execution = ?, outcome = ?, resumed_by = NULL,
                lease_until = NULL, updated_at = ?
         WHERE id = ? AND resumed_by = ? AND execution = 'resuming'",
    )
    .bind(to)
    .bind(outcome)
    .bind(now_ms())
    .bind(suspension_id)
    .bind(token)
    .execute(&mut *tx)
    .await?;
    Ok(concluded == 1)
}

/// What a resume came to, before it is stored.
enum Step {
    Outcome(Outcome),
    Unknown(OutcomeUnknown),
    Refused(Refusal),
    /// The receipt no longer holds: pause the turn afresh.
    Review(
        Box<toolgate::suspend::Suspended<toolgate::suspend::AwaitingApproval>>,
        Refusal,
    ),
    Error(RunError),
    Failed(String),
}

/// The run a failure handed back, when it carries one.
fn failed_state(error: RunError) -> Option<RunState> {
    match error {
        RunError::Model { state, .. }
        | RunError::UnusableInputSchema { state, .. }
        | RunError::IterationCap { state, .. }
        | RunError::TurnTooLarge { state, .. }
        | RunError::DuplicateCallId { state, .. }
        | RunError::Journal { state, .. } => Some(*state),
        _ => None,
    }
}

/// A recovery records no decision: the one it goes on from stands.
struct NoDecisions;

impl DecisionLog for NoDecisions {
    fn record<'a>(&'a self, record: &'a DecisionRecord) -> BoxFuture<'a, Result<(), LogError>> {
        Box::pin(async move {
            Err(LogError::new(format!(
                "a recovering host records no decision ({} by {})",
                record.verdict.as_str(),
                record.decided_by
            )))
        })
    }
}

/// A claim token unique to this claim: the process, the time and a counter,
/// so no two claims — of two processes, or of two clones of one host in one
/// process — are ever the same.
fn claim_token() -> String {
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

/// Aborts a spawned task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Keeps the lease of a run being resumed while a call runs long.
async fn renew(journal: StoreJournal, every: Duration) {
    let every = every.max(Duration::from_millis(5));
    loop {
        tokio::time::sleep(every).await;
        match journal.hold().await {
            Ok(true) => {}
            Ok(false) => return,
            Err(error) => tracing::warn!(%error, "the lease could not be renewed"),
        }
    }
}

/// The journal of one resumed suspension, in the store. Every entry first
/// renews this process's lease, and is refused when the run was taken over.
#[derive(Clone)]
struct StoreJournal {
    store: Store,
    suspension_id: i64,
    instance: String,
    lease: i64,
}

impl StoreJournal {
    /// Renews the lease; false when this process no longer holds the run.
    async fn hold(&self) -> Result<bool, StoreError> {
        let (_writer, mut tx) = self.store.write().await?;
        let held = self.renew_in(&mut tx).await?;
        tx.commit().await?;
        Ok(held)
    }

    async fn renew_in(&self, tx: &mut Tx) -> Result<bool, StoreError> {
        let now = now_ms();
        let held = Query::new(
            "UPDATE suspended_run SET lease_until = ?, updated_at = ?
             WHERE id = ? AND resumed_by = ? AND execution = 'resuming'",
        )
        .bind(now.saturating_add(self.lease))
        .bind(now)
        .bind(self.suspension_id)
        .bind(&self.instance)
        .execute(&mut *tx)
        .await?;
        Ok(held == 1)
    }

    /// One journal entry: the lease renewed and `write` applied, in one
    /// transaction.
    async fn entry<F>(&self, write: F) -> Result<(), JournalError>
    where
        F: for<'t> FnOnce(&'t mut Tx) -> BoxFuture<'t, Result<(), StoreError>>,
    {
        let run = async {
            let (_writer, mut tx) = self.store.write().await?;
            if !self.renew_in(&mut tx).await? {
                return Ok(false);
            }
            write(&mut tx).await?;
            tx.commit().await?;
            Ok::<_, StoreError>(true)
        };
        match run.await {
            Ok(true) => Ok(()),
            Ok(false) => Err(JournalError::new(
                "this host no longer holds the run (its lease ran out and another host took it over)",
            )),
            Err(error) => Err(JournalError::with_source(
                format!("the store failed: {error}"),
                error,
            )),
        }
    }
}

impl Journal for StoreJournal {
    fn planned<'a>(&'a self, plan: &'a TurnPlan) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(async move {
            let text = serde_json::to_string(plan)
                .map_err(|e| JournalError::with_source("cannot encode the turn's plan", e))?;
            let suspension_id = self.suspension_id;
            let turn = i64::from(plan.turn());
            let mac = self
                .store
                .key()
                .map(|key| key.tag(&plan_bytes(suspension_id, turn, &text)));
            self.entry(move |tx| {
                Box::pin(async move {
                    Query::new(
                        "INSERT INTO turn_plan (suspension_id, turn, plan, mac, created_at)
                         VALUES (?, ?, ?, ?, ?)",
                    )
                    .bind(suspension_id)
                    .bind(turn)
                    .bind(text)
                    .bind(mac)
                    .bind(now_ms())
                    .execute(&mut *tx)
                    .await?;
                    Ok(())
                })
            })
            .await
        })
    }

    fn started<'a>(
        &'a self,
        plan: &'a TurnPlan,
        index: usize,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(async move {
            let (call_id, tool, effect) = step_facts(plan, index);
            let suspension_id = self.suspension_id;
            let turn = i64::from(plan.turn());
            let index = i64::try_from(index).unwrap_or(i64::MAX);
            self.entry(move |tx| {
                Box::pin(async move {
                    Query::new(
                        "INSERT INTO call_execution (plan_id, call_index, call_id, tool, effect, state, started_at)
                         SELECT id, ?, ?, ?, ?, 'started', ? FROM turn_plan WHERE suspension_id = ? AND turn = ?
                         ON CONFLICT (plan_id, call_index) DO UPDATE SET
                             state = 'started', attempts = call_execution.attempts + 1, output = NULL,
                             started_at = excluded.started_at, ended_at = NULL",
                    )
                    .bind(index)
                    .bind(call_id)
                    .bind(tool)
                    .bind(effect)
                    .bind(now_ms())
                    .bind(suspension_id)
                    .bind(turn)
                    .execute(&mut *tx)
                    .await?;
                    Ok(())
                })
            })
            .await
        })
    }

    fn ended<'a>(
        &'a self,
        plan: &'a TurnPlan,
        index: usize,
        output: &'a ToolOutput,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(async move {
            let (call_id, tool, effect) = step_facts(plan, index);
            let text = serde_json::to_string(output)
                .map_err(|e| JournalError::with_source("cannot encode the call's result", e))?;
            let suspension_id = self.suspension_id;
            let turn = i64::from(plan.turn());
            let index = i64::try_from(index).unwrap_or(i64::MAX);
            let mac = self
                .store
                .key()
                .map(|key| key.tag(&result_bytes(suspension_id, turn, index, &text)));
            self.entry(move |tx| {
                Box::pin(async move {
                    let now = now_ms();
                    Query::new(
                        "INSERT INTO call_execution (plan_id, call_index, call_id, tool, effect, state, output, started_at, ended_at, mac)
                         SELECT id, ?, ?, ?, ?, 'ended', ?, ?, ?, ? FROM turn_plan WHERE suspension_id = ? AND turn = ?
                         ON CONFLICT (plan_id, call_index) DO UPDATE SET
                             state = 'ended', output = excluded.output, ended_at = excluded.ended_at,
                             mac = excluded.mac",
                    )
                    .bind(index)
                    .bind(call_id)
                    .bind(tool)
                    .bind(effect)
                    .bind(text)
                    .bind(now)
                    .bind(now)
                    .bind(mac)
                    .bind(suspension_id)
                    .bind(turn)
                    .execute(&mut *tx)
                    .await?;
                    Ok(())
                })
            })
            .await
        })
    }
}

/// The call id, tool and effect of a planned step, for its journal row.
fn step_facts(plan: &TurnPlan, index: usize) -> (String, String, &'static str) {
    match plan.steps.get(index) {
        Some(step) => (
            step.call.id.clone(),
            step.call.name.clone(),
            match &step.action {
                Action::Execute { effect, .. } => effect.as_str(),
                Action::Answer { .. } => "none",
            },
        ),
        None => (String::new(), String::new(), "none"),
    }
}

/// What a call result's tag covers.
fn result_bytes(suspension_id: i64, turn: i64, index: i64, output: &str) -> Vec<u8> {
    format!("toolgate.result.v1\n{suspension_id}\n{turn}\n{index}\n{output}").into_bytes()
}

/// What a plan row's tag covers.
pub(crate) fn plan_bytes(suspension_id: i64, turn: i64, plan: &str) -> Vec<u8> {
    format!("toolgate.plan.v1\n{suspension_id}\n{turn}\n{plan}").into_bytes()
}

impl Store {
    /// The last turn planned for a suspension, verified under this store's
    /// key when it has one.
    pub(crate) async fn last_plan(
        &self,
        suspension_id: i64,
    ) -> Result<Option<(i64, TurnPlan)>, StoreError> {
        let row = Query::new(
            "SELECT id, turn, plan, mac FROM turn_plan WHERE suspension_id = ? ORDER BY turn DESC LIMIT 1",
        )
        .bind(suspension_id)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let id: i64 = row.try_get("id")?;
        let plan = self.read_plan(
            suspension_id,
            row.try_get("turn")?,
            &row.try_get::<String, _>("plan")?,
            row.try_get("mac")?,
        )?;
        Ok(Some((id, plan)))
    }

    /// A stored plan, verified under this store's key when it has one.
    pub(crate) fn read_plan(
        &self,
        suspension_id: i64,
        turn: i64,
        text: &str,
        mac: Option<String>,
    ) -> Result<TurnPlan, StoreError> {
        if let Some(key) = self.key() {
            let bytes = plan_bytes(suspension_id, turn, text);
            if !mac.is_some_and(|mac| key.verify(&bytes, &mac)) {
                return Err(StoreError::Unreadable {
                    what: "turn plan",
                    reason: "it does not verify under this store's integrity key: it was changed, or written without the key".into(),
                });
            }
        } else if self.requires_key() {
            return Err(StoreError::KeyRequired);
        }
        serde_json::from_str(text).map_err(|e| StoreError::Unreadable {
            what: "turn plan",
            reason: e.to_string(),
        })
    }

    /// What the journal knows of each call of a plan.
    pub(crate) async fn known_calls(
        &self,
        suspension_id: i64,
        plan: &TurnPlan,
        plan_id: i64,
    ) -> Result<Vec<CallRecord>, StoreError> {
        let steps = plan.steps.len();
        let turn = i64::from(plan.turn());
        let rows = Query::new(
            "SELECT call_index, state, output, attempts, mac FROM call_execution WHERE plan_id = ?",
        )
        .bind(plan_id)
        .fetch_all(&self.pool)
        .await?;
        let choices = self.standing_choices(suspension_id, plan, plan_id).await?;
        let mut known = vec![CallRecord::NotStarted; steps];
        for row in rows {
            let index: i64 = row.try_get("call_index")?;
            let Some(slot) = usize::try_from(index).ok().and_then(|i| known.get_mut(i)) else {
                continue;
            };
            let attempt: i64 = row.try_get("attempts")?;
            let output: Option<String> = row.try_get("output")?;
            let mut state: String = row.try_get("state")?;
            // Under a key, a result whose tag does not verify was not written
            // by a host of this store: it reads as nothing recorded — the
            // call started, its outcome unknown.
            if let Some(key) = self.key() {
                let mac: Option<String> = row.try_get("mac")?;
                let result =
                    result_bytes(suspension_id, turn, index, output.as_deref().unwrap_or(""));
                if state == "ended" && !mac.is_some_and(|m| key.verify(&result, &m)) {
                    tracing::warn!(
                        suspension = suspension_id,
                        call = index,
                        "a recorded result does not verify under the key; read as outcome unknown"
                    );
                    "started".clone_into(&mut state);
                }
            }
            *slot = match (state.as_str(), choices.get(&(index, attempt))) {
                ("ended", _) => {
                    let output = output
                        .as_deref()
                        .map(serde_json::from_str::<ToolOutput>)
                        .transpose()
                        .map_err(|e| StoreError::Unreadable {
                            what: "call result",
                            reason: e.to_string(),
                        })?
                        .ok_or_else(|| StoreError::Unreadable {
                            what: "call result",
                            reason: "an ended call holds no result".into(),
                        })?;
                    CallRecord::Ended(output)
                }
                (_, Some(standing)) => standing.clone(),
                _ => CallRecord::Started,
            };
        }
        Ok(known)
    }
}
