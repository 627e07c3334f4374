//! The form's fields read back into JSON, and the schema's errors placed
//! beside the fields they fall in.

use serde_json::{Map, Number, Value};
use toolgate::suspend::InputError;

use super::{Entry, Field, Form, Item, Kind, Placed, REPEATED_CHARS, Texts, pointer, texts_in};

impl Form {
    /// The value the fields' `texts` give, or the errors beside each field
    /// that does not read.
    pub(crate) fn read(&self, texts: &Texts) -> Result<Value, Placed> {
        let mut out = Map::new();
        let mut errors = Placed::new();
        let text = |field: &Field| texts.get(&pointer(&field.path)).map_or("", String::as_str);
        let read_into =
            |field: &Field, into: &mut Map<String, Value>, errors: &mut Placed| match read_field(
                field,
                text(field),
            ) {
                Ok(Some(value)) => {
                    if let Some(key) = field.path.last() {
                        into.insert(key.clone(), value);
                    }
                }
                Ok(None) => {}
                Err(error) => errors.entry(pointer(&field.path)).or_default().push(error),
            };
        for entry in &self.entries {
            match entry {
                Entry::Leaf(field) => read_into(field, &mut out, &mut errors),
                Entry::Group(group) => {
                    let empty = group.fields.iter().all(|field| text(field).is_empty());
                    if empty && !group.required {
                        continue;
                    }
                    if empty && group.nullable {
                        out.insert(group.key.clone(), Value::Null);
                        continue;
                    }
                    let mut inner = Map::new();
                    for field in &group.fields {
                        read_into(field, &mut inner, &mut errors);
                    }
                    out.insert(group.key.clone(), Value::Object(inner));
                }
            }
        }
        if errors.is_empty() {
            Ok(Value::Object(out))
        } else {
            Err(errors)
        }
    }

    /// `errors` from [`toolgate::suspend::validate`], each beside the field
    /// its instance path falls in — the deepest — or beside none (`""`).
    pub(crate) fn place(&self, errors: &[InputError]) -> Placed {
        let pointers: Vec<String> = self.fields().map(|field| pointer(&field.path)).collect();
        let mut placed = Placed::new();
        for error in errors {
            let at = pointers
                .iter()
                .filter(|field| {
                    error.path == **field
                        || error
                            .path
                            .strip_prefix(field.as_str())
                            .is_some_and(|rest| rest.starts_with('/'))
                })
                .max_by_key(|field| field.len())
                .cloned()
                .unwrap_or_default();
            let message = if at.is_empty() && !error.path.is_empty() {
                error.to_string()
            } else {
                error.message.clone()
            };
            placed.entry(at).or_default().push(message);
        }
        placed
    }
}

/// `text` cut for an error to repeat (escaped where the error is shown).
fn repeated(text: &str) -> String {
    let mut cut: String = text.chars().take(REPEATED_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// A number as typed: a whole number stays one, so `3` reads as the `3`
/// a model wrote; anything else that does not parse is an error.
fn parse_number(text: &str) -> Result<Value, String> {
    let text = text.trim();
    if let Ok(whole) = text.parse::<i64>() {
        return Ok(Value::from(whole));
    }
    if let Ok(whole) = text.parse::<u64>() {
        return Ok(Value::from(whole));
    }
    match text.parse::<f64>().ok().and_then(Number::from_f64) {
        Some(number) => Ok(Value::Number(number)),
        None => Err(format!("`{}` is not a number", repeated(text))),
    }
}

/// A boolean as a choice gives it.
fn parse_bool(text: &str) -> Result<bool, String> {
    match text.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(format!("`{}` is neither true nor false", repeated(other))),
    }
}

/// The value one field's text gives: `None` for absent.
fn read_field(field: &Field, text: &str) -> Result<Option<Value>, String> {
    let nothing = || {
        if field.required && field.nullable {
            Some(Value::Null)
        } else {
            None
        }
    };
    match &field.kind {
        Kind::Bool if field.required && !field.nullable => match text {
            "" => Ok(Some(Value::Bool(false))),
            "true" => Ok(Some(Value::Bool(true))),
            other => Err(format!("`{}` is not a checkbox's value", repeated(other))),
        },
        Kind::Bool => {
            if text.is_empty() {
                Ok(nothing())
            } else {
                parse_bool(text).map(|flag| Some(Value::Bool(flag)))
            }
        }
        Kind::Text { .. } => {
            // A browser sends a text area's line breaks as CR LF.
            let text = text.replace("\r\n", "\n");
            if !text.is_empty() {
                Ok(Some(Value::String(text)))
            } else if field.nullable || !field.required {
                Ok(nothing())
            } else {
                Ok(Some(Value::String(String::new())))
            }
        }
        Kind::Number => {
            if text.trim().is_empty() {
                Ok(nothing())
            } else {
                parse_number(text).map(Some)
            }
        }
        Kind::Choice(choices) => {
            if text.is_empty() {
                return Ok(nothing());
            }
            text.parse::<usize>()
                .ok()
                .and_then(|index| choices.get(index))
                .map(|choice| Some(choice.value.clone()))
                .ok_or_else(|| "not one of the choices".to_owned())
        }
        Kind::List(item) => {
            let mut items = Vec::new();
            let mut problems = Vec::new();
            let lines = text
                .split('\n')
                .map(|line| line.strip_suffix('\r').unwrap_or(line));
            for (number, line) in lines.enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let read = match item {
                    Item::Text => Ok(Value::String(line.to_owned())),
                    Item::Number => parse_number(line),
                    Item::Bool => parse_bool(line).map(Value::Bool),
                };
                match read {
                    Ok(value) => items.push(value),
                    Err(problem) => problems.push(format!("line {}: {problem}", number + 1)),
                }
            }
            if !problems.is_empty() {
                return Err(problems.join("; "));
            }
            if items.is_empty() && !field.required {
                Ok(nothing())
            } else {
                Ok(Some(Value::Array(items)))
            }
        }
    }
}

/// What a posted form's fields of `scope` give in `form`, built from
/// `schema`: the value, checked against the whole schema by the one check
/// a decision makes — or the errors beside each field.
pub(crate) fn read_checked<'a>(
    form: &Form,
    schema: &Value,
    scope: &str,
    fields: impl Iterator<Item = (&'a str, &'a str)>,
) -> Result<Value, Placed> {
    let value = form.read(&texts_in(scope, fields))?;
    toolgate::suspend::validate(schema, &value).map_err(|errors| form.place(&errors))?;
    Ok(value)
}
