//! Operator choices on a call whose outcome is unknown: its host stopped
//! while it ran, so it may or may not have happened, and it is a
//! `non_idempotent_write` (every remote call counts as one), so nothing runs
//! it again on its own.
//!
//! A choice is a decision like any other:
//!
//! - it names the call (`call_id`) and carries the digest of what the
//!   operator was shown ([`toolgate::suspend::rerun_digest`]: the run, the
//!   suspension, the turn, the call, the arguments it runs with and the
//!   attempt); a call or attempt that is not the one waiting is refused;
//! - it says who chose, where the name came from and why, and is tagged under
//!   the store's key;
//! - a rerun may make a write happen twice, so it is bound as an approval is
//!   ([`toolgate::journal::check_rerun`]): under four eyes, or on a run that
//!   needs several approvers, the requester cannot choose it, and it stands
//!   only once as many distinct people as the run's approvals chose it;
//! - a skip cannot make anything run, so those rules do not bind it: it
//!   stands at once, whoever chooses it.

use std::collections::HashMap;

use serde_json::Value;
use toolgate::identity::{self, Channel, IdentitySource, Operator};
use toolgate::journal::{
    Action, CallRecord, TurnPlan, check_rerun, rerun_choosers, rerun_stands, reruns_required,
};
use toolgate::run::RunState;
use toolgate::suspend::{RerunDigest, TurnDigest};

use crate::db::{On, Query, Row};
use crate::runs::ClaimError;
use crate::{Store, StoreError, now_ms};

/// An operator's choice for a call whose outcome is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Run the call again.
    Rerun,
    /// Do not run it again: the model reads that its outcome is unknown.
    Skip,
}

impl Choice {
    /// The stored spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Choice::Rerun => "rerun",
            Choice::Skip => "skip",
        }
    }

    fn from_stored(text: &str) -> Option<Self> {
        [Choice::Rerun, Choice::Skip]
            .into_iter()
            .find(|c| c.as_str() == text)
    }
}

/// What an operator chooses, for which call, having been shown what.
#[derive(Debug, Clone, Copy)]
pub struct Choosing<'a> {
    /// The call, by its id.
    pub call_id: &'a str,
    /// The digest shown beside it ([`UnknownCall::digest`]).
    pub digest: &'a RerunDigest,
    /// Run it again, or not.
    pub choice: Choice,
    /// Why, for the record: words (at least one letter or digit).
    pub reason: &'a str,
}

/// A choice as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedChoice {
    /// What was chosen.
    pub choice: Choice,
    /// Who chose.
    pub by: String,
    /// Where the name came from.
    pub source: IdentitySource,
    /// Why; `None` for choices recorded before reasons were kept.
    pub reason: Option<String>,
    /// The attempt it was chosen after.
    pub attempt: i64,
    /// When, in milliseconds since the Unix epoch.
    pub at_unix_ms: i64,
    /// How it reached the record; `None` for choices recorded before
    /// channels were kept.
    pub channel: Option<Channel>,
}

/// As the run's history lists it, raw: whoever shows it escapes it.
impl std::fmt::Display for RecordedChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} by {} (name from {}{}, attempt {})",
            self.choice.as_str(),
            self.by,
            self.source,
            self.channel
                .map(|c| format!(", through {c}"))
                .unwrap_or_default(),
            self.attempt
        )?;
        if let Some(reason) = &self.reason {
            write!(f, ": {reason}")?;
        }
        Ok(())
    }
}

/// A call whose outcome is unknown, as an operator is shown it before
/// choosing.
#[derive(Debug, Clone, PartialEq)]
pub struct UnknownCall {
    /// The call's id.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// The turn's number in its run.
    pub turn: u32,
    /// The call's place in its turn.
    pub index: usize,
    /// How many times it has been started.
    pub attempt: u32,
    /// The arguments a rerun runs it with.
    pub arguments: Value,
    /// What a choice on it carries.
    pub digest: RerunDigest,
    /// Choices recorded on this attempt so far (reruns waiting for more
    /// people).
    pub choices: Vec<RecordedChoice>,
    /// Reruns that count so far, and how many must.
    pub reruns: (u32, u32),
    /// Who requested the run.
    pub requested_by: String,
    /// Whether the run requires four eyes.
    pub four_eyes: bool,
}

/// The call a choice was recorded for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// The call's id.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// The host that will act on the choice.
    pub owner: String,
    /// Whether the choice stands now (the host acts on it), or waits for
    /// more people to choose a rerun.
    pub stands: bool,
    /// Reruns that count, this one included, and how many must.
    pub reruns: (u32, u32),
}

/// An unknown call as found, with what a choice on it needs.
struct Found {
    suspension_id: i64,
    owner: String,
    plan_id: i64,
    plan: TurnPlan,
    call: UnknownCall,
}

/// The choice that stands on one attempt of a call, from the choices made on
/// it in the order they were made: the first skip, or a rerun once as many
/// distinct people as the run's approvals, each of whom may choose it
/// ([`check_rerun`]), chose it — whichever came first. The one rule: the
/// store's check when recording, and the reading a host recovers by.
fn standing(choices: &[RecordedChoice], run: &RunState) -> Option<CallRecord> {
    let mut rerun_by: Vec<String> = Vec::new();
    for choice in choices {
        match choice.choice {
            Choice::Skip => {
                return Some(CallRecord::Skip {
                    by: choice.by.clone(),
                });
            }
            Choice::Rerun => {
                rerun_by.push(choice.by.clone());
                if rerun_stands(run, &rerun_by) {
                    return Some(CallRecord::Rerun { by: rerun_by });
                }
            }
        }
    }
    None
}

/// A choice's own checks against the call it names: the digest shown beside
/// it, a reason, and — for a rerun — who may choose it, once each.
fn check_choice(
    run_id: &str,
    found: &Found,
    by: &Operator,
    choosing: &Choosing<'_>,
) -> Result<(), ClaimError> {
    if &found.call.digest != choosing.digest {
        return Err(ClaimError::StaleChoice {
            run_id: run_id.to_owned(),
        });
    }
    if !choosing
        .reason
        .chars()
        .any(|c| c.is_alphanumeric() && !toolgate::visible::is_hidden(c))
    {
        return Err(ClaimError::NoReason {
            run_id: run_id.to_owned(),
        });
    }
    if choosing.choice == Choice::Rerun {
        check_rerun(found.plan.run(), by.name()).map_err(|reason| ClaimError::Refused {
            run_id: run_id.to_owned(),
            reason,
        })?;
        if let Some(earlier) = found
            .call
            .choices
            .iter()
            .find(|c| c.choice == Choice::Rerun && identity::same_person(&c.by, by.name()))
        {
            return Err(ClaimError::AlreadyChose {
                run_id: run_id.to_owned(),
                by: earlier.by.clone(),
            });
        }
    }
    Ok(())
}

/// The reruns that count on one attempt: distinct people who may choose it
/// ([`rerun_choosers`]).
fn reruns_counted(choices: &[RecordedChoice], run: &RunState) -> u32 {
    let by: Vec<String> = choices
        .iter()
        .filter(|c| c.choice == Choice::Rerun)
        .map(|c| c.by.clone())
        .collect();
    u32::try_from(rerun_choosers(run, &by).len()).unwrap_or(u32::MAX)
}

/// A stored choice row.
struct ChoiceRow {
    index: i64,
    call_id: Option<String>,
    digest: Option<String>,
    choice: RecordedChoice,
}

impl ChoiceRow {
    /// What its tag covers ([`crate::tags::choice`]).
    fn tagged(&self, suspension_id: i64, turn: i64) -> Vec<u8> {
        let c = &self.choice;
        crate::tags::choice(&crate::tags::Choice {
            suspension_id,
            turn,
            index: self.index,
            attempt: c.attempt,
            chose: c.choice.as_str(),
            by: &c.by,
            source: c.source.as_str(),
            named: self.call_id.as_deref().zip(self.digest.as_deref()),
            reason: c.reason.as_deref(),
            at_unix_ms: c.at_unix_ms,
            channel: c.channel.map(Channel::as_str),
        })
    }

    fn read(row: &Row) -> Result<Self, StoreError> {
        let stored: String = row.try_get("choice")?;
        let choice = Choice::from_stored(&stored).ok_or_else(|| StoreError::Unreadable {
            what: "operator choice",
            reason: format!("unknown choice `{}`", toolgate::visible::visible(&stored)),
        })?;
        Ok(Self {
            index: row.try_get("call_index")?,
            call_id: row.try_get("call_id")?,
            digest: row.try_get("digest")?,
            choice: RecordedChoice {
                choice,
                by: row.try_get("decided_by")?,
                source: IdentitySource::from_name(&row.try_get::<String, _>("decided_by_source")?),
                reason: row.try_get("reason")?,
                attempt: row.try_get("attempt")?,
                at_unix_ms: row.try_get("decided_at")?,
                channel: crate::runs::channel_of(row, "operator choice")?,
            },
        })
    }
}

/// # Unknown outcomes
///
/// An operator's rerun or skip of a call a host stopped in: the console's
/// `runs rerun` and `runs skip`.
impl Store {
    /// The choices recorded on a plan, oldest first — under a key, only those
    /// whose tag verifies: per call index.
    async fn verified_choices<'e>(
        &self,
        on: impl Into<On<'e>>,
        suspension_id: i64,
        turn: i64,
        plan_id: i64,
    ) -> Result<Vec<ChoiceRow>, StoreError> {
        let rows = Query::new(
            "SELECT *
             FROM execution_choice WHERE plan_id = $1 ORDER BY id",
        )
        .bind(plan_id)
        .fetch_all(on)
        .await?;
        let mut choices = Vec::with_capacity(rows.len());
        for row in &rows {
            let choice = ChoiceRow::read(row)?;
            if let Some(key) = self.key() {
                let mac: Option<String> = row.try_get("mac")?;
                let bytes = choice.tagged(suspension_id, turn);
                if !mac.is_some_and(|m| key.verify(&bytes, &m)) {
                    tracing::warn!(
                        suspension = suspension_id,
                        call = choice.index,
                        "an operator choice does not verify under the key; ignored"
                    );
                    continue;
                }
            }
            choices.push(choice);
        }
        Ok(choices)
    }

    /// The choices recorded on one call of a plan, as the run's history
    /// shows them (under a key, those whose tag verifies).
    pub(crate) async fn recorded_choices(
        &self,
        suspension_id: i64,
        turn: i64,
        plan_id: i64,
        index: i64,
    ) -> Result<Vec<RecordedChoice>, StoreError> {
        Ok(self
            .verified_choices(&self.pool, suspension_id, turn, plan_id)
            .await?
            .into_iter()
            .filter(|c| c.index == index)
            .map(|c| c.choice)
            .collect())
    }

    /// The choices that stand on a plan, per call index and attempt.
    pub(crate) async fn standing_choices(
        &self,
        suspension_id: i64,
        plan: &TurnPlan,
        plan_id: i64,
    ) -> Result<HashMap<(i64, i64), CallRecord>, StoreError> {
        let rows = self
            .verified_choices(&self.pool, suspension_id, i64::from(plan.turn()), plan_id)
            .await?;
        let mut grouped: HashMap<(i64, i64), Vec<RecordedChoice>> = HashMap::new();
        for row in rows {
            grouped
                .entry((row.index, row.choice.attempt))
                .or_default()
                .push(row.choice);
        }
        Ok(grouped
            .into_iter()
            .filter_map(|(key, choices)| standing(&choices, plan.run()).map(|s| (key, s)))
            .collect())
    }

    /// The calls of a run whose outcome is unknown — what an operator is shown
    /// before choosing, digest included. Empty when the run waits for no such
    /// choice.
    pub async fn unknown_calls(&self, run_id: &str) -> Result<Vec<UnknownCall>, StoreError> {
        self.check_keyed()?;
        Ok(self
            .find_unknown(On::Pool(&self.pool), run_id)
            .await?
            .into_iter()
            .map(|found| found.call)
            .collect())
    }

    async fn find_unknown(&self, on: On<'_>, run_id: &str) -> Result<Vec<Found>, StoreError> {
        let (rows, on) = match on {
            On::Pool(pool) => (Self::unknown_rows(run_id).fetch_all(pool).await?, None),
            On::Tx(tx) => (
                Self::unknown_rows(run_id).fetch_all(&mut *tx).await?,
                Some(tx),
            ),
        };
        let mut found = Vec::with_capacity(rows.len());
        let mut on = on;
        for row in rows {
            let suspension_id: i64 = row.try_get("suspension_id")?;
            let plan_id: i64 = row.try_get("plan_id")?;
            let turn: i64 = row.try_get("turn")?;
            let plan = self.read_plan(
                suspension_id,
                turn,
                &row.try_get::<String, _>("plan")?,
                row.try_get("plan_mac")?,
            )?;
            let index: i64 = row.try_get("call_index")?;
            let attempt: i64 = row.try_get("attempts")?;
            let Some((step, position)) = usize::try_from(index)
                .ok()
                .and_then(|i| plan.steps().get(i).map(|s| (s, i)))
            else {
                return Err(StoreError::Unreadable {
                    what: "call execution",
                    reason: format!("call {index} is not in its turn's plan"),
                });
            };
            let Action::Execute { arguments, .. } = step.action() else {
                return Err(StoreError::Unreadable {
                    what: "call execution",
                    reason: format!("call {index} was started, but its plan does not run it"),
                });
            };
            let suspension = TurnDigest::from_text(row.try_get::<String, _>("suspension_digest")?);
            let attempt_u32 = u32::try_from(attempt).unwrap_or(u32::MAX);
            let digest = plan
                .rerun_digest(&suspension, position, attempt_u32)
                .ok_or_else(|| StoreError::Unreadable {
                    what: "call execution",
                    reason: format!("call {index} is not one its plan runs"),
                })?;
            let choices = match on.as_deref_mut() {
                Some(tx) => {
                    self.verified_choices(&mut *tx, suspension_id, turn, plan_id)
                        .await?
                }
                None => {
                    self.verified_choices(&self.pool, suspension_id, turn, plan_id)
                        .await?
                }
            };
            let choices: Vec<RecordedChoice> = choices
                .into_iter()
                .filter(|c| c.index == index && c.choice.attempt == attempt)
                .map(|c| c.choice)
                .collect();
            let reruns = (
                reruns_counted(&choices, plan.run()),
                reruns_required(&plan.run().options),
            );
            let call = UnknownCall {
                call_id: step.call().id.clone(),
                tool: step.call().name.clone(),
                turn: plan.turn(),
                index: position,
                attempt: attempt_u32,
                arguments: arguments.clone(),
                digest,
                choices,
                reruns,
                requested_by: plan.run().requested_by.clone(),
                four_eyes: plan.run().options.four_eyes,
            };
            found.push(Found {
                suspension_id,
                owner: row.try_get("owner")?,
                plan_id,
                plan,
                call,
            });
        }
        Ok(found)
    }

    /// The started calls of the newest plan of a run whose outcome is unknown.
    fn unknown_rows(run_id: &str) -> Query {
        Query::new(format!(
            "SELECT s.id AS suspension_id, s.owner, s.digest AS suspension_digest,
                    p.id AS plan_id, p.turn, p.plan, p.mac AS plan_mac,
                    e.call_index, e.attempts
             FROM suspended_run s
             JOIN turn_plan p ON p.suspension_id = s.id
             JOIN call_execution e ON e.plan_id = p.id AND e.state = 'started'
             WHERE s.run_id = $1 AND {}
               AND p.turn = (SELECT MAX(q.turn) FROM turn_plan q WHERE q.suspension_id = s.id)
             ORDER BY e.call_index",
            crate::suspension::when::S_OUTCOME_UNKNOWN
        ))
        .bind(run_id)
    }

    /// Records an operator's choice for a call whose outcome is unknown — run
    /// it again, or skip it — and, once the choice stands, hands the run back
    /// to its host. Only records: the owning host acts on it.
    ///
    /// Refused, changing nothing: a run that waits for no such choice
    /// ([`StoreError::NotUnknown`]); a call that is not the one waiting
    /// ([`ClaimError::NotTheUnknownCall`]); a digest that is not the one
    /// shown beside it ([`ClaimError::StaleChoice`]); no reason
    /// ([`ClaimError::NoReason`]); a rerun chosen by the requester under four
    /// eyes or on a run that needs several approvers ([`ClaimError::Refused`]),
    /// or by someone who chose it already ([`ClaimError::AlreadyChose`]).
    pub async fn choose(
        &self,
        run_id: &str,
        by: &Operator,
        choosing: &Choosing<'_>,
    ) -> Result<Chosen, ClaimError> {
        self.check_keyed()?;
        not_through_a_client(run_id, by)?;
        let (_writer, mut tx) = self.write().await?;
        tx.lock_run(run_id).await?;
        let found = self.find_unknown(On::Tx(&mut tx), run_id).await?;
        if found.is_empty() {
            let known: Option<i64> =
                Query::new("SELECT id FROM suspended_run WHERE run_id = $1 LIMIT 1")
                    .bind(run_id)
                    .scalar_optional(&mut tx)
                    .await?;
            return Err(match known {
                Some(_) => StoreError::NotUnknown(run_id.to_owned()).into(),
                None => ClaimError::NotFound(run_id.to_owned()),
            });
        }
        let mut found = found;
        let Some(position) = found
            .iter()
            .position(|f| f.call.call_id == choosing.call_id)
        else {
            return Err(ClaimError::NotTheUnknownCall {
                run_id: run_id.to_owned(),
                call_id: choosing.call_id.to_owned(),
                waiting: found
                    .iter()
                    .map(|f| format!("`{}` ({})", f.call.call_id, f.call.tool))
                    .collect(),
            });
        };
        let found = found.swap_remove(position);
        check_choice(run_id, &found, by, choosing)?;
        let run = found.plan.run();
        let now = now_ms();
        let call = &found.call;
        let row = ChoiceRow {
            index: i64::try_from(call.index).unwrap_or(i64::MAX),
            call_id: Some(call.call_id.clone()),
            digest: Some(call.digest.as_str().to_owned()),
            choice: RecordedChoice {
                choice: choosing.choice,
                by: by.name().to_owned(),
                source: by.source(),
                reason: Some(choosing.reason.to_owned()),
                attempt: i64::from(call.attempt),
                at_unix_ms: now,
                channel: Some(by.channel()),
            },
        };
        let mac = self
            .key()
            .map(|key| key.tag(&row.tagged(found.suspension_id, i64::from(call.turn))));
        let id = insert_choice(&mut tx, found.plan_id, &row, mac.clone()).await?;
        if let Some(mac) = &mac {
            crate::chain::append(
                &mut tx,
                self.key(),
                found.suspension_id,
                crate::chain::Event::Choice { id, mac },
            )
            .await?;
        }
        let mut choices = call.choices.clone();
        choices.push(row.choice);
        let stands = standing(&choices, run).is_some();
        if stands {
            crate::suspension::hand_back(&mut tx, found.suspension_id, now).await?;
            self.announce(
                &mut tx,
                found.suspension_id,
                crate::outbox::Happened::Decided {
                    verdict: choosing.choice.as_str(),
                    by: Some(by.name()),
                },
            )
            .await?;
        }
        tx.commit().await?;
        if stands {
            self.inbox.notify_waiters();
        }
        let chosen = Chosen {
            call_id: call.call_id.clone(),
            tool: call.tool.clone(),
            owner: found.owner,
            stands,
            reruns: (reruns_counted(&choices, run), call.reruns.1),
        };
        tracing::info!(run = %run_id, by = %by, source = %by.source(), choice = choosing.choice.as_str(), call = %chosen.call_id, stands, "choice recorded for a call whose outcome is unknown");
        Ok(chosen)
    }
}

/// Whether a call that may have run runs again is an operator's choice,
/// never the requester's through their own client.
fn not_through_a_client(run_id: &str, by: &Operator) -> Result<(), ClaimError> {
    if by.channel() == Channel::Elicitation {
        return Err(ClaimError::ChoiceThroughClient {
            run_id: run_id.to_owned(),
        });
    }
    Ok(())
}

/// Writes a choice row; its id.
async fn insert_choice(
    tx: &mut crate::db::Tx,
    plan_id: i64,
    row: &ChoiceRow,
    mac: Option<String>,
) -> Result<i64, StoreError> {
    let c = &row.choice;
    Query::new(
        "INSERT INTO execution_choice (plan_id, call_index, attempt, choice, decided_by, decided_by_source, decided_at, call_id, digest, reason, mac, channel)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         RETURNING id",
    )
    .bind(plan_id)
    .bind(row.index)
    .bind(c.attempt)
    .bind(c.choice.as_str())
    .bind(&c.by)
    .bind(c.source.as_str())
    .bind(c.at_unix_ms)
    .bind(row.call_id.clone())
    .bind(row.digest.clone())
    .bind(c.reason.clone())
    .bind(mac)
    .bind(c.channel.map(Channel::as_str))
    .scalar::<i64>(&mut *tx)
    .await
}
