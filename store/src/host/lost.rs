//! A call the gate let run at once — no decision, no host journaling it —
//! whose answer was lost after it reached its server: recorded, after the
//! fact, as the run of one call it was, standing exactly as a run whose host
//! stopped mid-call. Its plan and what is known of each call go to the
//! journal, its execution is `outcome_unknown`, and it waits for an
//! operator's choice (`rerun` or `skip`, [`Store::choose`](crate::Store::choose)),
//! which the host of its name acts on — by the rule every host follows,
//! from its journal — when the same call is asked again.
//!
//! Nothing is written before such a call is forwarded: a gateway killed
//! while one runs leaves no record of it.

use std::time::Duration;

use toolgate::Registry;
use toolgate::journal::CallRecord;
use toolgate::run::OutcomeUnknown;

use super::Ended;
use super::calls::{CallHost, HeldCall, register};
use super::journal::{CallAt, write_ended, write_plan, write_started};
use super::resume::{answer_lost, unknown_outcome};
use crate::{StoreError, now_ms};

/// A run of one call whose answer was lost, as [`CallHost::hold_lost`]
/// recorded it.
#[derive(Debug)]
pub struct LostAnswer {
    /// The run.
    pub run_id: String,
    /// Where it stands: [`Ended::OutcomeUnknown`], waiting for an
    /// operator's choice.
    pub ended: Ended,
    /// `None` when the call's key names this run, so the same call asked
    /// again joins it; else the live run the key named already (the same
    /// call asked at the same time, say), which the same call asked again
    /// joins instead. This run is recorded and choosable either way.
    pub key_taken: Option<HeldCall>,
}

impl CallHost {
    /// Records a run of one call whose turn the gate let run with no
    /// decision and whose call's answer was lost
    /// ([`toolgate::run::RunError::OutcomeUnknown`]: `unknown`, `known`,
    /// and the `reason` its tool gave), owned by this host, in one
    /// transaction: the turn as its pause
    /// ([`OutcomeUnknown::suspension`], reviewed as `registry` offers its
    /// tools now), the plan and each call's record in the journal — ended
    /// calls with their results, the unknown one started and never ended —
    /// and its execution `outcome_unknown`; registered under `key`, what
    /// makes a call the same call, unless the key already names a live run
    /// (see [`CallHost::hold`]). It then stands as a run whose host stopped
    /// mid-call: an operator chooses to run the call again or to skip it,
    /// and the host that claims it once the choice stands recovers it from
    /// the journal.
    pub async fn hold_lost(
        &self,
        key: &str,
        unknown: &OutcomeUnknown,
        known: &[CallRecord],
        reason: &str,
        registry: &Registry,
        keep: Duration,
    ) -> Result<LostAnswer, StoreError> {
        let store = &self.host.store;
        let run = unknown.suspension(registry).await;
        let run_id = run.run_id().to_owned();
        let plan = &unknown.plan;
        let plan_text = plan
            .encode_with(store.key())
            .map_err(|error| StoreError::Unreadable {
                what: "turn plan",
                reason: error.to_string(),
            })?;
        let (call_id, tool) = unknown
            .call()
            .map(|c| (c.id.clone(), c.name.clone()))
            .unwrap_or_default();
        let why = answer_lost(reason);
        let now = now_ms();
        let key_store = store.key().cloned();
        let key_ref = key_store.as_ref();
        let (_writer, mut tx) = store.write().await?;
        let key_taken = register(&mut tx, key, &run_id, self.host.name(), keep).await?;
        let suspension_id = store
            .insert_suspension(&mut tx, &run, self.host.name())
            .await?;
        write_plan(
            &mut tx,
            key_ref,
            suspension_id,
            i64::from(plan.turn()),
            &plan_text,
        )
        .await?;
        for (index, record) in known.iter().enumerate() {
            let call = CallAt::of(plan, index);
            match record {
                CallRecord::NotStarted => {}
                CallRecord::Ended(output) => {
                    let text =
                        serde_json::to_string(output).map_err(|source| StoreError::Encode {
                            what: "a call's result",
                            source,
                        })?;
                    write_started(&mut tx, key_ref, suspension_id, &call).await?;
                    write_ended(&mut tx, key_ref, suspension_id, &call, &text).await?;
                }
                // Started and never ended: the unknown call, whose outcome
                // an operator chooses.
                CallRecord::Started | CallRecord::Rerun { .. } | CallRecord::Skip { .. } => {
                    write_started(&mut tx, key_ref, suspension_id, &call).await?;
                }
            }
        }
        let marked = crate::suspension::outcome_lost(
            &mut tx,
            suspension_id,
            &unknown_outcome(&call_id, &tool, &why),
            now,
        )
        .await?;
        if !marked {
            return Err(StoreError::Unreadable {
                what: "suspended run",
                reason: "the run saved a moment ago was not open".to_owned(),
            });
        }
        store
            .announce(
                &mut tx,
                suspension_id,
                crate::outbox::Happened::OutcomeUnknown {
                    run: Some(&run),
                    owner: self.host.name(),
                    why: &why,
                },
            )
            .await?;
        tx.commit().await?;
        tracing::warn!(run = %run_id, call = %call_id, %tool, "a call run with no decision lost its answer; its run waits for an operator's choice");
        Ok(LostAnswer {
            run_id,
            ended: Ended::OutcomeUnknown { call_id, tool, why },
            key_taken,
        })
    }
}
