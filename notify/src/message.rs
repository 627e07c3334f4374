//! What a person is told, in words every sink shares; each sink escapes it
//! for its own medium.

use toolgate_store::outbox::{EventKind, RunEvent, WaitsFor};

/// An event as one sink sends it: the summaries it may see, and the link to
/// the run in the inbox when the dispatcher knows the inbox's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The event, its summaries dropped above the sink's ceiling.
    pub event: RunEvent,
    /// The run's stable address in the inbox
    /// ([`toolgate_inbox::run_link`]).
    pub link: Option<String>,
    /// True when the summaries were withheld for the sink's ceiling.
    pub withheld: bool,
}

/// A short form of a run id for a person's eye: its first 8 characters.
pub fn short_id(run_id: &str) -> &str {
    run_id
        .char_indices()
        .nth(8)
        .map_or(run_id, |(at, _)| &run_id[..at])
}

/// What happened, in a few words: "waits for approval", "was approved by
/// bob", …
pub fn what_happened(event: &RunEvent) -> String {
    let data = &event.data;
    match event.kind {
        EventKind::Waiting => match data.waits_for {
            Some(WaitsFor::Input) => "waits for input".to_owned(),
            Some(WaitsFor::Choice) => {
                "waits for a choice: a call's outcome is unknown (run it again, or skip it)"
                    .to_owned()
            }
            Some(WaitsFor::Approval) | None => "waits for approval".to_owned(),
        },
        EventKind::Decided => {
            let verdict = verdict_words(event);
            if data.decided_by.is_empty() {
                verdict.to_owned()
            } else {
                format!("{verdict} by {}", data.decided_by.join(", "))
            }
        }
        EventKind::Resumed => format!("was resumed by host {}", data.host),
        EventKind::Expired => "expired: decided, and its call was never asked again".to_owned(),
    }
}

/// What a decision was, in words, without who took it.
fn verdict_words(event: &RunEvent) -> &'static str {
    match event.data.verdict.as_deref() {
        Some("approved") => "was approved",
        Some("denied") => "was denied",
        Some("input_submitted") => "was given its input",
        Some("rerun") => "will run the call again",
        Some("skip") => "will skip the call",
        _ => "was decided",
    }
}

/// The tools of the run's pending calls, comma-separated.
pub fn tools(event: &RunEvent) -> String {
    let names: Vec<&str> = event.data.calls.iter().map(|c| c.tool.as_str()).collect();
    if names.is_empty() {
        "(no call)".to_owned()
    } else {
        names.join(", ")
    }
}

/// A one-line subject: "toolgate: run 1a2b3c4d waits for approval —
/// docs.write_note". It names no person: a name is free text, and a
/// subject is where a mail client decodes what it finds (RFC 2047's
/// encoded words).
pub fn subject(event: &RunEvent) -> String {
    let happened = match event.kind {
        EventKind::Decided => verdict_words(event).to_owned(),
        _ => what_happened(event),
    };
    format!(
        "toolgate: run {} {} — {}",
        short_id(&event.data.run_id),
        happened,
        tools(event)
    )
}

/// Who asked, and through what: "alice via claude-code, host gateway".
pub fn origin(event: &RunEvent) -> String {
    let data = &event.data;
    match &data.client {
        Some(client) => format!("{} via {client}, host {}", data.requested_by, data.host),
        None => format!("{}, host {}", data.requested_by, data.host),
    }
}

/// The words said when summaries were withheld.
pub const WITHHELD: &str = "arguments withheld: the run's data class is above this sink's ceiling";

/// The event's time as RFC 3339, UTC.
pub fn timestamp(at_ms: i64) -> String {
    let nanos = i128::from(at_ms) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| at_ms.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc_3339() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(timestamp(1_500), "1970-01-01T00:00:01.5Z");
    }
}
