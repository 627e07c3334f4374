//! Suspended runs in the store, and the decision protocol — claim, resume,
//! release on refusal — written out once, in [`Store::decide`].

use serde_json::Value;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;
use toolgate::identity::{self, IdentitySource, Operator};
use toolgate::{
    audit::{DecisionKind, DecisionLog, DecisionRecord, LogError},
    erased::BoxFuture,
    suspend::{
        AwaitingApproval, CorruptState, Decision, InputSubmission, Refusal, ResumeError, Suspended,
        SuspendedRun, SuspendedStatus, TurnDigest, Verdict, WaitingForInput,
    },
};

use crate::{Store, StoreError, now_ms};

/// A stored run could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
#[non_exhaustive]
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
    /// The decision does not name the pending turn. The pending turn's digest
    /// is deliberately not part of the error: it is shown only beside the turn.
    #[error(
        "the decision names a different turn than the one run `{run_id}` waits on: the reviewed turn is unknown; review it with `runs show {run_id}` and decide with the digest shown there"
    )]
    StaleDigest {
        /// The run.
        run_id: String,
    },
    /// The decision does not fit the kind of pause the run waits in — a
    /// verdict for a run waiting for input, input for a run awaiting
    /// approval; nothing was changed.
    #[error(
        "run `{run_id}` {}, and a decision `{}` does not fit it",
        waits_for(*status),
        verdict.as_str()
    )]
    DoesNotFit {
        /// The run.
        run_id: String,
        /// The kind of pause the run waits in.
        status: SuspendedStatus,
        /// The decision offered.
        verdict: DecisionKind,
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

fn waits_for(status: SuspendedStatus) -> &'static str {
    match status {
        SuspendedStatus::AwaitingApproval => "awaits approval",
        SuspendedStatus::WaitingForInput => "waits for input",
    }
}

/// A decision on a stored run did not end in the caller's result. Each
/// variant says where the claim stands (see [`Store::decide`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecideError<S> {
    /// The claim was not granted; nothing changed.
    #[error(transparent)]
    Claim(#[from] ClaimError),
    /// The decision was refused before anything of the turn ran; the claim
    /// was released and the run waits again, as stored.
    #[error("the decision on run `{}` was refused, and the run waits again: {reason}", run.run_id())]
    Refused {
        /// The run, handed back unchanged.
        run: Suspended<S>,
        /// Why.
        reason: Refusal,
    },
    /// The resume failed otherwise — the decision was taken and the run
    /// could not go on, or a failure this build does not know. Never
    /// [`ResumeError::Refused`]. The claim stands.
    #[error(transparent)]
    Resume(ResumeError<S>),
    /// The decision was refused, but the claim could not be given back: the
    /// run stays decided, with its decision row, until an operator looks
    /// into it.
    #[error(
        "the decision on run `{run_id}` was refused ({reason}), but its claim could not be released, so the run no longer waits: {error}"
    )]
    NotReleased {
        /// The run.
        run_id: String,
        /// Why the decision was refused.
        reason: Refusal,
        /// Why the release failed.
        error: StoreError,
    },
}

/// A kind of pause a decision can be claimed on: [`AwaitingApproval`] takes
/// an approval or a denial, [`WaitingForInput`] takes input. Sealed: these two
/// are all there are.
pub trait Decidable: sealed::Sealed + Sized + Send + Sync + 'static {
    /// Whether this kind of pause takes `verdict`.
    fn takes(verdict: DecisionKind) -> bool;
    /// The run, when it waits in this kind of pause.
    fn from_run(run: SuspendedRun) -> Option<Suspended<Self>>;
}

mod sealed {
    #[allow(
        unreachable_pub,
        reason = "sealed-trait pattern: public in a private module"
    )]
    pub trait Sealed {}
    impl Sealed for toolgate::suspend::AwaitingApproval {}
    impl Sealed for toolgate::suspend::WaitingForInput {}
}

impl Decidable for AwaitingApproval {
    fn takes(verdict: DecisionKind) -> bool {
        matches!(verdict, DecisionKind::Approved | DecisionKind::Denied)
    }

    fn from_run(run: SuspendedRun) -> Option<Suspended<Self>> {
        match run {
            SuspendedRun::AwaitingApproval(run) => Some(run),
            SuspendedRun::WaitingForInput(_) => None,
        }
    }
}

impl Decidable for WaitingForInput {
    fn takes(verdict: DecisionKind) -> bool {
        verdict == DecisionKind::InputSubmitted
    }

    fn from_run(run: SuspendedRun) -> Option<Suspended<Self>> {
        match run {
            SuspendedRun::WaitingForInput(run) => Some(run),
            SuspendedRun::AwaitingApproval(_) => None,
        }
    }
}

/// The run as the kind of pause `S`, when it waits in that kind and `S`
/// takes `verdict`.
fn fitting<S: Decidable>(
    run_id: &str,
    run: SuspendedRun,
    verdict: DecisionKind,
) -> Result<Suspended<S>, ClaimError> {
    let status = run.status();
    S::from_run(run)
        .filter(|_| S::takes(verdict))
        .ok_or_else(|| ClaimError::DoesNotFit {
            run_id: run_id.to_owned(),
            status,
            verdict,
        })
}

/// A won claim, as [`Store::decide`] hands it to the caller's resume: the
/// run, typed by its kind of pause, and the decision row written with the
/// claim.
#[derive(Debug)]
pub struct Claimed<S> {
    /// The run, as stored; resume it with [`Claimed::log`] as the agent's
    /// decision log.
    pub run: Suspended<S>,
    record: DecisionRecord,
    suspension_id: i64,
}

impl<S> Claimed<S> {
    /// A decision log that accepts exactly this claim's decision (already
    /// written with the claim) and refuses any other.
    pub fn log(&self) -> ClaimedLog {
        ClaimedLog {
            record: self.record.clone(),
        }
    }

    /// The decision, as written with the claim.
    pub fn record(&self) -> &DecisionRecord {
        &self.record
    }
}

impl Claimed<AwaitingApproval> {
    /// The claimed decision, for [`Suspended::decide`]: the verdict, digest
    /// and decider written with the claim, so the decision taken is the one
    /// recorded.
    pub fn decision(&self) -> Decision {
        Decision {
            // `AwaitingApproval` takes only approvals and denials.
            verdict: if self.record.verdict == DecisionKind::Approved {
                Verdict::Approve
            } else {
                Verdict::Deny
            },
            digest: Some(self.record.digest.clone()),
            decided_by: self.record.decided_by.clone(),
        }
    }
}

impl Claimed<WaitingForInput> {
    /// The claimed submission of `data`, for [`Suspended::submit_input`]:
    /// the digest and submitter written with the claim.
    pub fn submission(&self, data: Value) -> InputSubmission {
        InputSubmission {
            data,
            digest: Some(self.record.digest.clone()),
            submitted_by: self.record.decided_by.clone(),
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
                Err(LogError::new(format!(
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
fn verdict_text(verdict: DecisionKind) -> &'static str {
    match verdict {
        DecisionKind::Approved => "approved",
        DecisionKind::Denied => "denied",
        DecisionKind::InputSubmitted => "input_submitted",
    }
}

fn verdict_from(text: &str) -> Result<DecisionKind, StoreError> {
    [
        DecisionKind::Approved,
        DecisionKind::Denied,
        DecisionKind::InputSubmitted,
    ]
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
        self.check_keyed()?;
        let document = run.encode_with(self.key())?;
        if self.key().is_some() {
            sqlx::query("INSERT OR IGNORE INTO integrity (id, since) VALUES (1, ?)")
                .bind(now_ms())
                .execute(&self.pool)
                .await?;
        }
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
        let row = sqlx::query(
            "SELECT run_id, status, document, digest, requested_by FROM suspended_run
             WHERE run_id = ? AND state = 'open'",
        )
        .bind(run_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(StoreError::from)?;
        let Some(row) = row else {
            return Err(LoadError::NotFound(run_id.to_owned()));
        };
        self.read_document(&row)
            .map_err(StoreError::from)?
            .map_err(|error| LoadError::Corrupt {
                run_id: run_id.to_owned(),
                error,
            })
    }

    /// Decodes a suspension row's document — verified under this store's key
    /// if it has one — and checks the columns kept beside it (run, status,
    /// digest, requester) against the document: a row whose columns and
    /// document disagree was written by something other than this store.
    fn read_document(
        &self,
        row: &SqliteRow,
    ) -> Result<Result<SuspendedRun, CorruptState>, sqlx::Error> {
        if self.check_keyed().is_err() {
            return Ok(Err(CorruptState::new(
                "this store authenticates its runs, and this handle has no integrity key: the run is not read (open the store with its key)",
            )));
        }
        let document: String = row.try_get("document")?;
        let columns = [
            ("run", row.try_get::<String, _>("run_id")?),
            ("status", row.try_get::<String, _>("status")?),
            ("digest", row.try_get::<String, _>("digest")?),
            ("requester", row.try_get::<String, _>("requested_by")?),
        ];
        let run = match SuspendedRun::decode_with(&document, self.key()) {
            Ok(run) => run,
            Err(error) => return Ok(Err(error)),
        };
        let digest = run.digest();
        let inside = [
            run.run_id(),
            run.status().as_str(),
            digest.as_str(),
            run.state().requested_by.as_str(),
        ];
        // A version-1 row's digest column holds the first digest rule's
        // value, which no longer names the turn; it is neither compared nor
        // used (the claim checks the digest against the document).
        let v1 = SuspendedRun::written_version(&document) == Some(1);
        for ((what, column), inside) in columns.iter().zip(inside) {
            if column == inside || (v1 && *what == "digest") {
                continue;
            }
            // A digest is shown only beside its turn, never in an error.
            let reason = if *what == "digest" {
                "the stored digest column disagrees with the document: the row was changed outside the store".to_owned()
            } else {
                format!(
                    "the stored {what} column (`{}`) disagrees with the document (`{}`): the row was changed outside the store",
                    toolgate::visible::visible(column),
                    toolgate::visible::visible(inside)
                )
            };
            return Ok(Err(CorruptState::new(reason)));
        }
        Ok(Ok(run))
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
            let problem = self.read_document(&row)?.err().map(|e| e.reason);
            runs.push(OpenRun {
                suspension_id: row.try_get("id")?,
                run_id: row.try_get("run_id")?,
                status: row.try_get("status")?,
                digest: row.try_get("digest")?,
                requested_by: row.try_get("requested_by")?,
                created_at: row.try_get("created_at")?,
                problem,
            });
        }
        Ok(runs)
    }

    /// Decides a stored run: claims its open suspension, hands the claimed
    /// run to `resume`, and gives the claim back when — and only when —
    /// `resume` ends in [`ResumeError::Refused`], so the run waits again.
    ///
    /// # The decision protocol
    ///
    /// This is the one public way to decide a stored run, and the protocol is
    /// written out here once, so that no host can leave a step out:
    ///
    /// 1. **Claim.** The run's open suspension is marked decided and the
    ///    decision row written, in one transaction. Of any number of concurrent
    ///    deciders exactly one wins; a missing or stale digest, a decision that
    ///    does not fit the kind of pause, or a document that does not decode
    ///    changes nothing ([`ClaimError`]).
    /// 2. **Resume.** The caller's `resume` gets the claimed run ([`Claimed`]),
    ///    typed by its kind of pause, and resumes it with the core's API and
    ///    the claim's [`ClaimedLog`].
    /// 3. **Release on refusal, and only then.** When `resume` ends in
    ///    [`ResumeError::Refused`] — which the core returns only before
    ///    anything of the turn ran — the claim is given back in one
    ///    transaction: the decision row is deleted and the run waits again
    ///    ([`DecideError::Refused`]).
    ///
    /// Every other ending keeps the claim: an outcome; a run error after the
    /// turn ran ([`DecideError::Resume`]); a resume error of a kind this build
    /// does not know; a panic inside `resume`; the returned future dropped
    /// before `resume` finished; a release that fails
    /// ([`DecideError::NotReleased`]). In each of those the turn may have run,
    /// and a run that waited again could run a non-idempotent write twice. A
    /// run left decided without having run is an operator's to look into — its
    /// decision row names who claimed it — and is never executed a second time.
    /// Claim and release are single transactions, so no ending leaves a run
    /// decided without its decision row, or a decision row beside a waiting
    /// run.
    ///
    /// The resume is a closure, not a guard the caller holds, because the
    /// release is a write and `Drop` cannot await: a guard dropped on an early
    /// `?` could only give the claim back blindly (wrong once the turn ran) or
    /// keep it silently (the forgotten release this method exists to rule
    /// out). Here the store reads the resume's own result.
    ///
    /// # The kind of pause
    ///
    /// `S` is the kind of pause the caller decides — [`AwaitingApproval`]
    /// with [`DecisionKind::Approved`] or [`DecisionKind::Denied`],
    /// [`WaitingForInput`] with [`DecisionKind::InputSubmitted`]; a run that
    /// waits otherwise is refused with [`ClaimError::DoesNotFit`] before
    /// anything changes.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn demo(
    /// #     store: &toolgate_store::Store,
    /// #     registry: &toolgate::Registry,
    /// #     model: &dyn toolgate::run::Model,
    /// #     digest: toolgate::suspend::TurnDigest,
    /// # ) -> Result<(), Box<dyn std::error::Error>> {
    /// use toolgate::{Agent, audit::DecisionKind, identity::{IdentitySource, Operator}};
    /// use toolgate::suspend::AwaitingApproval;
    /// use toolgate_store::{Claimed, DecideError};
    ///
    /// let bob = Operator::new("bob", IdentitySource::Flag)?;
    /// let decided = store
    ///     .decide(
    ///         "run-1",
    ///         Some(&digest),
    ///         &bob,
    ///         DecisionKind::Approved,
    ///         |claimed: Claimed<AwaitingApproval>| async move {
    ///             let log = claimed.log();
    ///             let decision = claimed.decision();
    ///             let agent = Agent::new(registry, model, &log);
    ///             claimed.run.decide(&agent, decision).await
    ///         },
    ///     )
    ///     .await;
    /// match decided {
    ///     Ok(outcome) => println!("decided: {outcome:?}"),
    ///     // Released: the run waits for another decision.
    ///     Err(DecideError::Refused { reason, .. }) => println!("refused: {reason}"),
    ///     Err(other) => return Err(other.into()),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn decide<S, T, F, Fut>(
        &self,
        run_id: &str,
        digest: Option<&TurnDigest>,
        decided_by: &Operator,
        verdict: DecisionKind,
        resume: F,
    ) -> Result<T, DecideError<S>>
    where
        S: Decidable,
        F: FnOnce(Claimed<S>) -> Fut,
        Fut: Future<Output = Result<T, ResumeError<S>>>,
    {
        let claimed = self.claim::<S>(run_id, digest, decided_by, verdict).await?;
        let suspension_id = claimed.suspension_id;
        match resume(claimed).await {
            Ok(value) => Ok(value),
            Err(ResumeError::Refused { run, reason }) => match self
                .release(suspension_id, &format!("refused at resume: {reason}"))
                .await
            {
                Ok(()) => {
                    tracing::info!(run = %run_id, %reason, "decision refused; claim released");
                    Err(DecideError::Refused { run, reason })
                }
                Err(error) => {
                    tracing::error!(run = %run_id, %reason, %error, "decision refused, but the claim could not be released");
                    Err(DecideError::NotReleased {
                        run_id: run_id.to_owned(),
                        reason,
                        error,
                    })
                }
            },
            Err(other) => Err(DecideError::Resume(other)),
        }
    }

    /// Claims the decision on a run's open suspension — step 1 of the
    /// protocol, only ever called by [`Store::decide`]. Of any number of
    /// concurrent claims exactly one wins; the others get
    /// [`ClaimError::AlreadyDecided`]. The decision row is written in the same
    /// transaction as the claim. A missing or stale digest, a decision that
    /// does not fit the run's kind of pause, or a stored document that does
    /// not decode, changes nothing.
    pub(crate) async fn claim<S: Decidable>(
        &self,
        run_id: &str,
        digest: Option<&TurnDigest>,
        decided_by: &Operator,
        verdict: DecisionKind,
    ) -> Result<Claimed<S>, ClaimError> {
        let (_writer, mut tx) = self.write().await?;
        let row = sqlx::query(
            "SELECT id, run_id, status, document, digest, requested_by FROM suspended_run
             WHERE run_id = ? AND state = 'open'",
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
        let run = self
            .read_document(&row)?
            .map_err(|error| ClaimError::Corrupt {
                run_id: run_id.to_owned(),
                error,
            })?;
        let expected = run.digest();
        if digest != Some(&expected) {
            return Err(ClaimError::StaleDigest {
                run_id: run_id.to_owned(),
            });
        }
        refuse_replay(&mut tx, run_id, &expected).await?;
        let run = fitting::<S>(run_id, run, verdict)?;
        let now = now_ms();
        let claimed = sqlx::query(
            "UPDATE suspended_run SET state = 'decided', decided_by = ?, decided_at = ?
             WHERE id = ? AND state = 'open'",
        )
        .bind(decided_by.name())
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
            decided_by: decided_by.name().to_owned(),
            decided_by_source: decided_by.source(),
            self_decided: identity::same_person(decided_by.name(), &requested_by),
            requested_by,
            at_unix_ms: u64::try_from(now).unwrap_or(0),
            verdict,
            digest: expected,
            tools: run.pending().iter().map(|c| c.name.clone()).collect(),
            voided: None,
        };
        let tools = serde_json::to_string(&record.tools).map_err(|source| StoreError::Encode {
            what: "the tool names",
            source,
        })?;
        let mac = self
            .key()
            .map(|key| key.tag(&decision_bytes(suspension_id, &record)));
        sqlx::query(
            "INSERT INTO decision (suspension_id, run_id, verdict, decided_by, decided_by_source, requested_by, self_decided, digest, tools, decided_at, mac)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        .bind(mac)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        tracing::info!(run = %run_id, by = %decided_by, source = %decided_by.source(), verdict = verdict.as_str(), "decision claimed");
        Ok(Claimed {
            run,
            record,
            suspension_id,
        })
    }

    /// Gives a claim back — step 3 of the protocol, only ever called by
    /// [`Store::decide`] when the decision was refused after it was claimed —
    /// so the run waits again and the decision row is gone, in one
    /// transaction.
    pub(crate) async fn release(&self, suspension_id: i64, why: &str) -> Result<(), StoreError> {
        let (_writer, mut tx) = self.write().await?;
        // Audit rows are never deleted: the decision stays, voided, with why.
        sqlx::query("UPDATE decision SET voided = ? WHERE suspension_id = ? AND voided IS NULL")
            .bind(why)
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
        self.check_keyed()?;
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
            let record = DecisionRecord {
                run_id: row.try_get("run_id")?,
                decided_by: row.try_get("decided_by")?,
                decided_by_source: IdentitySource::from_name(
                    &row.try_get::<String, _>("decided_by_source")?,
                ),
                requested_by: row.try_get("requested_by")?,
                self_decided: row.try_get::<i64, _>("self_decided")? == 1,
                at_unix_ms: u64::try_from(row.try_get::<i64, _>("decided_at")?).unwrap_or(0),
                verdict,
                digest: TurnDigest::from_text(row.try_get::<String, _>("digest")?),
                tools,
                voided: row.try_get("voided")?,
            };
            if let Some(key) = self.key() {
                let suspension_id: i64 = row.try_get("suspension_id")?;
                let mac: Option<String> = row.try_get("mac")?;
                let verified = mac
                    .is_some_and(|mac| key.verify(&decision_bytes(suspension_id, &record), &mac));
                if !verified {
                    return Err(StoreError::Unreadable {
                        what: "decision record",
                        reason: format!(
                            "the decision on run `{}` by `{}` does not verify under this store's integrity key: it was changed, or written without the key",
                            toolgate::visible::visible(&record.run_id),
                            toolgate::visible::visible(&record.decided_by)
                        ),
                    });
                }
            }
            records.push(record);
        }
        Ok(records)
    }
}

/// A digest names one suspension of one run: a decision already taken on it
/// means an open row replays a decided turn (a copied or reopened row), never
/// a new one.
async fn refuse_replay(
    tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    run_id: &str,
    digest: &TurnDigest,
) -> Result<(), ClaimError> {
    let replayed: Option<String> = sqlx::query_scalar(
        "SELECT decided_by FROM decision WHERE run_id = ? AND digest = ? AND voided IS NULL LIMIT 1",
    )
    .bind(run_id)
    .bind(digest.as_str())
    .fetch_optional(&mut **tx)
    .await?;
    match replayed {
        Some(by) => Err(ClaimError::AlreadyDecided {
            run_id: run_id.to_owned(),
            by: Some(by),
        }),
        None => Ok(()),
    }
}

/// What a decision row's tag covers: the suspension it decided, and every
/// field of the record, in the record's own serialisation (fixed field order).
fn decision_bytes(suspension_id: i64, record: &DecisionRecord) -> Vec<u8> {
    let mut bytes = format!("toolgate.decision.v1\n{suspension_id}\n").into_bytes();
    // What was decided is covered; whether it was voided later is not (a
    // voided decision keeps the tag it was written with).
    let decided = DecisionRecord {
        voided: None,
        ..record.clone()
    };
    // Serialising a record of plain fields to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut bytes, &decided);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_round_trip_and_unknown_ones_are_refused() {
        for verdict in [
            DecisionKind::Approved,
            DecisionKind::Denied,
            DecisionKind::InputSubmitted,
        ] {
            assert_eq!(verdict_from(verdict_text(verdict)).ok(), Some(verdict));
        }
        assert_eq!(
            verdict_from("waved_through").err().map(|e| e.to_string()),
            Some("stored decision verdict is unreadable: unknown verdict `waved_through`".into())
        );
    }
}
