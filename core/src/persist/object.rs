//! A JSON object read field by field, with serde visitors over
//! serde_json's parser.
//!
//! A visitor can stop the parser only with the parser's own error, so where
//! it stops for a reason of its own — a field named twice, an unknown field,
//! a value of the wrong kind, an ill-formed part — it notes the reason
//! first, and the reading reports the note; any other error of the parser
//! means the text is not JSON.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::CorruptState;

/// The reason a visitor stopped the parser for, if it stopped it.
pub(super) type Note = RefCell<Option<String>>;

/// Notes `reason` and stops the parser.
pub(super) fn stop<E: de::Error>(note: &Note, reason: String) -> E {
    note.replace(Some(reason));
    E::custom("the reading stopped")
}

/// `text` read as one JSON object into `fields`; `what` names it in reasons.
pub(super) fn read_object<'de, F: Fields<'de>>(
    text: &'de str,
    what: &'static str,
    fields: F,
) -> Result<F, CorruptState> {
    let note = Note::default();
    let mut parser = serde_json::Deserializer::from_str(text);
    let read = de::Deserializer::deserialize_any(
        &mut parser,
        Object {
            note: &note,
            what,
            fields,
        },
    )
    .and_then(|fields| parser.end().map(|()| fields));
    read.map_err(|error| match note.take() {
        // A value that does not read stops the reading where it stands: a
        // field named twice or unknown further on is named first, as what
        // is wrong with the object's shape.
        Some(reason) => {
            let reason = shape_problem::<F>(text, what).unwrap_or(reason);
            CorruptState::with_source(reason, error)
        }
        None => CorruptState::with_source(format!("not JSON: {error}"), error),
    })
}

/// A field of the object in `text` named twice, or not one of `F`'s, if
/// any: its keys read alone, the values skipped.
fn shape_problem<'de, F: Fields<'de>>(text: &'de str, what: &'static str) -> Option<String> {
    struct Keys<'n, F> {
        note: &'n Note,
        what: &'static str,
        seen: Vec<usize>,
        fields: std::marker::PhantomData<F>,
    }
    impl<'de, F: Fields<'de>> Visitor<'de> for Keys<'_, F> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<M: MapAccess<'de>>(mut self, mut map: M) -> Result<(), M::Error> {
            while let Some(Name(name)) = map.next_key()? {
                let Some(at) = F::NAMES.iter().position(|known| *known == name) else {
                    return Err(stop(self.note, F::unknown(&name)));
                };
                if self.seen.contains(&at) {
                    return Err(stop(self.note, twice(self.what, &name)));
                }
                self.seen.push(at);
                map.next_value::<de::IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let note = Note::default();
    let mut parser = serde_json::Deserializer::from_str(text);
    let keys = Keys::<F> {
        note: &note,
        what,
        seen: Vec::new(),
        fields: std::marker::PhantomData,
    };
    let _ = de::Deserializer::deserialize_map(&mut parser, keys);
    note.take()
}

/// The fields of one kind of object, read as they come.
pub(super) trait Fields<'de> {
    /// The fields the object may hold.
    const NAMES: &'static [&'static str];

    /// Why a field not among [`NAMES`](Self::NAMES) is refused.
    fn unknown(name: &str) -> String;

    /// Reads the value of the field `name`, noting why it cannot.
    fn field<M: MapAccess<'de>>(
        &mut self,
        name: &Cow<'de, str>,
        map: &mut M,
        note: &Note,
    ) -> Result<(), M::Error>;

    /// The object has no more fields.
    fn end(&mut self) {}
}

/// A field's slot, filled once: a field named twice is refused (JSON leaves
/// duplicates to the reader, and two readers must never see two documents).
pub(super) fn once<T, E: de::Error>(
    slot: &mut Option<T>,
    name: &str,
    note: &Note,
    what: &str,
    value: impl FnOnce() -> Result<T, E>,
) -> Result<(), E> {
    if slot.is_some() {
        return Err(stop(note, twice(what, name)));
    }
    *slot = Some(value()?);
    Ok(())
}

fn twice(what: &str, name: &str) -> String {
    format!("{what} names a field twice: `{name}` appears twice")
}

/// A JSON object read into `fields`; anything else is noted as what it is.
pub(super) struct Object<'n, F> {
    pub(super) note: &'n Note,
    pub(super) what: &'static str,
    pub(super) fields: F,
}

impl<F> Object<'_, F> {
    fn not_an_object<E: de::Error, T>(&self, kind: &str) -> Result<T, E> {
        Err(stop(
            self.note,
            format!("{} is {kind}, not a JSON object", self.what),
        ))
    }
}

impl<'de, F: Fields<'de>> DeserializeSeed<'de> for Object<'_, F> {
    type Value = F;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<F, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, F: Fields<'de>> Visitor<'de> for Object<'_, F> {
    type Value = F;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<M: MapAccess<'de>>(mut self, mut map: M) -> Result<F, M::Error> {
        while let Some(Name(name)) = map.next_key()? {
            self.fields.field(&name, &mut map, self.note)?;
        }
        self.fields.end();
        Ok(self.fields)
    }
    fn visit_seq<S: SeqAccess<'de>>(self, _: S) -> Result<F, S::Error> {
        self.not_an_object("an array")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<F, E> {
        self.not_an_object("a string")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<F, E> {
        self.not_an_object("a boolean")
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<F, E> {
        self.not_an_object("a number")
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<F, E> {
        self.not_an_object("a number")
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<F, E> {
        self.not_an_object("a number")
    }
    fn visit_unit<E: de::Error>(self) -> Result<F, E> {
        self.not_an_object("null")
    }
}

/// An object key, borrowed from the text when it holds no escape.
struct Name<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Key;
        impl<'de> Visitor<'de> for Key {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Borrowed(key)))
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(key.to_owned())))
            }
        }
        deserializer.deserialize_str(Key)
    }
}
