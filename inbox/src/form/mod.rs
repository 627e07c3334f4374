//! Forms built from a JSON schema: the fields of a call's arguments, or of
//! the input a run waits for, each with a widget of its kind, and the
//! form's fields read back into JSON.
//!
//! **What a form expresses.** An object schema's `properties`, each one of:
//! a string (its `format`, length bounds and `pattern` said beside it), a
//! number or an integer (its bounds said beside it), a boolean, a choice
//! (`enum`, or `oneOf`/`anyOf` whose branches are each a `const`, labelled
//! by their `title`), an array of strings, numbers, integers or booleans
//! (one item a line), and a nested object of such fields, one level deep.
//! A field may be required or optional, nullable (`type: [X, "null"]`, or
//! `anyOf` of X and `null`), and carry a `title`, a `description` and a
//! `default`. A `$ref` to the schema's own `$defs` (or `definitions`) is
//! followed once, as schemars writes a nested type. Anything else — a
//! choice between shapes (`anyOf`/`oneOf` of objects), a `$ref` elsewhere
//! or to another `$ref`, an array of objects or arrays, an object nested
//! deeper, a map (`additionalProperties` as a schema, `patternProperties`),
//! a field that takes any value — is [`JsonOnly`]: the page offers the JSON
//! box and says why. So does a current value the fields cannot show as it
//! is (hidden characters, an undeclared key, a line break in a list item…):
//! a form is offered only when reading its pre-filled fields back gives
//! exactly the value it was filled from.
//!
//! **What an empty field means.** An optional field left empty is absent,
//! never `""`; a nullable one that is required is `null`; a required string
//! left empty is `""`; a required number left empty is absent, which the
//! schema then refuses beside it. A nested object whose fields are all
//! empty is absent when optional. A required boolean is a checkbox
//! (unchecked is `false`); an optional one a choice of not given, true or
//! false. A number that does not parse is an error beside its field,
//! never a `0`.
//!
//! **Field names.** A field's name in the posted form is its scope followed
//! by its JSON Pointer (`/key` or `/key/inner`, `~` and `/` escaped as
//! `~0` and `~1`): the scope is `edit:` and the call id, escaped the same
//! way, for a call's arguments (`edit:c1/branch`), and `in:` for input
//! (`in:/branch`). No other field of the inbox's forms (`csrf`, `digest`,
//! `verdict`, `reason`, `input`, `confirm`, `allow_tool`, `call:ID`,
//! `reason:ID`, `args:ID`) starts with either, and no two fields of one
//! form share a name.
//!
//! **Checked on the server.** What the fields read back as is checked
//! against the whole schema by [`toolgate::suspend::validate`] — the check
//! a decision itself makes — and each error is placed beside the field its
//! instance path falls in. Everything shown that a schema or a model
//! wrote goes through [`crate::pages::shown`]: escaped, hidden characters
//! as escapes. Built here; filled from a value in [`fill`]; read back in
//! [`read`]; put on a page in [`page`].

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use toolgate::visible::{is_hidden, visible};

mod fill;
mod page;
mod read;
#[cfg(test)]
mod tests;

pub(crate) use page::{Retyped, call_fields, input_fields, reviewed_schema};
pub(crate) use read::read_checked;

/// The most fields a form shows; a schema with more is edited as JSON.
const MAX_FIELDS: usize = 100;

/// The most characters of a typed value an error repeats.
const REPEATED_CHARS: usize = 60;

/// Why a schema, or a value, is edited as JSON rather than field by field:
/// said on the page beside the JSON box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonOnly(pub(crate) String);

fn json_only<T>(why: impl Into<String>) -> Result<T, JsonOnly> {
    Err(JsonOnly(why.into()))
}

/// The texts of a form's fields, by JSON Pointer.
pub(crate) type Texts = BTreeMap<String, String>;

/// Errors by the JSON Pointer of the field they are beside; `""` holds
/// those beside no field.
pub(crate) type Placed = BTreeMap<String, Vec<String>>;

/// A form built from an object schema.
#[derive(Debug)]
pub(crate) struct Form {
    entries: Vec<Entry>,
}

#[derive(Debug)]
enum Entry {
    Leaf(Field),
    Group(Group),
}

/// A nested object: its fields, one level deep.
#[derive(Debug)]
struct Group {
    key: String,
    about: About,
    required: bool,
    nullable: bool,
    fields: Vec<Field>,
}

/// What a schema says of a field for a reader.
#[derive(Debug, Default)]
struct About {
    title: Option<String>,
    description: Option<String>,
}

#[derive(Debug)]
struct Field {
    /// The keys from the top: one, or two inside a nested object.
    path: Vec<String>,
    about: About,
    required: bool,
    nullable: bool,
    default: Option<Value>,
    /// The schema's bounds and format, in words.
    hints: Vec<String>,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Text { input_mode: Option<&'static str> },
    Number,
    Bool,
    Choice(Vec<Choice>),
    List(Item),
}

/// One choice: its value and what the reader is shown.
#[derive(Debug)]
struct Choice {
    value: Value,
    label: String,
}

/// The kind of an array's items.
#[derive(Debug, Clone, Copy)]
enum Item {
    Text,
    Number,
    Bool,
}

/// A key as a JSON Pointer segment.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The JSON Pointer of `path`.
fn pointer(path: &[String]) -> String {
    let mut out = String::new();
    for key in path {
        out.push('/');
        out.push_str(&escape(key));
    }
    out
}

/// The scope of the fields that edit call `call`'s arguments.
pub(crate) fn edit_scope(call: &str) -> String {
    format!("edit:{}", escape(call))
}

/// The scope of the fields that give a run its input.
pub(crate) const INPUT_SCOPE: &str = "in:";

/// The texts of the fields of `scope` among a posted form's `fields`.
pub(crate) fn texts_in<'a>(scope: &str, fields: impl Iterator<Item = (&'a str, &'a str)>) -> Texts {
    fields
        .filter_map(|(name, value)| {
            let rest = name.strip_prefix(scope)?;
            (rest.is_empty() || rest.starts_with('/')).then(|| (rest.to_owned(), value.to_owned()))
        })
        .collect()
}

/// The keywords that only annotate: kept from a schema that names a
/// `$ref`, laid over what it names.
const ANNOTATIONS: [&str; 8] = [
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
];

/// `schema` with a `$ref` to the root's own definitions followed once (and
/// a lone `allOf` branch taken), its annotations laid over the target.
fn resolve(root: &Value, schema: &Value) -> Result<Map<String, Value>, JsonOnly> {
    let Value::Object(object) = schema else {
        return json_only("a field's schema is `true` or `false`, which takes any value or none");
    };
    let (target, via) = if let Some(reference) = object.get("$ref") {
        let Some(reference) = reference.as_str() else {
            return json_only("a `$ref` that is not text");
        };
        let target = ["#/$defs/", "#/definitions/"]
            .iter()
            .find_map(|prefix| {
                let name = reference.strip_prefix(prefix)?;
                let name = name.replace("~1", "/").replace("~0", "~");
                root.get(&prefix[2..prefix.len() - 1])?.get(name)
            })
            .ok_or_else(|| {
                JsonOnly(format!(
                    "the `$ref` `{}` names no definition of this schema's own",
                    visible(reference)
                ))
            })?;
        (target, "$ref")
    } else if let Some(all) = object.get("allOf") {
        match all.as_array().map(Vec::as_slice) {
            Some([one]) => (one, "allOf"),
            _ => return json_only("`allOf` of several schemas"),
        }
    } else {
        return Ok(object.clone());
    };
    if let Some(extra) = object
        .keys()
        .find(|key| *key != via && !ANNOTATIONS.contains(&key.as_str()))
    {
        return json_only(format!("`{via}` beside the keyword `{}`", visible(extra)));
    }
    let Value::Object(target) = target else {
        return json_only(format!("`{via}` names a schema that is `true` or `false`"));
    };
    if target.contains_key("$ref") || target.contains_key("allOf") {
        return json_only("a `$ref` to another `$ref` (a recursive or chained type)");
    }
    let mut merged = target.clone();
    for key in ANNOTATIONS {
        if let Some(value) = object.get(key) {
            merged.insert(key.to_owned(), value.clone());
        }
    }
    Ok(merged)
}

/// Whether a schema's `type` names `null`, and the one other type it
/// names, if one.
fn types(schema: &Map<String, Value>) -> Result<(Option<String>, bool), JsonOnly> {
    match schema.get("type") {
        None => Ok((None, false)),
        Some(Value::String(one)) => Ok(((one != "null").then(|| one.clone()), one == "null")),
        Some(Value::Array(many)) => {
            let names: Vec<&str> = many.iter().filter_map(Value::as_str).collect();
            if names.len() != many.len() {
                return json_only("a `type` that is not a list of names");
            }
            let nullable = names.contains(&"null");
            let others: Vec<&str> = names.into_iter().filter(|name| *name != "null").collect();
            match others.as_slice() {
                [] => Ok((None, nullable)),
                [one] => Ok((Some((*one).to_owned()), nullable)),
                _ => json_only("a field of several types"),
            }
        }
        Some(_) => json_only("a `type` that is not a name"),
    }
}

/// Whether `schema` takes only `null`.
fn only_null(schema: &Map<String, Value>) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("const") == Some(&Value::Null)
}

/// `schema` with an `anyOf`/`oneOf` of one schema and `null` read as that
/// schema, nullable; whether it was.
fn unwrap_nullable(
    root: &Value,
    mut schema: Map<String, Value>,
) -> Result<(Map<String, Value>, bool), JsonOnly> {
    for keyword in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = schema.get(keyword) else {
            continue;
        };
        let resolved: Vec<Map<String, Value>> = branches
            .iter()
            .map(|branch| resolve(root, branch))
            .collect::<Result<_, _>>()?;
        if let [a, b] = resolved.as_slice()
            && (only_null(a) != only_null(b))
        {
            let inner = if only_null(a) { b } else { a };
            let mut merged = inner.clone();
            for key in ANNOTATIONS {
                if let Some(value) = schema.get(key) {
                    merged.insert(key.to_owned(), value.clone());
                }
            }
            schema = merged;
            return Ok((schema, true));
        }
    }
    Ok((schema, false))
}

/// A value as a reader sees it in a choice.
fn value_label(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The choices `schema` offers, if it is a choice; whether `null` is one.
fn choices(
    root: &Value,
    schema: &Map<String, Value>,
) -> Result<Option<(Vec<Choice>, bool)>, JsonOnly> {
    let primitive = |value: &Value| !matches!(value, Value::Array(_) | Value::Object(_));
    if let Some(values) = schema.get("enum") {
        let Some(values) = values.as_array() else {
            return json_only("an `enum` that is not a list");
        };
        if !values.iter().all(primitive) {
            return json_only("a choice among objects or lists");
        }
        let nullable = values.contains(&Value::Null);
        let choices = values
            .iter()
            .filter(|value| !value.is_null())
            .map(|value| Choice {
                value: value.clone(),
                label: value_label(value),
            })
            .collect();
        return Ok(Some((choices, nullable)));
    }
    if let Some(value) = schema.get("const") {
        if !primitive(value) {
            return json_only("a constant object or list");
        }
        return Ok(Some((
            vec![Choice {
                value: value.clone(),
                label: value_label(value),
            }],
            false,
        )));
    }
    for keyword in ["oneOf", "anyOf"] {
        let Some(branches) = schema.get(keyword) else {
            continue;
        };
        let Some(branches) = branches.as_array() else {
            return json_only(format!("a `{keyword}` that is not a list"));
        };
        let mut choices = Vec::new();
        let mut nullable = false;
        for branch in branches {
            let branch = resolve(root, branch)?;
            if only_null(&branch) {
                nullable = true;
                continue;
            }
            let Some(value) = branch.get("const").filter(|value| primitive(value)) else {
                return json_only(format!(
                    "`{keyword}`: a choice between shapes, not between constants"
                ));
            };
            let text = |key: &str| branch.get(key).and_then(Value::as_str);
            let label = match (text("title"), text("description")) {
                (Some(title), _) => title.to_owned(),
                (None, Some(description)) => {
                    format!("{} — {description}", value_label(value))
                }
                (None, None) => value_label(value),
            };
            choices.push(Choice {
                value: value.clone(),
                label,
            });
        }
        return Ok(Some((choices, nullable)));
    }
    Ok(None)
}

/// A number from a schema, as text.
fn number_text(schema: &Map<String, Value>, key: &str) -> Option<String> {
    schema
        .get(key)
        .filter(|value| value.is_number())
        .map(Value::to_string)
}

/// `word`, made plural unless `count` is one.
fn plural(count: &str, word: &str) -> String {
    if count == "1" {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}

/// The bounds of a string, in words.
fn text_hints(schema: &Map<String, Value>) -> Vec<String> {
    let mut hints = Vec::new();
    if let Some(format) = schema.get("format").and_then(Value::as_str) {
        hints.push(format!("format: {format}"));
    }
    if let Some(min) = number_text(schema, "minLength") {
        hints.push(format!("at least {min} {}", plural(&min, "character")));
    }
    if let Some(max) = number_text(schema, "maxLength") {
        hints.push(format!("at most {max} {}", plural(&max, "character")));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        hints.push(format!("matching the pattern {pattern}"));
    }
    hints
}

/// The bounds of a number, in words.
fn number_hints(schema: &Map<String, Value>, integer: bool) -> Vec<String> {
    let mut hints = Vec::new();
    if integer {
        hints.push("a whole number".to_owned());
    }
    for (key, words) in [
        ("minimum", "at least"),
        ("exclusiveMinimum", "more than"),
        ("maximum", "at most"),
        ("exclusiveMaximum", "less than"),
        ("multipleOf", "a multiple of"),
    ] {
        if let Some(bound) = number_text(schema, key) {
            hints.push(format!("{words} {bound}"));
        }
    }
    hints
}

/// The kind of an array's items, and their bounds in words.
fn item_of(root: &Value, schema: &Map<String, Value>) -> Result<(Item, Vec<String>), JsonOnly> {
    if schema.contains_key("prefixItems") {
        return json_only("a list whose items differ by position");
    }
    let Some(items) = schema.get("items") else {
        return json_only("a list whose items may be anything");
    };
    let items = resolve(root, items)?;
    let (ty, nullable) = types(&items)?;
    if nullable {
        return json_only("a list whose items may be null");
    }
    let kind = match (ty.as_deref(), choices(root, &items)?) {
        (_, Some((choices, _))) if choices.iter().all(|c| c.value.is_string()) => Item::Text,
        (_, Some((choices, _))) if choices.iter().all(|c| c.value.is_number()) => Item::Number,
        (_, Some(_)) => return json_only("a list of mixed choices"),
        (Some("string"), None) => Item::Text,
        (Some("number" | "integer"), None) => Item::Number,
        (Some("boolean"), None) => Item::Bool,
        _ => return json_only("a list of objects, lists or values of any kind"),
    };
    let mut hints = vec!["one item a line".to_owned()];
    if let Some(values) = items.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = values.iter().map(value_label).collect();
        hints.push(format!("each one of: {}", values.join(", ")));
    }
    hints.extend(match kind {
        Item::Text => text_hints(&items),
        Item::Number => number_hints(&items, items.get("type") == Some(&Value::from("integer"))),
        Item::Bool => vec!["each true or false".to_owned()],
    });
    if let Some(min) = number_text(schema, "minItems") {
        hints.push(format!("at least {min} {}", plural(&min, "item")));
    }
    if let Some(max) = number_text(schema, "maxItems") {
        hints.push(format!("at most {max} {}", plural(&max, "item")));
    }
    if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
        hints.push("no item twice".to_owned());
    }
    Ok((kind, hints))
}

/// What a schema says of a field for a reader.
fn about(schema: &Map<String, Value>) -> About {
    let text = |key: &str| {
        schema
            .get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.trim().is_empty())
            .map(str::to_owned)
    };
    About {
        title: text("title"),
        description: text("description"),
    }
}

/// The properties of an object schema and the names it requires; a map,
/// or an object without properties, is edited as JSON.
fn object_parts(schema: &Map<String, Value>) -> Result<(&Map<String, Value>, Vec<&str>), JsonOnly> {
    if schema.contains_key("patternProperties") {
        return json_only("an object whose keys follow a pattern (`patternProperties`)");
    }
    if schema
        .get("additionalProperties")
        .is_some_and(|extra| !extra.is_boolean())
    {
        return json_only("a map: an object of keys of any name (`additionalProperties`)");
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return json_only("an object without declared fields");
    };
    if properties.is_empty() {
        return json_only("an object without declared fields");
    }
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    Ok((properties, required))
}

/// Whether `schema`, resolved, is an object's.
fn is_object(schema: &Map<String, Value>) -> Result<bool, JsonOnly> {
    let (ty, _) = types(schema)?;
    Ok(ty.as_deref() == Some("object") || (ty.is_none() && schema.contains_key("properties")))
}

/// Refuses a key a browser would not send back as it is: one with a hidden
/// character (a control, a line break, an invisible or reordering one),
/// which a browser may replace or normalize in a field's name, and which
/// a reader could not see in its label.
fn plain_key(key: &str) -> Result<(), JsonOnly> {
    if key.chars().any(is_hidden) {
        return json_only(format!(
            "the field name `{}` holds a hidden character",
            visible(key)
        ));
    }
    Ok(())
}

/// A field at `path` of `schema` (resolved), not an object.
fn field(
    root: &Value,
    path: Vec<String>,
    schema: &Map<String, Value>,
    required: bool,
) -> Result<Field, JsonOnly> {
    let (schema, nullable_branch) = unwrap_nullable(root, schema.clone())?;
    let (ty, nullable_type) = types(&schema)?;
    let mut nullable = nullable_branch || nullable_type;
    let (kind, hints) = if let Some((choices, null_choice)) = choices(root, &schema)? {
        nullable |= null_choice;
        if choices.is_empty() {
            return json_only("a choice of nothing");
        }
        (Kind::Choice(choices), Vec::new())
    } else {
        match ty.as_deref() {
            Some("string") => {
                let input_mode = match schema.get("format").and_then(Value::as_str) {
                    Some("email" | "idn-email") => Some("email"),
                    Some("uri" | "url" | "iri") => Some("url"),
                    _ => None,
                };
                (Kind::Text { input_mode }, text_hints(&schema))
            }
            Some(kind @ ("number" | "integer")) => {
                (Kind::Number, number_hints(&schema, kind == "integer"))
            }
            Some("boolean") => (Kind::Bool, Vec::new()),
            Some("array") => {
                let (item, hints) = item_of(root, &schema)?;
                (Kind::List(item), hints)
            }
            Some("object") => return json_only("an object nested more than one level deep"),
            Some(other) => {
                return json_only(format!("a field of the type `{}`", visible(other)));
            }
            None if schema.contains_key("properties") => {
                return json_only("an object nested more than one level deep");
            }
            None => return json_only("a field that takes a value of any kind"),
        }
    };
    Ok(Field {
        path,
        about: about(&schema),
        required,
        nullable,
        default: schema.get("default").cloned(),
        hints,
        kind,
    })
}

impl Form {
    /// The form of `schema`, an object schema; [`JsonOnly`], and why, when
    /// the fields cannot express it.
    pub(crate) fn of(schema: &Value) -> Result<Self, JsonOnly> {
        let top = resolve(schema, schema)?;
        if !is_object(&top)? {
            return json_only("the schema is not an object's");
        }
        let (properties, required) = object_parts(&top)?;
        let mut entries = Vec::new();
        let mut count = 0_usize;
        for (key, property) in properties {
            plain_key(key)?;
            let property = resolve(schema, property)?;
            let is_required = required.contains(&key.as_str());
            let (inner, nullable) = unwrap_nullable(schema, property.clone())?;
            if is_object(&inner)? {
                let (inner_properties, inner_required) = object_parts(&inner)?;
                let mut fields = Vec::new();
                for (name, inner_property) in inner_properties {
                    plain_key(name)?;
                    let inner_property = resolve(schema, inner_property)?;
                    if is_object(&unwrap_nullable(schema, inner_property.clone())?.0)? {
                        return json_only("an object nested more than one level deep");
                    }
                    fields.push(field(
                        schema,
                        vec![key.clone(), name.clone()],
                        &inner_property,
                        inner_required.contains(&name.as_str()),
                    )?);
                }
                count += fields.len();
                entries.push(Entry::Group(Group {
                    key: key.clone(),
                    about: about(&inner),
                    required: is_required,
                    nullable: nullable || types(&inner)?.1,
                    fields,
                }));
            } else {
                count += 1;
                entries.push(Entry::Leaf(field(
                    schema,
                    vec![key.clone()],
                    &property,
                    is_required,
                )?));
            }
        }
        if count > MAX_FIELDS {
            return json_only(format!("more than {MAX_FIELDS} fields"));
        }
        Ok(Self { entries })
    }

    fn fields(&self) -> impl Iterator<Item = &Field> {
        self.entries.iter().flat_map(|entry| match entry {
            Entry::Leaf(field) => std::slice::from_ref(field).iter(),
            Entry::Group(group) => group.fields.iter(),
        })
    }
}
