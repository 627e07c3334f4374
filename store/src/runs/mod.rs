//! Suspended runs in the store, and the decision protocol — claim, resume,
//! release on refusal — written out once, in [`Store::decide`].

use std::collections::BTreeMap;

use serde_json::Value;
use toolgate::{
    audit::{CallVerdict, DecisionKind, DecisionLog, DecisionRecord, LogError},
    erased::BoxFuture,
    suspend::{CorruptState, SuspendedRun},
};

use crate::db::{Query, Row, Tx};
use crate::suspension::{Execution, State};
use crate::{Store, StoreError, now_ms};

mod decide;
mod decision_row;
pub(crate) use decide::channel_of;
mod deciders;
mod error;
mod prefix;
mod standing;
pub use standing::{AllowedFromNowOn, FromNowOn};

pub use error::{ClaimError, LoadError};
pub use prefix::{MIN_RUN_PREFIX, RunPrefixError};

use decide::approving;

/// What an operator answers a waiting run: a verdict on a turn that awaits
/// approval, or data for a call that waits for input.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The turn may run.
    Approve,
    /// No call of the turn runs.
    Deny,
    /// The data the waiting call asked for.
    Input(Value),
    /// A verdict for each call, by call id: approve, deny with a reason, or
    /// approve with edited arguments. Every call that needs approval must
    /// have one.
    Calls(BTreeMap<String, CallVerdict>),
}

impl Answer {
    /// The kind of decision this answer records.
    pub fn kind(&self) -> DecisionKind {
        match self {
            Answer::Approve => DecisionKind::Approved,
            Answer::Input(_) => DecisionKind::InputSubmitted,
            Answer::Calls(calls) if calls.values().any(CallVerdict::approves) => {
                DecisionKind::Approved
            }
            Answer::Deny | Answer::Calls(_) => DecisionKind::Denied,
        }
    }
}

/// A decision, recorded. Once it is complete the owning host resumes the
/// run.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The decision row, as written.
    pub record: DecisionRecord,
    /// The host that owns the run and will resume it.
    pub owner: String,
    /// Approvals recorded and approvals the run needs: the decision is
    /// complete — the run decided — when the two are equal.
    pub approvals: (u32, u32),
}

impl Recorded {
    /// True when the run is decided: its host resumes it.
    pub fn is_complete(&self) -> bool {
        self.approvals.0 >= self.approvals.1
    }
}

/// The decision log for a decision already recorded: recording checks that
/// the decision taken at resume is the one recorded.
#[derive(Debug, Clone)]
pub(crate) struct RecordedLog {
    pub(crate) record: DecisionRecord,
}

impl DecisionLog for RecordedLog {
    fn record<'a>(&'a self, record: &'a DecisionRecord) -> BoxFuture<'a, Result<(), LogError>> {
        let claimed = &self.record;
        let matches = record.run_id == claimed.run_id
            && record.digest == claimed.digest
            && record.verdict == claimed.verdict
            && record.decided_by == claimed.decided_by;
        Box::pin(async move {
            if matches {
                Ok(())
            } else {
                Err(LogError::new(format!(
                    "the decision ({} by {}) is not the one recorded ({} by {})",
                    record.verdict.as_str(),
                    record.decided_by,
                    claimed.verdict.as_str(),
                    claimed.decided_by
                )))
            }
        })
    }
}

mod listing;
pub use listing::{ListedCall, RunFilter, RunView, Standing, server_of};

/// One suspension of a run, for listings: where its decision and its
/// execution stand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenRun {
    /// The suspension row.
    pub suspension_id: i64,
    /// The run.
    pub run_id: String,
    /// `awaiting_approval` or `waiting_for_input`, as stored.
    pub status: String,
    /// The pending turn's digest, as stored.
    pub digest: String,
    /// Who started the run.
    pub requested_by: String,
    /// When it suspended.
    pub created_at: i64,
    /// Why the stored document does not decode, if it does not.
    pub problem: Option<String>,
    /// The host that owns the run and resumes it.
    pub owner: String,
    /// `open` (waiting for a decision) or `decided`.
    pub state: String,
    /// `pending`, `resuming`, `outcome_unknown` or `done`.
    pub execution: String,
    /// How the execution ended, in words, or why it waits.
    pub outcome: Option<String>,
    /// Who decided.
    pub decided_by: Option<String>,
    /// A call that started and has not ended (`id (tool)`), while resuming.
    pub executing: Option<String>,
    /// When the row last changed.
    pub updated_at: Option<i64>,
    /// Until when the host resuming it holds it (milliseconds since the
    /// epoch), while it resumes.
    pub lease_until: Option<i64>,
    /// When approving the turn stops being possible, if the run has a limit.
    pub expires_at: Option<u64>,
    /// Approvals recorded while more are needed, and how many the run needs.
    pub approvals: (u32, u32),
    /// The pending turn's calls, as the stored document holds them: none
    /// when it does not decode.
    pub calls: Vec<ListedCall>,
    /// The MCP client the run came through, as it declared itself.
    pub client: Option<String>,
}

impl OpenRun {
    /// What a decided run waits for before it runs: its host — or, for a
    /// run of one call, its client asking for the call again, which any
    /// gateway of the name then runs.
    pub fn waits_for_host(&self) -> String {
        if crate::names::is_reserved_host_name(&self.owner) {
            format!(
                "decided; waits for its client to ask for the call again (gateway `{}`)",
                self.owner
            )
        } else {
            format!("decided; host `{}` will resume it", self.owner)
        }
    }

    /// Where the run stands, in the words an operator reads.
    pub fn standing(&self) -> String {
        let now = u64::try_from(now_ms()).unwrap_or(0);
        let lease_ran_out = self.lease_until.is_some_and(|until| until < now_ms());
        let state = State::from_stored(&self.state);
        let execution = Execution::from_stored(&self.execution);
        match (state, execution) {
            (Some(State::Open), _) if self.status == "waiting_for_input" => {
                "waiting for input".into()
            }
            (Some(State::Open), _) if self.expires_at.is_some_and(|at| now > at) => {
                "expired: it can be denied or asked again, not approved".into()
            }
            (Some(State::Open), _) if self.approvals.1 > 1 => format!(
                "awaiting approval ({} of {} approvals)",
                self.approvals.0, self.approvals.1
            ),
            (Some(State::Open), _) => "awaiting approval".into(),
            (Some(State::Decided), Some(Execution::Pending)) => self.waits_for_host(),
            (Some(State::Decided), Some(Execution::Resuming)) if lease_ran_out => {
                match &self.executing {
                    Some(call) => format!(
                        "host stopped while executing {call}; a host `{}` picks the run up",
                        self.owner
                    ),
                    None => format!(
                        "host stopped while resuming; a host `{}` picks the run up",
                        self.owner
                    ),
                }
            }
            (Some(State::Decided), Some(Execution::Resuming)) => match &self.executing {
                Some(call) => format!("executing {call} (host `{}`)", self.owner),
                None => format!("resuming (host `{}`)", self.owner),
            },
            (Some(State::Decided), Some(Execution::OutcomeUnknown)) => "outcome unknown".into(),
            (_, Some(Execution::Done)) => self.outcome.clone().unwrap_or_else(|| "done".into()),
            _ => format!("{}, {}", self.state, self.execution),
        }
    }
}

/// One call a resumed run started, as its journal keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRow {
    /// The model turn the call was part of.
    pub turn: i64,
    /// The call's id.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// The tool's effect when planned.
    pub effect: String,
    /// `started` or `ended`.
    pub state: String,
    /// How many times it was started.
    pub attempts: i64,
    /// The first line of its result, when it ended.
    pub result: Option<String>,
    /// The operator choices made for it (`rerun by dora`), oldest first.
    pub choices: Vec<String>,
}

/// A decision as stored: the record, and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredDecision {
    /// The decision.
    pub record: DecisionRecord,
    /// True for an approval that waits for more approvers.
    pub partial: bool,
    /// The operator revision it was taken under, when recorded.
    pub policy_revision: Option<i64>,
}

/// A run's whole record: its suspensions, every decision (voided ones
/// included) and the calls its hosts ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunHistory {
    /// The run's suspensions, oldest first.
    pub suspensions: Vec<OpenRun>,
    /// Every decision, oldest first: partial approvals and voided decisions
    /// included.
    pub decisions: Vec<StoredDecision>,
    /// The journaled calls, in order.
    pub calls: Vec<CallRow>,
}

/// A verdict's stored spelling — the one mapping; reading inverts it.
fn verdict_text(verdict: DecisionKind) -> &'static str {
    match verdict {
        DecisionKind::Approved => "approved",
        DecisionKind::Denied => "denied",
        DecisionKind::InputSubmitted => "input_submitted",
    }
}

fn verdict_from(text: &str) -> Result<DecisionKind, StoreError> {
    [
        DecisionKind::Approved,
        DecisionKind::Denied,
        DecisionKind::InputSubmitted,
    ]
    .into_iter()
    .find(|v| verdict_text(*v) == text)
    .ok_or_else(|| StoreError::Unreadable {
        what: "decision verdict",
        reason: format!("unknown verdict `{text}`"),
    })
}

/// # Suspended runs
///
/// Saved by a host when a turn waits; listed and read by the console's
/// `toolgate runs`.
impl Store {
    /// Stores a suspended run as the open suspension of its run, owned by
    /// the host named `owner`: that host resumes it once it is decided.
    pub async fn save_suspended(&self, run: &SuspendedRun, owner: &str) -> Result<i64, StoreError> {
        if let Some(problem) = crate::names::host_name_problem(owner) {
            return Err(StoreError::InvalidHostName {
                name: toolgate::visible::visible(owner).into_owned(),
                problem,
            });
        }
        let (_writer, mut tx) = self.write().await?;
        let id = self.insert_suspended(&mut tx, run, owner).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Inserts a suspension inside the caller's transaction, and the
    /// notification that it waits.
    pub(crate) async fn insert_suspended(
        &self,
        tx: &mut Tx,
        run: &SuspendedRun,
        owner: &str,
    ) -> Result<i64, StoreError> {
        let id = self.insert_suspension(tx, run, owner).await?;
        self.announce(tx, id, crate::outbox::Happened::Paused { run, owner })
            .await?;
        Ok(id)
    }

    /// Inserts a suspension inside the caller's transaction, telling no one:
    /// for a caller that tells what it waits for itself.
    pub(crate) async fn insert_suspension(
        &self,
        tx: &mut Tx,
        run: &SuspendedRun,
        owner: &str,
    ) -> Result<i64, StoreError> {
        self.check_keyed()?;
        // A run of one call is owned by a host of runs of one call, and only
        // such a run is: no host that resumes runs with a model ever claims
        // one, nor the gateway's host another's.
        let one_call = run.state().options.one_call;
        if one_call != crate::names::is_reserved_host_name(owner) {
            let run_id = toolgate::visible::visible(run.run_id()).into_owned();
            return Err(if one_call {
                StoreError::OneCallRun { run_id }
            } else {
                StoreError::NotOneCall { run_id }
            });
        }
        let document = run.encode_with(self.key())?;
        if self.key().is_some() {
            Query::new("INSERT INTO integrity (id, since) VALUES (1, $1) ON CONFLICT DO NOTHING")
                .bind(now_ms())
                .execute(&mut *tx)
                .await?;
        }
        let now = now_ms();
        let id = Query::new(
            "INSERT INTO suspended_run (run_id, status, document, digest, requested_by, created_at, owner, execution, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        )
        .bind(run.run_id())
        .bind(run.status().as_str())
        .bind(document)
        .bind(run.digest().as_str())
        .bind(&run.state().requested_by)
        .bind(now)
        .bind(owner)
        .bind(crate::suspension::NEW_EXECUTION.as_str())
        .bind(now)
        .scalar(&mut *tx)
        .await?;
        crate::chain::start(tx, self.key(), id).await?;
        listing::record_tools(tx, id, run).await?;
        Ok(id)
    }

    /// The open suspension of a run, decoded fail-closed.
    pub async fn load_suspended(&self, run_id: &str) -> Result<SuspendedRun, LoadError> {
        let row = Query::new(format!(
            "SELECT run_id, status, document, digest, requested_by FROM suspended_run
             WHERE run_id = $1 AND {}",
            crate::suspension::when::OPEN
        ))
        .bind(run_id)
        .fetch_optional(&self.pool)
        .await?;
        self.decoded(run_id, row)
    }

    /// A suspension row found for `run_id`, decoded fail-closed; none is
    /// [`LoadError::NotFound`].
    fn decoded(&self, run_id: &str, row: Option<Row>) -> Result<SuspendedRun, LoadError> {
        let Some(row) = row else {
            return Err(LoadError::NotFound(run_id.to_owned()));
        };
        self.read_document(&row)
            .map_err(StoreError::from)?
            .map_err(|error| LoadError::Corrupt {
                run_id: run_id.to_owned(),
                error,
            })
    }

    /// Decodes a suspension row's document — verified under this store's key
    /// if it has one — and checks the columns kept beside it (run, status,
    /// digest, requester) against the document: a row whose columns and
    /// document disagree was written by something other than this store.
    pub(crate) fn read_document(
        &self,
        row: &Row,
    ) -> Result<Result<SuspendedRun, CorruptState>, sqlx::Error> {
        if self.check_keyed().is_err() {
            return Ok(Err(CorruptState::new(
                "this store authenticates its runs, and this handle has no integrity key: the run is not read (open the store with its key)",
            )));
        }
        let document: String = row.try_get("document")?;
        let columns = [
            ("run", row.try_get::<String, _>("run_id")?),
            ("status", row.try_get::<String, _>("status")?),
            ("digest", row.try_get::<String, _>("digest")?),
            ("requester", row.try_get::<String, _>("requested_by")?),
        ];
        let run = match SuspendedRun::decode_with(&document, self.key()) {
            Ok(run) => run,
            Err(error) => return Ok(Err(error)),
        };
        let digest = run.digest();
        let inside = [
            run.run_id(),
            run.status().as_str(),
            digest.as_str(),
            run.state().requested_by.as_str(),
        ];
        // A version-1 row's digest column holds the first digest rule's
        // value, which no longer names the turn; it is neither compared nor
        // used (the claim checks the digest against the document).
        let v1 = SuspendedRun::written_version(&document) == Some(1);
        for ((what, column), inside) in columns.iter().zip(inside) {
            if column == inside || (v1 && *what == "digest") {
                continue;
            }
            // A digest is shown only beside its turn, never in an error.
            let reason = if *what == "digest" {
                "the stored digest column disagrees with the document: the row was changed outside the store".to_owned()
            } else {
                format!(
                    "the stored {what} column (`{}`) disagrees with the document (`{}`): the row was changed outside the store",
                    toolgate::visible::visible(column),
                    toolgate::visible::visible(inside)
                )
            };
            return Ok(Err(CorruptState::new(reason)));
        }
        Ok(Ok(run))
    }

    /// Every suspension that is not done — waiting for a decision, decided
    /// and waiting for its host, resuming, or with an outcome unknown —
    /// oldest first, with any decoding problem named.
    pub async fn open_runs(&self) -> Result<Vec<OpenRun>, StoreError> {
        self.listed(
            &format!("WHERE {}", crate::suspension::when::S_NOT_DONE),
            None,
        )
        .await
    }

    /// Every suspension of every run, oldest first.
    pub async fn all_runs(&self) -> Result<Vec<OpenRun>, StoreError> {
        self.listed("", None).await
    }

    /// The runs that are not done, newest first: one page of at most
    /// `limit`, after the suspension `before` (the last of the previous
    /// page; `None` for the first). Keyset pagination over an index of
    /// exactly these rows (`suspended_run_not_done`), so a page costs the
    /// same however many runs there are, done or waiting.
    pub async fn waiting_page(
        &self,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<OpenRun>, StoreError> {
        let query = Query::new(format!(
            "{} WHERE ({}) AND s.id < $1 ORDER BY s.id DESC LIMIT $2",
            listing(),
            crate::suspension::when::S_NOT_DONE
        ))
        .bind(before.unwrap_or(i64::MAX))
        .bind(i64::from(limit));
        self.rows_listed(query).await
    }

    async fn listed(&self, filter: &str, run_id: Option<&str>) -> Result<Vec<OpenRun>, StoreError> {
        // `filter` is one of this module's fixed clauses, never input.
        let mut query = Query::new(format!("{} {filter} ORDER BY s.id", listing()));
        if let Some(run_id) = run_id {
            query = query.bind(run_id);
        }
        self.rows_listed(query).await
    }

    async fn rows_listed(&self, query: Query) -> Result<Vec<OpenRun>, StoreError> {
        let rows = query.fetch_all(&self.pool).await?;
        let mut runs = Vec::with_capacity(rows.len());
        for row in rows {
            let document = self.read_document(&row)?;
            let (expires_at, need) = match &document {
                Ok(SuspendedRun::AwaitingApproval(run)) => (
                    run.expires_at_ms(),
                    run.state().options.approvals_required.max(1),
                ),
                Ok(SuspendedRun::WaitingForInput(run)) => (run.expires_at_ms(), 1),
                Err(_) => (None, 1),
            };
            let approvals: i64 = row.try_get("approvals")?;
            let (calls, client) = match &document {
                Ok(run) => (
                    run.pending()
                        .iter()
                        .map(|call| ListedCall {
                            name: call.name.clone(),
                            arguments: call.arguments.clone(),
                        })
                        .collect(),
                    run.state().client.as_ref().map(ToString::to_string),
                ),
                Err(_) => (Vec::new(), None),
            };
            let problem = document.err().map(|e| e.reason);
            runs.push(OpenRun {
                suspension_id: row.try_get("id")?,
                run_id: row.try_get("run_id")?,
                status: row.try_get("status")?,
                digest: row.try_get("digest")?,
                requested_by: row.try_get("requested_by")?,
                created_at: row.try_get("created_at")?,
                problem,
                owner: row.try_get("owner")?,
                state: row.try_get("state")?,
                execution: row.try_get("execution")?,
                outcome: row.try_get("outcome")?,
                decided_by: row.try_get("decided_by")?,
                executing: row.try_get("executing")?,
                updated_at: row.try_get("updated_at")?,
                lease_until: row.try_get("lease_until")?,
                expires_at,
                approvals: (u32::try_from(approvals).unwrap_or(0), need),
                calls,
                client,
            });
        }
        Ok(runs)
    }

    /// A run's whole record: every suspension, every decision (voided ones
    /// included) and every journaled call with the choices made for it.
    pub async fn run_history(&self, run_id: &str) -> Result<RunHistory, StoreError> {
        let suspensions = self.listed("WHERE s.run_id = $1", Some(run_id)).await?;
        self.check_keyed()?;
        let decisions = Query::new("SELECT * FROM decision WHERE run_id = $1 ORDER BY id")
            .bind(run_id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| {
                Ok(StoredDecision {
                    record: self.decision_from(row)?.0,
                    partial: row.try_get::<i64, _>("partial")? == 1,
                    policy_revision: row.try_get("policy_revision")?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let rows = Query::new(
            "SELECT p.turn, p.suspension_id, e.plan_id, e.call_index, e.call_id, e.tool, e.effect, e.state, e.attempts, e.output
             FROM call_execution e JOIN turn_plan p ON p.id = e.plan_id
             JOIN suspended_run s ON s.id = p.suspension_id
             WHERE s.run_id = $1 ORDER BY p.suspension_id, p.turn, e.call_index",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        let mut calls = Vec::with_capacity(rows.len());
        for row in rows {
            let output: Option<String> = row.try_get("output")?;
            let result = output
                .and_then(|text| serde_json::from_str::<toolgate::ToolOutput>(&text).ok())
                .map(|o| {
                    let first = o.content.lines().next().unwrap_or_default().to_owned();
                    if o.is_error {
                        format!("error: {first}")
                    } else {
                        first
                    }
                });
            let choices = self
                .recorded_choices(
                    row.try_get("suspension_id")?,
                    row.try_get("turn")?,
                    row.try_get("plan_id")?,
                    row.try_get("call_index")?,
                )
                .await?
                .iter()
                .map(ToString::to_string)
                .collect();
            calls.push(CallRow {
                turn: row.try_get("turn")?,
                call_id: row.try_get("call_id")?,
                tool: row.try_get("tool")?,
                effect: row.try_get("effect")?,
                state: row.try_get("state")?,
                attempts: row.try_get("attempts")?,
                result,
                choices,
            });
        }
        Ok(RunHistory {
            suspensions,
            decisions,
            calls,
        })
    }

    /// The newest suspension of a run, decoded fail-closed, whether it waits
    /// or was decided: what the run last paused on.
    pub async fn latest_suspended(&self, run_id: &str) -> Result<SuspendedRun, LoadError> {
        let row = Query::new(
            "SELECT run_id, status, document, digest, requested_by FROM suspended_run
             WHERE run_id = $1 ORDER BY id DESC LIMIT 1",
        )
        .bind(run_id)
        .fetch_optional(&self.pool)
        .await?;
        self.decoded(run_id, row)
    }
}

/// The `SELECT` every listing of suspensions shares: the row, the call a
/// host runs (if one does), and how many approvals stand.
fn listing() -> String {
    format!(
        "SELECT s.*, (SELECT e.call_id || ' (' || e.tool || ')' FROM turn_plan p
                      JOIN call_execution e ON e.plan_id = p.id AND e.state = 'started'
                      WHERE p.suspension_id = s.id ORDER BY p.turn DESC LIMIT 1) AS executing,
                (SELECT COUNT(*) FROM decision d WHERE d.suspension_id = s.id AND {approving}) AS approvals
         FROM suspended_run s",
        approving = approving()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_round_trip_and_unknown_ones_are_refused() {
        for verdict in [
            DecisionKind::Approved,
            DecisionKind::Denied,
            DecisionKind::InputSubmitted,
        ] {
            assert_eq!(verdict_from(verdict_text(verdict)).ok(), Some(verdict));
        }
        assert_eq!(
            verdict_from("waved_through").err().map(|e| e.to_string()),
            Some("stored decision verdict is unreadable: unknown verdict `waved_through`".into())
        );
    }
}
