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

/// The most one message may take to send, whatever the sink does (a relay
/// that never answers, a receiver that trickles): then it is a failure,
/// retried.
pub const SEND_LIMIT: Duration = Duration::from_secs(30);

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
pub use webhook::{signing_secret_problem, slack_body, slack_escape, webhook_body};

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

    /// Delivers until `stop` completes: each sink by a loop of its own —
    /// a round whenever its last one handled something, else after
    /// [`DispatchOptions::poll`] — so that a slow or hung sink delays its
    /// own deliveries alone. A store error is logged and retried; it never
    /// ends a loop. Sinks added later get a loop within a poll.
    pub async fn run(&self, stop: impl Future<Output = ()>) {
        tokio::pin!(stop);
        let (stopping, stopped) = tokio::sync::watch::channel(false);
        let mut loops: std::collections::HashMap<String, tokio::task::JoinHandle<()>> =
            std::collections::HashMap::new();
        let mut rounds: u64 = 0;
        loop {
            match self.store.sinks().await {
                Ok(sinks) => {
                    loops.retain(|_, task| !task.is_finished());
                    for sink in sinks {
                        if loops.contains_key(&sink.name) {
                            continue;
                        }
                        let dispatcher = self.clone();
                        let stopped = stopped.clone();
                        let name = sink.name.clone();
                        loops.insert(
                            sink.name,
                            tokio::spawn(async move { dispatcher.sink_loop(&name, stopped).await }),
                        );
                    }
                }
                Err(error) => tracing::warn!(%error, "notifications: the sinks could not be read"),
            }
            rounds = rounds.wrapping_add(1);
            if rounds.is_multiple_of(7200) {
                match self.store.prune_notifications(self.options.keep).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(events = n, "notifications: settled events deleted"),
                    Err(error) => tracing::warn!(%error, "notifications: pruning failed"),
                }
            }
            tokio::select! {
                () = &mut stop => break,
                () = tokio::time::sleep(self.options.poll) => {}
            }
        }
        let _ = stopping.send(true);
        for (_, task) in loops {
            // A loop mid-send is left to its lease: the delivery is sent
            // again, under the same id.
            task.abort();
            let _ = task.await;
        }
    }

    /// One sink's loop, until `stopped` or the sink is removed.
    async fn sink_loop(&self, sink: &str, mut stopped: tokio::sync::watch::Receiver<bool>) {
        loop {
            let pause = match self.round_of(sink).await {
                Ok(round) if round.handled() > 0 => Duration::ZERO,
                Ok(_) => self.options.poll,
                Err(NotifyError::NoSuchSink(_)) => return,
                Err(error) => {
                    tracing::warn!(%sink, %error, "notifications: a round failed; trying again");
                    self.options.poll
                }
            };
            tokio::select! {
                _ = stopped.wait_for(|stop| *stop) => return,
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// One round over every sink at once: each leases what is due for it,
    /// sends it, and settles each delivery.
    pub async fn round(&self) -> Result<Round, NotifyError> {
        let sinks = self.store.sinks().await?;
        let rounds =
            futures_util::future::join_all(sinks.iter().map(|sink| self.round_of(&sink.name)))
                .await;
        let mut total = Round::default();
        for round in rounds {
            let round = round?;
            total.delivered += round.delivered;
            total.retrying += round.retrying;
            total.given_up += round.given_up;
        }
        Ok(total)
    }

    /// One round of the sink named `name`: up to [`DispatchOptions::batch`]
    /// of its due deliveries, leased and sent one at a time, oldest first.
    async fn round_of(&self, name: &str) -> Result<Round, NotifyError> {
        let mut round = Round::default();
        while round.handled() < self.options.batch {
            let sinks = self.store.sinks().await?;
            let Some(sink) = sinks.iter().find(|s| s.name == name) else {
                return Err(NotifyError::NoSuchSink(name.to_owned()));
            };
            let due = self
                .store
                .lease_deliveries_of(&self.worker, Some(name), self.options.lease, 1)
                .await?;
            let Some(delivery) = due.into_iter().next() else {
                break;
            };
            let result = match tokio::time::timeout(SEND_LIMIT, self.send(sink, &delivery)).await {
                Ok(result) => result,
                Err(_) => Err(NotifyError::Send {
                    reason: format!(
                        "the sink did not take the message within {} s",
                        SEND_LIMIT.as_secs()
                    ),
                }),
            };
            self.settle(&delivery, result, &mut round).await?;
        }
        Ok(round)
    }

    /// Records how sending `delivery` ended.
    async fn settle(
        &self,
        delivery: &Delivery,
        result: Result<(), NotifyError>,
        round: &mut Round,
    ) -> Result<(), NotifyError> {
        match result {
            Ok(()) => {
                if self.store.delivered(delivery, &self.worker).await? {
                    round.delivered += 1;
                    tracing::info!(sink = %delivery.sink, event = delivery.event.as_ref().map_or("", |e| e.id.as_str()), "notification delivered");
                }
            }
            Err(error) => {
                let retry_at = self.retry_at(delivery, &error);
                let text = error.to_string();
                if self
                    .store
                    .delivery_failed(delivery, &self.worker, &text, retry_at)
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
        Ok(())
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
        match tokio::time::timeout(SEND_LIMIT, self.send(sink, &delivery)).await {
            Ok(result) => result,
            Err(_) => Err(NotifyError::Send {
                reason: format!(
                    "the sink did not take the message within {} s",
                    SEND_LIMIT.as_secs()
                ),
            }),
        }
    }

    async fn send(&self, sink: &SinkRecord, delivery: &Delivery) -> Result<(), NotifyError> {
        let Some(mut event) = delivery.event.clone() else {
            return Err(NotifyError::Send {
                reason: "the stored event cannot be read".to_owned(),
            });
        };
        let settings = SinkSettings::of(sink)?;
        // The stricter of the class written with the event and its servers'
        // classes now: an operator who raised a server's class since is
        // obeyed by every message sent after.
        let now = self.store.class_of_servers(&event.data.servers).await?;
        event.data.data_class = event.class().stricter(now).as_stored().map(str::to_owned);
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
    let link = inbox.map(|inbox| toolgate_inbox::run_link(inbox.as_str(), &event.data.run_id));
    let (event, withheld) = event.for_ceiling(sink.max_class);
    Outgoing {
        event,
        link,
        withheld,
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
