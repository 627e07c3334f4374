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
    if let Some(messages) = required(body, "messages", "", &mut problems) {
        messages::validate(messages, &mut problems);
    }
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
    if let Some(value) = body.get("stream")
        && boolean(value, "stream", problems) == Some(true)
    {
        problems.push("stream", "must be false: this test server does not stream");
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
mod blocks {
    use serde_json::{Map, Value};

    use crate::check::{
        Problems, array, boolean, index, is_id, key, object, one_of, required, string, tool_name,
        unknown_keys,
    };

    /// What a block is, as far as the conversation checks care.
    pub(super) enum Block {
        /// A text or image block.
        Content,
        /// A `tool_use` with its id.
        ToolUse(String),
        /// A `tool_result` answering this id.
        ToolResult(String),
        /// Thinking, or a block too broken to tell.
        Other,
    }

    /// One block of a message with `role`.
    pub(super) fn block(value: &Value, role: &str, path: &str, problems: &mut Problems) -> Block {
        let Some(block) = object(value, path, problems) else {
            return Block::Other;
        };
        let Some(kind) = required(block, "type", path, problems)
            .and_then(|kind| string(kind, &key(path, "type"), problems))
        else {
            return Block::Other;
        };
        match (role, kind) {
            (_, "text") => {
                text(block, path, problems);
                Block::Content
            }
            ("user", "image") => {
                image(block, path, problems);
                Block::Content
            }
            ("assistant", "tool_use") => tool_use(block, path, problems),
            ("user", "tool_result") => tool_result(block, path, problems),
            ("assistant", "thinking") => {
                unknown_keys(block, &["type", "thinking", "signature"], path, problems);
                for field in ["thinking", "signature"] {
                    if let Some(value) = required(block, field, path, problems) {
                        string(value, &key(path, field), problems);
                    }
                }
                Block::Other
            }
            ("assistant", "redacted_thinking") => {
                unknown_keys(block, &["type", "data"], path, problems);
                if let Some(data) = required(block, "data", path, problems) {
                    string(data, &key(path, "data"), problems);
                }
                Block::Other
            }
            ("user", "tool_use" | "thinking" | "redacted_thinking")
            | ("assistant", "tool_result" | "image") => {
                problems.push(
                    key(path, "type"),
                    format!("`{kind}` blocks are not allowed in {role} messages"),
                );
                Block::Other
            }
            _ => {
                problems.push(key(path, "type"), format!("unknown block type `{kind}`"));
                Block::Other
            }
        }
    }

    /// A text block: non-empty `text`.
    pub(super) fn text(block: &Map<String, Value>, path: &str, problems: &mut Problems) {
        let allowed = ["type", "text", "cache_control", "citations"];
        unknown_keys(block, &allowed, path, problems);
        if let Some(text) = required(block, "text", path, problems) {
            let text_path = key(path, "text");
            if string(text, &text_path, problems).is_some_and(str::is_empty) {
                problems.push(text_path, "text content blocks must be non-empty");
            }
        }
        if let Some(citations) = block.get("citations").filter(|value| !value.is_null()) {
            array(citations, &key(path, "citations"), problems);
        }
        if let Some(cache) = block.get("cache_control") {
            cache_control(cache, &key(path, "cache_control"), problems);
        }
    }

    /// A list of text blocks (`system`, a tool result's `content`).
    pub(super) fn text_list(value: &Value, path: &str, problems: &mut Problems) {
        let Some(list) = array(value, path, problems) else {
            return;
        };
        for (i, item) in list.iter().enumerate() {
            text_item(item, &index(path, i), problems);
        }
    }

    /// An item of a list of text blocks.
    fn text_item(item: &Value, path: &str, problems: &mut Problems) {
        let Some(block) = object(item, path, problems) else {
            return;
        };
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text(block, path, problems),
            _ => problems.push(key(path, "type"), "must be \"text\""),
        }
    }

    /// An image block: a `source` of a known type.
    fn image(block: &Map<String, Value>, path: &str, problems: &mut Problems) {
        unknown_keys(block, &["type", "source", "cache_control"], path, problems);
        let source_path = key(path, "source");
        if let Some(source) = required(block, "source", path, problems)
            .and_then(|source| object(source, &source_path, problems))
            && let Some(kind) = required(source, "type", &source_path, problems)
        {
            let kinds = ["base64", "url", "file"];
            one_of(kind, &kinds, &key(&source_path, "type"), problems);
        }
        if let Some(cache) = block.get("cache_control") {
            cache_control(cache, &key(path, "cache_control"), problems);
        }
    }

    /// A tool_use block: a well-formed id and name, and an object input.
    fn tool_use(block: &Map<String, Value>, path: &str, problems: &mut Problems) -> Block {
        let allowed = ["type", "id", "name", "input", "cache_control"];
        unknown_keys(block, &allowed, path, problems);
        if let Some(name) = required(block, "name", path, problems) {
            tool_name(name, &key(path, "name"), problems);
        }
        if let Some(input) = required(block, "input", path, problems) {
            object(input, &key(path, "input"), problems);
        }
        if let Some(cache) = block.get("cache_control") {
            cache_control(cache, &key(path, "cache_control"), problems);
        }
        let id_path = key(path, "id");
        match required(block, "id", path, problems).and_then(|id| string(id, &id_path, problems)) {
            Some(id) if is_id(id) => Block::ToolUse(id.to_owned()),
            Some(id) => {
                problems.push(id_path, format!("`{id}` does not match ^[a-zA-Z0-9_-]+$"));
                Block::Other
            }
            None => Block::Other,
        }
    }

    /// A tool_result block: the id it answers, and optional content and error flag.
    fn tool_result(block: &Map<String, Value>, path: &str, problems: &mut Problems) -> Block {
        let allowed = [
            "type",
            "tool_use_id",
            "content",
            "is_error",
            "cache_control",
        ];
        unknown_keys(block, &allowed, path, problems);
        if let Some(content) = block.get("content") {
            let content_path = key(path, "content");
            if let Some(list) = content.as_array() {
                for (i, item) in list.iter().enumerate() {
                    let item_path = index(&content_path, i);
                    match item.as_object() {
                        Some(block)
                            if block.get("type").and_then(Value::as_str) == Some("image") =>
                        {
                            image(block, &item_path, problems);
                        }
                        _ => text_item(item, &item_path, problems),
                    }
                }
            } else if !content.is_string() {
                problems.push(
                    content_path,
                    crate::check::wrong_type("a string or an array of content blocks", content),
                );
            }
        }
        if let Some(flag) = block.get("is_error") {
            boolean(flag, &key(path, "is_error"), problems);
        }
        if let Some(cache) = block.get("cache_control") {
            cache_control(cache, &key(path, "cache_control"), problems);
        }
        let id_path = key(path, "tool_use_id");
        match required(block, "tool_use_id", path, problems)
            .and_then(|id| string(id, &id_path, problems))
        {
            Some(id) => Block::ToolResult(id.to_owned()),
            None => Block::Other,
        }
    }

    /// `cache_control`: `{"type":"ephemeral"}` with an optional `ttl`.
    pub(super) fn cache_control(value: &Value, path: &str, problems: &mut Problems) {
        let Some(cache) = object(value, path, problems) else {
            return;
        };
        unknown_keys(cache, &["type", "ttl"], path, problems);
        if let Some(kind) = required(cache, "type", path, problems) {
            one_of(kind, &["ephemeral"], &key(path, "type"), problems);
        }
        if let Some(ttl) = cache.get("ttl") {
            one_of(ttl, &["5m", "1h"], &key(path, "ttl"), problems);
        }
    }
}

/// The messages, one by one and as a conversation.
mod messages {
    use serde_json::{Map, Value};

    use super::blocks::{self, Block};
    use crate::check::{
        Problems, array, index, key, object, required, string, unknown_keys, wrong_type,
    };

    /// What the conversation checks need from one message.
    #[derive(Default)]
    struct Turn {
        role: Option<String>,
        /// Each tool_use's id and path.
        tool_uses: Vec<(String, String)>,
        /// Each tool_result's id and path (of its `tool_use_id`).
        tool_results: Vec<(String, String)>,
    }

    /// `messages`: alternating turns from the user first, whose tool uses are answered.
    pub(super) fn validate(value: &Value, problems: &mut Problems) {
        let Some(messages) = array(value, "messages", problems) else {
            return;
        };
        if messages.is_empty() {
            problems.push("messages", "must hold at least one message");
        }
        let last = messages.len().saturating_sub(1);
        let mut turns = Vec::with_capacity(messages.len());
        for (i, message) in messages.iter().enumerate() {
            let path = index("messages", i);
            let turn = object(message, &path, problems)
                .map(|message| turn(message, &path, i == last, problems))
                .unwrap_or_default();
            if let Some(role) = &turn.role {
                if i == 0 && role != "user" {
                    problems.push(key(&path, "role"), "the first message must have role user");
                }
                let previous = turns.last().and_then(|turn: &Turn| turn.role.as_deref());
                if previous == Some(role.as_str()) {
                    problems.push(
                        key(&path, "role"),
                        format!(
                            "roles must alternate, but messages[{}] has role {role} too",
                            i - 1
                        ),
                    );
                }
            }
            turns.push(turn);
        }
        pair_tools(&turns, problems);
    }

    /// One message: its role and content.
    fn turn(
        message: &Map<String, Value>,
        path: &str,
        is_last: bool,
        problems: &mut Problems,
    ) -> Turn {
        unknown_keys(message, &["role", "content"], path, problems);
        let role = required(message, "role", path, problems)
            .and_then(|role| string(role, &key(path, "role"), problems));
        let role = match role {
            Some(role @ ("user" | "assistant")) => role,
            Some(other) => {
                problems.push(
                    key(path, "role"),
                    format!("must be user or assistant (got `{other}`)"),
                );
                return Turn::default();
            }
            None => return Turn::default(),
        };
        let mut turn = Turn {
            role: Some(role.to_owned()),
            ..Turn::default()
        };
        let Some(content) = required(message, "content", path, problems) else {
            return turn;
        };
        let content_path = key(path, "content");
        let prefill = is_last && role == "assistant";
        match content {
            Value::String(text) => {
                if text.is_empty() && !prefill {
                    problems.push(
                        content_path,
                        "must be non-empty (only a final assistant message may be empty)",
                    );
                } else if prefill && text.ends_with(char::is_whitespace) {
                    problems.push(
                        content_path,
                        "final assistant content cannot end with trailing whitespace",
                    );
                }
            }
            Value::Array(list) => {
                content_blocks(list, role, &content_path, prefill, &mut turn, problems);
            }
            other => problems.push(
                content_path,
                wrong_type("a string or an array of content blocks", other),
            ),
        }
        turn
    }

    /// The blocks of an array `content`, recorded into `turn`.
    fn content_blocks(
        list: &[Value],
        role: &str,
        path: &str,
        prefill: bool,
        turn: &mut Turn,
        problems: &mut Problems,
    ) {
        if list.is_empty() && !prefill {
            problems.push(
                path,
                "must hold at least one block (only a final assistant message may be empty)",
            );
        }
        let mut first_content: Option<usize> = None;
        for (j, item) in list.iter().enumerate() {
            let block_path = index(path, j);
            match blocks::block(item, role, &block_path, problems) {
                Block::Content => {
                    first_content.get_or_insert(j);
                }
                Block::ToolUse(id) => {
                    let id_path = key(&block_path, "id");
                    if let Some((_, first)) = turn.tool_uses.iter().find(|(seen, _)| *seen == id) {
                        problems.push(
                            id_path,
                            format!("duplicate tool_use id `{id}` (also at {first})"),
                        );
                    } else {
                        turn.tool_uses.push((id, id_path));
                    }
                }
                Block::ToolResult(id) => {
                    if let Some(k) = first_content {
                        problems.push(
                            block_path.clone(),
                            format!("tool_result blocks must come before any text block in the message (content[{k}] comes first)"),
                        );
                    }
                    turn.tool_results
                        .push((id, key(&block_path, "tool_use_id")));
                }
                Block::Other => {}
            }
        }
        if prefill {
            let trailing = list
                .last()
                .and_then(|block| block.get("text"))
                .and_then(Value::as_str)
                .is_some_and(|text| text.ends_with(char::is_whitespace));
            if trailing {
                problems.push(
                    path,
                    "final assistant content cannot end with trailing whitespace",
                );
            }
        }
    }

    /// Each tool_use answered in the next user message; each tool_result answering one.
    fn pair_tools(turns: &[Turn], problems: &mut Problems) {
        for (i, turn) in turns.iter().enumerate() {
            let next = turns.get(i + 1);
            let answered_by = next.filter(|next| next.role.as_deref() == Some("user"));
            for (id, path) in &turn.tool_uses {
                match answered_by {
                    Some(next) if next.tool_results.iter().any(|(result, _)| result == id) => {}
                    Some(_) => problems.push(
                        path.as_str(),
                        format!("tool_use `{id}` has no tool_result in messages[{}]", i + 1),
                    ),
                    None => problems.push(
                        path.as_str(),
                        format!("tool_use `{id}` has no tool_result: the next message must be a user message answering it"),
                    ),
                }
            }
            let previous = i
                .checked_sub(1)
                .and_then(|p| turns.get(p))
                .filter(|previous| previous.role.as_deref() == Some("assistant"));
            let mut seen: Vec<(&str, &str)> = Vec::new();
            for (id, path) in &turn.tool_results {
                if let Some((_, first)) = seen.iter().find(|(seen_id, _)| seen_id == id) {
                    problems.push(
                        path.as_str(),
                        format!("tool_use `{id}` is answered twice (also at {first})"),
                    );
                    continue;
                }
                seen.push((id, path));
                let known = previous.is_some_and(|previous| {
                    previous.tool_uses.iter().any(|(use_id, _)| use_id == id)
                });
                if !known {
                    let message = match i.checked_sub(1) {
                        Some(p) => format!(
                            "`{id}` is not the id of a tool_use in the previous message, messages[{p}]"
                        ),
                        None => format!("`{id}` answers no tool_use: there is no previous message"),
                    };
                    problems.push(path.as_str(), message);
                }
            }
        }
    }
}

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
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn problems(body: &Value) -> Vec<String> {
        validate(Some("2023-06-01"), body)
            .iter()
            .map(Problem::render)
            .collect()
    }

    fn request(messages: &Value) -> Value {
        json!({"model": "claude-test", "max_tokens": 256, "messages": messages})
    }

    #[test]
    fn a_full_tool_round_passes() {
        let body = json!({
            "model": "claude-test",
            "max_tokens": 2048,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "use the tool", "signature": "sig"},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01", "content": [{"type": "text", "text": "sun"}], "is_error": false},
                    {"type": "text", "text": "And tomorrow?"}
                ]},
                {"role": "assistant", "content": "Sunny"}
            ],
            "tools": [{"name": "get_weather", "description": "d", "input_schema": {"type": "object", "properties": {}}}],
            "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "temperature": 1
        });
        assert_eq!(problems(&body), Vec::<String>::new());
    }

    #[test]
    fn roles_alternate_from_the_user() {
        let found = problems(&request(&json!([
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b"}
        ])));
        assert_eq!(
            found,
            vec![
                "messages[0].role: the first message must have role user",
                "messages[2].role: roles must alternate, but messages[1] has role user too",
            ]
        );
    }

    #[test]
    fn tool_results_answer_the_previous_tool_uses() {
        let found = problems(&request(&json!([
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "?"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "a", "name": "f", "input": {}},
                {"type": "tool_use", "id": "a", "name": "f", "input": {}},
                {"type": "tool_use", "id": "b", "name": "f", "input": "{}"}
            ]},
            {"role": "user", "content": [
                {"type": "text", "text": "first"},
                {"type": "tool_result", "tool_use_id": "a"},
                {"type": "tool_result", "tool_use_id": "a"},
                {"type": "tool_result", "tool_use_id": "c", "extra": true}
            ]}
        ])));
        assert_eq!(
            found,
            vec![
                "messages[1].content[1].id: duplicate tool_use id `a` (also at messages[1].content[0].id)",
                "messages[1].content[2].input: must be an object (got string)",
                "messages[2].content[1]: tool_result blocks must come before any text block in the message (content[0] comes first)",
                "messages[2].content[2]: tool_result blocks must come before any text block in the message (content[0] comes first)",
                "messages[2].content[3].extra: unknown field",
                "messages[2].content[3]: tool_result blocks must come before any text block in the message (content[0] comes first)",
                "messages[0].content[0].tool_use_id: `toolu_x` answers no tool_use: there is no previous message",
                "messages[1].content[2].id: tool_use `b` has no tool_result in messages[2]",
                "messages[2].content[2].tool_use_id: tool_use `a` is answered twice (also at messages[2].content[1].tool_use_id)",
                "messages[2].content[3].tool_use_id: `c` is not the id of a tool_use in the previous message, messages[1]",
            ]
        );
    }

    #[test]
    fn top_level_rules() {
        let body = json!({
            "model": "claude-test",
            "messages": [{"role": "user", "content": ""}],
            "stream": true,
            "tools": [{"name": "f", "input_schema": {}}, {"name": "f", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "tool", "name": "g"},
            "temperature": 1.5,
            "n": 1
        });
        let found = validate(None, &body)
            .iter()
            .map(Problem::render)
            .collect::<Vec<_>>();
        for expected in [
            "header anthropic-version: required (for example 2023-06-01)",
            "n: unknown field",
            "max_tokens: required",
            "messages[0].content: must be non-empty (only a final assistant message may be empty)",
            "stream: must be false: this test server does not stream",
            "temperature: must be between 0 and 1 (got 1.5)",
            "tools[0].input_schema.type: required, and must be \"object\"",
            "tools[1].name: duplicate tool name `f` (also at tools[0].name)",
            "tool_choice.name: `g` is not the name of a tool in tools",
        ] {
            assert!(
                found.iter().any(|p| p == expected),
                "{expected} not in {found:?}"
            );
        }
        assert_eq!(found.len(), 9, "{found:?}");
    }

    #[test]
    fn blocks_belong_to_their_role() {
        let found = problems(&request(&json!([
            {"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
            {"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "a"}, {"type": "video"}]},
            {"role": "user", "content": [{"type": "text", "text": "x", "bold": true}]},
            {"role": "assistant", "content": "done "}
        ])));
        assert_eq!(
            found,
            vec![
                "messages[0].content[0].type: `tool_use` blocks are not allowed in user messages",
                "messages[1].content[0].type: `tool_result` blocks are not allowed in assistant messages",
                "messages[1].content[1].type: unknown block type `video`",
                "messages[2].content[0].bold: unknown field",
                "messages[3].content: final assistant content cannot end with trailing whitespace",
            ]
        );
    }
}
