use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::transcript::{Message, RunOptions};
use schemars::Schema;

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
            .prop_map(|(content, calls)| Message::Assistant {
                content,
                calls,
                usage: None,
            }),
        (
            "[a-z_0-9]{1,8}",
            "[a-z_.]{1,10}",
            "\\PC{0,20}",
            any::<bool>(),
            proptest::option::of("\\PC{0,12}"),
        )
            .prop_map(|(call_id, name, content, is_error, rich)| Message::Tool {
                call_id,
                name,
                content,
                is_error,
                rich: rich.map(|text| {
                    Box::new(crate::tool::RichOutput {
                        blocks: vec![
                            serde_json::json!({"type": "text", "text": text}),
                            serde_json::json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
                        ],
                        structured: Some(serde_json::json!({ "text": text })),
                    })
                }),
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
            |(run_id, requested_by, transcript, max_iterations, i, allow, four_eyes)| RunState {
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
                client: None,
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

/// Edits of a sealed document's text: those that spell the same JSON
/// another way (white space, an escape in a header string), and those that
/// change what it says (a leading zero, a number that is not whole, a
/// second body, text after the end, a letter more, an unknown field).
fn layout_edits(text: &str) -> (Vec<String>, Vec<String>) {
    let body_at = text.find(",\"body\":").unwrap_or(0);
    let same = vec![
        text.to_owned(),
        format!("{text} "),
        format!(" {text}"),
        text.replacen(",\"body\":", ", \"body\": ", 1),
        text.replacen(",\"body\":{", ",\"body\": {", 1),
        text.replacen("\"format\":\"toolgate", "\"format\":\"\\u0074oolgate", 1),
        format!("{}  }}", &text[..text.len() - 1]),
        text.replacen("\"body\":", "\"\\u0062ody\":", 1),
        // The body first, the header after it.
        match text.find(",\"body\":") {
            Some(at) => format!("{{{}, {} }}", &text[at + 1..text.len() - 1], &text[1..at]),
            None => text.to_owned(),
        },
    ];
    let version = format!("\"version\":{VERSION}");
    let mut other = vec![
        text.replacen(&version, &format!("\"version\":0{VERSION}"), 1),
        text.replacen(&version, &format!("\"version\":{VERSION}.0"), 1),
        // Relabelled as the version before, whose seal covered the body only.
        text.replacen(&version, &format!("\"version\":{}", VERSION - 1), 1),
        // The other kind of pause, declared over the same sealed body.
        if text.contains("\"status\":\"awaiting_approval\"") {
            text.replacen("awaiting_approval", "waiting_for_input", 1)
        } else {
            text.replacen("waiting_for_input", "awaiting_approval", 1)
        },
        format!("{}}},\"body\":{{}}}}", &text[..text.len() - 1]),
        format!("{text}{{}}"),
        text.replacen("\"status\":\"", "\"status\":\"\\u0061", 1),
    ];
    if body_at > 0 {
        other.push(format!(
            "{},\"extra\":1{}",
            &text[..body_at],
            &text[body_at..]
        ));
    }
    (same, other)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The one reader reads every spelling of a document alike, and refuses,
    /// with a reason, every edit that changes what it says.
    #[test]
    fn every_spelling_of_a_document_reads_alike(run in suspended()) {
        let text = run.encode().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (same, other) = layout_edits(&text);
        for edited in same {
            prop_assert_eq!(decode(&edited, None), Ok(run.clone()), "{}", edited);
            // The seal is checked over the body's exact text, wherever it
            // is read.
            let (in_place, raw) = read::body_texts(&edited);
            prop_assert!(raw.is_some());
            prop_assert!(in_place.is_none_or(|text| Some(text) == raw), "{}", edited);
        }
        // A document as written is read in place.
        let (in_place, raw) = read::body_texts(&text);
        prop_assert!(in_place.is_some() && in_place == raw);
        for edited in other {
            match decode(&edited, None) {
                Ok(decoded) => prop_assert!(false, "{edited} decoded as {decoded:?}"),
                Err(error) => prop_assert!(!error.reason.is_empty()),
            }
        }
    }
}
