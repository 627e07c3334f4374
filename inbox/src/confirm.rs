//! Approving a write asks once more: a form whose answer approves a call
//! that writes — every imported tool counts as one, its effect assumed — is
//! answered with a page that shows each such call and the arguments it
//! will run with, and a form that posts the very same fields (the same
//! session token, the same digest) with the confirmation added. Nothing is
//! recorded before it; no script is needed.

use maud::{Markup, html};
use serde_json::Value;
use toolgate::suspend::{CallDecisions, CallVerdict, Decision, SuspendedRun, TurnDigest, Verdict};
use toolgate_store::{Answer, Session};

use crate::gates::{needs_verdict, writes};
use crate::pages::{base, json_block, page, path_segment, shown};
use crate::run::DecideForm;

/// The field, and its value, that confirms an approval of a write.
pub(crate) const CONFIRM: (&str, &str) = ("confirm", "write");

/// One write an answer approves: the call and the arguments it will run
/// with.
pub(crate) struct Write<'a> {
    id: &'a str,
    tool: &'a str,
    effect: String,
    arguments: &'a Value,
}

/// The calls of `paused` that write and that `answer` lets run: every
/// call that needs a verdict for an approval of the turn; the calls
/// approved, as they are or edited, for an answer call by call.
pub(crate) fn approved_writes<'a>(paused: &'a SuspendedRun, answer: &'a Answer) -> Vec<Write<'a>> {
    let effect = |index: usize| {
        let reviewed = paused.review().tools.get(index).and_then(Option::as_ref);
        match (reviewed, paused.pending().get(index)) {
            (Some(tool), Some(call)) if call.name.contains('.') => {
                format!(
                    "{} (assumed: a remote tool's effect is never taken from its server)",
                    tool.effect
                )
            }
            (Some(tool), _) => tool.effect.as_str().to_owned(),
            (None, _) => "unknown: counted as a write".to_owned(),
        }
    };
    paused
        .pending()
        .iter()
        .enumerate()
        .filter(|(index, _)| writes(paused, *index))
        .filter_map(|(index, call)| {
            let arguments = match answer {
                Answer::Approve if needs_verdict(paused, index) => &call.arguments,
                Answer::Calls(verdicts) => match verdicts.get(&call.id) {
                    Some(CallVerdict::Approve) => &call.arguments,
                    Some(CallVerdict::Edit { arguments }) => arguments,
                    Some(CallVerdict::Deny { .. }) | None => return None,
                },
                Answer::Approve | Answer::Deny | Answer::Input(_) => return None,
            };
            Some(Write {
                id: &call.id,
                tool: &call.name,
                effect: effect(index),
                arguments,
            })
        })
        .collect()
}

/// Whether the run, as it waits, would take `answer` from `decider` on
/// `digest` — the core's own checks that need nothing but the run: the
/// digest, every call covered, edits that fit the schema, four eyes, the
/// time limit. An answer it would refuse is not asked about again: the
/// refusal follows at once, and says why.
pub(crate) fn run_would_take(
    paused: &SuspendedRun,
    history: &toolgate_store::RunHistory,
    answer: &Answer,
    digest: &TurnDigest,
    decider: &str,
) -> bool {
    let SuspendedRun::AwaitingApproval(waiting) = paused else {
        return false;
    };
    // Where it needs several approvers: one approval per person, each the
    // same verdicts as the first's.
    if crate::pages::approved_by(history, paused, decider) {
        return false;
    }
    let decisions = match answer {
        Answer::Approve => Decision {
            verdict: Verdict::Approve,
            digest: digest.clone(),
            decided_by: decider.to_owned(),
        }
        .per_call(waiting.pending()),
        Answer::Calls(calls) => CallDecisions {
            calls: calls.clone(),
            digest: digest.clone(),
            decided_by: decider.to_owned(),
            also_approved_by: Vec::new(),
        },
        Answer::Deny | Answer::Input(_) => return false,
    };
    if let Some(first) = crate::pages::first_approval(history, paused) {
        let recorded: std::collections::BTreeMap<&str, &CallVerdict> = first
            .record
            .calls
            .iter()
            .filter_map(|call| Some((call.call_id.as_str(), call.verdict.as_ref()?)))
            .collect();
        let given: std::collections::BTreeMap<&str, &CallVerdict> = decisions
            .calls
            .iter()
            .map(|(id, verdict)| (id.as_str(), verdict))
            .collect();
        if recorded != given {
            return false;
        }
    }
    waiting.check_calls(&decisions).is_ok()
}

/// The page that asks once more: each write and its arguments, and the
/// form posted again with the confirmation.
pub(crate) fn ask(
    session: &Session,
    run_id: &str,
    writes: &[Write<'_>],
    answer: &Answer,
    form: &DecideForm,
) -> Markup {
    // The rest of the answer, so the whole of it is in view.
    let denied: Vec<(&str, &str)> = match answer {
        Answer::Calls(verdicts) => verdicts
            .iter()
            .filter_map(|(id, verdict)| match verdict {
                CallVerdict::Deny { reason } => Some((id.as_str(), reason.as_str())),
                CallVerdict::Approve | CallVerdict::Edit { .. } => None,
            })
            .collect(),
        Answer::Approve | Answer::Deny | Answer::Input(_) => Vec::new(),
    };
    let run = format!("{}/runs/{}", base(session), path_segment(run_id));
    page(
        "Approve this write?",
        Some(session),
        &html! {
            h1 { "Approve this write?" }
            p {
                "Your answer approves " (writes.len())
                @if writes.len() == 1 { " call that writes" } @else { " calls that write" }
                ": once the run resumes, each runs with the arguments below, and what it "
                "changes cannot be taken back from here. Nothing is recorded until you confirm."
            }
            @for write in writes {
                section.call {
                    h3 { "Call " code { (shown(write.id)) } ": " (shown(write.tool)) }
                    p { "effect " code { (write.effect) } }
                    h4 { "Arguments it will run with" }
                    (json_block(write.arguments))
                }
            }
            @if !denied.is_empty() {
                h2 { "And denies" }
                ul {
                    @for (id, reason) in &denied {
                        li {
                            "call " code { (shown(id)) }
                            @if reason.is_empty() { " (no reason given)" } @else { ", because " (shown(reason)) }
                        }
                    }
                }
            }
            form method="post" action={ (run) "/decide" } {
                @for (name, value) in form.fields() {
                    @if name != CONFIRM.0 {
                        input type="hidden" name=(name) value=(value);
                    }
                }
                input type="hidden" name=(CONFIRM.0) value=(CONFIRM.1);
                button type="submit" { "Yes, approve" }
                " "
                a href=(run) { "No — back to the run" }
            }
        },
    )
}
