//! The fields on a page: each with its widget, text, default and errors,
//! for a call's arguments or a run's input.

use std::collections::BTreeMap;

use maud::{Markup, html};
use serde_json::Value;
use toolgate::run::ToolCall;
use toolgate::suspend::{Suspended, SuspendedRun, WaitingForInput};
use toolgate::visible::visible;

use super::{
    Entry, Field, Form, INPUT_SCOPE, JsonOnly, Kind, Placed, Texts, edit_scope, json_only, pointer,
    texts_in,
};
use crate::pages::shown;

impl Form {
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
