//! toolgate's notifications: the approver is told at once.
//!
//! When a run starts waiting (for approval, for input, or for a choice on a
//! call whose outcome is unknown), and when it is decided, resumed or
//! expires, the store writes an event to its outbox **in the same
//! transaction** as the change ([`toolgate_store::outbox`]). A
//! [`Dispatcher`] delivers each event to every sink the operator configured
//! — a signed webhook, Slack, email — **at least once**: it leases a due
//! delivery, sends it, and marks it delivered only when the sink took it.
//! A dispatcher killed mid-delivery leaves the lease to run out and another
//! (or the same, restarted) sends it again under the same event id, which a
//! webhook receiver de-duplicates on (`webhook-id`). A failure is retried
//! with exponential backoff (1 s doubling to 10 min, jittered) until the
//! event is [`DispatchOptions::give_up_after`] old, and shown by
//! `toolgate notify status`.
//!
//! A sink that is down never slows a run: runs only write the outbox; the
//! dispatcher sends from elsewhere, one sink's slowness bounded by a 10 s
//! timeout per message.
//!
//! **What a message holds**: the run's id and a link to it in the inbox
//! (when the dispatcher knows the inbox's address), what happened, who
//! asked and through which client, each pending call's tool, server and a
//! one-line summary of its arguments — withheld when the run's data class
//! is above the sink's ceiling. Never a digest, a sign-in secret or a
//! session's address: a message can tell a person that something waits, and
//! never decide anything.
//!
//! ```no_run
//! # async fn f(store: toolgate_store::Store) -> Result<(), toolgate_notify::NotifyError> {
//! use toolgate_notify::{DispatchOptions, Dispatcher};
//!
//! let options = DispatchOptions {
//!     inbox_url: Some("https://inbox.example.com/".parse().expect("a URL")),
//!     ..DispatchOptions::default()
//! };
//! let dispatcher = Dispatcher::new(store, options);
//! dispatcher.run(std::future::pending()).await;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::time::Duration;

use toolgate_store::outbox::{Delivery, RunEvent, SinkRecord};
use toolgate_store::{Store, StoreError};
use url::Url;

mod email;
pub mod message;
mod settings;
mod webhook;

pub use email::email_parts;
pub use message::Outgoing;
pub use settings::{EmailSettings, SecretSource, SinkSettings, SlackSettings, WebhookSettings};
pub use webhook::{slack_body, slack_escape, webhook_body};

/// What went wrong sending, or reading a sink.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A secret could not be read. Names where from, never a value.
    #[error("the secret from {source_} cannot be used: {problem}")]
    Secret {
        /// Where the secret was to be read from.
        source_: String,
        /// What is wrong.
        problem: String,
    },
    /// A sink's stored settings cannot be used.
    #[error("sink `{sink}` cannot be used: {problem}")]
    Settings {
        /// The sink.
        sink: String,
        /// What is wrong.
        problem: String,
    },
    /// A message could not be sent.
    #[error("{reason}")]
    Send {
        /// Why, without any secret.
        reason: String,
    },
    /// No sink has that name.
    #[error("no notification sink is named `{0}`")]
    NoSuchSink(String),
}

/// How a dispatcher works.
#[derive(Debug, Clone)]
pub struct DispatchOptions {
    /// The inbox's public address, for links to runs; none, no link.
    pub inbox_url: Option<Url>,
    /// How often the outbox is read when it was empty.
    pub poll: Duration,
    /// How long a leased delivery is this dispatcher's.
    pub lease: Duration,
    /// How many deliveries one round leases.
    pub batch: u32,
    /// An event older than this is given up on.
    pub give_up_after: Duration,
    /// Settled events older than this are deleted.
    pub keep: Duration,
}

impl Default for DispatchOptions {
    fn default() -> Self {
        Self {
            inbox_url: None,
            poll: Duration::from_millis(500),
            lease: Duration::from_mins(1),
            batch: 32,
            give_up_after: Duration::from_hours(72),
            keep: Duration::from_hours(30 * 24),
        }
    }
}

/// What one round did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Round {
    /// Deliveries made.
    pub delivered: u32,
    /// Deliveries that failed and are due again.
    pub retrying: u32,
    /// Deliveries given up on.
    pub given_up: u32,
}

impl Round {
    /// Deliveries this round handled.
    pub fn handled(&self) -> u32 {
        self.delivered + self.retrying + self.given_up
    }
}

/// Delivers the outbox.
#[derive(Debug, Clone)]
pub struct Dispatcher {
    store: Store,
    options: DispatchOptions,
    worker: String,
    http: reqwest::Client,
}

impl Dispatcher {
    /// A dispatcher of `store`'s outbox.
    pub fn new(store: Store, options: DispatchOptions) -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Self {
            store,
            options,
            worker: format!("notify/{}", uuid::Uuid::new_v4().simple()),
            http,
        }
    }

    /// Delivers until `stop` completes: a round whenever the last one
    /// handled something, else after [`DispatchOptions::poll`]. A store
    /// error is logged and retried; it never ends the loop.
    pub async fn run(&self, stop: impl Future<Output = ()>) {
        tokio::pin!(stop);
        let mut rounds: u64 = 0;
        loop {
            let busy = match self.round().await {
                Ok(round) => round.handled() > 0,
                Err(error) => {
                    tracing::warn!(%error, "notifications: a round failed; trying again");
                    false
                }
            };
            rounds = rounds.wrapping_add(1);
            if rounds.is_multiple_of(7200) {
                match self.store.prune_notifications(self.options.keep).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(events = n, "notifications: settled events deleted"),
                    Err(error) => tracing::warn!(%error, "notifications: pruning failed"),
                }
            }
            let pause = if busy {
                Duration::ZERO
            } else {
                self.options.poll
            };
            tokio::select! {
                () = &mut stop => return,
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// One round: leases what is due, sends it, settles each delivery.
    pub async fn round(&self) -> Result<Round, NotifyError> {
        let due = self
            .store
            .lease_deliveries(&self.worker, self.options.lease, self.options.batch)
            .await?;
        let mut round = Round::default();
        if due.is_empty() {
            return Ok(round);
        }
        let sinks = self.store.sinks().await?;
        for delivery in due {
            let result = match sinks.iter().find(|s| s.name == delivery.sink) {
                Some(sink) => self.send(sink, &delivery).await,
                None => Err(NotifyError::NoSuchSink(delivery.sink.clone())),
            };
            match result {
                Ok(()) => {
                    if self.store.delivered(&delivery, &self.worker).await? {
                        round.delivered += 1;
                        tracing::info!(sink = %delivery.sink, event = delivery.event.as_ref().map_or("", |e| e.id.as_str()), "notification delivered");
                    }
                }
                Err(error) => {
                    let retry_at = self.retry_at(&delivery, &error);
                    let text = error.to_string();
                    if self
                        .store
                        .delivery_failed(&delivery, &self.worker, &text, retry_at)
                        .await?
                    {
                        if retry_at.is_some() {
                            round.retrying += 1;
                            tracing::warn!(sink = %delivery.sink, attempts = delivery.attempts + 1, error = %text, "notification not delivered; it is retried");
                        } else {
                            round.given_up += 1;
                            tracing::error!(sink = %delivery.sink, error = %text, "notification given up on");
                        }
                    }
                }
            }
        }
        Ok(round)
    }

    /// Sends a sample event to the sink named `name` now, outside the
    /// outbox: to check its settings and secrets.
    pub async fn send_test(&self, name: &str) -> Result<(), NotifyError> {
        let sinks = self.store.sinks().await?;
        let sink = sinks
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| NotifyError::NoSuchSink(name.to_owned()))?;
        let event: RunEvent = serde_json::from_value(serde_json::json!({
            "type": "run.waiting",
            "id": format!("evt_test_{}", uuid::Uuid::new_v4().simple()),
            "at_ms": now_ms(),
            "data": {
                "run_id": "00000000-0000-4000-8000-000000000000",
                "waits_for": "approval",
                "requested_by": "toolgate notify test",
                "host": "test",
                "calls": [{"tool": "example.write_note", "server": "example", "summary": "{\"title\":\"a test of this sink\"}"}],
            }
        }))
        .map_err(|e| NotifyError::Send {
            reason: format!("the sample event could not be built: {e}"),
        })?;
        let delivery = Delivery {
            event_row: 0,
            sink: sink.name.clone(),
            attempts: 0,
            event: Some(event),
            created_at: now_ms(),
        };
        self.send(sink, &delivery).await
    }

    async fn send(&self, sink: &SinkRecord, delivery: &Delivery) -> Result<(), NotifyError> {
        let Some(event) = delivery.event.clone() else {
            return Err(NotifyError::Send {
                reason: "the stored event cannot be read".to_owned(),
            });
        };
        let settings = SinkSettings::of(sink)?;
        let out = outgoing(event, sink, self.options.inbox_url.as_ref());
        match &settings {
            SinkSettings::Webhook(s) => webhook::send_webhook(&self.http, s, &out).await,
            SinkSettings::Slack(s) => webhook::send_slack(&self.http, s, &out).await,
            SinkSettings::Email(s) => email::send_email(s, &out).await,
        }
    }

    /// When a failed delivery is due again: exponential backoff from one
    /// second, at most ten minutes, jittered by a fifth; `None` — given up —
    /// once the event is older than the give-up age, or when it can never
    /// be sent.
    fn retry_at(&self, delivery: &Delivery, error: &NotifyError) -> Option<i64> {
        delivery.event.as_ref()?;
        if let NotifyError::NoSuchSink(_) = error {
            return None;
        }
        let now = now_ms();
        let age = now.saturating_sub(delivery.created_at);
        let give_up = i64::try_from(self.options.give_up_after.as_millis()).unwrap_or(i64::MAX);
        if age >= give_up {
            return None;
        }
        let exponent = u32::try_from(delivery.attempts.clamp(0, 20)).unwrap_or(20);
        let base = 1_000_i64.saturating_mul(1_i64 << exponent).min(600_000);
        // ±20 %: dispatchers and receivers that failed together do not
        // retry together.
        let jitter = fastrand::i64(-(base / 5)..=(base / 5));
        Some(now.saturating_add(base + jitter))
    }
}

/// The event as `sink` is sent it: summaries withheld above its ceiling
/// (and for a sink whose ceiling cannot be read), and the link to the run.
pub fn outgoing(event: RunEvent, sink: &SinkRecord, inbox: Option<&Url>) -> Outgoing {
    let fits = sink.max_class.is_some_and(|max| event.class().fits(max));
    let has_summaries = event.data.calls.iter().any(|c| c.summary.is_some());
    let link = inbox.map(|inbox| toolgate_inbox::run_link(inbox.as_str(), &event.data.run_id));
    let event = match sink.max_class {
        Some(max) if fits => event.for_ceiling(max),
        _ => {
            let mut event = event;
            for call in &mut event.data.calls {
                call.summary = None;
            }
            event
        }
    };
    Outgoing {
        event,
        link,
        withheld: !fits && has_summaries,
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
