//! Suspended runs in the store, and the atomic claim that lets exactly one of
//! any number of concurrent deciders win.

use sqlx::Row;
use toolgate::{
    BoxFuture, CorruptState, DecisionLog, DecisionRecord, LogError, SuspendedRun, TurnDigest,
    Verdict,
};

use crate::{Store, StoreError, now_ms};

/// A stored run could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// No open suspension for that run.
    #[error("no suspended run `{0}` waits for a decision")]
    NotFound(String),
    /// The stored document does not decode; the row is left as it is for an
    /// operator to inspect.
    #[error("suspended run `{run_id}` is stored but unreadable: {error}")]
    Corrupt {
        /// The run.
        run_id: String,
        /// Why.
        error: CorruptState,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A claim was not granted.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// No such run waits.
    #[error("no suspended run `{0}` waits for a decision")]
    NotFound(String),
    /// Someone decided first.
    #[error("run `{run_id}` was already decided{}", by.as_ref().map(|b| format!(" by `{b}`")).unwrap_or_default())]
    AlreadyDecided {
        /// The run.
        run_id: String,
        /// Who won.
        by: Option<String>,
    },
    /// The decision does not name the pending turn.
    #[error(
        "the decision does not name the pending turn of run `{run_id}` (expected digest {expected}): the reviewed turn is unknown"
    )]
    StaleDigest {
        /// The run.
        run_id: String,
        /// The pending turn's digest.
        expected: TurnDigest,
    },
    /// The stored document does not decode; nothing was changed.
    #[error("suspended run `{run_id}` is stored but unreadable, and was left untouched: {error}")]
    Corrupt {
        /// The run.
        run_id: String,
        /// Why.
        error: CorruptState,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for ClaimError {
    fn from(error: sqlx::Error) -> Self {
        ClaimError::Store(StoreError::Database(error))
    }
}

/// A won claim: the run, and the decision row written with it.
#[derive(Debug)]
pub struct Claim {
    /// The suspension row that was claimed.
    pub suspension_id: i64,
    /// The run, as stored.
    pub run: SuspendedRun,
    /// The decision, as written.
    pub record: DecisionRecord,
}

impl Claim {
    /// A decision log that accepts exactly this claim's decision (already
    /// written with the claim) and refuses any other.
    pub fn log(&self) -> ClaimedLog {
        ClaimedLog {
            record: self.record.clone(),
        }
    }
}

/// The decision log for a claimed decision: the row was written in the
/// claim's transaction, so recording checks that the decision taken is the
/// one claimed.
#[derive(Debug, Clone)]
pub struct ClaimedLog {
    record: DecisionRecord,
}

impl DecisionLog for ClaimedLog {
    fn record<'a>(&'a self, record: &'a DecisionRecord) -> BoxFuture<'a, Result<(), LogError>> {
        let claimed = &self.record;
        let matches = record.run_id == claimed.run_id
            && record.digest == claimed.digest
            && record.verdict == claimed.verdict
            && record.decided_by == claimed.decided_by;
        Box::pin(async move {
            if matches {
                Ok(())
            } else {
                Err(LogError(format!(
                    "the decision ({} by {}) is not the one claimed ({} by {})",
                    record.verdict.as_str(),
                    record.decided_by,
                    claimed.verdict.as_str(),
                    claimed.decided_by
                )))
            }
        })
    }
}

/// One open suspension, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenRun {
    /// The suspension row.
    pub suspension_id: i64,
    /// The run.
    pub run_id: String,
    /// `awaiting_approval` or `waiting_for_input`, as stored.
    pub status: String,
    /// The pending turn's digest, as stored.
    pub digest: String,
    /// Who started the run.
    pub requested_by: String,
    /// When it suspended.
    pub created_at: i64,
    /// Why the stored document does not decode, if it does not.
    pub problem: Option<String>,
}

/// A verdict's stored spelling — the one mapping; reading inverts it.
fn verdict_text(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Approved => "approved",
        Verdict::Denied => "denied",
        Verdict::InputSubmitted => "input_submitted",
    }
}

fn verdict_from(text: &str) -> Result<Verdict, StoreError> {
    [Verdict::Approved, Verdict::Denied, Verdict::InputSubmitted]
        .into_iter()
        .find(|v| verdict_text(*v) == text)
        .ok_or_else(|| StoreError::Unreadable {
            what: "decision verdict",
            reason: format!("unknown verdict `{text}`"),
        })
}

impl Store {
    /// Stores a suspended run as the open suspension of its run.
    pub async fn save_suspended(&self, run: &SuspendedRun) -> Result<i64, StoreError> {
        let document = run.encode()?;
        let result = sqlx::query(
            "INSERT INTO suspended_run (run_id, status, document, digest, requested_by, created_at)
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(run.run_id())
        .bind(run.status().as_str())
        .bind(document)
        .bind(run.digest().as_str())
        .bind(&run.state().requested_by)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(result.last_insert_rowid())
    }

    /// The open suspension of a run, decoded fail-closed.
    pub async fn load_suspended(&self, run_id: &str) -> Result<SuspendedRun, LoadError> {
        let document: Option<String> = sqlx::query_scalar(
            "SELECT document FROM suspended_run WHERE run_id = ? AND state = 'open'",
        )
        .bind(run_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(StoreError::from)?;
        let Some(document) = document else {
            return Err(LoadError::NotFound(run_id.to_owned()));
        };
        SuspendedRun::decode(&document).map_err(|error| LoadError::Corrupt {
            run_id: run_id.to_owned(),
            error,
        })
    }

    /// Every open suspension, oldest first, with any decoding problem named.
    pub async fn open_runs(&self) -> Result<Vec<OpenRun>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, run_id, status, document, digest, requested_by, created_at
             FROM suspended_run WHERE state = 'open' ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await?;
        let mut runs = Vec::with_capacity(rows.len());
        for row in rows {
            let document: String = row.try_get("document")?;
            runs.push(OpenRun {
                suspension_id: row.try_get("id")?,
                run_id: row.try_get("run_id")?,
                status: row.try_get("status")?,
                digest: row.try_get("digest")?,
                requested_by: row.try_get("requested_by")?,
                created_at: row.try_get("created_at")?,
                problem: SuspendedRun::decode(&document).err().map(|e| e.reason),
            });
        }
        Ok(runs)
    }

    /// Claims the decision on a run's open suspension. Of any number of
    /// concurrent claims exactly one wins; the others get
    /// [`ClaimError::AlreadyDecided`]. The decision row is written in the same
    /// transaction as the claim. A missing or stale digest, or a stored
    /// document that does not decode, changes nothing.
    pub async fn claim(
        &self,
        run_id: &str,
        digest: Option<&TurnDigest>,
        decided_by: &str,
        verdict: Verdict,
    ) -> Result<Claim, ClaimError> {
        let (_writer, mut tx) = self.write().await?;
        let row = sqlx::query(
            "SELECT id, document FROM suspended_run WHERE run_id = ? AND state = 'open'",
        )
        .bind(run_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            let by: Option<Option<String>> = sqlx::query_scalar(
                "SELECT decided_by FROM suspended_run WHERE run_id = ? ORDER BY id DESC LIMIT 1",
            )
            .bind(run_id)
            .fetch_optional(&mut *tx)
            .await?;
            return Err(match by {
                Some(by) => ClaimError::AlreadyDecided {
                    run_id: run_id.to_owned(),
                    by,
                },
                None => ClaimError::NotFound(run_id.to_owned()),
            });
        };
        let suspension_id: i64 = row.try_get("id")?;
        let document: String = row.try_get("document")?;
        let run = SuspendedRun::decode(&document).map_err(|error| ClaimError::Corrupt {
            run_id: run_id.to_owned(),
            error,
        })?;
        let expected = run.digest();
        if digest != Some(&expected) {
            return Err(ClaimError::StaleDigest {
                run_id: run_id.to_owned(),
                expected,
            });
        }
        let now = now_ms();
        let claimed = sqlx::query(
            "UPDATE suspended_run SET state = 'decided', decided_by = ?, decided_at = ?
             WHERE id = ? AND state = 'open'",
        )
        .bind(decided_by)
        .bind(now)
        .bind(suspension_id)
        .execute(&mut *tx)
        .await?;
        if claimed.rows_affected() != 1 {
            return Err(ClaimError::AlreadyDecided {
                run_id: run_id.to_owned(),
                by: None,
            });
        }
        let requested_by = run.state().requested_by.clone();
        let record = DecisionRecord {
            run_id: run_id.to_owned(),
            decided_by: decided_by.to_owned(),
            self_decided: decided_by == requested_by,
            requested_by,
            at_unix_ms: u64::try_from(now).unwrap_or(0),
            verdict,
            digest: expected,
            tools: run.pending().iter().map(|c| c.name.clone()).collect(),
        };
        let tools = serde_json::to_string(&record.tools).map_err(|source| StoreError::Encode {
            what: "the tool names",
            source,
        })?;
        sqlx::query(
            "INSERT INTO decision (suspension_id, run_id, verdict, decided_by, requested_by, self_decided, digest, tools, decided_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(suspension_id)
        .bind(run_id)
        .bind(verdict_text(verdict))
        .bind(decided_by)
        .bind(&record.requested_by)
        .bind(i64::from(record.self_decided))
        .bind(record.digest.as_str())
        .bind(tools)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        tracing::info!(run = %run_id, by = %decided_by, verdict = verdict.as_str(), "decision claimed");
        Ok(Claim {
            suspension_id,
            run,
            record,
        })
    }

    /// Gives a claim back — when the decision was refused after it was
    /// claimed — so the run waits again and the decision row is gone.
    pub async fn release(&self, suspension_id: i64) -> Result<(), StoreError> {
        let (_writer, mut tx) = self.write().await?;
        sqlx::query("DELETE FROM decision WHERE suspension_id = ?")
            .bind(suspension_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "UPDATE suspended_run SET state = 'open', decided_by = NULL, decided_at = NULL
             WHERE id = ? AND state = 'decided'",
        )
        .bind(suspension_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The decisions taken on a run, oldest first.
    pub async fn decisions(&self, run_id: &str) -> Result<Vec<DecisionRecord>, StoreError> {
        let rows = sqlx::query("SELECT * FROM decision WHERE run_id = ? ORDER BY id")
            .bind(run_id)
            .fetch_all(&self.pool)
            .await?;
        let mut records = Vec::with_capacity(rows.len());
        for row in rows {
            let verdict = verdict_from(&row.try_get::<String, _>("verdict")?)?;
            let tools: String = row.try_get("tools")?;
            let tools = serde_json::from_str(&tools).map_err(|e| StoreError::Unreadable {
                what: "decision tool list",
                reason: e.to_string(),
            })?;
            records.push(DecisionRecord {
                run_id: row.try_get("run_id")?,
                decided_by: row.try_get("decided_by")?,
                requested_by: row.try_get("requested_by")?,
                self_decided: row.try_get::<i64, _>("self_decided")? == 1,
                at_unix_ms: u64::try_from(row.try_get::<i64, _>("decided_at")?).unwrap_or(0),
                verdict,
                digest: TurnDigest::from_text(row.try_get::<String, _>("digest")?),
                tools,
            });
        }
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_round_trip_and_unknown_ones_are_refused() {
        for verdict in [Verdict::Approved, Verdict::Denied, Verdict::InputSubmitted] {
            assert_eq!(verdict_from(verdict_text(verdict)).ok(), Some(verdict));
        }
        assert_eq!(
            verdict_from("waved_through").err().map(|e| e.to_string()),
            Some("stored decision verdict is unreadable: unknown verdict `waved_through`".into())
        );
    }
}
