//! Reading stored JSON text without building it.
//!
//! A catalogue row keeps its input schema and annotations as JSON text.
//! Hydration needs to know, for every row, whether a text reads as a
//! [`serde_json::Value`] — and, for a schema, what its top-level `"type"`
//! says — but builds the value only for the tools a model is offered.
//! [`read`] answers that in one pass that keeps nothing. Pinning needs to know
//! whether a text is already the one `serde_json` would write for it;
//! [`is_canonical`] answers that in one pass too.
//!
//! Both read with the same parser as [`serde_json::from_str`] into a `Value`,
//! the same way: every value through `deserialize_any` (so numbers, string
//! escapes and the nesting limit are checked exactly as they are for a
//! `Value`), every object key through `deserialize_str`, and nothing but
//! white space after the value.
//!
//! One kind of text is refused although a `Value` may read it: an object
//! with a key `serde_json` reserves for itself (`$serde_json::private::…`).
//! A `Value` does not read such a key as a key — it unwraps the object into
//! the JSON text its value holds, or refuses it — so the literal text and
//! what a reader would see of it differ. With `serde_json`'s
//! `arbitrary_precision` feature on (in any crate of a build), numbers reach
//! a reader as such objects; those are read as a `Value` reads them.
//!
//! So a text [`read`] accepts always reads into a `Value`, as the object it
//! literally is; a text without reserved keys that a `Value` reads, `read`
//! accepts. Property tests pin both.

use std::fmt;
use std::sync::OnceLock;

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
/// [`serde_json::Value`] or holds a key `serde_json` reserves (see the
/// [module](self)). `judge_type` judges the top-level `"type"` field of an
/// object (see [`Reading::Object`]).
pub fn read(text: &str, judge_type: impl Fn(Option<&str>) -> bool) -> Option<Reading> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let reading =
        serde::Deserializer::deserialize_any(&mut deserializer, Top { judge: &judge_type }).ok()?;
    deserializer.end().ok()?;
    Some(reading)
}

/// Whether `text` is exactly what `serde_json` writes for the `Value` it
/// reads as: no white space, object keys in ascending order and each once,
/// strings and numbers spelled as `serde_json` spells them. Reading it and
/// writing it again gives it back, byte for byte. A text with a reserved key,
/// or a key written with an escape, is never taken as canonical (an answer of
/// `false` only ever costs a reader the slower way).
pub fn is_canonical(text: &str) -> bool {
    let mut rest = Rest(text.as_bytes());
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let written = serde::Deserializer::deserialize_any(&mut deserializer, Canon(&mut rest));
    written.is_ok() && deserializer.end().is_ok() && rest.0.is_empty()
}

/// The key `serde_json` reserves for a number under `arbitrary_precision`.
const NUMBER_KEY: &str = "$serde_json::private::Number";
/// The prefix of every key `serde_json` reserves.
const RESERVED: &str = "$serde_json::private::";

/// Whether numbers reach a reader as objects under [`NUMBER_KEY`]: whether
/// `serde_json`'s `arbitrary_precision` feature is on in this build.
fn numbers_are_objects() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        serde_json::from_str::<serde_json::Value>(r#"{"$serde_json::private::Number":"1"}"#)
            .is_ok_and(|value| value.is_number())
    })
}

/// What a map's first key is.
enum FirstKey {
    /// A number, under `arbitrary_precision`.
    Number,
    /// An ordinary key: whether it is `"type"`.
    Plain(bool),
}

/// A key: refused when reserved (but for a number's, first, under
/// `arbitrary_precision`); otherwise whether it is `"type"`.
struct Key {
    first: bool,
}

impl<'de> DeserializeSeed<'de> for Key {
    type Value = FirstKey;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<FirstKey, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Key {
    type Value = FirstKey;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<FirstKey, E> {
        if self.first && key == NUMBER_KEY && numbers_are_objects() {
            Ok(FirstKey::Number)
        } else if key.starts_with(RESERVED) {
            Err(E::custom(format_args!("`{key}` is reserved by serde_json")))
        } else {
            Ok(FirstKey::Plain(key == "type"))
        }
    }
}

/// A number's digits under `arbitrary_precision`, checked as a `Value`
/// checks them.
struct NumberText;

impl<'de> DeserializeSeed<'de> for NumberText {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for NumberText {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string containing a number")
    }
    fn visit_str<E: de::Error>(self, digits: &str) -> Result<(), E> {
        digits
            .parse::<serde_json::Number>()
            .map(|_| ())
            .map_err(E::custom)
    }
}

/// Reads a map's entries with `value` for each value after the first key,
/// which has been read; `Ok(false)` when the map was a number.
fn entries<'de, A: MapAccess<'de>>(
    map: &mut A,
    mut value: impl FnMut(&mut A, bool) -> Result<(), A::Error>,
) -> Result<bool, A::Error> {
    match map.next_key_seed(Key { first: true })? {
        None => return Ok(true),
        Some(FirstKey::Number) => {
            map.next_value_seed(NumberText)?;
            return Ok(false);
        }
        Some(FirstKey::Plain(is_type)) => value(map, is_type)?,
    }
    while let Some(key) = map.next_key_seed(Key { first: false })? {
        let FirstKey::Plain(is_type) = key else {
            return Err(de::Error::custom("a reserved key after the first"));
        };
        value(map, is_type)?;
    }
    Ok(true)
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
        let object = entries(&mut map, |map, is_type| {
            if is_type {
                type_passes = map.next_value_seed(TypeField { judge: self.judge })?;
            } else {
                map.next_value_seed(Any)?;
            }
            Ok(())
        })?;
        Ok(if object {
            Reading::Object { type_passes }
        } else {
            Reading::Other
        })
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
        entries(&mut map, |map, _| map.next_value_seed(Any)).map(|_| ())
    }
}

/// What is left of a text being compared with what `serde_json` writes.
struct Rest<'t>(&'t [u8]);

impl std::io::Write for Rest<'_> {
    fn write(&mut self, written: &[u8]) -> std::io::Result<usize> {
        match self.0.strip_prefix(written) {
            Some(rest) => {
                self.0 = rest;
                Ok(written.len())
            }
            None => Err(std::io::Error::other("not the text serde_json writes")),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Rest<'_> {
    /// Compares what `serde_json` writes for `value` with the text's next
    /// bytes.
    fn expect<T: serde::Serialize + ?Sized, E: de::Error>(&mut self, value: &T) -> Result<(), E> {
        serde_json::to_writer(&mut *self, value).map_err(E::custom)
    }

    fn punct<E: de::Error>(&mut self, punct: &'static str) -> Result<(), E> {
        std::io::Write::write_all(self, punct.as_bytes()).map_err(E::custom)
    }
}

/// A value read and written again as `serde_json` writes it, compared with
/// the text as it goes.
struct Canon<'r, 't>(&'r mut Rest<'t>);

impl<'de> DeserializeSeed<'de> for Canon<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Canon<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.0.expect(&v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.0.expect(&v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.0.expect(&v)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.0.expect(&v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.expect(v)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.punct("null")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.punct("[")?;
        let mut first = true;
        loop {
            // The separator is compared before the element is known: a `]`
            // where a `,` was expected ends the comparison, as it should.
            if !first && !self.0.0.starts_with(b"]") {
                self.0.punct(",")?;
            }
            if seq.next_element_seed(Canon(&mut *self.0))?.is_none() {
                break;
            }
            first = false;
        }
        self.0.punct("]")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.punct("{")?;
        let mut last: Option<&'de str> = None;
        while let Some(key) = map.next_key_seed(CanonKey)? {
            if let Some(last) = last {
                // Keys ascend, each once: what a `Value`'s map writes.
                if last >= key {
                    return Err(de::Error::custom("keys out of order"));
                }
                self.0.punct(",")?;
            }
            self.0.expect(key)?;
            self.0.punct(":")?;
            map.next_value_seed(Canon(&mut *self.0))?;
            last = Some(key);
        }
        self.0.punct("}")
    }
}

/// A key as it stands in the text: one written without escapes, and not
/// reserved; anything else is not taken as canonical.
struct CanonKey;

impl<'de> DeserializeSeed<'de> for CanonKey {
    type Value = &'de str;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<&'de str, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for CanonKey {
    type Value = &'de str;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key written without escapes")
    }
    fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<&'de str, E> {
        if key.starts_with(RESERVED) {
            Err(E::custom("a reserved key"))
        } else {
            Ok(key)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads_as_value(text: &str) -> bool {
        serde_json::from_str::<serde_json::Value>(text).is_ok()
    }

    /// What `is_canonical` answers, by building the value: it reads, holds
    /// no reserved key, and writes back as itself.
    fn writes_back(text: &str) -> bool {
        !text.contains(RESERVED)
            && serde_json::from_str::<serde_json::Value>(text)
                .and_then(|value| serde_json::to_string(&value))
                .is_ok_and(|written| written == text)
    }

    #[test]
    fn accepts_what_a_value_accepts() {
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

    #[test]
    fn refuses_keys_serde_json_reserves() {
        for text in [
            r#"{"$serde_json::private::RawValue":"x"}"#,
            r#"{"$serde_json::private::RawValue":"{\"type\":\"object\"}"}"#,
            r#"{"$serde_json::private::RawValue":"1","type":"object"}"#,
            r#"{"type":"object","$serde_json::private::RawValue":"x"}"#,
            r#"{"type":"object","properties":{"$serde_json::private::RawValue":"{}"}}"#,
            r#"{"type":"object","x":[{"$serde_json::private::Raw\u0056alue":"{}"}]}"#,
            r#"{"$serde_json::private::Number":"1"}"#,
            r#"{"type":"object","n":{"$serde_json::private::Number":"1"}}"#,
        ] {
            assert_eq!(read(text, |_| true), None, "{text}");
            assert!(!is_canonical(text), "{text}");
        }
    }

    #[test]
    fn canonical_is_what_serde_json_writes() {
        for (text, canonical) in [
            (
                r#"{"properties":{"q":{"type":"string"}},"type":"object"}"#,
                true,
            ),
            (
                r#"{"a":[1,-2,3.5,1e+300,true,null,"x\n\u0001é"],"b":{}}"#,
                true,
            ),
            (r#"{"a":1e300}"#, false),
            ("[]", true),
            ("[1,[],{}]", true),
            (r#"{"type":"object","properties":{}}"#, false),
            (r#"{"a":1,"a":1}"#, false),
            (r#"{"a": 1}"#, false),
            (r#" {"a":1}"#, false),
            (r#"{"a":1} "#, false),
            (r#"{"a":1.00}"#, false),
            (r#"{"a":1e0}"#, false),
            (r#"{"a":-0}"#, false),
            (r#"{"a":"\u0065"}"#, false),
            (r#"{"a":"\/"}"#, false),
            ("[1 ,2]", false),
            ("[1,2,]", false),
            // Canonical, but a key written with an escape is never taken as
            // such: only ever the slower way.
            (r#"{"\n":1}"#, false),
        ] {
            assert_eq!(is_canonical(text), canonical, "{text}");
            if canonical {
                assert!(writes_back(text), "{text}");
            }
        }
    }

    proptest::proptest! {
        /// Texts near JSON — JSON values with characters dropped, doubled
        /// or swapped — read here exactly when they read as a `Value`
        /// (none of them holds a reserved key), and are canonical only when
        /// they write back as themselves.
        #[test]
        fn agrees_with_a_value_on_near_json(
            value in json_value(),
            pretty in proptest::bool::ANY,
            edits in proptest::collection::vec((0usize..512, 0u8..4, proptest::char::any()), 0..4),
        ) {
            let written = if pretty {
                serde_json::to_string_pretty(&value).unwrap_or_default()
            } else {
                value.to_string()
            };
            proptest::prop_assert!(pretty || is_canonical(&written), "{}", written);
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
            proptest::prop_assert_eq!(read(&text, |_| true).is_some(), reads_as_value(&text), "{:?}", text);
            if is_canonical(&text) {
                proptest::prop_assert!(writes_back(&text), "{:?}", text);
            }
        }
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<u64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(serde_json::Value::from),
            "[a-z\"\u{e9}\n\u{1}]{0,6}".prop_map(serde_json::Value::from),
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
