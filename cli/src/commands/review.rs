//! `toolgate runs review`: the waiting runs decided on this terminal, one
//! call at a time, with nothing to copy or paste.
//!
//! The review only asks. Every decision it takes is recorded by the same
//! functions as `runs approve|deny|edit|input` (`decide::command`) and
//! `runs rerun|skip` (`decide::choose`), bound to the digest of the turn as
//! it was shown here — so four eyes, several approvers, a stale digest and
//! who decides are judged exactly as they are there. An edit is checked as
//! it is typed by the core's own check of a decision (`check_calls`), the
//! one the store applies when it records it.

mod ask;

use std::collections::BTreeSet;
use std::io::IsTerminal;

use toolgate::identity::{Operator, same_person};
use toolgate::suspend::{
    AwaitingApproval, CallVerdict, InputSubmission, Refusal, Suspended, SuspendedRun, TurnDigest,
    WaitingForInput,
};
use toolgate_store::{Answer, Choice, LoadError, OpenRun, Store, UnknownCall};

use super::decide;
use super::form::{ask_form, ask_line};
use super::identity::operator_identity;
use super::turn::{registry_less, requester};
use crate::output::{Out, say, timestamp};
use crate::{ChooseArgs, DecideArgs, Failure, ReviewArgs};

/// Why the review refuses to start without a terminal, and what to use.
const NO_TERMINAL: &str = "`runs review` asks on a terminal, and standard input or output is not one: use `toolgate runs list`, `runs show RUN` (it gives the digest), then `runs approve|deny|edit|input RUN --digest D` or `runs rerun|skip RUN --call ID --digest D --reason WHY`";

/// How the review of one run ended.
enum Reviewed {
    /// A decision (or a choice) was recorded.
    Recorded,
    /// Left waiting, nothing recorded.
    Left,
    /// Refused by the store, nothing recorded; `again` when the run still
    /// waits, changed, and may be reviewed afresh.
    Refused { again: bool },
}

/// `runs review [RUN]`: the run named, or the oldest that waits; then the
/// next, until none is left or the operator quits.
pub(super) async fn review(store: &Store, out: Out, args: ReviewArgs) -> Result<(), Failure> {
    if out.json {
        return Err(Failure::Usage(
            "`runs review` asks a person and has no --json form: script with `runs list|show --json` and `runs approve|deny|edit|input|rerun|skip`".into(),
        ));
    }
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(Failure::Usage(NO_TERMINAL.into()));
    }
    let flag = args.operator.as_deref();
    let operator = operator_identity(flag)?;
    say!(
        "reviewing as {} (name from {})",
        operator.name(),
        operator.source().as_str()
    );
    let mut seen = BTreeSet::new();
    // A run named is resolved already, as every `runs` command's run is
    // (its id, or a unique prefix).
    let mut next = match args.run {
        Some(run) => Some(run),
        None => next_waiting(store, &seen).await?.map(|row| row.run_id),
    };
    if next.is_none() {
        say!("no run waits for a decision");
    }
    let mut refused = 0_usize;
    while let Some(run) = next.take() {
        say!();
        match review_run(store, out, flag, &operator, &run).await? {
            Reviewed::Recorded | Reviewed::Left => {
                seen.insert(run);
            }
            Reviewed::Refused { again } => {
                refused += 1;
                if !again {
                    seen.insert(run);
                }
            }
        }
        let Some(row) = next_waiting(store, &seen).await? else {
            say!("no other run waits for a decision");
            break;
        };
        say!();
        say!(
            "next: run {} — {} — requested by {}, since {}",
            row.run_id,
            row.standing(),
            row.requested_by,
            timestamp(row.created_at)
        );
        if ask::choice("[r]eview it or [q]uit?", &["r", "q"])? == "r" {
            next = Some(row.run_id);
        }
    }
    match refused {
        0 => Ok(()),
        n => Err(Failure::Refused(format!(
            "{n} of the decisions taken in this review {} refused, and nothing of {} was recorded",
            if n == 1 { "was" } else { "were" },
            if n == 1 { "it" } else { "them" }
        ))),
    }
}

/// The oldest run not reviewed yet in this session that waits for a
/// person: for a decision, for input, or for a choice on a call whose
/// outcome is unknown. A run whose stored document does not decode is
/// left to `runs show`.
async fn next_waiting(store: &Store, seen: &BTreeSet<String>) -> Result<Option<OpenRun>, Failure> {
    Ok(store.open_runs().await?.into_iter().find(|row| {
        !seen.contains(&row.run_id)
            && row.problem.is_none()
            && (row.state == "open" || row.execution == "outcome_unknown")
    }))
}

/// One run, reviewed: its unknown calls chosen on, or its pause decided.
async fn review_run(
    store: &Store,
    out: Out,
    flag: Option<&str>,
    operator: &Operator,
    run: &str,
) -> Result<Reviewed, Failure> {
    let unknown = store.unknown_calls(run).await?;
    if !unknown.is_empty() {
        return choose_unknown(store, out, flag, run, &unknown).await;
    }
    let paused = match store.load_suspended(run).await {
        Ok(paused) => paused,
        // A run that exists and waits for no one is refused, not missing.
        Err(LoadError::NotFound(_)) => {
            let history = store.run_history(run).await?;
            return Err(match history.suspensions.last() {
                Some(latest) => Failure::Refused(format!(
                    "run {} waits for no decision: {}",
                    toolgate::visible::visible(run),
                    latest.standing()
                )),
                None => Failure::NotFound(format!("no run `{}`", toolgate::visible::visible(run))),
            });
        }
        Err(error) => return Err(error.into()),
    };
    let history = store.run_history(run).await?;
    show_header(&paused, history.suspensions.last(), operator);
    let shown = paused.digest();
    let answer = match &paused {
        SuspendedRun::AwaitingApproval(pending) => verdicts(&paused, pending, operator)?,
        SuspendedRun::WaitingForInput(waiting) => input(&paused, waiting, operator)?,
    };
    let Some(answer) = answer else {
        say!("left waiting: nothing was recorded on run {}", run);
        return Ok(Reviewed::Left);
    };
    let decision = DecideArgs {
        run: run.to_owned(),
        digest: Some(shown.as_str().to_owned()),
        operator: flag.map(str::to_owned),
    };
    match decide::command(store, out, decision, answer).await {
        Ok(()) => Ok(Reviewed::Recorded),
        Err(Failure::Refused(why) | Failure::NotFound(why)) => {
            Ok(refused_decision(store, run, &shown, &why).await)
        }
        Err(other) => Err(other),
    }
}

/// The run as a whole: who asked, its host, what its decision needs.
fn show_header(paused: &SuspendedRun, latest: Option<&OpenRun>, operator: &Operator) {
    let state = paused.state();
    say!(
        "run {} — {} — requested by {}",
        paused.run_id(),
        paused.status().as_str().replace('_', " "),
        requester(state)
    );
    if let Some(latest) = latest {
        say!(
            "host: {}; since {}",
            latest.owner,
            timestamp(latest.created_at)
        );
    }
    let need = state.options.approvals_required;
    if need > 1 {
        let have = latest.map_or(0, |l| l.approvals.0);
        say!(
            "needs approvals from {} distinct people; {} recorded so far",
            need,
            have
        );
    }
    if state.options.four_eyes {
        say!(
            "four eyes: its requester, {}, may not approve it",
            state.requested_by
        );
        if same_person(operator.name(), &state.requested_by)
            && matches!(paused, SuspendedRun::AwaitingApproval(_))
        {
            say!("note: that is you — an approval of yours is refused; you may deny");
        }
    }
    if let Some(at) = paused.expires_at_ms() {
        let at = i64::try_from(at).unwrap_or(i64::MAX);
        say!("approvable until {}", timestamp(at));
    }
}

/// One call of the pause, as the reviewer reads it: its tool, its gate and
/// why — from the turn's own review, what the host's registry said when the
/// turn paused — and its arguments, escaped.
fn show_call(paused: &SuspendedRun, index: usize) {
    let Some(call) = paused.pending().get(index) else {
        return;
    };
    say!(
        "call {} of {}: {} — {}",
        index + 1,
        paused.pending().len(),
        call.id,
        call.name
    );
    let reviewed = paused.review().tools.get(index).and_then(Option::as_ref);
    let (gate, why) = match (registry_less(paused, index), reviewed) {
        (Some("input"), _) => ("input", "it waits for a person's data".to_owned()),
        (Some("approval"), Some(tool)) => (
            "approval",
            format!(
                "needs a verdict: {} ({}) needed approval when the turn paused",
                tool.name,
                tool.effect.as_str()
            ),
        ),
        (Some("runs"), Some(tool)) => (
            "runs",
            format!(
                "needs no verdict: {} ({}) needed no approval when the turn paused; it runs once the turn is decided",
                tool.name,
                tool.effect.as_str()
            ),
        ),
        (Some("not offered"), _) => (
            "not offered",
            "its tool was not offered when the turn paused; the model is told so".to_owned(),
        ),
        _ => (
            "approval",
            "needs a verdict: the turn paused before reviews were kept".to_owned(),
        ),
    };
    say!("  gate: {} — {}", gate, why);
    if let Some(tool) = reviewed {
        say!(
            "  {}: {} (definition {})",
            tool.name,
            tool.description.as_str(),
            tool.definition_digest()
        );
    }
    say!("  arguments: {}", call.arguments);
}

/// A verdict for every call that needs one, then one confirmation; `None`
/// when the run is left waiting.
fn verdicts(
    paused: &SuspendedRun,
    pending: &Suspended<AwaitingApproval>,
    operator: &Operator,
) -> Result<Option<Answer>, Failure> {
    loop {
        let mut given = std::collections::BTreeMap::new();
        for (index, call) in pending.pending().iter().enumerate() {
            say!();
            show_call(paused, index);
            if !pending.needs_verdict(index) {
                continue;
            }
            let Some(verdict) = ask::verdict(pending, call, &given, operator)? else {
                return Ok(None);
            };
            given.insert(call.id.clone(), verdict);
        }
        say!();
        say!("your decision on run {}:", pending.run_id());
        for (index, call) in pending.pending().iter().enumerate() {
            let verdict = match given.get(&call.id) {
                Some(CallVerdict::Approve) => "approve",
                Some(CallVerdict::Deny { reason }) if reason.is_empty() => "deny",
                Some(CallVerdict::Deny { reason }) => {
                    say!("  {} {}: deny: {}", call.id, call.name, reason);
                    continue;
                }
                Some(CallVerdict::Edit { arguments }) => {
                    // The arguments as JSON, escaped as JSON: not as text.
                    say!(
                        "  {} {}: approve with edited arguments {}",
                        call.id,
                        call.name,
                        arguments
                    );
                    continue;
                }
                None if pending.needs_verdict(index) => "no verdict",
                None => "runs (needs no verdict)",
            };
            say!("  {} {}: {}", call.id, call.name, verdict);
        }
        match ask::confirm(operator)? {
            ask::Confirm::Record => return Ok(Some(Answer::Calls(given))),
            ask::Confirm::Again => say!("the calls are asked again; nothing was recorded"),
            ask::Confirm::Leave => return Ok(None),
        }
    }
}

/// The input of a run waiting for it, asked field by field until it fits
/// the input schema (the core's own check, the store's), then confirmed.
fn input(
    paused: &SuspendedRun,
    waiting: &Suspended<WaitingForInput>,
    operator: &Operator,
) -> Result<Option<Answer>, Failure> {
    for index in 0..waiting.pending().len() {
        say!();
        show_call(paused, index);
    }
    say!();
    say!(
        "call {} ({}) waits for input:",
        waiting.input_call().id,
        waiting.input_tool()
    );
    loop {
        let data = loop {
            let data = ask_form(waiting.input_schema().as_value())?;
            let submission = InputSubmission {
                data: data.clone(),
                digest: waiting.digest(),
                submitted_by: operator.name().to_owned(),
            };
            match waiting.check_input(&submission) {
                Err(Refusal::InvalidInput(errors)) => {
                    for error in errors {
                        say!("  does not fit: {}", error.to_string());
                    }
                    say!("  asked again; nothing was recorded");
                }
                _ => break data,
            }
        };
        say!();
        say!("your input on run {}: {}", waiting.run_id(), data);
        match ask::confirm(operator)? {
            ask::Confirm::Record => return Ok(Some(Answer::Input(data))),
            ask::Confirm::Again => say!("the input is asked again; nothing was recorded"),
            ask::Confirm::Leave => return Ok(None),
        }
    }
}

/// The calls of a run whose outcome is unknown: each shown with what a
/// rerun runs it with, and rerun or skipped through `runs rerun|skip`'s own
/// path, bound to the digest shown.
async fn choose_unknown(
    store: &Store,
    out: Out,
    flag: Option<&str>,
    run: &str,
    unknown: &[UnknownCall],
) -> Result<Reviewed, Failure> {
    say!("run {} — outcome unknown", run);
    let mut reviewed = Reviewed::Left;
    for call in unknown {
        say!();
        say!(
            "call {} ({}) of turn {}, started {} time{}: it may have run; a rerun runs it with {}",
            call.call_id,
            call.tool,
            call.turn,
            call.attempt,
            if call.attempt == 1 { "" } else { "s" },
            call.arguments
        );
        if call.reruns.1 > 1 || call.four_eyes {
            say!(
                "  a rerun needs {} {}, none of them the requester {}; chosen so far: {}",
                call.reruns.1,
                if call.reruns.1 == 1 {
                    "person"
                } else {
                    "distinct people"
                },
                call.requested_by,
                call.reruns.0
            );
        }
        for choice in &call.choices {
            say!("  {}", choice.to_string());
        }
        let choice = match ask::choice(
            "[r]erun it, [s]kip it (not run again; the model is told) or [l]eave the run?",
            &["r", "s", "l"],
        )?
        .as_str()
        {
            "r" => Choice::Rerun,
            "s" => Choice::Skip,
            _ => {
                say!("left waiting: nothing was recorded on run {}", run);
                return Ok(Reviewed::Left);
            }
        };
        let reason = loop {
            let reason = ask_line("why (for the record):")?;
            if !reason.is_empty() {
                break reason;
            }
            say!("a choice needs a reason; try again");
        };
        let confirm = ask::choice(
            &format!(
                "record: {} call {}? [y]es or [n]o (leave the run)",
                choice.as_str(),
                call.call_id
            ),
            &["y", "n"],
        )?;
        if confirm != "y" {
            say!("left waiting: nothing was recorded on run {}", run);
            return Ok(Reviewed::Left);
        }
        let chosen = ChooseArgs {
            run: run.to_owned(),
            call: call.call_id.clone(),
            digest: call.digest.as_str().to_owned(),
            reason,
            operator: flag.map(str::to_owned),
        };
        match decide::choose(store, out, &chosen, choice).await {
            Ok(()) => reviewed = Reviewed::Recorded,
            Err(Failure::Refused(why) | Failure::NotFound(why)) => {
                let now = store.unknown_calls(run).await?;
                let same = now
                    .iter()
                    .any(|u| u.call_id == call.call_id && u.digest == call.digest);
                if same {
                    say!("refused: {}; nothing was recorded", why);
                } else {
                    say!(
                        "refused: call {} of run {} was chosen on or changed elsewhere while you reviewed it; nothing was recorded",
                        call.call_id,
                        run
                    );
                }
                return Ok(Reviewed::Refused { again: false });
            }
            Err(other) => return Err(other),
        }
    }
    Ok(reviewed)
}

/// Says why a decision was refused — reading the run again first, so that
/// "decided elsewhere" or "changed" is said only when it is so.
async fn refused_decision(store: &Store, run: &str, shown: &TurnDigest, why: &str) -> Reviewed {
    match store.load_suspended(run).await {
        Ok(now) if now.digest() != *shown => {
            say!(
                "refused: run {} changed while you reviewed it (its turn waits with another digest now); nothing was recorded",
                run
            );
            Reviewed::Refused { again: true }
        }
        Err(LoadError::NotFound(_)) => {
            let by = store
                .run_history(run)
                .await
                .ok()
                .and_then(|h| h.suspensions.last().and_then(|s| s.decided_by.clone()));
            if let Some(by) = by {
                say!(
                    "refused: run {} was decided elsewhere, by {}, while you reviewed it; nothing was recorded",
                    run,
                    by
                );
            } else {
                say!(
                    "refused: run {} no longer waits for a decision (decided elsewhere while you reviewed it); nothing was recorded",
                    run
                );
            }
            Reviewed::Refused { again: false }
        }
        _ => {
            say!("refused: {}; nothing was recorded", why);
            Reviewed::Refused { again: false }
        }
    }
}
