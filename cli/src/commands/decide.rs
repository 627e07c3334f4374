//! `toolgate runs approve|deny|input`: a decision on a stored run, taken
//! through the store's protocol (`Store::decide`), and where the run stands
//! after it.

use serde_json::{Value, json};
use toolgate::identity::Operator;
use toolgate::{
    Agent, Registry,
    audit::DecisionKind,
    run::Outcome,
    suspend::{
        AwaitingApproval, Decision, InputSubmission, SuspendedRun, TurnDigest, Verdict,
        WaitingForInput,
    },
};
use toolgate_store::{Claimed, Store};

use super::identity::operator_identity;
use super::runs::{load, show};
use crate::host::{self, DemoModel, Workspace};
use crate::output::{Out, say};
use crate::{DecideArgs, Failure};

pub(super) enum Act {
    Approve,
    Deny,
    Input(Value),
}

pub(super) async fn command(
    store: &Store,
    workspace: &Workspace,
    out: Out,
    args: DecideArgs,
    act: Act,
) -> Result<(), Failure> {
    let (registry, provider) = host::registry(store, workspace).map_err(Failure::Error)?;
    let digest = args.digest.map(TurnDigest::from_text);
    let result = match operator_identity(args.operator.as_deref()) {
        Ok(operator) => {
            let verdict = match &act {
                Act::Approve => "approved",
                Act::Deny => "denied",
                Act::Input(_) => "input submitted",
            };
            let outcome = decide(store, &registry, &args.run, act, digest, &operator).await;
            if outcome.is_ok() && !out.json {
                say!(
                    "recorded: {} by {} (name from {})",
                    verdict,
                    operator.name(),
                    operator.source().as_str()
                );
            }
            outcome
        }
        Err(failure) => Err(failure),
    };
    let result = match result {
        Ok(outcome) => report_outcome(store, &registry, out, outcome)
            .await
            .map(drop),
        Err(failure) => Err(failure),
    };
    provider.close().await;
    result
}

/// Checks, then decides through the store — which claims the run, resumes
/// it, and releases the claim if the decision is refused; the outcome's next
/// pause, if any, is saved by the caller.
pub(super) async fn decide(
    store: &Store,
    registry: &Registry,
    run_id: &str,
    act: Act,
    digest: Option<TurnDigest>,
    decider: &Operator,
) -> Result<Outcome, Failure> {
    let operator = decider.name();
    let run = load(store, run_id).await?;
    let verdict = match (&run, &act) {
        (SuspendedRun::AwaitingApproval(pending), Act::Approve | Act::Deny) => {
            let decision = approval(&act, digest.clone(), operator);
            pending.check_decision(&decision)?;
            if matches!(act, Act::Approve) {
                DecisionKind::Approved
            } else {
                DecisionKind::Denied
            }
        }
        (SuspendedRun::WaitingForInput(pending), Act::Input(data)) => {
            let submission = InputSubmission {
                data: data.clone(),
                digest: digest.clone(),
                submitted_by: operator.to_owned(),
            };
            pending.check_input(&submission)?;
            DecisionKind::InputSubmitted
        }
        (SuspendedRun::AwaitingApproval(_), Act::Input(_)) => {
            return Err(Failure::Refused(format!(
                "run `{run_id}` awaits approval, not input: use `toolgate runs approve` or `deny`"
            )));
        }
        (SuspendedRun::WaitingForInput(_), _) => {
            return Err(Failure::Refused(format!(
                "run `{run_id}` waits for input, not approval: use `toolgate runs input`"
            )));
        }
    };
    let digest = digest.as_ref();
    let outcome = match act {
        Act::Approve | Act::Deny => {
            store
                .decide(
                    run_id,
                    digest,
                    decider,
                    verdict,
                    |claimed: Claimed<AwaitingApproval>| async move {
                        let log = claimed.log();
                        let decision = claimed.decision();
                        let agent = Agent::new(registry, &DemoModel, &log);
                        claimed.run.decide(&agent, decision).await
                    },
                )
                .await?
        }
        Act::Input(data) => {
            store
                .decide(
                    run_id,
                    digest,
                    decider,
                    verdict,
                    |claimed: Claimed<WaitingForInput>| async move {
                        let log = claimed.log();
                        let submission = claimed.submission(data);
                        let agent = Agent::new(registry, &DemoModel, &log);
                        claimed.run.submit_input(&agent, submission).await
                    },
                )
                .await?
        }
    };
    Ok(outcome)
}

fn approval(act: &Act, digest: Option<TurnDigest>, operator: &str) -> Decision {
    Decision {
        verdict: if matches!(act, Act::Approve) {
            Verdict::Approve
        } else {
            Verdict::Deny
        },
        digest,
        decided_by: operator.to_owned(),
    }
}

/// The results a run got that have not been shown yet.
fn print_results(out: Out, state: &toolgate::run::RunState) {
    if out.json {
        return;
    }
    // Results since the last assistant turn before the newest one.
    let turns: Vec<usize> = state
        .transcript
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, toolgate::run::Message::Assistant { .. }))
        .map(|(i, _)| i)
        .collect();
    let from = match turns.len() {
        0 | 1 => 0,
        n => turns[n - 2],
    };
    for message in &state.transcript[from..] {
        if let toolgate::run::Message::Tool {
            name,
            content,
            is_error,
            ..
        } = message
        {
            let mark = if *is_error { "error" } else { "ok" };
            say!(
                "  {} → {}: {}",
                name,
                mark,
                content.lines().next().unwrap_or_default()
            );
        }
    }
}

/// Prints where a run stands, saving its next pause. Returns the run id of a
/// pause, if there is one.
pub(super) async fn report_outcome(
    store: &Store,
    registry: &Registry,
    out: Out,
    outcome: Outcome,
) -> Result<Option<String>, Failure> {
    match &outcome {
        Outcome::Finished { state, .. } | Outcome::LimitReached(state) => print_results(out, state),
        Outcome::AwaitingApproval(run) => print_results(out, run.state()),
        Outcome::WaitingForInput(run) => print_results(out, run.state()),
    }
    let paused = match outcome {
        Outcome::Finished { answer, state } => {
            if out.json {
                out.json(&json!({"run": state.run_id, "status": "finished", "answer": answer}))?;
            } else {
                say!("run {} finished: {}", state.run_id, answer);
            }
            return Ok(None);
        }
        Outcome::LimitReached(state) => {
            say!(
                "run {} stopped at its limit of {} model requests",
                state.run_id,
                state.options.max_iterations
            );
            return Ok(None);
        }
        Outcome::AwaitingApproval(run) => SuspendedRun::AwaitingApproval(run),
        Outcome::WaitingForInput(run) => SuspendedRun::WaitingForInput(run),
    };
    store.save_suspended(&paused).await?;
    show(registry, out, &paused).await?;
    Ok(Some(paused.run_id().to_owned()))
}
