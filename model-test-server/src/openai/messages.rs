use serde_json::{Map, Value};

use crate::check::{
    Problems, array, index, key, non_empty_string, object, required, string, tool_name,
    unknown_keys, wrong_type,
};

/// The longest tool call id OpenAI takes back: not in the API reference,
/// but the API's own refusal (`Invalid 'messages[2].tool_calls[0].id':
/// string too long. Expected a string with maximum length 40`, code
/// `string_above_max_length`), met by clients that replay ids another
/// provider made.
const MAX_CALL_ID_CHARS: usize = 40;

/// The tool calls of the last assistant message that made some, while
/// only tool messages have followed it.
struct OpenCalls {
    /// The assistant message's path.
    path: String,
    /// Each call's index in `tool_calls`, id, and whether a tool message answered it.
    calls: Vec<(usize, String, bool)>,
}

/// Tracks which tool calls are waiting for their tool messages.
#[derive(Default)]
struct Pairing {
    open: Option<OpenCalls>,
}

impl Pairing {
    /// A message other than a tool message: every open call should have been answered.
    fn close(&mut self, problems: &mut Problems) {
        let Some(open) = self.open.take() else {
            return;
        };
        for (j, id, answered) in open.calls {
            if !answered {
                problems.push(
                    format!("{}.tool_calls[{j}]", open.path),
                    format!("tool call `{id}` is not answered by a tool message before the next non-tool message"),
                );
            }
        }
    }

    /// An assistant message, with the calls it makes.
    fn assistant(&mut self, path: &str, calls: Vec<(usize, String)>, problems: &mut Problems) {
        self.close(problems);
        if !calls.is_empty() {
            self.open = Some(OpenCalls {
                path: path.to_owned(),
                calls: calls.into_iter().map(|(j, id)| (j, id, false)).collect(),
            });
        }
    }

    /// A tool message answering `id`.
    fn tool(&mut self, path: &str, id: &str, problems: &mut Problems) {
        let path = key(path, "tool_call_id");
        let Some(open) = &mut self.open else {
            problems.push(
                path,
                format!("`{id}` answers no tool call: a tool message must follow an assistant message with tool_calls, or another tool message"),
            );
            return;
        };
        match open.calls.iter_mut().find(|(_, call, _)| call == id) {
            None => problems.push(
                path,
                format!("`{id}` is not the id of a tool call of {}", open.path),
            ),
            Some((_, _, answered)) if *answered => problems.push(
                path,
                format!(
                    "tool call `{id}` of {} is answered more than once",
                    open.path
                ),
            ),
            Some((_, _, answered)) => *answered = true,
        }
    }
}

/// `messages`: a non-empty array of well-formed messages whose tool calls are answered.
pub(super) fn validate(value: &Value, problems: &mut Problems) {
    let Some(messages) = array(value, "messages", problems) else {
        return;
    };
    if messages.is_empty() {
        problems.push("messages", "must hold at least one message");
    }
    let mut pairing = Pairing::default();
    for (i, message) in messages.iter().enumerate() {
        let path = index("messages", i);
        let Some(message) = object(message, &path, problems) else {
            pairing.close(problems);
            continue;
        };
        let role = required(message, "role", &path, problems)
            .and_then(|role| string(role, &key(&path, "role"), problems));
        match role {
            Some("system" | "developer") => {
                pairing.close(problems);
                unknown_keys(message, &["role", "content", "name"], &path, problems);
                check_name(message, &path, problems);
                content(message.get("content"), &path, &["text"], problems);
            }
            Some("user") => {
                pairing.close(problems);
                unknown_keys(message, &["role", "content", "name"], &path, problems);
                check_name(message, &path, problems);
                content(
                    message.get("content"),
                    &path,
                    &["text", "image_url"],
                    problems,
                );
            }
            Some("assistant") => {
                let calls = assistant(message, &path, problems);
                pairing.assistant(&path, calls, problems);
            }
            Some("tool") => {
                unknown_keys(
                    message,
                    &["role", "content", "tool_call_id"],
                    &path,
                    problems,
                );
                content(message.get("content"), &path, &["text"], problems);
                let id = required(message, "tool_call_id", &path, problems)
                    .and_then(|id| string(id, &key(&path, "tool_call_id"), problems));
                if let Some(id) = id {
                    pairing.tool(&path, id, problems);
                }
            }
            Some(other) => {
                pairing.close(problems);
                problems.push(
                    key(&path, "role"),
                    format!(
                        "must be one of system, developer, user, assistant, tool (got `{other}`)"
                    ),
                );
            }
            None => pairing.close(problems),
        }
    }
    pairing.close(problems);
}

/// The optional `name` of a participant.
fn check_name(message: &Map<String, Value>, path: &str, problems: &mut Problems) {
    if let Some(name) = message.get("name") {
        string(name, &key(path, "name"), problems);
    }
}

/// A required `content`: a string or a non-empty array of parts of the allowed types.
fn content(value: Option<&Value>, path: &str, parts: &[&str], problems: &mut Problems) {
    let path = key(path, "content");
    match value {
        None => problems.push(path, "required"),
        Some(Value::String(_)) => {}
        Some(Value::Array(list)) => content_parts(list, &path, parts, problems),
        Some(other) => problems.push(
            path,
            wrong_type("a string or an array of content parts", other),
        ),
    }
}

/// The parts of an array `content`.
fn content_parts(list: &[Value], path: &str, allowed: &[&str], problems: &mut Problems) {
    if list.is_empty() {
        problems.push(path, "must hold at least one content part");
    }
    for (i, part) in list.iter().enumerate() {
        let path = index(path, i);
        let Some(part) = object(part, &path, problems) else {
            continue;
        };
        let Some(kind) = required(part, "type", &path, problems)
            .and_then(|kind| string(kind, &key(&path, "type"), problems))
        else {
            continue;
        };
        if !allowed.contains(&kind) {
            problems.push(
                key(&path, "type"),
                format!("must be one of {} here (got `{kind}`)", allowed.join(", ")),
            );
            continue;
        }
        unknown_keys(part, &["type", kind], &path, problems);
        let Some(inner) = required(part, kind, &path, problems) else {
            continue;
        };
        let inner_path = key(&path, kind);
        if kind == "image_url" {
            if let Some(image) = object(inner, &inner_path, problems) {
                unknown_keys(image, &["url", "detail"], &inner_path, problems);
                if let Some(url) = required(image, "url", &inner_path, problems) {
                    non_empty_string(url, &key(&inner_path, "url"), problems);
                }
                if let Some(detail) = image.get("detail") {
                    let details = ["auto", "low", "high"];
                    crate::check::one_of(detail, &details, &key(&inner_path, "detail"), problems);
                }
            }
        } else {
            string(inner, &inner_path, problems);
        }
    }
}

/// An assistant message; returns the (index, id) of each tool call it makes.
fn assistant(
    message: &Map<String, Value>,
    path: &str,
    problems: &mut Problems,
) -> Vec<(usize, String)> {
    let allowed = ["role", "content", "name", "refusal", "tool_calls"];
    unknown_keys(message, &allowed, path, problems);
    check_name(message, path, problems);
    if let Some(refusal) = message.get("refusal")
        && !refusal.is_null()
    {
        string(refusal, &key(path, "refusal"), problems);
    }
    let calls = message
        .get("tool_calls")
        .map(|calls| tool_calls(calls, path, problems))
        .unwrap_or_default();
    let excused =
        message.contains_key("tool_calls") || message.get("refusal").is_some_and(Value::is_string);
    match message.get("content") {
        None if !excused => problems.push(
            key(path, "content"),
            "required unless tool_calls is present",
        ),
        Some(Value::Null) if !excused => problems.push(
            key(path, "content"),
            "may be null only when tool_calls is present",
        ),
        None | Some(Value::Null | Value::String(_)) => {}
        Some(Value::Array(list)) => {
            content_parts(list, &key(path, "content"), &["text", "refusal"], problems);
        }
        Some(other) => problems.push(
            key(path, "content"),
            wrong_type("a string, an array of content parts or null", other),
        ),
    }
    calls
}

/// `tool_calls`: function calls with ids, names and JSON-object arguments as text.
fn tool_calls(value: &Value, path: &str, problems: &mut Problems) -> Vec<(usize, String)> {
    let path = key(path, "tool_calls");
    let mut ids = Vec::new();
    let Some(calls) = array(value, &path, problems) else {
        return ids;
    };
    if calls.is_empty() {
        problems.push(
            &*path,
            "must hold at least one tool call (leave it out instead)",
        );
    }
    let mut seen = Vec::new();
    for (j, call) in calls.iter().enumerate() {
        let path = index(&path, j);
        let Some(call) = object(call, &path, problems) else {
            continue;
        };
        unknown_keys(call, &["id", "type", "function"], &path, problems);
        if let Some(id) = required(call, "id", &path, problems) {
            let id_path = key(&path, "id");
            if let Some(id) = non_empty_string(id, &id_path, problems) {
                let length = id.chars().count();
                if length > MAX_CALL_ID_CHARS {
                    problems.push(
                        &*id_path,
                        format!(
                            "string too long: at most {MAX_CALL_ID_CHARS} characters (got {length})"
                        ),
                    );
                }
                let before = seen.len();
                crate::check::unique_name(&mut seen, id, &id_path, "tool call id", problems);
                if seen.len() > before {
                    ids.push((j, id.to_owned()));
                }
            }
        }
        if let Some(kind) = required(call, "type", &path, problems) {
            crate::check::one_of(kind, &["function"], &key(&path, "type"), problems);
        }
        if let Some(function) = required(call, "function", &path, problems) {
            function_call(function, &key(&path, "function"), problems);
        }
    }
    ids
}

/// A call's `function`: a valid name, and `arguments` that are JSON text of an object.
fn function_call(value: &Value, path: &str, problems: &mut Problems) {
    let Some(function) = object(value, path, problems) else {
        return;
    };
    unknown_keys(function, &["name", "arguments"], path, problems);
    if let Some(name) = required(function, "name", path, problems) {
        tool_name(name, &key(path, "name"), problems);
    }
    let Some(arguments) = required(function, "arguments", path, problems) else {
        return;
    };
    let path = key(path, "arguments");
    let Some(text) = arguments.as_str() else {
        problems.push(
            path,
            format!(
                "must be a string (JSON text of an object), got {}",
                crate::check::kind(arguments)
            ),
        );
        return;
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(_)) => {}
        Ok(other) => problems.push(
            path,
            format!(
                "must be JSON text of an object (it holds {})",
                crate::check::kind(&other)
            ),
        ),
        Err(error) => problems.push(path, format!("must be JSON text of an object: {error}")),
    }
}
