//! Following the outbox as it is written: every event is a change of a
//! run — it started waiting, was decided, resumed or expired — with a
//! number that only grows (its row's id), so a reader that knows the
//! number of what it last saw asks for what came after it
//! ([`Store::changes_since`]) and misses nothing.
//!
//! One watcher per store (a handle and its clones) reads the outbox for
//! everyone following it ([`Store::changes`]): on PostgreSQL when the
//! database announces an event (`LISTEN toolgate_run_event`, sent in the
//! transaction that writes it, so on commit) and every few seconds besides;
//! on SQLite every [`POLL_EVERY`]. It reads nothing while no one follows.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use tokio::sync::broadcast;

use super::EventKind;
use crate::db::{Pool, Query};
use crate::{Store, StoreError};

/// How often the watcher reads an SQLite store's outbox while someone
/// follows it.
pub const POLL_EVERY: Duration = Duration::from_secs(1);

/// On PostgreSQL, how often the watcher reads the outbox besides the
/// database's announcements: one lost while its connection was down is
/// late by this much at most.
#[cfg(feature = "postgres")]
const POSTGRES_FALLBACK: Duration = Duration::from_secs(10);

/// How many changes a follower may fall behind before it is told it
/// lagged.
const BACKLOG: usize = 256;

/// The most changes one read of the outbox hands out.
pub const CHANGES_READ: u32 = 200;

/// The channel the outbox's writes are announced on (PostgreSQL).
pub(crate) const CHANNEL: &str = "toolgate_run_event";

/// One change of a run, as the outbox recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunChange {
    /// Its place in the outbox: a later change has a larger number.
    pub seq: i64,
    /// The run.
    pub run_id: String,
    /// What happened; `None` for a kind this build does not know.
    pub kind: Option<EventKind>,
}

/// The watcher's sender, shared by a store's handles; set by the first
/// follower.
pub(crate) type Followers = Arc<OnceLock<broadcast::Sender<RunChange>>>;

impl EventKind {
    /// Reads a stored spelling (`run.decided`, …); `None` for any other.
    pub fn from_stored(text: &str) -> Option<Self> {
        [
            EventKind::Waiting,
            EventKind::Decided,
            EventKind::Resumed,
            EventKind::Expired,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == text)
    }
}

/// # Changes
///
/// The inbox's live pages: what changed since a page was shown.
impl Store {
    /// The number of the newest change (0 before any): a page shown now
    /// shows every change up to it.
    pub async fn change_cursor(&self) -> Result<i64, StoreError> {
        cursor(&self.pool).await
    }

    /// The changes after `since`, oldest first, at most `limit` of them.
    pub async fn changes_since(
        &self,
        since: i64,
        limit: u32,
    ) -> Result<Vec<RunChange>, StoreError> {
        read_since(&self.pool, since, limit).await
    }

    /// Every change from now on, as the store's one watcher reads them
    /// (started by the first follower, and reading nothing while no one
    /// follows). A follower that falls more than a few hundred changes
    /// behind is told it lagged ([`broadcast::error::RecvError::Lagged`]);
    /// a follower that must miss nothing reads [`Store::changes_since`]
    /// the number it last saw, after subscribing.
    ///
    /// Call it inside a Tokio runtime: the first call starts the watcher
    /// there, handing out every change after the newest when it was
    /// called.
    pub async fn changes(&self) -> Result<broadcast::Receiver<RunChange>, StoreError> {
        if let Some(sender) = self.followers.get() {
            return Ok(sender.subscribe());
        }
        // Read before the watcher is set: a follower reading the newest
        // change after this call returns misses nothing between the two.
        let seen = cursor(&self.pool).await?;
        let mut started = false;
        let sender = self.followers.get_or_init(|| {
            started = true;
            broadcast::channel(BACKLOG).0
        });
        let receiver = sender.subscribe();
        if started {
            let pool = self.pool.clone();
            let followers = Arc::downgrade(&self.followers);
            tokio::spawn(watch(pool, followers, seen));
        }
        Ok(receiver)
    }
}

async fn cursor(pool: &Pool) -> Result<i64, StoreError> {
    Query::new("SELECT COALESCE(MAX(id), 0) FROM notification_event")
        .scalar(pool)
        .await
}

async fn read_since(pool: &Pool, since: i64, limit: u32) -> Result<Vec<RunChange>, StoreError> {
    let rows = Query::new(
        "SELECT id, run_id, kind FROM notification_event WHERE id > $1 ORDER BY id LIMIT $2",
    )
    .bind(since)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    let mut changes = Vec::with_capacity(rows.len());
    for row in &rows {
        let kind: String = row.try_get("kind")?;
        changes.push(RunChange {
            seq: row.try_get("id")?,
            run_id: row.try_get("run_id")?,
            kind: EventKind::from_stored(&kind),
        });
    }
    Ok(changes)
}

/// What wakes the watcher: a timer, and on PostgreSQL the database's
/// announcements.
struct Waker {
    every: Duration,
    #[cfg(feature = "postgres")]
    listener: Option<sqlx::postgres::PgListener>,
}

impl Waker {
    #[cfg_attr(
        not(feature = "postgres"),
        allow(clippy::unused_async, reason = "only PostgreSQL connects a listener")
    )]
    async fn new(pool: &Pool) -> Self {
        match pool {
            Pool::Sqlite(_) => Waker {
                every: POLL_EVERY,
                #[cfg(feature = "postgres")]
                listener: None,
            },
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => {
                let listener = match sqlx::postgres::PgListener::connect_with(pool).await {
                    Ok(mut listener) => match listener.listen(CHANNEL).await {
                        Ok(()) => Some(listener),
                        Err(error) => {
                            tracing::warn!(%error, "cannot listen for changed runs; polling only");
                            None
                        }
                    },
                    Err(error) => {
                        tracing::warn!(%error, "cannot listen for changed runs; polling only");
                        None
                    }
                };
                let every = if listener.is_some() {
                    POSTGRES_FALLBACK
                } else {
                    POLL_EVERY
                };
                Waker { every, listener }
            }
        }
    }

    async fn wait(&mut self) {
        #[cfg(feature = "postgres")]
        if let Some(listener) = &mut self.listener {
            tokio::select! {
                note = listener.recv() => {
                    if let Err(error) = note {
                        // It reconnects on the next `recv`; what was
                        // announced meanwhile is read all the same.
                        tracing::debug!(%error, "listener interrupted; reconnecting");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
                () = tokio::time::sleep(self.every) => {}
            }
            return;
        }
        tokio::time::sleep(self.every).await;
    }
}

/// The watcher: reads the outbox after the last change it handed out
/// (`seen` at first), whenever woken and someone follows; ends when every
/// handle of the store is gone.
async fn watch(pool: Pool, followers: Weak<OnceLock<broadcast::Sender<RunChange>>>, mut seen: i64) {
    let mut waker = Waker::new(&pool).await;
    // What was written while the listener connected is read at once.
    let mut first = true;
    loop {
        if !first {
            waker.wait().await;
        }
        first = false;
        // Closing the pool waits for the listener's connection: the
        // watcher ends and hands it back.
        if pool.is_closed() {
            return;
        }
        let Some(sender) = followers
            .upgrade()
            .and_then(|followers| followers.get().cloned())
        else {
            return;
        };
        if sender.receiver_count() == 0 {
            // No one follows: nothing is read. What was written meanwhile
            // is read when someone does; each follower skips what it
            // already saw.
            continue;
        }
        // Everything written since, a read at a time.
        loop {
            match read_since(&pool, seen, CHANGES_READ).await {
                Ok(changes) => {
                    let full = changes.len() == CHANGES_READ as usize;
                    for change in changes {
                        seen = seen.max(change.seq);
                        // No follower left is no error: the next wait
                        // finds none and reads nothing.
                        let _ = sender.send(change);
                    }
                    if !full {
                        break;
                    }
                }
                Err(error) => {
                    if pool.is_closed() {
                        return;
                    }
                    tracing::warn!(%error, "cannot read the outbox; trying again");
                    break;
                }
            }
        }
    }
}
