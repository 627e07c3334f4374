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
        "tools[0].function.name: `a b` does not match ^[a-zA-Z0-9_-]{1,64}$",
        "tools[2].function.extra: unknown field",
        "tools[2].function.name: duplicate tool name `x` (also at tools[1].function.name)",
    ] {
        assert!(
            found.iter().any(|p| p == expected),
            "{expected} not in {found:?}"
        );
    }
    assert_eq!(found.len(), 8, "{found:?}");
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

fn user_request(extra: &Value) -> Value {
    let mut body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    for (name, value) in extra.as_object().unwrap() {
        body[name] = value.clone();
    }
    body
}

fn weather_tool() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}}])
}

#[test]
fn stream_options_go_only_with_a_stream() {
    assert_eq!(
        problems(&user_request(
            &json!({"stream": true, "stream_options": {"include_usage": true}})
        )),
        Vec::<String>::new()
    );
    assert_eq!(
        problems(&user_request(&json!({"stream": false}))),
        Vec::<String>::new()
    );
    assert_eq!(
        problems(&user_request(
            &json!({"stream_options": {"include_usage": true}})
        )),
        ["stream_options: only allowed when stream is true"]
    );
    assert_eq!(
        problems(&user_request(
            &json!({"stream": "yes", "stream_options": {"include_usage": 1, "chunks": true}})
        )),
        [
            "stream: must be a boolean (got string)",
            "stream_options: only allowed when stream is true",
            "stream_options.chunks: unknown field",
            "stream_options.include_usage: must be a boolean (got integer)",
        ]
    );
}

#[test]
fn tool_choice_and_parallel_calls_need_the_tools_they_name() {
    assert_eq!(
        problems(&user_request(&json!({"parallel_tool_calls": false}))),
        ["parallel_tool_calls: only allowed when tools are specified"]
    );
    assert_eq!(
        problems(&user_request(&json!({"tool_choice": "required"}))),
        ["tool_choice: only allowed when tools are specified"]
    );
    for choice in [
        json!("none"),
        json!("auto"),
        json!("required"),
        json!({"type": "function", "function": {"name": "get_weather"}}),
    ] {
        let body = user_request(
            &json!({"tools": weather_tool(), "tool_choice": choice, "parallel_tool_calls": false}),
        );
        assert_eq!(problems(&body), Vec::<String>::new(), "{choice}");
    }
    assert_eq!(
        problems(&user_request(&json!({
            "tools": weather_tool(),
            "tool_choice": {"type": "function", "function": {"name": "get_time"}},
            "parallel_tool_calls": "no"
        }))),
        [
            "parallel_tool_calls: must be a boolean (got string)",
            "tool_choice.function.name: `get_time` is not the name of a tool in tools",
        ]
    );
    assert_eq!(
        problems(&user_request(
            &json!({"tools": weather_tool(), "tool_choice": "any"})
        )),
        [
            "tool_choice: must be \"none\", \"auto\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":...}} (got string)"
        ]
    );
    assert_eq!(
        problems(&user_request(&json!({"tools": []}))),
        ["tools: must hold at least one tool (leave it out instead)"]
    );
}

#[test]
fn sampling_stays_in_its_documented_ranges() {
    let body = user_request(&json!({
        "temperature": 2,
        "top_p": 1,
        "presence_penalty": -2,
        "frequency_penalty": 2,
        "seed": 42,
        "stop": ["a", "b", "c", "d"]
    }));
    assert_eq!(problems(&body), Vec::<String>::new());
    let body = user_request(&json!({
        "temperature": 2.5,
        "top_p": -0.1,
        "presence_penalty": -3,
        "frequency_penalty": "high",
        "seed": 1.5,
        "stop": ["a", "b", "c", "d", "e"]
    }));
    assert_eq!(
        problems(&body),
        [
            "temperature: must be between 0 and 2 (got 2.5)",
            "top_p: must be between 0 and 1 (got -0.1)",
            "frequency_penalty: must be a number (got string)",
            "presence_penalty: must be between -2 and 2 (got -3)",
            "seed: must be an integer (got number)",
            "stop: must hold at most 4 sequences (got 5)",
        ]
    );
}

#[test]
fn extension_fields_of_compatible_servers_are_typed() {
    let body = user_request(&json!({
        "reasoning_effort": "low",
        "provider": {"order": ["groq"], "allow_fallbacks": false},
        "reasoning": {"effort": "high"},
        "chat_template_kwargs": {"enable_thinking": false},
        "top_k": -1,
        "min_p": 0.05,
        "repetition_penalty": 1.1
    }));
    assert_eq!(problems(&body), Vec::<String>::new());
    let body = user_request(&json!({
        "reasoning_effort": "extreme",
        "provider": "groq",
        "chat_template_kwargs": [],
        "top_k": -2,
        "min_p": 1.5,
        "repetition_penalty": 0,
        "guided_json": {}
    }));
    assert_eq!(
        problems(&body),
        [
            "guided_json: unknown field",
            "reasoning_effort: must be one of none, minimal, low, medium, high, xhigh (got `extreme`)",
            "provider: must be an object (got string)",
            "chat_template_kwargs: must be an object (got array)",
            "top_k: must be at least -1 (got -2)",
            "min_p: must be between 0 and 1 (got 1.5)",
            "repetition_penalty: must be greater than 0 (got 0)",
        ]
    );
}

#[test]
fn a_tool_call_id_has_at_most_40_characters() {
    let round = |id: &str| {
        json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [call(id, &json!("{}"))]},
            {"role": "tool", "tool_call_id": id, "content": ""}
        ]})
    };
    assert_eq!(problems(&round(&"é".repeat(40))), Vec::<String>::new());
    let long = "c".repeat(41);
    assert_eq!(
        problems(&round(&long)),
        ["messages[1].tool_calls[0].id: string too long: at most 40 characters (got 41)"]
    );
}
