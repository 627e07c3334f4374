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
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}, "strict": true}}],
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

#[test]
fn a_tool_schema_is_an_object_with_properties() {
    let tool = |parameters: Value| {
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
               "tools": [{"type": "function", "function": {"name": "f", "parameters": parameters}}]})
    };
    assert_eq!(
        problems(&tool(json!({"type": "object"}))),
        [
            "tools[0].function.parameters: invalid_function_parameters: object schema missing properties"
        ]
    );
    assert_eq!(
        problems(&tool(json!({"properties": {}}))),
        [
            "tools[0].function.parameters.type: invalid_function_parameters: schema must be a JSON Schema of 'type: \"object\"'"
        ]
    );
    assert!(problems(&tool(json!({"type": "object", "properties": {}}))).is_empty());
}
