//! JSON values read with each object key at most once.
//!
//! JSON leaves a key given twice to its reader: serde_json's `Value` keeps
//! the last, SQLite's `json_extract` the first. A stored document whose
//! arguments say `{"path":"a.txt","path":"/etc/passwd"}` would then read as
//! one call to a person querying the database and as another to the host
//! that runs it. Every free-form value of a document — a call's arguments, a
//! reviewed tool's parameter schema, an input schema — is read through
//! [`value`], which refuses such an object instead.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Reads a JSON value as `serde_json::Value` does, refusing an object that
/// names a key twice (for `#[serde(deserialize_with)]`).
pub(crate) fn value<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
    deserializer.deserialize_any(Unique)
}

/// A value whose objects name each key once.
struct Unique;

impl<'de> DeserializeSeed<'de> for Unique {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Unique {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value whose objects name each key once")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Value, S::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(256));
        while let Some(item) = seq.next_element_seed(Unique)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Value, M::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "`{}` appears twice in one object",
                    key.escape_debug()
                )));
            }
            let item = map.next_value_seed(Unique)?;
            object.insert(key, item);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Value, serde_json::Error> {
        value(&mut serde_json::Deserializer::from_str(text))
    }

    #[test]
    fn reads_what_a_value_reads() {
        for text in [
            r#"{"a":[1,-2,3.5,1e300,true,null,"x\n\u00e9"],"b":{},"c":{"d":[{}]}}"#,
            "18446744073709551615",
            "-9223372036854775808",
            r#"{"$schema":"x","type":"object"}"#,
            "[]",
        ] {
            let expected: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            assert_eq!(read(text).ok(), Some(expected), "{text}");
        }
    }

    #[test]
    fn refuses_a_key_named_twice_at_any_depth() {
        for text in [
            r#"{"path":"a.txt","path":"/etc/passwd"}"#,
            r#"{"path":"a.txt","p\u0061th":"/etc/passwd"}"#,
            r#"{"a":{"b":1,"b":2}}"#,
            r#"[{"b":1},{"c":1,"c":1}]"#,
        ] {
            let error = read(text).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(
                error.contains("appears twice in one object"),
                "{text}: {error}"
            );
        }
    }
}
