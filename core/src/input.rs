//! Typed input: the input schema usability check, validation of a
//! submission, and the overlay of a human's values onto a model's arguments.

use schemars::Schema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Why an input schema cannot be used, if it cannot. This is the one check:
/// capture refuses such a schema and decoding a stored run reads it as
/// corrupt, so "accept anything" is never persisted.
pub fn input_schema_problem(schema: &Schema) -> Option<&'static str> {
    let Some(object) = schema.as_object() else {
        return Some("the schema is a boolean, not an object schema");
    };
    let has_type = object.get("type").is_some_and(|t| !t.is_null());
    let has_properties = object
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if !has_type && !has_properties {
        return Some("the schema has no `type` and no `properties`, so it would accept anything");
    }
    if jsonschema::validator_for(schema.as_value()).is_err() {
        return Some("the schema is not a valid JSON Schema");
    }
    None
}

/// The fields of an input schema that a tool's arguments would throw away:
/// each field the input declares that its parameter schema neither
/// declares (`properties`) nor takes as an extra field (a schema without
/// `properties` whose `additionalProperties` is not `false`, such as a
/// map's). The user's input is laid over the model's arguments field by
/// field and the tool reads its arguments through that
/// schema's type, so such a field would be dropped without a word. The
/// registry refuses a tool that has one.
pub fn input_fields_not_taken(parameters: &Schema, input: &Schema) -> Vec<String> {
    let properties = |schema: &Schema| {
        schema
            .as_object()
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
            .cloned()
    };
    let Some(wanted) = properties(input) else {
        return Vec::new();
    };
    let declared = properties(parameters);
    let takes_extra = declared.is_none()
        && parameters
            .as_object()
            .is_none_or(|s| s.get("additionalProperties") != Some(&Value::Bool(false)));
    if takes_extra {
        return Vec::new();
    }
    wanted
        .keys()
        .filter(|key| !declared.as_ref().is_some_and(|d| d.contains_key(*key)))
        .cloned()
        .collect()
}

/// One reason a submission does not fit the input schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputError {
    /// Where in the submission, as a JSON Pointer (`""` is the whole value).
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Checks `data` against `schema` (a JSON Schema), reporting every error:
/// the one check of a submission and of edited arguments, which the inbox's
/// forms use too, so what a form refuses and what a decision refuses agree.
///
/// Each error names where it is as a JSON Pointer into `data`; a missing
/// required field is named at the place it is missing from (`/branch` for
/// `{}` that lacks `branch`), so a form can show the error beside that
/// field. A schema that is not a usable JSON Schema is one error at `""`.
pub fn validate(schema: &Value, data: &Value) -> Result<(), Vec<InputError>> {
    let validator = jsonschema::validator_for(schema).map_err(|error| {
        vec![InputError {
            path: String::new(),
            message: format!("the input schema cannot be used: {error}"),
        }]
    })?;
    let errors: Vec<InputError> = validator
        .iter_errors(data)
        .map(|error| {
            let mut path = error.instance_path().to_string();
            if let jsonschema::error::ValidationErrorKind::Required { property } = error.kind()
                && let Some(name) = property.as_str()
            {
                path.push('/');
                path.push_str(&name.replace('~', "~0").replace('/', "~1"));
            }
            InputError {
                path,
                message: error.to_string(),
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The model's arguments with the human's values laid over them, bounded to
/// the keys the schema declares: the model's values for those keys are
/// dropped, and keys the schema does not declare are not taken from the human.
pub(crate) fn overlay(schema: &Schema, model: &Value, human: &Value) -> Value {
    let mut arguments = match model {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let declared = schema
        .as_object()
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    if let Some(declared) = declared {
        for key in declared.keys() {
            arguments.remove(key);
            if let Some(value) = human.get(key) {
                arguments.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(arguments)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(value: Value) -> Schema {
        Schema::try_from(value).unwrap_or_default()
    }

    #[test]
    fn degenerate_schemas_are_refused() {
        assert!(input_schema_problem(&schema(json!({}))).is_some());
        assert!(input_schema_problem(&schema(json!({"description": "x"}))).is_some());
        assert!(input_schema_problem(&schema(json!({"properties": {}}))).is_some());
        assert!(input_schema_problem(&Schema::from(true)).is_some());
        assert!(input_schema_problem(&schema(json!({"type": 7}))).is_some());
        assert!(input_schema_problem(&schema(json!({"type": "object"}))).is_none());
        assert!(
            input_schema_problem(&schema(json!({"properties": {"a": {"type": "string"}}})))
                .is_none()
        );
    }

    #[test]
    fn validation_names_the_field() {
        let s = schema(json!({
            "type": "object",
            "properties": {"branch": {"type": "string", "minLength": 1}, "n": {"type": "integer"}},
            "required": ["branch"]
        }));
        let s = s.as_value();
        assert_eq!(validate(s, &json!({"branch": "main"})), Ok(()));
        let errors = validate(s, &json!({"branch": "", "n": "x"}))
            .err()
            .unwrap_or_default();
        let paths: Vec<_> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths.len(), 2, "{errors:?}");
        assert!(paths.contains(&"/branch") && paths.contains(&"/n"));
        let missing = validate(s, &json!({})).err().unwrap_or_default();
        assert_eq!(missing.len(), 1);
        assert!(missing[0].message.contains("branch"), "{missing:?}");
        // A missing field is named where it is missing from.
        assert_eq!(missing[0].path, "/branch");
        let odd = json!({"type": "object", "required": ["a/b~c"]});
        let missing = validate(&odd, &json!({})).err().unwrap_or_default();
        assert_eq!(missing[0].path, "/a~1b~0c");
    }

    #[test]
    fn input_fields_the_arguments_lack_are_named() {
        let input = schema(json!({"type": "object", "properties": {"text": {}, "subject": {}}}));
        let args = schema(json!({"type": "object", "properties": {"to": {}, "text": {}}}));
        assert_eq!(input_fields_not_taken(&args, &input), ["subject"]);
        let all = schema(json!({"type": "object", "properties": {"text": {}, "subject": {}}}));
        assert!(input_fields_not_taken(&all, &input).is_empty());
        let map = schema(json!({"type": "object", "additionalProperties": true}));
        assert!(input_fields_not_taken(&map, &input).is_empty());
        let closed = schema(json!({"type": "object", "additionalProperties": false}));
        assert_eq!(input_fields_not_taken(&closed, &input).len(), 2);
    }

    #[test]
    fn overlay_is_bounded_to_declared_keys() {
        let s = schema(json!({"type": "object", "properties": {"branch": {}, "note": {}}}));
        let model = json!({"branch": "model-pick", "note": "model", "path": "/repo"});
        let human = json!({"branch": "human-pick", "path": "/etc", "extra": true});
        assert_eq!(
            overlay(&s, &model, &human),
            json!({"branch": "human-pick", "path": "/repo"})
        );
    }
}
