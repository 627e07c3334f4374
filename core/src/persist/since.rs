//! What each version of the document may hold: a field is read only under
//! the versions that know it.
//!
//! The run is read with every field a later version added kept as present
//! or absent, then held to the version the document declares:
//!
//! | field | from | before it | from it on |
//! |---|---|---|---|
//! | `run.options.max_calls_per_turn` | 2 | refused | required |
//! | `run.options.approvals_required` | 3 | refused | optional (absent: 1) |
//! | `run.options.decision_ttl_ms` | 3 | refused | optional (absent: no limit) |
//! | `run.options.denied_repeats` | 3 | refused | optional (absent: 2) |
//! | `run.denied` | 3 | refused | optional (absent: none) |
//! | `body.review` | 3 | refused | optional (absent: a turn paused before reviews were kept) |
//! | `run.options.one_call` | 6 | refused | optional (absent: a run with a model) |
//! | `run.client` | 6 | refused | optional (absent: no client asked) |
//! | `rich` of a `tool` message of `run.transcript` | 7 | refused | optional (absent: a result that is text alone) |
//! | `usage` of an `assistant` message of `run.transcript` | 8 | refused | optional (absent: the model reported no usage) |
//! | `cache_write_input_tokens` of a `usage` of `run.transcript` | 9 | refused unless 0 | optional (absent: 0) |
//! | `reasoning_tokens` of a `usage` of `run.transcript` | 9 | refused unless 0 | optional (absent: 0) |
//!
//! A field a version always writes is required from that version on; a
//! field stored by its absence when it holds its default stays optional,
//! since a writer of that version leaves it out. Either way a field older
//! than the version that introduced it is refused: a document does not read
//! a later version's field under an earlier version's label. A count of 0
//! means what its absence means, and is read as that absence.

use serde::Deserialize;

use super::{CorruptState, corrupt};
use crate::identity::DeclaredClient;
use crate::transcript::{
    DEFAULT_DENIED_REPEATS, DEFAULT_MAX_CALLS_PER_TURN, DeniedCall, Message, RunOptions, RunState,
};

/// The version that added `max_calls_per_turn`.
const CALL_CAP: u64 = 2;
/// The version that added reviews, several approvers, decision expiry and
/// the denied calls.
const REVIEWS: u64 = 3;
/// The version that added runs of one call and the client a requester
/// asked through.
const ONE_CALL: u64 = 6;
/// The version that added what a tool answered beyond its text.
const RICH: u64 = 7;
/// The version that added the tokens a model request cost.
const USAGE: u64 = 8;
/// The version that added a request's cache writes and reasoning tokens.
const USAGE_DETAIL: u64 = 9;

/// A run as a document stores it, each later field kept as present or not.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StoredRun {
    run_id: String,
    requested_by: String,
    transcript: Vec<Message>,
    iterations: u32,
    options: StoredOptions,
    denied: Option<Vec<DeniedCall>>,
    client: Option<DeclaredClient>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredOptions {
    max_iterations: u32,
    allow: Option<Vec<String>>,
    four_eyes: bool,
    max_calls_per_turn: Option<u32>,
    approvals_required: Option<u32>,
    decision_ttl_ms: Option<u64>,
    denied_repeats: Option<u32>,
    one_call: Option<bool>,
}

/// Refuses `field` in a document older than the version that added it.
fn known(field: &str, since: u64, version: u64, present: bool) -> Result<(), CorruptState> {
    if present && version < since {
        return corrupt(format!(
            "`{field}` was added in version {since}; a version-{version} document cannot hold it"
        ));
    }
    Ok(())
}

impl StoredRun {
    /// The run, held to what a document of `version` may hold.
    pub(super) fn at_version(self, version: u64) -> Result<RunState, CorruptState> {
        let StoredRun {
            run_id,
            requested_by,
            transcript,
            iterations,
            options,
            denied,
            client,
        } = self;
        let max_calls = "run.options.max_calls_per_turn";
        known(
            max_calls,
            CALL_CAP,
            version,
            options.max_calls_per_turn.is_some(),
        )?;
        if version >= CALL_CAP && options.max_calls_per_turn.is_none() {
            return corrupt(format!(
                "missing `{max_calls}`: every document from version {CALL_CAP} holds it"
            ));
        }
        known(
            "run.options.approvals_required",
            REVIEWS,
            version,
            options.approvals_required.is_some(),
        )?;
        known(
            "run.options.decision_ttl_ms",
            REVIEWS,
            version,
            options.decision_ttl_ms.is_some(),
        )?;
        known(
            "run.options.denied_repeats",
            REVIEWS,
            version,
            options.denied_repeats.is_some(),
        )?;
        known("run.denied", REVIEWS, version, denied.is_some())?;
        known(
            "run.options.one_call",
            ONE_CALL,
            version,
            options.one_call.is_some(),
        )?;
        known("run.client", ONE_CALL, version, client.is_some())?;
        transcript_known(&transcript, version)?;
        Ok(RunState {
            run_id,
            requested_by,
            transcript,
            iterations,
            options: RunOptions {
                max_iterations: options.max_iterations,
                allow: options.allow,
                four_eyes: options.four_eyes,
                max_calls_per_turn: options
                    .max_calls_per_turn
                    .unwrap_or(DEFAULT_MAX_CALLS_PER_TURN),
                approvals_required: options.approvals_required.unwrap_or(1),
                decision_ttl_ms: options.decision_ttl_ms,
                denied_repeats: options.denied_repeats.unwrap_or(DEFAULT_DENIED_REPEATS),
                one_call: options.one_call.unwrap_or(false),
            },
            denied: denied.unwrap_or_default(),
            client,
        })
    }
}

/// Refuses what a later version added to the transcript's messages in a
/// document older than it.
fn transcript_known(transcript: &[Message], version: u64) -> Result<(), CorruptState> {
    known(
        "run.transcript[].rich",
        RICH,
        version,
        transcript
            .iter()
            .any(|m| matches!(m, Message::Tool { rich: Some(_), .. })),
    )?;
    known(
        "run.transcript[].usage",
        USAGE,
        version,
        transcript
            .iter()
            .any(|m| matches!(m, Message::Assistant { usage: Some(_), .. })),
    )?;
    let usages = || {
        transcript.iter().filter_map(|m| match m {
            Message::Assistant { usage, .. } => usage.as_ref(),
            _ => None,
        })
    };
    known(
        "run.transcript[].usage.cache_write_input_tokens",
        USAGE_DETAIL,
        version,
        usages().any(|u| u.cache_write_input_tokens != 0),
    )?;
    known(
        "run.transcript[].usage.reasoning_tokens",
        USAGE_DETAIL,
        version,
        usages().any(|u| u.reasoning_tokens != 0),
    )
}

/// Refuses a review in a document older than the version that added it.
pub(super) fn review_known(version: u64, present: bool) -> Result<(), CorruptState> {
    known("body.review", REVIEWS, version, present)
}
