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
            "tools: Requests which include `tool_use` or `tool_result` blocks must define tools.",
        ]
    );
}

#[test]
fn an_error_result_says_something_and_tool_blocks_need_tools() {
    let round = |result: Value, tools: Option<Value>| {
        let mut body = request(&json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
            {"role": "user", "content": [result]}
        ]));
        if let Some(tools) = tools {
            body["tools"] = tools;
        }
        problems(&body)
    };
    let tools = || Some(json!([{"name": "f", "input_schema": {"type": "object"}}]));
    let empty = "messages[2].content[0].content: content cannot be empty if `is_error` is true";
    for result in [
        json!({"type": "tool_result", "tool_use_id": "a", "is_error": true}),
        json!({"type": "tool_result", "tool_use_id": "a", "is_error": true, "content": ""}),
        json!({"type": "tool_result", "tool_use_id": "a", "is_error": true, "content": []}),
    ] {
        assert_eq!(round(result, tools()), [empty]);
    }
    assert!(
        round(
            json!({"type": "tool_result", "tool_use_id": "a", "is_error": true, "content": "no"}),
            tools()
        )
        .is_empty()
    );
    assert!(round(json!({"type": "tool_result", "tool_use_id": "a"}), tools()).is_empty());
    assert_eq!(
        round(
            json!({"type": "tool_result", "tool_use_id": "a", "content": "ok"}),
            None
        ),
        ["tools: Requests which include `tool_use` or `tool_result` blocks must define tools."]
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
