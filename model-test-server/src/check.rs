//! What both protocols' checks share: problems named by the path of the field
//! they are about, and the small type checks every field goes through.

use serde_json::{Map, Value};

/// One thing wrong with a request, at the path of the field it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// Where: `messages[3].tool_calls[0].function.arguments`, `header anthropic-version`,
    /// or `body` for the request as a whole.
    pub(crate) path: String,
    /// What is wrong there.
    pub(crate) message: String,
}

impl Problem {
    /// The problem as one line: `path: message`.
    pub(crate) fn render(&self) -> String {
        format!("{}: {}", self.path, self.message)
    }

    /// Whether the path names a field of the body (and not a header or the body whole).
    pub(crate) fn is_field(&self) -> bool {
        self.path != "body" && !self.path.starts_with("header ")
    }
}

/// The problems found in one request, in the order they were found.
#[derive(Debug, Default)]
pub(crate) struct Problems {
    list: Vec<Problem>,
}

impl Problems {
    /// Records a problem at `path`.
    pub(crate) fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.list.push(Problem {
            path: path.into(),
            message: message.into(),
        });
    }

    /// The problems found.
    pub(crate) fn into_vec(self) -> Vec<Problem> {
        self.list
    }
}

/// The path of `key` inside the object at `path` (`""` is the body).
pub(crate) fn key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The path of element `index` of the array at `path`.
pub(crate) fn index(path: &str, index: usize) -> String {
    format!("{path}[{index}]")
}

/// The JSON type of a value, as the problems name it.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `must be X (got Y)`.
pub(crate) fn wrong_type(expected: &str, value: &Value) -> String {
    format!("must be {expected} (got {})", kind(value))
}

/// Records every key of `object` that is not in `allowed` as unknown.
pub(crate) fn unknown_keys(
    object: &Map<String, Value>,
    allowed: &[&str],
    path: &str,
    problems: &mut Problems,
) {
    for name in object.keys() {
        if !allowed.contains(&name.as_str()) {
            problems.push(key(path, name), "unknown field");
        }
    }
}

/// The value of a required field, or a problem saying it is missing.
pub(crate) fn required<'a>(
    object: &'a Map<String, Value>,
    name: &str,
    path: &str,
    problems: &mut Problems,
) -> Option<&'a Value> {
    let value = object.get(name);
    if value.is_none() {
        problems.push(key(path, name), "required");
    }
    value
}

/// The value as an object, or a problem.
pub(crate) fn object<'a>(
    value: &'a Value,
    path: &str,
    problems: &mut Problems,
) -> Option<&'a Map<String, Value>> {
    let object = value.as_object();
    if object.is_none() {
        problems.push(path, wrong_type("an object", value));
    }
    object
}

/// The value as an array, or a problem.
pub(crate) fn array<'a>(
    value: &'a Value,
    path: &str,
    problems: &mut Problems,
) -> Option<&'a Vec<Value>> {
    let array = value.as_array();
    if array.is_none() {
        problems.push(path, wrong_type("an array", value));
    }
    array
}

/// The value as a string, or a problem.
pub(crate) fn string<'a>(value: &'a Value, path: &str, problems: &mut Problems) -> Option<&'a str> {
    let text = value.as_str();
    if text.is_none() {
        problems.push(path, wrong_type("a string", value));
    }
    text
}

/// The value as a non-empty string, or a problem.
pub(crate) fn non_empty_string<'a>(
    value: &'a Value,
    path: &str,
    problems: &mut Problems,
) -> Option<&'a str> {
    let text = string(value, path, problems)?;
    if text.is_empty() {
        problems.push(path, "must not be empty");
        return None;
    }
    Some(text)
}

/// A problem unless the value is a boolean.
pub(crate) fn boolean(value: &Value, path: &str, problems: &mut Problems) -> Option<bool> {
    let flag = value.as_bool();
    if flag.is_none() {
        problems.push(path, wrong_type("a boolean", value));
    }
    flag
}

/// A problem unless the value is a number within `min..=max`.
pub(crate) fn number_in(value: &Value, min: f64, max: f64, path: &str, problems: &mut Problems) {
    match value.as_f64() {
        Some(n) if (min..=max).contains(&n) => {}
        Some(n) => problems.push(path, format!("must be between {min} and {max} (got {n})")),
        None => problems.push(path, wrong_type("a number", value)),
    }
}

/// The value as an integer of at least `min`, or a problem.
pub(crate) fn integer_at_least(
    value: &Value,
    min: i64,
    path: &str,
    problems: &mut Problems,
) -> Option<i64> {
    let Some(n) = value.as_i64() else {
        if value.as_u64().is_some() {
            problems.push(path, "is too large");
        } else {
            problems.push(path, wrong_type("an integer", value));
        }
        return None;
    };
    if n < min {
        problems.push(path, format!("must be at least {min} (got {n})"));
        return None;
    }
    Some(n)
}

/// A problem unless the value is one of `choices` (strings).
pub(crate) fn one_of(value: &Value, choices: &[&str], path: &str, problems: &mut Problems) {
    let Some(text) = string(value, path, problems) else {
        return;
    };
    if !choices.contains(&text) {
        problems.push(
            path,
            format!("must be one of {} (got `{text}`)", choices.join(", ")),
        );
    }
}

/// Whether `name` is a valid function or tool name: `^[a-zA-Z0-9_-]{1,64}$`.
pub(crate) fn is_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && is_id(name)
}

/// Whether `id` is made only of `[a-zA-Z0-9_-]` and not empty.
pub(crate) fn is_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A tool name checked against `^[a-zA-Z0-9_-]{1,64}$`; the name if it is a string.
pub(crate) fn tool_name<'a>(
    value: &'a Value,
    path: &str,
    problems: &mut Problems,
) -> Option<&'a str> {
    let name = string(value, path, problems)?;
    if !is_tool_name(name) {
        problems.push(
            path,
            format!("`{name}` does not match ^[a-zA-Z0-9_-]{{1,64}}$"),
        );
    }
    Some(name)
}

/// Records a problem when `name` was already seen; remembers it otherwise.
pub(crate) fn unique_name(
    seen: &mut Vec<(String, String)>,
    name: &str,
    path: &str,
    what: &str,
    problems: &mut Problems,
) {
    if let Some((_, first)) = seen.iter().find(|(seen_name, _)| seen_name == name) {
        problems.push(path, format!("duplicate {what} `{name}` (also at {first})"));
    } else {
        seen.push((name.to_owned(), path.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_follow_the_documented_pattern() {
        assert!(is_tool_name("get_weather-2"));
        assert!(is_tool_name(&"a".repeat(64)));
        assert!(!is_tool_name(&"a".repeat(65)));
        assert!(!is_tool_name(""));
        assert!(!is_tool_name("get.weather"));
        assert!(!is_tool_name("météo"));
    }

    #[test]
    fn paths_join_keys_and_indexes() {
        assert_eq!(key("", "model"), "model");
        assert_eq!(key(&index("messages", 3), "role"), "messages[3].role");
    }
}
