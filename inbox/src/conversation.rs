//! The conversation that led to a turn: the user's request, the model's
//! words and the results it read, from the suspended run's transcript —
//! every text escaped and passed through [`toolgate::visible`], a long one
//! folded (`<details>`) behind its first line.

use maud::{Markup, html};
use toolgate::run::Message;
use toolgate::visible::visible_lines;

use crate::pages::shown;

/// A text longer than this many characters, or lines, is folded.
const FOLD_CHARS: usize = 600;
const FOLD_LINES: usize = 8;
/// How much of a folded text its summary shows.
const SUMMARY_CHARS: usize = 120;

/// Someone else's text: in full when short, folded behind its first line
/// when long.
pub(crate) fn long_text(text: &str) -> Markup {
    let long = text.chars().count() > FOLD_CHARS || text.lines().count() > FOLD_LINES;
    if !long {
        return html! { pre.text { bdi { (visible_lines(text)) } } };
    }
    let first = text.lines().next().unwrap_or_default();
    let mut summary: String = first.chars().take(SUMMARY_CHARS).collect();
    if summary.len() < text.len() {
        summary.push('…');
    }
    html! {
        details.long {
            summary {
                (shown(&summary))
                " "
                small { "(" (text.chars().count()) " characters, " (text.lines().count()) " lines — show all)" }
            }
            pre.text { bdi { (visible_lines(text)) } }
        }
    }
}

/// The transcript up to the turn that waits, oldest first.
pub(crate) fn conversation(transcript: &[Message]) -> Markup {
    html! {
        h2 { "The conversation" }
        @if transcript.is_empty() {
            p { "The run holds no conversation: it is a call made directly, not a model's turn." }
        } @else {
            p.note {
                "What led to the turn: the user's request, the model's words and the results "
                "it read, as the run holds them. Everything here was written by the user, the "
                "model or a tool, and is shown as text."
            }
            ol.conversation {
                @for message in transcript {
                    (entry(message))
                }
            }
        }
    }
}

fn entry(message: &Message) -> Markup {
    match message {
        Message::System { content } => html! {
            li.system {
                details {
                    summary { "Instructions to the model" }
                    pre.text { bdi { (visible_lines(content)) } }
                }
            }
        },
        Message::User { content } => html! {
            li.user {
                span.who { "The user asked" }
                (long_text(content))
            }
        },
        Message::Assistant { content, calls, .. } => html! {
            li.model {
                span.who { "The model" }
                @if let Some(text) = content.as_deref().filter(|t| !t.trim().is_empty()) {
                    (long_text(text))
                }
                @if !calls.is_empty() {
                    p.calls {
                        "asked for "
                        @for (index, call) in calls.iter().enumerate() {
                            @if index > 0 { ", " }
                            code { (shown(&call.name)) } " (call " code { (shown(&call.id)) } ")"
                        }
                    }
                }
            }
        },
        Message::Tool {
            call_id,
            name,
            content,
            is_error,
            ..
        } => html! {
            li.tool {
                details {
                    summary {
                        @if *is_error { "The error " } @else { "The result " }
                        "the model read of call " code { (shown(call_id)) } " (" (shown(name)) ")"
                    }
                    pre.text { bdi { (visible_lines(content)) } }
                }
            }
        },
    }
}
