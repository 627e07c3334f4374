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

/// Fields OpenAI-compatible servers other than OpenAI take, which a client
/// sends only when its host asks: OpenRouter's `provider` routing and
/// `reasoning`, vLLM's and SGLang's `chat_template_kwargs`, and the sampling
/// knobs of vLLM and llama.cpp (`top_k`, `min_p`, `repetition_penalty`).
/// Each is checked for its type; any other field is unknown.
const EXTENSION_KEYS: &[&str] = &[
    "provider",
    "reasoning",
    "chat_template_kwargs",
    "top_k",
    "min_p",
    "repetition_penalty",
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
    let known: Vec<&str> = TOP_KEYS.iter().chain(EXTENSION_KEYS).copied().collect();
    unknown_keys(body, &known, "", &mut problems);
    if let Some(model) = required(body, "model", "", &mut problems) {
        non_empty_string(model, "model", &mut problems);
    }
    if let Some(messages) = required(body, "messages", "", &mut problems) {
        messages::validate(messages, &mut problems);
    }
    check_token_limits(body, &mut problems);
    check_sampling(body, &mut problems);
    check_output(body, &mut problems);
    check_extensions(body, &mut problems);
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
    if let Some(value) = field(body, "stream_options") {
        if stream != Some(true) {
            problems.push("stream_options", "only allowed when stream is true");
        }
        if let Some(options) = object(value, "stream_options", problems) {
            let allowed = ["include_usage", "include_obfuscation"];
            unknown_keys(options, &allowed, "stream_options", problems);
            for name in allowed {
                if let Some(flag) = options.get(name) {
                    boolean(flag, &key("stream_options", name), problems);
                }
            }
        }
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

/// The fields of other OpenAI-compatible servers ([`EXTENSION_KEYS`]): each
/// of the type its server documents.
fn check_extensions(body: &Map<String, Value>, problems: &mut Problems) {
    for name in ["provider", "reasoning", "chat_template_kwargs"] {
        if let Some(value) = body.get(name) {
            object(value, name, problems);
        }
    }
    if let Some(value) = body.get("top_k") {
        // vLLM takes -1 for "every token".
        integer_at_least(value, -1, "top_k", problems);
    }
    if let Some(value) = body.get("min_p") {
        number_in(value, 0.0, 1.0, "min_p", problems);
    }
    if let Some(value) = body.get("repetition_penalty") {
        match value.as_f64() {
            Some(n) if n > 0.0 => {}
            Some(n) => problems.push(
                "repetition_penalty",
                format!("must be greater than 0 (got {n})"),
            ),
            None => problems.push("repetition_penalty", wrong_type("a number", value)),
        }
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
            let parameters_path = key(&function_path, "parameters");
            if let Some(schema) = object(parameters, &parameters_path, problems) {
                match schema.get("type").and_then(Value::as_str) {
                    Some("object") => {
                        if !schema.get("properties").is_some_and(Value::is_object) {
                            problems.push(
                                parameters_path,
                                "invalid_function_parameters: object schema missing properties",
                            );
                        }
                    }
                    _ => problems.push(
                        key(&parameters_path, "type"),
                        "invalid_function_parameters: schema must be a JSON Schema of 'type: \"object\"'",
                    ),
                }
            }
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
mod messages;

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
mod tests;
