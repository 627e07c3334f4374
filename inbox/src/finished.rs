//! What a decided run did, from its journal: each call's arguments as they
//! ran (an edit marked), its outcome — a call answered without running, a
//! denial, among them — its full result folded; the model's final answer;
//! and, for a coding agent's call, what its client reported.

use maud::{Markup, html};
use toolgate::journal::CallRecord;
use toolgate_store::{CallRow, ClientOutcome, RanCall, RanOutcome};

use crate::conversation::long_text;
use crate::pages::{at, json_block, shown};

/// What the store holds of a run's end, each part read on its own: one
/// that cannot be read says why, and the others still show.
pub(crate) struct Finished {
    /// Every planned call, from the journal.
    pub(crate) ran: Result<Vec<RanCall>, String>,
    /// The model's final answer, when the run finished.
    pub(crate) answer: Result<Option<String>, String>,
    /// What a client reported of the call it ran (a coding agent's hooks).
    pub(crate) client: Result<Vec<ClientOutcome>, String>,
}

/// The calls the hosts ran, the final answer and the client's reports.
/// `rows` is the journal as the run's history lists it, shown when the
/// full journal cannot be read.
pub(crate) fn what_ran(finished: &Finished, rows: &[CallRow]) -> Markup {
    html! {
        @match &finished.ran {
            Ok(calls) if !calls.is_empty() => {
                h2 { "Calls the host ran" }
                @for call in calls {
                    (ran_call(call))
                }
            }
            Ok(_) => {}
            Err(why) => {
                h2 { "Calls the host ran" }
                p.problem { "The journal could not be read in full: " (shown(why)) }
                ul {
                    @for call in rows {
                        li {
                            code { (shown(&call.call_id)) } " " (shown(&call.tool)) ": " (shown(&call.state))
                            @if let Some(result) = &call.result { " — " (shown(result)) }
                        }
                    }
                }
            }
        }
        @match &finished.answer {
            Ok(Some(answer)) => {
                h2 { "The final answer" }
                (long_text(answer))
            }
            Ok(None) => {}
            Err(why) => { p.problem { "The final answer could not be read: " (shown(why)) } }
        }
        @match &finished.client {
            Ok(reports) if !reports.is_empty() => {
                h2 { "What the client reported" }
                p.note {
                    "What the coding agent's post-tool hook reported of the call it ran, as it "
                    "wrote it: an allow is not proof that a call ran, and this is the client's "
                    "word, not toolgate's."
                }
                ul.reports {
                    @for report in reports {
                        li {
                            span.when { (at(report.recorded_at)) }
                            @if let Some(id) = &report.tool_use_id { " · call " code { (shown(id)) } }
                            (long_text(&report.outcome))
                        }
                    }
                }
            }
            Ok(_) => {}
            Err(why) => { p.problem { "What the client reported could not be read: " (shown(why)) } }
        }
    }
}

fn ran_call(call: &RanCall) -> Markup {
    html! {
        section.call.ran {
            h3 {
                "Call " code { (shown(&call.call_id)) } ": " (shown(&call.tool))
                " " small { "(turn " (call.turn) ")" }
            }
            @match &call.outcome {
                RanOutcome::Answered(output) => {
                    p.outcome.denied {
                        "Not run: the call was answered without running"
                        @if output.is_error { " (denied, or refused)" }
                        ". The model read:"
                    }
                    (long_text(&output.content))
                    h4 { "Arguments the model asked with" }
                    (json_block(&call.asked))
                }
                RanOutcome::Ran { arguments, effect, record } => {
                    p.outcome { (shown(&record_words(record))) " · effect " code { (effect.as_str()) } }
                    h4 {
                        "Arguments it ran with"
                        @if *arguments != call.asked { " — not the model's: an operator's edit, or input laid over them" }
                    }
                    (json_block(arguments))
                    @if let CallRecord::Ended(output) = record {
                        details.result {
                            summary {
                                @if output.is_error { "Its error, in full" } @else { "Its result, in full" }
                                " (" (output.content.chars().count()) " characters)"
                            }
                            pre.text { bdi { (toolgate::visible::visible_lines(&output.content)) } }
                        }
                    }
                }
                _ => { p.outcome { "An outcome this page cannot show." } }
            }
        }
    }
}

/// What the journal knows of a call that was to run, in words.
fn record_words(record: &CallRecord) -> String {
    match record {
        CallRecord::NotStarted => "Not started".to_owned(),
        CallRecord::Started => "Started and never ended: its outcome is unknown".to_owned(),
        CallRecord::Ended(output) if output.is_error => {
            let first = output.content.lines().next().unwrap_or_default();
            format!("Ran, and failed: {first}")
        }
        CallRecord::Ended(output) => {
            let first = output.content.lines().next().unwrap_or_default();
            format!("Ran: {first}")
        }
        CallRecord::Rerun { by } => format!(
            "Started and never ended; chosen to run again by {}",
            by.join(", ")
        ),
        CallRecord::Skip { by } => {
            format!("Started and never ended; {by} chose not to run it again")
        }
    }
}
