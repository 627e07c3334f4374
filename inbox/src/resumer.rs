//! Who resumes a run once it is decided, and whether such a host has been
//! seen lately — in what the store can know: a host's heartbeat
//! ([`toolgate_store::Store::host_seen`]), written while it looks for
//! work. A gateway's run of one call has no host to start: it runs when its
//! client asks for the call again, and the page says so — never "start
//! `toolgate host`".

use std::time::Duration;

use maud::{Markup, html};
use toolgate_store::HostSeen;

use crate::pages::{at, shown};

/// A host seen looking for work within this long is "seen lately".
pub(crate) const LATELY: Duration = Duration::from_mins(1);

/// What the page knows of the host that resumes a run.
pub(crate) enum Resumer {
    /// A gateway's run of one call: its client asking again runs it.
    Client {
        /// The gateway's host name.
        gateway: String,
    },
    /// A host that resumes runs with a model, and what the store knows of
    /// it.
    Host(Result<HostSeen, String>),
}

/// Who resumes the run owned by `owner` and, for a host, whether it has
/// been seen; `done` when the run needs no host any more.
pub(crate) fn resumer(resumer: &Resumer, owner: &str, done: bool, now_ms: i64) -> Markup {
    html! {
        h2 { "Who resumes it" }
        @match resumer {
            Resumer::Client { gateway } if done => {
                p {
                    "A run of one call, held by gateway " code { (shown(gateway)) } ": "
                    "it was resumed when its client asked for the call again."
                }
            }
            Resumer::Client { gateway } => {
                p {
                    "A run of one call, held by gateway " code { (shown(gateway)) } ". "
                    "Once it is decided, it runs when its client asks for the call again — "
                    "any gateway of that name serves the call then. There is no host to start."
                }
            }
            Resumer::Host(Ok(_)) if done => {
                p { "Host " code { (shown(owner)) } " resumed it." }
            }
            Resumer::Host(Ok(seen)) => {
                p {
                    "Host " code { (shown(owner)) } " resumes it once it is decided: "
                    "a process of that name claims it and runs the turn."
                }
                p.seen { (seen_words(seen, now_ms)) }
            }
            Resumer::Host(Err(why)) => {
                p {
                    "Host " code { (shown(owner)) } " resumes it once it is decided. "
                    "Whether such a host was seen could not be read: " (shown(why))
                }
            }
        }
    }
}

fn seen_words(seen: &HostSeen, now_ms: i64) -> Markup {
    let host = &seen.host;
    match seen.seen_at {
        Some(when) if seen.seen_within(LATELY, now_ms) => html! {
            "Seen lately: a process of host " code { (shown(host)) } " looked for work at "
            (at(when)) " (" (ago(now_ms.saturating_sub(when))) " ago)."
        },
        Some(when) => html! {
            span.problem { "Not seen lately" } ": a process of host " code { (shown(host)) }
            " last looked for work at " (at(when)) " (" (ago(now_ms.saturating_sub(when)))
            " ago): it may be busy resuming another run, or stopped. If none runs ("
            code { "toolgate host --name " (shown(host)) }
            " on a machine that holds its tools and model), a decision is recorded and waits."
        },
        None => html! {
            span.problem { "Never seen" } ": no process of host " code { (shown(host)) }
            " has looked for work since this store began recording it. Until one runs ("
            code { "toolgate host --name " (shown(host)) } " on a machine that holds its tools "
            "and model), a decision is recorded and waits."
        },
    }
}

/// A span of milliseconds, roughly, in words.
fn ago(ms: i64) -> String {
    let seconds = ms.max(0) / 1000;
    match seconds {
        0..60 => format!("{seconds} s"),
        60..3600 => format!("{} min", seconds / 60),
        3600..86_400 => format!("{} h", seconds / 3600),
        _ => format!("{} days", seconds / 86_400),
    }
}
