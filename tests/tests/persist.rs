//! The versioned document of a suspended run: the golden version-1 fixtures
//! decode forever, and corrupt documents are refused with distinct, readable
//! reasons.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};
use toolgate::suspend::{
    AwaitingApproval, Suspended, SuspendedRun, SuspendedStatus, WaitingForInput,
};
use toolgate::testing::rules::{body_checksum, document_checksum};

const AWAITING: &str = include_str!("../fixtures/v2-awaiting-approval.json");
const WAITING: &str = include_str!("../fixtures/v2-waiting-for-input.json");
const AWAITING_V1: &str = include_str!("../fixtures/v1-awaiting-approval.json");
const AWAITING_V3: &str = include_str!("../fixtures/v3-awaiting-approval.json");
const WAITING_V3: &str = include_str!("../fixtures/v3-waiting-for-input.json");
const AWAITING_V4: &str = include_str!("../fixtures/v4-awaiting-approval.json");
const WAITING_V4: &str = include_str!("../fixtures/v4-waiting-for-input.json");
const AWAITING_V5: &str = include_str!("../fixtures/v5-awaiting-approval.json");
const WAITING_V5: &str = include_str!("../fixtures/v5-waiting-for-input.json");
const AWAITING_V6: &str = include_str!("../fixtures/v6-awaiting-approval.json");
const WAITING_V6: &str = include_str!("../fixtures/v6-waiting-for-input.json");
const ONE_CALL_V6: &str = include_str!("../fixtures/v6-one-call.json");
const AWAITING_V7: &str = include_str!("../fixtures/v7-awaiting-approval.json");
const WAITING_V7: &str = include_str!("../fixtures/v7-waiting-for-input.json");
const ONE_CALL_V7: &str = include_str!("../fixtures/v7-one-call.json");
const RICH_V7: &str = include_str!("../fixtures/v7-rich.json");
const USAGE_V8: &str = include_str!("../fixtures/v8-usage.json");
const USAGE_V9: &str = include_str!("../fixtures/v9-usage.json");

/// A document of an earlier version as this build writes it back: the same
/// body, as version 9, under the current plain checksum (which covers the
/// header from version 5).
fn as_current(document: &str) -> String {
    let fields: Map<String, Value> = serde_json::from_str(document).unwrap();
    let old_checksum = fields["checksum"].as_str().unwrap().to_owned();
    let version = fields["version"].as_u64().unwrap();
    let status = fields["status"].as_str().unwrap();
    let at = document.find(",\"body\":").unwrap() + ",\"body\":".len();
    let body = document.trim_end().strip_suffix('}').unwrap()[at..].to_owned();
    document
        .replacen(&format!("\"version\":{version}"), "\"version\":9", 1)
        .replacen(&old_checksum, &document_checksum(9, status, &body), 1)
}
const WAITING_V1: &str = include_str!("../fixtures/v1-waiting-for-input.json");
/// What the first digest rule (SHA-256 over the calls alone) gave the pending
/// turn of `AWAITING_V1`, as a version-1 host would have shown it.
const V1_RULE_DIGEST: &str =
    "sha256:73c17e85ad0c792e2db8ef8c24b1a5d6fdc43c15a2cd3f69a3095eb5dd02c6c0";

#[test]
fn golden_v2_awaiting_approval_decodes() {
    let run = match Suspended::<AwaitingApproval>::decode(AWAITING) {
        Ok(run) => run,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(run.run_id(), "5898735a-a30b-4b17-9233-212c9debe754");
    assert_eq!(run.state().requested_by, "alice");
    assert_eq!(run.state().iterations, 2);
    assert_eq!(run.state().transcript.len(), 5);
    let names: Vec<_> = run.pending().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["write_note", "read_note"]);
    assert_eq!(
        run.pending()[0].arguments,
        json!({"text": "Ship it.", "tags": ["release", "v1"]})
    );
    assert_eq!(
        run.digest(),
        toolgate::testing::rules::turn_digest(
            &run.state().run_id,
            run.state().iterations,
            run.pending(),
            None
        )
    );
    // The digest binds the run and the suspension; the digest the first rule
    // gave this turn (the calls alone) names no turn any more.
    assert_ne!(run.digest().as_str(), V1_RULE_DIGEST);
    // Re-encoding gives the same body, byte for byte, as version 3: a turn
    // paused before reviews were kept is written without one.
    assert_eq!(
        run.encode().ok().map(|d| d + "\n"),
        Some(as_current(AWAITING))
    );
    assert_eq!(
        SuspendedRun::decode(AWAITING).map(|r| r.status()),
        Ok(SuspendedStatus::AwaitingApproval)
    );
}

#[test]
fn golden_v2_waiting_for_input_decodes() {
    let run = match Suspended::<WaitingForInput>::decode(WAITING) {
        Ok(run) => run,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(run.state().requested_by, "bob");
    assert_eq!(run.input_tool(), "greet");
    assert_eq!(run.input_call().id, "call_9");
    assert_eq!(
        run.input_schema().as_value().pointer("/required"),
        Some(&json!(["name"]))
    );
    assert_eq!(run.pending().len(), 2);
    assert_eq!(
        run.encode().ok().map(|d| d + "\n"),
        Some(as_current(WAITING))
    );
    assert_eq!(
        SuspendedRun::decode(WAITING).map(|r| r.status()),
        Ok(SuspendedStatus::WaitingForInput)
    );
}

/// Version 3 keeps what the reviewer is shown of each call's tool, and the
/// digest binds it: the golden documents decode, carry their review, and are
/// written back byte for byte.
#[test]
fn golden_v3_documents_decode_with_their_review() {
    let run = match SuspendedRun::decode(AWAITING_V3) {
        Ok(SuspendedRun::AwaitingApproval(run)) => run,
        other => panic!("{other:?}"),
    };
    let review = run.review();
    assert_eq!(review.paused_at_ms, 1_796_000_000_000);
    let names: Vec<_> = review
        .tools
        .iter()
        .map(|t| t.as_ref().map(|t| (t.name.as_str(), t.needs_approval)))
        .collect();
    assert_eq!(
        names,
        [Some(("write_note", true)), Some(("read_note", false))]
    );
    assert!(run.needs_verdict(0) && !run.needs_verdict(1));
    assert_eq!(
        run.digest(),
        toolgate::testing::rules::reviewed_turn_digest(
            run.run_id(),
            run.state().iterations,
            run.pending(),
            None,
            review
        )
    );
    // The same turn without its review is another digest: a decision names
    // the definitions it was taken on.
    let v2 = match SuspendedRun::decode(AWAITING) {
        Ok(run) => run,
        Err(error) => panic!("{error}"),
    };
    assert_ne!(run.digest(), v2.digest());
    // Written back as the current version: the same body, under the current
    // checksum.
    assert_eq!(
        run.encode().ok().map(|d| d + "\n").as_deref(),
        Some(as_current(AWAITING_V7).as_str())
    );
    assert_eq!(as_current(AWAITING_V3), as_current(AWAITING_V7));
    assert_eq!(as_current(AWAITING_V4), as_current(AWAITING_V7));
    let waiting = match SuspendedRun::decode(WAITING_V3) {
        Ok(run) => run,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(waiting.status(), SuspendedStatus::WaitingForInput);
    assert_eq!(waiting.review().tools.len(), 2);
    assert_eq!(
        waiting.encode().ok().map(|d| d + "\n").as_deref(),
        Some(as_current(WAITING_V7).as_str())
    );
    assert_eq!(as_current(WAITING_V3), as_current(WAITING_V7));
    assert_eq!(as_current(WAITING_V4), as_current(WAITING_V7));
    // A review that does not match the pending calls is refused.
    let mut body: Value = match serde_json::from_str::<Value>(AWAITING_V3) {
        Ok(value) => value["body"].clone(),
        Err(error) => panic!("{error}"),
    };
    body["review"]["tools"][0]["name"] = json!("delete_everything");
    let text = body.to_string();
    let forged = format!(
        "{{\"format\":\"toolgate/suspended-run\",\"version\":3,\"status\":\"awaiting_approval\",\"checksum\":\"{}\",\"body\":{text}}}",
        body_checksum(&text)
    );
    assert_eq!(
        SuspendedRun::decode(&forged).err().map(|e| e.reason),
        Some(
            "`review.tools` names `delete_everything` for call `call_2` to `write_note`".to_owned()
        )
    );
}

/// Version 4 — the version-3 document under an XXH3-128 checksum — decodes
/// to the same run as version 3 and is written back byte for byte; its
/// checksum still catches a changed byte of the body.
#[test]
fn golden_v4_documents_decode_to_the_v3_run_and_round_trip() {
    for (v3, v4) in [(AWAITING_V3, AWAITING_V4), (WAITING_V3, WAITING_V4)] {
        let (Ok(old), Ok(new)) = (SuspendedRun::decode(v3), SuspendedRun::decode(v4)) else {
            panic!("both versions decode");
        };
        assert_eq!(old, new);
        assert!(v4.contains("\"checksum\":\"xxh3-128:"), "{v4}");
        assert_eq!(new.encode().ok().map(|d| d + "\n"), Some(as_current(v4)));
        let damaged = v4.replacen("\"iterations\":", "\"iterations\" :", 1);
        assert_ne!(damaged, v4);
        assert_eq!(
            SuspendedRun::decode(&damaged).err().map(|e| e.reason),
            Some(
                "the checksum does not match the body: the document was changed or damaged"
                    .to_owned()
            )
        );
    }
}

/// Version 1 (before `max_calls_per_turn`) still decodes, to the same run as
/// version 2 with the cap at its default, and is written back as the current
/// version.
#[test]
fn version_1_documents_decode_and_are_written_back_as_the_current_version() {
    for (v1, v2) in [(AWAITING_V1, AWAITING), (WAITING_V1, WAITING)] {
        let (Ok(old), Ok(new)) = (SuspendedRun::decode(v1), SuspendedRun::decode(v2)) else {
            panic!("both versions decode");
        };
        assert_eq!(
            old.state().options.max_calls_per_turn,
            toolgate::run::DEFAULT_MAX_CALLS_PER_TURN
        );
        assert_eq!(old.digest(), new.digest());
        assert_eq!(old.encode().ok().map(|d| d + "\n"), Some(as_current(v2)));
    }
}

fn document(text: &str) -> Map<String, Value> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => map,
        _ => panic!("fixture is not an object"),
    }
}

const BODY: [&str; 4] = ["run", "pending", "input", "review"];

/// Applies `change` to a fixture's fields — the header's and the body's in
/// one map, so a case reads `/run/...` wherever the field lives — and writes
/// the document back, sealing the body with its checksum when `seal` is set.
fn changed(text: &str, seal: bool, change: impl FnOnce(&mut Map<String, Value>)) -> String {
    let mut doc = document(text);
    if let Some(Value::Object(body)) = doc.remove("body") {
        doc.extend(body);
    }
    change(&mut doc);
    let body: Map<String, Value> = BODY
        .iter()
        .filter_map(|k| doc.remove(*k).map(|v| ((*k).to_owned(), v)))
        .collect();
    let body = Value::Object(body).to_string();
    if seal {
        doc.insert("checksum".into(), Value::String(resealed(&doc, &body)));
    }
    let header = Value::Object(doc).to_string();
    format!("{},\"body\":{body}}}", header.trim_end_matches('}'))
}

/// The plain checksum of `body` under the header `doc` declares: what its
/// version seals (from version 5, the header too).
fn resealed(doc: &Map<String, Value>, body: &str) -> String {
    document_checksum(
        doc.get("version").and_then(Value::as_u64).unwrap_or(0),
        doc.get("status").and_then(Value::as_str).unwrap_or(""),
        body,
    )
}

/// The document with its body replaced by `body` (JSON text), sealed.
fn with_body(text: &str, body: impl FnOnce(Value) -> Value) -> String {
    let mut doc = document(text);
    let new = body(doc.remove("body").expect("`remove` succeeds")).to_string();
    doc.insert("checksum".into(), Value::String(resealed(&doc, &new)));
    let header = Value::Object(doc).to_string();
    format!("{},\"body\":{new}}}", header.trim_end_matches('}'))
}

/// The change, with the body sealed again, so only the change is judged.
fn sealed(text: &str, change: impl FnOnce(&mut Map<String, Value>)) -> String {
    changed(text, true, change)
}

/// The change, with the checksum left as it was.
fn unsealed(text: &str, change: impl FnOnce(&mut Map<String, Value>)) -> String {
    changed(text, false, change)
}

fn at<'a>(doc: &'a mut Map<String, Value>, pointer: &str) -> &'a mut Value {
    let mut value = doc.get_mut(pointer.split('/').nth(1).expect("`nth` succeeds"));
    for part in pointer.split('/').skip(2) {
        value = value.and_then(|v| match v {
            Value::Object(map) => map.get_mut(part),
            Value::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
            _ => None,
        });
    }
    match value {
        Some(value) => value,
        None => panic!("no {pointer}"),
    }
}

#[allow(clippy::too_many_lines, reason = "one row per corrupt document")]
fn corrupt_documents() -> Vec<(&'static str, String, &'static str)> {
    vec![
        (
            "empty text",
            String::new(),
            "not JSON: EOF while parsing a value at line 1 column 0",
        ),
        (
            "truncated",
            AWAITING[..AWAITING.len() / 2].to_owned(),
            "not JSON: EOF while parsing",
        ),
        (
            "an array",
            "[]".into(),
            "the document is an array, not a JSON object",
        ),
        (
            "null",
            "null".into(),
            "the document is null, not a JSON object",
        ),
        (
            "unknown field",
            sealed(AWAITING, |d| {
                d.insert("approved".into(), json!(true));
            }),
            "unknown field `approved`",
        ),
        (
            "no format",
            sealed(AWAITING, |d| {
                d.remove("format");
            }),
            "missing `format`",
        ),
        (
            "other format",
            sealed(AWAITING, |d| {
                d.insert("format".into(), json!("other/run"));
            }),
            "`format` is `other/run`, not `toolgate/suspended-run`",
        ),
        (
            "format not a string",
            sealed(AWAITING, |d| {
                d.insert("format".into(), json!(1));
            }),
            "`format` is a number, not a string",
        ),
        (
            "no version",
            sealed(AWAITING, |d| {
                d.remove("version");
            }),
            "missing `version`",
        ),
        (
            "future version",
            sealed(AWAITING, |d| {
                d.insert("version".into(), json!(10));
            }),
            "unknown version 10 (this build reads versions 1 to 9)",
        ),
        (
            "version as text",
            sealed(AWAITING, |d| {
                d.insert("version".into(), json!("1"));
            }),
            "`version` is a string, not a whole number",
        ),
        (
            "no checksum",
            unsealed(AWAITING, |d| {
                d.remove("checksum");
            }),
            "missing `checksum`",
        ),
        (
            "checksum not a string",
            unsealed(AWAITING, |d| {
                d.insert("checksum".into(), json!(null));
            }),
            "`checksum` is null, not a string",
        ),
        (
            "edited content",
            unsealed(AWAITING, |d| {
                *at(d, "/run/requested_by") = json!("mallory");
            }),
            "the checksum does not match the body: the document was changed or damaged",
        ),
        (
            "no body",
            {
                let mut d = document(AWAITING);
                d.remove("body");
                Value::Object(d).to_string()
            },
            "missing `body`",
        ),
        (
            "body not an object",
            with_body(AWAITING, |_| json!([1])),
            "`body` is an array, not a JSON object",
        ),
        (
            "unknown field in the body",
            with_body(AWAITING, |mut b| {
                b["approved"] = json!(true);
                b
            }),
            "unknown field `body.approved`",
        ),
        (
            "no status",
            sealed(AWAITING, |d| {
                d.remove("status");
            }),
            "missing `status`",
        ),
        (
            "unknown status",
            sealed(AWAITING, |d| {
                d.insert("status".into(), json!("approved"));
            }),
            "unknown status `approved`",
        ),
        (
            "status not a string",
            sealed(AWAITING, |d| {
                d.insert("status".into(), json!(["awaiting_approval"]));
            }),
            "`status` is an array, not a string",
        ),
        (
            "no run",
            sealed(AWAITING, |d| {
                d.remove("run");
            }),
            "missing `run`",
        ),
        (
            "run missing a field",
            sealed(AWAITING, |d| {
                if let Value::Object(run) = at(d, "/run") {
                    run.remove("transcript");
                }
            }),
            "`run` is ill-formed: missing field `transcript`",
        ),
        (
            "run with a wrong type",
            sealed(AWAITING, |d| {
                *at(d, "/run/iterations") = json!(-1);
            }),
            "`run` is ill-formed: invalid value: integer `-1`, expected u32",
        ),
        (
            "run with an unknown role",
            sealed(AWAITING, |d| {
                *at(d, "/run/transcript/0/role") = json!("operator");
            }),
            "`run` is ill-formed: unknown variant `operator`",
        ),
        (
            "iterations over the cap",
            sealed(AWAITING, |d| {
                *at(d, "/run/iterations") = json!(99);
            }),
            "`run.iterations` (99) exceeds `run.options.max_iterations` (16)",
        ),
        (
            "no pending",
            sealed(AWAITING, |d| {
                d.remove("pending");
            }),
            "missing `pending`",
        ),
        (
            "pending not an array",
            sealed(AWAITING, |d| {
                d.insert("pending".into(), json!({}));
            }),
            "`pending` is an object, not an array",
        ),
        (
            "pending empty",
            sealed(AWAITING, |d| {
                d.insert("pending".into(), json!([]));
            }),
            "`pending` is empty: a suspended run waits on at least one call",
        ),
        (
            "pending call ill-formed",
            sealed(AWAITING, |d| {
                *at(d, "/pending/1/name") = json!(5);
            }),
            "`pending[1]` is ill-formed: invalid type: integer `5`, expected a string",
        ),
        (
            "pending call with extra field",
            sealed(AWAITING, |d| {
                if let Value::Object(c) = at(d, "/pending/0") {
                    c.insert("approved".into(), json!(true));
                }
            }),
            "`pending[0]` is ill-formed: unknown field `approved`",
        ),
        (
            "duplicate call id",
            sealed(AWAITING, |d| {
                *at(d, "/pending/1/id") = json!("call_2");
            }),
            "`pending` holds the call id `call_2` twice",
        ),
        (
            "approval pause with input",
            sealed(AWAITING, |d| {
                d.insert(
                    "input".into(),
                    json!({"tool": "write_note", "call_index": 0, "schema": {"type": "object"}}),
                );
            }),
            "a run awaiting approval carries no `input`; is the status wrong?",
        ),
        (
            "input pause read as approval",
            sealed(WAITING, |d| {
                d.insert("status".into(), json!("awaiting_approval"));
            }),
            "a run awaiting approval carries no `input`; is the status wrong?",
        ),
        (
            "approval pause read as input",
            sealed(AWAITING, |d| {
                d.insert("status".into(), json!("waiting_for_input"));
            }),
            "a run waiting for input has no `input`",
        ),
        (
            "input without schema",
            sealed(WAITING, |d| {
                if let Value::Object(i) = at(d, "/input") {
                    i.remove("schema");
                }
            }),
            "`input` is ill-formed: missing field `schema`",
        ),
        (
            "input schema accepts anything",
            sealed(WAITING, |d| {
                *at(d, "/input/schema") = json!({});
            }),
            "`input.schema` cannot be used: the schema has no `type` and no `properties`, so it would accept anything",
        ),
        (
            "input schema true",
            sealed(WAITING, |d| {
                *at(d, "/input/schema") = json!(true);
            }),
            "`input.schema` cannot be used: the schema is a boolean, not an object schema",
        ),
        (
            "input schema a string",
            sealed(WAITING, |d| {
                *at(d, "/input/schema") = json!("object");
            }),
            "`input.schema` is neither an object nor a boolean",
        ),
        (
            "input call index out of range",
            sealed(WAITING, |d| {
                *at(d, "/input/call_index") = json!(5);
            }),
            "`input.call_index` is 5 but only 2 calls are pending",
        ),
        (
            "input tool mismatch",
            sealed(WAITING, |d| {
                *at(d, "/input/tool") = json!("read_note");
            }),
            "`input.tool` is `read_note` but the waiting call is to `greet`",
        ),
        (
            "input with extra field",
            sealed(WAITING, |d| {
                if let Value::Object(i) = at(d, "/input") {
                    i.insert("approved".into(), json!(true));
                }
            }),
            "`input` is ill-formed: unknown field `approved`",
        ),
    ]
}

#[test]
fn corrupt_documents_are_refused_with_distinct_readable_reasons() {
    let cases = corrupt_documents();
    let mut reasons = BTreeSet::new();
    for (name, text, expected) in &cases {
        let reason = match SuspendedRun::decode(text) {
            Ok(run) => panic!("{name}: decoded as {:?}", run.status()),
            Err(error) => error.reason,
        };
        assert!(
            reason.starts_with(expected),
            "{name}: expected a reason starting `{expected}`, got `{reason}`"
        );
        // Neither typed decoder accepts it either.
        assert!(
            Suspended::<AwaitingApproval>::decode(text).is_err(),
            "{name}"
        );
        assert!(
            Suspended::<WaitingForInput>::decode(text).is_err(),
            "{name}"
        );
        reasons.insert(reason);
    }
    // Two cases reach the same rule from opposite sides on purpose.
    assert_eq!(reasons.len(), cases.len() - 1, "{reasons:#?}");
    assert!(reasons.len() >= 20);
}

#[test]
fn a_document_is_not_read_as_the_other_kind_of_pause() {
    assert_eq!(
        Suspended::<AwaitingApproval>::decode(WAITING)
            .err()
            .map(|e| e.reason),
        Some("the document holds a run waiting for input, not a run awaiting approval".into())
    );
    assert_eq!(
        Suspended::<WaitingForInput>::decode(AWAITING)
            .err()
            .map(|e| e.reason),
        Some("the document holds a run awaiting approval, not a run waiting for input".into())
    );
}

/// With an integrity key, a document is tagged, and one a database writer
/// changed and re-sealed with the plain checksum — four eyes switched off, the
/// requester changed, an argument changed — is refused. Without a key, the
/// same change decodes: the plain checksum catches accidents, not intent.
#[test]
fn a_keyed_document_refuses_a_re_sealed_change() {
    let Ok(key) = toolgate::integrity::IntegrityKey::new(b"0123456789abcdef-test-key") else {
        panic!("a 25-byte key is accepted");
    };
    let Ok(run) = SuspendedRun::decode(AWAITING) else {
        panic!("the fixture decodes");
    };
    let Ok(tagged) = run.encode_with(Some(&key)) else {
        panic!("encodes");
    };
    assert!(tagged.contains("\"checksum\":\"hmac-sha256:"));
    assert_eq!(
        SuspendedRun::decode_with(&tagged, Some(&key)).map(|r| r.digest()),
        Ok(run.digest())
    );
    let reason = |text: &str, key| {
        SuspendedRun::decode_with(text, key)
            .err()
            .map(|e| e.reason)
            .expect("the document is refused")
    };
    assert!(reason(&tagged, None).starts_with(
        "the document is authenticated with an integrity key, and none is configured"
    ));
    assert!(reason(AWAITING, Some(&key)).starts_with(
        "the document carries a plain checksum, but this store authenticates its documents"
    ));
    let changes = [
        ("four eyes off", "/run/options/four_eyes", json!(false)),
        ("requester changed", "/run/requested_by", json!("mallory")),
        (
            "argument changed",
            "/pending/0/arguments/text",
            json!("rm -rf /"),
        ),
    ];
    for (name, pointer, value) in changes {
        let change = |d: &mut Map<String, Value>| *at(d, pointer) = value.clone();
        // Re-sealed with the plain checksum anyone can compute.
        let resealed = sealed(&tagged, change);
        assert!(
            reason(&resealed, Some(&key)).starts_with("the document carries a plain checksum"),
            "{name}"
        );
        // Changed, tag kept.
        let kept = unsealed(&tagged, change);
        assert!(
            reason(&kept, Some(&key)).starts_with("the document's integrity tag does not verify"),
            "{name}"
        );
        // Without a key, a re-sealed change is accepted: what a database
        // writer can still do when no key is configured.
        assert!(
            SuspendedRun::decode(&sealed(AWAITING, change)).is_ok(),
            "{name}"
        );
    }
}

/// A stored turn larger than its own run's cap is refused at load: no run
/// suspends on such a turn, so only a hand-written document holds one.
#[test]
fn a_stored_turn_over_its_cap_is_refused() {
    let text = sealed(AWAITING, |d| {
        *at(d, "/run/options/max_calls_per_turn") = json!(1);
    });
    let reason = SuspendedRun::decode(&text).err().map(|e| e.reason);
    assert_eq!(
        reason.as_deref(),
        Some(
            "`pending` holds 2 calls, more than `run.options.max_calls_per_turn` (1): no run suspends on such a turn"
        )
    );
}

/// One document is one document: a field named twice — in the header, as a
/// second body (a decoy before a sealed one), inside the body — is refused
/// rather than read as whichever copy a reader keeps, and a version spelled
/// with a leading zero is not JSON, whatever the body holds.
#[test]
fn one_document_is_never_two() {
    let Ok(key) = toolgate::integrity::IntegrityKey::new(b"0123456789abcdef-test-key") else {
        panic!("a 25-byte key is accepted");
    };
    let Ok(run) = SuspendedRun::decode(AWAITING_V4) else {
        panic!("the fixture decodes");
    };
    let at = AWAITING_V4.find(",\"body\":").unwrap() + ",\"body\":".len();
    let body = AWAITING_V4.trim_end().strip_suffix('}').unwrap()[at..].to_owned();
    let decoy = body.replacen("5898735a", "0000000a", 1);
    let header = &AWAITING_V4[..at - ",\"body\":".len()];
    let tagged = run.encode_with(Some(&key)).unwrap();
    let tagged_at = tagged.find(",\"body\":").unwrap();
    let refused = |text: &str, key: Option<&toolgate::integrity::IntegrityKey>| {
        SuspendedRun::decode_with(text, key).err().map(|e| e.reason)
    };
    // A decoy body before the checksummed one.
    let twice = format!("{header},\"body\":{decoy},\"body\":{body}}}");
    let reason = refused(&twice, None).expect("a second body is refused");
    assert!(reason.contains("`body` appears twice"), "{reason}");
    // The same in front of a body sealed under the key.
    let sealed_twice = format!(
        "{},\"body\":{decoy}{}",
        &tagged[..tagged_at],
        &tagged[tagged_at..]
    );
    let reason = refused(&sealed_twice, Some(&key)).expect("refused under the key");
    assert!(reason.contains("`body` appears twice"), "{reason}");
    // A header field twice.
    let format_twice = AWAITING_V4.replacen(
        "{\"format\":",
        "{\"format\":\"something else\",\"format\":",
        1,
    );
    let reason = refused(&format_twice, None).expect("a header field twice is refused");
    assert!(reason.contains("`format` appears twice"), "{reason}");
    // A body field twice, the body re-checksummed.
    let run_twice_body = body.replacen("{\"run\":", "{\"run\":{},\"run\":", 1);
    let run_twice = AWAITING_V4.replacen(&body, &run_twice_body, 1).replacen(
        &body_checksum(&body),
        &body_checksum(&run_twice_body),
        1,
    );
    let reason = refused(&run_twice, None).expect("a body field twice is refused");
    assert!(reason.contains("`run` appears twice"), "{reason}");
    // A leading-zero version, with a body that happens to hold the
    // version's canonical spelling.
    let holding = body.replacen(
        "\"arguments\":{\"id\":8}",
        "\"arguments\":{\"id\":8,\"version\":4,\"z\":1}",
        1,
    );
    assert_ne!(holding, body, "the fixture has the call to edit");
    let zero = AWAITING_V4
        .replacen(&body, &holding, 1)
        .replacen(&body_checksum(&body), &body_checksum(&holding), 1)
        .replacen("\"version\":4", "\"version\":04", 1);
    let reason = refused(&zero, None).expect("a leading zero is not JSON");
    assert!(reason.starts_with("not JSON"), "{reason}");
}

/// A key named twice inside a free-form value — a call's arguments, a
/// reviewed tool's parameter schema, an input schema — is refused, sealed
/// or not: JSON readers disagree on which one counts (serde_json keeps the
/// last, SQLite's `json_extract` the first), so such a document would read
/// as one call to a person querying the database and as another to the host.
#[test]
fn a_key_named_twice_inside_a_value_is_refused() {
    let body_of = |text: &str| {
        let at = text.find(",\"body\":").map(|at| at + ",\"body\":".len());
        at.and_then(|at| {
            text.trim_end()
                .strip_suffix('}')
                .map(|t| t[at..].to_owned())
        })
    };
    for (name, from, edit) in [
        (
            "pending arguments",
            WAITING_V4,
            (
                "\"pending\":[{\"id\":\"call_9\",\"name\":\"greet\",\"arguments\":{\"language\":\"fr\",",
                "\"pending\":[{\"id\":\"call_9\",\"name\":\"greet\",\"arguments\":{\"language\":\"fr\",\"language\":\"en\",",
            ),
        ),
        (
            "escaped key in the transcript's arguments",
            WAITING_V4,
            ("{\"id\":1}}]}]", "{\"id\":1,\"\\u0069d\":2}}]}]"),
        ),
        (
            "input schema",
            WAITING_V4,
            (
                "\"minLength\":1,\"type\":\"string\"",
                "\"minLength\":1,\"minLength\":0,\"type\":\"string\"",
            ),
        ),
        (
            "reviewed parameters",
            WAITING_V4,
            (
                "\"required\":[\"language\"],\"type\":\"object\"}",
                "\"required\":[\"language\"],\"required\":[],\"type\":\"object\"}",
            ),
        ),
    ] {
        let Some(body) = body_of(from) else {
            panic!("{name}: the fixture has a body");
        };
        let edited = body.replacen(edit.0, edit.1, 1);
        assert_ne!(edited, body, "{name}: the fixture has the text to edit");
        let text = from.replacen(&body, &edited, 1).replacen(
            &body_checksum(&body),
            &body_checksum(&edited),
            1,
        );
        let reason = match SuspendedRun::decode(&text) {
            Ok(run) => panic!("{name}: decoded as {:?}", run.pending()),
            Err(error) => error.reason,
        };
        assert!(
            reason.contains("appears twice in one object"),
            "{name}: {reason}"
        );
    }
}

/// The reason a document is refused for, or a panic when it decodes.
fn refusal(text: &str) -> String {
    match SuspendedRun::decode(text) {
        Ok(run) => panic!("decoded as {:?}: {text}", run.status()),
        Err(error) => error.reason,
    }
}

#[test]
fn a_field_is_read_only_under_the_versions_that_know_it() {
    let set = |pointer: &'static str, key: &'static str, value: Value| {
        move |doc: &mut Map<String, Value>| {
            if let Value::Object(map) = at(doc, pointer) {
                map.insert(key.to_owned(), value);
            }
        }
    };
    // From version 2 on the cap is always written, so it is required.
    for (name, fixture) in [("v2", AWAITING), ("v3", AWAITING_V3), ("v4", AWAITING_V4)] {
        let without = sealed(fixture, |doc| {
            if let Value::Object(options) = at(doc, "/run/options") {
                options.remove("max_calls_per_turn");
            }
        });
        assert!(
            refusal(&without).starts_with(
                "missing `run.options.max_calls_per_turn`: every document from version 2 holds it"
            ),
            "{name}: {}",
            refusal(&without)
        );
    }
    // Version 1 never held it: a version-1 document that does is refused.
    let v1_with_cap = sealed(
        AWAITING_V1,
        set("/run/options", "max_calls_per_turn", json!(128)),
    );
    assert_eq!(
        refusal(&v1_with_cap),
        "`run.options.max_calls_per_turn` was added in version 2; a version-1 document cannot hold it"
    );
    // What version 3 added, under the labels of 1 and 2.
    let v3_review = document(AWAITING_V3)["body"]["review"].clone();
    assert!(
        v3_review.is_object(),
        "the version-3 fixture holds a review"
    );
    for (name, fixture) in [("v1", AWAITING_V1), ("v2", AWAITING)] {
        let version = document(fixture)["version"].as_u64().unwrap();
        let cases: Vec<(&str, String)> = vec![
            (
                "run.options.approvals_required",
                sealed(fixture, set("/run/options", "approvals_required", json!(2))),
            ),
            (
                "run.options.decision_ttl_ms",
                sealed(
                    fixture,
                    set("/run/options", "decision_ttl_ms", json!(60_000)),
                ),
            ),
            (
                "run.options.denied_repeats",
                sealed(fixture, set("/run/options", "denied_repeats", json!(0))),
            ),
            (
                "run.denied",
                sealed(fixture, set("/run", "denied", json!([]))),
            ),
            (
                "body.review",
                sealed(fixture, |doc| {
                    doc.insert("review".into(), v3_review.clone());
                }),
            ),
        ];
        for (field, text) in cases {
            assert_eq!(
                refusal(&text),
                format!(
                    "`{field}` was added in version 3; a version-{version} document cannot hold it"
                ),
                "{name}"
            );
        }
    }
    // From version 3 those fields are stored by their absence: a document
    // without them reads with their defaults, one with them as written.
    let mut with = sealed(
        AWAITING_V4,
        set("/run/options", "approvals_required", json!(2)),
    );
    with = sealed(&with, set("/run/options", "decision_ttl_ms", json!(60_000)));
    let Ok(SuspendedRun::AwaitingApproval(run)) = SuspendedRun::decode(&with) else {
        panic!("a version-4 document with its own fields decodes");
    };
    assert_eq!(run.state().options.approvals_required, 2);
    assert_eq!(run.state().options.decision_ttl_ms, Some(60_000));
    let plain = &document(AWAITING_V4)["body"]["run"]["options"];
    assert!(plain.get("approvals_required").is_none(), "{plain}");
    let Ok(SuspendedRun::AwaitingApproval(run)) = SuspendedRun::decode(AWAITING_V4) else {
        panic!("the version-4 fixture decodes");
    };
    assert_eq!(run.state().options.approvals_required, 1);
    assert_eq!(run.state().options.decision_ttl_ms, None);
}

/// Version 5 seals the header with the body: the golden documents decode
/// to the runs of version 4 and are written back as the current version; relabelled
/// as version 4 (whose seal covered the body alone) or declaring the other
/// status over the same body, they no longer match their seal.
#[test]
fn golden_v5_documents_seal_their_header_too() {
    for (v4, v5) in [(AWAITING_V4, AWAITING_V5), (WAITING_V4, WAITING_V5)] {
        let (Ok(old), Ok(new)) = (SuspendedRun::decode(v4), SuspendedRun::decode(v5)) else {
            panic!("both versions decode");
        };
        assert_eq!(old, new);
        assert_eq!(new.encode().ok().map(|d| d + "\n"), Some(as_current(v5)));
        let relabelled = v5.replacen("\"version\":5", "\"version\":4", 1);
        assert_ne!(relabelled, v5);
        let swapped = if v5.contains("awaiting_approval") {
            v5.replacen("awaiting_approval", "waiting_for_input", 1)
        } else {
            v5.replacen("waiting_for_input", "awaiting_approval", 1)
        };
        for changed in [relabelled, swapped] {
            assert_eq!(
                SuspendedRun::decode(&changed).err().map(|e| e.reason),
                Some(
                    "the checksum does not match the body: the document was changed or damaged"
                        .to_owned()
                ),
                "{changed}"
            );
        }
    }
}

/// Version 6 adds runs of one call: the golden documents of version 5
/// decode to the same runs as version 6 and are written back as the current
/// version;
/// a run of one call keeps its option, and a version-5 document that holds
/// it — sealed as a writer of version 5 would — is refused, as is a
/// version-6 document relabelled as version 5.
#[test]
fn golden_v6_documents_keep_runs_of_one_call() {
    for (v5, v6) in [(AWAITING_V5, AWAITING_V6), (WAITING_V5, WAITING_V6)] {
        let (Ok(old), Ok(new)) = (SuspendedRun::decode(v5), SuspendedRun::decode(v6)) else {
            panic!("both versions decode");
        };
        assert_eq!(old, new);
        assert!(!new.state().options.one_call);
        assert_eq!(new.encode().ok().map(|d| d + "\n"), Some(as_current(v6)));
    }
    let one_call = match SuspendedRun::decode(ONE_CALL_V6) {
        Ok(SuspendedRun::AwaitingApproval(run)) => run,
        other => panic!("{other:?}"),
    };
    assert!(one_call.state().options.one_call);
    assert_eq!(one_call.state().options.max_iterations, 1);
    assert_eq!(one_call.pending().len(), 1);
    assert_eq!(
        SuspendedRun::AwaitingApproval(one_call)
            .encode()
            .ok()
            .map(|d| d + "\n")
            .as_deref(),
        Some(as_current(ONE_CALL_V7).as_str())
    );
    let relabelled = ONE_CALL_V6.replacen("\"version\":6", "\"version\":5", 1);
    assert_eq!(
        SuspendedRun::decode(&relabelled).err().map(|e| e.reason),
        Some(
            "the checksum does not match the body: the document was changed or damaged".to_owned()
        )
    );
    // Resealed as version 5, as a writer without the field's version would.
    let fields: Map<String, Value> = serde_json::from_str(ONE_CALL_V6).unwrap();
    let old_checksum = fields["checksum"].as_str().unwrap().to_owned();
    let at = ONE_CALL_V6.find(",\"body\":").unwrap() + ",\"body\":".len();
    let body = &ONE_CALL_V6.trim_end().strip_suffix('}').unwrap()[at..];
    let as_v5 = relabelled.replacen(
        &old_checksum,
        &document_checksum(5, "awaiting_approval", body),
        1,
    );
    assert_eq!(
        SuspendedRun::decode(&as_v5).err().map(|e| e.reason),
        Some(
            "`run.options.one_call` was added in version 6; a version-5 document cannot hold it"
                .to_owned()
        )
    );
}

/// Version 7 keeps what a tool answered beyond its text: the golden
/// documents of version 6 decode to the same runs as version 7 and are
/// written back byte for byte as it; a tool result's images and structured
/// content are read and written back as they were, while a version-6
/// document that holds them — sealed as a writer of version 6 would — is
/// refused.
#[test]
fn golden_v7_documents_keep_what_a_tool_answered_beyond_its_text() {
    for (v6, v7) in [
        (AWAITING_V6, AWAITING_V7),
        (WAITING_V6, WAITING_V7),
        (ONE_CALL_V6, ONE_CALL_V7),
    ] {
        let (Ok(old), Ok(new)) = (SuspendedRun::decode(v6), SuspendedRun::decode(v7)) else {
            panic!("both versions decode");
        };
        assert_eq!(old, new);
        assert_eq!(
            new.encode().ok().map(|d| d + "\n").as_deref(),
            Some(as_current(v7).as_str())
        );
    }
    let rich = match SuspendedRun::decode(RICH_V7) {
        Ok(run) => run,
        Err(error) => panic!("{error}"),
    };
    let kept = rich.state().transcript.iter().find_map(|m| match m {
        toolgate::run::Message::Tool {
            rich: Some(rich), ..
        } => Some(rich.clone()),
        _ => None,
    });
    let kept = kept.unwrap_or_else(|| panic!("the rich result is kept"));
    assert_eq!(kept.blocks.len(), 2);
    assert_eq!(kept.blocks[1]["type"], "image");
    assert_eq!(kept.blocks[1]["mimeType"], "image/png");
    assert_eq!(kept.structured, Some(json!({"id": 7, "text": "a note"})));
    assert_eq!(
        rich.encode().ok().map(|d| d + "\n").as_deref(),
        Some(as_current(RICH_V7).as_str())
    );
    // Resealed as version 6, as a writer without the field's version would.
    let fields: Map<String, Value> = serde_json::from_str(RICH_V7).unwrap();
    let old_checksum = fields["checksum"].as_str().unwrap().to_owned();
    let at = RICH_V7.find(",\"body\":").unwrap() + ",\"body\":".len();
    let body = &RICH_V7.trim_end().strip_suffix('}').unwrap()[at..];
    let as_v6 = RICH_V7
        .replacen("\"version\":7", "\"version\":6", 1)
        .replacen(
            &old_checksum,
            &document_checksum(6, "awaiting_approval", body),
            1,
        );
    assert_eq!(
        SuspendedRun::decode(&as_v6).err().map(|e| e.reason),
        Some(
            "`run.transcript[].rich` was added in version 7; a version-6 document cannot hold it"
                .to_owned()
        )
    );
}

/// Version 8 keeps what each model request cost on its answer: the golden
/// documents of version 7 decode to the same runs and are written back as
/// the current version; a run's usage is read and written back, while a
/// version-7 document that holds it — sealed as a writer of version 7
/// would — is refused.
#[test]
fn golden_v8_documents_keep_what_each_model_request_cost() {
    let run = match SuspendedRun::decode(USAGE_V8) {
        Ok(run) => run,
        Err(error) => panic!("{error}"),
    };
    let per_turn: Vec<Option<toolgate::run::Usage>> = run
        .state()
        .transcript
        .iter()
        .filter_map(|m| match m {
            toolgate::run::Message::Assistant { usage, .. } => Some(*usage),
            _ => None,
        })
        .collect();
    assert_eq!(
        per_turn,
        [
            Some(toolgate::run::Usage {
                input_tokens: 812,
                cached_input_tokens: 512,
                cache_write_input_tokens: 0,
                output_tokens: 41,
                reasoning_tokens: 0,
            }),
            Some(toolgate::run::Usage {
                input_tokens: 901,
                cached_input_tokens: 0,
                cache_write_input_tokens: 0,
                output_tokens: 66,
                reasoning_tokens: 0,
            }),
        ]
    );
    assert_eq!(run.state().usage().map(|u| u.total_tokens()), Some(1820));
    assert_eq!(
        run.encode().ok().map(|d| d + "\n").as_deref(),
        Some(as_current(USAGE_V8).as_str())
    );
    // The same run without its usage is the version-7 run.
    let Ok(v7) = SuspendedRun::decode(AWAITING_V7) else {
        panic!("the version-7 document decodes");
    };
    assert_eq!(v7.state().usage(), None);
    let fields: Map<String, Value> = serde_json::from_str(USAGE_V8).unwrap();
    let old_checksum = fields["checksum"].as_str().unwrap().to_owned();
    let at = USAGE_V8.find(",\"body\":").unwrap() + ",\"body\":".len();
    let body = &USAGE_V8.trim_end().strip_suffix('}').unwrap()[at..];
    let as_v7 = USAGE_V8
        .replacen("\"version\":8", "\"version\":7", 1)
        .replacen(
            &old_checksum,
            &document_checksum(7, "awaiting_approval", body),
            1,
        );
    assert_eq!(
        SuspendedRun::decode(&as_v7).err().map(|e| e.reason),
        Some(
            "`run.transcript[].usage` was added in version 8; a version-7 document cannot hold it"
                .to_owned()
        )
    );
}

/// A document of `version` as its writer would have sealed it: the body of
/// `document` under that version's label and plain checksum.
fn relabelled(document: &str, version: u64) -> String {
    let fields: Map<String, Value> = serde_json::from_str(document).unwrap();
    let old_checksum = fields["checksum"].as_str().unwrap().to_owned();
    let old_version = fields["version"].as_u64().unwrap();
    let status = fields["status"].as_str().unwrap();
    let at = document.find(",\"body\":").unwrap() + ",\"body\":".len();
    let body = &document.trim_end().strip_suffix('}').unwrap()[at..];
    document
        .replacen(
            &format!("\"version\":{old_version}"),
            &format!("\"version\":{version}"),
            1,
        )
        .replacen(&old_checksum, &document_checksum(version, status, body), 1)
}

/// The usage of each answer of a run's transcript, in order.
fn usage_per_turn(run: &SuspendedRun) -> Vec<Option<toolgate::run::Usage>> {
    run.state()
        .transcript
        .iter()
        .filter_map(|m| match m {
            toolgate::run::Message::Assistant { usage, .. } => Some(*usage),
            _ => None,
        })
        .collect()
}

/// Version 9 keeps a request's cache writes and reasoning tokens in its
/// usage: the golden document is read with both counts and written back
/// byte for byte; the version-8 run reads with both at zero; a version-8
/// document that counts either — sealed as a writer of version 8 would — is
/// refused.
#[test]
fn golden_v9_documents_keep_cache_writes_and_reasoning_tokens() {
    let run = match SuspendedRun::decode(USAGE_V9) {
        Ok(run) => run,
        Err(error) => panic!("{error}"),
    };
    let first = toolgate::run::Usage {
        input_tokens: 812,
        cached_input_tokens: 512,
        cache_write_input_tokens: 256,
        output_tokens: 41,
        reasoning_tokens: 24,
    };
    let second = toolgate::run::Usage {
        input_tokens: 901,
        cached_input_tokens: 0,
        cache_write_input_tokens: 0,
        output_tokens: 66,
        reasoning_tokens: 18,
    };
    assert_eq!(usage_per_turn(&run), [Some(first), Some(second)]);
    assert_eq!(
        run.state().usage(),
        Some(toolgate::run::Usage {
            input_tokens: 1713,
            cached_input_tokens: 512,
            cache_write_input_tokens: 256,
            output_tokens: 107,
            reasoning_tokens: 42,
        })
    );
    assert_eq!(
        run.encode().ok().map(|d| d + "\n").as_deref(),
        Some(USAGE_V9)
    );
    // The version-8 run is the same run with neither count.
    let Ok(v8) = SuspendedRun::decode(USAGE_V8) else {
        panic!("the version-8 document decodes");
    };
    let without = |u: toolgate::run::Usage| toolgate::run::Usage {
        cache_write_input_tokens: 0,
        reasoning_tokens: 0,
        ..u
    };
    assert_eq!(
        usage_per_turn(&v8),
        [Some(without(first)), Some(without(second))]
    );
    assert_eq!(
        SuspendedRun::decode(&relabelled(USAGE_V9, 8))
            .err()
            .map(|e| e.reason),
        Some(
            "`run.transcript[].usage.cache_write_input_tokens` was added in version 9; a version-8 document cannot hold it"
                .to_owned()
        )
    );
    let reasoning_only = relabelled(
        &USAGE_V9.replacen(",\"cache_write_input_tokens\":256", "", 1),
        8,
    );
    assert!(!reasoning_only.contains("cache_write_input_tokens"));
    assert_eq!(
        SuspendedRun::decode(&reasoning_only).err().map(|e| e.reason),
        Some(
            "`run.transcript[].usage.reasoning_tokens` was added in version 9; a version-8 document cannot hold it"
                .to_owned()
        )
    );
    // A count of 0 means what its absence means, under either label.
    let zero = relabelled(
        &USAGE_V8.replacen(
            "\"output_tokens\":66}",
            "\"output_tokens\":66,\"reasoning_tokens\":0}",
            1,
        ),
        8,
    );
    assert_ne!(zero, USAGE_V8);
    let Ok(zero) = SuspendedRun::decode(&zero) else {
        panic!("a version-8 document with a zero count decodes");
    };
    assert_eq!(zero, v8);
}

/// Every golden document of every earlier version still decodes, under the
/// version it declares, and is written back as the current version to a
/// document that decodes to the same run.
#[test]
fn every_earlier_golden_document_decodes_and_is_written_back_as_the_current_version() {
    let golden = [
        (1, AWAITING_V1),
        (1, WAITING_V1),
        (2, AWAITING),
        (2, WAITING),
        (3, AWAITING_V3),
        (3, WAITING_V3),
        (4, AWAITING_V4),
        (4, WAITING_V4),
        (5, AWAITING_V5),
        (5, WAITING_V5),
        (6, AWAITING_V6),
        (6, WAITING_V6),
        (6, ONE_CALL_V6),
        (7, AWAITING_V7),
        (7, WAITING_V7),
        (7, ONE_CALL_V7),
        (7, RICH_V7),
        (8, USAGE_V8),
        (9, USAGE_V9),
    ];
    for (version, text) in golden {
        assert_eq!(document(text)["version"].as_u64(), Some(version), "{text}");
        let run = match SuspendedRun::decode(text) {
            Ok(run) => run,
            Err(error) => panic!("version {version}: {error}"),
        };
        let written = match run.encode() {
            Ok(written) => written,
            Err(error) => panic!("version {version}: {error}"),
        };
        assert_eq!(document(&written)["version"].as_u64(), Some(9));
        let again = match SuspendedRun::decode(&written) {
            Ok(again) => again,
            Err(error) => panic!("version {version}, written back: {error}"),
        };
        assert_eq!(again, run, "version {version}");
    }
}
