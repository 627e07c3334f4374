//! A run named by the first characters of its id, as an operator types it.
//!
//! The comparison is `substr(run_id, 1, length($1)) = $1`: exact on both
//! backends, with no `LIKE` pattern whose wildcards (`%`, `_`) a typed
//! prefix could carry.

use crate::db::Query;
use crate::{Store, StoreError};

/// How many characters of a run id name it, at the least: fewer is refused
/// rather than matched (a uuid's first six hex digits tell one run from
/// another among some thousands).
pub const MIN_RUN_PREFIX: usize = 6;

/// How many candidates an ambiguous prefix names.
const CANDIDATES_SHOWN: usize = 10;

/// Why a typed run id names no single run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunPrefixError {
    /// Fewer characters than [`MIN_RUN_PREFIX`], and no run has exactly
    /// that id.
    #[error(
        "`{prefix}` is too short to name a run: give at least {min} characters of its id (`toolgate runs list` shows them)"
    )]
    TooShort {
        /// What was typed, escaped for a terminal.
        prefix: String,
        /// The fewest characters that are looked up.
        min: usize,
    },
    /// No run's id begins so.
    #[error("no run `{0}` is stored (no run id begins so)")]
    NotFound(String),
    /// Several runs' ids begin so.
    #[error(
        "`{prefix}` names {count} runs: {shown}{more}; give more of the id",
        shown = candidates.join(", "),
        more = if *count > candidates.len() { ", …" } else { "" }
    )]
    Ambiguous {
        /// What was typed, escaped for a terminal.
        prefix: String,
        /// The matching runs' ids, the first few in order.
        candidates: Vec<String>,
        /// How many runs match (at least the candidates shown).
        count: usize,
    },
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Store {
    /// The one run whose id is `typed`, or begins with it.
    ///
    /// A run whose id is exactly `typed` is that run, however short. Else
    /// `typed` must have at least [`MIN_RUN_PREFIX`] characters and begin
    /// exactly one stored run's id (every suspension of a run counts as one
    /// run); several are refused naming them, none is
    /// [`RunPrefixError::NotFound`]. Surrounding white space is ignored.
    pub async fn resolve_run_prefix(&self, typed: &str) -> Result<String, RunPrefixError> {
        let typed = typed.trim();
        let shown = || toolgate::visible::visible(typed).into_owned();
        let exact: i64 = Query::new("SELECT COUNT(*) FROM suspended_run WHERE run_id = $1")
            .bind(typed)
            .scalar(&self.pool)
            .await?;
        if exact > 0 {
            return Ok(typed.to_owned());
        }
        if typed.chars().count() < MIN_RUN_PREFIX {
            return Err(RunPrefixError::TooShort {
                prefix: shown(),
                min: MIN_RUN_PREFIX,
            });
        }
        let rows = Query::new(
            "SELECT DISTINCT run_id FROM suspended_run
             WHERE substr(run_id, 1, length($1)) = $1 ORDER BY run_id",
        )
        .bind(typed)
        .fetch_all(&self.pool)
        .await?;
        let mut ids = Vec::with_capacity(rows.len());
        for row in &rows {
            ids.push(
                row.try_get::<String, _>("run_id")
                    .map_err(StoreError::from)?,
            );
        }
        match ids.as_slice() {
            [] => Err(RunPrefixError::NotFound(shown())),
            [one] => Ok(one.clone()),
            _ => Err(RunPrefixError::Ambiguous {
                prefix: shown(),
                count: ids.len(),
                candidates: ids
                    .iter()
                    .take(CANDIDATES_SHOWN)
                    .map(|id| toolgate::visible::visible(id).into_owned())
                    .collect(),
            }),
        }
    }
}
