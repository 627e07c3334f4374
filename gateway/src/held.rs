//! Held calls: registered in the store under what makes a call the same
//! call, waited on by every asking of it — from this process or any other
//! gateway of the name — resumed once, answered; and the runs a stopped
//! gateway of this name left.

use std::future::Future;
use std::time::Instant;

use rmcp::model::CallToolResult;
use toolgate::suspend::SuspendedRun;
use toolgate_store::{ANSWER_GRACE, CallStanding, Ended, Holding};

use crate::answers::{
    answer, is_running, not_finished, outcome_unknown, progress, refusal, waits_for_a_choice,
    waits_for_approval,
};
use crate::{Asker, Gateway, HeldCall};

/// How long past the wait a waiter may take to come back before its call is
/// taken to be running: a waiter that is not resuming comes back at the
/// deadline.
const RESUME_MARGIN: std::time::Duration = std::time::Duration::from_millis(250);

impl Gateway {
    /// Picks up the runs of this gateway's name whose gateway stopped while
    /// it ran their call ([`toolgate_store::CallHost::stopped`]), by the rule every host
    /// follows: the journal tells what became of the call — one that started
    /// and never ended is an outcome unknown, which waits for an operator's
    /// choice, never run again unasked. The answer of a run it finishes is
    /// kept for its call asked again, by any gateway of the name. Decided
    /// runs whose call was never asked again within
    /// [`GatewayBuilder::expire_unasked`](crate::GatewayBuilder::expire_unasked)
    /// are closed as expired. Returns how many runs were picked up; done by
    /// a served gateway every few seconds.
    pub async fn recover(&self) -> usize {
        let inner = &self.inner;
        match inner.host.expire_unasked(inner.expire_unasked).await {
            Ok(expired) => {
                for run in expired {
                    tracing::info!(%run, "a decided run whose call was never asked again expired");
                }
            }
            Err(error) => tracing::warn!(%error, "cannot close the runs never asked again"),
        }
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
            let key = inner.host.key_of(&run_id).await.ok().flatten();
            let held = HeldCall {
                run_id: run_id.clone(),
                key,
            };
            self.resume_held(&held, task).await;
        }
        picked
    }

    /// Starts, once per gateway, the work a served gateway does every few
    /// seconds whatever its client does: [`Gateway::recover`] — runs a
    /// stopped gateway of the name left, and decided runs never asked
    /// again. Called when serving begins (at `initialize`, or at the first
    /// call of a client that never initialises); calling it again does
    /// nothing.
    pub fn maintain(&self) {
        if self
            .inner
            .maintaining
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return;
        }
        let gateway = self.clone();
        tokio::spawn(async move {
            loop {
                gateway.recover().await;
                tokio::time::sleep(gateway.inner.changes).await;
            }
        });
        // The held calls' keys, followed as the operator's revision is.
        let every = self.inner.follow_every;
        if !every.is_zero() {
            let gateway = self.clone();
            tokio::spawn(async move {
                loop {
                    gateway.inner.known.refresh(&gateway.inner.host).await;
                    tokio::time::sleep(every).await;
                }
            });
        }
    }

    /// Saves a paused call under its key and holds it for its decision, up
    /// to the wait — or, when the key already names a live run (the same
    /// call asked at the same moment, here or by another gateway), joins
    /// that run and saves nothing.
    pub(crate) async fn hold(&self, key: String, run: SuspendedRun, asker: Asker) -> Joined {
        // Known at once to this process's calls, whether it is registered
        // now or names a run already.
        self.inner.known.add(&key);
        let held = match self.inner.host.hold(&key, &run, self.inner.remember).await {
            Ok(Holding::Held) => {
                tracing::info!(run = %run.run_id(), "a gated call waits for a decision");
                HeldCall {
                    run_id: run.run_id().to_owned(),
                    key: Some(key),
                }
            }
            Ok(Holding::Joined(existing)) => {
                tracing::info!(run = %existing.run_id, "the same call was held already; this one joins its run");
                if let Some(answer) = existing.answer.as_deref().and_then(stored_answer) {
                    return Joined::Answered(answer);
                }
                HeldCall {
                    run_id: existing.run_id,
                    key: Some(key),
                }
            }
            Err(error) => {
                return Joined::Answered(refusal(format!(
                    "the call could not be held for approval: {error}; it was not run"
                )));
            }
        };
        // The client's own user may decide it, where the client can ask
        // and the store allows it: on the stateless protocol, in the answer
        // to this call, which the client asks again with the form answered;
        // else asked while the call is held.
        if asker.input
            && let Some(input) = self.input_required(&held).await
        {
            return Joined::Input(input);
        }
        if let Some(peer) = asker.forms.clone() {
            let gateway = self.clone();
            let run_id = held.run_id.clone();
            let within = self.inner.wait;
            tokio::spawn(async move { gateway.elicit(peer, run_id, within).await });
        }
        self.join(&held, asker).await
    }

    /// Waits, up to the wait, for a held call's run, and answers with its
    /// result; answers at once when it was answered before. Past the wait —
    /// or cancelled by the client — the answer names the run and says what
    /// it waits for (a decision, an operator's choice, its call running
    /// now); the run stays for the same call asked again. `Gone` when the run
    /// is over without an answer kept (it expired, say): the call is a new
    /// one.
    ///
    /// The wait and the resume run in a task of their own: a client that
    /// cancels, or goes away, never cuts a resume short.
    pub(crate) async fn join(&self, held: &HeldCall, mut asker: Asker) -> Joined {
        let deadline = tokio::time::Instant::now() + self.inner.wait;
        // Told when the client gives up: the wait ends — never a resume
        // under way — and a decision taken later is applied when the same
        // call is asked again.
        let (client_left, left) = tokio::sync::watch::channel(false);
        // Set once the waiter claimed the run: its call runs now.
        let resuming = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut waiting = {
            let gateway = self.clone();
            let held = held.clone();
            let resuming = std::sync::Arc::clone(&resuming);
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
                gateway.wait_and_resume(&held, stop, &resuming).await
            })
        };
        let mut progress = std::pin::pin!(progress(held, asker.progress.take()));
        // Past the deadline, a waiter that claimed the run is resuming it —
        // the call runs now, and its resume goes on in its task and keeps the
        // answer — and is answered so; any other comes back from a fresh
        // reading of the run, and is answered by it.
        let mut look = std::pin::pin!(tokio::time::sleep_until(deadline + RESUME_MARGIN));
        loop {
            tokio::select! {
                () = &mut look => {
                    if resuming.load(std::sync::atomic::Ordering::Acquire) {
                        return Joined::Answered(is_running(held));
                    }
                    look.set(tokio::time::sleep(RESUME_MARGIN));
                }
                waited = &mut waiting => return match waited {
                    Ok(Waited::Answer(answer)) => Joined::Answered(answer),
                    Ok(Waited::Undecided(waits)) => Joined::Answered(undecided(held, waits)),
                    Ok(Waited::Gone) => Joined::Gone,
                    Err(error) => Joined::Answered(refusal(format!(
                        "the wait for run `{}` ended: {error}",
                        held.run_id
                    ))),
                },
                () = &mut asker.cancelled => {
                    tracing::info!(run = %held.run_id, "the client cancelled a held call, or went away; its run stays");
                    let _ = client_left.send(true);
                    return Joined::Answered(waits_for_approval(held));
                }
                () = &mut progress => return Joined::Answered(waits_for_approval(held)),
            }
        }
    }

    /// Follows a held call's run until `stop` resolves: the answer kept for
    /// it, or — once it is decided — the run claimed, resumed and its
    /// answer kept. Whoever claims it resumes it; every other waiter, in
    /// this process or another, reads the answer it keeps.
    ///
    /// When `stop` resolves, the run is read once more before the answer:
    /// what the client is told is what the run was doing then, never what
    /// it was doing a poll before.
    async fn wait_and_resume<S: Future<Output = ()>>(
        &self,
        held: &HeldCall,
        stop: impl Fn() -> S,
        resuming: &std::sync::atomic::AtomicBool,
    ) -> Waited {
        let host = &self.inner.host;
        let mut over_since: Option<Instant> = None;
        let mut stopping = false;
        loop {
            match host.answer_of(&held.run_id).await {
                Ok(Some(text)) => {
                    if let Some(answer) = stored_answer(&text) {
                        return Waited::Answer(answer);
                    }
                }
                Ok(None) => {}
                Err(error) => return Waited::Answer(unreadable(held, &error)),
            }
            let waits = match host.run_standing(&held.run_id).await {
                Ok(Some(CallStanding::Open)) => Waits::Decision,
                Ok(Some(CallStanding::OutcomeUnknown)) => Waits::Choice,
                Ok(Some(CallStanding::Decided | CallStanding::Stopped)) => {
                    match host.claim(&held.run_id).await {
                        Ok(Some(task)) => {
                            resuming.store(true, std::sync::atomic::Ordering::Release);
                            return Waited::Answer(self.resume_held(held, task).await);
                        }
                        // Another waiter claimed it a moment ago.
                        Ok(None) => Waits::Running,
                        Err(error) => return Waited::Answer(unreadable(held, &error)),
                    }
                }
                Ok(Some(CallStanding::Running)) => Waits::Running,
                // Over: its answer is kept right after, by whoever resumed
                // it; over for longer without one, the call is a new one.
                Ok(Some(CallStanding::Done)) => {
                    let since = *over_since.get_or_insert_with(Instant::now);
                    let let_go = matches!(host.key_of(&held.run_id).await, Ok(None));
                    if let_go || since.elapsed() >= ANSWER_GRACE {
                        return Waited::Gone;
                    }
                    Waits::Running
                }
                Ok(None) => return Waited::Gone,
                Err(error) => return Waited::Answer(unreadable(held, &error)),
            };
            if stopping {
                return Waited::Undecided(waits);
            }
            tokio::select! {
                () = tokio::time::sleep(self.inner.poll) => {}
                () = stop() => stopping = true,
            }
        }
    }

    /// Resumes a claimed held run and keeps its answer once the run is
    /// over, for the same call asked again.
    async fn resume_held(
        &self,
        held: &HeldCall,
        task: toolgate_store::Resumable,
    ) -> CallToolResult {
        // Counted while it runs: a gateway that closes waits for it.
        let _resuming = Resuming::start(&self.inner.resuming);
        let (result, over) = self.resume(&held.run_id, task).await;
        if over && let Some(key) = &held.key {
            match serde_json::to_string(&result) {
                Ok(text) => {
                    if let Err(error) = self.inner.host.answered(key, &held.run_id, &text).await {
                        tracing::warn!(run = %held.run_id, %error, "the answer of a held call could not be kept; asked again, the call is answered by its run's record");
                    }
                }
                Err(error) => {
                    tracing::warn!(run = %held.run_id, %error, "the answer of a held call cannot be written");
                }
            }
        }
        result
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
                (Ended::Finished { .. }, Some(state)) => {
                    let mut answered = answer(state);
                    crate::hook::stamp_run(&mut answered, run_id);
                    (answered, true)
                }
                (Ended::OutcomeUnknown { why, .. }, _) => (outcome_unknown(run_id, why), false),
                (ended, _) => (refusal(not_finished(run_id, ended)), false),
            },
            Err(error) => (
                refusal(format!("run `{run_id}` could not be resumed: {error}")),
                false,
            ),
        }
    }
}

/// An answer kept in the store, read back; `None` when it does not read
/// (the run's record then answers).
pub(crate) fn stored_answer(text: &str) -> Option<CallToolResult> {
    match serde_json::from_str(text) {
        Ok(answer) => Some(answer),
        Err(error) => {
            tracing::warn!(%error, "a kept answer does not read back");
            None
        }
    }
}

fn unreadable(held: &HeldCall, error: &toolgate_store::StoreError) -> CallToolResult {
    refusal(format!(
        "run `{}` cannot be followed: the store cannot be read ({error}); asked again, the same call waits on it again",
        held.run_id
    ))
}

/// The answer to a held call whose run was not over within the wait.
fn undecided(held: &HeldCall, waits: Waits) -> CallToolResult {
    match waits {
        Waits::Decision => waits_for_approval(held),
        Waits::Choice => waits_for_a_choice(held),
        Waits::Running => is_running(held),
    }
}

/// How a wait on a held call ended, for the client that asked.
pub(crate) enum Joined {
    Answered(CallToolResult),
    /// Not waited on: the client's own user is asked to decide it, in the
    /// answer to the call.
    Input(rmcp::model::InputRequiredResult),
    Gone,
}

/// What a run not over within the wait waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waits {
    /// A person's decision.
    Decision,
    /// An operator's choice on a call whose outcome is unknown.
    Choice,
    /// Nothing: its call runs now.
    Running,
}

/// How a wait on a held call ended.
enum Waited {
    /// The call's answer.
    Answer(CallToolResult),
    /// Not over in time: it still waits for this.
    Undecided(Waits),
    /// The run is over and no answer is kept for it.
    Gone,
}

/// A resume under way, counted in the gateway's `resuming` until dropped.
struct Resuming<'a>(&'a tokio::sync::watch::Sender<usize>);

impl<'a> Resuming<'a> {
    fn start(count: &'a tokio::sync::watch::Sender<usize>) -> Self {
        count.send_modify(|n| *n += 1);
        Self(count)
    }
}

impl Drop for Resuming<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}
