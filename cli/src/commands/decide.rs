//! `toolgate runs approve|deny|input|rerun|skip`: a decision recorded in the
//! store — nothing runs here. The host that owns the run resumes it
//! (`toolgate host` for the demo's runs); how a resume ended is printed by
//! that host (`report_resumed`).

use std::collections::BTreeMap;

use serde_json::{Value, json};
use toolgate::run::{Message, RunState};
use toolgate::suspend::{CallVerdict, RerunDigest, SuspendedRun, TurnDigest};
use toolgate::visible::visible;
use toolgate::{Registry, identity::Operator};
use toolgate_store::{Answer, Choice, Choosing, Ended, Recorded, Resumed, Store};

use super::identity::operator_identity;
use super::turn::show;
use crate::output::{Out, say};
use crate::{ApproveArgs, ChooseArgs, DecideArgs, DenyArgs, Failure};

/// Records a decision, and says which host will act on it.
pub(super) async fn command(
    store: &Store,
    out: Out,
    args: DecideArgs,
    answer: Answer,
) -> Result<(), Failure> {
    let digest = TurnDigest::from_text(required_digest(&args)?);
    let operator = operator_identity(args.operator.as_deref())?;
    // The tools the turn calls, read before the decision: a call approved
    // now of a tool no longer offered is refused when it is resumed.
    let tools: Vec<String> = match store.load_suspended(&args.run).await {
        Ok(run) => run.pending().iter().map(|call| call.name.clone()).collect(),
        Err(_) => Vec::new(),
    };
    let recorded = store
        .decide(&args.run, Some(&digest), &operator, answer)
        .await?;
    report_recorded(out, &recorded, &operator)?;
    if !out.json
        && recorded.is_complete()
        && recorded.record.verdict != toolgate::audit::DecisionKind::Denied
    {
        for tool in not_offered(store, &tools).await {
            say!(
                "note: tool `{}` is not offered now ({}): its call is refused as not offered when it is resumed",
                visible(&tool.0),
                tool.1
            );
        }
    }
    Ok(())
}

/// The digest a decision names: without it nothing is recorded, and the
/// command says where to find it (a usage error: nothing was read).
fn required_digest(args: &DecideArgs) -> Result<&str, Failure> {
    match args.digest.as_deref().map(str::trim) {
        Some(digest) if !digest.is_empty() => Ok(digest),
        _ => Err(Failure::Usage(format!(
            "missing `--digest`: a decision names the turn its decider was shown; `toolgate runs show {}` prints the digest beside the turn",
            visible(&args.run)
        ))),
    }
}

/// The imported tools among `tools` that are not offered now, and why:
/// blocked by their operator, or gone from their server's catalogue.
async fn not_offered(store: &Store, tools: &[String]) -> Vec<(String, &'static str)> {
    let (Ok(rows), Ok(servers)) = (store.live_catalogue().await, store.servers().await) else {
        return Vec::new();
    };
    let mut missing = Vec::new();
    for tool in tools {
        let Some((server, _)) = tool.split_once(toolgate_mcp::SEPARATOR) else {
            continue;
        };
        let Some(server) = servers.iter().find(|s| s.id == server) else {
            continue;
        };
        let why = match rows.iter().find(|row| &row.local_name == tool) {
            None => "its server no longer lists it",
            Some(row) if row.gate(server.approval) == toolgate_store::ToolGate::Blocked => {
                "blocked by its operator"
            }
            Some(_) if !server.is_usable() => "its server supplies no tools",
            Some(_) => continue,
        };
        if !missing.iter().any(|(name, _)| name == tool) {
            missing.push((tool.clone(), why));
        }
    }
    missing
}

/// `runs approve --allow-tool`: the approval, and the tool declared "no
/// approval" from now on.
pub(super) async fn from_now_on(
    store: &Store,
    workspace: &crate::agent::Workspace,
    out: Out,
    args: DecideArgs,
    answer: Answer,
    tool: &str,
) -> Result<(), Failure> {
    if let Some((client, name)) = tool.split_once('.')
        && let Some(client) = toolgate_gateway::hook::Client::named(client)
    {
        return Err(Failure::Usage(format!(
            "`{}` is a coding agent's own tool, declared apart from servers' tools: approve without `--allow-tool`, then `toolgate hook declare {client} {} off`",
            visible(tool),
            visible(name)
        )));
    }
    let digest = TurnDigest::from_text(required_digest(&args)?);
    let operator = operator_identity(args.operator.as_deref())?;
    let (shown, now) = offered_now(store, workspace, &args.run, tool).await?;
    let from_now_on = toolgate_store::FromNowOn {
        tool,
        shown: &shown,
        now: &now,
    };
    let allowed = store
        .decide_and_allow_tool(&args.run, Some(&digest), &operator, answer, from_now_on)
        .await?;
    if out.json {
        let mut value = recorded_json(&allowed.recorded, &operator);
        value["allowed_tool"] = match &allowed.declared {
            Ok(row) => json!({
                "tool": row.local_name,
                "server": allowed.server,
                "declaration": row.declaration.word(),
                "digest": row.declared.as_ref().and_then(|d| d.digest.clone()),
            }),
            Err(error) => json!({"tool": tool, "error": error.to_string()}),
        };
        return out.json(&value);
    }
    report_recorded(out, &allowed.recorded, &operator)?;
    match &allowed.declared {
        Ok(row) => say!(
            "and from now on: tool `{}` runs unattended (declared by {} through the console, for its definition {})",
            row.local_name,
            operator.name(),
            row.declared
                .as_ref()
                .and_then(|d| d.digest.clone())
                .unwrap_or_default()
        ),
        Err(error) => say!(
            "the approval stands, but tool `{}` was not declared: {}",
            visible(tool),
            error.to_string()
        ),
    }
    Ok(())
}

/// What "and from now on" is bound to: the digest of `tool`'s stored
/// definition, read first, and the turn of run `run` reviewed against the
/// tools as offered now — the store refuses a tool that is not the one the
/// reviewer was shown.
async fn offered_now(
    store: &Store,
    workspace: &crate::agent::Workspace,
    run: &str,
    tool: &str,
) -> Result<(String, toolgate::suspend::Review), Failure> {
    let Some((server, _)) = tool.split_once(toolgate_mcp::SEPARATOR) else {
        return Err(Failure::Refused(format!(
            "nothing was recorded on run `{}`: `{}` is not an imported tool (`SERVER.TOOL`); a builtin's gate comes from its type",
            visible(run),
            visible(tool)
        )));
    };
    let shown = store.acceptance(server, &[tool.to_owned()]).await?.digest;
    let SuspendedRun::AwaitingApproval(waiting) = store.load_suspended(run).await? else {
        return Err(Failure::Refused(format!(
            "nothing was recorded on run `{}`: it does not wait for approval",
            visible(run)
        )));
    };
    let (registry, provider) = crate::agent::registry(store, workspace).map_err(Failure::Error)?;
    let now = waiting.reviewed_again(&registry).await;
    provider.close().await;
    Ok((shown, now.review().clone()))
}

/// `runs approve`: every call, or call by call.
pub(super) fn approval(args: &ApproveArgs) -> Result<Answer, Failure> {
    if args.calls.is_empty() && args.denials.is_empty() && args.edits.is_empty() {
        return Ok(Answer::Approve);
    }
    let mut calls = BTreeMap::new();
    let mut put = |id: &str, verdict: CallVerdict| {
        if calls.insert(id.to_owned(), verdict).is_some() {
            Err(Failure::Usage(format!(
                "call `{}` is given two verdicts; give each call one",
                visible(id)
            )))
        } else {
            Ok(())
        }
    };
    for id in &args.calls {
        put(id, CallVerdict::Approve)?;
    }
    for denial in &args.denials {
        let (id, reason) = denial.split_once('=').unwrap_or((denial.as_str(), ""));
        put(
            id,
            CallVerdict::Deny {
                reason: reason.to_owned(),
            },
        )?;
    }
    for edit in &args.edits {
        let Some((id, text)) = edit.split_once('=') else {
            return Err(Failure::Usage(format!(
                "`--edit {}` needs ID=JSON (or ID=@FILE)",
                visible(edit)
            )));
        };
        put(
            id,
            CallVerdict::Edit {
                arguments: json_argument("--edit", text)?,
            },
        )?;
    }
    Ok(Answer::Calls(calls))
}

/// `runs deny`: every call, or the ones named, with a reason.
pub(super) async fn denial(store: &Store, args: &DenyArgs) -> Result<Answer, Failure> {
    if args.calls.is_empty() && args.reason.is_none() {
        return Ok(Answer::Deny);
    }
    let reason = args.reason.clone().unwrap_or_default();
    let ids: Vec<String> = if args.calls.is_empty() {
        store
            .load_suspended(&args.decide.run)
            .await?
            .pending()
            .iter()
            .map(|c| c.id.clone())
            .collect()
    } else {
        args.calls.clone()
    };
    Ok(Answer::Calls(
        ids.into_iter()
            .map(|id| {
                (
                    id,
                    CallVerdict::Deny {
                        reason: reason.clone(),
                    },
                )
            })
            .collect(),
    ))
}

/// `runs edit`: every call that needs a verdict approved, one with other
/// arguments.
pub(super) async fn edit(
    store: &Store,
    run: &str,
    call: &str,
    arguments: &str,
) -> Result<Answer, Failure> {
    let arguments = json_argument("--args", arguments)?;
    let paused = store.load_suspended(run).await?;
    let SuspendedRun::AwaitingApproval(pending) = &paused else {
        return Err(Failure::Refused(format!(
            "run `{}` waits for input, not approval: use `toolgate runs input`",
            visible(run)
        )));
    };
    if !pending.pending().iter().any(|c| c.id == call) {
        return Err(Failure::Refused(format!(
            "run `{}` has no pending call `{}`",
            visible(run),
            visible(call)
        )));
    }
    let mut calls: BTreeMap<String, CallVerdict> = pending
        .pending()
        .iter()
        .enumerate()
        .filter(|(i, _)| pending.needs_verdict(*i))
        .map(|(_, c)| (c.id.clone(), CallVerdict::Approve))
        .collect();
    calls.insert(call.to_owned(), CallVerdict::Edit { arguments });
    Ok(Answer::Calls(calls))
}

/// A JSON value given on the command line, in a file (`@FILE`) or on
/// standard input (`-`). Text that is not JSON is a usage error naming the
/// flag, the line and column, and the text there.
pub(super) fn json_argument(flag: &str, text: &str) -> Result<Value, Failure> {
    let (source, text) = if text == "-" {
        let mut read = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut read)
            .map_err(|e| Failure::Error(format!("cannot read standard input: {e}")))?;
        (format!("`{flag}` (standard input)"), read)
    } else if let Some(path) = text.strip_prefix('@') {
        let read = std::fs::read_to_string(path)
            .map_err(|e| Failure::Error(format!("cannot read `{}`: {e}", visible(path))))?;
        (format!("`{flag}` (`{}`)", visible(path)), read)
    } else {
        (format!("`{flag}`"), text.to_owned())
    };
    serde_json::from_str(&text).map_err(|e| Failure::Usage(not_json(&source, &text, &e)))
}

/// Where a JSON text stops being JSON, for a person: the error without
/// serde's own position suffix, then line, column and the text around it.
fn not_json(source: &str, text: &str, error: &serde_json::Error) -> String {
    let (line, column) = (error.line(), error.column());
    let message = error.to_string();
    let message = message
        .strip_suffix(&format!(" at line {line} column {column}"))
        .unwrap_or(&message);
    let Some(at) = text.lines().nth(line.saturating_sub(1)) else {
        return format!("{source} is not JSON: {message}");
    };
    // Up to 20 characters either side of the column (1-based; 0 means
    // before the first character).
    let chars: Vec<char> = at.chars().collect();
    let here = column.saturating_sub(1).min(chars.len());
    let from = here.saturating_sub(20);
    let to = (here + 20).min(chars.len());
    let before: String = chars[from..here].iter().collect();
    let after: String = chars[here..to].iter().collect();
    format!(
        "{source} is not JSON: {message} at line {line}, column {column}: `{}⟨here⟩{}`",
        visible(&before),
        visible(&after)
    )
}

/// A recorded decision, as `--json` reports it.
fn recorded_json(recorded: &Recorded, operator: &Operator) -> Value {
    let record = &recorded.record;
    json!({
        "run": record.run_id, "recorded": record.verdict.as_str(), "summary": record.summary(),
        "by": record.decided_by, "named_by": operator.source().as_str(),
        "channel": operator.channel().as_str(),
        "owner": recorded.owner, "complete": recorded.is_complete(),
        "approvals": {"have": recorded.approvals.0, "need": recorded.approvals.1},
    })
}

pub(super) fn report_recorded(
    out: Out,
    recorded: &Recorded,
    operator: &Operator,
) -> Result<(), Failure> {
    let record = &recorded.record;
    if out.json {
        return out.json(&recorded_json(recorded, operator));
    }
    if recorded.is_complete() && toolgate_store::is_reserved_host_name(&recorded.owner) {
        let next = if record.verdict == toolgate::audit::DecisionKind::Denied {
            "its client is answered with the denial when it asks for the call again"
        } else {
            "it runs when its client asks for the call again"
        };
        say!(
            "recorded: {} by {} (name from {}); {} (gateway `{}`)",
            record.summary(),
            operator.name(),
            operator.source().as_str(),
            next,
            recorded.owner
        );
    } else if recorded.is_complete() {
        say!(
            "recorded: {} by {} (name from {}); host `{}` will resume it",
            record.summary(),
            operator.name(),
            operator.source().as_str(),
            recorded.owner
        );
    } else {
        say!(
            "recorded: approval {} of {} by {} (name from {}); the run waits for {} more before host `{}` resumes it",
            recorded.approvals.0,
            recorded.approvals.1,
            operator.name(),
            operator.source().as_str(),
            recorded.approvals.1 - recorded.approvals.0,
            recorded.owner
        );
    }
    Ok(())
}

/// Records an operator's choice for a call whose outcome is unknown.
pub(super) async fn choose(
    store: &Store,
    out: Out,
    args: &ChooseArgs,
    choice: Choice,
) -> Result<(), Failure> {
    let operator = operator_identity(args.operator.as_deref())?;
    let digest = RerunDigest::from_text(args.digest.trim());
    let chosen = store
        .choose(
            &args.run,
            &operator,
            &Choosing {
                call_id: &args.call,
                digest: &digest,
                choice,
                reason: &args.reason,
            },
        )
        .await?;
    if out.json {
        return out.json(&json!({
            "run": args.run, "call": chosen.call_id, "tool": chosen.tool,
            "choice": choice.as_str(), "by": operator.name(), "source": operator.source().as_str(),
            "reason": args.reason, "owner": chosen.owner, "stands": chosen.stands,
            "reruns": {"have": chosen.reruns.0, "need": chosen.reruns.1},
        }));
    }
    if chosen.stands {
        say!(
            "recorded: {} call {} ({}) by {} (name from {}); host `{}` will resume the run",
            choice.as_str(),
            chosen.call_id,
            chosen.tool,
            operator.name(),
            operator.source().as_str(),
            chosen.owner
        );
    } else {
        say!(
            "recorded: rerun {} of {} of call {} ({}) by {} (name from {}); the call waits for {} more before host `{}` runs it again",
            chosen.reruns.0,
            chosen.reruns.1,
            chosen.call_id,
            chosen.tool,
            operator.name(),
            operator.source().as_str(),
            chosen.reruns.1.saturating_sub(chosen.reruns.0),
            chosen.owner
        );
    }
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
        Ended::OutcomeUnknown { call_id, tool, why } => (
            "outcome_unknown",
            format!(
                "call {call_id} ({tool}) {why}; review it with `toolgate runs show {run}`, then `toolgate runs rerun|skip {run} --call {call_id} --digest … --reason …`"
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
