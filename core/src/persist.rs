//! Suspended runs as versioned JSON documents.
//!
//! ```json
//! {
//!   "format": "toolgate/suspended-run",
//!   "version": 4,
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
//! stand in the document, so the body is read only once it is known to be
//! the one written, and then straight into its types. Without a key it is
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
//! Decoding is fail-closed: anything unexpected is a [`CorruptState`] with a
//! reason — an unknown version, status or field, a missing or ill-typed field,
//! an input pause without a usable schema, a pending call that does not
//! decode, a checksum that does not match — never a panic, never a default,
//! and never one kind of pause read as the other.

use schemars::Schema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::digest::{Review, sha256_hex};
use crate::input::input_schema_problem;
use crate::integrity::{IntegrityKey, MAC_PREFIX};
use crate::pause::{AwaitingApproval, Suspended, WaitingForInput};
use crate::transcript::{RunState, ToolCall};

const FORMAT: &str = "toolgate/suspended-run";
const VERSION: u64 = 4;
/// The versions this build reads.
const READS: [u64; 4] = [1, 2, 3, 4];
const FIELDS: [&str; 5] = ["format", "version", "status", "checksum", "body"];
const BODY_FIELDS: [&str; 4] = ["run", "pending", "input", "review"];

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
        let document = fields(text, "the document").ok()?;
        header(&document, "version")?.as_u64()
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
pub fn body_checksum(body: &str) -> String {
    plain_checksum(body.as_bytes())
}

const XXH3_PREFIX: &str = "xxh3-128:";

fn plain_checksum(body: &[u8]) -> String {
    format!("{XXH3_PREFIX}{:032x}", xxhash_rust::xxh3::xxh3_128(body))
}

/// True when `checksum` is a plain checksum of `body`: XXH3-128 (what this
/// build writes) or SHA-256 (what versions 1 to 3 were written with).
fn plain_checksum_holds(checksum: &str, body: &str) -> bool {
    if checksum.starts_with(XXH3_PREFIX) {
        checksum == plain_checksum(body.as_bytes())
    } else {
        checksum == sha256_hex(body.as_bytes())
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
    let seal_of = |body: &[u8]| key.map_or_else(|| plain_checksum(body), |key| key.tag(body));
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InputDocument {
    tool: String,
    call_index: usize,
    schema: Value,
}

type Fields<'a> = std::collections::BTreeMap<String, &'a RawValue>;

/// An object's fields, each left as raw JSON text, a field named twice
/// refused (JSON leaves duplicates to the reader, and two readers of one
/// document must never see two documents); `what` names the object in
/// reasons.
fn fields<'a>(text: &'a str, what: &str) -> Result<Fields<'a>, CorruptState> {
    match serde_json::from_str::<OnceEach<'a>>(text) {
        Ok(OnceEach(fields)) => Ok(fields),
        Err(error) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(_)) => corrupt(format!("{what} names a field twice: {error}")),
            Ok(value) => corrupt(format!("{what} is {}, not a JSON object", kind(&value))),
            Err(_) => corrupt(format!("not JSON: {error}")),
        },
    }
}

/// A JSON object's fields, each name at most once.
struct OnceEach<'a>(Fields<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for OnceEach<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = OnceEach<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Self::Value, M::Error> {
                let mut fields = Fields::new();
                while let Some((name, value)) = map.next_entry::<String, &'de RawValue>()? {
                    if fields.contains_key(&name) {
                        return Err(serde::de::Error::custom(format!("`{name}` appears twice")));
                    }
                    fields.insert(name, value);
                }
                Ok(OnceEach(fields))
            }
        }
        deserializer.deserialize_map(Visit(std::marker::PhantomData))
    }
}

fn decode(text: &str, key: Option<&IntegrityKey>) -> Result<SuspendedRun, CorruptState> {
    // A document laid out exactly as `seal` writes it is read in one pass
    // over its body; any other — or one that fails any check on that path —
    // is read field by field, which names what is wrong.
    let (status, (state, pending, input, review)) =
        if let Some((status, fast)) = sealed_layout(text, key) {
            let pending = decode_pending(Some(fast.pending))?;
            (status, (fast.run, pending, fast.input, fast.review))
        } else {
            read_fields(text, key)?
        };
    let review = review.unwrap_or_default();
    if !review.tools.is_empty() && review.tools.len() != pending.len() {
        return corrupt(format!(
            "`review.tools` holds {} entries for {} pending calls",
            review.tools.len(),
            pending.len()
        ));
    }
    if let Some((call, tool)) = pending
        .iter()
        .zip(&review.tools)
        .find_map(|(c, t)| t.as_ref().filter(|t| t.name != c.name).map(|t| (c, t)))
    {
        return corrupt(format!(
            "`review.tools` names `{}` for call `{}` to `{}`",
            tool.name, call.id, call.name
        ));
    }
    if state.iterations > state.options.max_iterations {
        return corrupt(format!(
            "`run.iterations` ({}) exceeds `run.options.max_iterations` ({})",
            state.iterations, state.options.max_iterations
        ));
    }
    if pending.len() > state.options.max_calls_per_turn as usize {
        return corrupt(format!(
            "`pending` holds {} calls, more than `run.options.max_calls_per_turn` ({}): no run suspends on such a turn",
            pending.len(),
            state.options.max_calls_per_turn
        ));
    }
    suspension(status, state, pending, input, review)
}

/// A document read field by field, naming the first thing wrong with it.
fn read_fields<'a>(
    text: &'a str,
    key: Option<&IntegrityKey>,
) -> Result<(SuspendedStatus, Parts<'a>), CorruptState> {
    let document = fields(text, "the document")?;
    if let Some(field) = document.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return corrupt(format!("unknown field `{field}`"));
    }
    let status = decode_header(&document, key)?;
    let body_text = document.get("body").map_or("null", |b| b.get());
    // A body that reads straight into its types needs no field-by-field
    // pass; one that does not is read again field by field, to name what is
    // wrong with it.
    let (state, pending, input, review) = match serde_json::from_str::<FastBody<'_>>(body_text) {
        Ok(fast) => (
            fast.run,
            decode_pending(Some(fast.pending))?,
            fast.input,
            fast.review,
        ),
        Err(_) => slow_body(body_text)?,
    };
    Ok((status, (state, pending, input, review)))
}

/// The document as `seal` lays it out —
/// `{"format":"F","version":N,"status":"S","checksum":"C","body":{…}}`, no
/// white space, plain header strings — with its header valid, its seal
/// verified over the body's exact text, and its body read into its types.
/// `None` for anything else: the caller reads the document field by field,
/// which accepts what this accepts (the same fields, values and body text)
/// and names what is wrong with the rest.
fn sealed_layout<'a>(
    text: &'a str,
    key: Option<&IntegrityKey>,
) -> Option<(SuspendedStatus, FastBody<'a>)> {
    // A header string with an escape or a control character is left to the
    // field-by-field reading.
    let plain = |value: &str| !value.contains(['\\', '"']) && !value.contains(char::is_control);
    let rest = text.strip_prefix("{\"format\":\"")?;
    let (format, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(",\"version\":")?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    let (version_text, rest) = rest.split_at(digits);
    let rest = rest.strip_prefix(",\"status\":\"")?;
    let (status, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(",\"checksum\":\"")?;
    let (checksum, rest) = rest.split_once('"')?;
    let body = rest.strip_prefix(",\"body\":")?.strip_suffix('}')?;
    let version: u64 = version_text.parse().ok()?;
    let well_formed = format == FORMAT
        && [format, status, checksum].into_iter().all(plain)
        // JSON numbers have no leading zeros: the digits are the number's
        // own spelling, or the document is left to the strict reading.
        && version_text == version.to_string()
        && READS.contains(&version)
        && body.starts_with('{')
        && body.ends_with('}');
    if !well_formed {
        return None;
    }
    let status = SuspendedStatus::named(status)?;
    check_seal(checksum, body, key).ok()?;
    let fast = serde_json::from_str::<FastBody<'a>>(body).ok()?;
    Some((status, fast))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastBody<'a> {
    run: RunState,
    #[serde(borrow)]
    pending: &'a RawValue,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(default)]
    review: Option<Review>,
}

type Parts<'a> = (
    RunState,
    Vec<ToolCall>,
    Option<&'a RawValue>,
    Option<Review>,
);

/// The body read field by field, naming the first thing wrong with it.
fn slow_body(text: &str) -> Result<Parts<'_>, CorruptState> {
    let body = fields(text, "`body`")?;
    if let Some(field) = body.keys().find(|k| !BODY_FIELDS.contains(&k.as_str())) {
        return corrupt(format!("unknown field `body.{field}`"));
    }
    let state: RunState = match body.get("run") {
        None => return corrupt("missing `run`"),
        Some(run) => serde_json::from_str(run.get())
            .or_else(|error| corrupt(format!("`run` is ill-formed: {error}")))?,
    };
    let pending = decode_pending(body.get("pending").copied())?;
    let review = body
        .get("review")
        .map(|review| {
            serde_json::from_str(review.get())
                .or_else(|error| corrupt(format!("`review` is ill-formed: {error}")))
        })
        .transpose()?;
    Ok((state, pending, body.get("input").copied(), review))
}

/// The suspension a decoded body describes, by its status.
fn suspension(
    status: SuspendedStatus,
    state: RunState,
    pending: Vec<ToolCall>,
    input: Option<&RawValue>,
    review: Review,
) -> Result<SuspendedRun, CorruptState> {
    match (status, input) {
        (SuspendedStatus::AwaitingApproval, None) => Ok(SuspendedRun::AwaitingApproval(
            Suspended::awaiting_approval(state, pending, review),
        )),
        (SuspendedStatus::AwaitingApproval, Some(_)) => {
            corrupt("a run awaiting approval carries no `input`; is the status wrong?")
        }
        (SuspendedStatus::WaitingForInput, None) => {
            corrupt("a run waiting for input has no `input`")
        }
        (SuspendedStatus::WaitingForInput, Some(input)) => {
            let input: InputDocument = serde_json::from_str(input.get())
                .or_else(|error| corrupt(format!("`input` is ill-formed: {error}")))?;
            let Some(call) = pending.get(input.call_index) else {
                return corrupt(format!(
                    "`input.call_index` is {} but only {} calls are pending",
                    input.call_index,
                    pending.len()
                ));
            };
            if call.name != input.tool {
                return corrupt(format!(
                    "`input.tool` is `{}` but the waiting call is to `{}`",
                    input.tool, call.name
                ));
            }
            let schema = Schema::try_from(input.schema)
                .or_else(|_| corrupt("`input.schema` is neither an object nor a boolean"))?;
            if let Some(problem) = input_schema_problem(&schema) {
                return corrupt(format!("`input.schema` cannot be used: {problem}"));
            }
            Ok(SuspendedRun::WaitingForInput(Suspended::waiting_for_input(
                state,
                pending,
                input.tool,
                input.call_index,
                schema,
                review,
            )))
        }
    }
}

/// The document's checksum or tag against its body, under the key if any.
fn check_seal(checksum: &str, body: &str, key: Option<&IntegrityKey>) -> Result<(), CorruptState> {
    let tagged = checksum.starts_with(MAC_PREFIX);
    match key {
        Some(key) if tagged => {
            if key.verify(body.as_bytes(), checksum) {
                Ok(())
            } else {
                corrupt(
                    "the document's integrity tag does not verify under this store's key: it was changed, damaged, or written under another key",
                )
            }
        }
        Some(_) => corrupt(
            "the document carries a plain checksum, but this store authenticates its documents: it was written without the key, or rewritten by someone who does not have it",
        ),
        None if tagged => corrupt(
            "the document is authenticated with an integrity key, and none is configured: it cannot be verified (set the store's key)",
        ),
        None => {
            if plain_checksum_holds(checksum, body) {
                Ok(())
            } else {
                corrupt("the checksum does not match the body: the document was changed or damaged")
            }
        }
    }
}

/// A small header field, parsed on its own.
fn header(document: &Fields<'_>, name: &str) -> Option<Value> {
    document
        .get(name)
        .map(|raw| serde_json::from_str(raw.get()).unwrap_or(Value::Null))
}

/// Format, version, checksum and status, in that order.
fn decode_header(
    document: &Fields<'_>,
    key: Option<&IntegrityKey>,
) -> Result<SuspendedStatus, CorruptState> {
    match header(document, "format") {
        None => return corrupt("missing `format`"),
        Some(Value::String(format)) if format == FORMAT => {}
        Some(Value::String(format)) => {
            return corrupt(format!("`format` is `{format}`, not `{FORMAT}`"));
        }
        Some(other) => return corrupt(format!("`format` is {}, not a string", kind(&other))),
    }
    match header(document, "version") {
        None => return corrupt("missing `version`"),
        Some(v) => match v.as_u64() {
            Some(n) if READS.contains(&n) => {}
            Some(n) => {
                return corrupt(format!(
                    "unknown version {n} (this build reads versions 1 to {VERSION})"
                ));
            }
            None => return corrupt(format!("`version` is {}, not a whole number", kind(&v))),
        },
    }
    match (header(document, "checksum"), document.get("body")) {
        (None, _) => return corrupt("missing `checksum`"),
        (Some(_), None) => return corrupt("missing `body`"),
        (Some(Value::String(checksum)), Some(body)) => check_seal(&checksum, body.get(), key)?,
        (Some(other), Some(_)) => {
            return corrupt(format!("`checksum` is {}, not a string", kind(&other)));
        }
    }
    match header(document, "status") {
        None => corrupt("missing `status`"),
        Some(Value::String(s)) => match SuspendedStatus::named(&s) {
            Some(status) => Ok(status),
            None => corrupt(format!("unknown status `{s}`")),
        },
        Some(other) => corrupt(format!("`status` is {}, not a string", kind(&other))),
    }
}

fn decode_pending(pending: Option<&RawValue>) -> Result<Vec<ToolCall>, CorruptState> {
    let Some(pending) = pending else {
        return corrupt("missing `pending`");
    };
    let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(pending.get()) else {
        let value: Value = serde_json::from_str(pending.get()).unwrap_or(Value::Null);
        return corrupt(format!("`pending` is {}, not an array", kind(&value)));
    };
    if items.is_empty() {
        return corrupt("`pending` is empty: a suspended run waits on at least one call");
    }
    let mut calls: Vec<ToolCall> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let call: ToolCall = serde_json::from_str(item.get())
            .or_else(|error| corrupt(format!("`pending[{i}]` is ill-formed: {error}")))?;
        calls.push(call);
    }
    if let Some(id) = crate::transcript::first_duplicate_id(&calls) {
        return corrupt(format!("`pending` holds the call id `{id}` twice"));
    }
    Ok(calls)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::transcript::{Message, RunOptions};

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "\\PC{0,12}".prop_map(Value::from),
        ]
    }

    fn json_value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z_]{1,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn arguments() -> impl Strategy<Value = Value> {
        prop::collection::btree_map("[a-z_]{1,6}", json_value(), 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    fn calls() -> impl Strategy<Value = Vec<ToolCall>> {
        prop::collection::vec(("[a-z_.]{1,10}", arguments()), 1..4).prop_map(|items| {
            items
                .into_iter()
                .enumerate()
                .map(|(i, (name, arguments))| ToolCall {
                    id: format!("call_{i}"),
                    name,
                    arguments,
                })
                .collect()
        })
    }

    fn message() -> impl Strategy<Value = Message> {
        prop_oneof![
            "\\PC{0,20}".prop_map(|content| Message::System { content }),
            "\\PC{0,20}".prop_map(|content| Message::User { content }),
            (proptest::option::of("\\PC{0,20}"), calls())
                .prop_map(|(content, calls)| Message::Assistant { content, calls }),
            (
                "[a-z_0-9]{1,8}",
                "[a-z_.]{1,10}",
                "\\PC{0,20}",
                any::<bool>()
            )
                .prop_map(|(call_id, name, content, is_error)| Message::Tool {
                    call_id,
                    name,
                    content,
                    is_error
                }),
        ]
    }

    fn state() -> impl Strategy<Value = RunState> {
        (
            "[a-f0-9-]{1,36}",
            "\\PC{1,12}",
            prop::collection::vec(message(), 0..6),
            1u32..40,
            any::<u32>(),
            proptest::option::of(prop::collection::vec("[a-z_.]{1,10}", 0..4)),
            any::<bool>(),
        )
            .prop_map(
                |(run_id, requested_by, transcript, max_iterations, i, allow, four_eyes)| {
                    RunState {
                        run_id,
                        requested_by,
                        transcript,
                        iterations: i % (max_iterations + 1),
                        options: RunOptions {
                            max_iterations,
                            allow,
                            four_eyes,
                            ..RunOptions::default()
                        },
                        denied: Vec::new(),
                    }
                },
            )
    }

    fn suspended() -> impl Strategy<Value = SuspendedRun> {
        (
            state(),
            calls(),
            any::<bool>(),
            any::<prop::sample::Index>(),
        )
            .prop_map(|(state, pending, input, index)| {
                if input {
                    let call_index = index.index(pending.len());
                    let tool = pending[call_index].name.clone();
                    let schema = Schema::try_from(json!({
                        "type": "object",
                        "properties": {"name": {"type": "string", "minLength": 1}},
                        "required": ["name"]
                    }))
                    .unwrap_or_default();
                    SuspendedRun::WaitingForInput(Suspended::waiting_for_input(
                        state,
                        pending,
                        tool,
                        call_index,
                        schema,
                        Review::default(),
                    ))
                } else {
                    SuspendedRun::AwaitingApproval(Suspended::awaiting_approval(
                        state,
                        pending,
                        Review::default(),
                    ))
                }
            })
    }

    /// Every node of a JSON value, as paths of keys and indices.
    fn paths(value: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(prefix.clone());
        match value {
            Value::Object(map) => {
                for (key, item) in map {
                    prefix.push(key.clone());
                    paths(item, prefix, out);
                    prefix.pop();
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    prefix.push(i.to_string());
                    paths(item, prefix, out);
                    prefix.pop();
                }
            }
            _ => {}
        }
    }

    fn node<'a>(value: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
        path.iter().try_fold(value, |v, part| match v {
            Value::Object(map) => map.get_mut(part),
            Value::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
            _ => None,
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn encode_then_decode_is_the_identity(run in suspended()) {
            let text = run.encode().map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(SuspendedRun::decode(&text), Ok(run));
        }

        #[test]
        fn decoding_arbitrary_text_never_panics(text in "\\PC{0,200}") {
            let _ = SuspendedRun::decode(&text);
        }

        #[test]
        fn decoding_arbitrary_json_never_panics(value in json_value()) {
            let _ = SuspendedRun::decode(&value.to_string());
        }

        /// A mutated document either fails to decode or decodes to exactly
        /// the run that was encoded — never to another run.
        #[test]
        fn a_mutated_document_never_decodes_to_another_run(
            run in suspended(),
            which in any::<prop::sample::Index>(),
            replacement in json_value(),
            delete in any::<bool>(),
        ) {
            let text = run.encode().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut value: Value = serde_json::from_str(&text)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut all = Vec::new();
            paths(&value, &mut Vec::new(), &mut all);
            let path = which.get(&all).clone();
            if delete && !path.is_empty() {
                let (last, parent) = path.split_last().map_or((String::new(), &[][..]), |(l, p)| (l.clone(), p));
                match node(&mut value, parent) {
                    Some(Value::Object(map)) => { map.remove(&last); }
                    Some(Value::Array(items)) => {
                        if let Ok(i) = last.parse::<usize>() && i < items.len() { items.remove(i); }
                    }
                    _ => {}
                }
            } else if let Some(slot) = node(&mut value, &path) {
                *slot = replacement;
            }
            match SuspendedRun::decode(&value.to_string()) {
                Ok(decoded) => prop_assert_eq!(decoded, run),
                Err(error) => prop_assert!(!error.reason.is_empty()),
            }
        }
    }

    /// What a document reads as through the field-by-field reading alone.
    fn by_fields(text: &str) -> Result<SuspendedRun, CorruptState> {
        let (status, (state, pending, input, review)) = read_fields(text, None)?;
        let review = review.unwrap_or_default();
        suspension(status, state, pending, input, review)
    }

    /// Edits of a sealed document's text that keep or break its layout: the
    /// one-pass reading accepts a document only when the field-by-field
    /// reading accepts it too, as the same run.
    fn layout_edits(text: &str) -> Vec<String> {
        let body_at = text.find(",\"body\":").unwrap_or(0);
        let mut edits = vec![
            text.to_owned(),
            format!("{text} "),
            format!(" {text}"),
            text.replacen(",\"body\":", ", \"body\": ", 1),
            text.replacen(",\"body\":{", ",\"body\": {", 1),
            text.replacen("\"version\":4", "\"version\":04", 1),
            text.replacen("\"version\":4", "\"version\":4.0", 1),
            text.replacen("\"status\":\"", "\"status\":\"\\u0061", 1),
            text.replacen("\"format\":\"toolgate", "\"format\":\"\\u0074oolgate", 1),
            format!("{}}},\"body\":{{}}}}", &text[..text.len() - 1]),
            format!("{}  }}", &text[..text.len() - 1]),
        ];
        if body_at > 0 {
            edits.push(format!(
                "{},\"extra\":1{}",
                &text[..body_at],
                &text[body_at..]
            ));
        }
        edits
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn the_one_pass_reading_accepts_only_what_the_field_by_field_reading_accepts(
            run in suspended()
        ) {
            let text = run.encode().map_err(|e| TestCaseError::fail(e.to_string()))?;
            for edited in layout_edits(&text) {
                let fast = decode(&edited, None);
                let slow = by_fields(&edited);
                match (&fast, &slow) {
                    (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
                    (Err(a), Err(b)) => prop_assert_eq!(&a.reason, &b.reason),
                    _ => prop_assert!(false, "the readings disagree on {edited}: {fast:?} / {slow:?}"),
                }
            }
            // The document as written takes the one-pass path, and reads back.
            prop_assert!(sealed_layout(&text, None).is_some());
            prop_assert_eq!(decode(&text, None).map_err(|e| TestCaseError::fail(e.reason))?, run);
        }
    }
}
