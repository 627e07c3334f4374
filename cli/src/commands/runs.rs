//! `toolgate runs …`: the runs waiting for a decision, one run's pending turn,
//! and the decisions on them (in `decide`).

use serde_json::{Value, json};
use toolgate::run::ToolCall;
use toolgate::suspend::CallVerdict;
use toolgate::{Registry, suspend::SuspendedRun};
use toolgate_store::{Answer, Choice, Store};

use super::decide;
use super::turn::{gate, registry_less, show_with_states};
use crate::agent::{self, Workspace};
use crate::output::{Col, Out, say, timestamp};
use crate::{Failure, RunsCommand};

pub(super) async fn runs(
    store: &Store,
    workspace: &Workspace,
    out: Out,
    command: RunsCommand,
) -> Result<(), Failure> {
    match super::run_ids::resolved(store, command).await? {
        RunsCommand::List { all } => list(store, out, all).await,
        RunsCommand::Show { run, schema } => {
            let (registry, provider) = agent::registry(store, workspace).map_err(Failure::Error)?;
            let result = show_run(store, &registry, out, &run, schema).await;
            provider.close().await;
            result
        }
        RunsCommand::Approve(args) => {
            let answer = decide::approval(&args)?;
            match args.allow_tool {
                Some(tool) => {
                    decide::from_now_on(store, workspace, out, args.decide, answer, &tool).await
                }
                None => decide::command(store, out, args.decide, answer).await,
            }
        }
        RunsCommand::Deny(args) => {
            let answer = decide::denial(store, &args).await?;
            decide::command(store, out, args.decide, answer).await
        }
        RunsCommand::Edit {
            decide: args,
            call,
            args: arguments,
        } => {
            let answer = decide::edit(store, &args.run, &call, &arguments).await?;
            decide::command(store, out, args, answer).await
        }
        RunsCommand::AskAgain { run, operator } => {
            let operator = super::identity::operator_identity(operator.as_deref())?;
            let owner = store.ask_again(&run, &operator).await?;
            if out.json {
                return out
                    .json(&json!({"run": run, "asked_again_by": operator.name(), "owner": owner}));
            }
            say!(
                "asked again by {}: run {} waits for a decision with a new digest (`runs show {}`)",
                operator.name(),
                run,
                run
            );
            Ok(())
        }
        RunsCommand::Input { decide, data } => {
            let data: Value = decide::json_argument("--data", &data)?;
            decide::command(store, out, decide, Answer::Input(data)).await
        }
        RunsCommand::Review(args) => super::review::review(store, out, args).await,
        RunsCommand::Rerun(args) => decide::choose(store, out, &args, Choice::Rerun).await,
        RunsCommand::Skip(args) => decide::choose(store, out, &args, Choice::Skip).await,
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
                        "approvals": {"have": r.approvals.0, "need": r.approvals.1},
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
            match store.backend() {
                toolgate_store::Backend::Sqlite => "the database file",
                _ => "the database",
            }
        );
    }
    Ok(())
}

/// A run: its newest pause (the turn call by call, and its digest while it
/// waits), where it stands, every decision (partial and voided ones too)
/// and every call its hosts ran.
async fn show_run(
    store: &Store,
    registry: &Registry,
    out: Out,
    run: &str,
    schema: bool,
) -> Result<(), Failure> {
    let history = store.run_history(run).await?;
    let Some(latest) = history.suspensions.last() else {
        return Err(Failure::NotFound(format!("no run `{run}` is stored")));
    };
    let paused = store.latest_suspended(run).await?;
    let waiting = latest.state == "open";
    let standing =
        history.decisions.iter().rev().find(|d| {
            !d.partial && d.record.voided.is_none() && d.record.digest == paused.digest()
        });
    let unknown = store.unknown_calls(run).await?;
    let turn = i64::from(paused.state().iterations);
    let states: Vec<String> = paused
        .pending()
        .iter()
        .enumerate()
        .map(|(index, call)| {
            call_state(
                index,
                call,
                &paused,
                standing.map(|d| &d.record),
                history
                    .calls
                    .iter()
                    .find(|c| c.turn == turn && c.call_id == call.id),
                waiting,
            )
        })
        .collect();
    if out.json {
        return out.json(&run_json(&paused, latest, &history, &states, &unknown));
    }
    if waiting {
        show_with_states(registry, out, &paused, Some(&states)).await?;
    } else {
        say!(
            "run {} — last paused for {} — requested by {}",
            paused.run_id(),
            paused.status().as_str().replace('_', " "),
            super::turn::requester(paused.state())
        );
        let mut table = out.table(&["CALL", "TOOL", "STATE"]);
        for (call, state) in paused.pending().iter().zip(&states) {
            table.row([Col::from(&call.id), Col::from(&call.name), Col::from(state)]);
        }
        table.print();
    }
    if schema {
        print_reviewed(&paused);
    }
    say!("host: {}; state: {}", latest.owner, latest.standing());
    if latest.approvals.1 > 1 {
        say!(
            "approvals: {} of {}",
            latest.approvals.0,
            latest.approvals.1
        );
    }
    print_decisions(out, &history.decisions);
    print_calls(out, &history.calls);
    print_unknown(run, &unknown);
    Ok(())
}

/// The calls whose outcome is unknown, each with what a choice on it
/// carries: the arguments a rerun runs it with, and its digest.
fn print_unknown(run: &str, unknown: &[toolgate_store::UnknownCall]) {
    for u in unknown {
        say!(
            "outcome unknown: call {} ({}) of turn {}, started {} time{}; a rerun runs it with {}",
            u.call_id,
            u.tool,
            u.turn,
            u.attempt,
            if u.attempt == 1 { "" } else { "s" },
            u.arguments.to_string()
        );
        if u.reruns.1 > 1 || u.four_eyes {
            say!(
                "  a rerun needs {} {}, none of them the requester {}; chosen so far: {}",
                u.reruns.1,
                if u.reruns.1 == 1 {
                    "person"
                } else {
                    "distinct people"
                },
                u.requested_by,
                u.reruns.0
            );
        }
        for choice in &u.choices {
            say!("  {}", choice.to_string());
        }
        say!("  rerun digest: {}", u.digest.as_str());
        say!(
            "  choose with `toolgate runs rerun|skip {} --call {} --digest {} --reason …`",
            run,
            u.call_id,
            u.digest.as_str()
        );
    }
}

/// `runs show --json`: the run's newest pause, where it stands, its review,
/// decisions, journaled calls and unknown calls.
fn run_json(
    paused: &SuspendedRun,
    latest: &toolgate_store::OpenRun,
    history: &toolgate_store::RunHistory,
    states: &[String],
    unknown: &[toolgate_store::UnknownCall],
) -> Value {
    json!({
        "run": paused.run_id(), "status": paused.status().as_str(),
        "requested_by": paused.state().requested_by, "client": paused.state().client,
        "owner": latest.owner, "state": latest.state, "execution": latest.execution,
        "standing": latest.standing(), "outcome": latest.outcome,
        // The turn's digest, decided or not: what a decision was bound to.
        "digest": paused.digest().as_str(),
        "expires_at": latest.expires_at,
        "approvals": {"have": latest.approvals.0, "need": latest.approvals.1},
        "pending": paused.pending(),
        "review": paused.review().tools.iter().map(|t| t.as_ref().map(|t| json!({
            "name": t.name, "description": t.description, "parameters": t.parameters,
            "effect": t.effect.as_str(), "needs_approval": t.needs_approval,
            "definition": t.definition_digest(),
        }))).collect::<Vec<_>>(),
        "turn": paused.pending().iter().enumerate().zip(states).map(|((i, c), state)| json!({
            "call": c.id, "tool": c.name, "gate": gate(registry_less(paused, i)), "state": state,
        })).collect::<Vec<_>>(),
        "decisions": history.decisions.iter().map(|d| json!({
            "verdict": d.record.verdict.as_str(), "summary": d.record.summary(),
            "by": d.record.decided_by,
            "named_by": d.record.decided_by_source.as_str(),
            "channel": d.record.channel.map(toolgate::identity::Channel::as_str),
            "self_decided": d.record.self_decided,
            "tools": d.record.tools, "voided": d.record.voided, "partial": d.partial,
            "policy_revision": d.policy_revision, "calls": d.record.calls,
        })).collect::<Vec<_>>(),
        "calls": history.calls.iter().map(|c| json!({
            "turn": c.turn, "call": c.call_id, "tool": c.tool, "effect": c.effect,
            "state": c.state, "attempts": c.attempts, "result": c.result,
            "choices": c.choices,
        })).collect::<Vec<_>>(),
        "unknown": unknown.iter().map(|u| json!({
            "call": u.call_id, "tool": u.tool, "turn": u.turn, "attempt": u.attempt,
            "arguments": u.arguments, "digest": u.digest.as_str(),
            "reruns": {"have": u.reruns.0, "need": u.reruns.1},
            "choices": u.choices.iter().map(ToString::to_string).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// Each reviewed tool as the model read it: its whole description and its
/// parameter schema, shown escaped.
fn print_reviewed(run: &SuspendedRun) {
    let mut described: Vec<&str> = Vec::new();
    for tool in run.review().tools.iter().flatten() {
        if described.contains(&tool.name.as_str()) {
            continue;
        }
        described.push(&tool.name);
        say!(
            "tool {} (definition {}):",
            tool.name,
            tool.definition_digest()
        );
        for line in tool.description.lines() {
            say!("  | {}", line);
        }
        say!("  parameters: {}", tool.parameters);
    }
}

/// Every decision on the run, partial and voided ones too.
fn print_decisions(out: Out, decisions: &[toolgate_store::StoredDecision]) {
    if !decisions.is_empty() {
        let mut table = out.table(&[
            "DECISION", "BY", "NAMED BY", "CHANNEL", "SELF", "CALLS", "STANDS",
        ]);
        for d in decisions {
            let record = &d.record;
            table.row([
                Col::from(if d.partial {
                    format!("{} (partial)", record.summary())
                } else {
                    record.summary()
                }),
                Col::from(&record.decided_by),
                Col::from(record.decided_by_source.as_str()),
                Col::from(
                    record
                        .channel
                        .map_or("not recorded", toolgate::identity::Channel::as_str),
                ),
                Col::from(if record.self_decided { "yes" } else { "no" }),
                Col::from(audited_calls(record)),
                Col::from(
                    record
                        .voided
                        .as_deref()
                        .map_or_else(|| "yes".to_owned(), |why| format!("voided: {why}")),
                ),
            ]);
        }
        say!("decisions:");
        table.print();
    }
}

/// Every call the run's hosts ran, with the choices made for it.
fn print_calls(out: Out, calls: &[toolgate_store::CallRow]) {
    if !calls.is_empty() {
        let mut table = out.table(&[
            "TURN", "CALL", "TOOL", "EFFECT", "STATE", "ATTEMPTS", "RESULT", "CHOICES",
        ]);
        for c in calls {
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
}

/// A decision's verdicts call by call, as one cell.
pub(super) fn audited_calls(record: &toolgate::audit::DecisionRecord) -> String {
    if record.calls.is_empty() {
        return record.tools.join(", ");
    }
    record
        .calls
        .iter()
        .map(|c| match &c.verdict {
            None => format!("{} {}: runs (no approval needed)", c.call_id, c.tool),
            Some(CallVerdict::Approve) => format!("{} {}: approved", c.call_id, c.tool),
            Some(CallVerdict::Deny { reason }) if reason.is_empty() => {
                format!("{} {}: denied", c.call_id, c.tool)
            }
            Some(CallVerdict::Deny { reason }) => {
                format!("{} {}: denied ({reason})", c.call_id, c.tool)
            }
            Some(CallVerdict::Edit { arguments }) => format!(
                "{} {}: approved with edited arguments {} (model's: {})",
                c.call_id, c.tool, arguments, c.arguments
            ),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Where one call of the newest pause stands.
fn call_state(
    index: usize,
    call: &ToolCall,
    paused: &SuspendedRun,
    decided: Option<&toolgate::audit::DecisionRecord>,
    ran: Option<&toolgate_store::CallRow>,
    waiting: bool,
) -> String {
    if let Some(ran) = ran {
        return match (&ran.state[..], &ran.result) {
            ("ended", Some(result)) => format!("ran: {result}"),
            ("ended", None) => "ran".to_owned(),
            _ => "executing, or its outcome unknown".to_owned(),
        };
    }
    let verdict = decided.and_then(|d| {
        d.calls
            .iter()
            .find(|c| c.call_id == call.id)
            .and_then(|c| c.verdict.clone())
    });
    match (waiting, verdict) {
        (true, _) => match registry_less(paused, index) {
            Some("approval") => "needs a verdict".to_owned(),
            Some("input") => "waits for input".to_owned(),
            Some("runs") => "runs without a verdict".to_owned(),
            _ => "-".to_owned(),
        },
        (false, Some(CallVerdict::Approve)) => "approved".to_owned(),
        (false, Some(CallVerdict::Deny { reason })) if reason.is_empty() => "denied".to_owned(),
        (false, Some(CallVerdict::Deny { reason })) => format!("denied: {reason}"),
        (false, Some(CallVerdict::Edit { arguments })) => {
            format!("approved, edited to {arguments}")
        }
        (false, None) => "runs without a verdict (needed no approval)".to_owned(),
    }
}

pub(super) async fn load(store: &Store, run: &str) -> Result<SuspendedRun, Failure> {
    Ok(store.load_suspended(run).await?)
}
