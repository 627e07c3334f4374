//! The runs a page lists — those not done with, or the decided ones —
//! narrowed by server, tool, requester, standing and a search, newest
//! first, a page at a time: keyset pagination in SQL, each filter through
//! an index, so a page costs about the same however many runs there are.
//!
//! A run's tools are kept beside it, one row per tool of the pending turn
//! (`suspended_tool`, written with the suspension): filtering by tool or
//! server never decodes a document.

use serde_json::Value;
use toolgate::suspend::SuspendedRun;

use crate::db::{Arg, Query, Tx};
use crate::{OpenRun, Store, StoreError};

/// Which runs a listing holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RunView {
    /// The runs not done with: waiting for a decision, decided and waiting
    /// for their host, resuming, or with an outcome unknown.
    #[default]
    Waiting,
    /// The decided runs, done or not: what was decided, and how it ended.
    History,
}

/// Where a run stands, as a listing's filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Waiting for an operator's approval.
    AwaitingApproval,
    /// A call waiting for an operator's input.
    WaitingForInput,
    /// Decided: waiting for its host, or resuming.
    Decided,
    /// A call started and never ended: waiting for an operator's choice.
    OutcomeUnknown,
    /// Decided and done with.
    Done,
}

impl Standing {
    /// Every standing, in the order a run moves through them.
    pub const ALL: [Standing; 5] = [
        Standing::AwaitingApproval,
        Standing::WaitingForInput,
        Standing::Decided,
        Standing::OutcomeUnknown,
        Standing::Done,
    ];

    /// Its name in a query string.
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::AwaitingApproval => "approval",
            Standing::WaitingForInput => "input",
            Standing::Decided => "decided",
            Standing::OutcomeUnknown => "unknown",
            Standing::Done => "done",
        }
    }

    /// The standing [`Standing::as_str`] names.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// In the words an operator reads.
    pub fn label(self) -> &'static str {
        match self {
            Standing::AwaitingApproval => "awaiting approval",
            Standing::WaitingForInput => "waiting for input",
            Standing::Decided => "decided, not yet run",
            Standing::OutcomeUnknown => "outcome unknown",
            Standing::Done => "done",
        }
    }

    /// The rows of this standing, `s` the suspension as aliased.
    fn clause(self) -> &'static str {
        match self {
            Standing::AwaitingApproval => "s.state = 'open' AND s.status = 'awaiting_approval'",
            Standing::WaitingForInput => "s.state = 'open' AND s.status = 'waiting_for_input'",
            Standing::Decided => "s.state = 'decided' AND s.execution IN ('pending', 'resuming')",
            Standing::OutcomeUnknown => crate::suspension::when::S_OUTCOME_UNKNOWN,
            Standing::Done => "s.state = 'decided' AND s.execution = 'done'",
        }
    }
}

/// Which runs a page lists. The default: every run not done with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Waiting runs, or the decided ones.
    pub view: RunView,
    /// Only runs whose pending turn calls a tool of this server (an
    /// imported tool's `server.tool`).
    pub server: Option<String>,
    /// Only runs whose pending turn calls this tool (its full name).
    pub tool: Option<String>,
    /// Only runs started by this requester.
    pub requester: Option<String>,
    /// Only runs standing so.
    pub standing: Option<Standing>,
    /// Only runs whose id, requester, host or a tool's name holds this
    /// text (ASCII letters compared without case).
    pub search: Option<String>,
}

/// One call of a listed run's pending turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedCall {
    /// The tool's name (`server.tool` for an imported one).
    pub name: String,
    /// The arguments, as the model wrote them.
    pub arguments: Value,
}

/// The server of an imported tool's name (`server.tool`); `None` for a
/// local tool.
pub fn server_of(tool: &str) -> Option<&str> {
    tool.split_once('.').map(|(server, _)| server)
}

/// Keeps the tools of `run`'s pending turn beside its suspension, for the
/// listings' filters: inside the transaction that stores it.
pub(crate) async fn record_tools(
    tx: &mut Tx,
    suspension_id: i64,
    run: &SuspendedRun,
) -> Result<(), StoreError> {
    let mut tools: Vec<&str> = run.pending().iter().map(|c| c.name.as_str()).collect();
    tools.sort_unstable();
    tools.dedup();
    for tool in tools {
        Query::new("INSERT INTO suspended_tool (suspension_id, tool, server) VALUES ($1, $2, $3)")
            .bind(suspension_id)
            .bind(tool)
            .bind(server_of(tool).unwrap_or_default())
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

/// A `LIKE` pattern that finds `text` anywhere, its wildcards taken
/// literally (escaped with `!`), ASCII letters lower-cased.
fn containing(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '!') {
            pattern.push('!');
        }
        pattern.push(c.to_ascii_lowercase());
    }
    pattern.push('%');
    pattern
}

/// The filter's conditions on `s`, and their arguments (`$1` …).
fn conditions(filter: &RunFilter) -> (String, Vec<Arg>) {
    let mut clauses = vec![match filter.view {
        // The partial index's own condition, written the same way, so the
        // page is read through it.
        RunView::Waiting => format!("({})", crate::suspension::when::S_NOT_DONE),
        RunView::History => "(s.state = 'decided')".to_owned(),
    }];
    let mut args = Vec::new();
    let next = |args: &mut Vec<Arg>, value: String| {
        args.push(Arg::Text(Some(value)));
        format!("${}", args.len())
    };
    if let Some(standing) = filter.standing {
        clauses.push(format!("({})", standing.clause()));
    }
    if let Some(tool) = &filter.tool {
        let at = next(&mut args, tool.clone());
        clauses.push(format!(
            "s.id IN (SELECT t.suspension_id FROM suspended_tool t WHERE t.tool = {at})"
        ));
    }
    if let Some(server) = &filter.server {
        let at = next(&mut args, server.clone());
        clauses.push(format!(
            "s.id IN (SELECT t.suspension_id FROM suspended_tool t WHERE t.server = {at})"
        ));
    }
    if let Some(requester) = &filter.requester {
        let at = next(&mut args, requester.clone());
        clauses.push(format!("s.requested_by = {at}"));
    }
    if let Some(search) = &filter.search {
        let at = next(&mut args, containing(search));
        clauses.push(format!(
            "(LOWER(s.run_id) LIKE {at} ESCAPE '!' OR LOWER(s.requested_by) LIKE {at} ESCAPE '!'
              OR LOWER(s.owner) LIKE {at} ESCAPE '!'
              OR EXISTS (SELECT 1 FROM suspended_tool t WHERE t.suspension_id = s.id
                           AND LOWER(t.tool) LIKE {at} ESCAPE '!'))"
        ));
    }
    (clauses.join(" AND "), args)
}

/// # Listing runs a page at a time
impl Store {
    /// The runs `filter` lists, newest first: one page of at most `limit`,
    /// after the suspension `before` (the last of the previous page; `None`
    /// for the first). Each row as [`Store::waiting_page`] reads it, with
    /// the pending turn's calls.
    pub async fn runs_page(
        &self,
        filter: &RunFilter,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<OpenRun>, StoreError> {
        let (conditions, args) = conditions(filter);
        let bound = args.len();
        let mut query = Query::new(format!(
            "{} WHERE {conditions} AND s.id < ${} ORDER BY s.id DESC LIMIT ${}",
            super::listing(),
            bound + 1,
            bound + 2
        ));
        for arg in args {
            query = query.bind(arg);
        }
        let query = query
            .bind(before.unwrap_or(i64::MAX))
            .bind(i64::from(limit));
        self.rows_listed(query).await
    }

    /// How many runs `filter` lists — counted up to `at_most + 1` and no
    /// further, so the count costs no more than a few pages however many
    /// runs there are: a result above `at_most` means "more than
    /// `at_most`".
    pub async fn count_runs(&self, filter: &RunFilter, at_most: u32) -> Result<u64, StoreError> {
        let (conditions, args) = conditions(filter);
        let mut query = Query::new(format!(
            "SELECT COUNT(*) FROM (SELECT 1 FROM suspended_run s WHERE {conditions} LIMIT ${}) AS counted",
            args.len() + 1
        ));
        for arg in args {
            query = query.bind(arg);
        }
        let count: i64 = query
            .bind(i64::from(at_most) + 1)
            .scalar(&self.pool)
            .await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_takes_wildcards_literally() {
        assert_eq!(containing("Ab%_!c"), "%ab!%!_!!c%");
    }

    #[test]
    fn standings_round_trip_by_name() {
        for standing in Standing::ALL {
            assert_eq!(Standing::from_name(standing.as_str()), Some(standing));
        }
        assert_eq!(Standing::from_name("open"), None);
    }

    #[test]
    fn filters_bind_each_value_once_in_order() {
        let filter = RunFilter {
            tool: Some("a.b".into()),
            requester: Some("alice".into()),
            search: Some("x".into()),
            ..RunFilter::default()
        };
        let (sql, args) = conditions(&filter);
        assert_eq!(args.len(), 3);
        assert!(sql.contains("t.tool = $1") && sql.contains("s.requested_by = $2"));
        assert!(sql.contains("LIKE $3") && !sql.contains("$4"), "{sql}");
    }
}
