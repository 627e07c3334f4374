//! What each integrity tag covers — every layout the store tags under its
//! key, in one place. A tag is HMAC-SHA-256 under the store's integrity key
//! ([`toolgate::integrity`]) over the bytes a function here lays out; the row
//! that carries it is read as written by a host or an operator of this store
//! only when the tag verifies over the same bytes laid out from the row as
//! read. Each layout starts with its own name and version, so no tag of one
//! kind of row is ever a tag of another.
//!
//! | row | layout | covers |
//! |---|---|---|
//! | `decision` | [`decision`] | the suspension it decided, and every field of the decision record but whether it was voided later; an input decision's data |
//! | `turn_plan` | [`plan`] | the suspension, the turn's number, and the plan as stored |
//! | `call_execution` (ended) | [`result`] | the suspension, the turn, the call's place, and its result as stored |
//! | `execution_choice` | [`choice`] | the suspension, the turn, the call's place, the attempt, the choice, who chose and where the name came from, the call's id and the digest it was shown, why, and when |
//! | `record_link` | [`link`] | the suspension, the link's place in its chain, the tag of the link before it, and the event it records |
//! | `suspended_run.chain_mac` | [`chain_head`] | the suspension, how many links its chain holds, and the last one's tag |
//!
//! The suspended run's own document is sealed by the core
//! ([`toolgate::suspend::SuspendedRun::encode_with`] and its checksum), not
//! here.

use toolgate::audit::DecisionRecord;

/// What a decision row's tag covers: the suspension it decided, and every
/// field of the record, in the record's own serialisation (fixed field order).
pub(crate) fn decision(
    suspension_id: i64,
    record: &DecisionRecord,
    input: Option<&str>,
) -> Vec<u8> {
    let mut bytes = format!("toolgate.decision.v1\n{suspension_id}\n").into_bytes();
    // What was decided is covered; whether it was voided later is not (a
    // voided decision keeps the tag it was written with).
    let decided = DecisionRecord {
        voided: None,
        ..record.clone()
    };
    // Serialising a record of plain fields to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut bytes, &decided);
    // The data an input decision submitted; rows without it keep the tag
    // they were written with before input was stored.
    if let Some(input) = input {
        bytes.extend_from_slice(b"\ninput\n");
        bytes.extend_from_slice(input.as_bytes());
    }
    bytes
}

/// What a link of a suspension's record chain covers (`crate::chain`).
pub(crate) fn link(suspension_id: i64, seq: i64, prev: &str, event: &str) -> Vec<u8> {
    format!("toolgate.link.v1\n{suspension_id}\n{seq}\n{prev}\n{event}").into_bytes()
}

/// What a suspension's chain head covers (`crate::chain`).
pub(crate) fn chain_head(suspension_id: i64, links: i64, last: &str) -> Vec<u8> {
    format!("toolgate.chain.v1\n{suspension_id}\n{links}\n{last}").into_bytes()
}

/// What a plan row's tag covers.
pub(crate) fn plan(suspension_id: i64, turn: i64, plan: &str) -> Vec<u8> {
    format!("toolgate.plan.v1\n{suspension_id}\n{turn}\n{plan}").into_bytes()
}

/// What a call result's tag covers.
pub(crate) fn result(suspension_id: i64, turn: i64, index: i64, output: &str) -> Vec<u8> {
    format!("toolgate.result.v1\n{suspension_id}\n{turn}\n{index}\n{output}").into_bytes()
}

/// An operator's choice on a call whose outcome is unknown, as its tag
/// covers it.
pub(crate) struct Choice<'a> {
    pub(crate) suspension_id: i64,
    pub(crate) turn: i64,
    pub(crate) index: i64,
    pub(crate) attempt: i64,
    pub(crate) chose: &'a str,
    pub(crate) by: &'a str,
    pub(crate) source: &'a str,
    /// The call's id and the digest the chooser was shown; `None` for a
    /// choice recorded before choices named their call.
    pub(crate) named: Option<(&'a str, &'a str)>,
    pub(crate) reason: Option<&'a str>,
    pub(crate) at_unix_ms: i64,
    /// How it reached the record; `None` for a choice recorded before
    /// channels were kept.
    pub(crate) channel: Option<&'a str>,
}

/// What a choice's tag covers. Choices recorded before they named their call
/// keep the layout they were tagged with (`v1`: who chose what, no more);
/// those recorded before channels were kept, theirs (`v2`); from then on the
/// channel is covered too (`v3`).
pub(crate) fn choice(c: &Choice<'_>) -> Vec<u8> {
    match c.named {
        Some((call_id, digest)) => {
            let layout: &[u8] = if c.channel.is_some() {
                b"toolgate.choice.v3\n"
            } else {
                b"toolgate.choice.v2\n"
            };
            let mut bytes = layout.to_vec();
            // An array of plain values written to a Vec cannot fail.
            let _ = serde_json::to_writer(
                &mut bytes,
                &serde_json::json!([
                    c.suspension_id,
                    c.turn,
                    c.index,
                    c.attempt,
                    c.chose,
                    c.by,
                    c.source,
                    call_id,
                    digest,
                    c.reason,
                    c.at_unix_ms,
                ]),
            );
            if let Some(channel) = c.channel {
                bytes.push(b'\n');
                bytes.extend_from_slice(channel.as_bytes());
            }
            bytes
        }
        None => format!(
            "toolgate.choice.v1\n{}\n{}\n{}\n{}\n{}\n{}",
            c.suspension_id, c.turn, c.index, c.attempt, c.chose, c.by
        )
        .into_bytes(),
    }
}
