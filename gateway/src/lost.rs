//! A call the gate lets run at once is forwarded with nothing written
//! first — a gateway killed while it runs leaves no record of it. When its
//! answer is lost after it reached its server, its run is recorded then
//! ([`toolgate_store::CallHost::hold_lost`]), under the call's key, standing
//! as a run whose gateway stopped mid-call: its outcome unknown, waiting for
//! an operator's choice. The same call asked again — of any gateway of the
//! name — joins that run before it is judged, and is answered by the
//! choice, never run again unasked.

use rmcp::model::CallToolResult;
use toolgate::journal::CallRecord;
use toolgate::run::OutcomeUnknown;
use toolgate_store::{CallStanding, Ended};

use crate::Gateway;
use crate::answers::{outcome_unknown, refusal};
use crate::held::stored_answer;

/// What the key of a call asked now names, before the call is judged.
pub(crate) enum Live {
    /// Nothing the call joins: it is judged and run or held as any call.
    Nothing,
    /// The answer kept for the same call.
    Answer(CallToolResult),
    /// A run the call joins: its turn ran or was decided.
    Join(crate::HeldCall),
}

impl Gateway {
    /// The run the same call's key names that a call asked now joins
    /// rather than being judged afresh: any whose turn ran or was decided —
    /// its outcome unknown, waiting for an operator's choice; chosen or
    /// decided, waiting to run; running; over, its answer kept. A run that
    /// waits for a decision is not joined here: a call held for approval
    /// joins it when it is held again, and a call the gate now lets run is
    /// not held back by it.
    pub(crate) async fn live(&self, key: &str) -> Result<Live, CallToolResult> {
        let host = &self.inner.host;
        let unreadable = |error: toolgate_store::StoreError| {
            refusal(format!(
                "the call was not run: the store cannot be read to tell whether the same call waits on a run already ({error})"
            ))
        };
        let Some(held) = host
            .held(key, self.inner.remember)
            .await
            .map_err(unreadable)?
        else {
            return Ok(Live::Nothing);
        };
        if let Some(answer) = held.answer.as_deref().and_then(stored_answer) {
            return Ok(Live::Answer(answer));
        }
        Ok(
            match host.run_standing(&held.run_id).await.map_err(unreadable)? {
                None | Some(CallStanding::Open) => Live::Nothing,
                Some(_) => Live::Join(crate::HeldCall {
                    run_id: held.run_id,
                    key: Some(key.to_owned()),
                }),
            },
        )
    }

    /// Records the run of a call the gate let run at once whose answer was
    /// lost, under the call's key, and answers the client with the truth:
    /// its outcome is unknown, it may have run, a person chooses, and the
    /// same call asked again is answered by that choice.
    pub(crate) async fn lost(
        &self,
        key: &str,
        unknown: &OutcomeUnknown,
        known: &[CallRecord],
        reason: &str,
    ) -> CallToolResult {
        let inner = &self.inner;
        let recorded = inner
            .host
            .hold_lost(key, unknown, known, reason, &inner.registry, inner.remember)
            .await;
        inner.known.add(key);
        match recorded {
            Ok(lost) => {
                let why = match &lost.ended {
                    Ended::OutcomeUnknown { why, .. } => why.clone(),
                    _ => format!("its answer was lost ({reason})"),
                };
                match lost.key_taken {
                    None => outcome_unknown(&lost.run_id, &why),
                    Some(other) => refusal(format!(
                        "run `{run}`: the call's outcome is unknown ({why}); it may have run. A person chooses to run it again or not (`toolgate runs show {run}`). The same call was held already, as run `{other}`: asked again, it is answered by that run",
                        run = lost.run_id,
                        other = other.run_id,
                    )),
                }
            }
            Err(error) => {
                tracing::error!(%error, "a call whose answer was lost could not be recorded");
                refusal(format!(
                    "the call's outcome is unknown: it reached its server and its answer was lost ({reason}); it may have run. It could not be recorded for a person to choose ({error}), so asked again, the same call runs again"
                ))
            }
        }
    }
}
