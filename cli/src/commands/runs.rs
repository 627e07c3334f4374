//! `toolgate runs …`: the runs waiting for a decision, one run's pending turn,
//! and the decisions on them (in `decide`).

use serde_json::{Value, json};
use toolgate::run::ToolCall;
use toolgate::suspend::CallVerdict;
use toolgate::{Registry, suspend::SuspendedRun};
use toolgate_store::{Answer, Choice, OpenRun, Store};

use super::decide;
use super::turn::{gate, registry_less, show_with_states};
use crate::agent::{self, Workspace};
use crate::output::{Col, Mixed, Out, date_utc, say, timestamp};
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
    let listed = if all {
        store.all_runs().await?
    } else {
        store.open_runs().await?
    };
    let runs = newest_per_run(listed);
    let suspensions: Vec<i64> = runs.iter().map(|r| r.suspension_id).collect();
    let deciders = store.deciders(&suspensions).await?;
    let deciders_of = |r: &OpenRun| deciders.get(&r.suspension_id).cloned().unwrap_or_default();
    if out.json {
        // No digest here: it is shown only beside the turn itself
        // (`runs show`), so nobody decides a turn they were not shown.
        return out.json(
            &runs
                .iter()
                .map(|r| {
                    let (status, waits_for) = waiting(r);
                    json!({
                        "run": r.run_id, "status": status, "waits_for": waits_for,
                        "kind": r.status, "requested_by": r.requested_by,
                        "owner": r.owner, "state": r.state, "execution": r.execution,
                        "standing": r.standing(), "executing": r.executing,
                        "decided_by": r.decided_by, "deciders": deciders_of(r),
                        "approvals": {"have": r.approvals.0, "need": r.approvals.1},
                        "since": timestamp(r.created_at), "problem": r.problem,
                        "authenticated": store.is_authenticated(),
                    })
                })
                .collect::<Vec<_>>(),
        );
    }
    // A full id is 36 characters: where the table would not fit, each run is
    // shown by the shortest prefix (at least 8) that tells it from the
    // others listed — any unique prefix names a run.
    let short = out.width().is_some_and(|w| w < 150);
    let ids: Vec<String> = runs.iter().map(|r| r.run_id.clone()).collect();
    let mut table = out.table(&[
        "RUN",
        "PAUSE",
        "HOST",
        "STATE",
        "REQUESTED BY",
        "DECIDED BY",
        "SINCE (UTC)",
        "PROBLEM",
    ]);
    for r in &runs {
        let deciders = deciders_of(r);
        table.row([
            Col::from(if short {
                short_id(&r.run_id, &ids)
            } else {
                r.run_id.clone()
            }),
            Col::Gate(if r.status == "waiting_for_input" {
                "input"
            } else {
                "approval"
            }),
            Col::from(&r.owner),
            Col::from(r.standing()),
            Col::from(&r.requested_by),
            Col::from(if deciders.is_empty() {
                "-".to_owned()
            } else {
                deciders.join(", ")
            }),
            Col::from(date_utc(r.created_at)),
            Col::from(r.problem.as_deref().unwrap_or("-")),
        ]);
    }
    table.whole(&[0, 1, 2, 6]);
    table.print();
    if short && !runs.is_empty() {
        say!(
            "(run ids shortened to fit the terminal: any unique prefix of 6 or more characters names a run; `--json` or a wider terminal shows them whole)"
        );
    }
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

/// One row per run: the newest of its suspensions listed, in the order of
/// those rows.
fn newest_per_run(listed: Vec<OpenRun>) -> Vec<OpenRun> {
    let mut newest: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    for r in &listed {
        let id = newest.entry(r.run_id.clone()).or_insert(r.suspension_id);
        *id = (*id).max(r.suspension_id);
    }
    listed
        .into_iter()
        .filter(|r| newest.get(&r.run_id) == Some(&r.suspension_id))
        .collect()
}

/// Whether a listed run still waits, and for what: its `status` in
/// `runs list --json`, and what it waits for (none once nothing is
/// awaited: resuming, or done).
fn waiting(r: &OpenRun) -> (&'static str, Option<&'static str>) {
    let expired = r.expires_at.is_some_and(|at| u128::from(at) < now_ms());
    match (r.state.as_str(), r.execution.as_str()) {
        ("open", _) if r.status == "waiting_for_input" => ("waiting", Some("input")),
        ("open", _) if expired => ("expired", Some("deny_or_ask_again")),
        ("open", _) => ("waiting", Some("approval")),
        ("decided", "pending") if toolgate_store::is_reserved_host_name(&r.owner) => {
            ("decided", Some("client"))
        }
        ("decided", "pending") => ("decided", Some("host")),
        ("decided", "resuming") => ("resuming", None),
        ("decided", "outcome_unknown") => ("outcome_unknown", Some("choice")),
        (_, "done") => ("done", None),
        _ => ("unreadable", None),
    }
}

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// The shortest prefix of `id`, of at least 8 characters, that begins no
/// other of `ids`.
fn short_id(id: &str, ids: &[String]) -> String {
    let chars: Vec<char> = id.chars().collect();
    (8..chars.len())
        .map(|n| chars[..n].iter().collect::<String>())
        .find(|prefix| {
            !ids.iter()
                .any(|other| other != id && other.starts_with(prefix.as_str()))
        })
        .unwrap_or_else(|| id.to_owned())
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
    let states: Vec<Mixed> = paused
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
    let reported = store.client_outcomes(run).await?;
    if out.json {
        let mut shown = run_json(&paused, latest, &history, &states, &unknown);
        if let Some(map) = shown.as_object_mut() {
            map.insert(
                "asked".to_owned(),
                json!(super::turn::first_request(paused.state())),
            );
            map.insert(
                "client_reported".to_owned(),
                reported
                    .iter()
                    .map(|r| {
                        json!({
                            "at": r.recorded_at, "tool_use_id": r.tool_use_id,
                            "outcome": serde_json::from_str::<Value>(&r.outcome)
                                .unwrap_or_else(|_| Value::String(r.outcome.clone())),
                        })
                    })
                    .collect(),
            );
        }
        return out.json(&shown);
    }
    if waiting {
        let plain: Vec<String> = states.iter().map(Mixed::plain).collect();
        show_with_states(registry, out, &paused, Some(&plain)).await?;
    } else {
        say!(
            "run {} — last paused for {} — requested by {}",
            paused.run_id(),
            paused.status().as_str().replace('_', " "),
            super::turn::requester(paused.state())
        );
        let mut table = out.table(&["CALL", "TOOL", "STATE"]);
        for (call, state) in paused.pending().iter().zip(&states) {
            table.row([
                Col::from(&call.id),
                Col::from(&call.name),
                Col::from(state.clone()),
            ]);
        }
        table.whole(&[0, 1]);
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
    for reported in &reported {
        say!(
            "the client reported at {}: {}",
            timestamp(reported.recorded_at),
            reported.outcome
        );
    }
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
            u.arguments
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
    latest: &OpenRun,
    history: &toolgate_store::RunHistory,
    states: &[Mixed],
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
            "call": c.id, "tool": c.name, "gate": gate(registry_less(paused, i)), "state": state.plain(),
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
        table.whole(&[1, 2, 3]);
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
        table.whole(&[1, 2, 3]);
        say!("calls run by the host:");
        table.print();
    }
}

/// A decision's verdicts call by call, as one cell: arguments as JSON,
/// reasons as text, each escaped once.
pub(super) fn audited_calls(record: &toolgate::audit::DecisionRecord) -> Mixed {
    if record.calls.is_empty() {
        return Mixed::default().text(record.tools.join(", "));
    }
    let mut cell = Mixed::default();
    for (index, c) in record.calls.iter().enumerate() {
        if index > 0 {
            cell = cell.text("; ");
        }
        let named = format!("{} {}: ", c.call_id, c.tool);
        cell = match &c.verdict {
            None => cell.text(named).text("runs (no approval needed)"),
            Some(CallVerdict::Approve) => cell.text(named).text("approved"),
            Some(CallVerdict::Deny { reason }) if reason.is_empty() => {
                cell.text(named).text("denied")
            }
            Some(CallVerdict::Deny { reason }) => cell
                .text(named)
                .text("denied (")
                .text(reason.clone())
                .text(")"),
            Some(CallVerdict::Edit { arguments }) => cell
                .text(named)
                .text("approved with edited arguments ")
                .json(arguments)
                .text(" (model's: ")
                .json(&c.arguments)
                .text(")"),
        };
    }
    cell
}

/// Where one call of the newest pause stands.
fn call_state(
    index: usize,
    call: &ToolCall,
    paused: &SuspendedRun,
    decided: Option<&toolgate::audit::DecisionRecord>,
    ran: Option<&toolgate_store::CallRow>,
    waiting: bool,
) -> Mixed {
    let said = |text: &str| Mixed::default().text(text);
    if let Some(ran) = ran {
        return match (&ran.state[..], &ran.result) {
            ("ended", Some(result)) => said("ran: ").text(result.clone()),
            ("ended", None) => said("ran"),
            _ => said("executing, or its outcome unknown"),
        };
    }
    let verdict = decided.and_then(|d| {
        d.calls
            .iter()
            .find(|c| c.call_id == call.id)
            .and_then(|c| c.verdict.clone())
    });
    match (waiting, verdict) {
        (true, _) => said(match registry_less(paused, index) {
            Some("approval") => "needs a verdict",
            Some("input") => "waits for input",
            Some("runs") => "runs without a verdict",
            _ => "-",
        }),
        (false, Some(CallVerdict::Approve)) => said("approved"),
        (false, Some(CallVerdict::Deny { reason })) if reason.is_empty() => said("denied"),
        (false, Some(CallVerdict::Deny { reason })) => said("denied: ").text(reason),
        (false, Some(CallVerdict::Edit { arguments })) => {
            said("approved, edited to ").json(&arguments)
        }
        (false, None) => said("runs without a verdict (needed no approval)"),
    }
}

pub(super) async fn load(store: &Store, run: &str) -> Result<SuspendedRun, Failure> {
    Ok(store.load_suspended(run).await?)
}
