//! The one check of a call's arguments against its tool's parameter schema:
//! a builtin's schemars schema, or a remote tool's imported `inputSchema`.
//!
//! A turn whose arguments do not fit is refused before a person sees it
//! ([`crate::run`]'s unusable check), and a run of one call answers it with
//! an error result: nothing of it runs. Each tool's schema is compiled once,
//! the first time a call to it is checked, and kept in its catalogue slot.
//!
//! **A schema that cannot be compiled** (not a JSON Schema, or naming a
//! `$ref` this build cannot resolve — it fetches nothing) makes every call
//! to its tool unusable, with the reason: its arguments cannot be checked,
//! and a call that cannot be checked is not handed on — neither to run
//! unattended nor to a person who would take the check as done.
//!
//! **Typed input.** A tool that waits for a user's input takes the fields
//! its input schema declares from the user, laid over the model's
//! arguments; the model's values for those fields are dropped. So the
//! model's arguments are checked with those fields left to the user: a
//! missing one is not an error, and what the model wrote there is not read.

use schemars::Schema;
use serde_json::Value;

/// The most problems one refusal lists.
const LISTED: usize = 8;
/// The most characters of one problem the model is shown.
const PROBLEM_CHARS: usize = 300;

/// A tool's compiled parameter schema, or why it cannot be compiled.
pub(super) type Compiled = Result<jsonschema::Validator, String>;

/// Compiles `schema`.
pub(super) fn compile(schema: &Schema) -> Compiled {
    jsonschema::validator_for(schema.as_value()).map_err(|error| error.to_string())
}

/// Why `arguments` do not fit `compiled`, if they do not: each field that is
/// wrong, where and how, in words the model reads. `input` is the tool's
/// input schema, when it waits for a user's input.
pub(super) fn problem(
    compiled: &Compiled,
    input: Option<&Schema>,
    arguments: &Value,
) -> Option<String> {
    let validator = match compiled {
        Ok(validator) => validator,
        Err(reason) => {
            return Some(format!(
                "the tool's parameter schema cannot be compiled ({}), so no call to it can be checked, and none is run",
                cut(reason)
            ));
        }
    };
    let from_user: Vec<&str> = input
        .and_then(|schema| schema.as_object())
        .and_then(|schema| schema.get("properties"))
        .and_then(Value::as_object)
        .map(|properties| properties.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut problems: Vec<String> = Vec::new();
    let mut count = 0_usize;
    for error in validator.iter_errors(arguments) {
        let path = error.instance_path().to_string();
        if left_to_the_user(&from_user, &path, error.kind()) {
            continue;
        }
        count += 1;
        if problems.len() < LISTED {
            let at = if path.is_empty() {
                "the arguments".to_owned()
            } else {
                format!("`{}`", crate::visible::visible(&path))
            };
            problems.push(format!("{at}: {}", cut(&error.to_string())));
        }
    }
    if count == 0 {
        return None;
    }
    if count > problems.len() {
        problems.push(format!("and {} more", count - problems.len()));
    }
    Some(format!(
        "the arguments do not fit the tool's parameters — {}",
        problems.join("; ")
    ))
}

/// Whether an error is about a field the user supplies: inside it, or its
/// absence.
fn left_to_the_user(
    from_user: &[&str],
    path: &str,
    kind: &jsonschema::error::ValidationErrorKind,
) -> bool {
    if from_user.is_empty() {
        return false;
    }
    let top = path.strip_prefix('/').map(|rest| {
        let first = rest.split('/').next().unwrap_or_default();
        first.replace("~1", "/").replace("~0", "~")
    });
    if let Some(top) = top
        && from_user.contains(&top.as_str())
    {
        return true;
    }
    matches!(
        kind,
        jsonschema::error::ValidationErrorKind::Required { property }
            if property.as_str().is_some_and(|name| from_user.contains(&name))
    ) && path.is_empty()
}

/// `text` escaped for reading and cut to [`PROBLEM_CHARS`] characters.
fn cut(text: &str) -> String {
    crate::visible::excerpt(text, PROBLEM_CHARS)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(value: Value) -> Schema {
        Schema::try_from(value).unwrap_or_default()
    }

    #[test]
    fn each_wrong_field_is_named() {
        let compiled = compile(&schema(json!({
            "type": "object",
            "properties": {"text": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["text"]
        })));
        assert_eq!(
            problem(&compiled, None, &json!({"text": "hi", "n": 2})),
            None
        );
        let wrong = problem(&compiled, None, &json!({"text": 5})).unwrap_or_default();
        assert!(
            wrong.contains("`/text`") && wrong.contains("string"),
            "{wrong}"
        );
        let missing = problem(&compiled, None, &json!({})).unwrap_or_default();
        assert!(
            missing.contains("the arguments: ") && missing.contains("text"),
            "{missing}"
        );
    }

    #[test]
    fn fields_the_user_supplies_are_left_to_the_user() {
        let compiled = compile(&schema(json!({
            "type": "object",
            "properties": {"to": {"type": "string"}, "text": {"type": "string"}},
            "required": ["to", "text"]
        })));
        let input = schema(json!({"type": "object", "properties": {"text": {"type": "string"}}}));
        assert_eq!(
            problem(&compiled, Some(&input), &json!({"to": "carol"})),
            None
        );
        assert_eq!(
            problem(&compiled, Some(&input), &json!({"to": "carol", "text": 5})),
            None,
            "the model's value there is dropped, not read"
        );
        assert!(problem(&compiled, Some(&input), &json!({})).is_some_and(|p| p.contains("to")));
    }

    #[test]
    fn a_schema_that_cannot_be_compiled_refuses_every_call() {
        let compiled = compile(&schema(
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.invalid/s.json"}}}),
        ));
        let refused = problem(&compiled, None, &json!({})).unwrap_or_default();
        assert!(refused.contains("cannot be compiled"), "{refused}");
        let compiled = compile(&schema(json!({"type": 12})));
        assert!(problem(&compiled, None, &json!({})).is_some());
    }

    #[test]
    fn many_problems_are_counted_not_all_listed() {
        let properties: serde_json::Map<String, Value> = (0..20)
            .map(|i| (format!("f{i}"), json!({"type": "string"})))
            .collect();
        let compiled = compile(&schema(json!({"type": "object", "properties": properties})));
        let arguments: serde_json::Map<String, Value> =
            (0..20).map(|i| (format!("f{i}"), json!(i))).collect();
        let shown = problem(&compiled, None, &Value::Object(arguments)).unwrap_or_default();
        assert!(shown.ends_with("and 12 more"), "{shown}");
    }
}
