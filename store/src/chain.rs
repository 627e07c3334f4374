//! A suspension's record as one chain: no row of it can vanish, move or be
//! replayed unnoticed.
//!
//! A row's own tag proves the row intact, not that no row is missing. So,
//! under an integrity key, every record written about a suspension — each
//! decision, each operator's choice, each turn planned, each call started
//! and each call ended — also appends a **link** (`record_link`): the event
//! in words, tagged together with the tag of the link before it. The
//! suspension's own row carries the **head** (`suspended_run.chain_mac`): a
//! tag over the suspension, the number of links and the last link's tag,
//! rewritten with each link in the same transaction.
//!
//! Before a host resumes or recovers a suspension, its record is read back
//! against the chain ([`Store::verify_record`]): the links in order, each
//! tag over the one before; the head over their number and the last; and
//! every decision, choice, plan and journal row the links name, as named,
//! with no row the links do not name. A deleted row (the newest included), a
//! deleted link, rows moved between runs or replayed, a link reordered — each
//! is refused with what is wrong, and nothing of the run runs.
//!
//! **Where the chain starts.** Only documents of version 5 on, written by a
//! build that keeps the chain, under a key, have one; a run paused before
//! (or in a store without a key) is read as before, each row under its own
//! tag. A version-5 document cannot be passed off as an earlier one: its seal
//! covers its version. **What remains possible:** a writer who restores a
//! whole earlier copy of a suspension — its row with the head it had then,
//! and its rows and links as they were — restores a state that was true
//! then; the chain proves the record complete as of its head, not that the
//! head is the newest. Keep the database's backups as safe as its key.

use std::collections::{BTreeMap, BTreeSet};

use toolgate::integrity::IntegrityKey;
use toolgate::suspend::SuspendedRun;

use crate::db::{Query, Tx};
use crate::{Store, StoreError};

/// The first document version written with a chain.
const CHAINED_FROM: u64 = 5;

/// One event of a suspension's record, as its link names it.
pub(crate) enum Event<'a> {
    /// A decision row, by its id and tag.
    Decision { id: i64, mac: &'a str },
    /// An operator's choice on a call whose outcome is unknown.
    Choice { id: i64, mac: &'a str },
    /// A turn's plan, by the turn and its tag.
    Plan { turn: i64, mac: &'a str },
    /// A call started: its turn, place, and the attempt it is.
    Started { turn: i64, index: i64, attempt: i64 },
    /// A call ended: its turn, place, attempt, and the tag of its result.
    Ended {
        turn: i64,
        index: i64,
        attempt: i64,
        mac: &'a str,
    },
}

impl Event<'_> {
    fn text(&self) -> String {
        match self {
            Event::Decision { id, mac } => format!("decision {id} {mac}"),
            Event::Choice { id, mac } => format!("choice {id} {mac}"),
            Event::Plan { turn, mac } => format!("plan {turn} {mac}"),
            Event::Started {
                turn,
                index,
                attempt,
            } => format!("started {turn} {index} {attempt}"),
            Event::Ended {
                turn,
                index,
                attempt,
                mac,
            } => format!("ended {turn} {index} {attempt} {mac}"),
        }
    }
}

fn incomplete(reason: impl Into<String>) -> StoreError {
    StoreError::Unreadable {
        what: "run's record",
        reason: format!(
            "{}; a row or a link of it was deleted, moved or replayed, so nothing of the run runs",
            reason.into()
        ),
    }
}

/// The links of a suspension, checked in order against each other and the
/// head: their events, by sequence, and the last link's tag (empty when
/// there is none).
async fn links(
    tx_or_pool: impl Into<crate::db::On<'_>>,
    key: &IntegrityKey,
    suspension_id: i64,
    head: Option<&str>,
) -> Result<(Vec<String>, String), StoreError> {
    let Some(head) = head else {
        return Err(incomplete("the run's chain head is missing"));
    };
    let rows =
        Query::new("SELECT seq, event, mac FROM record_link WHERE suspension_id = $1 ORDER BY seq")
            .bind(suspension_id)
            .fetch_all(tx_or_pool)
            .await?;
    let mut prev = String::new();
    let mut events = Vec::with_capacity(rows.len());
    for (at, row) in rows.iter().enumerate() {
        let seq: i64 = row.try_get("seq")?;
        let event: String = row.try_get("event")?;
        let mac: String = row.try_get("mac")?;
        if usize::try_from(seq).ok() != Some(at + 1) {
            return Err(incomplete(format!(
                "link {} of the chain is missing",
                at + 1
            )));
        }
        if !key.verify(&crate::tags::link(suspension_id, seq, &prev, &event), &mac) {
            return Err(incomplete(format!(
                "link {seq} of the chain does not verify over the one before it"
            )));
        }
        events.push(event);
        prev = mac;
    }
    let count = i64::try_from(events.len()).unwrap_or(i64::MAX);
    if !key.verify(&crate::tags::chain_head(suspension_id, count, &prev), head) {
        return Err(incomplete(format!(
            "the chain holds {count} links, and its head does not verify over them"
        )));
    }
    Ok((events, prev))
}

/// Appends `event` to the chain of `suspension_id`, inside the transaction
/// that writes the row it names. Nothing without a key, or for a suspension
/// paused before the chain (see the [module](self)).
pub(crate) async fn append(
    tx: &mut Tx,
    key: Option<&IntegrityKey>,
    suspension_id: i64,
    event: Event<'_>,
) -> Result<(), StoreError> {
    let Some(key) = key else {
        return Ok(());
    };
    let head: Option<String> = Query::new("SELECT chain_mac FROM suspended_run WHERE id = $1")
        .bind(suspension_id)
        .scalar(&mut *tx)
        .await?;
    // A suspension without a head keeps no chain: it was paused before the
    // chain, or its head was taken, which reading its record refuses.
    if head.is_none() {
        return Ok(());
    }
    // The chain is checked before it grows: a link built on a truncated
    // chain would otherwise launder what was taken from it.
    let (events, last) = links(&mut *tx, key, suspension_id, head.as_deref()).await?;
    let seq = i64::try_from(events.len())
        .unwrap_or(i64::MAX)
        .saturating_add(1);
    let text = event.text();
    let mac = key.tag(&crate::tags::link(suspension_id, seq, &last, &text));
    Query::new("INSERT INTO record_link (suspension_id, seq, event, mac) VALUES ($1, $2, $3, $4)")
        .bind(suspension_id)
        .bind(seq)
        .bind(text)
        .bind(&mac)
        .execute(&mut *tx)
        .await?;
    Query::new("UPDATE suspended_run SET chain_mac = $1 WHERE id = $2")
        .bind(key.tag(&crate::tags::chain_head(suspension_id, seq, &mac)))
        .bind(suspension_id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Starts the chain of a suspension just written: no links yet, and a head
/// over none.
pub(crate) async fn start(
    tx: &mut Tx,
    key: Option<&IntegrityKey>,
    suspension_id: i64,
) -> Result<(), StoreError> {
    let Some(key) = key else {
        return Ok(());
    };
    Query::new("UPDATE suspended_run SET chain_mac = $1 WHERE id = $2")
        .bind(key.tag(&crate::tags::chain_head(suspension_id, 0, "")))
        .bind(suspension_id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Whether a suspension with this document keeps a chain.
fn chained(document: &str) -> bool {
    SuspendedRun::written_version(document).is_some_and(|v| v >= CHAINED_FROM)
}

/// What the journal rows of a call should be, by the chain: its last
/// attempt, and the tag of its result when its last event is an end.
#[derive(Default, PartialEq, Eq, Debug)]
struct CallFold {
    attempt: i64,
    ended: Option<String>,
}

impl Store {
    /// Reads a suspension's document (verified, under the key if there is
    /// one) and its record back against its chain (see the [module](self));
    /// an error names what is missing or out of place. The chain is checked
    /// only under a key, and not for a run paused before it.
    pub(crate) async fn verify_record(&self, suspension_id: i64) -> Result<(), StoreError> {
        let row = Query::new(
            "SELECT run_id, status, document, digest, requested_by, chain_mac FROM suspended_run
             WHERE id = $1",
        )
        .bind(suspension_id)
        .fetch_one(&self.pool)
        .await?;
        // The document is read under the key first: whether it keeps a chain
        // is its version, which only a verified seal vouches for.
        if let Err(corrupt) = self.read_document(&row)? {
            return Err(StoreError::Unreadable {
                what: "suspended run",
                reason: corrupt.reason,
            });
        }
        let Some(key) = self.key() else {
            return Ok(());
        };
        let document: String = row.try_get("document")?;
        if !chained(&document) {
            return Ok(());
        }
        let head: Option<String> = row.try_get("chain_mac")?;
        let (events, _) = links(&self.pool, key, suspension_id, head.as_deref()).await?;
        let named = Named::of(&events)?;
        let plans = self
            .tagged_rows(
                "plan",
                "SELECT turn AS n, mac FROM turn_plan WHERE suspension_id = $1",
                suspension_id,
            )
            .await?;
        same("plan", &named.plans, &plans)?;
        let mut stored: BTreeMap<(i64, i64), CallFold> = BTreeMap::new();
        let rows = Query::new(
            "SELECT p.turn, e.call_index, e.attempts, e.state, e.mac
             FROM call_execution e JOIN turn_plan p ON p.id = e.plan_id
             WHERE p.suspension_id = $1",
        )
        .bind(suspension_id)
        .fetch_all(&self.pool)
        .await?;
        for r in &rows {
            let state: String = r.try_get("state")?;
            let mac: Option<String> = r.try_get("mac")?;
            let (turn, index): (i64, i64) = (r.try_get("turn")?, r.try_get("call_index")?);
            let fold = CallFold {
                attempt: r.try_get("attempts")?,
                ended: (state == "ended").then(|| mac.unwrap_or_default()),
            };
            if stored.insert((turn, index), fold).is_some() {
                return Err(incomplete(format!(
                    "the journal of call {index} of turn {turn} is stored twice"
                )));
            }
        }
        if let Some((turn, index)) = named
            .calls
            .keys()
            .chain(stored.keys())
            .find(|at| named.calls.get(at) != stored.get(at))
        {
            return Err(incomplete(format!(
                "the journal of call {index} of turn {turn} is not what its chain recorded"
            )));
        }
        let choices = self
            .tagged_rows(
                "choice",
                "SELECT c.id AS n, c.mac FROM execution_choice c JOIN turn_plan p ON p.id = c.plan_id
                 WHERE p.suspension_id = $1",
                suspension_id,
            )
            .await?;
        same("choice", &named.choices, &choices)?;
        let decisions = self
            .tagged_rows(
                "decision",
                "SELECT id AS n, mac FROM decision WHERE suspension_id = $1",
                suspension_id,
            )
            .await?;
        same("decision", &named.decisions, &decisions)?;
        Ok(())
    }

    /// A suspension's rows of one kind as `(n, mac)`: what `sql` selects.
    /// Two rows of one `n` are refused: a copy must not pass for the row.
    async fn tagged_rows(
        &self,
        kind: &str,
        sql: &'static str,
        suspension_id: i64,
    ) -> Result<BTreeSet<(i64, String)>, StoreError> {
        let mut rows = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for row in Query::new(sql)
            .bind(suspension_id)
            .fetch_all(&self.pool)
            .await?
        {
            let n: i64 = row.try_get("n")?;
            if !seen.insert(n) {
                return Err(incomplete(format!("the {kind} row {n} is stored twice")));
            }
            rows.insert((
                n,
                row.try_get::<Option<String>, _>("mac")?.unwrap_or_default(),
            ));
        }
        Ok(rows)
    }
}

/// What a chain's links name, by kind.
#[derive(Default)]
struct Named {
    decisions: BTreeSet<(i64, String)>,
    choices: BTreeSet<(i64, String)>,
    plans: BTreeSet<(i64, String)>,
    calls: BTreeMap<(i64, i64), CallFold>,
}

impl Named {
    fn of(events: &[String]) -> Result<Self, StoreError> {
        let mut named = Self::default();
        for event in events {
            let parts: Vec<&str> = event.split(' ').collect();
            let number = |at: usize| parts.get(at).and_then(|p| p.parse::<i64>().ok());
            let text = |at: usize| parts.get(at).map(|p| (*p).to_owned());
            match (parts.first().copied(), number(1), number(2)) {
                (Some("decision"), Some(id), _) => {
                    named.decisions.insert((id, text(2).unwrap_or_default()));
                }
                (Some("choice"), Some(id), _) => {
                    named.choices.insert((id, text(2).unwrap_or_default()));
                }
                (Some("plan"), Some(turn), _) => {
                    named.plans.insert((turn, text(2).unwrap_or_default()));
                }
                (Some("started"), Some(turn), Some(index)) => {
                    let fold = named.calls.entry((turn, index)).or_default();
                    fold.attempt = number(3).unwrap_or(0);
                    fold.ended = None;
                }
                (Some("ended"), Some(turn), Some(index)) => {
                    let fold = named.calls.entry((turn, index)).or_default();
                    fold.attempt = number(3).unwrap_or(0);
                    fold.ended = text(4);
                }
                _ => return Err(incomplete(format!("a link names no event: `{event}`"))),
            }
        }
        Ok(named)
    }
}

/// Refuses when the rows of one kind are not the ones the chain names.
fn same(
    kind: &str,
    named: &BTreeSet<(i64, String)>,
    stored: &BTreeSet<(i64, String)>,
) -> Result<(), StoreError> {
    if let Some((id, _)) = named.difference(stored).next() {
        return Err(incomplete(format!(
            "the {kind} row {id} its chain names is missing or changed"
        )));
    }
    if let Some((id, _)) = stored.difference(named).next() {
        return Err(incomplete(format!(
            "the {kind} row {id} is not in its chain"
        )));
    }
    Ok(())
}
