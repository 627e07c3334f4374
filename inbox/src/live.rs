//! Live pages: the list and a run's page follow the runs as they change —
//! a run starts waiting, is decided (here or elsewhere), resumes or
//! expires — through server-sent events (`/s/KEY/events`), without a
//! reload.
//!
//! - **What a page is sent** is what changed, never what anyone wrote: an
//!   event `run` whose data is the run's id and the kind of change
//!   (`{"run":"…","kind":"decided"}`), numbered by the store's outbox
//!   ([`toolgate_store::Store::changes`]). The inbox's script reads the
//!   list again from its own address, or, on a run's page, says the run
//!   changed and disables the page's buttons; it writes no text it was
//!   sent into the page.
//! - **Nothing is missed.** A page is shown with the number of the newest
//!   change (`since`); the stream starts after it, and a reconnecting
//!   browser's `Last-Event-ID` carries on from the last event it saw.
//! - **Bounded.** At most [`STREAMS_PER_SESSION`] streams per session
//!   (a browser opens few connections to one host, and pages must still
//!   load) and [`STREAMS`] in all; one more is refused, and its page
//!   works as it would without the script. Each stream is sent a comment
//!   every [`KEEP_ALIVE`] so proxies keep it open.
//! - **Only while signed in.** The stream is opened under the same checks
//!   as the session's pages, its session looked up again at least every
//!   [`SESSION_CHECK`] and before any change is sent: a session that ended —
//!   signed out, revoked, expired — is sent nothing more, and its stream
//!   ends. A request outside a session is answered `204 No Content`,
//!   which tells a browser to stop reconnecting.
//! - **Without JavaScript** the pages are what they were: the stream is
//!   only opened by the script.
//! - **Shutting down.** A stream never ends by itself, and a graceful
//!   shutdown waits for every connection: [`crate::Inbox::close_streams`]
//!   ends them.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;
use tokio::sync::{broadcast, watch};
use toolgate_store::Session;
use toolgate_store::outbox::{CHANGES_READ, EventKind, RunChange};

use crate::Inbox;
use crate::guard::session_of;
use crate::pages::{base, path_segment};

/// How many event streams one session may hold open at once.
pub const STREAMS_PER_SESSION: usize = 4;

/// How many event streams the inbox holds open at once.
pub const STREAMS: usize = 64;

/// How often a stream's session is looked up again, at the longest.
pub const SESSION_CHECK: Duration = Duration::from_secs(5);

/// How often a quiet stream is sent a comment.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long a browser waits before it reconnects a stream that broke.
const RETRY: Duration = Duration::from_secs(3);

/// The event streams open now, per session key; and whether the inbox is
/// closing them all.
pub(crate) struct Streams {
    open: Mutex<HashMap<String, usize>>,
    closing: watch::Sender<bool>,
}

impl Default for Streams {
    fn default() -> Self {
        Streams {
            open: Mutex::default(),
            closing: watch::channel(false).0,
        }
    }
}

/// One open stream, counted until it is dropped.
struct Slot {
    streams: Arc<Streams>,
    key: String,
}

impl Streams {
    /// Ends every stream, and opens none from now on.
    pub(crate) fn close(&self) {
        self.closing.send_replace(true);
    }

    /// A slot for a stream of session `key`, or `None` when the session or
    /// the inbox holds as many as it may.
    fn take(streams: &Arc<Streams>, key: &str) -> Option<Slot> {
        let mut open = streams.open.lock().unwrap_or_else(PoisonError::into_inner);
        let all: usize = open.values().sum();
        let theirs = open.get(key).copied().unwrap_or(0);
        if all >= STREAMS || theirs >= STREAMS_PER_SESSION {
            return None;
        }
        open.insert(key.to_owned(), theirs + 1);
        Some(Slot {
            streams: Arc::clone(streams),
            key: key.to_owned(),
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self
            .streams
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// The number of the newest change, for a page shown now: `None` when it
/// cannot be read (the page then does not follow).
pub(crate) async fn since(inbox: &Inbox) -> Option<i64> {
    match inbox.store().change_cursor().await {
        Ok(since) => Some(since),
        Err(error) => {
            tracing::warn!(%error, "the page will not follow the runs");
            None
        }
    }
}

/// Where a page shown after change `since` follows the runs.
fn events_address(session: &Session, since: i64) -> String {
    format!("{}/events?since={since}", base(session))
}

/// For the list: where it follows every run. Nothing shown.
pub(crate) fn list_follows(session: &Session, since: Option<i64>) -> Markup {
    html! {
        @if let Some(since) = since {
            div #live hidden data-live="list" data-events=(events_address(session, since)) {}
        }
    }
}

/// For a run's page: where it follows the run, and what it says — once
/// the run changed under the operator — before they act. Hidden until
/// then; the script shows it, says how the run changed, and disables the
/// page's buttons.
pub(crate) fn run_follows(session: &Session, run_id: &str, since: Option<i64>) -> Markup {
    let fresh = format!("{}/runs/{}", base(session), path_segment(run_id));
    html! {
        @if let Some(since) = since {
            div #live .changed role="alert" hidden data-live="run" data-run-id=(run_id)
                data-events=(events_address(session, since)) {
                strong { "This run changed since this page was shown" }
                span .how {}
                ". Its buttons here no longer act. "
                a href=(fresh) { "See the run as it is now" }
            }
        }
    }
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct EventsQuery {
    since: Option<i64>,
}

/// The event stream of session `key`: every change of a run after
/// `since` (or the browser's `Last-Event-ID`), until the session ends.
pub(crate) async fn events(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path(key): Path<String>,
    Query(query): Query<EventsQuery>,
) -> Response {
    // Outside a session: no stream, and a browser stops asking.
    let Ok((secret, session)) = session_of(&inbox, &headers, &key).await else {
        return StatusCode::NO_CONTENT.into_response();
    };
    let closing = inbox.inner.streams.closing.subscribe();
    if *closing.borrow() {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let Some(slot) = Streams::take(&inbox.inner.streams, &session.csrf_token) else {
        tracing::warn!(operator = %toolgate::visible::visible(&session.operator), "too many event streams; one more refused");
        return StatusCode::TOO_MANY_REQUESTS.into_response();
    };
    // Subscribed first, read after: a change in between is in both, and
    // sent once.
    let followed = match inbox.store().changes().await {
        Ok(changes) => inbox
            .store()
            .change_cursor()
            .await
            .map(|newest| (changes, newest)),
        Err(error) => Err(error),
    };
    let (changes, newest) = match followed {
        Ok(followed) => followed,
        Err(error) => {
            tracing::warn!(%error, "cannot follow the runs");
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
    };
    let resumed = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<i64>().ok());
    // A number from later than the newest change is no number the inbox
    // gave: the page follows from now.
    let since = resumed.or(query.since).unwrap_or(newest).min(newest);
    let mut follow = Follow {
        inbox: inbox.clone(),
        secret,
        key: session.csrf_token,
        changes,
        queued: VecDeque::from([Event::default().retry(RETRY).comment("following")]),
        last: since,
        checked: true,
        closing,
        check: tokio::time::interval_at(tokio::time::Instant::now() + SESSION_CHECK, SESSION_CHECK),
        _slot: slot,
    };
    if since < newest {
        match inbox.store().changes_since(since, CHANGES_READ).await {
            Ok(missed) => {
                if missed.len() == CHANGES_READ as usize {
                    follow.queued.push_back(many());
                    follow.last = newest;
                } else {
                    for change in &missed {
                        follow.take(change);
                    }
                }
            }
            Err(error) => {
                tracing::warn!(%error, "cannot read the changes a page missed");
                follow.queued.push_back(many());
                follow.last = newest;
            }
        }
    }
    let stream = futures_util::stream::unfold(follow, |mut follow| async move {
        follow
            .next()
            .await
            .map(|event| (Ok::<_, Infallible>(event), follow))
    });
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    // A buffering proxy in front would hold the events back.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// One stream: what it still has to send, the changes it follows, and its
/// session, looked up again as it goes.
struct Follow {
    inbox: Inbox,
    secret: String,
    key: String,
    changes: broadcast::Receiver<RunChange>,
    queued: VecDeque<Event>,
    /// The newest change sent (or the page already showed).
    last: i64,
    /// Whether the session was found live since the changes queued came.
    checked: bool,
    check: tokio::time::Interval,
    /// Set when the inbox shuts down: the stream ends.
    closing: watch::Receiver<bool>,
    _slot: Slot,
}

impl Follow {
    /// Queues `change`, unless it was sent or shown already.
    fn take(&mut self, change: &RunChange) {
        if change.seq > self.last {
            self.last = change.seq;
            self.queued.push_back(event_of(change));
            self.checked = false;
        }
    }

    /// Whether the session is still live: signed in, not revoked, not
    /// expired, its key the stream's. A store that cannot say ends the
    /// stream too; the browser asks again, and is let in only signed in.
    async fn live(&mut self) -> bool {
        let live = matches!(
            self.inbox.store().session(&self.secret).await,
            Ok(Some(session)) if session.csrf_token == self.key
        );
        self.checked = live;
        live
    }

    /// The next event to send; `None` ends the stream.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.queued.pop_front() {
                // Looked up once for the changes that came together.
                if !self.checked && !self.live().await {
                    return None;
                }
                return Some(event);
            }
            tokio::select! {
                received = self.changes.recv() => match received {
                    Ok(change) => self.take(&change),
                    // Too far behind to say which: every page reads again.
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        self.queued.push_back(many());
                        self.checked = false;
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                // Closing, or the inbox gone: the stream ends either way.
                _ = self.closing.changed() => return None,
                _ = self.check.tick() => {
                    if !self.live().await {
                        return None;
                    }
                }
            }
        }
    }
}

/// The event of one change: the run and what happened, numbered.
fn event_of(change: &RunChange) -> Event {
    let kind = match change.kind {
        Some(EventKind::Waiting) => "waiting",
        Some(EventKind::Decided) => "decided",
        Some(EventKind::Resumed) => "resumed",
        Some(EventKind::Expired) => "expired",
        None => "changed",
    };
    Event::default()
        .event("run")
        .id(change.seq.to_string())
        .data(serde_json::json!({ "run": change.run_id, "kind": kind }).to_string())
}

/// More changed than can be told one by one: any run may have changed.
fn many() -> Event {
    Event::default()
        .event("run")
        .data(serde_json::json!({ "run": null, "kind": "many" }).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inbox_holds_a_bounded_number_of_streams_in_all() {
        let streams = Arc::new(Streams::default());
        let mut held: Vec<Slot> = (0..STREAMS)
            .map(|n| Streams::take(&streams, &format!("session-{}", n % 20)))
            .collect::<Option<_>>()
            .expect("each session under its own bound");
        assert!(
            Streams::take(&streams, "another").is_none(),
            "one more in all is refused, whatever its session"
        );
        drop(held.pop());
        assert!(Streams::take(&streams, "another").is_some());
        drop(held);
        let open = streams.open.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(open.is_empty(), "every slot given back: {open:?}");
    }
}
