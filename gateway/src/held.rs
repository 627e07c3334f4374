//! Held calls: saved, waited on by every asking of the same call, resumed
//! once, answered; and the runs a stopped gateway of this name left.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use rmcp::model::CallToolResult;
use toolgate::suspend::SuspendedRun;
use toolgate_store::{Ended, WaitsFor};

use crate::answers::{
    answer, not_finished, progress, refusal, waits_for_a_choice, waits_for_approval,
};
use crate::{Answered, Asker, Gateway, HeldCall, SameCall};

impl Gateway {
    /// Picks up the runs of this gateway's name whose gateway stopped while
    /// it ran their call ([`toolgate_store::CallHost::stopped`]), by the rule every host
    /// follows: the journal tells what became of the call — one that started
    /// and never ended is an outcome unknown, which waits for an operator's
    /// choice, never run again unasked. The same call asked again of this
    /// gateway is answered by its run. Returns how many were picked up; done
    /// by a served gateway every few seconds.
    pub async fn recover(&self) -> usize {
        let inner = &self.inner;
        let stopped = match inner.host.stopped().await {
            Ok(stopped) => stopped,
            Err(error) => {
                tracing::warn!(%error, "cannot look for runs whose gateway stopped");
                return 0;
            }
        };
        let mut picked = 0;
        for run_id in stopped {
            let task = match inner.host.claim(&run_id).await {
                Ok(Some(task)) => task,
                Ok(None) => continue,
                Err(error) => {
                    tracing::warn!(run = %run_id, %error, "a run whose gateway stopped cannot be claimed");
                    continue;
                }
            };
            tracing::warn!(run = %run_id, "a run whose gateway stopped mid-call is picked up from its journal");
            picked += 1;
            let paused = inner.host.store().latest_suspended(&run_id).await.ok();
            let held = Arc::new(HeldCall {
                run_id: run_id.clone(),
                turn: tokio::sync::Mutex::new(None),
            });
            let (result, over) = self.resume(&run_id, task).await;
            if over {
                *held.turn.lock().await = Some(Answered {
                    result,
                    at: Instant::now(),
                });
            }
            // Known again as the call it was, when it was this gateway
            // user's: the same call asked again is answered by it.
            let same = paused.as_ref().and_then(|run| {
                let state = run.state();
                let call = run.pending().first()?;
                (state.requested_by == inner.user).then(|| SameCall {
                    client: state.client.clone(),
                    tool: call.name.clone(),
                    arguments: toolgate::suspend::arguments_digest(&call.arguments),
                })
            });
            if let Some(same) = same {
                self.held().insert(same, held);
            }
        }
        picked
    }

    /// Saves a paused call and holds it for its decision, up to the wait.
    pub(crate) async fn hold(
        &self,
        same: SameCall,
        run: SuspendedRun,
        asker: Asker,
    ) -> CallToolResult {
        if let Err(error) = self.inner.host.save(&run).await {
            return refusal(format!("the call could not be held for approval: {error}"));
        }
        let held = Arc::new(HeldCall {
            run_id: run.run_id().to_owned(),
            turn: tokio::sync::Mutex::new(None),
        });
        tracing::info!(run = %held.run_id, "a gated call waits for a decision");
        {
            let remember = self.inner.remember;
            let mut calls = self.held();
            // Answers kept past their time are let go.
            calls.retain(|_, call| {
                call.turn.try_lock().map_or(true, |answered| {
                    answered.as_ref().is_none_or(|a| a.at.elapsed() < remember)
                })
            });
            calls.insert(same, Arc::clone(&held));
        }
        match self.join(&held, asker).await {
            Joined::Answered(answer) => answer,
            // Saved a moment ago and gone already: ended by someone else.
            Joined::Gone(_) => refusal(format!(
                "run `{}` ended before its call was answered; `toolgate runs show {}` tells how",
                held.run_id, held.run_id
            )),
        }
    }

    /// Waits, up to the wait, for a held call's decision, and answers with
    /// the resumed run's result; answers at once when it was answered
    /// before. Past the wait — or cancelled by the client — the answer names
    /// the run and how to decide it, and the call stays held for the same
    /// call asked again. `Gone` when the run no longer waits and was not
    /// resumed here (it expired, say): the call is a new one.
    ///
    /// The wait and the resume run in a task of their own: a client that
    /// cancels, or goes away, never cuts a resume short.
    pub(crate) async fn join(&self, held: &Arc<HeldCall>, mut asker: Asker) -> Joined {
        let deadline = tokio::time::Instant::now() + self.inner.wait;
        // Told when the client gives up: the wait ends — never a resume
        // under way — and a decision taken later is applied when the same
        // call is asked again.
        let (client_left, left) = tokio::sync::watch::channel(false);
        let waiting = {
            let gateway = self.clone();
            let held = Arc::clone(held);
            tokio::spawn(async move {
                let stop = || {
                    let mut left = left.clone();
                    async move {
                        tokio::select! {
                            () = tokio::time::sleep_until(deadline) => {}
                            _ = left.wait_for(|gone| *gone) => {}
                        }
                    }
                };
                gateway.wait_and_resume(&held, stop).await
            })
        };
        let progress = progress(held, asker.progress.take());
        tokio::select! {
            waited = waiting => match waited {
                Ok(Waited::Answer(answer)) => Joined::Answered(answer),
                Ok(Waited::Undecided(WaitsFor::Decision)) => {
                    Joined::Answered(waits_for_approval(held))
                }
                Ok(Waited::Undecided(WaitsFor::Choice)) => {
                    Joined::Answered(waits_for_a_choice(held))
                }
                Ok(Waited::Gone) => Joined::Gone(asker),
                Err(error) => Joined::Answered(refusal(format!(
                    "the wait for run `{}` ended: {error}",
                    held.run_id
                ))),
            },
            () = &mut asker.cancelled => {
                tracing::info!(run = %held.run_id, "the client cancelled a held call, or went away; its run stays");
                let _ = client_left.send(true);
                Joined::Answered(waits_for_approval(held))
            }
            () = progress => Joined::Answered(waits_for_approval(held)),
        }
    }

    /// One waiter at a time, until `stop` resolves: the answer given
    /// before, or the run's decision and the resumed run's result.
    async fn wait_and_resume<S: Future<Output = ()>>(
        &self,
        held: &HeldCall,
        stop: impl Fn() -> S,
    ) -> Waited {
        let inner = &self.inner;
        let mut turn = tokio::select! {
            turn = held.turn.lock() => turn,
            () = stop() => return Waited::Undecided(WaitsFor::Decision),
        };
        if let Some(answered) = turn.as_ref() {
            return Waited::Answer(answered.result.clone());
        }
        let mut waits = WaitsFor::Decision;
        let task = match inner.host.waits_for(&held.run_id).await {
            Ok(Some(what)) => {
                waits = what;
                inner
                    .host
                    .wait_until(&held.run_id, inner.poll, stop())
                    .await
            }
            // Decided while no one waited, or picked up after a host stopped.
            Ok(None) => match inner.host.claim(&held.run_id).await {
                Ok(None) => return Waited::Gone,
                claimed => claimed,
            },
            Err(error) => Err(error),
        };
        let task = match task {
            Ok(Some(task)) => task,
            Ok(None) => return Waited::Undecided(waits),
            // Not kept: the same call asked again tries again.
            Err(error) => {
                return Waited::Answer(refusal(format!(
                    "run `{}` could not be resumed: {error}",
                    held.run_id
                )));
            }
        };
        let (result, over) = self.resume(&held.run_id, task).await;
        // A run that waits again — for an operator's choice on a call whose
        // outcome is unknown — answers the same call asked again once it is
        // over, not before.
        if over {
            *turn = Some(Answered {
                result: result.clone(),
                at: Instant::now(),
            });
        }
        Waited::Answer(result)
    }

    /// Resumes a claimed run of one call, on a fresh reading of the
    /// operator's revision, and answers with its result; `true` when the
    /// run is over.
    pub(crate) async fn resume(
        &self,
        run_id: &str,
        task: toolgate_store::Resumable,
    ) -> (CallToolResult, bool) {
        self.inner.follow.forget();
        match self.inner.host.resume(task, &self.inner.registry).await {
            Ok(resumed) => match (&resumed.ended, &resumed.state) {
                (Ended::Finished { .. }, Some(state)) => (answer(state), true),
                (Ended::OutcomeUnknown { why, .. }, _) => (
                    refusal(format!(
                        "run `{run_id}`: the call's outcome is unknown ({why}); it may have run. A person chooses to run it again or not (`toolgate runs show {run_id}`); asked again, the same call is answered by that choice"
                    )),
                    false,
                ),
                (ended, _) => (refusal(not_finished(run_id, ended)), false),
            },
            Err(error) => (
                refusal(format!("run `{run_id}` could not be resumed: {error}")),
                false,
            ),
        }
    }
}

/// How a wait on a held call ended, for the client that asked.
pub(crate) enum Joined {
    Answered(CallToolResult),
    Gone(Asker),
}

/// How a wait on a held call ended.
pub(crate) enum Waited {
    /// The call's answer.
    Answer(CallToolResult),
    /// Not decided in time: it still waits for this.
    Undecided(WaitsFor),
    /// The run no longer waits and was not resumed here.
    Gone,
}
