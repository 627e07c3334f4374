//! The journal: what a turn will do, written before any of it runs, and
//! each call's start and end, so a host that dies mid-turn is followed by one
//! that knows exactly what ran.

use std::time::Duration;

use toolgate::ToolOutput;
use toolgate::erased::BoxFuture;
use toolgate::integrity::IntegrityKey;
use toolgate::journal::{Action, CallRecord, Journal, JournalError, TurnPlan};

use crate::db::{Query, Tx};
use crate::{Store, StoreError, now_ms};

/// Aborts a spawned task when dropped.
pub(super) struct AbortOnDrop(pub(super) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Keeps the lease of a run being resumed while a call runs long.
pub(super) async fn renew(journal: StoreJournal, every: Duration) {
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
pub(super) struct StoreJournal {
    pub(super) store: Store,
    pub(super) suspension_id: i64,
    pub(super) instance: String,
    pub(super) lease: i64,
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
        crate::suspension::renew(
            tx,
            self.suspension_id,
            &self.instance,
            now.saturating_add(self.lease),
            now,
        )
        .await
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
            let text = plan.encode_with(self.store.key())?;
            let suspension_id = self.suspension_id;
            let turn = i64::from(plan.turn());
            let key = self.store.key().cloned();
            self.entry(move |tx| {
                Box::pin(
                    async move { write_plan(tx, key.as_ref(), suspension_id, turn, &text).await },
                )
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
            let call = CallAt::of(plan, index);
            let suspension_id = self.suspension_id;
            let key = self.store.key().cloned();
            self.entry(move |tx| {
                Box::pin(async move { write_started(tx, key.as_ref(), suspension_id, &call).await })
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
            let call = CallAt::of(plan, index);
            let text = serde_json::to_string(output)
                .map_err(|e| JournalError::with_source("cannot encode the call's result", e))?;
            let suspension_id = self.suspension_id;
            let key = self.store.key().cloned();
            self.entry(move |tx| {
                Box::pin(
                    async move { write_ended(tx, key.as_ref(), suspension_id, &call, &text).await },
                )
            })
            .await
        })
    }
}

/// A planned call as its journal rows name it: its turn, its place in the
/// turn, its id, tool and effect.
pub(super) struct CallAt {
    turn: i64,
    index: i64,
    call_id: String,
    tool: String,
    effect: &'static str,
}

impl CallAt {
    /// Call `index` of `plan`.
    pub(super) fn of(plan: &TurnPlan, index: usize) -> Self {
        let (call_id, tool, effect) = step_facts(plan, index);
        Self {
            turn: i64::from(plan.turn()),
            index: i64::try_from(index).unwrap_or(i64::MAX),
            call_id,
            tool,
            effect,
        }
    }
}

/// Writes a turn's plan (`text`, as [`TurnPlan::encode_with`] wrote it
/// under `key`) for a suspension, tagged, and its link in the suspension's
/// chain: the journal's first entry of a turn.
pub(super) async fn write_plan(
    tx: &mut Tx,
    key: Option<&IntegrityKey>,
    suspension_id: i64,
    turn: i64,
    text: &str,
) -> Result<(), StoreError> {
    let mac = key.map(|key| key.tag(&crate::tags::plan(suspension_id, turn, text)));
    Query::new(
        "INSERT INTO turn_plan (suspension_id, turn, plan, mac, created_at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(suspension_id)
    .bind(turn)
    .bind(text)
    .bind(mac.clone())
    .bind(now_ms())
    .execute(&mut *tx)
    .await?;
    if let Some(mac) = &mac {
        crate::chain::append(
            tx,
            key,
            suspension_id,
            crate::chain::Event::Plan { turn, mac },
        )
        .await?;
    }
    Ok(())
}

/// Records that a planned call starts (again), and its link: the journal's
/// entry before the call runs.
pub(super) async fn write_started(
    tx: &mut Tx,
    key: Option<&IntegrityKey>,
    suspension_id: i64,
    call: &CallAt,
) -> Result<(), StoreError> {
    let attempt: i64 = Query::new(
        "INSERT INTO call_execution (plan_id, call_index, call_id, tool, effect, state, started_at)
         SELECT id, $1, $2, $3, $4, 'started', $5 FROM turn_plan WHERE suspension_id = $6 AND turn = $7
         ON CONFLICT (plan_id, call_index) DO UPDATE SET
             state = 'started', attempts = call_execution.attempts + 1, output = NULL,
             started_at = excluded.started_at, ended_at = NULL
         RETURNING attempts",
    )
    .bind(call.index)
    .bind(call.call_id.as_str())
    .bind(call.tool.as_str())
    .bind(call.effect)
    .bind(now_ms())
    .bind(suspension_id)
    .bind(call.turn)
    .scalar(&mut *tx)
    .await?;
    crate::chain::append(
        tx,
        key,
        suspension_id,
        crate::chain::Event::Started {
            turn: call.turn,
            index: call.index,
            attempt,
        },
    )
    .await
}

/// Records that a planned call ended with its result (`text`, the
/// [`ToolOutput`] as JSON), tagged, and its link: the journal's entry after
/// the call ran.
pub(super) async fn write_ended(
    tx: &mut Tx,
    key: Option<&IntegrityKey>,
    suspension_id: i64,
    call: &CallAt,
    text: &str,
) -> Result<(), StoreError> {
    let mac = key.map(|key| {
        key.tag(&crate::tags::result(
            suspension_id,
            call.turn,
            call.index,
            text,
        ))
    });
    let now = now_ms();
    let attempt: i64 = Query::new(
        "INSERT INTO call_execution (plan_id, call_index, call_id, tool, effect, state, output, started_at, ended_at, mac)
         SELECT id, $1, $2, $3, $4, 'ended', $5, $6, $7, $8 FROM turn_plan WHERE suspension_id = $9 AND turn = $10
         ON CONFLICT (plan_id, call_index) DO UPDATE SET
             state = 'ended', output = excluded.output, ended_at = excluded.ended_at,
             mac = excluded.mac
         RETURNING attempts",
    )
    .bind(call.index)
    .bind(call.call_id.as_str())
    .bind(call.tool.as_str())
    .bind(call.effect)
    .bind(text)
    .bind(now)
    .bind(now)
    .bind(mac.clone())
    .bind(suspension_id)
    .bind(call.turn)
    .scalar(&mut *tx)
    .await?;
    if let Some(mac) = &mac {
        crate::chain::append(
            tx,
            key,
            suspension_id,
            crate::chain::Event::Ended {
                turn: call.turn,
                index: call.index,
                attempt,
                mac,
            },
        )
        .await?;
    }
    Ok(())
}

/// The call id, tool and effect of a planned step, for its journal row.
fn step_facts(plan: &TurnPlan, index: usize) -> (String, String, &'static str) {
    match plan.steps().get(index) {
        Some(step) => (
            step.call().id.clone(),
            step.call().name.clone(),
            match step.action() {
                Action::Execute { effect, .. } => effect.as_str(),
                Action::Answer { .. } => "none",
            },
        ),
        None => (String::new(), String::new(), "none"),
    }
}

impl Store {
    /// The last turn planned for a suspension, verified under this store's
    /// key when it has one.
    pub(crate) async fn last_plan(
        &self,
        suspension_id: i64,
    ) -> Result<Option<(i64, TurnPlan)>, StoreError> {
        let row = Query::new(
            "SELECT id, turn, plan, mac FROM turn_plan WHERE suspension_id = $1 ORDER BY turn DESC LIMIT 1",
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
            let bytes = crate::tags::plan(suspension_id, turn, text);
            if !mac.is_some_and(|mac| key.verify(&bytes, &mac)) {
                return Err(StoreError::Unreadable {
                    what: "turn plan",
                    reason: "it does not verify under this store's integrity key: it was changed, or written without the key".into(),
                });
            }
        } else if self.requires_key() {
            return Err(StoreError::KeyRequired);
        }
        TurnPlan::decode_with(text, self.key()).map_err(|e| StoreError::Unreadable {
            what: "turn plan",
            reason: e.message().to_owned(),
        })
    }

    /// What the journal knows of each call of a plan.
    pub(crate) async fn known_calls(
        &self,
        suspension_id: i64,
        plan: &TurnPlan,
        plan_id: i64,
    ) -> Result<Vec<CallRecord>, StoreError> {
        let steps = plan.steps().len();
        let turn = i64::from(plan.turn());
        let rows = Query::new(
            "SELECT call_index, state, output, attempts, mac FROM call_execution WHERE plan_id = $1",
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
                let result = crate::tags::result(
                    suspension_id,
                    turn,
                    index,
                    output.as_deref().unwrap_or(""),
                );
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
