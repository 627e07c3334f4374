//! Asking for a run's input on a terminal, field by field from its JSON
//! Schema, the way an MCP client renders an elicitation form: each property
//! with its type, whether it is required, its description, its choices and
//! its default; each answer checked as it is typed. An answer starting with
//! `{` on the first field takes the whole input as JSON instead.

use std::fmt::Write as _;
use std::io::{BufRead, Write};

use serde_json::{Map, Value};

use crate::Failure;
use crate::output::{ask, say};

/// One line from the terminal; the terminal closing is an error, never an
/// endless string of empty answers.
pub(super) fn ask_line(prompt: &str) -> Result<String, Failure> {
    ask!("{} ", prompt);
    std::io::stdout()
        .flush()
        .map_err(|e| Failure::Error(e.to_string()))?;
    let mut line = String::new();
    let read = std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| Failure::Error(e.to_string()))?;
    if read == 0 {
        return Err(Failure::Refused(
            "the terminal closed before an answer; nothing was decided".into(),
        ));
    }
    Ok(line.trim().to_owned())
}

/// A JSON value, asked until it parses.
pub(super) fn ask_json(prompt: &str) -> Result<Value, Failure> {
    loop {
        match serde_json::from_str(&ask_line(&format!("{prompt}:"))?) {
            Ok(value) => return Ok(value),
            Err(error) => say!("not JSON ({}); try again", error.to_string()),
        }
    }
}

/// The input, field by field from `schema`.
pub(super) fn ask_form(schema: &Value) -> Result<Value, Failure> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return ask_json("input (JSON)");
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    say!(
        "input, field by field (Enter skips an optional field; `{}` at the first field gives the whole input as JSON):",
        "{"
    );
    let mut data = Map::new();
    for (index, (name, field)) in properties.iter().enumerate() {
        let needed = required.contains(&name.as_str());
        say!("  {}", describe(name, field, needed));
        loop {
            let answer = ask_line(&format!("  {name}:"))?;
            if index == 0 && answer.starts_with('{') {
                match serde_json::from_str(&answer) {
                    Ok(whole) => return Ok(whole),
                    Err(error) => {
                        say!("    not JSON ({}); try again", error.to_string());
                        continue;
                    }
                }
            }
            if answer.is_empty() {
                if let Some(default) = field.get("default") {
                    data.insert(name.clone(), default.clone());
                    break;
                }
                if !needed {
                    break;
                }
                say!("    {} is required; try again", name);
                continue;
            }
            match parse_field(field, &answer) {
                Ok(value) => {
                    data.insert(name.clone(), value);
                    break;
                }
                Err(why) => say!("    {}; try again", why),
            }
        }
    }
    Ok(Value::Object(data))
}

/// The field's type, ignoring `null` in a list of types.
fn field_type(field: &Value) -> &str {
    match field.get("type") {
        Some(Value::String(kind)) => kind,
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null")
            .unwrap_or("any"),
        _ => "any",
    }
}

/// One line describing a field: `notes (string, required): The release
/// notes. One of: a, b. Default: x.`
fn describe(name: &str, field: &Value, needed: bool) -> String {
    let mut line = format!(
        "{name} ({}{})",
        field_type(field),
        if needed { ", required" } else { ", optional" }
    );
    if let Some(description) = field.get("description").and_then(Value::as_str) {
        line.push_str(": ");
        line.push_str(description);
    }
    if let Some(choices) = field.get("enum").and_then(Value::as_array) {
        let choices: Vec<String> = choices.iter().map(ToString::to_string).collect();
        let _ = write!(line, " One of: {}.", choices.join(", "));
    }
    if let Some(default) = field.get("default") {
        let _ = write!(line, " Default: {default}.");
    }
    line
}

/// An answer read as the field's type, checked against its choices and
/// bounds.
fn parse_field(field: &Value, answer: &str) -> Result<Value, String> {
    if let Some(choices) = field.get("enum").and_then(Value::as_array) {
        return choices
            .iter()
            .find(|c| match c.as_str() {
                Some(text) => text == answer,
                None => serde_json::from_str::<Value>(answer).is_ok_and(|a| a == **c),
            })
            .cloned()
            .ok_or_else(|| "not one of the choices".to_owned());
    }
    let value = match field_type(field) {
        "integer" => answer
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "not a whole number".to_owned())?,
        "number" => answer
            .parse::<f64>()
            .ok()
            .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
            .ok_or_else(|| "not a number".to_owned())?,
        "boolean" => match answer.to_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => return Err("answer yes or no".into()),
        },
        "string" => Value::String(answer.to_owned()),
        _ => serde_json::from_str(answer).unwrap_or_else(|_| Value::String(answer.to_owned())),
    };
    if let (Some(text), Some(min)) = (
        value.as_str(),
        field.get("minLength").and_then(Value::as_u64),
    ) && (text.chars().count() as u64) < min
    {
        return Err(format!("at least {min} characters"));
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = field
            .get("minimum")
            .and_then(Value::as_f64)
            .filter(|min| n < *min)
        {
            return Err(format!("at least {min}"));
        }
        if let Some(max) = field
            .get("maximum")
            .and_then(Value::as_f64)
            .filter(|max| n > *max)
        {
            return Err(format!("at most {max}"));
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_read_as_their_field_says() {
        let notes = json!({"type": "string", "minLength": 1});
        assert_eq!(parse_field(&notes, "Ship it."), Ok(json!("Ship it.")));
        let flag = json!({"type": ["boolean", "null"]});
        assert_eq!(parse_field(&flag, "yes"), Ok(json!(true)));
        assert!(parse_field(&flag, "maybe").is_err());
        let level = json!({"type": "integer", "minimum": 1, "maximum": 3});
        assert_eq!(parse_field(&level, "2"), Ok(json!(2)));
        assert_eq!(parse_field(&level, "9"), Err("at most 3".into()));
        assert_eq!(parse_field(&level, "two"), Err("not a whole number".into()));
        let colour = json!({"type": "string", "enum": ["red", "green"]});
        assert_eq!(parse_field(&colour, "green"), Ok(json!("green")));
        assert!(parse_field(&colour, "blue").is_err());
        assert_eq!(
            describe(
                "notes",
                &json!({"type": "string", "description": "The notes."}),
                true
            ),
            "notes (string, required): The notes."
        );
    }
}
