//! Reading stored JSON text without building it.
//!
//! A catalogue row keeps its input schema and annotations as JSON text.
//! Hydration needs to know whether a text *would* read as a
//! [`serde_json::Value`] — and, for a schema, what its top-level `"type"`
//! says — for every row, but builds the value only for the tools a model is
//! offered. [`read`] answers that in one pass that keeps nothing.
//!
//! It reads with the same parser as [`serde_json::from_str`] into a `Value`,
//! the same way: every value through `deserialize_any` (so numbers, string
//! escapes and the nesting limit are checked exactly as they are for a
//! `Value`), every object key through `deserialize_str`, and nothing but
//! white space after the value. So a text it accepts always reads into a
//! `Value`, and a text it refuses never does; a property test pins this.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// What a JSON text reads as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// An object. `type_passes` is the caller's judgement of its top-level
    /// `"type"` field — the last one, as a `Value` keeps it — as a string, or
    /// of `None` when the field is absent or not a string.
    Object {
        /// The judgement of the `"type"` field.
        type_passes: bool,
    },
    /// Any other JSON value.
    Other,
}

/// How `text` reads as JSON, or `None` when it does not read as a
/// [`serde_json::Value`]. `judge_type` judges the top-level `"type"` field
/// of an object (see [`Reading::Object`]).
pub fn read(text: &str, judge_type: impl Fn(Option<&str>) -> bool) -> Option<Reading> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let reading =
        serde::Deserializer::deserialize_any(&mut deserializer, Top { judge: &judge_type }).ok()?;
    deserializer.end().ok()?;
    Some(reading)
}

/// Whether `text` reads as a [`serde_json::Value`].
pub fn is_json(text: &str) -> bool {
    read(text, |_| false).is_some()
}

/// The top level: an object is judged by its `"type"`; anything else is read
/// and passed over.
struct Top<'j, J> {
    judge: &'j J,
}

impl<'de, J: Fn(Option<&str>) -> bool> Visitor<'de> for Top<'_, J> {
    type Value = Reading;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Reading, A::Error> {
        // An object without `"type"` is judged as one whose type is absent.
        let mut type_passes = (self.judge)(None);
        while let Some(is_type) = map.next_key_seed(Key)? {
            if is_type {
                type_passes = map.next_value_seed(TypeField { judge: self.judge })?;
            } else {
                map.next_value_seed(Any)?;
            }
        }
        Ok(Reading::Object { type_passes })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Reading, A::Error> {
        Any.visit_seq(seq).map(|()| Reading::Other)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Reading, E> {
        Ok(Reading::Other)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Reading, E> {
        Ok(Reading::Other)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Reading, E> {
        Ok(Reading::Other)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Reading, E> {
        Ok(Reading::Other)
    }
    fn visit_str<E>(self, _: &str) -> Result<Reading, E> {
        Ok(Reading::Other)
    }
    fn visit_unit<E>(self) -> Result<Reading, E> {
        Ok(Reading::Other)
    }
}

/// The top level's `"type"` field: read like any value, and judged as a
/// string, or as absent when it is not one.
struct TypeField<'j, J> {
    judge: &'j J,
}

impl<'de, J: Fn(Option<&str>) -> bool> DeserializeSeed<'de> for TypeField<'_, J> {
    type Value = bool;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, J: Fn(Option<&str>) -> bool> Visitor<'de> for TypeField<'_, J> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E>(self, type_field: &str) -> Result<bool, E> {
        Ok((self.judge)(Some(type_field)))
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok((self.judge)(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok((self.judge)(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok((self.judge)(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok((self.judge)(None))
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok((self.judge)(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        Any.visit_seq(seq)?;
        Ok((self.judge)(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        Any.visit_map(map)?;
        Ok((self.judge)(None))
    }
}

/// A top-level key: whether it is `"type"`.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = bool;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Key {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E>(self, key: &str) -> Result<bool, E> {
        Ok(key == "type")
    }
}

/// Any value, read and dropped.
struct Any;

impl<'de> DeserializeSeed<'de> for Any {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Any {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Any)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(AnyKey)?.is_some() {
            map.next_value_seed(Any)?;
        }
        Ok(())
    }
}

/// Any object key, read as a string and dropped.
struct AnyKey;

impl<'de> DeserializeSeed<'de> for AnyKey {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(Any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads_as_value(text: &str) -> bool {
        serde_json::from_str::<serde_json::Value>(text).is_ok()
    }

    #[test]
    fn accepts_exactly_what_a_value_accepts() {
        let deep_ok = format!("{}{}", "[".repeat(127), "]".repeat(127));
        let too_deep = format!("{}{}", "[".repeat(129), "]".repeat(129));
        for text in [
            r#"{"type":"object"}"#,
            r#" {"a": [1, -2, 3.5e10, true, null, "x\u00e9\n"], "b": {}} "#,
            "1e400",
            "-1e400",
            "18446744073709551616",
            r#""\ud800""#,
            r#""\ud83d\ude00""#,
            r#"{"\ud800": 1}"#,
            r#"{"a":1,}"#,
            "[1,]",
            "01",
            "1.",
            "{} {}",
            "",
            " ",
            "nul",
            "\"tab\there\"",
            &deep_ok,
            &too_deep,
        ] {
            assert_eq!(
                read(text, |_| true).is_some(),
                reads_as_value(text),
                "{text:?}"
            );
        }
    }

    proptest::proptest! {
        /// Texts near JSON — JSON values with characters dropped, doubled
        /// or swapped — read here exactly when they read as a `Value`.
        #[test]
        fn agrees_with_a_value_on_near_json(
            value in json_value(),
            edits in proptest::collection::vec((0usize..512, 0u8..4, proptest::char::any()), 0..4),
        ) {
            let mut text: Vec<char> = serde_json::to_string_pretty(&value)
                .unwrap_or_default()
                .chars()
                .collect();
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
            proptest::prop_assert_eq!(read(&text, |_| true).is_some(), reads_as_value(&text), "{:?}", text);
        }
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(serde_json::Value::from),
            "[a-z\"\u{e9}\n]{0,6}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                proptest::collection::btree_map("[a-z]{0,3}|type", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn judges_the_last_top_level_type() {
        let object = |t: Option<&str>| t == Some("object");
        let reading = |text| read(text, object);
        let passes = Some(Reading::Object { type_passes: true });
        let fails = Some(Reading::Object { type_passes: false });
        assert_eq!(reading(r#"{"type":"object"}"#), passes);
        assert_eq!(reading(r#"{"type":"obj\u0065ct"}"#), passes);
        assert_eq!(reading(r#"{"type":"string","type":"object"}"#), passes);
        assert_eq!(reading(r#"{"type":"object","type":"string"}"#), fails);
        assert_eq!(reading(r#"{"type":["object"]}"#), fails);
        assert_eq!(reading(r#"{"properties":{"type":"object"}}"#), fails);
        assert_eq!(reading("{}"), fails);
        assert_eq!(reading(r#"["type","object"]"#), Some(Reading::Other));
        assert_eq!(reading(r#""object""#), Some(Reading::Other));
        assert_eq!(reading(r#"{"type":"object""#), None);
    }
}
