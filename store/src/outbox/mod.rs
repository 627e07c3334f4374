//! Notifications: what happened to a run, written to an outbox in the same
//! transaction as the change it tells of, and delivered from there at least
//! once by a dispatcher (the `toolgate-notify` crate).
//!
//! **Events.** A run *starts waiting* (for approval, for input, or for an
//! operator's choice on a call whose outcome is unknown), *is decided* (every
//! approval it needs recorded, or denied, or its input given, or a choice
//! standing), *is resumed* by a host, or *expires* (decided, and its call
//! never asked again). Each is one row of `notification_event` with a stable
//! id, and one row of `notification_delivery` per sink configured when it
//! was written. A sink added later is not sent what happened before it.
//!
//! **What an event holds.** The run, who asked and through which client, the
//! host that resumes it, each pending call's tool, server and a one-line
//! summary of its arguments (escaped with [`toolgate::visible`], at most
//! [`SUMMARY_CHARS`] characters), and the strictest data class of every
//! server the run used so far ([`RunClass`]): a model's arguments can carry
//! anything an earlier result showed it. Never a digest, a secret or a
//! session's address. A sink whose ceiling is below the run's class is sent
//! the event without the summaries ([`RunEvent::for_ceiling`]).
//!
//! **Cost to a run.** Two inserts in a transaction the run writes anyway,
//! and for a run that starts waiting one read of its tools' servers. A sink
//! that is down never slows a run: sending is the dispatcher's, elsewhere.
//! On PostgreSQL the write is announced too (`pg_notify`, on commit).
//!
//! **Following it.** The outbox is also the log of what changed, for pages
//! that follow runs as they change ([`Store::changes`],
//! [`Store::changes_since`]): each event's row id is its place in it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use toolgate::run::Message;
use toolgate::suspend::{SuspendedRun, SuspendedStatus};

use crate::db::{Query, Tx};
use crate::{DataClass, Store, StoreError, now_ms};

mod delivery;
pub(crate) mod live;
pub use delivery::{Delivery, NewSink, SinkKind, SinkRecord, SinkStatus, sink_name_problem};
pub use live::{CHANGES_READ, POLL_EVERY, RunChange};

/// The most characters of one call's arguments' summary.
pub const SUMMARY_CHARS: usize = 200;

/// What a run waits for, in an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitsFor {
    /// A person's approval of its turn.
    Approval,
    /// A person's input.
    Input,
    /// An operator's choice: run again or skip a call whose outcome is
    /// unknown.
    Choice,
}

/// What happened to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind {
    /// It started waiting.
    #[serde(rename = "run.waiting")]
    Waiting,
    /// It was decided.
    #[serde(rename = "run.decided")]
    Decided,
    /// A host resumed it.
    #[serde(rename = "run.resumed")]
    Resumed,
    /// It expired, decided and never asked again.
    #[serde(rename = "run.expired")]
    Expired,
}

impl EventKind {
    /// The stored spelling (and the event's `type`).
    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::Waiting => "run.waiting",
            EventKind::Decided => "run.decided",
            EventKind::Resumed => "run.resumed",
            EventKind::Expired => "run.expired",
        }
    }
}

/// The strictest data class of the servers a run used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunClass {
    /// The run used no server's tool (builtins only).
    NoServer,
    /// The strictest class of its servers.
    Class(DataClass),
    /// A server's class could not be read (undeclared, unknown, or the
    /// tool's server is gone): above every ceiling.
    Unknown,
}

impl RunClass {
    /// The stored spelling: `None`, a class, or `unknown`.
    pub fn as_stored(self) -> Option<&'static str> {
        match self {
            RunClass::NoServer => None,
            RunClass::Class(class) => Some(class.as_str()),
            RunClass::Unknown => Some("unknown"),
        }
    }

    /// Reads a stored spelling; anything but `NULL` or a class is unknown.
    pub fn from_stored(stored: Option<&str>) -> Self {
        match stored {
            None => RunClass::NoServer,
            Some(text) => {
                DataClass::from_stored(Some(text)).map_or(RunClass::Unknown, RunClass::Class)
            }
        }
    }

    /// True when a sink whose ceiling is `max` may be sent the run's
    /// arguments.
    pub fn fits(self, max: DataClass) -> bool {
        match self {
            RunClass::NoServer => true,
            RunClass::Class(class) => class.is_at_most(max),
            RunClass::Unknown => false,
        }
    }

    /// The stricter of two classes: unknown above all, no server below
    /// all.
    #[must_use]
    pub fn stricter(self, other: RunClass) -> RunClass {
        match (self, other) {
            (RunClass::Unknown, _) | (_, RunClass::Unknown) => RunClass::Unknown,
            (RunClass::NoServer, x) | (x, RunClass::NoServer) => x,
            (RunClass::Class(a), RunClass::Class(b)) => RunClass::Class(a.max(b)),
        }
    }
}

/// One pending call, as an event tells of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSummary {
    /// The tool's local name.
    pub tool: String,
    /// Its server's id, for a server's tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Its arguments on one line, escaped and cut to [`SUMMARY_CHARS`];
    /// `None` where the sink's ceiling is below the run's data class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// An event, as the outbox keeps it and the dispatcher sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEvent {
    /// What happened.
    #[serde(rename = "type")]
    pub kind: EventKind,
    /// The event's stable id: the same for every sink and every attempt.
    pub id: String,
    /// When it happened, in milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// What it is about.
    pub data: RunEventData,
}

/// What an event is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEventData {
    /// The run.
    pub run_id: String,
    /// What it waits for, for an event of a run that waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits_for: Option<WaitsFor>,
    /// Who asked for the run.
    pub requested_by: String,
    /// The MCP client it was asked through, as it named itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The host that resumes it.
    pub host: String,
    /// The pending calls.
    pub calls: Vec<CallSummary>,
    /// The strictest data class of the servers the run used: `None` for
    /// none, `unknown` when one could not be read. As written; a dispatcher
    /// sends the stricter of this and the servers' classes when it sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_class: Option<String>,
    /// Every server whose tools the run used so far, by id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<String>,
    /// For a decided run: approved, denied, input_submitted, rerun or skip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// For a decided run: everyone whose decision it is, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decided_by: Vec<String>,
    /// Why, in words, where there is something to say: why an outcome is
    /// unknown, why a run expired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl RunEvent {
    /// The run's data class, as the event names it.
    pub fn class(&self) -> RunClass {
        RunClass::from_stored(self.data.data_class.as_deref())
    }

    /// The event as a sink whose ceiling is `max` may be sent it — without
    /// the arguments' summaries when the run's class is above `max`, or
    /// when the ceiling could not be read (`None`) — and whether summaries
    /// were withheld.
    #[must_use]
    pub fn for_ceiling(mut self, max: Option<DataClass>) -> (Self, bool) {
        let fits = max.is_some_and(|max| self.class().fits(max));
        let mut withheld = false;
        if !fits {
            for call in &mut self.data.calls {
                withheld |= call.summary.take().is_some();
            }
        }
        (self, withheld)
    }
}

/// A change of a run's state, told to the outbox by the transition that
/// made it.
pub(crate) enum Happened<'a> {
    /// A suspension was stored, waiting for approval or input.
    Paused {
        run: &'a SuspendedRun,
        owner: &'a str,
    },
    /// A suspension now waits for an operator's choice: a call's outcome is
    /// unknown. `run` is given where the suspension was stored just now.
    OutcomeUnknown {
        run: Option<&'a SuspendedRun>,
        owner: &'a str,
        why: &'a str,
    },
    /// Decided: `verdict`, by `by` (an operator's choice) or, when `None`,
    /// everyone whose decision stands on the suspension.
    Decided {
        verdict: &'a str,
        by: Option<&'a str>,
    },
    /// A host claimed it to resume it.
    Resumed,
    /// Decided and never asked again.
    Expired { why: &'a str },
}

/// One line of a call's arguments, escaped and cut.
pub(crate) fn summary_of(arguments: &serde_json::Value) -> String {
    let text = arguments.to_string();
    let text = toolgate::visible::visible(&text);
    let mut chars = text.chars();
    let cut: String = chars.by_ref().take(SUMMARY_CHARS).collect();
    if chars.next().is_some() {
        format!("{cut}…")
    } else {
        cut
    }
}

impl Store {
    /// Writes the event of `happened` to suspension `suspension_id`, and a
    /// delivery for every sink, inside the transaction of the change.
    pub(crate) async fn announce(
        &self,
        tx: &mut Tx,
        suspension_id: i64,
        happened: Happened<'_>,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let (kind, data) = match happened {
            Happened::Paused { run, owner } => {
                let waits_for = match run.status() {
                    SuspendedStatus::WaitingForInput => WaitsFor::Input,
                    SuspendedStatus::AwaitingApproval => WaitsFor::Approval,
                };
                let data = described(tx, run, owner, Some(waits_for)).await?;
                (EventKind::Waiting, data)
            }
            Happened::OutcomeUnknown { run, owner, why } => {
                let mut data = match run {
                    Some(run) => described(tx, run, owner, None).await?,
                    None => as_last_told(tx, suspension_id).await?,
                };
                data.waits_for = Some(WaitsFor::Choice);
                data.why = Some(toolgate::visible::visible(why).into_owned());
                (EventKind::Waiting, data)
            }
            Happened::Decided { verdict, by } => {
                let mut data = as_last_told(tx, suspension_id).await?;
                data.waits_for = None;
                data.verdict = Some(verdict.to_owned());
                data.decided_by = match by {
                    Some(by) => vec![toolgate::visible::visible(by).into_owned()],
                    None => deciders(tx, suspension_id).await?,
                };
                (EventKind::Decided, data)
            }
            Happened::Resumed => {
                let mut data = as_last_told(tx, suspension_id).await?;
                data.waits_for = None;
                (EventKind::Resumed, data)
            }
            Happened::Expired { why } => {
                let mut data = as_last_told(tx, suspension_id).await?;
                data.waits_for = None;
                data.why = Some(toolgate::visible::visible(why).into_owned());
                (EventKind::Expired, data)
            }
        };
        let event = RunEvent {
            kind,
            id: format!("evt_{}", uuid::Uuid::new_v4().simple()),
            at_ms: now,
            data,
        };
        let payload = serde_json::to_string(&event).map_err(|source| StoreError::Encode {
            what: "a notification",
            source,
        })?;
        let id: i64 = Query::new(
            "INSERT INTO notification_event (event_id, run_id, suspension_id, kind, data_class, payload, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        )
        .bind(&event.id)
        .bind(&event.data.run_id)
        .bind(suspension_id)
        .bind(kind.as_str())
        .bind(event.data.data_class.clone())
        .bind(payload)
        .bind(now)
        .scalar(&mut *tx)
        .await?;
        Query::new(
            "INSERT INTO notification_delivery (event, sink, next_at)
             SELECT $1, name, $2 FROM notification_sink",
        )
        .bind(id)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        // Followers of the outbox on any machine read it at once: the
        // announcement goes out when the transaction commits, and never
        // if it does not.
        if tx.backend() == crate::Backend::Postgres {
            Query::new("SELECT pg_notify($1, $2)")
                .bind(live::CHANNEL)
                .bind(id.to_string())
                .execute(&mut *tx)
                .await?;
        }
        tracing::debug!(run = %event.data.run_id, event = %event.id, kind = kind.as_str(), "notification written");
        Ok(())
    }
}

impl Store {
    /// The strictest class the servers named `servers` have now: unknown
    /// for one that is gone or whose class cannot be read.
    pub async fn class_of_servers(&self, servers: &[String]) -> Result<RunClass, StoreError> {
        let mut class = RunClass::NoServer;
        for server in servers {
            let stored: Option<Option<String>> =
                Query::new("SELECT data_class FROM mcp_server WHERE id = $1")
                    .bind(server)
                    .scalar_optional(&self.pool)
                    .await?;
            let of_server = match stored {
                Some(stored) => DataClass::from_stored(stored.as_deref())
                    .map_or(RunClass::Unknown, RunClass::Class),
                None => RunClass::Unknown,
            };
            class = class.stricter(of_server);
        }
        Ok(class)
    }
}

/// An event's data for a run just stored: its pending calls and the data
/// class of every server its transcript used.
async fn described(
    tx: &mut Tx,
    run: &SuspendedRun,
    owner: &str,
    waits_for: Option<WaitsFor>,
) -> Result<RunEventData, StoreError> {
    let state = run.state();
    let mut used = BTreeSet::new();
    for message in &state.transcript {
        if let Message::Assistant { calls, .. } = message {
            used.extend(calls.iter().map(|c| c.name.as_str()));
        }
    }
    used.extend(run.pending().iter().map(|c| c.name.as_str()));
    let mut class = RunClass::NoServer;
    let mut servers = std::collections::BTreeMap::new();
    for tool in used {
        let (server, of_tool) = server_of(tx, tool).await?;
        class = class.stricter(of_tool);
        if let Some(server) = server {
            servers.insert(tool, server);
        }
    }
    let calls = run
        .pending()
        .iter()
        .map(|call| CallSummary {
            tool: toolgate::visible::visible(&call.name).into_owned(),
            server: servers.get(call.name.as_str()).cloned(),
            summary: Some(summary_of(&call.arguments)),
        })
        .collect();
    Ok(RunEventData {
        run_id: state.run_id.clone(),
        waits_for,
        requested_by: toolgate::visible::visible(&state.requested_by).into_owned(),
        client: state
            .client
            .as_ref()
            .map(|c| toolgate::visible::visible(&c.name).into_owned()),
        host: owner.to_owned(),
        calls,
        data_class: class.as_stored().map(str::to_owned),
        servers: servers
            .values()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
        verdict: None,
        decided_by: Vec::new(),
        why: None,
    })
}

/// The server of a tool by its local name, and that server's class: no
/// server for a builtin; an unknown class for a server whose class cannot
/// be read, or a tool named like a server's that is not in the catalogue.
async fn server_of(tx: &mut Tx, tool: &str) -> Result<(Option<String>, RunClass), StoreError> {
    let row = Query::new(
        "SELECT s.id, s.data_class FROM mcp_tool t JOIN mcp_server s ON s.id = t.server_id
         WHERE t.local_name = $1",
    )
    .bind(tool)
    .fetch_optional(&mut *tx)
    .await?;
    let row = match row {
        Some(row) => Some(row),
        None => match crate::runs::server_of(tool) {
            Some(server) => {
                Query::new("SELECT id, data_class FROM mcp_server WHERE id = $1")
                    .bind(server)
                    .fetch_optional(&mut *tx)
                    .await?
            }
            None => None,
        },
    };
    let Some(row) = row else {
        return Ok((None, RunClass::NoServer));
    };
    let id: String = row.try_get("id")?;
    let stored: Option<String> = row.try_get("data_class")?;
    let class =
        DataClass::from_stored(stored.as_deref()).map_or(RunClass::Unknown, RunClass::Class);
    Ok((Some(id), class))
}

/// What the suspension's newest event said, to tell the next one; for a
/// suspension stored before the outbox, what its row says.
async fn as_last_told(tx: &mut Tx, suspension_id: i64) -> Result<RunEventData, StoreError> {
    let told: Option<String> = Query::new(
        "SELECT payload FROM notification_event WHERE suspension_id = $1 ORDER BY id DESC LIMIT 1",
    )
    .bind(suspension_id)
    .scalar_optional(&mut *tx)
    .await?;
    if let Some(event) = told.and_then(|text| serde_json::from_str::<RunEvent>(&text).ok()) {
        let mut data = event.data;
        data.verdict = None;
        data.decided_by.clear();
        data.why = None;
        return Ok(data);
    }
    let row = Query::new("SELECT run_id, requested_by, owner FROM suspended_run WHERE id = $1")
        .bind(suspension_id)
        .fetch_one(&mut *tx)
        .await?;
    let requested_by: String = row.try_get("requested_by")?;
    Ok(RunEventData {
        run_id: row.try_get("run_id")?,
        waits_for: None,
        requested_by: toolgate::visible::visible(&requested_by).into_owned(),
        client: None,
        host: row.try_get("owner")?,
        calls: Vec::new(),
        data_class: Some("unknown".to_owned()),
        servers: Vec::new(),
        verdict: None,
        decided_by: Vec::new(),
        why: None,
    })
}

/// Everyone whose decision or choice stands on the suspension, in order.
async fn deciders(tx: &mut Tx, suspension_id: i64) -> Result<Vec<String>, StoreError> {
    let rows = Query::new(
        "SELECT decided_by FROM decision WHERE suspension_id = $1 AND voided IS NULL ORDER BY id",
    )
    .bind(suspension_id)
    .fetch_all(&mut *tx)
    .await?;
    let mut names = Vec::with_capacity(rows.len());
    for row in &rows {
        let name: String = row.try_get("decided_by")?;
        names.push(toolgate::visible::visible(&name).into_owned());
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_is_one_escaped_line_cut_to_its_length() {
        let args = serde_json::json!({"text": "a\u{202e}b\nc", "long": "x".repeat(500)});
        let summary = summary_of(&args);
        assert!(!summary.contains('\u{202e}'), "{summary}");
        assert!(!summary.contains('\n'), "{summary}");
        assert_eq!(summary.chars().count(), SUMMARY_CHARS + 1);
        assert!(summary.ends_with('…'));
    }

    #[test]
    fn an_unknown_class_fits_no_ceiling_and_no_server_fits_every_one() {
        for max in DataClass::LADDER {
            assert!(!RunClass::Unknown.fits(max));
            assert!(RunClass::NoServer.fits(max));
        }
        assert!(RunClass::Class(DataClass::SourceCode).fits(DataClass::SourceCode));
        assert!(!RunClass::Class(DataClass::SecretAdjacent).fits(DataClass::SourceCode));
        assert_eq!(
            RunClass::from_stored(Some("Source_Code")),
            RunClass::Unknown
        );
        assert_eq!(
            RunClass::Class(DataClass::PublicContent).stricter(RunClass::Unknown),
            RunClass::Unknown
        );
    }
}
