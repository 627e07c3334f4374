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
        match string(text, &text_path, problems) {
            Some("") => problems.push(text_path, "text content blocks must be non-empty"),
            Some(text) if text.trim().is_empty() => problems.push(
                text_path,
                "text content blocks must contain non-whitespace text",
            ),
            _ => {}
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
                    Some(block) if block.get("type").and_then(Value::as_str) == Some("image") => {
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
        let empty = match block.get("content") {
            None | Some(Value::Null) => true,
            Some(Value::String(text)) => text.trim().is_empty(),
            Some(Value::Array(list)) => list.is_empty(),
            Some(_) => false,
        };
        if flag.as_bool() == Some(true) && empty {
            problems.push(
                key(path, "content"),
                "content cannot be empty if `is_error` is true",
            );
        }
    }
    if let Some(cache) = block.get("cache_control") {
        cache_control(cache, &key(path, "cache_control"), problems);
    }
    let id_path = key(path, "tool_use_id");
    match required(block, "tool_use_id", path, problems)
        .and_then(|id| string(id, &id_path, problems))
    {
        Some(id) => {
            if !is_id(id) {
                problems.push(id_path, format!("`{id}` does not match ^[a-zA-Z0-9_-]+$"));
            }
            Block::ToolResult(id.to_owned())
        }
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
