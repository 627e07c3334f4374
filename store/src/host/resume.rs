//! The resume driver: a claimed run through the core's typed API, its
//! outcome stored, its claim concluded.

use serde_json::Value;
use toolgate::audit::{DecisionKind, DecisionLog, DecisionRecord, LogError};
use toolgate::erased::BoxFuture;
use toolgate::run::{Model, Outcome, RunError, RunState};
use toolgate::run::{OutcomeUnknown, Recovered};
use toolgate::suspend::{
    CallDecisions, Decision, InputSubmission, Refusal, ResumeError, SuspendedRun, SuspendedStatus,
    Verdict,
};
use toolgate::{Agent, Registry};

use crate::StoreError;
use crate::db::Query;
use crate::runs::RecordedLog;

use super::journal::{AbortOnDrop, StoreJournal, renew};
use super::{Ended, Host, Resumable, Resumed, Work};
use crate::suspension::Execution;

impl Host {
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
                let log = RecordedLog { record };
                let agent = Agent::new(registry, model, &log).with_journal(&journal);
                self.fresh(&agent, *run, &log.record, input, suspension_id)
                    .await
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
        let (ended, state) = self
            .conclude_step(suspension_id, &token, &run_id, registry, result)
            .await?;
        tracing::info!(run = %run_id, ?ended, "resume ended");
        Ok(Resumed {
            run_id,
            ended,
            state,
        })
    }

    /// Stores where a resume came to, and concludes its claim.
    async fn conclude_step(
        &self,
        suspension_id: i64,
        token: &str,
        run_id: &str,
        registry: &Registry,
        result: Step,
    ) -> Result<(Ended, Option<RunState>), StoreError> {
        Ok(match result {
            Step::Outcome(outcome) => self.finish(suspension_id, token, outcome).await?,
            Step::Unknown(unknown) => (
                self.unknown(suspension_id, token, &unknown, None).await?,
                None,
            ),
            Step::Error(RunError::OutcomeUnknown {
                reason, unknown, ..
            }) => {
                let state = unknown.plan.run().clone();
                (
                    self.unknown(suspension_id, token, &unknown, Some(&reason))
                        .await?,
                    Some(state),
                )
            }
            Step::Refused(reason) => {
                self.store
                    .release(
                        suspension_id,
                        token,
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
                    .close_voided(suspension_id, token, &why, &fresh)
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
                    .close(suspension_id, token, &format!("failed: {message}"), None)
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
                    .close(suspension_id, token, &format!("failed: {message}"), None)
                    .await?
                {
                    Ended::Failed { error: message }
                } else {
                    Ended::Lost
                };
                (ended, state)
            }
        })
    }

    async fn fresh(
        &self,
        agent: &Agent<'_>,
        run: SuspendedRun,
        record: &DecisionRecord,
        input: Option<Value>,
        suspension_id: i64,
    ) -> Step {
        let digest = record.digest.clone();
        match run {
            SuspendedRun::AwaitingApproval(pending) => {
                // The decision as recorded, call by call; a record from
                // before decisions were kept per call decided the whole turn.
                let mut decisions = if record.calls.is_empty() {
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
                        also_approved_by: Vec::new(),
                    }
                };
                // A run that needs several approvers: those who approved
                // before the decision that completed it.
                decisions.also_approved_by = match self.store.earlier_approvers(suspension_id).await
                {
                    Ok(earlier) => earlier,
                    Err(error) => return Step::Failed(error.to_string()),
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
        let answer = match &ended {
            Ended::Finished { answer } => Some(answer.as_str()),
            _ => None,
        };
        if self
            .close_with(suspension_id, token, &words, next.as_ref(), answer)
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
        self.close_with(suspension_id, token, outcome, next, None)
            .await
    }

    /// [`Host::close`], keeping the model's final answer beside the
    /// outcome when the run finished — shown on its page, never read by a
    /// resume.
    async fn close_with(
        &self,
        suspension_id: i64,
        token: &str,
        outcome: &str,
        next: Option<&SuspendedRun>,
        answer: Option<&str>,
    ) -> Result<bool, StoreError> {
        let (_writer, mut tx) = self.store.write().await?;
        if !crate::suspension::conclude(&mut tx, suspension_id, token, Execution::Done, outcome)
            .await?
        {
            tracing::warn!(
                suspension = suspension_id,
                "the run was taken over by another host; nothing stored"
            );
            return Ok(false);
        }
        if let Some(answer) = answer {
            Query::new("UPDATE suspended_run SET final_answer = $1 WHERE id = $2")
                .bind(answer)
                .bind(suspension_id)
                .execute(&mut tx)
                .await?;
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
        if !crate::suspension::conclude(&mut tx, suspension_id, token, Execution::Done, why).await?
        {
            return Ok(false);
        }
        Query::new("UPDATE decision SET voided = $1 WHERE suspension_id = $2 AND voided IS NULL")
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
        lost: Option<&str>,
    ) -> Result<Ended, StoreError> {
        let (call_id, tool) = unknown
            .call()
            .map(|c| (c.id.clone(), c.name.clone()))
            .unwrap_or_default();
        let why = match lost {
            None => "started and never ended when a host stopped".to_owned(),
            Some(reason) => answer_lost(reason),
        };
        let (_writer, mut tx) = self.store.write().await?;
        let marked = crate::suspension::conclude(
            &mut tx,
            suspension_id,
            token,
            Execution::OutcomeUnknown,
            &unknown_outcome(&call_id, &tool, &why),
        )
        .await?;
        if marked {
            self.store
                .announce(
                    &mut tx,
                    suspension_id,
                    crate::outbox::Happened::OutcomeUnknown {
                        run: None,
                        owner: &self.name,
                        why: &why,
                    },
                )
                .await?;
        }
        tx.commit().await?;
        Ok(if marked {
            Ended::OutcomeUnknown { call_id, tool, why }
        } else {
            Ended::Lost
        })
    }
}

/// How a call came to an unknown outcome when its answer was lost after it
/// reached its tool, in words.
pub(super) fn answer_lost(reason: &str) -> String {
    format!("reached its tool and its answer was lost ({reason})")
}

/// The stored outcome of a run whose call's outcome is unknown: which call,
/// `why`, and what happens next.
pub(super) fn unknown_outcome(call_id: &str, tool: &str, why: &str) -> String {
    format!(
        "outcome unknown: call `{call_id}` ({tool}) {why}; it is a non_idempotent_write, so it is not run again unless an operator chooses `rerun` (or `skip`)"
    )
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
