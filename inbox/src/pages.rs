//! The pages, written with [`maud`]: every value spliced in is escaped by
//! the markup, and every text a model, a server or the database wrote goes
//! through [`toolgate::visible`] first and into a `<bdi>`, so that neither a
//! hidden character nor right-to-left letters reorder what a reader sees.

use std::fmt::Write as _;

use maud::{DOCTYPE, Markup, html};
use toolgate::suspend::{Suspended, SuspendedRun, WaitingForInput};
use toolgate::visible::{visible, visible_json};
use toolgate_store::{RunHistory, Session, UnknownCall};

use crate::conversation::conversation;
use crate::finished::{Finished, what_ran};
use crate::form::Retyped;
use crate::gates::CallGate;
use crate::resumer::{Resumer, resumer};

/// The inbox's one style sheet, served from `/style.css`.
pub(crate) const STYLE: &str = include_str!("style.css");

/// Text someone else wrote, shown as it is: escaped, hidden characters as
/// escapes, isolated from the text around it.
pub(crate) fn shown(text: &str) -> Markup {
    html! { bdi { (visible(text)) } }
}

/// A JSON value someone else wrote, as readable text — an object key by
/// key, a string with its line breaks — and as exact JSON, hidden
/// characters escaped in both.
pub(crate) fn json_block(value: &serde_json::Value) -> Markup {
    let readable = |value: &serde_json::Value| match value {
        serde_json::Value::String(text) => {
            html! { pre.text { bdi { (toolgate::visible::visible_lines(text)) } } }
        }
        other => html! { pre.json { bdi { (visible_json(other)) } } },
    };
    html! {
        @if let serde_json::Value::Object(fields) = value {
            dl.arguments {
                @for (key, field) in fields {
                    dt { code { (shown(key)) } }
                    dd { (readable(field)) }
                }
            }
        } @else {
            (readable(value))
        }
        details {
            summary { "exact JSON" }
            pre.json { bdi { (visible_json(value)) } }
        }
    }
}

/// A run id as a path segment: only the characters of a run id pass; any
/// other is percent-encoded.
pub(crate) fn path_segment(run: &str) -> String {
    let mut out = String::with_capacity(run.len());
    for byte in run.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// Where a session's pages live: under its own key (`/s/KEY`), which only
/// the sign-in's answer gives, and never a cookie — another server on this
/// host, to which a browser sends the inbox's cookie as to any port, does
/// not learn it.
pub(crate) fn base(session: &Session) -> String {
    format!("/s/{}", session.csrf_token)
}

/// A time, in UTC, from milliseconds since the Unix epoch.
pub(crate) fn at(ms: i64) -> String {
    match cookie::time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000)) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        Err(_) => ms.to_string(),
    }
}

pub(crate) fn page(title: &str, session: Option<&Session>, body: &Markup) -> Markup {
    page_with(title, session, None, body)
}

/// A page; a run's stable address names its run (`data-run`) for the
/// inbox's script, which opens it in the session the browser kept. A
/// signed-in page names its session's address (`data-session`), which
/// the script keeps.
pub(crate) fn page_with(
    title: &str,
    session: Option<&Session>,
    run: Option<&str>,
    body: &Markup,
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " — toolgate inbox" }
                link rel="stylesheet" href="/style.css";
                script src="/inbox.js" defer {}
            }
            body data-session=[session.map(base)] data-run=[run] {
                header {
                    @if let Some(session) = session {
                        a.home href={ (base(session)) "/" } { "toolgate inbox" }
                        a.servers href={ (base(session)) "/servers" } { "Servers and tools" }
                        span.who { "signed in as " (shown(&session.operator)) }
                        form.inline.sign-out method="post" action={ (base(session)) "/sign-out" } {
                            input type="hidden" name="csrf" value=(session.csrf_token);
                            button type="submit" { "Sign out" }
                        }
                    } @else {
                        span.home { "toolgate inbox" }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// What a sign-in link opens: one button.
pub(crate) fn sign_in(token: &str) -> Markup {
    page(
        "Sign in",
        None,
        &html! {
            h1 { "Sign in" }
            p { "This link signs you in once. Signed in, you decide the runs that wait." }
            form method="post" action="/sign-in" {
                input type="hidden" name="token" value=(token);
                button type="submit" { "Sign in" }
            }
        },
    )
}

/// A refusal: what happened, and where to go from here — under the
/// page's header when the session is known: who is signed in, the way
/// back.
pub(crate) fn refused(session: Option<&Session>, why: &str, fresh: Option<&str>) -> Markup {
    page(
        "Refused",
        session,
        &html! {
            h1 { "Refused" }
            p.refusal { (shown(why)) }
            (way_back(session, fresh))
        },
    )
}

/// News, not an alarm: the run changed under the operator's form —
/// decided elsewhere, or paused afresh — and where it stands now.
pub(crate) fn news(session: &Session, headline: &str, what: &str, fresh: &str) -> Markup {
    page(
        headline,
        Some(session),
        &html! {
            h1 { (headline) }
            p.news { (shown(what)) }
            p { "Nothing was recorded from your form." }
            (way_back(Some(session), Some(fresh)))
        },
    )
}

/// The links on from a refusal or a piece of news: the run as it is now,
/// and the session's list.
fn way_back(session: Option<&Session>, fresh: Option<&str>) -> Markup {
    html! {
        @if fresh.is_some() || session.is_some() {
            p.back {
                @if let Some(fresh) = fresh { a href=(fresh) { "See the run as it is now" } }
                @if fresh.is_some() && session.is_some() { " · " }
                @if let Some(session) = session { a href={ (base(session)) "/" } { "Back to the waiting runs" } }
            }
        }
    }
}

/// What a run's page shows beyond its turn and its decisions.
pub(crate) struct RunParts {
    /// Each pending call's gate and why, in order.
    pub(crate) gates: Vec<CallGate>,
    /// What ran, the final answer, what a client reported.
    pub(crate) finished: Finished,
    /// Who resumes the run, and whether it was seen.
    pub(crate) resumer: Resumer,
    /// Now, in milliseconds since the Unix epoch.
    pub(crate) now_ms: i64,
    /// The decision form as the operator posted it, sent back with the
    /// errors beside its fields; none for a page shown afresh.
    pub(crate) retyped: Option<Retyped>,
    /// The newest change the page shows, which it follows from.
    pub(crate) since: Option<i64>,
}

/// One run: the conversation that led to it, its pending turn call by
/// call with each call's gate, the decision forms while it waits, who
/// resumes it, the decisions so far, and what ran.
#[allow(
    clippy::too_many_lines,
    reason = "one page, its sections in the order a reader meets them"
)]
pub(crate) fn run(
    session: &Session,
    run_id: &str,
    paused: Option<&SuspendedRun>,
    history: &RunHistory,
    unknown: &[UnknownCall],
    may_declare: bool,
    parts: &RunParts,
) -> Markup {
    let latest = history.suspensions.last();
    let open = latest.is_some_and(|s| s.state == "open");
    let done = latest.is_some_and(|s| s.execution == "done");
    page(
        "Run",
        Some(session),
        &html! {
            h1 { "Run " code { (shown(run_id)) } }
            (crate::live::run_follows(session, run_id, parts.since))
            @if let Some(latest) = latest {
                p.state { (shown(&latest.standing())) }
                p { "Requested by " (shown(&latest.requested_by)) " · host " (shown(&latest.owner)) }
            }
            @if let Some(latest) = latest {
                (resumer(&parts.resumer, &latest.owner, done, parts.now_ms))
            }
            @if let Some(paused) = paused {
                @if let Some(client) = &paused.state().client {
                    p { "Through the client " (shown(&client.to_string())) " (as it declared itself)" }
                }
                (conversation(&paused.state().transcript))
                h2 { "The turn" }
                @for (index, call) in paused.pending().iter().enumerate() {
                    @let reviewed = paused.review().tools.get(index).and_then(Option::as_ref);
                    section.call {
                        h3 { "Call " code { (shown(&call.id)) } ": " (shown(&call.name)) }
                        @if let Some(gate) = parts.gates.get(index) {
                            dl.gate {
                                dt { "tool" } dd { (shown(&gate.source)) }
                                dt { "effect" } dd { (shown(&gate.effect)) }
                                dt { "gate" } dd { (shown(&gate.words)) "; " (gate.when_paused) }
                            }
                        }
                        @if let Some(tool) = reviewed {
                            p.description { (shown(&tool.description)) }
                        }
                        h4 { "Arguments" }
                        (json_block(&call.arguments))
                        @if let Some(tool) = reviewed {
                            details {
                                summary { "Parameter schema, as reviewed" }
                                (json_block(&tool.parameters))
                            }
                        }
                    }
                }
                @if open && paused.status().as_str() == "awaiting_approval" {
                    @if let Some(when) = expired_at(paused, parts.now_ms) {
                        (deny_only_form(session, run_id, paused, &format!(
                            "Its time to be approved ran out at {}: it can no longer be approved. Deny it, or ask for it again from the console — `toolgate runs ask-again {}` — which starts its time over with a new digest.",
                            at(when), visible(run_id)
                        )))
                    } @else if own_under_four_eyes(session, paused) {
                        (deny_only_form(session, run_id, paused, FOUR_EYES))
                    } @else if approved_by(history, paused, &session.operator) {
                        h2 { "Decide" }
                        p.note {
                            "You approved this turn; it waits for another approver. An approval "
                            "is given once per person."
                        }
                    } @else if first_approval(history, paused).is_some() {
                        (approve_as_recorded(session, run_id, paused, history))
                        (deny_only_form(session, run_id, paused, ANOTHER_APPROVED))
                    } @else {
                        (decide_forms(session, run_id, paused, parts.retyped.as_ref()))
                        @if may_declare {
                            (from_now_on_forms(session, run_id, paused))
                        }
                    }
                }
                @if open && let SuspendedRun::WaitingForInput(waiting) = paused {
                    (input_form(session, run_id, waiting, parts.retyped.as_ref()))
                }
            }
            @if !unknown.is_empty() {
                (choices(session, run_id, unknown))
            }
            (decisions(history))
            (what_ran(&parts.finished, &history.calls))
        },
    )
}

/// The first approval recorded on the turn as it waits, where it needs
/// several approvers and one approved it already: the verdicts every
/// later approval must repeat.
pub(crate) fn first_approval<'a>(
    history: &'a RunHistory,
    paused: &SuspendedRun,
) -> Option<&'a toolgate_store::StoredDecision> {
    let digest = paused.digest();
    history.decisions.iter().find(|decision| {
        decision.partial
            && decision.record.voided.is_none()
            && decision.record.digest == digest
            && decision
                .record
                .calls
                .iter()
                .any(|call| call.verdict.is_some())
    })
}

/// Whether `operator` approved the turn as it waits already: an approval
/// is given once per person, so none is offered again.
pub(crate) fn approved_by(history: &RunHistory, paused: &SuspendedRun, operator: &str) -> bool {
    let digest = paused.digest();
    history.decisions.iter().any(|decision| {
        decision.partial
            && decision.record.voided.is_none()
            && decision.record.digest == digest
            && toolgate::identity::same_person(&decision.record.decided_by, operator)
    })
}

/// Where the turn needs several approvers and one approved it call by call
/// already: what they approved — each verdict, edited arguments and
/// reasons as recorded — and a form that approves exactly that. A later
/// approver's approval must match the first's; this shows it, rather than
/// the call's original arguments.
fn approve_as_recorded(
    session: &Session,
    run_id: &str,
    paused: &SuspendedRun,
    history: &RunHistory,
) -> Markup {
    let digest = paused.digest();
    let Some(first) = first_approval(history, paused) else {
        return html! {};
    };
    let action = format!("{}/runs/{}/decide", base(session), path_segment(run_id));
    html! {
        h2 { "Approved so far" }
        p {
            (shown(&first.record.decided_by)) " approved this turn call by call; "
            "the run needs another approver, and an approval must be the same verdicts:"
        }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(session.csrf_token);
            input type="hidden" name="digest" value=(digest.as_str());
            input type="hidden" name="verdict" value="calls";
            ul {
                @for call in &first.record.calls {
                    @if let Some(verdict) = &call.verdict {
                        li {
                            code { (shown(&call.call_id)) } " " (shown(&call.tool)) ": " (verdict.as_str())
                            @match verdict {
                                toolgate::suspend::CallVerdict::Approve => {
                                    input type="hidden" name={ "call:" (call.call_id) } value="approve";
                                }
                                toolgate::suspend::CallVerdict::Deny { reason } => {
                                    @if !reason.is_empty() { " — " (shown(reason)) }
                                    input type="hidden" name={ "call:" (call.call_id) } value="deny";
                                    input type="hidden" name={ "reason:" (call.call_id) } value=(reason);
                                }
                                toolgate::suspend::CallVerdict::Edit { arguments } => {
                                    (json_block(arguments))
                                    input type="hidden" name={ "call:" (call.call_id) } value="edit";
                                    input type="hidden" name={ "args:" (call.call_id) } value=(arguments.to_string());
                                }
                            }
                        }
                    }
                }
            }
            button type="submit" { "Approve exactly this" }
        }
    }
}

/// For an operator who may declare tools: approve every call, and let one
/// imported tool of the turn run unattended from now on — one form per
/// tool. Not offered on a run under four eyes or needing several
/// approvers (the store refuses it there too).
fn from_now_on_forms(session: &Session, run_id: &str, paused: &SuspendedRun) -> Markup {
    if toolgate::audit::standing_declaration_problem(&paused.state().options).is_some() {
        return html! {};
    }
    let mut tools: Vec<&str> = paused
        .pending()
        .iter()
        .map(|call| call.name.as_str())
        .filter(|name| name.contains('.'))
        .collect();
    tools.sort_unstable();
    tools.dedup();
    let action = format!("{}/runs/{}/decide", base(session), path_segment(run_id));
    html! {
        @if !tools.is_empty() {
            h3 { "And from now on" }
            p {
                "Approve every call, and declare the tool \"no approval\": its calls to come run "
                "unattended, for its definition as reviewed here, until that definition changes."
            }
            @for tool in &tools {
                form method="post" action=(action) {
                    input type="hidden" name="csrf" value=(session.csrf_token);
                    input type="hidden" name="digest" value=(paused.digest().as_str());
                    input type="hidden" name="verdict" value="approve";
                    input type="hidden" name="allow_tool" value=(tool);
                    button type="submit" { "Approve, and let " (shown(tool)) " run unattended from now on" }
                }
            }
        }
    }
}

/// Whether the signed-in operator asked for `paused`, a run under four
/// eyes: their approval is refused, so none is offered.
fn own_under_four_eyes(session: &Session, paused: &SuspendedRun) -> bool {
    paused.state().options.four_eyes
        && toolgate::identity::same_person(&session.operator, &paused.state().requested_by)
}

/// When the turn's time to be approved ran out, if it did by `now_ms`:
/// it can then be denied or asked again, never approved.
fn expired_at(paused: &SuspendedRun, now_ms: i64) -> Option<i64> {
    let SuspendedRun::AwaitingApproval(waiting) = paused else {
        return None;
    };
    let now = u64::try_from(now_ms).unwrap_or(0);
    if !waiting.is_expired(now) {
        return None;
    }
    waiting
        .expires_at_ms()
        .map(|at| i64::try_from(at).unwrap_or(i64::MAX))
}

/// Why only "deny" is offered to the requester of a run under four eyes.
const FOUR_EYES: &str = "You asked for this run, and it requires four eyes: another operator approves it. You may deny it.";

/// Why only the first approver's verdicts, or "deny", are offered.
const ANOTHER_APPROVED: &str = "Or deny every call: another approval must be the same verdicts as the first, so no other is offered.";

/// Only "deny every call", and `why`: for the requester of a run under
/// four eyes, or beside the first approver's verdicts.
fn deny_only_form(session: &Session, run_id: &str, paused: &SuspendedRun, why: &str) -> Markup {
    html! {
        h2 { "Decide" }
        p.note { (why) }
        form method="post" action={ (base(session)) "/runs/" (path_segment(run_id)) "/decide" } {
            input type="hidden" name="csrf" value=(session.csrf_token);
            input type="hidden" name="digest" value=(paused.digest().as_str());
            (deny_reason())
            button type="submit" name="verdict" value="deny" { "Deny every call" }
        }
    }
}

/// The forms that decide a waiting turn: all at once, or call by call —
/// each call approved as it is, denied, or approved with its arguments
/// edited in fields built from its schema ([`crate::form`]) or as JSON.
/// `retyped`: the call-by-call form as posted, sent back with its errors.
fn decide_forms(
    session: &Session,
    run_id: &str,
    paused: &SuspendedRun,
    retyped: Option<&Retyped>,
) -> Markup {
    let posted = |name: String| retyped.and_then(|r| r.get(&name)).map(str::to_owned);
    let chose =
        |call: &str, choice: &str| posted(format!("call:{call}")).as_deref() == Some(choice);
    html! {
            @let action = format!("{}/runs/{}/decide", base(session), path_segment(run_id));
            h2 { "Decide" }
            form method="post" action=(action) {
                input type="hidden" name="csrf" value=(session.csrf_token);
                input type="hidden" name="digest" value=(paused.digest().as_str());
                button type="submit" name="verdict" value="approve" { "Approve every call" }
                " "
                (deny_reason())
                button type="submit" name="verdict" value="deny" { "Deny every call" }
            }
            p.note {
                "Approving a call that writes asks once more, showing the arguments it will run with."
            }
            h3 { "Call by call" }
            form.calls method="post" action=(action) {
                input type="hidden" name="csrf" value=(session.csrf_token);
                input type="hidden" name="digest" value=(paused.digest().as_str());
                input type="hidden" name="verdict" value="calls";
                @for (index, call) in paused.pending().iter().enumerate() {
                    @let needs = paused.review().tools.get(index).and_then(Option::as_ref).is_none_or(|t| t.needs_approval);
                    @if needs {
                        fieldset {
                            legend { "Call " code { (shown(&call.id)) } ": " (shown(&call.name)) }
                            label { input type="radio" name={ "call:" (call.id) } value="approve" checked[chose(&call.id, "approve")]; " approve" }
                            label { input type="radio" name={ "call:" (call.id) } value="deny" checked[chose(&call.id, "deny")]; " deny, because " }
                            input type="text" name={ "reason:" (call.id) } value=[posted(format!("reason:{}", call.id))] placeholder="the reason the model reads";
                            (crate::form::call_fields(paused, index, call, retyped))
                            label { input type="radio" name={ "call:" (call.id) } value="edit" checked[chose(&call.id, "edit")]; " edit as JSON: approve with these arguments (checked against the schema):" }
                            // JSON whose hidden characters are `\u` escapes:
                            // the same arguments, every character seen.
                            textarea name={ "args:" (call.id) } rows="4" {
                                (posted(format!("args:{}", call.id)).unwrap_or_else(|| visible_json(&call.arguments)))
                            }
                            (json_box_errors(retyped, &crate::run::json_scope(&call.id)))
                        }
                    }
                }
                button type="submit" { "Record these verdicts" }
            }
            p.digest { "Decided on digest " code { (paused.digest().as_str()) } }
    }
}

/// What was wrong with a JSON box as it was sent, beside it: each error
/// with its place in the value (a JSON Pointer), none when it was not sent
/// back.
fn json_box_errors(retyped: Option<&Retyped>, scope: &str) -> Markup {
    let Some(placed) = retyped.and_then(|retyped| retyped.errors.get(scope)) else {
        return html! {};
    };
    html! {
        @for (path, messages) in placed {
            @for message in messages {
                p.field-error {
                    @if !path.is_empty() { code { (shown(path)) } ": " }
                    (shown(message))
                }
            }
        }
    }
}

/// The reason a denial of every call gives the model, as the console's
/// `runs deny --reason` does.
fn deny_reason() -> Markup {
    html! {
        label.reason {
            "Deny, because "
            input type="text" name="reason" placeholder="the reason the model reads";
        }
        " "
    }
}

/// The forms that give a waiting call its input: field by field, built
/// from the schema the call asked for ([`crate::form`]), when the fields
/// can express it; and as JSON, always. `retyped`: the fields as posted,
/// sent back with their errors.
fn input_form(
    session: &Session,
    run_id: &str,
    waiting: &Suspended<WaitingForInput>,
    retyped: Option<&Retyped>,
) -> Markup {
    let action = format!("{}/runs/{}/decide", base(session), path_segment(run_id));
    let digest = waiting.digest();
    html! {
        h2 { "Input" }
        p { "The call " code { (shown(&waiting.input_call().id)) } " of " (shown(waiting.input_tool())) " waits for this input." }
        details {
            summary { "Input schema, as the call asked for it" }
            (json_block(waiting.input_schema().as_value()))
        }
        @match crate::form::input_fields(waiting, retyped) {
            Ok(fields) => {
                form.input-fields method="post" action=(action) {
                    input type="hidden" name="csrf" value=(session.csrf_token);
                    input type="hidden" name="digest" value=(digest.as_str());
                    input type="hidden" name="verdict" value="input-fields";
                    (fields)
                    button type="submit" { "Give this input" }
                }
                h3 { "Or as JSON" }
            }
            Err(crate::form::JsonOnly(why)) => {
                p.note.json-only { "This input is given as JSON only, not field by field: " (shown(&why)) "." }
            }
        }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(session.csrf_token);
            input type="hidden" name="digest" value=(digest.as_str());
            input type="hidden" name="verdict" value="input";
            label { "The input, as JSON (checked against the schema the call asked for):" }
            textarea name="input" rows="6" { (retyped.and_then(|r| r.get("input")).unwrap_or("{}")) }
            (json_box_errors(retyped, &crate::run::json_scope("input")))
            button type="submit" { "Give this input as JSON" }
        }
    }
}

/// Each call whose outcome is unknown, with the choice to run it again or
/// not.
fn choices(session: &Session, run_id: &str, unknown: &[UnknownCall]) -> Markup {
    html! {
        h2 { "Outcome unknown" }
        @for call in unknown {
            section.call {
                h3 { "Call " code { (shown(&call.call_id)) } ": " (shown(&call.tool)) }
                p {
                    "Started and never ended (attempt " (call.attempt) "); it may have run. "
                    "Reruns chosen: " (call.reruns.0) " of " (call.reruns.1) "."
                }
                h4 { "Arguments" }
                (json_block(&call.arguments))
                form method="post" action={ (base(session)) "/runs/" (path_segment(run_id)) "/choose" } {
                    input type="hidden" name="csrf" value=(session.csrf_token);
                    input type="hidden" name="call" value=(call.call_id);
                    input type="hidden" name="digest" value=(call.digest.as_str());
                    input type="text" name="reason" placeholder="why, for the record";
                    " "
                    button type="submit" name="choice" value="rerun" { "Run it again" }
                    " "
                    button type="submit" name="choice" value="skip" { "Do not run it again" }
                }
            }
        }
    }
}

/// The decisions taken on a run: who, through which channel, when, and —
/// when the turn was decided call by call — each call's verdict.
fn decisions(history: &RunHistory) -> Markup {
    html! {
        h2 { "Decisions" }
        @if history.decisions.is_empty() {
            p { "None yet." }
        } @else {
            ul {
                @for decision in &history.decisions {
                    li {
                        (decision.record.verdict.as_str()) " by " (shown(&decision.record.decided_by))
                        @if let Some(channel) = decision.record.channel {
                            " through " (channel.as_str())
                        }
                        " at " (at(i64::try_from(decision.record.at_unix_ms).unwrap_or(i64::MAX)))
                        @if decision.partial { " (one of several approvals)" }
                        @if let Some(why) = &decision.record.voided {
                            " — voided: " (shown(why))
                        }
                        // Call by call, when the turn was decided so.
                        @if decision.record.calls.iter().any(|c| c.verdict.is_some()) {
                            ul {
                                @for call in &decision.record.calls {
                                    @if let Some(verdict) = &call.verdict {
                                        li {
                                            code { (shown(&call.call_id)) } " " (shown(&call.tool)) ": " (verdict.as_str())
                                            @match verdict {
                                                toolgate::suspend::CallVerdict::Deny { reason } => {
                                                    @if !reason.is_empty() { " — " (shown(reason)) }
                                                }
                                                toolgate::suspend::CallVerdict::Edit { arguments } => {
                                                    ", with the arguments"
                                                    (json_block(arguments))
                                                }
                                                toolgate::suspend::CallVerdict::Approve => {}
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
