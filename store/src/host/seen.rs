//! A host's heartbeat: when a process of each host name last looked for
//! work, so that a run's page can say whether the host that resumes it has
//! been seen lately. Shown, never acted on — no claim or lease reads it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::db::Query;
use crate::{Store, StoreError, now_ms};

use super::Host;

/// How often, at most, a host writes that it was seen: each look for work
/// ([`Host::next`], [`Host::claim_run`], [`Host::wait`]) writes it when
/// the last write is older than this.
pub const HOST_HEARTBEAT: Duration = Duration::from_secs(10);

/// When hosts of one name were last seen looking for work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSeen {
    /// The host's name.
    pub host: String,
    /// When a process of it last looked for work, in milliseconds since the
    /// Unix epoch; `None` when none ever did (or not since the store
    /// recorded it).
    pub seen_at: Option<i64>,
}

impl HostSeen {
    /// True when a process of the host looked for work within `within` of
    /// `now_ms`.
    pub fn seen_within(&self, within: Duration, now_ms: i64) -> bool {
        let within = i64::try_from(within.as_millis()).unwrap_or(i64::MAX);
        self.seen_at
            .is_some_and(|at| now_ms.saturating_sub(at) <= within)
    }
}

impl Host {
    /// Records that this host looks for work now, at most every
    /// [`HOST_HEARTBEAT`]. A heartbeat that cannot be written is logged and
    /// does not stop the host: it is shown, never acted on.
    pub(super) async fn heartbeat(&self) {
        let now = now_ms();
        let heartbeat = i64::try_from(HOST_HEARTBEAT.as_millis()).unwrap_or(i64::MAX);
        let last = self.seen_at.load(Ordering::Relaxed);
        if now.saturating_sub(last) < heartbeat {
            return;
        }
        self.seen_at.store(now, Ordering::Relaxed);
        if let Err(error) = self.write_heartbeat(now).await {
            self.seen_at.store(last, Ordering::Relaxed);
            tracing::warn!(host = %self.name, %error, "the host's heartbeat was not recorded");
        }
    }

    async fn write_heartbeat(&self, now: i64) -> Result<(), StoreError> {
        let (_writer, mut tx) = self.store.write().await?;
        Query::new(
            "INSERT INTO host_seen (host, seen_at) VALUES ($1, $2)
             ON CONFLICT (host) DO UPDATE SET seen_at = excluded.seen_at
             WHERE host_seen.seen_at < excluded.seen_at",
        )
        .bind(self.name.as_str())
        .bind(now)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }
}

/// # Hosts seen
impl Store {
    /// When a process of the host named `host` last looked for work to
    /// claim (its heartbeat, written at most every [`HOST_HEARTBEAT`]).
    pub async fn host_seen(&self, host: &str) -> Result<HostSeen, StoreError> {
        let seen_at: Option<i64> = Query::new("SELECT seen_at FROM host_seen WHERE host = $1")
            .bind(host)
            .scalar_optional(&self.pool)
            .await?;
        Ok(HostSeen {
            host: host.to_owned(),
            seen_at,
        })
    }
}
