//! Deciding a stored run: the decision checked against the open suspension
//! and recorded beside it, approvals counted, an expired turn asked again, a
//! refused resume's decision given back.

use serde_json::Value;
use toolgate::identity::{self, IdentitySource, Operator};
use toolgate::{
    audit::{DecisionKind, DecisionRecord},
    suspend::{CallDecisions, Decision, InputSubmission, SuspendedRun, TurnDigest, Verdict},
};

use crate::db::{Query, Row, Tx};
use crate::{Store, StoreError, now_ms};

use super::{Answer, ClaimError, Recorded, verdict_from, verdict_text};

/// # Decisions
///
/// An operator's verdict, or a user's data, on a waiting run, under the
/// claim protocol: the console's `toolgate decide`.
impl Store {
    /// Records a decision on a stored run — and nothing else: the host that
    /// owns the run resumes it ([`Host`](crate::Host)).
    ///
    /// In one transaction the run's open suspension is read, the decision
    /// checked against it — the digest names the pending turn, the answer
    /// fits the kind of pause, four eyes holds, input data fits the full
    /// input schema (the core's own checks) — and the suspension marked
    /// decided beside its decision row. Of any number of concurrent deciders
    /// exactly one wins ([`ClaimError::AlreadyDecided`] for the others); a
    /// decision that fails a check changes nothing.
    ///
    /// Any process may decide: the command line, a library call, a web page.
    /// None of them runs a tool.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn demo(
    /// #     store: &toolgate_store::Store,
    /// #     digest: toolgate::suspend::TurnDigest,
    /// # ) -> Result<(), Box<dyn std::error::Error>> {
    /// use toolgate::identity::{IdentitySource, Operator};
    /// use toolgate_store::Answer;
    ///
    /// let bob = Operator::new("bob", IdentitySource::Flag)?;
    /// let recorded = store.decide("run-1", Some(&digest), &bob, Answer::Approve).await?;
    /// println!("recorded; host `{}` will resume it", recorded.owner);
    /// # Ok(()) }
    /// ```
    pub async fn decide(
        &self,
        run_id: &str,
        digest: Option<&TurnDigest>,
        decided_by: &Operator,
        answer: Answer,
    ) -> Result<Recorded, ClaimError> {
        let (_writer, mut tx) = self.write().await?;
        let (suspension_id, owner, run) = self.open_suspension(&mut tx, run_id).await?;
        let expected = run.digest();
        if digest != Some(&expected) {
            return Err(ClaimError::StaleDigest {
                run_id: run_id.to_owned(),
            });
        }
        refuse_replay(&mut tx, run_id, &expected).await?;
        let verdict = answer.kind();
        // The requester's own client first: its rule says why better than
        // four eyes' own refusal would.
        if decided_by.channel() == identity::Channel::Elicitation {
            check_elicited(&mut tx, run_id, &run, decided_by, verdict).await?;
        }
        let per_call = check_answer(run_id, &run, &expected, decided_by, &answer)?;
        let (calls, calls_text) = audit_of(&run, per_call.as_ref())?;
        let need = run.state().options.approvals_required.max(1);
        let approving = per_call.as_ref().is_some_and(CallDecisions::approves_any);
        let have = if approving && need > 1 {
            count_approvals(
                &mut tx,
                run_id,
                suspension_id,
                decided_by,
                calls_text.as_ref(),
            )
            .await?
        } else {
            need
        };
        let complete = have >= need;
        let now = now_ms();
        if complete {
            mark_decided(&mut tx, run_id, suspension_id, decided_by, now).await?;
        }
        let requested_by = run.state().requested_by.clone();
        let record = DecisionRecord {
            run_id: run_id.to_owned(),
            decided_by: decided_by.name().to_owned(),
            decided_by_source: decided_by.source(),
            channel: Some(decided_by.channel()),
            self_decided: identity::same_person(decided_by.name(), &requested_by),
            requested_by,
            at_unix_ms: u64::try_from(now).unwrap_or(0),
            verdict,
            digest: expected,
            tools: run.pending().iter().map(|c| c.name.clone()).collect(),
            voided: None,
            calls,
        };
        let input = match &answer {
            Answer::Input(data) => Some(data.to_string()),
            Answer::Approve | Answer::Deny | Answer::Calls(_) => None,
        };
        self.insert_decision(
            &mut tx,
            suspension_id,
            &record,
            input,
            calls_text,
            !complete,
        )
        .await?;
        if complete {
            self.announce(
                &mut tx,
                suspension_id,
                crate::outbox::Happened::Decided {
                    verdict: verdict_text(verdict),
                    by: None,
                },
            )
            .await?;
        }
        tx.commit().await?;
        if !complete {
            tracing::info!(run = %run_id, by = %decided_by, have, need, "partial approval recorded");
            return Ok(Recorded {
                record,
                owner,
                approvals: (have, need),
            });
        }
        self.inbox.notify_waiters();
        tracing::info!(run = %run_id, by = %decided_by, source = %decided_by.source(), verdict = %record.summary(), owner = %owner, "decision recorded");
        Ok(Recorded {
            record,
            owner,
            approvals: (have.min(need), need),
        })
    }

    /// The open suspension of a run, read inside the caller's transaction:
    /// its row id, its owner and its document, decoded fail-closed; why there
    /// is none, otherwise.
    async fn open_suspension(
        &self,
        tx: &mut Tx,
        run_id: &str,
    ) -> Result<(i64, String, SuspendedRun), ClaimError> {
        // Concurrent deciders of one run take turns from here: each reads
        // the open suspension, checks and counts after the one before it
        // committed.
        tx.lock_open_suspension(run_id).await?;
        let row = Query::new(format!(
            "SELECT id, run_id, status, document, digest, requested_by, owner FROM suspended_run
             WHERE run_id = $1 AND {}",
            crate::suspension::when::OPEN
        ))
        .bind(run_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Err(not_waiting(tx, run_id).await);
        };
        let run = self
            .read_document(&row)?
            .map_err(|error| ClaimError::Corrupt {
                run_id: run_id.to_owned(),
                error,
            })?;
        Ok((row.try_get("id")?, row.try_get("owner")?, run))
    }

    /// Asks an expired turn again: the turn is paused afresh — its time limit
    /// starts over and it has a new digest — and the expired pause is closed,
    /// saying who asked again; partial approvals of it are voided. Only an
    /// expired turn can be asked again.
    pub async fn ask_again(&self, run_id: &str, by: &Operator) -> Result<String, ClaimError> {
        let (_writer, mut tx) = self.write().await?;
        let (suspension_id, owner, run) = self.open_suspension(&mut tx, run_id).await?;
        let now = now_ms();
        let expired = run
            .expires_at_ms()
            .is_some_and(|at| u64::try_from(now).unwrap_or(0) > at);
        if !expired {
            return Err(ClaimError::NotExpired {
                run_id: run_id.to_owned(),
            });
        }
        let why = format!("expired; asked again by {}", by.name());
        crate::suspension::close(&mut tx, suspension_id, by.name(), &why, now).await?;
        Query::new("UPDATE decision SET voided = $1 WHERE suspension_id = $2 AND voided IS NULL")
            .bind(&why)
            .bind(suspension_id)
            .execute(&mut tx)
            .await?;
        self.insert_suspended(&mut tx, &run.asked_again(), &owner)
            .await?;
        tx.commit().await?;
        tracing::info!(run = %run_id, by = %by, "expired turn asked again");
        Ok(owner)
    }

    /// Gives a decision back when its resume was refused before anything of
    /// the turn ran: the decision stays in the audit trail, voided with why,
    /// and the run waits for a fresh decision — in one transaction.
    pub(crate) async fn release(
        &self,
        suspension_id: i64,
        instance: &str,
        why: &str,
    ) -> Result<(), StoreError> {
        let (_writer, mut tx) = self.write().await?;
        let released = crate::suspension::release(&mut tx, suspension_id, instance).await?;
        if released {
            // Audit rows are never deleted: the decision stays, voided, with why.
            Query::new(
                "UPDATE decision SET voided = $1 WHERE suspension_id = $2 AND voided IS NULL",
            )
            .bind(why)
            .bind(suspension_id)
            .execute(&mut tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The decisions taken on a run, oldest first, voided ones included.
    pub async fn decisions(&self, run_id: &str) -> Result<Vec<DecisionRecord>, StoreError> {
        self.check_keyed()?;
        let rows = Query::new("SELECT * FROM decision WHERE run_id = $1 ORDER BY id")
            .bind(run_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| self.decision_from(row).map(|(record, _)| record))
            .collect()
    }

    /// The standing decision on a suspension, with the data an input
    /// decision submitted.
    pub(crate) async fn standing_decision(
        &self,
        suspension_id: i64,
    ) -> Result<Option<(DecisionRecord, Option<Value>)>, StoreError> {
        self.check_keyed()?;
        let row = Query::new(
            "SELECT * FROM decision WHERE suspension_id = $1 AND voided IS NULL AND partial = 0",
        )
        .bind(suspension_id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|row| self.decision_from(&row)).transpose()
    }

    /// A decision row, verified under this store's key when it has one.
    pub(super) fn decision_from(
        &self,
        row: &Row,
    ) -> Result<(DecisionRecord, Option<Value>), StoreError> {
        let verdict = verdict_from(&row.try_get::<String, _>("verdict")?)?;
        let tools: String = row.try_get("tools")?;
        let tools = serde_json::from_str(&tools).map_err(|e| StoreError::Unreadable {
            what: "decision tool list",
            reason: e.to_string(),
        })?;
        let record = DecisionRecord {
            run_id: row.try_get("run_id")?,
            decided_by: row.try_get("decided_by")?,
            decided_by_source: IdentitySource::from_name(
                &row.try_get::<String, _>("decided_by_source")?,
            ),
            channel: channel_of(row, "decision channel")?,
            requested_by: row.try_get("requested_by")?,
            self_decided: row.try_get::<i64, _>("self_decided")? == 1,
            at_unix_ms: u64::try_from(row.try_get::<i64, _>("decided_at")?).unwrap_or(0),
            verdict,
            digest: TurnDigest::from_text(row.try_get::<String, _>("digest")?),
            tools,
            voided: row.try_get("voided")?,
            calls: match row.try_get::<Option<String>, _>("calls")? {
                Some(text) => serde_json::from_str(&text).map_err(|e| StoreError::Unreadable {
                    what: "decision calls",
                    reason: e.to_string(),
                })?,
                None => Vec::new(),
            },
        };
        let input: Option<String> = row.try_get("input")?;
        if let Some(key) = self.key() {
            let suspension_id: i64 = row.try_get("suspension_id")?;
            let mac: Option<String> = row.try_get("mac")?;
            let bytes = crate::tags::decision(suspension_id, &record, input.as_deref());
            if !mac.is_some_and(|mac| key.verify(&bytes, &mac)) {
                return Err(StoreError::Unreadable {
                    what: "decision record",
                    reason: format!(
                        "the decision on run `{}` by `{}` does not verify under this store's integrity key: it was changed, or written without the key",
                        toolgate::visible::visible(&record.run_id),
                        toolgate::visible::visible(&record.decided_by)
                    ),
                });
            }
        }
        let input = input
            .map(|text| {
                serde_json::from_str(&text).map_err(|e| StoreError::Unreadable {
                    what: "decision input",
                    reason: e.to_string(),
                })
            })
            .transpose()?;
        Ok((record, input))
    }
}

/// Why a run has no open suspension: decided already (and by whom), or
/// unknown.
async fn not_waiting(tx: &mut Tx, run_id: &str) -> ClaimError {
    let by: Result<Option<Option<String>>, StoreError> = Query::new(
        "SELECT decided_by FROM suspended_run WHERE run_id = $1 ORDER BY id DESC LIMIT 1",
    )
    .bind(run_id)
    .scalar_optional(&mut *tx)
    .await;
    match by {
        Ok(Some(by)) => ClaimError::AlreadyDecided {
            run_id: run_id.to_owned(),
            by,
        },
        Ok(None) => ClaimError::NotFound(run_id.to_owned()),
        Err(error) => error.into(),
    }
}

/// The run's own rules for an answer — it fits the kind of pause, four eyes
/// holds, input data fits the full input schema — judged by the core's
/// checks, the same ones a resume runs.
fn check_answer(
    run_id: &str,
    run: &SuspendedRun,
    digest: &TurnDigest,
    decided_by: &Operator,
    answer: &Answer,
) -> Result<Option<CallDecisions>, ClaimError> {
    let refused = |reason| ClaimError::Refused {
        run_id: run_id.to_owned(),
        reason,
    };
    match (run, answer) {
        (
            SuspendedRun::AwaitingApproval(pending),
            Answer::Approve | Answer::Deny | Answer::Calls(_),
        ) => {
            let decisions = match answer {
                Answer::Calls(calls) => CallDecisions {
                    calls: calls.clone(),
                    digest: digest.clone(),
                    decided_by: decided_by.name().to_owned(),
                    also_approved_by: Vec::new(),
                },
                _ => Decision {
                    verdict: if *answer == Answer::Approve {
                        Verdict::Approve
                    } else {
                        Verdict::Deny
                    },
                    digest: digest.clone(),
                    decided_by: decided_by.name().to_owned(),
                }
                .per_call(pending.pending()),
            };
            pending.check_calls(&decisions).map_err(refused)?;
            Ok(Some(decisions))
        }
        (SuspendedRun::WaitingForInput(pending), Answer::Input(data)) => {
            pending
                .check_input(&InputSubmission {
                    data: data.clone(),
                    digest: digest.clone(),
                    submitted_by: decided_by.name().to_owned(),
                })
                .map_err(refused)?;
            Ok(None)
        }
        _ => Err(ClaimError::DoesNotFit {
            run_id: run_id.to_owned(),
            status: run.status(),
            verdict: answer.kind(),
        }),
    }
}

/// The turn call by call, as a decision on it is kept, and its stored text.
fn audit_of(
    run: &SuspendedRun,
    per_call: Option<&CallDecisions>,
) -> Result<(Vec<toolgate::audit::AuditedCall>, Option<String>), StoreError> {
    let calls = match (run, per_call) {
        (SuspendedRun::AwaitingApproval(pending), Some(decisions)) => pending.audited(decisions),
        _ => Vec::new(),
    };
    if calls.is_empty() {
        return Ok((calls, None));
    }
    let text = serde_json::to_string(&calls).map_err(|source| StoreError::Encode {
        what: "the per-call verdicts",
        source,
    })?;
    Ok((calls, Some(text)))
}

/// Marks the open suspension decided — the conditional update of which, of
/// any number of concurrent deciders, exactly one wins.
async fn mark_decided(
    tx: &mut Tx,
    run_id: &str,
    suspension_id: i64,
    decided_by: &Operator,
    now: i64,
) -> Result<(), ClaimError> {
    let claimed =
        crate::suspension::mark_decided(tx, suspension_id, decided_by.name(), now).await?;
    if claimed {
        Ok(())
    } else {
        Err(ClaimError::AlreadyDecided {
            run_id: run_id.to_owned(),
            by: None,
        })
    }
}

/// The approvals a run that needs several approvers has with this one: the
/// approver must not have approved it already, and must approve the same
/// verdicts as those before.
async fn count_approvals(
    tx: &mut Tx,
    run_id: &str,
    suspension_id: i64,
    decided_by: &Operator,
    calls: Option<&String>,
) -> Result<u32, ClaimError> {
    let partials = partial_approvals(tx, suspension_id).await?;
    if let Some((by, _)) = partials
        .iter()
        .find(|(by, _)| identity::same_person(by, decided_by.name()))
    {
        return Err(ClaimError::AlreadyApproved {
            run_id: run_id.to_owned(),
            by: by.clone(),
        });
    }
    if partials.iter().any(|(_, c)| c.as_ref() != calls) {
        return Err(ClaimError::DiffersFromPending {
            run_id: run_id.to_owned(),
        });
    }
    Ok(u32::try_from(partials.len())
        .unwrap_or(u32::MAX)
        .saturating_add(1))
}

/// The approvals recorded on a suspension: who, and the verdicts. While it
/// waits these are the partial approvals; once decided, the one that
/// completed it too.
async fn partial_approvals(
    tx: &mut Tx,
    suspension_id: i64,
) -> Result<Vec<(String, Option<String>)>, StoreError> {
    let rows = Query::new(format!(
        "SELECT d.decided_by, d.calls FROM decision d WHERE d.suspension_id = $1 AND {} ORDER BY d.id",
        approving()
    ))
    .bind(suspension_id)
    .fetch_all(&mut *tx)
    .await?;
    Ok(rows
        .iter()
        .map(|row| Ok((row.try_get("decided_by")?, row.try_get("calls")?)))
        .collect::<Result<_, sqlx::Error>>()?)
}

impl Store {
    /// Who approved a suspension before the decision that completed it: its
    /// partial approvals that stand, oldest first.
    pub(crate) async fn earlier_approvers(
        &self,
        suspension_id: i64,
    ) -> Result<Vec<String>, StoreError> {
        let rows = Query::new(format!(
            "SELECT d.decided_by FROM decision d WHERE d.suspension_id = $1 AND d.partial = 1 AND {} ORDER BY d.id",
            approving()
        ))
        .bind(suspension_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| Ok(row.try_get("decided_by")?))
            .collect()
    }
}

/// Which decision rows `d` count as a suspension's approvals: approving, and
/// not voided — the partial ones while it waits, and the one that completed
/// it. The one count: the store's check when an approval arrives, and every
/// view of a run (`runs list`, `runs show`, its JSON).
pub(super) fn approving() -> String {
    format!(
        "d.voided IS NULL AND d.verdict = '{}'",
        verdict_text(DecisionKind::Approved)
    )
}

/// A digest names one suspension of one run: a decision already taken on it
/// means an open row replays a decided turn (a copied or reopened row), never
/// a new one.
async fn refuse_replay(tx: &mut Tx, run_id: &str, digest: &TurnDigest) -> Result<(), ClaimError> {
    let replayed: Option<String> = Query::new(
        "SELECT decided_by FROM decision WHERE run_id = $1 AND digest = $2 AND voided IS NULL AND partial = 0 LIMIT 1",
    )
    .bind(run_id)
    .bind(digest.as_str())
    .scalar_optional(&mut *tx)
    .await?;
    match replayed {
        Some(by) => Err(ClaimError::AlreadyDecided {
            run_id: run_id.to_owned(),
            by: Some(by),
        }),
        None => Ok(()),
    }
}

/// The rules of a decision through the requester's own client
/// (elicitation): an answer only as the core's rule takes it
/// ([`toolgate::audit::elicited_answer_problem`]), and only on calls
/// whose servers' operators turned elicitation on — read fail-closed: only
/// a stored 1 is on, and a tool no server supplies (a builtin) never is.
async fn check_elicited(
    tx: &mut Tx,
    run_id: &str,
    run: &SuspendedRun,
    decided_by: &Operator,
    verdict: DecisionKind,
) -> Result<(), ClaimError> {
    let refused = |why| ClaimError::Refused {
        run_id: run_id.to_owned(),
        reason: toolgate::suspend::Refusal::ElicitedApproval { why },
    };
    if let Some(why) = toolgate::audit::elicited_answer_problem(
        decided_by.channel(),
        decided_by,
        &run.state().requested_by,
        &run.state().options,
        verdict == DecisionKind::Approved,
    ) {
        return Err(refused(why));
    }
    if let Some(why) = elicitation_off(&mut *tx, run).await? {
        return Err(ClaimError::ElicitationOff {
            run_id: run_id.to_owned(),
            why,
        });
    }
    Ok(())
}

/// Why a run's calls cannot be answered through the requester's own client
/// — a call to a server whose operator has not turned elicitation on, or a
/// tool no server supplies (a builtin) — or `None` when every call can.
/// Read fail-closed: only a stored 1 is on.
async fn elicitation_off<'e>(
    on: impl Into<crate::db::On<'e>>,
    run: &SuspendedRun,
) -> Result<Option<String>, StoreError> {
    let mut on = on.into();
    for call in run.pending() {
        // The server's own tool: its catalogue row, under the local name the
        // server and its remote name make (a local tool may hold no `.`,
        // so none can pass for it).
        let flag: Option<i64> = Query::new(
            "SELECT s.elicitation FROM mcp_tool t JOIN mcp_server s ON s.id = t.server_id
             WHERE t.local_name = $1 AND t.orphaned = 0
               AND t.local_name = t.server_id || '.' || t.remote_name",
        )
        .bind(&call.name)
        .scalar_optional(on.reborrow())
        .await?;
        let why = match flag {
            Some(1) => continue,
            Some(_) => format!(
                "call `{}` is to `{}`, whose server's operator has not turned elicitation on",
                toolgate::visible::visible(&call.id),
                toolgate::visible::visible(&call.name)
            ),
            None => format!(
                "call `{}` is to `{}`, which no server supplies",
                toolgate::visible::visible(&call.id),
                toolgate::visible::visible(&call.name)
            ),
        };
        return Ok(Some(why));
    }
    Ok(None)
}

impl Store {
    /// Why the requester's own client may not be asked to approve `run`
    /// (elicitation) — the core's rule for such an answer
    /// ([`toolgate::audit::elicited_answer_problem`]: never under four eyes
    /// or toward several approvers), or a call whose server's operator has
    /// not turned elicitation on — or `None` when it may. What
    /// [`Store::decide`] checks again when the answer comes.
    pub async fn elicitation_refused(
        &self,
        run: &SuspendedRun,
    ) -> Result<Option<String>, StoreError> {
        let state = run.state();
        let requester = Operator::new(&state.requested_by, IdentitySource::Given)
            .map_err(|e| StoreError::Unreadable {
                what: "requester",
                reason: e.to_string(),
            })?
            .via(identity::Channel::Elicitation);
        if let Some(why) = toolgate::audit::elicited_answer_problem(
            identity::Channel::Elicitation,
            &requester,
            &state.requested_by,
            &state.options,
            true,
        ) {
            return Ok(Some(why.to_owned()));
        }
        elicitation_off(&self.pool, run).await
    }
}

/// A decision's (or a choice's) channel: `None` in rows, and schemas, from
/// before channels were kept; a value no build writes is unreadable, not a
/// guess.
pub(crate) fn channel_of(
    row: &Row,
    of: &'static str,
) -> Result<Option<identity::Channel>, StoreError> {
    let unreadable = |what: String| StoreError::Unreadable {
        what: of,
        reason: format!("{what} is not a channel"),
    };
    match row.value("channel") {
        None | Some(crate::db::Val::Null) => Ok(None),
        Some(crate::db::Val::Text(text)) => identity::Channel::from_name(text)
            .map(Some)
            .ok_or_else(|| unreadable(format!("`{}`", toolgate::visible::visible(text)))),
        Some(_) => Err(unreadable("a value that is not text".to_owned())),
    }
}
