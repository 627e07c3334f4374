//! The canonical encoding and the turn digest.
//!
//! A decision is bound to the turn its decider saw by a SHA-256 digest over
//! the run's id, the suspension's sequence number within the run, and the
//! pending calls — never the transcript, which grows every round. A digest
//! therefore names one turn of one run: two runs whose turns look alike have
//! different digests, and so do two suspensions of one run on identical calls.
//! [`turn_digest`] is the one function that computes it: the side that shows a
//! turn and the side that verifies a decision both call it.

use std::fmt;

use schemars::Schema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::transcript::ToolCall;

/// Writes `value` as canonical JSON: object keys sorted by their UTF-8 bytes,
/// no insignificant white space, strings escaped as `serde_json` escapes them.
/// The result does not depend on how the value was parsed or built.
pub(crate) fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
            // Scalars have one serde_json spelling each; writing to a Vec
            // cannot fail.
            let _ = serde_json::to_writer(&mut *out, value);
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            if map.keys().is_sorted_by(|a, b| a.as_bytes() <= b.as_bytes()) {
                write_sorted_entries(map.iter(), out);
            } else {
                write_canonical_object(map.iter(), out);
            }
        }
    }
}

/// Writes an object's entries as canonical JSON, keys sorted.
pub(crate) fn write_canonical_object<'a>(
    entries: impl Iterator<Item = (&'a String, &'a Value)>,
    out: &mut Vec<u8>,
) {
    let mut entries: Vec<(&String, &Value)> = entries.collect();
    entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    write_sorted_entries(entries.into_iter(), out);
}

/// Writes entries already in canonical (byte-sorted) order.
fn write_sorted_entries<'a>(
    entries: impl Iterator<Item = (&'a String, &'a Value)>,
    out: &mut Vec<u8>,
) {
    out.push(b'{');
    for (i, (key, item)) in entries.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = serde_json::to_writer(&mut *out, key);
        out.push(b':');
        write_canonical(item, out);
    }
    out.push(b'}');
}

/// SHA-256 of the canonical encoding of `value`, as `sha256:<hex>`.
pub(crate) fn sha256_of(value: &Value) -> String {
    let mut bytes = Vec::new();
    write_canonical(value, &mut bytes);
    sha256_hex(&bytes)
}

/// SHA-256 of `bytes`, as `sha256:<hex>`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex_of(&Sha256::digest(bytes))
}

/// A SHA-256 hash as `sha256:<hex>`.
fn hex_of(hash: &[u8]) -> String {
    let mut text = String::with_capacity(7 + 64);
    text.push_str("sha256:");
    for &byte in hash {
        text.push(char::from(HEX[usize::from(byte >> 4)]));
        text.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    text
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The digest of a pending turn, shown to whoever decides it and carried back
/// with the decision.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TurnDigest(String);

impl TurnDigest {
    /// The digest as text (`sha256:` and 64 hex digits).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Reads a digest a decider typed or a host stored. Any text is accepted:
    /// a malformed digest simply never matches.
    pub fn from_text(text: impl Into<String>) -> Self {
        Self(text.into())
    }
}

impl fmt::Display for TurnDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The digest of a suspended turn: SHA-256 over the canonical encoding of
/// `["toolgate.turn.v2", run_id, suspension, [[id, name, arguments], ...],
/// input]`, the calls in order. `suspension` is the run's sequence number of
/// this suspension: the number of the model turn the run paused on, which
/// grows with every turn, so no two suspensions of a run share it. `input` is
/// `null` for a turn awaiting approval, and `[tool, call_index, schema]` for
/// one waiting for input, so the data a user is asked for is part of what
/// they review.
#[cfg_attr(
    not(feature = "test-util"),
    expect(unreachable_pub, reason = "public behind `test-util`, for tests")
)]
pub fn turn_digest(
    run_id: &str,
    suspension: u32,
    calls: &[ToolCall],
    input: Option<(&str, usize, &Schema)>,
) -> TurnDigest {
    let input = input.map_or(Value::Null, |(tool, index, schema)| {
        Value::Array(vec![
            Value::String(tool.to_owned()),
            Value::from(index),
            schema.as_value().clone(),
        ])
    });
    let encoded = Value::Array(vec![
        Value::String(DIGEST_DOMAIN.to_owned()),
        Value::String(run_id.to_owned()),
        Value::from(suspension),
        Value::Array(
            calls
                .iter()
                .map(|c| {
                    Value::Array(vec![
                        Value::String(c.id.clone()),
                        Value::String(c.name.clone()),
                        c.arguments.clone(),
                    ])
                })
                .collect(),
        ),
        input,
    ]);
    TurnDigest(sha256_of(&encoded))
}

/// Separates turn digests from any other SHA-256 of canonical JSON, and the
/// rule that binds run and suspension from the first rule, which did not.
const DIGEST_DOMAIN: &str = "toolgate.turn.v2";

/// The rule that also binds what the reviewer was shown of each call's tool.
const REVIEWED_DOMAIN: &str = "toolgate.turn.v3";

/// The digest of a turn whose review was kept (see [`Review`]): the turn as
/// [`turn_digest`] binds it, and for each call the definition of its tool
/// as shown, whether it needed approval, and when the turn paused — so a turn
/// paused again after a tool changed, or asked again after it expired, has a
/// digest of its own.
#[cfg_attr(
    not(feature = "test-util"),
    expect(unreachable_pub, reason = "public behind `test-util`, for tests")
)]
pub fn reviewed_turn_digest(
    run_id: &str,
    suspension: u32,
    calls: &[ToolCall],
    input: Option<(&str, usize, &Schema)>,
    review: &Review,
) -> TurnDigest {
    let turn = turn_digest(run_id, suspension, calls, input);
    let tools = review
        .tools
        .iter()
        .map(|tool| {
            tool.as_ref().map_or(Value::Null, |t| {
                Value::Array(vec![
                    Value::String(t.definition_digest()),
                    Value::Bool(t.needs_approval),
                ])
            })
        })
        .collect();
    let encoded = Value::Array(vec![
        Value::String(REVIEWED_DOMAIN.to_owned()),
        Value::String(turn.0),
        Value::Array(tools),
        Value::from(review.paused_at_ms),
    ]);
    TurnDigest(sha256_of(&encoded))
}

/// The digest of an operator's choice on a call whose outcome is unknown
/// (its host stopped while it ran, so it may or may not have happened): the
/// call an operator was shown, to run again or to skip. It is shown beside
/// the call and carried back with the choice, as a turn digest is with a
/// decision.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RerunDigest(String);

impl RerunDigest {
    /// The digest as text (`sha256:` and 64 hex digits).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Reads a digest an operator typed. Any text is accepted: a malformed
    /// digest simply never matches.
    pub fn from_text(text: impl Into<String>) -> Self {
        Self(text.into())
    }
}

impl fmt::Display for RerunDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A call whose outcome is unknown, as an operator is shown it before
/// choosing to run it again or to skip it.
#[derive(Debug, Clone, Copy)]
pub struct UnknownCall<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The digest of the suspension whose decision let the turn run.
    pub suspension: &'a TurnDigest,
    /// The turn's number in its run.
    pub turn: u32,
    /// The call's place in its turn.
    pub call_index: usize,
    /// The call's id.
    pub call_id: &'a str,
    /// Its tool.
    pub tool: &'a str,
    /// The arguments a rerun runs it with.
    pub arguments: &'a Value,
    /// How many times it has been started; a rerun starts attempt
    /// `attempt + 1`, so a digest names one attempt only.
    pub attempt: u32,
}

/// The digest of an unknown call: SHA-256 over the canonical encoding of
/// `["toolgate.rerun.v1", run_id, suspension, turn, call_index, call_id,
/// tool, arguments, attempt]`. Its own domain, so no turn digest or other
/// digest is ever one.
pub fn rerun_digest(call: &UnknownCall<'_>) -> RerunDigest {
    let encoded = Value::Array(vec![
        Value::String(RERUN_DOMAIN.to_owned()),
        Value::String(call.run_id.to_owned()),
        Value::String(call.suspension.0.clone()),
        Value::from(call.turn),
        Value::from(call.call_index),
        Value::String(call.call_id.to_owned()),
        Value::String(call.tool.to_owned()),
        call.arguments.clone(),
        Value::from(call.attempt),
    ]);
    RerunDigest(sha256_of(&encoded))
}

/// Separates rerun digests from every other digest.
const RERUN_DOMAIN: &str = "toolgate.rerun.v1";

/// The digest of the tool definitions an operator is shown before accepting
/// them — turning a server's approval off, or accepting tools quarantined
/// since — and carries back with the act: SHA-256 over the canonical
/// encoding of `["toolgate.accept.v1", server, [[local_name, definition],
/// ...]]`, the tools in the order given (the store gives them by local
/// name). A catalogue that changed in between has another digest, so the act
/// is refused rather than applied to definitions nobody saw.
pub fn accepted_definitions_digest<'a>(
    server: &str,
    definitions: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> String {
    let mut digest = DefinitionsDigest::new(server);
    for (name, definition) in definitions {
        digest.add(name, definition);
    }
    digest.finish()
}

/// [`accepted_definitions_digest`] taken one definition at a time, as a
/// store reads them, so a large catalogue is never held to be digested: the
/// same bytes, hashed as they come.
#[derive(Debug, Clone)]
pub struct DefinitionsDigest {
    hasher: Sha256,
    first: bool,
}

impl DefinitionsDigest {
    /// A digest of `server`'s definitions, none added yet.
    pub fn new(server: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"[");
        hasher.update(json_string(ACCEPT_DOMAIN).as_bytes());
        hasher.update(b",");
        hasher.update(json_string(server).as_bytes());
        hasher.update(b",[");
        Self {
            hasher,
            first: true,
        }
    }

    /// Adds the next tool, by its local name, and its definition.
    pub fn add(&mut self, name: &str, definition: &str) {
        if !std::mem::take(&mut self.first) {
            self.hasher.update(b",");
        }
        self.hasher.update(b"[");
        self.hasher.update(json_string(name).as_bytes());
        self.hasher.update(b",");
        self.hasher.update(json_string(definition).as_bytes());
        self.hasher.update(b"]");
    }

    /// The digest, as `sha256:<hex>`.
    pub fn finish(mut self) -> String {
        self.hasher.update(b"]]");
        hex_of(&self.hasher.finalize())
    }
}

/// Separates acceptance digests from every other digest.
const ACCEPT_DOMAIN: &str = "toolgate.accept.v1";

/// A string as canonical JSON writes it.
fn json_string(text: &str) -> String {
    // Writing a `str` to a String cannot fail; the fallback writes the same.
    serde_json::to_string(text).unwrap_or_else(|_| Value::from(text).to_string())
}

/// The digest of a tool's definition — its name, description, parameter
/// schema and declared effect — the one rule for the definition a reviewer
/// was shown and the one a host runs.
pub(crate) fn tool_definition_digest(
    name: &str,
    description: &str,
    parameters: &Value,
    effect: crate::effect::Effect,
) -> String {
    let encoded = Value::Array(vec![
        Value::String("toolgate.tool.v1".to_owned()),
        Value::String(name.to_owned()),
        Value::String(description.to_owned()),
        parameters.clone(),
        Value::String(effect.as_str().to_owned()),
    ]);
    sha256_of(&encoded)
}

/// The digest of a call's arguments, as decision records name them
/// ([`crate::audit::AuditedCall::arguments_digest`]) and a gateway knows
/// a call asked again: SHA-256 of their canonical JSON.
pub fn arguments_digest(arguments: &Value) -> String {
    sha256_of(arguments)
}

/// The key a denied call is remembered by: its tool's declared parameters
/// only (an argument the tool ignores does not make another call), with
/// numbers in one spelling (`1`, `1.0` and `1e0` are one number), as a
/// digest. `parameters` is the tool's schema, when it is known.
#[cfg_attr(
    not(feature = "test-util"),
    expect(unreachable_pub, reason = "public behind `test-util`, for tests")
)]
pub fn denial_key(arguments: &Value, parameters: Option<&Value>) -> String {
    let declared = parameters
        .and_then(|p| p.get("properties"))
        .and_then(Value::as_object);
    let projected = match (arguments, declared) {
        (Value::Object(map), Some(declared)) => Value::Object(
            map.iter()
                .filter(|(k, _)| declared.contains_key(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        _ => arguments.clone(),
    };
    sha256_of(&one_spelling(projected))
}

/// Numbers with an integral value written as integers, all the way down.
fn one_spelling(value: Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => {
                // In range and integral: the cast is exact.
                #[allow(
                    clippy::cast_possible_truncation,
                    reason = "checked integral and in range"
                )]
                let i = f as i64;
                Value::from(i)
            }
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(one_spelling).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, one_spelling(v))).collect())
        }
        other => other,
    }
}

/// What the reviewer of a paused turn was shown of each call's tool, kept
/// with the turn (document version 3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Review {
    /// When the turn paused, in milliseconds since the Unix epoch.
    pub paused_at_ms: u64,
    /// One entry per pending call: its tool as offered when the turn paused,
    /// or `None` when it was not offered. Empty for turns paused before
    /// reviews were kept.
    pub tools: Vec<Option<ReviewedTool>>,
}

/// One pending call's tool, as the reviewer was shown it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewedTool {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its parameter schema: an edited call is validated against it. Read
    /// back, an object that names a key twice is refused.
    #[serde(deserialize_with = "crate::unique::value")]
    pub parameters: Value,
    /// Its declared effect (every remote tool counts as
    /// `non_idempotent_write`).
    pub effect: crate::effect::Effect,
    /// Whether the call needed approval when the turn paused.
    pub needs_approval: bool,
}

impl ReviewedTool {
    /// The digest of the definition shown: SHA-256 over the canonical
    /// encoding of `["toolgate.tool.v1", name, description, parameters,
    /// effect]`.
    pub fn definition_digest(&self) -> String {
        tool_definition_digest(&self.name, &self.description, &self.parameters, self.effect)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn canonical(value: &Value) -> String {
        let mut out = Vec::new();
        write_canonical(value, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":{"z":[1,{"y":2,"x":"é\n"}],"c":null}}"#)
            .unwrap_or_default();
        assert_eq!(
            canonical(&a),
            r#"{"a":{"c":null,"z":[1,{"x":"é\n","y":2}]},"b":1}"#
        );
    }

    #[test]
    fn the_digest_covers_ids_names_and_arguments_in_order() {
        let call = |id: &str, name: &str, arguments: Value| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        };
        let turn_digest = |calls: &[ToolCall]| turn_digest("run-1", 3, calls, None);
        let turn = [
            call("1", "a", json!({"x": 1, "y": 2})),
            call("2", "b", json!({})),
        ];
        let same = [
            call("1", "a", json!({"y": 2, "x": 1})),
            call("2", "b", json!({})),
        ];
        assert_eq!(turn_digest(&turn), turn_digest(&same));
        let digest = turn_digest(&turn);
        assert!(digest.as_str().starts_with("sha256:"));
        assert_eq!(digest.as_str().len(), 7 + 64);
        for other in [
            vec![
                call("1", "a", json!({"x": 1, "y": 3})),
                call("2", "b", json!({})),
            ],
            vec![
                call("1", "a", json!({"x": 1, "y": 2})),
                call("3", "b", json!({})),
            ],
            vec![
                call("1", "a", json!({"x": 1, "y": 2})),
                call("2", "c", json!({})),
            ],
            vec![
                call("2", "b", json!({})),
                call("1", "a", json!({"x": 1, "y": 2})),
            ],
            vec![call("1", "a", json!({"x": 1, "y": 2}))],
        ] {
            assert_ne!(turn_digest(&other), digest);
        }
    }

    #[test]
    fn the_digest_names_one_run_and_one_suspension() {
        let calls = [ToolCall {
            id: "1".into(),
            name: "write_file".into(),
            arguments: json!({"path": "a"}),
        }];
        let digest = turn_digest("run-1", 3, &calls, None);
        assert_eq!(digest, turn_digest("run-1", 3, &calls, None));
        assert_ne!(digest, turn_digest("run-2", 3, &calls, None), "another run");
        assert_ne!(
            digest,
            turn_digest("run-1", 4, &calls, None),
            "another suspension"
        );
        let schema = schemars::json_schema!({"type": "object", "required": ["notes"]});
        let other = schemars::json_schema!({"type": "object", "required": ["version"]});
        let asks = turn_digest("run-1", 3, &calls, Some(("write_file", 0, &schema)));
        assert_ne!(asks, digest, "an input pause is another turn");
        assert_ne!(
            asks,
            turn_digest("run-1", 3, &calls, Some(("write_file", 0, &other))),
            "another schema"
        );
    }

    /// Taken a definition at a time, the digest is the one over the whole
    /// encoded list, escapes and all, for none, one or many tools.
    #[test]
    fn the_acceptance_digest_taken_a_tool_at_a_time_is_the_whole_lists() {
        let tools: Vec<(String, String)> = vec![
            ("notes.write_note".into(), r#"{"name":"write_note"}"#.into()),
            ("notes.\u{202e}".into(), "quote \" and \\ and \n".into()),
            ("ünïcode".into(), "\u{1}".into()),
        ];
        for count in 0..=tools.len() {
            let some = &tools[..count];
            let whole = sha256_of(&Value::Array(vec![
                Value::from("toolgate.accept.v1"),
                Value::from("no\"tes"),
                Value::Array(
                    some.iter()
                        .map(|(n, d)| {
                            Value::Array(vec![Value::from(n.as_str()), Value::from(d.as_str())])
                        })
                        .collect(),
                ),
            ]));
            assert_eq!(
                accepted_definitions_digest(
                    "no\"tes",
                    some.iter().map(|(n, d)| (n.as_str(), d.as_str()))
                ),
                whole
            );
        }
    }
}
