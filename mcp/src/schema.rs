//! The one rule for a remote tool's input schema, at import and at
//! hydration: MCP requires a JSON object whose `"type"` is `"object"`.

/// Whether a remote tool's input schema is one MCP allows, from its
/// `"type"` field as a string (`None` when it is absent or not a string):
/// `"object"`.
pub(crate) fn is_object_type(type_field: Option<&str>) -> bool {
    type_field == Some("object")
}

/// Whether a stored input schema (JSON text) reads as a JSON object whose
/// `"type"` passes [`is_object_type`], checked without building it
/// ([`toolgate_store::object_type_passes`]): a text this accepts always
/// reads into a [`serde_json::Value`] later, as the object it literally is.
pub(crate) fn is_object_schema_text(text: &str) -> bool {
    toolgate_store::object_type_passes(text, is_object_type)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;

    /// The rule, judged on the value a text reads as.
    fn as_a_value(text: &str) -> bool {
        serde_json::from_str::<Value>(text).is_ok_and(|value| {
            value.is_object() && is_object_type(value.get("type").and_then(Value::as_str))
        })
    }

    #[test]
    fn judges_the_last_top_level_type() {
        for (text, passes) in [
            (r#"{"type":"object"}"#, true),
            (r#"{"type":"obj\u0065ct"}"#, true),
            (r#"{"typ\u0065":"object"}"#, true),
            (r#"{"type":"string","type":"object"}"#, true),
            (r#"{"type":"object","type":"string"}"#, false),
            (r#"{"type":["object"]}"#, false),
            (r#"{"properties":{"type":"object"}}"#, false),
            (
                r#" { "properties" : { "q" : [1, 2.5, null] }, "type" : "object" } "#,
                true,
            ),
            ("{}", false),
            (r#"["type","object"]"#, false),
            (r#""object""#, false),
            (r#"{"type":"object""#, false),
            (r#"{"type":"object"} {}"#, false),
            (r#"{"type":"object",}"#, false),
            (r#"{"type":"object","a":01}"#, false),
            (r#"{"type":"object","a":1e400}"#, false),
            ("", false),
        ] {
            assert_eq!(is_object_schema_text(text), passes, "{text}");
            assert_eq!(as_a_value(text), passes, "{text}");
        }
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            prop_oneof![Just("object".to_owned()), "[a-z\"\u{e9}\n]{0,6}"].prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map("[a-z]{0,3}|type", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Every text serde_json writes for a value — compact or pretty — and
        /// every text near one (characters dropped, doubled, replaced or
        /// added) is judged as the value it reads as.
        #[test]
        fn judges_a_text_as_its_value(
            value in json_value(),
            pretty in any::<bool>(),
            edits in prop::collection::vec((0usize..512, 0u8..4, any::<char>()), 0..4),
        ) {
            let written = if pretty {
                serde_json::to_string_pretty(&value).unwrap_or_default()
            } else {
                value.to_string()
            };
            prop_assert_eq!(is_object_schema_text(&written), as_a_value(&written), "{}", written);
            let mut text: Vec<char> = written.chars().collect();
            for (at, kind, c) in edits {
                if text.is_empty() {
                    break;
                }
                let at = at % text.len();
                match kind {
                    0 => { text.remove(at); }
                    1 => { let d = text[at]; text.insert(at, d); }
                    2 => text[at] = c,
                    _ => text.insert(at, c),
                }
            }
            let text: String = text.into_iter().collect();
            prop_assert_eq!(is_object_schema_text(&text), as_a_value(&text), "{:?}", text);
        }
    }
}
