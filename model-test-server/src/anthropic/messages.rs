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
/// Checks the messages; true when any holds a `tool_use` or `tool_result`
/// block, which a request may send only beside `tools`.
pub(super) fn validate(value: &Value, problems: &mut Problems) -> bool {
    let Some(messages) = array(value, "messages", problems) else {
        return false;
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
    unique_tool_uses(&turns, problems);
    pair_tools(&turns, problems);
    turns
        .iter()
        .any(|turn| !turn.tool_uses.is_empty() || !turn.tool_results.is_empty())
}

/// One message: its role and content.
fn turn(message: &Map<String, Value>, path: &str, is_last: bool, problems: &mut Problems) -> Turn {
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
            } else if text.trim().is_empty() && !prefill {
                problems.push(
                    content_path,
                    "text content blocks must contain non-whitespace text",
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

/// Every tool_use id of the request told apart from every other: the API
/// refuses an id used twice anywhere in `messages` ("`tool_use` ids must be
/// unique"), not only within one message (which `content_blocks` reports).
fn unique_tool_uses(turns: &[Turn], problems: &mut Problems) {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for turn in turns {
        let mut here: Vec<(&str, &str)> = Vec::new();
        for (id, path) in &turn.tool_uses {
            match seen.iter().find(|(seen_id, _)| seen_id == id) {
                Some((_, first)) => problems.push(
                    path.as_str(),
                    format!("`tool_use` ids must be unique: `{id}` is also at {first}"),
                ),
                None => here.push((id, path)),
            }
        }
        seen.extend(here);
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
            let known = previous
                .is_some_and(|previous| previous.tool_uses.iter().any(|(use_id, _)| use_id == id));
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
