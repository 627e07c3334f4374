//! Suspended runs as versioned JSON documents (SPEC §6).
//!
//! ```json
//! {
//!   "format": "toolgate/suspended-run",
//!   "version": 1,
//!   "status": "awaiting_approval",
//!   "run": { "run_id": "…", "requested_by": "…", "transcript": [], "iterations": 1,
//!            "options": { "max_iterations": 16, "allow": null, "four_eyes": false } },
//!   "pending": [ { "id": "…", "name": "…", "arguments": {} } ],
//!   "checksum": "sha256:…"
//! }
//! ```
//!
//! A run waiting for input adds `"input": { "tool", "call_index", "schema" }`.
//! Decoding is fail-closed: anything unexpected is a [`CorruptState`] with a
//! reason — an unknown version, status or field, a missing or ill-typed field,
//! an input pause without a usable schema, a pending call that does not
//! decode, a checksum that does not match — never a panic, never a default,
//! and never one kind of pause read as the other.

use schemars::Schema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::digest::sha256_of;
use crate::input::input_schema_problem;
use crate::run::{RunState, ToolCall};
use crate::suspend::{AwaitingApproval, Suspended, WaitingForInput};

const FORMAT: &str = "toolgate/suspended-run";
const VERSION: u64 = 1;
const FIELDS: [&str; 7] = [
    "format", "version", "status", "run", "pending", "input", "checksum",
];

/// A stored run could not be read. The reason says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt suspended run: {reason}")]
pub struct CorruptState {
    /// What is wrong.
    pub reason: String,
}

fn corrupt<T>(reason: impl Into<String>) -> Result<T, CorruptState> {
    Err(CorruptState {
        reason: reason.into(),
    })
}

/// A suspended run could not be encoded.
#[derive(Debug, thiserror::Error)]
#[error("the suspended run could not be encoded: {0}")]
pub struct EncodeError(#[from] serde_json::Error);

/// The status discriminator of a stored run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// `awaiting_approval`
    AwaitingApproval,
    /// `waiting_for_input`
    WaitingForInput,
}

impl Status {
    /// The stored spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Status::AwaitingApproval => "awaiting_approval",
            Status::WaitingForInput => "waiting_for_input",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Status::AwaitingApproval => "a run awaiting approval",
            Status::WaitingForInput => "a run waiting for input",
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
    /// Reads a document of either status.
    pub fn decode(text: &str) -> Result<Self, CorruptState> {
        decode(text)
    }

    /// The document's status.
    pub fn status(&self) -> Status {
        match self {
            SuspendedRun::AwaitingApproval(_) => Status::AwaitingApproval,
            SuspendedRun::WaitingForInput(_) => Status::WaitingForInput,
        }
    }

    /// Writes the document.
    pub fn encode(&self) -> Result<String, EncodeError> {
        match self {
            SuspendedRun::AwaitingApproval(run) => run.encode(),
            SuspendedRun::WaitingForInput(run) => run.encode(),
        }
    }
}

/// The checksum a document carries: SHA-256 over the canonical encoding of
/// every field but `checksum`. Exposed for tools that repair documents by hand.
pub fn document_checksum(document: &Map<String, Value>) -> String {
    let mut body = document.clone();
    body.remove("checksum");
    sha256_of(&Value::Object(body))
}

fn seal(mut document: Map<String, Value>) -> Result<String, EncodeError> {
    let checksum = document_checksum(&document);
    document.insert("checksum".into(), Value::String(checksum));
    Ok(serde_json::to_string_pretty(&Value::Object(document))?)
}

fn body(
    status: Status,
    state: &RunState,
    pending: &[ToolCall],
) -> Result<Map<String, Value>, EncodeError> {
    let mut document = Map::new();
    document.insert("format".into(), json!(FORMAT));
    document.insert("version".into(), json!(VERSION));
    document.insert("status".into(), json!(status.as_str()));
    document.insert("run".into(), serde_json::to_value(state)?);
    document.insert("pending".into(), serde_json::to_value(pending)?);
    Ok(document)
}

impl Suspended<AwaitingApproval> {
    /// Writes the versioned document.
    pub fn encode(&self) -> Result<String, EncodeError> {
        seal(body(Status::AwaitingApproval, &self.state, &self.pending)?)
    }

    /// Reads a document that must hold a run awaiting approval.
    pub fn decode(text: &str) -> Result<Self, CorruptState> {
        match decode(text)? {
            SuspendedRun::AwaitingApproval(run) => Ok(run),
            other => corrupt(format!(
                "the document holds {}, not a run awaiting approval",
                other.status().describe()
            )),
        }
    }
}

impl Suspended<WaitingForInput> {
    /// Writes the versioned document.
    pub fn encode(&self) -> Result<String, EncodeError> {
        let mut document = body(Status::WaitingForInput, &self.state, &self.pending)?;
        document.insert(
            "input".into(),
            json!({
                "tool": self.pause.tool,
                "call_index": self.pause.call_index,
                "schema": self.pause.schema.as_value(),
            }),
        );
        seal(document)
    }

    /// Reads a document that must hold a run waiting for input.
    pub fn decode(text: &str) -> Result<Self, CorruptState> {
        match decode(text)? {
            SuspendedRun::WaitingForInput(run) => Ok(run),
            other => corrupt(format!(
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

fn decode(text: &str) -> Result<SuspendedRun, CorruptState> {
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(error) => return corrupt(format!("not JSON: {error}")),
    };
    let Value::Object(document) = value else {
        return corrupt(format!(
            "the document is {}, not a JSON object",
            kind(&value)
        ));
    };
    if let Some(field) = document.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return corrupt(format!("unknown field `{field}`"));
    }
    match document.get("format") {
        None => return corrupt("missing `format`"),
        Some(Value::String(format)) if format == FORMAT => {}
        Some(Value::String(format)) => {
            return corrupt(format!("`format` is `{format}`, not `{FORMAT}`"));
        }
        Some(other) => return corrupt(format!("`format` is {}, not a string", kind(other))),
    }
    match document.get("version") {
        None => return corrupt("missing `version`"),
        Some(v) => match v.as_u64() {
            Some(VERSION) => {}
            Some(n) => {
                return corrupt(format!(
                    "unknown version {n} (this build reads version {VERSION})"
                ));
            }
            None => return corrupt(format!("`version` is {}, not a whole number", kind(v))),
        },
    }
    match document.get("checksum") {
        None => return corrupt("missing `checksum`"),
        Some(Value::String(checksum)) => {
            if *checksum != document_checksum(&document) {
                return corrupt(
                    "the checksum does not match the content: the document was changed or damaged",
                );
            }
        }
        Some(other) => return corrupt(format!("`checksum` is {}, not a string", kind(other))),
    }
    let status = match document.get("status") {
        None => return corrupt("missing `status`"),
        Some(Value::String(s)) if s == Status::AwaitingApproval.as_str() => {
            Status::AwaitingApproval
        }
        Some(Value::String(s)) if s == Status::WaitingForInput.as_str() => Status::WaitingForInput,
        Some(Value::String(s)) => return corrupt(format!("unknown status `{s}`")),
        Some(other) => return corrupt(format!("`status` is {}, not a string", kind(other))),
    };
    let state: RunState = match document.get("run") {
        None => return corrupt("missing `run`"),
        Some(run) => RunState::deserialize(run)
            .or_else(|error| corrupt(format!("`run` is ill-formed: {error}")))?,
    };
    if state.iterations > state.options.max_iterations {
        return corrupt(format!(
            "`run.iterations` ({}) exceeds `run.options.max_iterations` ({})",
            state.iterations, state.options.max_iterations
        ));
    }
    let pending = decode_pending(document.get("pending"))?;
    match (status, document.get("input")) {
        (Status::AwaitingApproval, None) => Ok(SuspendedRun::AwaitingApproval(
            Suspended::awaiting_approval(state, pending),
        )),
        (Status::AwaitingApproval, Some(_)) => {
            corrupt("a run awaiting approval carries no `input`; is the status wrong?")
        }
        (Status::WaitingForInput, None) => corrupt("a run waiting for input has no `input`"),
        (Status::WaitingForInput, Some(input)) => {
            let input = InputDocument::deserialize(input)
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
            )))
        }
    }
}

fn decode_pending(pending: Option<&Value>) -> Result<Vec<ToolCall>, CorruptState> {
    let items = match pending {
        None => return corrupt("missing `pending`"),
        Some(Value::Array(items)) => items,
        Some(other) => return corrupt(format!("`pending` is {}, not an array", kind(other))),
    };
    if items.is_empty() {
        return corrupt("`pending` is empty: a suspended run waits on at least one call");
    }
    let mut calls: Vec<ToolCall> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let call = ToolCall::deserialize(item)
            .or_else(|error| corrupt(format!("`pending[{i}]` is ill-formed: {error}")))?;
        if calls.iter().any(|c| c.id == call.id) {
            return corrupt(format!("`pending` holds the call id `{}` twice", call.id));
        }
        calls.push(call);
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
