//! The one check of a model's answer before anything of it runs: a turn
//! whose calls cannot all be used — a call without an id, two calls under
//! one id, arguments that are not a JSON object, a call naming no tool, a
//! tool this run does not offer, arguments that do not fit the tool's
//! parameter schema (the registry's one check), or more calls than a turn
//! may hold — is refused whole, and each of its calls
//! is answered with what was wrong, for the model to read in its next
//! request. A person is only ever shown a turn of calls that can run.

use serde_json::{Map, Value};

use super::model::{Arguments, ProposedCall, Response};
use crate::registry::Offered;
use crate::registry::ToolSpec;
use crate::transcript::{Message, ToolCall};

/// The longest call id a turn may use, in bytes. Providers' ids are a few
/// dozen characters.
pub const MAX_CALL_ID_BYTES: usize = 256;
/// The longest tool name a call may give, in bytes; no tool is named longer.
pub const MAX_CALL_NAME_BYTES: usize = 256;
/// How much of unparsable arguments the model is shown again.
const EXCERPT_CHARS: usize = 300;

/// What an answer is, once checked.
pub(crate) enum Checked {
    /// No calls: the final answer.
    Final(String),
    /// Every call usable: the turn, each call under the model's own id.
    Turn {
        content: Option<String>,
        calls: Vec<ToolCall>,
    },
    /// At least one call unusable: nothing of the turn runs. The calls are
    /// written as the transcript will hold them (an id given where the
    /// model's could not be used, `{}` for arguments that are no object),
    /// `results` answers each of them.
    Refused {
        content: Option<String>,
        calls: Vec<ToolCall>,
        results: Vec<Message>,
    },
}

/// Checks `answer`, the model's reply to request number `iteration` of the
/// run (the number makes the ids given to a refused turn's calls unique),
/// against what the run offers (`specs`, as the model was told). Each
/// call's name is written as the local name it resolves to.
pub(crate) fn check(
    answer: Response,
    iteration: u32,
    offered: &Offered,
    specs: &[ToolSpec],
    max_calls: u32,
) -> Checked {
    let Response {
        content, mut calls, ..
    } = answer;
    if calls.is_empty() {
        return Checked::Final(content.unwrap_or_default());
    }
    let cap = usize::try_from(max_calls).unwrap_or(usize::MAX);
    if calls.len() > cap {
        // A turn no reviewer could read: refused whole, like any turn that
        // cannot be used, for the model to ask again with fewer calls. Only
        // the first `cap` calls are written back, each answered, so the
        // transcript stays within the cap and every call has its result.
        let asked = calls.len();
        calls.truncate(cap.max(1));
        let problem = format!(
            "this turn holds {asked} calls, and a turn may hold at most {max_calls}; the calls past the first {} were dropped from the conversation",
            calls.len()
        );
        let problems = vec![Some(problem); calls.len()];
        for call in &mut calls {
            if let Some(local) = offered.catalogue().resolve(&call.name)
                && local != call.name
            {
                call.name = local.to_owned();
            }
        }
        return refuse(content, calls, &problems, iteration);
    }
    for call in &mut calls {
        if let Some(local) = offered.catalogue().resolve(&call.name)
            && local != call.name
        {
            call.name = local.to_owned();
        }
    }
    let problems = problems(&calls, offered, specs);
    if problems.iter().all(Option::is_none) {
        let calls = calls
            .into_iter()
            .filter_map(|call| match (call.id, call.arguments) {
                (Some(id), Arguments::Json(arguments)) => Some(ToolCall {
                    id,
                    name: call.name,
                    arguments,
                }),
                _ => None,
            })
            .collect();
        return Checked::Turn { content, calls };
    }
    refuse(content, calls, &problems, iteration)
}

/// What is wrong with each call, in order; `None` for a usable one.
fn problems(calls: &[ProposedCall], offered: &Offered, specs: &[ToolSpec]) -> Vec<Option<String>> {
    let mut seen = std::collections::HashMap::with_capacity(calls.len());
    for call in calls {
        if let Some(id) = &call.id {
            *seen.entry(id.as_str()).or_insert(0_usize) += 1;
        }
    }
    calls
        .iter()
        .map(|call| {
            let id = match call.id.as_deref() {
                None => return Some("the call has no id, so no result can be matched to it".to_owned()),
                Some(id) if id.trim().is_empty() => {
                    return Some("the call's id is empty, so no result can be matched to it".to_owned());
                }
                Some(id) => id,
            };
            if id.len() > MAX_CALL_ID_BYTES {
                return Some(format!(
                    "the call's id is {} bytes long, more than the {MAX_CALL_ID_BYTES} a call id may have",
                    id.len()
                ));
            }
            let uses = seen.get(id).copied().unwrap_or(1);
            if uses > 1 {
                return Some(format!(
                    "the id `{}` is given to {uses} calls of this turn; each call needs an id of its own",
                    crate::visible::visible(id)
                ));
            }
            name_problem(&call.name)
                .or_else(|| offer_problem(&call.name, offered, specs))
                .or_else(|| arguments_problem(&call.arguments))
                .or_else(|| match &call.arguments {
                    Arguments::Json(arguments) => offered.arguments_problem(&call.name, arguments),
                    Arguments::Unparsed { .. } => None,
                })
        })
        .collect()
}

/// How many offered names a refusal lists.
const LISTED_TOOLS: usize = 24;

fn offer_problem(name: &str, offered: &Offered, specs: &[ToolSpec]) -> Option<String> {
    if offered.get(name).is_some() {
        return None;
    }
    let listed = if specs.is_empty() {
        "this run offers no tool".to_owned()
    } else {
        let mut names: Vec<String> = specs
            .iter()
            .take(LISTED_TOOLS)
            .map(|spec| format!("`{}`", spec.name))
            .collect();
        if specs.len() > LISTED_TOOLS {
            names.push(format!("and {} more", specs.len() - LISTED_TOOLS));
        }
        format!("the tools it offers are {}", names.join(", "))
    };
    Some(format!(
        "no tool `{}` is offered to this run; {listed}",
        crate::visible::visible(name)
    ))
}

fn name_problem(name: &str) -> Option<String> {
    if name.trim().is_empty() {
        return Some("the call names no tool".to_owned());
    }
    if name.len() > MAX_CALL_NAME_BYTES {
        return Some(format!(
            "the call's tool name is {} bytes long; no tool has a name longer than {MAX_CALL_NAME_BYTES}",
            name.len()
        ));
    }
    None
}

fn arguments_problem(arguments: &Arguments) -> Option<String> {
    match arguments {
        Arguments::Json(Value::Object(_)) => None,
        Arguments::Json(other) => Some(format!(
            "the arguments are a JSON {}, not an object of named parameters",
            kind(other)
        )),
        Arguments::Unparsed { text, error } => Some(format!(
            "the arguments are not valid JSON ({error}): `{}`",
            excerpt(text)
        )),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The start of `text`, escaped for reading, marked when cut.
fn excerpt(text: &str) -> String {
    crate::visible::excerpt(text, EXCERPT_CHARS)
}

fn refuse(
    content: Option<String>,
    calls: Vec<ProposedCall>,
    problems: &[Option<String>],
    iteration: u32,
) -> Checked {
    let count = problems.iter().filter(|p| p.is_some()).count();
    tracing::warn!(
        unusable = count,
        calls = calls.len(),
        "the model's turn holds calls that cannot be used; nothing of it runs and the model is told why"
    );
    let mut written = Vec::with_capacity(calls.len());
    let mut results = Vec::with_capacity(calls.len());
    let mut used = std::collections::HashSet::with_capacity(calls.len());
    let given: std::collections::HashSet<String> =
        calls.iter().filter_map(|call| call.id.clone()).collect();
    for (index, (call, problem)) in calls.into_iter().zip(problems).enumerate() {
        // A refused turn's calls keep the model's id where it can be used
        // (present, short, not taken by an earlier call); any other gets one
        // of the run's own, so every result still answers exactly one call.
        let id = match call.id {
            Some(id)
                if !id.trim().is_empty()
                    && id.len() <= MAX_CALL_ID_BYTES
                    && !used.contains(&id) =>
            {
                id
            }
            _ => {
                let mut id = format!("toolgate_refused_{iteration}_{index}");
                while given.contains(&id) || used.contains(&id) {
                    id.push('_');
                }
                id
            }
        };
        used.insert(id.clone());
        let name = if call.name.len() > MAX_CALL_NAME_BYTES {
            call.name.chars().take(64).collect()
        } else {
            call.name
        };
        let arguments = match call.arguments {
            Arguments::Json(value @ Value::Object(_)) => value,
            _ => Value::Object(Map::new()),
        };
        let content = match problem {
            Some(problem) => format!(
                "This call could not be used: {problem}. Nothing of this turn ran; ask again with every call well-formed."
            ),
            None => format!(
                "This call was not run: {count} other call{} of this turn could not be used (see {}). Nothing of this turn ran; ask again.",
                if count == 1 { "" } else { "s" },
                if count == 1 {
                    "its result"
                } else {
                    "their results"
                }
            ),
        };
        results.push(Message::Tool {
            call_id: id.clone(),
            name: name.clone(),
            content,
            is_error: true,
            rich: None,
        });
        written.push(ToolCall {
            id,
            name,
            arguments,
        });
    }
    Checked::Refused {
        content,
        calls: written,
        results,
    }
}
