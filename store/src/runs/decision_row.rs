//! A decision's row: written once, tagged under the store's key when it has
//! one, and linked into the suspension's chain.

use toolgate::audit::DecisionRecord;
use toolgate::identity;

use crate::db::{Query, Tx};
use crate::{Store, StoreError};

use super::{ClaimError, verdict_text};

impl Store {
    /// Writes a decision row, tagged under the key when there is one.
    pub(super) async fn insert_decision(
        &self,
        tx: &mut Tx,
        suspension_id: i64,
        record: &DecisionRecord,
        input: Option<String>,
        calls_text: Option<String>,
        partial: bool,
    ) -> Result<(), ClaimError> {
        let now = i64::try_from(record.at_unix_ms).unwrap_or(i64::MAX);
        let run_id = record.run_id.as_str();
        let verdict = record.verdict;
        let tools = serde_json::to_string(&record.tools).map_err(|source| StoreError::Encode {
            what: "the tool names",
            source,
        })?;
        let mac = self.key().map(|key| {
            key.tag(&crate::tags::decision(
                suspension_id,
                record,
                input.as_deref(),
            ))
        });
        let revision: i64 = Query::new("SELECT value FROM operator_revision WHERE id = 1")
            .scalar(&mut *tx)
            .await?;
        let id = Query::new(
            "INSERT INTO decision (suspension_id, run_id, verdict, decided_by, decided_by_source, requested_by, self_decided, digest, tools, decided_at, mac, input, calls, policy_revision, partial, channel)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
             RETURNING id",
        )
        .bind(suspension_id)
        .bind(run_id)
        .bind(verdict_text(verdict))
        .bind(&record.decided_by)
        .bind(record.decided_by_source.as_str())
        .bind(&record.requested_by)
        .bind(i64::from(record.self_decided))
        .bind(record.digest.as_str())
        .bind(tools)
        .bind(now)
        .bind(mac.clone())
        .bind(input)
        .bind(calls_text)
        .bind(revision)
        .bind(i64::from(partial))
        .bind(record.channel.map(identity::Channel::as_str))
        .scalar::<i64>(&mut *tx)
        .await?;
        if let Some(mac) = &mac {
            crate::chain::append(
                tx,
                self.key(),
                suspension_id,
                crate::chain::Event::Decision { id, mac },
            )
            .await?;
        }
        Ok(())
    }
}
