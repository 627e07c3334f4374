//! `toolgate runs …`: the runs waiting for a decision, one run's pending turn,
//! and the decisions on them (in `decide`).

use serde_json::{Value, json};
use toolgate::{Registry, suspend::SuspendedRun};
use toolgate_store::{Answer, Choice, Store};

use super::decide;
use crate::host::{self, Workspace};
use crate::output::{Col, Out, say, timestamp};
use crate::{Failure, RunsCommand};

pub(super) async fn runs(
    store: &Store,
    workspace: &Workspace,
    out: Out,
    command: RunsCommand,
) -> Result<(), Failure> {
    match command {
        RunsCommand::List { all } => list(store, out, all).await,
        RunsCommand::Show { run } => {
            let (registry, provider) = host::registry(store, workspace).map_err(Failure::Error)?;
            let result = show_run(store, &registry, out, &run).await;
            provider.close().await;
            result
        }
        RunsCommand::Approve(args) => decide::command(store, out, args, Answer::Approve).await,
        RunsCommand::Deny(args) => decide::command(store, out, args, Answer::Deny).await,
        RunsCommand::Input { decide, data } => {
            let data: Value = serde_json::from_str(&data)
                .map_err(|e| Failure::Refused(format!("the input is not JSON: {e}")))?;
            decide::command(store, out, decide, Answer::Input(data)).await
        }
        RunsCommand::Rerun { run, operator } => {
            decide::choose(store, out, &run, operator.as_deref(), Choice::Rerun).await
        }
        RunsCommand::Skip { run, operator } => {
            decide::choose(store, out, &run, operator.as_deref(), Choice::Skip).await
        }
    }
}

async fn list(store: &Store, out: Out, all: bool) -> Result<(), Failure> {
    let runs = if all {
        store.all_runs().await?
    } else {
        store.open_runs().await?
    };
    if out.json {
        // No digest here: it is shown only beside the turn itself
        // (`runs show`), so nobody decides a turn they were not shown.
        return out.json(
            &runs
                .iter()
                .map(|r| {
                    json!({
                        "run": r.run_id, "status": r.status, "requested_by": r.requested_by,
                        "owner": r.owner, "state": r.state, "execution": r.execution,
                        "standing": r.standing(), "executing": r.executing,
                        "decided_by": r.decided_by,
                        "since": timestamp(r.created_at), "problem": r.problem,
                        "authenticated": store.is_authenticated(),
                    })
                })
                .collect::<Vec<_>>(),
        );
    }
    let mut table = out.table(&[
        "RUN",
        "PAUSE",
        "HOST",
        "STATE",
        "REQUESTED BY",
        "DECIDED BY",
        "SINCE",
        "PROBLEM",
    ]);
    for r in &runs {
        table.row([
            Col::from(&r.run_id),
            Col::Gate(if r.status == "waiting_for_input" {
                "input"
            } else {
                "approval"
            }),
            Col::from(&r.owner),
            Col::from(r.standing()),
            Col::from(&r.requested_by),
            Col::from(r.decided_by.as_deref().unwrap_or("-")),
            Col::from(timestamp(r.created_at)),
            Col::from(r.problem.as_deref().unwrap_or("-")),
        ]);
    }
    table.print();
    if store.requires_key() && !store.is_authenticated() {
        say!(
            "note: this store authenticates its runs and {}; open it with its key (TOOLGATE_INTEGRITY_KEY_FILE)",
            "this command has none, so it reads none of them"
        );
    } else if !store.is_authenticated() {
        say!(
            "note: this store is unauthenticated: anyone who can write {} can change a stored run (four eyes, requester, arguments) and recompute its checksum; set TOOLGATE_INTEGRITY_KEY_FILE to authenticate runs and decisions",
            "the database file"
        );
    }
    Ok(())
}

/// A run: its newest pause (the turn, and its digest while it waits), where
/// it stands, every decision (voided ones included) and every call its hosts
/// ran.
async fn show_run(store: &Store, registry: &Registry, out: Out, run: &str) -> Result<(), Failure> {
    let history = store.run_history(run).await?;
    let Some(latest) = history.suspensions.last() else {
        return Err(Failure::NotFound(format!("no run `{run}` is stored")));
    };
    let paused = store.latest_suspended(run).await?;
    if out.json {
        let waiting = latest.state == "open";
        return out.json(&json!({
            "run": paused.run_id(), "status": paused.status().as_str(),
            "requested_by": paused.state().requested_by,
            "owner": latest.owner, "state": latest.state, "execution": latest.execution,
            "standing": latest.standing(), "outcome": latest.outcome,
            "digest": waiting.then(|| paused.digest().as_str().to_owned()),
            "pending": paused.pending(),
            "decisions": history.decisions.iter().map(|d| json!({
                "verdict": d.verdict.as_str(), "by": d.decided_by,
                "named_by": d.decided_by_source.as_str(), "self_decided": d.self_decided,
                "tools": d.tools, "voided": d.voided,
            })).collect::<Vec<_>>(),
            "calls": history.calls.iter().map(|c| json!({
                "turn": c.turn, "call": c.call_id, "tool": c.tool, "effect": c.effect,
                "state": c.state, "attempts": c.attempts, "result": c.result,
                "choices": c.choices,
            })).collect::<Vec<_>>(),
        }));
    }
    if latest.state == "open" {
        show(registry, out, &paused).await?;
    } else {
        say!(
            "run {} — last paused for {} — requested by {}",
            paused.run_id(),
            paused.status().as_str().replace('_', " "),
            paused.state().requested_by
        );
    }
    say!("host: {}; state: {}", latest.owner, latest.standing());
    if !history.decisions.is_empty() {
        let mut table = out.table(&["DECISION", "BY", "NAMED BY", "SELF", "TOOLS", "STANDS"]);
        for d in &history.decisions {
            table.row([
                Col::from(d.verdict.as_str()),
                Col::from(&d.decided_by),
                Col::from(d.decided_by_source.as_str()),
                Col::from(if d.self_decided { "yes" } else { "no" }),
                Col::from(d.tools.join(", ")),
                Col::from(
                    d.voided
                        .as_deref()
                        .map_or_else(|| "yes".to_owned(), |why| format!("voided: {why}")),
                ),
            ]);
        }
        say!("decisions:");
        table.print();
    }
    if !history.calls.is_empty() {
        let mut table = out.table(&[
            "TURN", "CALL", "TOOL", "EFFECT", "STATE", "ATTEMPTS", "RESULT", "CHOICES",
        ]);
        for c in &history.calls {
            table.row([
                Col::from(c.turn.to_string()),
                Col::from(&c.call_id),
                Col::from(&c.tool),
                Col::from(&c.effect),
                Col::from(if c.state == "started" {
                    "executing or outcome unknown"
                } else {
                    "ended"
                }),
                Col::from(c.attempts.to_string()),
                Col::from(c.result.as_deref().unwrap_or("-")),
                Col::from(if c.choices.is_empty() {
                    "-".to_owned()
                } else {
                    c.choices.join("; ")
                }),
            ]);
        }
        say!("calls run by the host:");
        table.print();
    }
    Ok(())
}

pub(super) async fn load(store: &Store, run: &str) -> Result<SuspendedRun, Failure> {
    Ok(store.load_suspended(run).await?)
}

pub(super) async fn show(registry: &Registry, out: Out, run: &SuspendedRun) -> Result<(), Failure> {
    let offered = registry.offer(run.state().options.allow.as_deref()).await;
    let input = match run {
        SuspendedRun::WaitingForInput(w) => Some((
            w.input_call().id.clone(),
            w.input_schema().as_value().clone(),
        )),
        SuspendedRun::AwaitingApproval(_) => None,
    };
    if out.json {
        return out.json(&json!({
            "run": run.run_id(), "status": run.status().as_str(),
            "requested_by": run.state().requested_by, "digest": run.digest().as_str(),
            "pending": run.pending(), "input_schema": input.as_ref().map(|i| &i.1),
        }));
    }
    say!(
        "run {} — {} — requested by {}",
        run.run_id(),
        run.status().as_str().replace('_', " "),
        run.state().requested_by
    );
    let mut table = out.table(&["CALL", "TOOL", "GATE", "ARGUMENTS"]);
    let mut asking = Vec::new();
    for call in run.pending() {
        let gate = offered.get(&call.name).map_or("not offered", |t| {
            if input.as_ref().is_some_and(|(id, _)| *id == call.id) {
                "input"
            } else {
                t.ruling().pause.as_str()
            }
        });
        if gate == "approval" {
            asking.push(format!("{} ({})", call.name, call.id));
        }
        table.row([
            Col::from(&call.id),
            Col::from(&call.name),
            Col::Gate(gate),
            Col::from(&call.arguments),
        ]);
    }
    table.print();
    if let Some((_, schema)) = input {
        say!("input schema: {}", schema);
    }
    // Repeated last, beside the digest: a turn long enough to scroll its
    // first rows away still names every call that needs approval here.
    let calls = run.pending().len();
    say!(
        "{} {}; {} {} approval: {}",
        calls,
        if calls == 1 { "call" } else { "calls" },
        asking.len(),
        if asking.len() == 1 { "needs" } else { "need" },
        if asking.is_empty() {
            "none".to_owned()
        } else {
            asking.join(", ")
        }
    );
    say!("digest: {}", run.digest().as_str());
    Ok(())
}
