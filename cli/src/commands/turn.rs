//! A paused turn as a reviewer reads it: each call with its gate and
//! arguments, the definitions of the tools it calls, and the digest to decide
//! with — shown by `runs show`, after a decision, and by the demo.

use serde_json::json;
use toolgate::Registry;
use toolgate::suspend::SuspendedRun;

use crate::Failure;
use crate::output::{Col, Out, say, timestamp};

/// A call's gate as the reviewer is shown it: from the turn's own review
/// (what the host's registry said when the turn paused), or `None` for turns
/// paused before reviews were kept.
pub(super) fn registry_less(run: &SuspendedRun, index: usize) -> Option<&'static str> {
    let review = run.review();
    if review.tools.is_empty() {
        return None;
    }
    if let SuspendedRun::WaitingForInput(w) = run
        && w.input_call().id
            == run
                .pending()
                .get(index)
                .map(|c| c.id.as_str())
                .unwrap_or_default()
    {
        return Some("input");
    }
    Some(match review.tools.get(index) {
        Some(Some(tool)) if tool.needs_approval => "approval",
        Some(Some(_)) => "runs",
        _ => "not offered",
    })
}

pub(super) fn gate(known: Option<&'static str>) -> &'static str {
    known.unwrap_or("unknown")
}

/// The pending turn as a reviewer reads it: each call with its gate and
/// arguments, the definitions of the tools it calls, the expiry, and the
/// digest to decide with.
pub(super) async fn show(registry: &Registry, out: Out, run: &SuspendedRun) -> Result<(), Failure> {
    show_with_states(registry, out, run, None).await
}

pub(super) async fn show_with_states(
    registry: &Registry,
    out: Out,
    run: &SuspendedRun,
    states: Option<&[String]>,
) -> Result<(), Failure> {
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
            "requested_by": run.state().requested_by, "client": run.state().client,
            "digest": run.digest().as_str(),
            "pending": run.pending(), "input_schema": input.as_ref().map(|i| &i.1),
            "expires_at": run.expires_at_ms(),
        }));
    }
    say!(
        "run {} — {} — requested by {}",
        run.run_id(),
        run.status().as_str().replace('_', " "),
        requester(run.state())
    );
    if let Some(asked) = first_request(run.state()) {
        say!("asked: {}", asked);
    }
    let mut table = out.table(&["CALL", "TOOL", "GATE", "ARGUMENTS", "STATE"]);
    let mut asking = Vec::new();
    for (index, call) in run.pending().iter().enumerate() {
        // The turn's own review says what the host's registry said when it
        // paused; a turn paused before reviews were kept is judged by this
        // console's registry.
        let gate = registry_less(run, index).unwrap_or_else(|| {
            offered.get(&call.name).map_or("not offered", |t| {
                if input.as_ref().is_some_and(|(id, _)| *id == call.id) {
                    "input"
                } else {
                    t.ruling().pause.as_str()
                }
            })
        });
        if gate == "approval" {
            asking.push(format!("{} ({})", call.name, call.id));
        }
        table.row([
            Col::from(&call.id),
            Col::from(&call.name),
            Col::Gate(gate),
            Col::from(&call.arguments),
            Col::from(
                states
                    .and_then(|s| s.get(index))
                    .map_or("-", String::as_str),
            ),
        ]);
    }
    table.whole(&[0, 1, 2]);
    table.print();
    let mut described: Vec<&str> = Vec::new();
    for tool in run.review().tools.iter().flatten() {
        if !described.contains(&tool.name.as_str()) {
            described.push(&tool.name);
            say!(
                "  {}: {} (definition {})",
                tool.name,
                tool.description.as_str(),
                &tool.definition_digest()
            );
        }
    }
    if let Some((_, schema)) = input {
        say!("input schema: {}", schema);
    }
    if let Some(at) = run.expires_at_ms() {
        let at = i64::try_from(at).unwrap_or(i64::MAX);
        say!("approvable until {}", timestamp(at));
    }
    let need = run.state().options.approvals_required;
    if need > 1 {
        say!("needs {} approvals from distinct people", need);
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

/// Who asked for a run, in words, raw (the line that shows it escapes it):
/// the requester, and the MCP client they asked through as it declared
/// itself — its word, not a fact.
/// What the user said first in the run: for a run of one call, what asked
/// for it (a gateway's `tools/call`, a hook's client, session and working
/// directory).
pub(super) fn first_request(state: &toolgate::run::RunState) -> Option<&str> {
    state.transcript.iter().find_map(|message| match message {
        toolgate::run::Message::User { content } => Some(content.as_str()),
        _ => None,
    })
}

pub(super) fn requester(state: &toolgate::run::RunState) -> String {
    match &state.client {
        Some(client) => format!(
            "{} through client `{client}` (as it declared itself)",
            state.requested_by
        ),
        None => state.requested_by.clone(),
    }
}
