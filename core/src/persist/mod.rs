//! Suspended runs as versioned JSON documents.
//!
//! ```json
//! {
//!   "format": "toolgate/suspended-run",
//!   "version": 5,
//!   "status": "awaiting_approval",
//!   "checksum": "xxh3-128:…",
//!   "body": {
//!     "run": { "run_id": "…", "requested_by": "…", "transcript": [], "iterations": 1,
//!              "options": { "max_iterations": 16, "allow": null, "four_eyes": false,
//!                           "max_calls_per_turn": 128 } },
//!     "pending": [ { "id": "…", "name": "…", "arguments": {} } ]
//!   }
//! }
//! ```
//!
//! A run waiting for input adds `"input": { "tool", "call_index", "schema" }`
//! to the body. The checksum is taken over the body's bytes exactly as they
//! stand in the document: the body is read in the same pass as the header,
//! and what it reads as is used only once its text is known to be the one
//! written. Without a key it is
//! a plain checksum — XXH3-128 (`xxh3-128:…`) from version 4, SHA-256
//! (`sha256:…`) before — which anyone can recompute: it catches accidents
//! (a damaged or truncated document), never a writer. With an
//! [`IntegrityKey`] it is an HMAC-SHA-256 tag instead (`hmac-sha256:…`),
//! which catches a database writer who changed the document and recomputed
//! a plain checksum.
//!
//! Version 2 added `max_calls_per_turn` to the options. A version-1 document
//! still decodes (the cap takes its default), and its turn digest is the
//! second rule's. Version 3 adds `"review"` to the body — when the turn
//! paused, and for each pending call the tool as the reviewer is shown it
//! (name, description, parameter schema) and whether it needs approval —
//! which the turn digest then binds too; it may add the run options
//! `approvals_required`, `decision_ttl_ms` and `denied_repeats`, and the
//! run's `denied` calls. Documents of versions 1 and 2 decode with no review
//! (their digest stays the second rule's) and are written back as the
//! current version. Version 4 changes only the plain checksum, from SHA-256
//! to XXH3-128: it guards against the same accidents, and costs a
//! fraction of the time (two SHA-256 passes over a large body took about a
//! third of writing and reading a document). Either plain checksum is
//! accepted on any version; a build that reads only up to version 3 refuses
//! a version-4 document as of an unknown version, not as damaged.
//!
//! Version 5 seals the header too: its checksum or tag is taken over the
//! lines `toolgate/suspended-run`, the version and the status, then the
//! body's bytes. Before it, the seal covered the body alone, so a writer
//! without the key could change a document's version label or status
//! unnoticed; a version-5 document relabelled as an earlier version, or
//! with its status changed, no longer matches its seal. Documents of
//! versions 1 to 4 keep the body-only seal they were written with.
//!
//! Version 6 adds the run option `one_call`, written only when true: a run
//! of one call ([`Agent::call`](crate::Agent::call)), which finishes with
//! its call's result and asks no model; and the run's `client`, the MCP
//! client its requester asked through, as it declared itself, written only
//! when there is one. A document of version 5 or earlier
//! that holds either is refused; a build that reads only up to version 5 refuses
//! a version-6 document as of an unknown version, so no such build resumes a
//! run of one call as a run with a model.
//!
//! Version 7 adds `rich` to a `tool` message of the transcript: what a tool
//! answered beyond its text. Version 8 adds `usage` to an `assistant`
//! message: the tokens the request that produced it cost. Version 9 adds
//! two counts to that usage, each written only when not zero:
//! `cache_write_input_tokens`, the input the provider wrote to its prompt
//! cache, and `reasoning_tokens`, the output the model spent on reasoning.
//! A document of version 8 or earlier that counts either is refused; a
//! zero there reads as the absence it means.
//!
//! A field is read only under the versions that know it. From version 2,
//! `max_calls_per_turn` is required (every writer of that version writes
//! it); a version-1 document that holds it is refused. The fields version 3
//! added — `review`, `approvals_required`, `decision_ttl_ms`,
//! `denied_repeats`, `denied` — are stored by their absence when they hold
//! their defaults, so they stay optional from version 3 on, and a document
//! of version 1 or 2 that holds any of them is refused: a later version's
//! field is never read under an earlier version's label.
//! Decoding is fail-closed: anything unexpected is a [`CorruptState`] with a
//! reason — an unknown version, status or field, a missing or ill-typed field,
//! an input pause without a usable schema, a pending call that does not
//! decode, a checksum that does not match — never a panic, never a default,
//! and never one kind of pause read as the other.

use serde::Serialize;
use serde_json::Value;

use crate::digest::{Review, sha256_hex};
use crate::integrity::IntegrityKey;
use crate::pause::{AwaitingApproval, Suspended, WaitingForInput};
use crate::transcript::{RunState, ToolCall};

mod object;
mod plan;
mod read;
mod since;
#[cfg(test)]
mod tests;

#[cfg(feature = "test-util")]
pub use plan::plan_checksum;
use read::decode;

const FORMAT: &str = "toolgate/suspended-run";
const VERSION: u64 = 9;
/// The versions this build reads.
const READS: [u64; 9] = [1, 2, 3, 4, 5, 6, 7, 8, 9];
/// The first version whose seal covers the header's format, version and
/// status as well as the body.
const HEADER_SEALED: u64 = 5;

/// What a document's seal covers before its body: nothing before version 5;
/// from it, the format, the version and the status, a line each.
fn sealed_header(version: u64, status: &str) -> String {
    if version >= HEADER_SEALED {
        format!("{FORMAT}\n{version}\n{status}\n")
    } else {
        String::new()
    }
}

/// A stored run could not be read. The reason says what is wrong; the source,
/// where there is one, is the parser's own error.
#[derive(Debug, Clone, thiserror::Error)]
#[error("corrupt suspended run: {reason}")]
pub struct CorruptState {
    /// What is wrong.
    pub reason: String,
    #[source]
    source: Option<crate::error::Cause>,
}

impl CorruptState {
    /// A corrupt state with a reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            source: None,
        }
    }

    /// A corrupt state with a reason and the error that caused it.
    pub fn with_source(
        reason: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            reason: reason.into(),
            source: Some(std::sync::Arc::new(source)),
        }
    }
}

/// Compares reasons: two refusals that read the same are the same to a
/// caller, whatever their causes' types.
impl PartialEq for CorruptState {
    fn eq(&self, other: &Self) -> bool {
        self.reason == other.reason
    }
}

impl Eq for CorruptState {}

fn corrupt<T>(reason: impl Into<String>) -> Result<T, CorruptState> {
    Err(CorruptState::new(reason))
}

/// A suspended run could not be encoded.
#[derive(Debug, thiserror::Error)]
#[error("the suspended run could not be encoded: {0}")]
pub struct EncodeError(#[from] serde_json::Error);

/// The status discriminator of a stored run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuspendedStatus {
    /// `awaiting_approval`
    AwaitingApproval,
    /// `waiting_for_input`
    WaitingForInput,
}

impl SuspendedStatus {
    /// The stored spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            SuspendedStatus::AwaitingApproval => "awaiting_approval",
            SuspendedStatus::WaitingForInput => "waiting_for_input",
        }
    }

    /// The status a stored spelling names, if any.
    fn named(text: &str) -> Option<Self> {
        [
            SuspendedStatus::AwaitingApproval,
            SuspendedStatus::WaitingForInput,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }

    fn describe(self) -> &'static str {
        match self {
            SuspendedStatus::AwaitingApproval => "a run awaiting approval",
            SuspendedStatus::WaitingForInput => "a run waiting for input",
        }
    }
}

/// Either kind of suspended run, as read from a document of unknown status.
#[derive(Debug, Clone, PartialEq)]
pub enum SuspendedRun {
    /// Waits for a verdict.
    AwaitingApproval(Suspended<AwaitingApproval>),
    /// Waits for data.
    WaitingForInput(Suspended<WaitingForInput>),
}

impl SuspendedRun {
    /// The format version a document says it was written in, if it says one:
    /// for a store that keeps columns written under an earlier version's rules
    /// (a version-1 row's digest column holds the first digest rule's value).
    pub fn written_version(text: &str) -> Option<u64> {
        read::written_version(text)
    }

    /// Reads a document of either status that carries a plain checksum.
    pub fn decode(text: &str) -> Result<Self, CorruptState> {
        decode(text, None)
    }

    /// Reads a document of either status. With a key, the document must carry
    /// a tag that verifies under it; without one, a plain checksum that
    /// matches. Either way, anything else is refused.
    pub fn decode_with(text: &str, key: Option<&IntegrityKey>) -> Result<Self, CorruptState> {
        decode(text, key)
    }

    /// The document's status.
    pub fn status(&self) -> SuspendedStatus {
        match self {
            SuspendedRun::AwaitingApproval(_) => SuspendedStatus::AwaitingApproval,
            SuspendedRun::WaitingForInput(_) => SuspendedStatus::WaitingForInput,
        }
    }

    /// The run's identifier.
    pub fn run_id(&self) -> &str {
        self.state().run_id.as_str()
    }

    /// The run as it was when it paused.
    pub fn state(&self) -> &RunState {
        match self {
            SuspendedRun::AwaitingApproval(run) => run.state(),
            SuspendedRun::WaitingForInput(run) => run.state(),
        }
    }

    /// The turn that waits.
    pub fn pending(&self) -> &[ToolCall] {
        match self {
            SuspendedRun::AwaitingApproval(run) => run.pending(),
            SuspendedRun::WaitingForInput(run) => run.pending(),
        }
    }

    /// The same turn asked again: see [`Suspended::asked_again`].
    #[must_use]
    pub fn asked_again(self) -> Self {
        match self {
            SuspendedRun::AwaitingApproval(run) => {
                SuspendedRun::AwaitingApproval(run.asked_again())
            }
            SuspendedRun::WaitingForInput(run) => SuspendedRun::WaitingForInput(run.asked_again()),
        }
    }

    /// When approving stops being possible, if the run has a decision time
    /// limit.
    pub fn expires_at_ms(&self) -> Option<u64> {
        match self {
            SuspendedRun::AwaitingApproval(run) => run.expires_at_ms(),
            SuspendedRun::WaitingForInput(run) => run.expires_at_ms(),
        }
    }

    /// What the reviewer is shown of each pending call's tool.
    pub fn review(&self) -> &Review {
        match self {
            SuspendedRun::AwaitingApproval(run) => run.review(),
            SuspendedRun::WaitingForInput(run) => run.review(),
        }
    }

    /// The digest of the turn that waits.
    pub fn digest(&self) -> crate::digest::TurnDigest {
        match self {
            SuspendedRun::AwaitingApproval(run) => run.digest(),
            SuspendedRun::WaitingForInput(run) => run.digest(),
        }
    }

    /// Writes the document with a plain checksum.
    pub fn encode(&self) -> Result<String, EncodeError> {
        self.encode_with(None)
    }

    /// Writes the document, tagged under `key` when one is given.
    pub fn encode_with(&self, key: Option<&IntegrityKey>) -> Result<String, EncodeError> {
        match self {
            SuspendedRun::AwaitingApproval(run) => run.encode_with(key),
            SuspendedRun::WaitingForInput(run) => run.encode_with(key),
        }
    }
}

/// The plain checksum a document carries for its body without a key:
/// XXH3-128 over the body's JSON text, byte for byte, as `xxh3-128:<hex>`.
/// Anyone can compute it, so it proves a document undamaged, never
/// unchanged: configure an [`IntegrityKey`] for that.
///
/// This is the checksum of a document of version 4 or earlier; from version
/// 5 the checksum covers the header too ([`document_checksum`]).
#[cfg(feature = "test-util")]
pub fn body_checksum(body: &str) -> String {
    plain_checksum(&[body.as_bytes()])
}

/// The plain checksum of a document of `version` declaring `status`, over
/// what that version seals: from version 5 the format, version and status
/// before the body; before it the body alone.
#[cfg(feature = "test-util")]
pub fn document_checksum(version: u64, status: &str, body: &str) -> String {
    plain_checksum(&[sealed_header(version, status).as_bytes(), body.as_bytes()])
}

const XXH3_PREFIX: &str = "xxh3-128:";

pub(super) fn plain_checksum(parts: &[&[u8]]) -> String {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for part in parts {
        hasher.update(part);
    }
    format!("{XXH3_PREFIX}{:032x}", hasher.digest128())
}

/// The seal of a document's `parts` (what it seals, in order): a tag under
/// `key`, or a plain checksum without one. The one making of a seal, for
/// suspended runs and turn plans alike.
pub(super) fn seal_of(parts: &[&[u8]], key: Option<&IntegrityKey>) -> String {
    key.map_or_else(|| plain_checksum(parts), |key| key.tag_parts(parts))
}

/// Why `checksum` is not the seal of `parts` under `key`, if it is not: the
/// one reading of a seal. With a key only a tag that verifies under it is
/// taken; without one only a plain checksum that matches; a tag read
/// without a key, or a plain checksum read with one, is refused.
pub(super) fn seal_problem(
    checksum: &str,
    parts: &[&[u8]],
    key: Option<&IntegrityKey>,
) -> Option<&'static str> {
    let tagged = checksum.starts_with(crate::integrity::MAC_PREFIX);
    match key {
        Some(key) if tagged => (!key.verify_parts(parts, checksum)).then_some(
            "the document's integrity tag does not verify under this store's key: it was changed, damaged, or written under another key",
        ),
        Some(_) => Some(
            "the document carries a plain checksum, but this store authenticates its documents: it was written without the key, or rewritten by someone who does not have it",
        ),
        None if tagged => Some(
            "the document is authenticated with an integrity key, and none is configured: it cannot be verified (set the store's key)",
        ),
        None => (!plain_checksum_holds(checksum, parts)).then_some(
            "the checksum does not match the body: the document was changed or damaged",
        ),
    }
}

/// True when `checksum` is a plain checksum of `parts`: XXH3-128 (what this
/// build writes) or SHA-256 (what versions 1 to 3 were written with).
fn plain_checksum_holds(checksum: &str, parts: &[&[u8]]) -> bool {
    if checksum.starts_with(XXH3_PREFIX) {
        checksum == plain_checksum(parts)
    } else {
        checksum == sha256_hex(&parts.concat())
    }
}

#[derive(Serialize)]
struct BodyOut<'a> {
    run: &'a RunState,
    pending: &'a [ToolCall],
    #[serde(skip_serializing_if = "Option::is_none")]
    input: Option<InputOut<'a>>,
    #[serde(skip_serializing_if = "is_unkept")]
    review: &'a Review,
}

/// A turn paused before reviews were kept is written without one.
#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference to the field"
)]
fn is_unkept(review: &&Review) -> bool {
    review.tools.is_empty() && review.paused_at_ms == 0
}

#[derive(Serialize)]
struct InputOut<'a> {
    tool: &'a str,
    call_index: usize,
    schema: &'a Value,
}

fn seal(
    status: SuspendedStatus,
    body: &BodyOut<'_>,
    key: Option<&IntegrityKey>,
) -> Result<String, EncodeError> {
    // The body is written once, in place, after a header whose checksum is
    // filled in when the body is known: no second copy of a large body.
    let header = sealed_header(VERSION, status.as_str());
    let seal_of = |body: &[u8]| seal_of(&[header.as_bytes(), body], key);
    let width = seal_of(b"").len();
    let mut document = Vec::with_capacity(4096);
    document.extend_from_slice(
        format!(
            "{{\"format\":\"{FORMAT}\",\"version\":{VERSION},\"status\":\"{}\",\"checksum\":\"",
            status.as_str()
        )
        .as_bytes(),
    );
    let at = document.len();
    document.resize(at + width, b'0');
    document.extend_from_slice(b"\",\"body\":");
    let start = document.len();
    serde_json::to_writer(&mut document, body)?;
    let checksum = seal_of(&document[start..]);
    // Every seal of one kind has one width (a prefix and 64 hex digits).
    if checksum.len() != width {
        return Err(EncodeError(serde::ser::Error::custom(
            "the document's seal changed width",
        )));
    }
    document[at..at + width].copy_from_slice(checksum.as_bytes());
    document.push(b'}');
    // Serialised JSON and ASCII seals are UTF-8.
    String::from_utf8(document)
        .map_err(|_| EncodeError(serde::ser::Error::custom("the document is not UTF-8")))
}

impl Suspended<AwaitingApproval> {
    /// Writes the versioned document with a plain checksum.
    pub fn encode(&self) -> Result<String, EncodeError> {
        self.encode_with(None)
    }

    /// Writes the versioned document, tagged under `key` when one is given.
    pub fn encode_with(&self, key: Option<&IntegrityKey>) -> Result<String, EncodeError> {
        let body = BodyOut {
            run: &self.state,
            pending: &self.pending,
            input: None,
            review: &self.review,
        };
        seal(SuspendedStatus::AwaitingApproval, &body, key)
    }

    /// Reads a document that must hold a run awaiting approval.
    pub fn decode(text: &str) -> Result<Self, CorruptState> {
        Self::decode_with(text, None)
    }

    /// Reads a document that must hold a run awaiting approval, verified as
    /// [`SuspendedRun::decode_with`] does.
    pub fn decode_with(text: &str, key: Option<&IntegrityKey>) -> Result<Self, CorruptState> {
        match decode(text, key)? {
            SuspendedRun::AwaitingApproval(run) => Ok(run),
            other @ SuspendedRun::WaitingForInput(_) => corrupt(format!(
                "the document holds {}, not a run awaiting approval",
                other.status().describe()
            )),
        }
    }
}

impl Suspended<WaitingForInput> {
    /// Writes the versioned document with a plain checksum.
    pub fn encode(&self) -> Result<String, EncodeError> {
        self.encode_with(None)
    }

    /// Writes the versioned document, tagged under `key` when one is given.
    pub fn encode_with(&self, key: Option<&IntegrityKey>) -> Result<String, EncodeError> {
        let body = BodyOut {
            run: &self.state,
            pending: &self.pending,
            input: Some(InputOut {
                tool: &self.pause.tool,
                call_index: self.pause.call_index,
                schema: self.pause.schema.as_value(),
            }),
            review: &self.review,
        };
        seal(SuspendedStatus::WaitingForInput, &body, key)
    }

    /// Reads a document that must hold a run waiting for input.
    pub fn decode(text: &str) -> Result<Self, CorruptState> {
        Self::decode_with(text, None)
    }

    /// Reads a document that must hold a run waiting for input, verified as
    /// [`SuspendedRun::decode_with`] does.
    pub fn decode_with(text: &str, key: Option<&IntegrityKey>) -> Result<Self, CorruptState> {
        match decode(text, key)? {
            SuspendedRun::WaitingForInput(run) => Ok(run),
            other @ SuspendedRun::AwaitingApproval(_) => corrupt(format!(
                "the document holds {}, not a run waiting for input",
                other.status().describe()
            )),
        }
    }
}
