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
//! wrote goes through [`shown`]: escaped, hidden characters as escapes.

use std::collections::BTreeMap;

use maud::{Markup, html};
use serde_json::{Map, Number, Value};
use toolgate::run::ToolCall;
use toolgate::suspend::{InputError, Suspended, SuspendedRun, WaitingForInput};
use toolgate::visible::{is_hidden, visible};

use crate::pages::shown;

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

    /// The fields, named under `scope`: each holds its text in `texts`,
    /// its default as a placeholder, its errors beside it.
    pub(crate) fn render(
        &self,
        scope: &str,
        texts: &Texts,
        defaults: &Texts,
        errors: &Placed,
    ) -> Markup {
        let leaf = |field: &Field| render_field(field, scope, texts, defaults, errors);
        html! {
            @if let Some(general) = errors.get("") {
                @for error in general {
                    p.field-error { (shown(error)) }
                }
            }
            @for entry in &self.entries {
                @match entry {
                    Entry::Leaf(field) => { (leaf(field)) }
                    Entry::Group(group) => {
                        fieldset.group data-field={ (scope) (pointer(std::slice::from_ref(&group.key))) } {
                            legend {
                                (shown(group.about.title.as_deref().unwrap_or(&group.key)))
                                @if group.about.title.is_some() { " " code { (shown(&group.key)) } }
                                span.need { @if group.required { " required" } @else { " optional: leave every field empty to leave it out" } }
                            }
                            @if let Some(description) = &group.about.description {
                                p.hint { (shown(description)) }
                            }
                            @for field in &group.fields { (leaf(field)) }
                        }
                    }
                }
            }
        }
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

/// One field: its name, whether it is required, its widget, what the
/// schema says of it, and its errors.
fn render_field(
    field: &Field,
    scope: &str,
    texts: &Texts,
    defaults: &Texts,
    errors: &Placed,
) -> Markup {
    let at = pointer(&field.path);
    let name = format!("{scope}{at}");
    let text = texts.get(&at).map_or("", String::as_str);
    let default = defaults
        .get(&at)
        .map(String::as_str)
        .filter(|d| !d.is_empty());
    let key = field.path.last().map_or("", String::as_str);
    let field_errors = errors.get(&at).map_or(&[][..], Vec::as_slice);
    let optional_choice = !field.required || field.nullable;
    html! {
        div.field.wrong[!field_errors.is_empty()] data-field=(name) {
            label {
                span.name { (shown(field.about.title.as_deref().unwrap_or(key))) }
                @if field.about.title.is_some() { " " code { (shown(key)) } }
                span.need { @if field.required { " required" } @else { " optional" } }
                " "
                @match &field.kind {
                    Kind::Text { input_mode } => {
                        @if text.contains('\n') {
                            // A text area's first line break is dropped by
                            // the parser: one more keeps the text's own.
                            textarea name=(name) rows="4" { "\n" (text) }
                        } @else {
                            input type="text" name=(name) value=(text) inputmode=[*input_mode] placeholder=[default];
                        }
                    }
                    Kind::Number => {
                        input type="text" name=(name) value=(text) inputmode="decimal" placeholder=[default];
                    }
                    Kind::Bool if field.required && !field.nullable => {
                        input type="checkbox" name=(name) value="true" checked[text == "true"];
                    }
                    Kind::Bool => {
                        select name=(name) {
                            option value="" selected[text.is_empty()] { "(not given)" }
                            option value="true" selected[text == "true"] { "true" }
                            option value="false" selected[text == "false"] { "false" }
                        }
                    }
                    Kind::Choice(choices) => {
                        select name=(name) {
                            @if optional_choice {
                                option value="" selected[text.is_empty()] { "(not given)" }
                            } @else {
                                option value="" disabled selected[text.is_empty()] { "choose one" }
                            }
                            @for (index, choice) in choices.iter().enumerate() {
                                @let value = index.to_string();
                                option value=(value) selected[text == value] { (visible(&choice.label)) }
                            }
                        }
                    }
                    Kind::List(_) => {
                        textarea name=(name) rows=(text.lines().count().clamp(2, 12) + 1) placeholder=[default] { "\n" (text) }
                    }
                }
            }
            @if let Some(description) = &field.about.description {
                p.hint { (shown(description)) }
            }
            @if !field.hints.is_empty() || field.default.is_some() {
                p.hint {
                    @for (index, hint) in field.hints.iter().enumerate() {
                        @if index > 0 { " · " }
                        (shown(hint))
                    }
                    @if let Some(default) = &field.default {
                        @if !field.hints.is_empty() { " · " }
                        "default " code { (toolgate::visible::visible_json(default)) }
                    }
                }
            }
            @for error in field_errors {
                p.field-error { (shown(error)) }
            }
        }
    }
}

/// A decision form sent back to the operator: the fields as they posted
/// them, and the errors beside each, by scope ([`edit_scope`],
/// [`INPUT_SCOPE`]).
#[derive(Debug, Default)]
pub(crate) struct Retyped {
    /// Every field of the posted form, by name.
    pub(crate) fields: BTreeMap<String, String>,
    /// The errors of each scope's fields.
    pub(crate) errors: BTreeMap<String, Placed>,
}

impl Retyped {
    /// What the operator posted as `name`, if the form was sent back.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// The schema the reviewer was shown for call `index` of `paused`.
pub(crate) fn reviewed_schema(paused: &SuspendedRun, index: usize) -> Option<&Value> {
    paused
        .review()
        .tools
        .get(index)
        .and_then(Option::as_ref)
        .map(|tool| &tool.parameters)
}

/// The form of call `call`'s arguments under `schema`, and its fields
/// filled with them — or why it is edited as JSON.
fn call_form(schema: Option<&Value>, call: &ToolCall) -> Result<(Form, Texts), JsonOnly> {
    let Some(schema) = schema else {
        return json_only("the parameter schema it was shown with is unknown");
    };
    let form = Form::of(schema)?;
    let texts = form.texts_of(&call.arguments)?;
    Ok((form, texts))
}

/// How the call-by-call form edits call `call` (index `index` of
/// `paused`): its fields — filled with its arguments, or with what the
/// operator posted — as the choice "approve with the values below", or
/// why they are not offered.
pub(crate) fn call_fields(
    paused: &SuspendedRun,
    index: usize,
    call: &ToolCall,
    retyped: Option<&Retyped>,
) -> Markup {
    let scope = edit_scope(&call.id);
    let choice = format!("call:{}", call.id);
    match call_form(reviewed_schema(paused, index), call) {
        Ok((form, filled)) => {
            let texts = match retyped {
                Some(retyped) => texts_in(
                    &scope,
                    retyped.fields.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                ),
                None => filled,
            };
            let none = Placed::new();
            let errors = retyped.and_then(|r| r.errors.get(&scope)).unwrap_or(&none);
            html! {
                label {
                    input type="radio" name=(choice) value="form" checked[retyped.and_then(|r| r.get(&choice)) == Some("form")];
                    " approve with the values below (checked against the schema):"
                }
                div.fields {
                    // Marks the fields as sent, so an approval as it is
                    // whose fields were changed is told apart even when
                    // every field is an unchecked checkbox, which sends
                    // nothing.
                    input type="hidden" name=(scope) value="";
                    (form.render(&scope, &texts, &form.defaults(), errors))
                }
            }
        }
        Err(JsonOnly(why)) => html! {
            p.note.json-only {
                "These arguments are edited as JSON only, not field by field: " (shown(&why)) "."
            }
        },
    }
}

/// The fields that give `paused` its input, filled with the schema's
/// defaults or with what the operator posted — or why the input is given
/// as JSON only.
pub(crate) fn input_fields(
    paused: &Suspended<WaitingForInput>,
    retyped: Option<&Retyped>,
) -> Result<Markup, JsonOnly> {
    let form = Form::of(paused.input_schema().as_value())?;
    let defaults = form.defaults();
    let texts = match retyped {
        Some(retyped) => texts_in(
            INPUT_SCOPE,
            retyped.fields.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        ),
        None => defaults.clone(),
    };
    let none = Placed::new();
    let errors = retyped
        .and_then(|r| r.errors.get(INPUT_SCOPE))
        .unwrap_or(&none);
    Ok(form.render(INPUT_SCOPE, &texts, &defaults, errors))
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

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause"
)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// The texts `pairs` give.
    fn texts(pairs: &[(&str, &str)]) -> Texts {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn why(schema: &Value) -> String {
        match Form::of(schema) {
            Ok(form) => panic!("a form for {schema}: {form:?}"),
            Err(JsonOnly(why)) => why,
        }
    }

    /// Every kind the form expresses, in one schema.
    fn every_kind() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 40, "format": "email", "description": "who"},
                "note": {"type": ["string", "null"]},
                "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
                "ratio": {"type": "number", "exclusiveMaximum": 1},
                "force": {"type": "boolean"},
                "maybe": {"type": "boolean"},
                "mode": {"type": "string", "enum": ["fast", "safe"]},
                "level": {"oneOf": [{"const": 1, "title": "low"}, {"const": 2, "title": "high"}]},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                "ids": {"type": "array", "items": {"type": "integer"}},
                "inner": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "deep": {"type": "boolean"}},
                    "required": ["path"]
                }
            },
            "required": ["name", "count", "force", "mode", "level"]
        })
    }

    #[test]
    fn each_kind_reads_back() {
        let form = Form::of(&every_kind()).unwrap();
        let read = form
            .read(&texts(&[
                ("/name", "a@b.c"),
                ("/count", "4"),
                ("/ratio", "0.5"),
                ("/force", "true"),
                ("/maybe", "false"),
                ("/mode", "1"),
                ("/level", "0"),
                ("/tags", "x\r\ny\n\n"),
                ("/ids", "1\n2"),
                ("/inner/path", "src"),
            ]))
            .unwrap();
        assert_eq!(
            read,
            json!({
                "name": "a@b.c", "count": 4, "ratio": 0.5, "force": true, "maybe": false,
                "mode": "safe", "level": 1, "tags": ["x", "y"], "ids": [1, 2],
                "inner": {"path": "src"}
            })
        );
        assert_eq!(toolgate::suspend::validate(&every_kind(), &read), Ok(()));
    }

    #[test]
    fn empty_fields_are_absent_or_what_their_schema_says() {
        let form = Form::of(&every_kind()).unwrap();
        let read = form.read(&Texts::new()).unwrap();
        // Optional: absent, never "". Required string: "". Required
        // checkbox unchecked: false. Required number and choice: absent,
        // which the schema refuses beside them.
        assert_eq!(read, json!({"name": "", "force": false}));
        let errors = toolgate::suspend::validate(&every_kind(), &read).unwrap_err();
        let placed = form.place(&errors);
        assert!(placed.contains_key("/count"), "{placed:?}");
        assert!(placed.contains_key("/mode"), "{placed:?}");
        assert!(placed.contains_key("/level"), "{placed:?}");
        assert!(placed.contains_key("/name"), "{placed:?}");
        // A nullable required field left empty is null.
        let nullable = json!({"type": "object", "properties": {"n": {"type": ["integer", "null"]}}, "required": ["n"]});
        assert_eq!(
            Form::of(&nullable).unwrap().read(&Texts::new()).unwrap(),
            json!({"n": null})
        );
    }

    #[test]
    fn a_number_that_does_not_parse_is_an_error_beside_it() {
        let form = Form::of(&every_kind()).unwrap();
        for typed in ["abc", "1,5", "NaN", "inf", "1e999", "0x10"] {
            let errors = form.read(&texts(&[("/ratio", typed)])).unwrap_err();
            assert_eq!(errors.keys().collect::<Vec<_>>(), ["/ratio"], "{typed}");
        }
        let errors = form.read(&texts(&[("/ids", "1\nzwei\n3")])).unwrap_err();
        assert!(errors["/ids"][0].contains("line 2"), "{errors:?}");
        // A whole number stays one; a fraction is refused by the schema.
        assert_eq!(
            form.read(&texts(&[("/count", " 7 ")])).unwrap()["count"],
            json!(7)
        );
        let read = form.read(&texts(&[("/count", "2.5")])).unwrap();
        let errors = toolgate::suspend::validate(&every_kind(), &read).unwrap_err();
        assert!(form.place(&errors).contains_key("/count"));
    }

    #[test]
    fn bounds_are_checked_and_placed_beside_their_field() {
        let schema = every_kind();
        let form = Form::of(&schema).unwrap();
        let read = form
            .read(&texts(&[
                ("/name", "a@b.c"),
                ("/count", "11"),
                ("/force", "true"),
                ("/mode", "0"),
                ("/level", "1"),
                ("/tags", "a\nb\nc\nd"),
                ("/inner/deep", "true"),
            ]))
            .unwrap();
        let placed = form.place(&toolgate::suspend::validate(&schema, &read).unwrap_err());
        assert!(placed.contains_key("/count"), "{placed:?}");
        assert!(placed.contains_key("/tags"), "{placed:?}");
        assert!(!placed.contains_key(""), "{placed:?}");
        // A nested object's missing required field, beside it.
        let nested = json!({
            "type": "object",
            "properties": {"inner": {"type": "object", "properties": {"n": {"type": "integer"}, "m": {"type": "string"}}, "required": ["n"]}}
        });
        let form = Form::of(&nested).unwrap();
        let read = form.read(&texts(&[("/inner/m", "x")])).unwrap();
        assert_eq!(read, json!({"inner": {"m": "x"}}));
        let placed = form.place(&toolgate::suspend::validate(&nested, &read).unwrap_err());
        assert!(placed.contains_key("/inner/n"), "{placed:?}");
    }

    #[test]
    fn defaults_and_descriptions_are_shown() {
        let form = Form::of(&every_kind()).unwrap();
        assert_eq!(form.defaults(), texts(&[("/count", "3")]));
        let page = form
            .render("in:", &form.defaults(), &form.defaults(), &Placed::new())
            .into_string();
        assert!(page.contains("name=\"in:/count\" value=\"3\""), "{page}");
        assert!(page.contains("who"), "{page}");
        assert!(page.contains("at most 40 characters"), "{page}");
        assert!(page.contains("at least 1"), "{page}");
        assert!(page.contains(">high</option>"), "{page}");
        assert!(
            page.contains("type=\"checkbox\" name=\"in:/force\""),
            "{page}"
        );
        assert!(page.contains("name=\"in:/inner/path\""), "{page}");
    }

    #[test]
    fn what_the_form_cannot_express_is_json_only() {
        let object = |property: Value| json!({"type": "object", "properties": {"x": property}});
        for (schema, said) in [
            (
                object(
                    json!({"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "string"}]}),
                ),
                "shapes",
            ),
            (
                object(json!({"$ref": "https://example.com/s.json"})),
                "$ref",
            ),
            (
                object(
                    json!({"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}),
                ),
                "list of objects",
            ),
            (
                object(
                    json!({"type": "array", "items": {"type": "array", "items": {"type": "string"}}}),
                ),
                "list of objects",
            ),
            (object(json!({"type": "array"})), "any"),
            (
                object(
                    json!({"type": "object", "properties": {"y": {"type": "object", "properties": {"z": {"type": "string"}}}}}),
                ),
                "deep",
            ),
            (
                object(json!({"type": "object", "additionalProperties": {"type": "string"}})),
                "map",
            ),
            (
                object(json!({"type": "object", "patternProperties": {"^a": {"type": "string"}}})),
                "pattern",
            ),
            (object(json!({})), "any kind"),
            (object(json!(true)), "`true`"),
            (
                object(json!({"type": ["string", "integer"]})),
                "several types",
            ),
            (
                json!({"type": "object", "additionalProperties": {"type": "string"}}),
                "map",
            ),
            (json!({"type": "string"}), "not an object"),
            (
                json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/A"}}}),
                "another `$ref`",
            ),
        ] {
            let why = why(&schema);
            assert!(why.contains(said), "{schema}: {why}");
        }
    }

    #[test]
    fn a_local_ref_and_a_nullable_choice_are_followed() {
        // As schemars writes `mode: Option<Mode>` and `inner: Inner`.
        let schema = json!({
            "type": "object",
            "properties": {
                "mode": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}]},
                "inner": {"$ref": "#/$defs/Inner", "description": "the inner part"}
            },
            "required": ["inner"],
            "$defs": {
                "Mode": {"oneOf": [{"type": "string", "const": "a", "description": "first"}, {"type": "string", "const": "b"}]},
                "Inner": {"type": "object", "properties": {"n": {"type": "integer"}}}
            }
        });
        let form = Form::of(&schema).unwrap();
        let value = json!({"mode": "b", "inner": {"n": 2}});
        let texts = form.texts_of(&value).unwrap();
        assert_eq!(form.read(&texts).unwrap(), value);
        let page = form
            .render("edit:c1", &texts, &Texts::new(), &Placed::new())
            .into_string();
        assert!(page.contains("a — first"), "{page}");
        assert!(page.contains("the inner part"), "{page}");
    }

    #[test]
    fn values_the_fields_cannot_show_are_json_only() {
        let form = Form::of(&every_kind()).unwrap();
        let base = json!({"name": "a@b.c", "count": 3, "force": true, "mode": "fast", "level": 2});
        assert!(form.texts_of(&base).is_ok());
        let with = |key: &str, value: Value| {
            let mut changed = base.clone();
            changed[key] = value;
            changed
        };
        for value in [
            with("name", json!("a\u{200b}b")),
            with("undeclared", json!(1)),
            with("tags", json!(["a\nb"])),
            with("tags", json!([""])),
            with("tags", json!([" "])),
            with("mode", json!("other")),
            with("count", json!("3")),
            with("note", Value::Null),
            with("name", json!("a\r\nb")),
            with("inner", json!({})),
            json!([1, 2]),
        ] {
            assert!(form.texts_of(&value).is_err(), "{value}");
        }
    }

    #[test]
    fn hostile_names_are_escaped_and_kept_apart() {
        let long = "k".repeat(5000);
        let schema = json!({
            "type": "object",
            "properties": {
                "<script>alert(1)</script>": {"type": "string", "description": "<img src=x onerror=alert(2)>"},
                "__proto__": {"type": "string"},
                "a/b~c": {"type": "string", "title": "\u{202e}evil"},
                "\"quoted\" name='x'": {"type": "string"},
                long.clone(): {"type": "string"},
                "choice": {"enum": ["<b>bold</b>", "\u{200b}"]}
            }
        });
        let form = Form::of(&schema).unwrap();
        let value = json!({
            "<script>alert(1)</script>": "</textarea><script>",
            "__proto__": "polluted",
            "a/b~c": "slash",
            "\"quoted\" name='x'": "\"><b>",
            long.clone(): "long",
            "choice": "\u{200b}"
        });
        let filled = form.texts_of(&value).unwrap();
        assert_eq!(filled["/a~1b~0c"], "slash");
        assert_eq!(form.read(&filled).unwrap(), value);
        let page = form
            .render(&edit_scope("c/1"), &filled, &Texts::new(), &Placed::new())
            .into_string();
        assert!(!page.contains("<script>"), "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(!page.contains("<b>"), "{page}");
        assert!(
            !page.contains('\u{202e}') && !page.contains('\u{200b}'),
            "{page}"
        );
        assert!(page.contains("\\u{202e}evil"), "{page}");
        assert!(page.contains("name=\"edit:c~11/a~1b~0c\""), "{page}");
        // A posted form's fields of one scope only.
        let posted = [
            ("edit:c~11/__proto__", "x"),
            ("edit:c~1/__proto__", "y"),
            ("edit:c~11", "z"),
            ("args:c/1", "{}"),
            ("in:/__proto__", "w"),
        ];
        let scoped = texts_in(&edit_scope("c/1"), posted.iter().copied());
        assert_eq!(scoped, texts(&[("/__proto__", "x"), ("", "z")]));
        assert_eq!(form.read(&scoped).unwrap(), json!({"__proto__": "x"}));
        for other in [
            "csrf",
            "digest",
            "verdict",
            "reason",
            "input",
            "confirm",
            "allow_tool",
        ] {
            assert!(!other.starts_with("edit:") && !other.starts_with(INPUT_SCOPE));
        }
    }

    #[test]
    fn names_a_browser_would_change_are_json_only_and_escapes_are_kept() {
        for key in [
            "\u{0}nul",
            "a\u{200b}b",
            "line\nbreak",
            "cr\rlf",
            "\u{202e}rtl",
        ] {
            let schema = json!({"type": "object", "properties": {key: {"type": "string"}}});
            assert!(why(&schema).contains("hidden character"), "{key:?}");
            let nested = json!({"type": "object", "properties": {"o": {"type": "object", "properties": {key: {"type": "string"}}}}});
            assert!(why(&nested).contains("hidden character"), "{key:?}");
        }
        // Text that only looks like an escape is kept as it is.
        let keys = ["%FF%FE", "\\x80", "\\u{200b}", "&amp;", "~1", "/"];
        let properties: Map<String, Value> = keys
            .iter()
            .map(|key| ((*key).to_owned(), json!({"type": "string"})))
            .collect();
        let schema = json!({"type": "object", "properties": properties});
        let form = Form::of(&schema).unwrap();
        let value: Map<String, Value> = keys
            .iter()
            .map(|key| ((*key).to_owned(), json!(format!("value of {key}"))))
            .collect();
        let value = Value::Object(value);
        let filled = form.texts_of(&value).unwrap();
        let page = form
            .render(INPUT_SCOPE, &filled, &Texts::new(), &Placed::new())
            .into_string();
        assert!(page.contains("name=\"in:/~01\""), "{page}");
        assert!(page.contains("name=\"in:/~1\""), "{page}");
        assert!(page.contains("name=\"in:/&amp;amp;\""), "{page}");
        // Posted back under the names rendered: the same value.
        let posted: Vec<(String, String)> = filled
            .iter()
            .map(|(at, text)| (format!("{INPUT_SCOPE}{at}"), text.clone()))
            .collect();
        let read = form
            .read(&texts_in(
                INPUT_SCOPE,
                posted.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            ))
            .unwrap();
        assert_eq!(read, value);
    }

    #[test]
    fn text_over_several_lines_is_a_text_area_that_keeps_its_lines() {
        let schema = json!({"type": "object", "properties": {"body": {"type": "string"}}});
        let form = Form::of(&schema).unwrap();
        let value = json!({"body": "\nfirst line\n\tindented\n"});
        let filled = form.texts_of(&value).unwrap();
        let page = form
            .render(INPUT_SCOPE, &filled, &Texts::new(), &Placed::new())
            .into_string();
        assert!(
            page.contains(
                "<textarea name=\"in:/body\" rows=\"4\">\n\nfirst line\n\tindented\n</textarea>"
            ),
            "{page}"
        );
        // As a browser sends it back: CR LF.
        let sent = texts(&[("/body", "\r\nfirst line\r\n\tindented\r\n")]);
        assert_eq!(form.read(&sent).unwrap(), value);
        // A carriage return of its own cannot be shown.
        assert!(form.texts_of(&json!({"body": "a\rb"})).is_err());
    }

    #[test]
    fn a_ref_beside_a_validation_keyword_is_json_only() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A", "minLength": 2}},
            "$defs": {"A": {"type": "string"}}
        });
        assert!(why(&schema).contains("minLength"));
    }

    /// A value of every kind for [`every_kind`], as a model could write it.
    fn arguments() -> impl Strategy<Value = Value> {
        let text = "[a-zA-Z0-9 _.@<>&\"'/\\\\-]{0,12}";
        let line = "[a-zA-Z0-9_.@<>&\"'/\\\\-]{1,8}";
        (
            text,
            proptest::option::of(proptest::option::of(text)),
            any::<i32>(),
            proptest::option::of(-1.0e6_f64..1.0e6),
            any::<bool>(),
            proptest::option::of(any::<bool>()),
            prop_oneof![Just("fast"), Just("safe")],
            1_i64..=2,
            proptest::option::of(proptest::collection::vec(line, 0..4)),
            proptest::option::of(proptest::collection::vec(any::<i64>(), 0..4)),
            proptest::option::of((text, proptest::option::of(any::<bool>()))),
        )
            .prop_map(|(name, note, count, ratio, force, maybe, mode, level, tags, ids, inner)| {
                let mut object = json!({"name": name, "count": count, "force": force, "mode": mode, "level": level});
                if let Some(note) = note {
                    object["note"] = note.map_or(Value::Null, Value::from);
                }
                if let Some(ratio) = ratio {
                    object["ratio"] = json!(ratio);
                }
                if let Some(maybe) = maybe {
                    object["maybe"] = json!(maybe);
                }
                if let Some(tags) = tags {
                    object["tags"] = json!(tags);
                }
                if let Some(ids) = ids {
                    object["ids"] = json!(ids);
                }
                if let Some((path, deep)) = inner {
                    object["inner"] = json!({"path": path});
                    if let Some(deep) = deep {
                        object["inner"]["deep"] = json!(deep);
                    }
                }
                object
            })
    }

    proptest! {
        /// What the fields show of a value reads back as that value, or
        /// the value is edited as JSON: a form never changes what it
        /// did not show.
        #[test]
        fn shown_values_read_back_exactly(value in arguments()) {
            let form = Form::of(&every_kind()).unwrap();
            if let Ok(texts) = form.texts_of(&value) {
                prop_assert_eq!(form.read(&texts).unwrap(), value);
            } else {
                // Only what cannot be shown: a null optional note, a
                // required name left empty and nothing else differs.
                let shown_as_nothing = value.get("note") == Some(&Value::Null)
                    || value.get("tags").is_some_and(|tags| tags == &json!([]))
                    || value.get("ids").is_some_and(|ids| ids == &json!([]))
                    || value.get("inner").is_some_and(|inner| inner == &json!({"path": ""}))
                    || value.get("note") == Some(&json!(""));
                prop_assert!(shown_as_nothing, "{}", value);
            }
        }

        /// Whatever is posted, reading never panics, and what it reads is
        /// an object of declared keys only.
        #[test]
        fn any_posted_texts_read_safely(fields in proptest::collection::btree_map("/(name|count|ratio|force|maybe|mode|level|tags|ids|inner/path|inner/deep|other)", ".{0,20}", 0..12)) {
            let form = Form::of(&every_kind()).unwrap();
            if let Ok(Value::Object(read)) = form.read(&fields) {
                let declared = every_kind()["properties"].as_object().unwrap().clone();
                prop_assert!(read.keys().all(|key| declared.contains_key(key)));
            }
        }
    }
}
