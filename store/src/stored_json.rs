//! Stored JSON text, read without building it: what a catalogue row's
//! schema says its top-level `"type"` is ([`object_type_passes`], for
//! hydration), and whether a text is already what serde_json writes for it
//! ([`is_canonical`], for pinning).
//!
//! Both read with serde_json's own parser, each value through
//! `deserialize_any` — numbers, string escapes and the nesting limit
//! checked exactly as for a `serde_json::Value` — and nothing but white
//! space after the value. An object key serde_json reserves for itself
//! (`$serde_json::…`) is refused: a `Value` may not read such an object as
//! the object it literally is, so the text and what a reader sees of it
//! could differ. A test pins that this build reads numbers as numbers
//! (serde_json's `arbitrary_precision` off), under which no ordinary text
//! holds such a key.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// The prefix of the keys serde_json reserves for itself.
const RESERVED: &str = "$serde_json::";

/// Whether `text` is exactly what `serde_json` writes for the `Value` it
/// reads as: no white space, object keys in ascending order and each once,
/// strings and numbers spelled as `serde_json` spells them. Reading it and
/// writing it again gives it back, byte for byte. A text with a reserved key,
/// or a key written with an escape, is never taken as canonical (an answer of
/// `false` only ever costs a reader the slower way).
pub(crate) fn is_canonical(text: &str) -> bool {
    let mut rest = Rest(text.as_bytes());
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let written = serde::Deserializer::deserialize_any(&mut deserializer, Canon(&mut rest));
    written.is_ok() && deserializer.end().is_ok() && rest.0.is_empty()
}

/// Whether `text` reads as a JSON object whose top-level `"type"` field —
/// the last one, as a `Value` keeps it — `judge` passes (as a string, or
/// `None` when it is absent or not a string). A text this accepts always
/// reads into a `Value`, as the object it literally is; a text without
/// reserved keys that reads into such a `Value` is accepted.
pub fn object_type_passes(text: &str, judge: impl Fn(Option<&str>) -> bool) -> bool {
    let mut parser = serde_json::Deserializer::from_str(text);
    let passes = serde::Deserializer::deserialize_any(&mut parser, TopLevel { judge: &judge });
    passes.is_ok_and(|passes| passes) && parser.end().is_ok()
}

/// The top level: an object is judged by its last `"type"` field; anything
/// else is read and does not pass.
struct TopLevel<'j, J> {
    judge: &'j J,
}

impl<'de, J: Fn(Option<&str>) -> bool> Visitor<'de> for TopLevel<'_, J> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<bool, M::Error> {
        let mut passes = (self.judge)(None);
        while let Some(Key(is_type)) = map.next_key()? {
            if is_type {
                passes = map.next_value_seed(TypeField { judge: self.judge })?;
            } else {
                map.next_value_seed(Any)?;
            }
        }
        Ok(passes)
    }
    fn visit_seq<S: SeqAccess<'de>>(self, seq: S) -> Result<bool, S::Error> {
        Any.visit_seq(seq).map(|()| false)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
}

/// The top level's `"type"` field: read like any value, judged as the
/// string it borrows, or as absent when it is not a string.
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
    fn visit_seq<S: SeqAccess<'de>>(self, seq: S) -> Result<bool, S::Error> {
        Any.visit_seq(seq).map(|()| (self.judge)(None))
    }
    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<bool, M::Error> {
        Any.visit_map(map).map(|()| (self.judge)(None))
    }
}

/// An object key: refused when reserved, otherwise whether it is `"type"`.
struct Key(bool);

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl Visitor<'_> for Name {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                if key.starts_with(RESERVED) {
                    Err(E::custom("a key serde_json reserves"))
                } else {
                    Ok(Key(key == "type"))
                }
            }
        }
        deserializer.deserialize_str(Name)
    }
}

/// Any value, read as a `Value` reads it, and dropped.
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
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        while seq.next_element_seed(Any)?.is_some() {}
        Ok(())
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        while map.next_key::<Key>()?.is_some() {
            map.next_value_seed(Any)?;
        }
        Ok(())
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
            Err(E::custom("a key serde_json reserves"))
        } else {
            Ok(key)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `is_canonical` answers, by building the value: it reads, holds
    /// no reserved key, and writes back as itself.
    fn writes_back(text: &str) -> bool {
        !text.contains(RESERVED)
            && serde_json::from_str::<serde_json::Value>(text)
                .and_then(|value| serde_json::to_string(&value))
                .is_ok_and(|written| written == text)
    }

    fn reads_as_value(text: &str) -> bool {
        serde_json::from_str::<serde_json::Value>(text).is_ok()
    }

    #[test]
    fn numbers_read_as_numbers_in_this_build() {
        // Under serde_json's `arbitrary_precision` a number reaches a reader
        // as an object under a reserved key, which these readings refuse.
        let number =
            serde_json::from_str::<serde_json::Value>(r#"{"$serde_json::private::Number":"1"}"#);
        assert!(number.is_ok_and(|value| value.is_object()));
        assert!(object_type_passes(r#"{"type":"object","n":1}"#, |t| t == Some("object")));
    }

    #[test]
    fn accepts_what_a_value_accepts() {
        let deep_ok = format!("{}{}", "[".repeat(127), "]".repeat(127));
        let too_deep = format!("{}{}", "[".repeat(129), "]".repeat(129));
        for text in [
            r#"{"type":"object"}"#,
            r#" {"a": [1, -2, 3.5e10, true, null, "x\u00e9\n"], "b": {}} "#,
            r#"{"type":"object","a":1e400}"#,
            r#"{"type":"object","a":-1e400}"#,
            "18446744073709551616",
            r#"{"type":"object","a":"\ud800"}"#,
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
            &format!(r#"{{"type":"object","a":{deep_ok}}}"#),
            &format!(r#"{{"type":"object","a":{too_deep}}}"#),
        ] {
            let value = serde_json::from_str::<serde_json::Value>(text);
            let passes = value.is_ok_and(|v| {
                v.is_object() && v.get("type") == Some(&serde_json::json!("object"))
            });
            assert_eq!(
                object_type_passes(text, |t| t == Some("object")),
                passes,
                "{text:?}"
            );
        }
    }

    #[test]
    fn judges_the_last_top_level_type() {
        let reading = |text| object_type_passes(text, |t| t == Some("object"));
        assert!(reading(r#"{"type":"object"}"#));
        assert!(reading(r#"{"type":"obj\u0065ct"}"#));
        assert!(reading(r#"{"typ\u0065":"object"}"#));
        assert!(reading(r#"{"type":"string","type":"object"}"#));
        assert!(!reading(r#"{"type":"object","type":"string"}"#));
        assert!(!reading(r#"{"type":["object"]}"#));
        assert!(!reading(r#"{"properties":{"type":"object"}}"#));
        assert!(!reading("{}"));
        assert!(!reading(r#"["type","object"]"#));
        assert!(!reading(r#""object""#));
        assert!(!reading(r#"{"type":"object""#));
        // An object with a key serde_json reserves, anywhere.
        assert!(!reading(
            r#"{"$serde_json::private::RawValue":"x","type":"object"}"#
        ));
        assert!(!reading(
            r#"{"type":"object","properties":{"$serde_json::private::RawValue":"{}"}}"#
        ));
        assert!(!reading(
            r#"{"type":"object","x":[{"$serde_json::private::Raw\u0056alue":"{}"}]}"#
        ));
        // Without one, the top-level type is judged as a `Value` holds it.
        assert!(object_type_passes(r#"{"type":"string"}"#, |t| t == Some("string")));
        assert!(object_type_passes("{}", |t| t.is_none()));
    }

    #[test]
    fn a_reserved_key_is_never_canonical() {
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
            assert!(!is_canonical(text), "{text}");
            assert!(!object_type_passes(text, |_| true), "{text}");
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
        /// What serde_json writes is canonical; texts near it — characters
        /// dropped, doubled or swapped — read as an object here exactly when
        /// they read as one into a `Value` (none holds a reserved key), and
        /// are canonical only when they write back as themselves.
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
            proptest::prop_assert_eq!(
                object_type_passes(&text, |_| true),
                serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|v| v.is_object()),
                "{:?}", text
            );
            proptest::prop_assert!(!object_type_passes(&text, |_| true) || reads_as_value(&text));
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
}
