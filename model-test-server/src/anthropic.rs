//! Anthropic Messages: the request checked field by field against the
//! documented schema, and the error bodies the API answers with.

use serde_json::{Map, Value, json};

use crate::check::{
    Problem, Problems, array, boolean, index, integer_at_least, key, non_empty_string, number_in,
    object, one_of, required, string, tool_name, unique_name, unknown_keys, wrong_type,
};

/// The request fields the API documents.
const TOP_KEYS: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "system",
    "tools",
    "tool_choice",
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "stream",
    "metadata",
    "thinking",
    "service_tier",
];

/// The `anthropic-version` values the API knows.
const VERSIONS: &[&str] = &["2023-06-01", "2023-01-01"];

/// Every problem of a Messages request: its `anthropic-version` header and its body.
pub(crate) fn validate(version: Option<&str>, body: &Value) -> Vec<Problem> {
    let mut problems = Problems::default();
    match version {
        None => problems.push(
            "header anthropic-version",
            "required (for example 2023-06-01)",
        ),
        Some(version) if !VERSIONS.contains(&version) => problems.push(
            "header anthropic-version",
            format!(
                "`{version}` is not a valid version (use one of {})",
                VERSIONS.join(", ")
            ),
        ),
        Some(_) => {}
    }
    let Some(body) = body.as_object() else {
        problems.push("body", wrong_type("a JSON object", body));
        return problems.into_vec();
    };
    unknown_keys(body, TOP_KEYS, "", &mut problems);
    if let Some(model) = required(body, "model", "", &mut problems) {
        non_empty_string(model, "model", &mut problems);
    }
    let max_tokens = required(body, "max_tokens", "", &mut problems)
        .and_then(|value| integer_at_least(value, 1, "max_tokens", &mut problems));
    let tool_blocks = required(body, "messages", "", &mut problems)
        .is_some_and(|messages| messages::validate(messages, &mut problems));
    if let Some(system) = body.get("system")
        && !system.is_string()
    {
        blocks::text_list(system, "system", &mut problems);
    }
    check_sampling(body, &mut problems);
    check_thinking(body, max_tokens, &mut problems);
    let tools = body
        .get("tools")
        .map(|tools| validate_tools(tools, &mut problems));
    if let Some(choice) = body.get("tool_choice") {
        check_tool_choice(choice, tools.as_deref(), &mut problems);
        let forced = choice
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|kind| matches!(kind, "any" | "tool"));
        let thinking = body
            .get("thinking")
            .and_then(|thinking| thinking.get("type"))
            .and_then(Value::as_str)
            == Some("enabled");
        if forced && thinking {
            problems.push(
                "tool_choice.type",
                "Thinking may not be enabled when tool_choice forces tool use: use auto or none",
            );
        }
    }
    if tool_blocks && tools.as_ref().is_none_or(Vec::is_empty) {
        problems.push(
            "tools",
            "Requests which include `tool_use` or `tool_result` blocks must define tools.",
        );
    }
    problems.into_vec()
}

/// Sampling, stop sequences, streaming, metadata and the service tier.
fn check_sampling(body: &Map<String, Value>, problems: &mut Problems) {
    if let Some(value) = body.get("temperature") {
        number_in(value, 0.0, 1.0, "temperature", problems);
    }
    if let Some(value) = body.get("top_p") {
        number_in(value, 0.0, 1.0, "top_p", problems);
    }
    if let Some(value) = body.get("top_k") {
        integer_at_least(value, 0, "top_k", problems);
    }
    if let Some(stops) = body
        .get("stop_sequences")
        .and_then(|value| array(value, "stop_sequences", problems))
    {
        for (i, stop) in stops.iter().enumerate() {
            let path = index("stop_sequences", i);
            if string(stop, &path, problems).is_some_and(|stop| stop.trim().is_empty()) {
                problems.push(path, "must contain non-whitespace characters");
            }
        }
    }
    if body.contains_key("temperature") && body.contains_key("top_p") {
        // Claude Sonnet 4.5 and later refuse the pair; earlier models take it.
        problems.push(
            "top_p",
            "`temperature` and `top_p` cannot both be specified: send one of them",
        );
    }
    if let Some(value) = body.get("stream") {
        boolean(value, "stream", problems);
    }
    if let Some(metadata) = body
        .get("metadata")
        .and_then(|value| object(value, "metadata", problems))
    {
        unknown_keys(metadata, &["user_id"], "metadata", problems);
        if let Some(user) = metadata.get("user_id").filter(|user| !user.is_null()) {
            string(user, "metadata.user_id", problems);
        }
    }
    if let Some(value) = body.get("service_tier") {
        one_of(value, &["auto", "standard_only"], "service_tier", problems);
    }
}

/// `thinking`: enabled with a budget of at least 1024 tokens below `max_tokens`, or disabled.
fn check_thinking(body: &Map<String, Value>, max_tokens: Option<i64>, problems: &mut Problems) {
    let Some(thinking) = body
        .get("thinking")
        .and_then(|value| object(value, "thinking", problems))
    else {
        return;
    };
    let Some(kind) = required(thinking, "type", "thinking", problems) else {
        return;
    };
    match kind.as_str() {
        Some("enabled") => {
            unknown_keys(thinking, &["type", "budget_tokens"], "thinking", problems);
            let budget =
                required(thinking, "budget_tokens", "thinking", problems).and_then(|value| {
                    integer_at_least(value, 1024, "thinking.budget_tokens", problems)
                });
            if let (Some(budget), Some(max_tokens)) = (budget, max_tokens)
                && budget >= max_tokens
            {
                problems.push(
                    "thinking.budget_tokens",
                    format!("must be less than max_tokens ({max_tokens})"),
                );
            }
        }
        Some("disabled") => unknown_keys(thinking, &["type"], "thinking", problems),
        _ => one_of(kind, &["enabled", "disabled"], "thinking.type", problems),
    }
}

/// `tools`: client tools with unique names and an object input schema; returns the names.
fn validate_tools(value: &Value, problems: &mut Problems) -> Vec<String> {
    let mut seen = Vec::new();
    let Some(tools) = array(value, "tools", problems) else {
        return Vec::new();
    };
    for (i, tool) in tools.iter().enumerate() {
        let path = index("tools", i);
        let Some(tool) = object(tool, &path, problems) else {
            continue;
        };
        let allowed = [
            "type",
            "name",
            "description",
            "input_schema",
            "cache_control",
        ];
        unknown_keys(tool, &allowed, &path, problems);
        if let Some(kind) = tool.get("type") {
            one_of(kind, &["custom"], &key(&path, "type"), problems);
        }
        if let Some(name) = required(tool, "name", &path, problems) {
            let name_path = key(&path, "name");
            if let Some(name) = tool_name(name, &name_path, problems) {
                unique_name(&mut seen, name, &name_path, "tool name", problems);
            }
        }
        if let Some(description) = tool.get("description") {
            string(description, &key(&path, "description"), problems);
        }
        let schema_path = key(&path, "input_schema");
        if let Some(schema) = required(tool, "input_schema", &path, problems)
            .and_then(|schema| object(schema, &schema_path, problems))
            && schema.get("type").and_then(Value::as_str) != Some("object")
        {
            problems.push(
                key(&schema_path, "type"),
                "required, and must be \"object\"",
            );
        }
        if let Some(cache) = tool.get("cache_control") {
            blocks::cache_control(cache, &key(&path, "cache_control"), problems);
        }
    }
    seen.into_iter().map(|(name, _)| name).collect()
}

/// `tool_choice`: auto, any or none, or one named tool.
fn check_tool_choice(value: &Value, tools: Option<&[String]>, problems: &mut Problems) {
    let path = "tool_choice";
    if tools.is_none() {
        problems.push(path, "only allowed when tools are specified");
    }
    let Some(choice) = object(value, path, problems) else {
        return;
    };
    let Some(kind) = required(choice, "type", path, problems) else {
        return;
    };
    match kind.as_str() {
        Some("auto" | "any") => {
            unknown_keys(
                choice,
                &["type", "disable_parallel_tool_use"],
                path,
                problems,
            );
        }
        Some("none") => unknown_keys(choice, &["type"], path, problems),
        Some("tool") => {
            let allowed = ["type", "name", "disable_parallel_tool_use"];
            unknown_keys(choice, &allowed, path, problems);
            let name = required(choice, "name", path, problems)
                .and_then(|name| string(name, "tool_choice.name", problems));
            if let (Some(name), Some(tools)) = (name, tools)
                && !tools.iter().any(|tool| tool == name)
            {
                problems.push(
                    "tool_choice.name",
                    format!("`{name}` is not the name of a tool in tools"),
                );
            }
        }
        _ => {
            one_of(
                kind,
                &["auto", "any", "none", "tool"],
                "tool_choice.type",
                problems,
            );
            return;
        }
    }
    if let Some(flag) = choice.get("disable_parallel_tool_use") {
        boolean(flag, "tool_choice.disable_parallel_tool_use", problems);
    }
}

/// Content blocks, each checked by its type and the role of its message.
mod blocks;

/// The messages, one by one and as a conversation.
mod messages;

/// An error body in the API's shape.
pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// The 400 for a request with problems.
pub(crate) fn invalid_request(problems: &[Problem]) -> Value {
    let message = problems
        .iter()
        .map(Problem::render)
        .collect::<Vec<_>>()
        .join("; ");
    error_body("invalid_request_error", &message)
}

/// The 401 for a missing or wrong `x-api-key`.
pub(crate) fn invalid_key(sent: Option<&str>) -> Value {
    match sent {
        None => error_body("authentication_error", "x-api-key header is required"),
        Some(_) => error_body("authentication_error", "invalid x-api-key"),
    }
}

/// The 404 for a model that does not exist.
pub(crate) fn model_not_found(model: &str) -> Value {
    error_body("not_found_error", &format!("model: {model}"))
}

#[cfg(test)]
mod tests;
