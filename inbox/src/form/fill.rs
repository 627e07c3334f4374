//! The fields filled from a value: a call's current arguments, or the
//! schema's defaults — offered only when reading them back gives exactly
//! that value.

use serde_json::Value;
use toolgate::visible::is_hidden;

use super::{Field, Form, Item, JsonOnly, Kind, Texts, pointer};

impl Form {
    /// The texts that show `value` field by field; [`JsonOnly`] when they
    /// cannot show it exactly — read back, they would give another value.
    pub(crate) fn texts_of(&self, value: &Value) -> Result<Texts, JsonOnly> {
        let cannot = || {
            JsonOnly("its current values cannot all be shown as fields (a hidden character, a line break in a list item, a key the schema does not declare, a value of another kind…)".to_owned())
        };
        if !value.is_object() {
            return Err(cannot());
        }
        let mut texts = Texts::new();
        for field in self.fields() {
            let at = field
                .path
                .iter()
                .try_fold(value, |value, key| value.get(key));
            if let Some(at) = at {
                texts.insert(pointer(&field.path), text_of(field, at).ok_or_else(cannot)?);
            }
        }
        match self.read(&texts) {
            Ok(read) if read == *value => Ok(texts),
            _ => Err(cannot()),
        }
    }

    /// The texts of the fields whose schema gives a default.
    pub(crate) fn defaults(&self) -> Texts {
        self.fields()
            .filter_map(|field| {
                let text = text_of(field, field.default.as_ref()?)?;
                Some((pointer(&field.path), text))
            })
            .collect()
    }
}

/// A field's text for `value`, if the field can show it.
fn text_of(field: &Field, value: &Value) -> Option<String> {
    let plain = |text: &str| !text.chars().any(is_hidden);
    // A text area shows line breaks and tabs as they are.
    let plain_lines = |text: &str| !text.chars().any(|c| is_hidden(c) && c != '\n' && c != '\t');
    match (&field.kind, value) {
        (_, Value::Null) => Some(String::new()),
        (Kind::Text { .. }, Value::String(text)) if plain_lines(text) => Some(text.clone()),
        (Kind::Number, Value::Number(number)) => Some(number.to_string()),
        // A checkbox sends nothing when unchecked.
        (Kind::Bool, Value::Bool(false)) if field.required && !field.nullable => {
            Some(String::new())
        }
        (Kind::Bool, Value::Bool(flag)) => Some(flag.to_string()),
        (Kind::Choice(choices), value) => choices
            .iter()
            .position(|choice| choice.value == *value)
            .map(|index| index.to_string()),
        (Kind::List(item), Value::Array(items)) => {
            let lines: Option<Vec<String>> = items
                .iter()
                .map(|value| match (item, value) {
                    (Item::Text, Value::String(text))
                        if plain(text)
                            && !text.trim().is_empty()
                            && !text.contains(['\n', '\r']) =>
                    {
                        Some(text.clone())
                    }
                    (Item::Number, Value::Number(number)) => Some(number.to_string()),
                    (Item::Bool, Value::Bool(flag)) => Some(flag.to_string()),
                    _ => None,
                })
                .collect();
            Some(lines?.join("\n"))
        }
        _ => None,
    }
}
