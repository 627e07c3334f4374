//! `toolgate runs approve|deny|input|rerun|skip`: a decision recorded in the
//! store — nothing runs here. The host that owns the run resumes it
//! (`toolgate host` for the demo's runs); how a resume ended is printed by
//! that host (`report_resumed`).

use serde_json::json;
use toolgate::run::{Message, RunState};
use toolgate::suspend::TurnDigest;
use toolgate::{Registry, identity::Operator};
use toolgate_store::{Answer, Choice, Ended, Recorded, Resumed, Store};

use super::identity::operator_identity;
use super::runs::show;
use crate::output::{Out, say};
use crate::{DecideArgs, Failure};

/// Records a decision, and says which host will act on it.
pub(super) async fn command(
    store: &Store,
    out: Out,
    args: DecideArgs,
    answer: Answer,
) -> Result<(), Failure> {
    let operator = operator_identity(args.operator.as_deref())?;
    let digest = args.digest.map(TurnDigest::from_text);
    let recorded = store
        .decide(&args.run, digest.as_ref(), &operator, answer)
        .await?;
    report_recorded(out, &recorded, &operator)
}

pub(super) fn report_recorded(
    out: Out,
    recorded: &Recorded,
    operator: &Operator,
) -> Result<(), Failure> {
    let record = &recorded.record;
    if out.json {
        return out.json(&json!({
            "run": record.run_id, "recorded": record.verdict.as_str(),
            "by": record.decided_by, "named_by": operator.source().as_str(),
            "owner": recorded.owner,
        }));
    }
    say!(
        "recorded: {} by {} (name from {}); host `{}` will resume it",
        record.verdict.as_str(),
        operator.name(),
        operator.source().as_str(),
        recorded.owner
    );
    Ok(())
}

/// Records an operator's choice for a call whose outcome is unknown.
pub(super) async fn choose(
    store: &Store,
    out: Out,
    run: &str,
    operator: Option<&str>,
    choice: Choice,
) -> Result<(), Failure> {
    let operator = operator_identity(operator)?;
    let chosen = store.choose(run, &operator, choice).await?;
    if out.json {
        return out.json(&json!({
            "run": run, "call": chosen.call_id, "tool": chosen.tool,
            "choice": choice.as_str(), "by": operator.name(), "owner": chosen.owner,
        }));
    }
    say!(
        "recorded: {} call {} ({}) by {}; host `{}` will resume the run",
        choice.as_str(),
        chosen.call_id,
        chosen.tool,
        operator.name(),
        chosen.owner
    );
    Ok(())
}

/// The results of the run's last turns that have not been shown yet.
pub(super) fn print_results(state: &RunState) {
    // Results since the last assistant turn before the newest one.
    let turns: Vec<usize> = state
        .transcript
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::Assistant { .. }))
        .map(|(i, _)| i)
        .collect();
    let from = match turns.len() {
        0 | 1 => 0,
        n => turns[n - 2],
    };
    for message in &state.transcript[from..] {
        if let Message::Tool {
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

/// Prints where a resumed run stands. Returns the run id when it paused
/// again (its pause is saved by the host and shown here).
pub(super) async fn report_resumed(
    store: &Store,
    registry: &Registry,
    out: Out,
    resumed: &Resumed,
) -> Result<Option<String>, Failure> {
    let run = &resumed.run_id;
    if let Some(state) = resumed.state.as_ref().filter(|_| !out.json) {
        print_results(state);
    }
    let (status, detail) = match &resumed.ended {
        Ended::Finished { answer } => ("finished", answer.clone()),
        Ended::LimitReached => (
            "limit_reached",
            "stopped at its limit of model requests".into(),
        ),
        Ended::Suspended { status } => (status.as_str(), String::new()),
        Ended::OutcomeUnknown { call_id, tool } => (
            "outcome_unknown",
            format!(
                "call {call_id} ({tool}) started and never ended when a host stopped; decide with `toolgate runs rerun {run}` or `toolgate runs skip {run}`"
            ),
        ),
        Ended::Refused { reason } => (
            "refused",
            format!("the decision was refused at resume and voided; the run waits again: {reason}"),
        ),
        Ended::Failed { error } => ("failed", error.clone()),
        Ended::Interrupted { error } => (
            "interrupted",
            format!("{error}; a host picks the run up from its journal once the lease runs out"),
        ),
        Ended::Lost => (
            "lost",
            "another host took the run over; this one stored nothing".into(),
        ),
        _ => ("unknown", String::new()),
    };
    if let Ended::Suspended { .. } = resumed.ended {
        let paused = store.load_suspended(run).await?;
        if out.json {
            out.json(&json!({"run": run, "status": status}))?;
        } else {
            show(registry, out, &paused).await?;
        }
        return Ok(Some(run.clone()));
    }
    if out.json {
        out.json(&json!({"run": run, "status": status, "detail": detail}))?;
    } else {
        say!("run {} {}: {}", run, status.replace('_', " "), detail);
    }
    Ok(None)
}
