//! The sinks an operator configures, and the deliveries a dispatcher leases,
//! sends and settles.
//!
//! A delivery is leased before it is sent and settled after: delivered, or
//! failed and due again after a backoff, or given up on. A dispatcher that
//! stops between the two leaves its lease to run out; the delivery is then
//! sent again, under the same event id — at least once, never "at most".

use std::time::Duration;

use toolgate::identity::Operator;

use super::RunEvent;
use crate::db::Query;
use crate::{DataClass, Store, StoreError, now_ms};

/// How a sink is sent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkKind {
    /// A JSON POST signed per the Standard Webhooks specification.
    Webhook,
    /// A Slack incoming webhook (Block Kit).
    Slack,
    /// Email over SMTP.
    Email,
}

impl SinkKind {
    /// The stored spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            SinkKind::Webhook => "webhook",
            SinkKind::Slack => "slack",
            SinkKind::Email => "email",
        }
    }

    /// Reads a stored spelling; `None` for anything else.
    pub fn from_stored(text: &str) -> Option<Self> {
        [SinkKind::Webhook, SinkKind::Slack, SinkKind::Email]
            .into_iter()
            .find(|k| k.as_str() == text)
    }
}

/// A sink to add.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSink {
    /// Its name: lower-case letters, digits, `-` and `_`, at most 64.
    pub name: String,
    /// How it is sent to.
    pub kind: SinkKind,
    /// Its settings, as the dispatcher reads them: addresses, and where each
    /// secret is read from — never a secret itself.
    pub settings: serde_json::Value,
    /// The highest data class it may receive.
    pub max_class: DataClass,
}

/// A sink, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct SinkRecord {
    /// Its name.
    pub name: String,
    /// How it is sent to; `None` for a kind this build does not know.
    pub kind: Option<SinkKind>,
    /// Its settings, as JSON text.
    pub settings: String,
    /// Its ceiling; `None` when the stored class is not one of the six —
    /// then it is sent no summary.
    pub max_class: Option<DataClass>,
    /// Who added it.
    pub created_by: String,
    /// When, in milliseconds since the Unix epoch.
    pub created_at: i64,
}

/// A delivery a dispatcher leased: one event for one sink.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// The event's row.
    pub event_row: i64,
    /// The sink.
    pub sink: String,
    /// Attempts made before this one.
    pub attempts: i64,
    /// The event; `None` when its stored text could not be read (it is then
    /// given up on, with why).
    pub event: Option<RunEvent>,
    /// When the event was written, in milliseconds since the Unix epoch.
    pub created_at: i64,
}

/// Where a sink's deliveries stand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkStatus {
    /// The sink.
    pub name: String,
    /// Its kind, as stored.
    pub kind: String,
    /// Deliveries not yet made.
    pub pending: i64,
    /// Of those, how many failed at least once.
    pub failing: i64,
    /// Deliveries made.
    pub delivered: i64,
    /// Deliveries given up on.
    pub given_up: i64,
    /// The newest failure's reason, of a delivery still pending or given up.
    pub last_error: Option<String>,
    /// When the next pending delivery is due.
    pub next_at: Option<i64>,
    /// When the newest delivery was made.
    pub last_delivered_at: Option<i64>,
}

/// Why a sink's name is unusable; `None` when it is fine.
pub fn sink_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it is empty")
    } else if name.len() > 64 {
        Some("it is longer than 64 characters")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_'))
    {
        Some("use lower-case letters, digits, `-` and `_`")
    } else {
        None
    }
}

impl Store {
    /// Adds a sink: every event written from now on is delivered to it.
    pub async fn add_sink(&self, sink: &NewSink, by: &Operator) -> Result<(), StoreError> {
        if let Some(problem) = sink_name_problem(&sink.name) {
            return Err(StoreError::InvalidSinkName {
                name: toolgate::visible::visible(&sink.name).into_owned(),
                problem,
            });
        }
        let settings =
            serde_json::to_string(&sink.settings).map_err(|source| StoreError::Encode {
                what: "a sink's settings",
                source,
            })?;
        let (_writer, mut tx) = self.write().await?;
        let exists: Option<String> =
            Query::new("SELECT name FROM notification_sink WHERE name = $1")
                .bind(&sink.name)
                .scalar_optional(&mut tx)
                .await?;
        if exists.is_some() {
            return Err(StoreError::SinkExists(sink.name.clone()));
        }
        Query::new(
            "INSERT INTO notification_sink (name, kind, settings, max_class, created_by, created_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&sink.name)
        .bind(sink.kind.as_str())
        .bind(settings)
        .bind(sink.max_class.as_str())
        .bind(by.name())
        .bind(now_ms())
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        tracing::info!(sink = %sink.name, kind = sink.kind.as_str(), by = %by, "notification sink added");
        Ok(())
    }

    /// Removes a sink and every delivery it still had.
    pub async fn remove_sink(&self, name: &str) -> Result<(), StoreError> {
        let (_writer, mut tx) = self.write().await?;
        Query::new("DELETE FROM notification_delivery WHERE sink = $1")
            .bind(name)
            .execute(&mut tx)
            .await?;
        let removed = Query::new("DELETE FROM notification_sink WHERE name = $1")
            .bind(name)
            .execute(&mut tx)
            .await?;
        if removed == 0 {
            return Err(StoreError::NoSuchSink(
                toolgate::visible::visible(name).into_owned(),
            ));
        }
        tx.commit().await?;
        tracing::info!(sink = %name, "notification sink removed");
        Ok(())
    }

    /// Every sink, by name.
    pub async fn sinks(&self) -> Result<Vec<SinkRecord>, StoreError> {
        let rows = Query::new(
            "SELECT name, kind, settings, max_class, created_by, created_at
             FROM notification_sink ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let kind: String = row.try_get("kind")?;
                let max_class: String = row.try_get("max_class")?;
                Ok(SinkRecord {
                    name: row.try_get("name")?,
                    kind: SinkKind::from_stored(&kind),
                    settings: row.try_get("settings")?,
                    max_class: DataClass::from_stored(Some(&max_class)),
                    created_by: row.try_get("created_by")?,
                    created_at: row.try_get("created_at")?,
                })
            })
            .collect()
    }

    /// Leases up to `limit` deliveries that are due, oldest event first, to
    /// `worker` for `lease`: no other dispatcher sends them until the lease
    /// runs out.
    pub async fn lease_deliveries(
        &self,
        worker: &str,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError> {
        self.lease_deliveries_of(worker, None, lease, limit).await
    }

    /// [`Store::lease_deliveries`], of the sink named `sink` alone when one
    /// is named.
    pub async fn lease_deliveries_of(
        &self,
        worker: &str,
        sink: Option<&str>,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError> {
        let now = now_ms();
        let until = now.saturating_add(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX));
        let (_writer, mut tx) = self.write().await?;
        let rows = Query::new(
            "SELECT d.event, d.sink, d.attempts, e.payload, e.created_at
             FROM notification_delivery d JOIN notification_event e ON e.id = d.event
             WHERE d.delivered_at IS NULL AND d.given_up_at IS NULL AND d.next_at <= $1
               AND (d.lease_until IS NULL OR d.lease_until < $1)
               AND ($3 IS NULL OR d.sink = $3)
             ORDER BY d.event, d.sink LIMIT $2",
        )
        .bind(now)
        .bind(i64::from(limit))
        .bind(sink)
        .fetch_all(&mut tx)
        .await?;
        let mut leased = Vec::with_capacity(rows.len());
        for row in &rows {
            let event_row: i64 = row.try_get("event")?;
            let sink: String = row.try_get("sink")?;
            let taken = Query::new(
                "UPDATE notification_delivery SET leased_by = $1, lease_until = $2
                 WHERE event = $3 AND sink = $4 AND delivered_at IS NULL AND given_up_at IS NULL
                   AND (lease_until IS NULL OR lease_until < $5)",
            )
            .bind(worker)
            .bind(until)
            .bind(event_row)
            .bind(&sink)
            .bind(now)
            .execute(&mut tx)
            .await?;
            if taken == 0 {
                continue;
            }
            let payload: String = row.try_get("payload")?;
            leased.push(Delivery {
                event_row,
                sink,
                attempts: row.try_get("attempts")?,
                event: serde_json::from_str(&payload).ok(),
                created_at: row.try_get("created_at")?,
            });
        }
        tx.commit().await?;
        Ok(leased)
    }

    /// Marks a leased delivery delivered. False when `worker`'s lease on it
    /// was lost (another dispatcher may send it again: at least once).
    pub async fn delivered(&self, delivery: &Delivery, worker: &str) -> Result<bool, StoreError> {
        let now = now_ms();
        let (_writer, mut tx) = self.write().await?;
        let marked = Query::new(
            "UPDATE notification_delivery SET delivered_at = $1, attempts = attempts + 1,
                    leased_by = NULL, lease_until = NULL, last_error = NULL
             WHERE event = $2 AND sink = $3 AND leased_by = $4 AND delivered_at IS NULL",
        )
        .bind(now)
        .bind(delivery.event_row)
        .bind(&delivery.sink)
        .bind(worker)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(marked == 1)
    }

    /// Records a leased delivery's failure: due again at `retry_at`, or
    /// given up on when that is `None`.
    pub async fn delivery_failed(
        &self,
        delivery: &Delivery,
        worker: &str,
        error: &str,
        retry_at: Option<i64>,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let (_writer, mut tx) = self.write().await?;
        let marked = Query::new(
            "UPDATE notification_delivery SET attempts = attempts + 1, last_error = $1,
                    next_at = $2, given_up_at = $3, leased_by = NULL, lease_until = NULL
             WHERE event = $4 AND sink = $5 AND leased_by = $6 AND delivered_at IS NULL",
        )
        .bind(error)
        .bind(retry_at.unwrap_or(now))
        .bind(if retry_at.is_none() { Some(now) } else { None })
        .bind(delivery.event_row)
        .bind(&delivery.sink)
        .bind(worker)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(marked == 1)
    }

    /// Where each sink's deliveries stand, by sink name.
    pub async fn notification_status(&self) -> Result<Vec<SinkStatus>, StoreError> {
        let rows = Query::new(
            "SELECT s.name, s.kind,
                    COUNT(CASE WHEN d.delivered_at IS NULL AND d.given_up_at IS NULL THEN 1 END) AS pending,
                    COUNT(CASE WHEN d.delivered_at IS NULL AND d.given_up_at IS NULL AND d.attempts > 0 THEN 1 END) AS failing,
                    COUNT(d.delivered_at) AS delivered,
                    COUNT(d.given_up_at) AS given_up,
                    MIN(CASE WHEN d.delivered_at IS NULL AND d.given_up_at IS NULL THEN d.next_at END) AS next_at,
                    MAX(d.delivered_at) AS last_delivered_at
             FROM notification_sink s LEFT JOIN notification_delivery d ON d.sink = s.name
             GROUP BY s.name, s.kind ORDER BY s.name",
        )
        .fetch_all(&self.pool)
        .await?;
        let mut statuses = Vec::with_capacity(rows.len());
        for row in &rows {
            let name: String = row.try_get("name")?;
            let last_error: Option<String> = Query::new(
                "SELECT last_error FROM notification_delivery
                 WHERE sink = $1 AND last_error IS NOT NULL AND delivered_at IS NULL
                 ORDER BY event DESC LIMIT 1",
            )
            .bind(&name)
            .scalar_optional(&self.pool)
            .await?
            .flatten();
            statuses.push(SinkStatus {
                kind: row.try_get("kind")?,
                pending: row.try_get("pending")?,
                failing: row.try_get("failing")?,
                delivered: row.try_get("delivered")?,
                given_up: row.try_get("given_up")?,
                next_at: row.try_get("next_at")?,
                last_delivered_at: row.try_get("last_delivered_at")?,
                last_error,
                name,
            });
        }
        Ok(statuses)
    }

    /// Deletes events older than `age` whose every delivery is settled
    /// (delivered or given up on) and whose run's suspension is done with,
    /// with those deliveries. The number of events deleted.
    pub async fn prune_notifications(&self, age: Duration) -> Result<u64, StoreError> {
        let before = now_ms().saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX));
        let (_writer, mut tx) = self.write().await?;
        // Settled, and of a suspension done with: the newest event of a
        // live one is what its next event is told from.
        let settled = format!(
            "NOT EXISTS (SELECT 1 FROM notification_delivery d
                          WHERE d.event = notification_event.id
                            AND d.delivered_at IS NULL AND d.given_up_at IS NULL)
             AND NOT EXISTS (SELECT 1 FROM suspended_run s
                          WHERE s.id = notification_event.suspension_id AND ({}))",
            crate::suspension::when::S_NOT_DONE
        );
        Query::new(format!(
            "DELETE FROM notification_delivery WHERE event IN
               (SELECT id FROM notification_event WHERE created_at < $1 AND {settled})"
        ))
        .bind(before)
        .execute(&mut tx)
        .await?;
        let deleted = Query::new(format!(
            "DELETE FROM notification_event WHERE created_at < $1 AND {settled}"
        ))
        .bind(before)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(deleted)
    }
}
