//! The one reader of a document, in one pass: the header's fields and the
//! body, read where it stands straight into its types; then the seal,
//! checked over the body's exact text. When that pass fails, or cannot tell
//! where the body's text is, the document is read again with the body kept
//! as its text until the seal is checked — the same fields, in the order
//! that names what is wrong first.

use std::borrow::Cow;
use std::fmt;

use schemars::Schema;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{CorruptState, FORMAT, READS, SuspendedRun, SuspendedStatus, VERSION, corrupt};
use crate::digest::Review;
use crate::input::input_schema_problem;
use crate::integrity::IntegrityKey;
use crate::pause::Suspended;
use crate::transcript::{RunState, ToolCall};

use super::object::{Fields, Note, Object, once, read_object, stop};
use super::since::{StoredRun, review_known};

/// Reads a document of either status, verified under `key` if one is given.
pub(super) fn decode(text: &str, key: Option<&IntegrityKey>) -> Result<SuspendedRun, CorruptState> {
    let in_place = read_object(text, "the document", Header::new(text, true))
        .ok()
        .and_then(Header::located);
    let ((status, version), body) = if let Some((header, body, at)) = in_place {
        (header.check(&text[at], key)?, body)
    } else {
        let mut header = read_object(text, "the document", Header::new(text, false))?;
        let raw = header.raw.take().map_or("", RawValue::get);
        (
            header.check(raw, key)?,
            read_object(raw, "`body`", Body::default())?,
        )
    };
    let Some(state) = body.run else {
        return corrupt("missing `run`");
    };
    let state = state.at_version(version)?;
    review_known(version, body.review.is_some())?;
    let Some(pending) = body.pending else {
        return corrupt("missing `pending`");
    };
    if let Some(id) = crate::transcript::first_duplicate_id(&pending) {
        return corrupt(format!("`pending` holds the call id `{id}` twice"));
    }
    let review = body.review.unwrap_or_default();
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
    suspension(status, state, pending, body.input, review)
}

/// The version a document says it was written in, if it is a JSON object
/// with a whole-number `version`.
pub(super) fn written_version(text: &str) -> Option<u64> {
    read_object(text, "the document", Header::new(text, false))
        .ok()?
        .version?
        .as_u64()
}

/// The document's fields: the header's small values, and the body — read
/// where it stands, or kept as its text.
struct Header<'de> {
    text: &'de str,
    in_place: bool,
    format: Option<Value>,
    version: Option<Value>,
    status: Option<Value>,
    checksum: Option<Value>,
    /// The body, kept as its text.
    raw: Option<&'de RawValue>,
    /// The body, read where it stands, and where its text starts and ends.
    read: Option<(Body<'de>, usize, Option<usize>)>,
}

/// JSON's white space.
const SPACE: [char; 4] = [' ', '\t', '\n', '\r'];

impl<'de> Header<'de> {
    fn new(text: &'de str, in_place: bool) -> Self {
        Self {
            text,
            in_place,
            format: None,
            version: None,
            status: None,
            checksum: None,
            raw: None,
            read: None,
        }
    }

    /// Where `key` starts in the document, when it is read where it stands
    /// (a key written with an escape is not).
    fn offset(&self, key: Option<&'de str>) -> Option<usize> {
        let key = key?;
        let at = (key.as_ptr() as usize).checked_sub(self.text.as_ptr() as usize)?;
        (at + key.len() <= self.text.len()).then_some(at)
    }

    /// The header, the body read where it stands, and its text's place.
    fn located(mut self) -> Option<(Self, Body<'de>, std::ops::Range<usize>)> {
        let (body, start, end) = self.read.take()?;
        let at = start..end?;
        let text = self.text.get(at.clone())?;
        (text.starts_with('{') && text.ends_with('}')).then_some((self, body, at))
    }

    /// The body read where it stands, and where its text starts; any
    /// doubt is an error, and the document is then read with its body kept
    /// as text.
    fn body_in_place<M: MapAccess<'de>>(
        &mut self,
        key: Option<usize>,
        map: &mut M,
        note: &Note,
    ) -> Result<(), M::Error> {
        let doubt = || de::Error::custom("the body is read as text");
        // The value starts after the key's closing quote and the colon.
        let rest = key
            .and_then(|key| self.text.get(key + "body\"".len()..))
            .and_then(|rest| rest.trim_start_matches(SPACE).strip_prefix(':'))
            .ok_or_else(doubt)?;
        let start = self.text.len() - rest.trim_start_matches(SPACE).len();
        if self.read.is_some() {
            return Err(doubt());
        }
        let body = map.next_value_seed(Object {
            note,
            what: "`body`",
            fields: Body::default(),
        })?;
        self.read = Some((body, start, None));
        Ok(())
    }
}

impl<'de> Fields<'de> for Header<'de> {
    const NAMES: &'static [&'static str] = &["format", "version", "status", "checksum", "body"];

    fn unknown(name: &str) -> String {
        format!("unknown field `{name}`")
    }

    fn field<M: MapAccess<'de>>(
        &mut self,
        name: &Cow<'de, str>,
        map: &mut M,
        note: &Note,
    ) -> Result<(), M::Error> {
        let what = "the document";
        let key = self.offset(match name {
            Cow::Borrowed(key) => Some(key),
            Cow::Owned(_) => None,
        });
        // The field before was the body read where it stood: it ends before
        // this key's quote, the comma and white space.
        if let Some((_, _, end @ None)) = &mut self.read {
            let before = key
                .and_then(|key| self.text.get(..key.checked_sub(1)?))
                .and_then(|text| text.trim_end_matches(SPACE).strip_suffix(','))
                .ok_or_else(|| de::Error::custom("the body is read as text"))?;
            *end = Some(before.trim_end_matches(SPACE).len());
        }
        match &**name {
            "format" => once(&mut self.format, name, note, what, || map.next_value()),
            "version" => once(&mut self.version, name, note, what, || map.next_value()),
            "status" => once(&mut self.status, name, note, what, || map.next_value()),
            "checksum" => once(&mut self.checksum, name, note, what, || map.next_value()),
            "body" if self.in_place => self.body_in_place(key, map, note),
            "body" => once(&mut self.raw, name, note, what, || map.next_value()),
            other => Err(stop(note, Self::unknown(other))),
        }
    }

    fn end(&mut self) {
        // The body was the last field: it ends before the closing brace.
        if let Some((_, _, end @ None)) = &mut self.read {
            let text = self.text.trim_end_matches(SPACE);
            *end = text
                .strip_suffix('}')
                .map(|text| text.trim_end_matches(SPACE).len());
        }
    }
}

impl Header<'_> {
    /// Format, version, checksum and status, in that order: the status the
    /// document declares, and its body, sealed as written.
    fn check(
        self,
        body: &str,
        key: Option<&IntegrityKey>,
    ) -> Result<(SuspendedStatus, u64), CorruptState> {
        match self.format {
            None => return corrupt("missing `format`"),
            Some(Value::String(format)) if format == FORMAT => {}
            Some(Value::String(format)) => {
                return corrupt(format!("`format` is `{format}`, not `{FORMAT}`"));
            }
            Some(other) => return corrupt(format!("`format` is {}, not a string", kind(&other))),
        }
        let version = match self.version {
            None => return corrupt("missing `version`"),
            Some(v) => match v.as_u64() {
                Some(n) if READS.contains(&n) => n,
                Some(n) => {
                    return corrupt(format!(
                        "unknown version {n} (this build reads versions 1 to {VERSION})"
                    ));
                }
                None => return corrupt(format!("`version` is {}, not a whole number", kind(&v))),
            },
        };
        // From version 5 the seal covers the declared status too.
        let header = match (&self.status, version >= super::HEADER_SEALED) {
            (_, false) => String::new(),
            (Some(Value::String(status)), true) => super::sealed_header(version, status),
            (None, true) => return corrupt("missing `status`"),
            (Some(other), true) => {
                return corrupt(format!("`status` is {}, not a string", kind(other)));
            }
        };
        match (self.checksum, !body.is_empty()) {
            (None, _) => return corrupt("missing `checksum`"),
            (Some(_), false) => return corrupt("missing `body`"),
            (Some(Value::String(checksum)), true) => check_seal(&checksum, &header, body, key)?,
            (Some(other), true) => {
                return corrupt(format!("`checksum` is {}, not a string", kind(&other)));
            }
        }
        let status = match self.status {
            None => return corrupt("missing `status`"),
            Some(Value::String(s)) => match SuspendedStatus::named(&s) {
                Some(status) => status,
                None => return corrupt(format!("unknown status `{s}`")),
            },
            Some(other) => return corrupt(format!("`status` is {}, not a string", kind(&other))),
        };
        Ok((status, version))
    }
}

/// The body's fields, each read straight into its type.
#[derive(Default)]
struct Body<'de> {
    run: Option<StoredRun>,
    pending: Option<Vec<ToolCall>>,
    input: Option<&'de RawValue>,
    review: Option<Review>,
}

impl<'de> Fields<'de> for Body<'de> {
    const NAMES: &'static [&'static str] = &["run", "pending", "input", "review"];

    fn unknown(name: &str) -> String {
        format!("unknown field `body.{name}`")
    }

    fn field<M: MapAccess<'de>>(
        &mut self,
        name: &Cow<'de, str>,
        map: &mut M,
        note: &Note,
    ) -> Result<(), M::Error> {
        let what = "`body`";
        let name: &str = name;
        let ill_formed = |error: M::Error| stop(note, format!("`{name}` is ill-formed: {error}"));
        match name {
            "run" => once(&mut self.run, name, note, what, || {
                map.next_value().map_err(ill_formed)
            }),
            "pending" => once(&mut self.pending, name, note, what, || {
                map.next_value_seed(Pending { note })
            }),
            "input" => once(&mut self.input, name, note, what, || map.next_value()),
            "review" => once(&mut self.review, name, note, what, || {
                map.next_value().map_err(ill_formed)
            }),
            other => Err(stop(note, Self::unknown(other))),
        }
    }
}

/// The pending calls: a non-empty array, each call read on its own so a
/// reason names the one that does not read.
struct Pending<'n> {
    note: &'n Note,
}

impl Pending<'_> {
    fn not_an_array<E: de::Error, T>(&self, kind: &str) -> Result<T, E> {
        Err(stop(
            self.note,
            format!("`pending` is {kind}, not an array"),
        ))
    }
}

impl<'de> DeserializeSeed<'de> for Pending<'_> {
    type Value = Vec<ToolCall>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<ToolCall>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Pending<'_> {
    type Value = Vec<ToolCall>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of calls")
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Vec<ToolCall>, S::Error> {
        let mut calls = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        loop {
            match seq.next_element::<ToolCall>() {
                Ok(Some(call)) => calls.push(call),
                Ok(None) => break,
                Err(error) => {
                    let i = calls.len();
                    return Err(stop(
                        self.note,
                        format!("`pending[{i}]` is ill-formed: {error}"),
                    ));
                }
            }
        }
        if calls.is_empty() {
            return Err(stop(
                self.note,
                "`pending` is empty: a suspended run waits on at least one call".to_owned(),
            ));
        }
        Ok(calls)
    }
    fn visit_map<M: MapAccess<'de>>(self, _: M) -> Result<Vec<ToolCall>, M::Error> {
        self.not_an_array("an object")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Vec<ToolCall>, E> {
        self.not_an_array("a string")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Vec<ToolCall>, E> {
        self.not_an_array("a boolean")
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Vec<ToolCall>, E> {
        self.not_an_array("a number")
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Vec<ToolCall>, E> {
        self.not_an_array("a number")
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Vec<ToolCall>, E> {
        self.not_an_array("a number")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Vec<ToolCall>, E> {
        self.not_an_array("null")
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InputDocument {
    tool: String,
    call_index: usize,
    #[serde(deserialize_with = "crate::unique::value")]
    schema: Value,
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

/// The document's checksum or tag against its body, under the key if any
/// ([`super::seal_problem`], the one reading of a seal).
fn check_seal(
    checksum: &str,
    header: &str,
    body: &str,
    key: Option<&IntegrityKey>,
) -> Result<(), CorruptState> {
    match super::seal_problem(checksum, &[header.as_bytes(), body.as_bytes()], key) {
        Some(problem) => corrupt(problem),
        None => Ok(()),
    }
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

/// The body's text as the reading in place finds it, and as the reading
/// that keeps it as text does.
#[cfg(test)]
pub(super) fn body_texts(text: &str) -> (Option<&str>, Option<&str>) {
    let in_place = read_object(text, "the document", Header::new(text, true))
        .ok()
        .and_then(Header::located)
        .and_then(|(_, _, at)| text.get(at));
    let raw = read_object(text, "the document", Header::new(text, false))
        .ok()
        .and_then(|header| header.raw)
        .map(RawValue::get);
    (in_place, raw)
}
