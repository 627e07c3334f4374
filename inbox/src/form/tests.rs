//! The forms' own tests: each kind of field, every fallback to JSON,
//! hostile names, and reading any posted text without a panic.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause"
)]

use proptest::prelude::*;
use serde_json::json;

use super::*;

/// The texts `pairs` give.
fn texts(pairs: &[(&str, &str)]) -> Texts {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn why(schema: &Value) -> String {
    match Form::of(schema) {
        Ok(form) => panic!("a form for {schema}: {form:?}"),
        Err(JsonOnly(why)) => why,
    }
}

/// Every kind the form expresses, in one schema.
fn every_kind() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 40, "format": "email", "description": "who"},
            "note": {"type": ["string", "null"]},
            "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
            "ratio": {"type": "number", "exclusiveMaximum": 1},
            "force": {"type": "boolean"},
            "maybe": {"type": "boolean"},
            "mode": {"type": "string", "enum": ["fast", "safe"]},
            "level": {"oneOf": [{"const": 1, "title": "low"}, {"const": 2, "title": "high"}]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
            "ids": {"type": "array", "items": {"type": "integer"}},
            "inner": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "deep": {"type": "boolean"}},
                "required": ["path"]
            }
        },
        "required": ["name", "count", "force", "mode", "level"]
    })
}

#[test]
fn each_kind_reads_back() {
    let form = Form::of(&every_kind()).unwrap();
    let read = form
        .read(&texts(&[
            ("/name", "a@b.c"),
            ("/count", "4"),
            ("/ratio", "0.5"),
            ("/force", "true"),
            ("/maybe", "false"),
            ("/mode", "1"),
            ("/level", "0"),
            ("/tags", "x\r\ny\n\n"),
            ("/ids", "1\n2"),
            ("/inner/path", "src"),
        ]))
        .unwrap();
    assert_eq!(
        read,
        json!({
            "name": "a@b.c", "count": 4, "ratio": 0.5, "force": true, "maybe": false,
            "mode": "safe", "level": 1, "tags": ["x", "y"], "ids": [1, 2],
            "inner": {"path": "src"}
        })
    );
    assert_eq!(toolgate::suspend::validate(&every_kind(), &read), Ok(()));
}

#[test]
fn empty_fields_are_absent_or_what_their_schema_says() {
    let form = Form::of(&every_kind()).unwrap();
    let read = form.read(&Texts::new()).unwrap();
    // Optional: absent, never "". Required string: "". Required
    // checkbox unchecked: false. Required number and choice: absent,
    // which the schema refuses beside them.
    assert_eq!(read, json!({"name": "", "force": false}));
    let errors = toolgate::suspend::validate(&every_kind(), &read).unwrap_err();
    let placed = form.place(&errors);
    assert!(placed.contains_key("/count"), "{placed:?}");
    assert!(placed.contains_key("/mode"), "{placed:?}");
    assert!(placed.contains_key("/level"), "{placed:?}");
    assert!(placed.contains_key("/name"), "{placed:?}");
    // A nullable required field left empty is null.
    let nullable = json!({"type": "object", "properties": {"n": {"type": ["integer", "null"]}}, "required": ["n"]});
    assert_eq!(
        Form::of(&nullable).unwrap().read(&Texts::new()).unwrap(),
        json!({"n": null})
    );
}

#[test]
fn a_number_that_does_not_parse_is_an_error_beside_it() {
    let form = Form::of(&every_kind()).unwrap();
    for typed in ["abc", "1,5", "NaN", "inf", "1e999", "0x10"] {
        let errors = form.read(&texts(&[("/ratio", typed)])).unwrap_err();
        assert_eq!(errors.keys().collect::<Vec<_>>(), ["/ratio"], "{typed}");
    }
    let errors = form.read(&texts(&[("/ids", "1\nzwei\n3")])).unwrap_err();
    assert!(errors["/ids"][0].contains("line 2"), "{errors:?}");
    // A whole number stays one; a fraction is refused by the schema.
    assert_eq!(
        form.read(&texts(&[("/count", " 7 ")])).unwrap()["count"],
        json!(7)
    );
    let read = form.read(&texts(&[("/count", "2.5")])).unwrap();
    let errors = toolgate::suspend::validate(&every_kind(), &read).unwrap_err();
    assert!(form.place(&errors).contains_key("/count"));
}

#[test]
fn bounds_are_checked_and_placed_beside_their_field() {
    let schema = every_kind();
    let form = Form::of(&schema).unwrap();
    let read = form
        .read(&texts(&[
            ("/name", "a@b.c"),
            ("/count", "11"),
            ("/force", "true"),
            ("/mode", "0"),
            ("/level", "1"),
            ("/tags", "a\nb\nc\nd"),
            ("/inner/deep", "true"),
        ]))
        .unwrap();
    let placed = form.place(&toolgate::suspend::validate(&schema, &read).unwrap_err());
    assert!(placed.contains_key("/count"), "{placed:?}");
    assert!(placed.contains_key("/tags"), "{placed:?}");
    assert!(!placed.contains_key(""), "{placed:?}");
    // A nested object's missing required field, beside it.
    let nested = json!({
        "type": "object",
        "properties": {"inner": {"type": "object", "properties": {"n": {"type": "integer"}, "m": {"type": "string"}}, "required": ["n"]}}
    });
    let form = Form::of(&nested).unwrap();
    let read = form.read(&texts(&[("/inner/m", "x")])).unwrap();
    assert_eq!(read, json!({"inner": {"m": "x"}}));
    let placed = form.place(&toolgate::suspend::validate(&nested, &read).unwrap_err());
    assert!(placed.contains_key("/inner/n"), "{placed:?}");
}

#[test]
fn defaults_and_descriptions_are_shown() {
    let form = Form::of(&every_kind()).unwrap();
    assert_eq!(form.defaults(), texts(&[("/count", "3")]));
    let page = form
        .render("in:", &form.defaults(), &form.defaults(), &Placed::new())
        .into_string();
    assert!(page.contains("name=\"in:/count\" value=\"3\""), "{page}");
    assert!(page.contains("who"), "{page}");
    assert!(page.contains("at most 40 characters"), "{page}");
    assert!(page.contains("at least 1"), "{page}");
    assert!(page.contains(">high</option>"), "{page}");
    assert!(
        page.contains("type=\"checkbox\" name=\"in:/force\""),
        "{page}"
    );
    assert!(page.contains("name=\"in:/inner/path\""), "{page}");
}

#[test]
fn what_the_form_cannot_express_is_json_only() {
    let object = |property: Value| json!({"type": "object", "properties": {"x": property}});
    for (schema, said) in [
        (
            object(
                json!({"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "string"}]}),
            ),
            "shapes",
        ),
        (
            object(json!({"$ref": "https://example.com/s.json"})),
            "$ref",
        ),
        (
            object(
                json!({"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}),
            ),
            "list of objects",
        ),
        (
            object(
                json!({"type": "array", "items": {"type": "array", "items": {"type": "string"}}}),
            ),
            "list of objects",
        ),
        (object(json!({"type": "array"})), "any"),
        (
            object(
                json!({"type": "object", "properties": {"y": {"type": "object", "properties": {"z": {"type": "string"}}}}}),
            ),
            "deep",
        ),
        (
            object(json!({"type": "object", "additionalProperties": {"type": "string"}})),
            "map",
        ),
        (
            object(json!({"type": "object", "patternProperties": {"^a": {"type": "string"}}})),
            "pattern",
        ),
        (object(json!({})), "any kind"),
        (object(json!(true)), "`true`"),
        (
            object(json!({"type": ["string", "integer"]})),
            "several types",
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            "map",
        ),
        (json!({"type": "string"}), "not an object"),
        (
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/A"}}}),
            "another `$ref`",
        ),
    ] {
        let why = why(&schema);
        assert!(why.contains(said), "{schema}: {why}");
    }
}

#[test]
fn a_local_ref_and_a_nullable_choice_are_followed() {
    // As schemars writes `mode: Option<Mode>` and `inner: Inner`.
    let schema = json!({
        "type": "object",
        "properties": {
            "mode": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}]},
            "inner": {"$ref": "#/$defs/Inner", "description": "the inner part"}
        },
        "required": ["inner"],
        "$defs": {
            "Mode": {"oneOf": [{"type": "string", "const": "a", "description": "first"}, {"type": "string", "const": "b"}]},
            "Inner": {"type": "object", "properties": {"n": {"type": "integer"}}}
        }
    });
    let form = Form::of(&schema).unwrap();
    let value = json!({"mode": "b", "inner": {"n": 2}});
    let texts = form.texts_of(&value).unwrap();
    assert_eq!(form.read(&texts).unwrap(), value);
    let page = form
        .render("edit:c1", &texts, &Texts::new(), &Placed::new())
        .into_string();
    assert!(page.contains("a — first"), "{page}");
    assert!(page.contains("the inner part"), "{page}");
}

#[test]
fn values_the_fields_cannot_show_are_json_only() {
    let form = Form::of(&every_kind()).unwrap();
    let base = json!({"name": "a@b.c", "count": 3, "force": true, "mode": "fast", "level": 2});
    assert!(form.texts_of(&base).is_ok());
    let with = |key: &str, value: Value| {
        let mut changed = base.clone();
        changed[key] = value;
        changed
    };
    for value in [
        with("name", json!("a\u{200b}b")),
        with("undeclared", json!(1)),
        with("tags", json!(["a\nb"])),
        with("tags", json!([""])),
        with("tags", json!([" "])),
        with("mode", json!("other")),
        with("count", json!("3")),
        with("note", Value::Null),
        with("name", json!("a\r\nb")),
        with("inner", json!({})),
        json!([1, 2]),
    ] {
        assert!(form.texts_of(&value).is_err(), "{value}");
    }
}

#[test]
fn hostile_names_are_escaped_and_kept_apart() {
    let long = "k".repeat(5000);
    let schema = json!({
        "type": "object",
        "properties": {
            "<script>alert(1)</script>": {"type": "string", "description": "<img src=x onerror=alert(2)>"},
            "__proto__": {"type": "string"},
            "a/b~c": {"type": "string", "title": "\u{202e}evil"},
            "\"quoted\" name='x'": {"type": "string"},
            long.clone(): {"type": "string"},
            "choice": {"enum": ["<b>bold</b>", "\u{200b}"]}
        }
    });
    let form = Form::of(&schema).unwrap();
    let value = json!({
        "<script>alert(1)</script>": "</textarea><script>",
        "__proto__": "polluted",
        "a/b~c": "slash",
        "\"quoted\" name='x'": "\"><b>",
        long.clone(): "long",
        "choice": "\u{200b}"
    });
    let filled = form.texts_of(&value).unwrap();
    assert_eq!(filled["/a~1b~0c"], "slash");
    assert_eq!(form.read(&filled).unwrap(), value);
    let page = form
        .render(&edit_scope("c/1"), &filled, &Texts::new(), &Placed::new())
        .into_string();
    assert!(!page.contains("<script>"), "{page}");
    assert!(!page.contains("<img"), "{page}");
    assert!(!page.contains("<b>"), "{page}");
    assert!(
        !page.contains('\u{202e}') && !page.contains('\u{200b}'),
        "{page}"
    );
    assert!(page.contains("\\u{202e}evil"), "{page}");
    assert!(page.contains("name=\"edit:c~11/a~1b~0c\""), "{page}");
    // A posted form's fields of one scope only.
    let posted = [
        ("edit:c~11/__proto__", "x"),
        ("edit:c~1/__proto__", "y"),
        ("edit:c~11", "z"),
        ("args:c/1", "{}"),
        ("in:/__proto__", "w"),
    ];
    let scoped = texts_in(&edit_scope("c/1"), posted.iter().copied());
    assert_eq!(scoped, texts(&[("/__proto__", "x"), ("", "z")]));
    assert_eq!(form.read(&scoped).unwrap(), json!({"__proto__": "x"}));
    for other in [
        "csrf",
        "digest",
        "verdict",
        "reason",
        "input",
        "confirm",
        "allow_tool",
    ] {
        assert!(!other.starts_with("edit:") && !other.starts_with(INPUT_SCOPE));
    }
}

#[test]
fn names_a_browser_would_change_are_json_only_and_escapes_are_kept() {
    for key in [
        "\u{0}nul",
        "a\u{200b}b",
        "line\nbreak",
        "cr\rlf",
        "\u{202e}rtl",
    ] {
        let schema = json!({"type": "object", "properties": {key: {"type": "string"}}});
        assert!(why(&schema).contains("hidden character"), "{key:?}");
        let nested = json!({"type": "object", "properties": {"o": {"type": "object", "properties": {key: {"type": "string"}}}}});
        assert!(why(&nested).contains("hidden character"), "{key:?}");
    }
    // Text that only looks like an escape is kept as it is.
    let keys = ["%FF%FE", "\\x80", "\\u{200b}", "&amp;", "~1", "/"];
    let properties: Map<String, Value> = keys
        .iter()
        .map(|key| ((*key).to_owned(), json!({"type": "string"})))
        .collect();
    let schema = json!({"type": "object", "properties": properties});
    let form = Form::of(&schema).unwrap();
    let value: Map<String, Value> = keys
        .iter()
        .map(|key| ((*key).to_owned(), json!(format!("value of {key}"))))
        .collect();
    let value = Value::Object(value);
    let filled = form.texts_of(&value).unwrap();
    let page = form
        .render(INPUT_SCOPE, &filled, &Texts::new(), &Placed::new())
        .into_string();
    assert!(page.contains("name=\"in:/~01\""), "{page}");
    assert!(page.contains("name=\"in:/~1\""), "{page}");
    assert!(page.contains("name=\"in:/&amp;amp;\""), "{page}");
    // Posted back under the names rendered: the same value.
    let posted: Vec<(String, String)> = filled
        .iter()
        .map(|(at, text)| (format!("{INPUT_SCOPE}{at}"), text.clone()))
        .collect();
    let read = form
        .read(&texts_in(
            INPUT_SCOPE,
            posted.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        ))
        .unwrap();
    assert_eq!(read, value);
}

#[test]
fn text_over_several_lines_is_a_text_area_that_keeps_its_lines() {
    let schema = json!({"type": "object", "properties": {"body": {"type": "string"}}});
    let form = Form::of(&schema).unwrap();
    let value = json!({"body": "\nfirst line\n\tindented\n"});
    let filled = form.texts_of(&value).unwrap();
    let page = form
        .render(INPUT_SCOPE, &filled, &Texts::new(), &Placed::new())
        .into_string();
    assert!(
        page.contains(
            "<textarea name=\"in:/body\" rows=\"4\">\n\nfirst line\n\tindented\n</textarea>"
        ),
        "{page}"
    );
    // As a browser sends it back: CR LF.
    let sent = texts(&[("/body", "\r\nfirst line\r\n\tindented\r\n")]);
    assert_eq!(form.read(&sent).unwrap(), value);
    // A carriage return of its own cannot be shown.
    assert!(form.texts_of(&json!({"body": "a\rb"})).is_err());
}

#[test]
fn a_ref_beside_a_validation_keyword_is_json_only() {
    let schema = json!({
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A", "minLength": 2}},
        "$defs": {"A": {"type": "string"}}
    });
    assert!(why(&schema).contains("minLength"));
}

/// A value of every kind for [`every_kind`], as a model could write it.
fn arguments() -> impl Strategy<Value = Value> {
    let text = "[a-zA-Z0-9 _.@<>&\"'/\\\\-]{0,12}";
    let line = "[a-zA-Z0-9_.@<>&\"'/\\\\-]{1,8}";
    (
        text,
        proptest::option::of(proptest::option::of(text)),
        any::<i32>(),
        proptest::option::of(-1.0e6_f64..1.0e6),
        any::<bool>(),
        proptest::option::of(any::<bool>()),
        prop_oneof![Just("fast"), Just("safe")],
        1_i64..=2,
        proptest::option::of(proptest::collection::vec(line, 0..4)),
        proptest::option::of(proptest::collection::vec(any::<i64>(), 0..4)),
        proptest::option::of((text, proptest::option::of(any::<bool>()))),
    )
        .prop_map(|(name, note, count, ratio, force, maybe, mode, level, tags, ids, inner)| {
            let mut object = json!({"name": name, "count": count, "force": force, "mode": mode, "level": level});
            if let Some(note) = note {
                object["note"] = note.map_or(Value::Null, Value::from);
            }
            if let Some(ratio) = ratio {
                object["ratio"] = json!(ratio);
            }
            if let Some(maybe) = maybe {
                object["maybe"] = json!(maybe);
            }
            if let Some(tags) = tags {
                object["tags"] = json!(tags);
            }
            if let Some(ids) = ids {
                object["ids"] = json!(ids);
            }
            if let Some((path, deep)) = inner {
                object["inner"] = json!({"path": path});
                if let Some(deep) = deep {
                    object["inner"]["deep"] = json!(deep);
                }
            }
            object
        })
}

proptest! {
    /// What the fields show of a value reads back as that value, or
    /// the value is edited as JSON: a form never changes what it
    /// did not show.
    #[test]
    fn shown_values_read_back_exactly(value in arguments()) {
        let form = Form::of(&every_kind()).unwrap();
        if let Ok(texts) = form.texts_of(&value) {
            prop_assert_eq!(form.read(&texts).unwrap(), value);
        } else {
            // Only what cannot be shown: a null optional note, a
            // required name left empty and nothing else differs.
            let shown_as_nothing = value.get("note") == Some(&Value::Null)
                || value.get("tags").is_some_and(|tags| tags == &json!([]))
                || value.get("ids").is_some_and(|ids| ids == &json!([]))
                || value.get("inner").is_some_and(|inner| inner == &json!({"path": ""}))
                || value.get("note") == Some(&json!(""));
            prop_assert!(shown_as_nothing, "{}", value);
        }
    }

    /// Whatever is posted, reading never panics, and what it reads is
    /// an object of declared keys only.
    #[test]
    fn any_posted_texts_read_safely(fields in proptest::collection::btree_map("/(name|count|ratio|force|maybe|mode|level|tags|ids|inner/path|inner/deep|other)", ".{0,20}", 0..12)) {
        let form = Form::of(&every_kind()).unwrap();
        if let Ok(Value::Object(read)) = form.read(&fields) {
            let declared = every_kind()["properties"].as_object().unwrap().clone();
            prop_assert!(read.keys().all(|key| declared.contains_key(key)));
        }
    }
}
