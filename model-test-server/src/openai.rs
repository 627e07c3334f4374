//! OpenAI Chat Completions: the request checked field by field against the
//! documented schema, and the error bodies the API answers with.

use serde_json::{Map, Value, json};

use crate::check::{
    self, Problem, Problems, array, boolean, index, integer_at_least, key, non_empty_string,
    number_in, object, one_of, required, string, tool_name, unique_name, unknown_keys, wrong_type,
};

/// The request fields the API documents.
const TOP_KEYS: &[&str] = &[
    "model",
    "messages",
    "tools",
    "tool_choice",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "n",
    "stream",
    "stop",
    "parallel_tool_calls",
    "user",
    "seed",
    "response_format",
    "frequency_penalty",
    "presence_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "metadata",
    "store",
    "reasoning_effort",
    "service_tier",
    "stream_options",
];

/// The fields the API documents as nullable: `null` there means "not set".
const NULLABLE: &[&str] = &[
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "n",
    "stream",
    "stop",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "metadata",
    "store",
    "reasoning_effort",
    "service_tier",
    "stream_options",
];

/// A top-level field, with a documented-nullable field set to `null` read as absent.
fn field<'a>(body: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    body.get(name)
        .filter(|value| !(value.is_null() && NULLABLE.contains(&name)))
}

/// Every problem of a Chat Completions request body.
pub(crate) fn validate(body: &Value) -> Vec<Problem> {
    let mut problems = Problems::default();
    let Some(body) = body.as_object() else {
        problems.push("body", wrong_type("a JSON object", body));
        return problems.into_vec();
    };
    unknown_keys(body, TOP_KEYS, "", &mut problems);
    if let Some(model) = required(body, "model", "", &mut problems) {
        non_empty_string(model, "model", &mut problems);
    }
    if let Some(messages) = required(body, "messages", "", &mut problems) {
        messages::validate(messages, &mut problems);
    }
    check_token_limits(body, &mut problems);
    check_sampling(body, &mut problems);
    check_output(body, &mut problems);
    let tools = body
        .get("tools")
        .map(|tools| validate_tools(tools, &mut problems));
    check_tool_use(body, tools.as_deref(), &mut problems);
    problems.into_vec()
}

/// `max_tokens` and `max_completion_tokens`: positive, and not both.
fn check_token_limits(body: &Map<String, Value>, problems: &mut Problems) {
    let mut present = 0;
    for name in ["max_tokens", "max_completion_tokens"] {
        if let Some(value) = field(body, name) {
            present += 1;
            integer_at_least(value, 1, name, problems);
        }
    }
    if present == 2 {
        problems.push(
            "max_completion_tokens",
            "cannot be sent together with max_tokens: send one of them",
        );
    }
}

/// The sampling parameters.
fn check_sampling(body: &Map<String, Value>, problems: &mut Problems) {
    if let Some(value) = field(body, "temperature") {
        number_in(value, 0.0, 2.0, "temperature", problems);
    }
    if let Some(value) = field(body, "top_p") {
        number_in(value, 0.0, 1.0, "top_p", problems);
    }
    for name in ["frequency_penalty", "presence_penalty"] {
        if let Some(value) = field(body, name) {
            number_in(value, -2.0, 2.0, name, problems);
        }
    }
    if let Some(value) = field(body, "n") {
        integer_at_least(value, 1, "n", problems);
    }
    if let Some(value) = field(body, "seed")
        && value.as_i64().is_none()
        && value.as_u64().is_none()
    {
        problems.push("seed", wrong_type("an integer", value));
    }
    if let Some(value) = field(body, "stop") {
        check_stop(value, problems);
    }
    if let Some(value) = field(body, "logit_bias")
        && let Some(bias) = object(value, "logit_bias", problems)
    {
        for (token, weight) in bias {
            number_in(weight, -100.0, 100.0, &key("logit_bias", token), problems);
        }
    }
    let logprobs = field(body, "logprobs").and_then(|value| boolean(value, "logprobs", problems));
    if let Some(value) = field(body, "top_logprobs") {
        if let Some(n) = integer_at_least(value, 0, "top_logprobs", problems)
            && n > 20
        {
            problems.push("top_logprobs", format!("must be at most 20 (got {n})"));
        }
        if logprobs != Some(true) {
            problems.push("top_logprobs", "requires logprobs to be true");
        }
    }
}

/// `stop`: a string or up to 4 strings.
fn check_stop(value: &Value, problems: &mut Problems) {
    match value {
        Value::String(_) => {}
        Value::Array(stops) => {
            if stops.len() > 4 {
                problems.push(
                    "stop",
                    format!("must hold at most 4 sequences (got {})", stops.len()),
                );
            }
            for (i, stop) in stops.iter().enumerate() {
                string(stop, &index("stop", i), problems);
            }
        }
        other => problems.push("stop", wrong_type("a string or an array of strings", other)),
    }
}

/// Streaming, response format and the fields about the account.
fn check_output(body: &Map<String, Value>, problems: &mut Problems) {
    let stream = field(body, "stream").and_then(|value| boolean(value, "stream", problems));
    if stream == Some(true) {
        problems.push("stream", "must be false: this test server does not stream");
    }
    if field(body, "stream_options").is_some() {
        problems.push("stream_options", "only allowed when stream is true");
    }
    if let Some(value) = body.get("user") {
        string(value, "user", problems);
    }
    if let Some(value) = field(body, "store") {
        boolean(value, "store", problems);
    }
    if let Some(value) = field(body, "metadata")
        && let Some(metadata) = object(value, "metadata", problems)
    {
        for (name, entry) in metadata {
            string(entry, &key("metadata", name), problems);
        }
    }
    if let Some(value) = field(body, "reasoning_effort") {
        let efforts = ["none", "minimal", "low", "medium", "high", "xhigh"];
        one_of(value, &efforts, "reasoning_effort", problems);
    }
    if let Some(value) = field(body, "service_tier") {
        let tiers = ["auto", "default", "flex", "scale", "priority"];
        one_of(value, &tiers, "service_tier", problems);
    }
    if let Some(value) = body.get("response_format") {
        check_response_format(value, problems);
    }
}

/// `response_format`: `text`, `json_object` or `json_schema` with its schema.
fn check_response_format(value: &Value, problems: &mut Problems) {
    let path = "response_format";
    let Some(format) = object(value, path, problems) else {
        return;
    };
    let Some(kind) = required(format, "type", path, problems) else {
        return;
    };
    match kind.as_str() {
        Some("text" | "json_object") => unknown_keys(format, &["type"], path, problems),
        Some("json_schema") => {
            unknown_keys(format, &["type", "json_schema"], path, problems);
            let schema_path = key(path, "json_schema");
            let Some(schema) = required(format, "json_schema", path, problems)
                .and_then(|schema| object(schema, &schema_path, problems))
            else {
                return;
            };
            let allowed = ["name", "description", "schema", "strict"];
            unknown_keys(schema, &allowed, &schema_path, problems);
            if let Some(name) = required(schema, "name", &schema_path, problems) {
                tool_name(name, &key(&schema_path, "name"), problems);
            }
        }
        _ => one_of(
            kind,
            &["text", "json_object", "json_schema"],
            &key(path, "type"),
            problems,
        ),
    }
}

/// `tools`: function tools with unique, well-formed names; returns the names.
fn validate_tools(value: &Value, problems: &mut Problems) -> Vec<String> {
    let mut seen = Vec::new();
    let Some(tools) = array(value, "tools", problems) else {
        return Vec::new();
    };
    if tools.is_empty() {
        problems.push(
            "tools",
            "must hold at least one tool (leave it out instead)",
        );
    }
    for (i, tool) in tools.iter().enumerate() {
        let path = index("tools", i);
        let Some(tool) = object(tool, &path, problems) else {
            continue;
        };
        unknown_keys(tool, &["type", "function"], &path, problems);
        if let Some(kind) = required(tool, "type", &path, problems) {
            one_of(kind, &["function"], &key(&path, "type"), problems);
        }
        let function_path = key(&path, "function");
        let Some(function) = required(tool, "function", &path, problems)
            .and_then(|function| object(function, &function_path, problems))
        else {
            continue;
        };
        let allowed = ["name", "description", "parameters", "strict"];
        unknown_keys(function, &allowed, &function_path, problems);
        if let Some(name) = required(function, "name", &function_path, problems) {
            let name_path = key(&function_path, "name");
            if let Some(name) = tool_name(name, &name_path, problems) {
                unique_name(&mut seen, name, &name_path, "tool name", problems);
            }
        }
        if let Some(description) = function.get("description") {
            string(description, &key(&function_path, "description"), problems);
        }
        if let Some(parameters) = function.get("parameters") {
            object(parameters, &key(&function_path, "parameters"), problems);
        }
        if let Some(strict) = function.get("strict") {
            boolean(strict, &key(&function_path, "strict"), problems);
        }
    }
    seen.into_iter().map(|(name, _)| name).collect()
}

/// `tool_choice` and `parallel_tool_calls`, which need `tools`.
fn check_tool_use(body: &Map<String, Value>, tools: Option<&[String]>, problems: &mut Problems) {
    if let Some(value) = body.get("parallel_tool_calls") {
        boolean(value, "parallel_tool_calls", problems);
        if tools.is_none() {
            problems.push(
                "parallel_tool_calls",
                "only allowed when tools are specified",
            );
        }
    }
    let Some(choice) = body.get("tool_choice") else {
        return;
    };
    if tools.is_none() {
        problems.push("tool_choice", "only allowed when tools are specified");
    }
    match choice {
        Value::String(mode) if ["none", "auto", "required"].contains(&mode.as_str()) => {}
        Value::Object(choice) => {
            unknown_keys(choice, &["type", "function"], "tool_choice", problems);
            if let Some(kind) = required(choice, "type", "tool_choice", problems) {
                one_of(kind, &["function"], "tool_choice.type", problems);
            }
            let Some(function) = required(choice, "function", "tool_choice", problems)
                .and_then(|function| object(function, "tool_choice.function", problems))
            else {
                return;
            };
            unknown_keys(function, &["name"], "tool_choice.function", problems);
            let path = "tool_choice.function.name";
            let name = required(function, "name", "tool_choice.function", problems)
                .and_then(|name| string(name, path, problems));
            if let (Some(name), Some(tools)) = (name, tools)
                && !tools.iter().any(|tool| tool == name) {
                    problems.push(path, format!("`{name}` is not the name of a tool in tools"));
                }
        }
        other => problems.push(
            "tool_choice",
            format!(
                "must be \"none\", \"auto\", \"required\" or {{\"type\":\"function\",\"function\":{{\"name\":...}}}} (got {})",
                check::kind(other)
            ),
        ),
    }
}

/// The messages, one by one and as a conversation.
mod messages {
    use serde_json::{Map, Value};

    use crate::check::{
        Problems, array, index, key, non_empty_string, object, required, string, tool_name,
        unknown_keys, wrong_type,
    };

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
                        format!("must be one of system, developer, user, assistant, tool (got `{other}`)"),
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
                        crate::check::one_of(
                            detail,
                            &details,
                            &key(&inner_path, "detail"),
                            problems,
                        );
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
        let excused = message.contains_key("tool_calls")
            || message.get("refusal").is_some_and(Value::is_string);
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
}

/// An error body in the API's shape.
pub(crate) fn error_body(
    message: &str,
    kind: &str,
    param: Option<&str>,
    code: Option<&str>,
) -> Value {
    json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
}

/// The 400 for a request with problems; `param` names the first problem's field.
pub(crate) fn invalid_request(problems: &[Problem]) -> Value {
    let message = problems
        .iter()
        .map(Problem::render)
        .collect::<Vec<_>>()
        .join("; ");
    let param = problems
        .first()
        .filter(|problem| problem.is_field())
        .map(|problem| problem.path.as_str());
    error_body(&message, "invalid_request_error", param, None)
}

/// The 401 for a missing or wrong key; `sent` is the key the request carried.
pub(crate) fn invalid_key(sent: Option<&str>) -> Value {
    let message = match sent {
        None => "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).".to_owned(),
        Some(key) => format!(
            "Incorrect API key provided: {}. You can find your API key at https://platform.openai.com/account/api-keys.",
            mask_key(key)
        ),
    };
    error_body(
        &message,
        "invalid_request_error",
        None,
        Some("invalid_api_key"),
    )
}

/// The 404 for a model that does not exist.
pub(crate) fn model_not_found(model: &str) -> Value {
    error_body(
        &format!("The model `{model}` does not exist or you do not have access to it."),
        "invalid_request_error",
        None,
        Some("model_not_found"),
    )
}

/// A key as the API shows it back: its first three and last four characters.
pub(crate) fn mask_key(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() < 12 {
        return "***".to_owned();
    }
    let head: String = chars[..3].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}...{tail}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::{Value, json};

    use super::*;

    fn problems(body: &Value) -> Vec<String> {
        validate(body).iter().map(Problem::render).collect()
    }

    fn call(id: &str, arguments: &Value) -> Value {
        json!({"id": id, "type": "function", "function": {"name": "get_weather", "arguments": arguments}})
    }

    #[test]
    fn a_full_tool_round_passes() {
        let body = json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
                {"role": "assistant", "content": null, "tool_calls": [
                    call("call_1", &json!("{\"city\":\"Paris\"}")),
                    call("call_2", &json!("{\"city\":\"Rome\"}")),
                ]},
                {"role": "tool", "tool_call_id": "call_2", "content": "rain"},
                {"role": "tool", "tool_call_id": "call_1", "content": "sun"},
                {"role": "assistant", "content": "Sun in Paris, rain in Rome."},
                {"role": "user", "content": "Thanks"}
            ],
            "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}, "strict": true}}],
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "max_completion_tokens": 100,
            "temperature": 0.2,
            "seed": null
        });
        assert_eq!(problems(&body), Vec::<String>::new());
    }

    #[test]
    fn arguments_must_be_json_text_of_an_object() {
        let body = json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [call("a", &json!({"city": "Paris"})), call("b", &json!("[1]")), call("c", &json!("{oops"))]},
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "tool", "tool_call_id": "b", "content": "x"},
            {"role": "tool", "tool_call_id": "c", "content": "x"}
        ]});
        let found = problems(&body);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(
            found[0],
            "messages[1].tool_calls[0].function.arguments: must be a string (JSON text of an object), got object"
        );
        assert!(found[1].starts_with("messages[1].tool_calls[1].function.arguments: must be JSON text of an object (it holds array)"));
        assert!(found[2].starts_with(
            "messages[1].tool_calls[2].function.arguments: must be JSON text of an object:"
        ));
    }

    #[test]
    fn tool_messages_answer_each_call_exactly_once() {
        let body = json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [call("a", &json!("{}")), call("b", &json!("{}"))]},
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "tool", "tool_call_id": "zzz", "content": "x"},
            {"role": "user", "content": "and?"},
            {"role": "tool", "tool_call_id": "b", "content": "late"}
        ]});
        let found = problems(&body);
        assert_eq!(
            found,
            vec![
                "messages[3].tool_call_id: tool call `a` of messages[1] is answered more than once",
                "messages[4].tool_call_id: `zzz` is not the id of a tool call of messages[1]",
                "messages[1].tool_calls[1]: tool call `b` is not answered by a tool message before the next non-tool message",
                "messages[6].tool_call_id: `b` answers no tool call: a tool message must follow an assistant message with tool_calls, or another tool message",
            ]
        );
    }

    #[test]
    fn unanswered_calls_at_the_end_are_problems() {
        let body = json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [call("a", &json!("{}"))]}
        ]});
        assert_eq!(
            problems(&body),
            vec![
                "messages[1].tool_calls[0]: tool call `a` is not answered by a tool message before the next non-tool message"
            ]
        );
    }

    #[test]
    fn top_level_rules() {
        let body = json!({
            "model": "",
            "messages": [],
            "max_tokens": 0,
            "max_completion_tokens": 10,
            "stream": true,
            "frobnicate": 1,
            "tool_choice": "auto",
            "tools": [
                {"type": "function", "function": {"name": "a b"}},
                {"type": "function", "function": {"name": "x"}},
                {"type": "function", "function": {"name": "x", "extra": 1}}
            ]
        });
        let found = problems(&body);
        for expected in [
            "frobnicate: unknown field",
            "model: must not be empty",
            "messages: must hold at least one message",
            "max_tokens: must be at least 1 (got 0)",
            "max_completion_tokens: cannot be sent together with max_tokens: send one of them",
            "stream: must be false: this test server does not stream",
            "tools[0].function.name: `a b` does not match ^[a-zA-Z0-9_-]{1,64}$",
            "tools[2].function.extra: unknown field",
            "tools[2].function.name: duplicate tool name `x` (also at tools[1].function.name)",
        ] {
            assert!(
                found.iter().any(|p| p == expected),
                "{expected} not in {found:?}"
            );
        }
        assert_eq!(found.len(), 9, "{found:?}");
    }

    #[test]
    fn message_shapes() {
        let body = json!({"model": "m", "messages": [
            {"role": "robot", "content": "beep"},
            {"role": "user"},
            {"role": "user", "content": "x", "tool_call_id": "y"},
            {"role": "assistant"},
            {"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": "u"}}]},
            {"role": "assistant", "tool_calls": [{"id": "", "type": "tool", "function": {"name": "f", "arguments": "{}"}, "x": 1}]}
        ], "tool_choice": {"type": "function", "function": {"name": "f"}}});
        let found = problems(&body);
        for expected in [
            "messages[0].role: must be one of system, developer, user, assistant, tool (got `robot`)",
            "messages[1].content: required",
            "messages[2].tool_call_id: unknown field",
            "messages[3].content: required unless tool_calls is present",
            "messages[4].content[0].type: must be one of text, refusal here (got `image_url`)",
            "messages[5].tool_calls[0].x: unknown field",
            "messages[5].tool_calls[0].id: must not be empty",
            "messages[5].tool_calls[0].type: must be one of function (got `tool`)",
            "tool_choice: only allowed when tools are specified",
        ] {
            assert!(
                found.iter().any(|p| p == expected),
                "{expected} not in {found:?}"
            );
        }
    }

    #[test]
    fn keys_are_masked() {
        assert_eq!(mask_key("sk-test-1234abcd"), "sk-...abcd");
        assert_eq!(mask_key("short"), "***");
        let body = invalid_key(Some("sk-secret-0000wxyz"));
        let message = body["error"]["message"].as_str().unwrap();
        assert!(!message.contains("sk-secret-0000wxyz"));
        assert!(message.contains("sk-...wxyz"));
    }
}
