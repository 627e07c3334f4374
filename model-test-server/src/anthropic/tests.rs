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
    assert_eq!(found.len(), 8, "{found:?}");
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

fn with(mut body: Value, extra: &Value) -> Value {
    for (name, value) in extra.as_object().unwrap() {
        body[name] = value.clone();
    }
    body
}

fn hello() -> Value {
    request(&json!([{"role": "user", "content": "hello"}]))
}

fn tool_f() -> Value {
    json!([{"name": "f", "input_schema": {"type": "object"}}])
}

#[test]
fn text_holds_more_than_whitespace() {
    let found = problems(&request(&json!([
        {"role": "user", "content": " \n"},
        {"role": "assistant", "content": [{"type": "text", "text": "\t"}]},
        {"role": "user", "content": [{"type": "text", "text": "ok"}, {"type": "text", "text": ""}]},
        {"role": "assistant", "content": ""}
    ])));
    assert_eq!(
        found,
        [
            "messages[0].content: text content blocks must contain non-whitespace text",
            "messages[1].content[0].text: text content blocks must contain non-whitespace text",
            "messages[2].content[1].text: text content blocks must be non-empty",
        ]
    );
    let system = with(
        hello(),
        &json!({"system": [{"type": "text", "text": "  "}]}),
    );
    assert_eq!(
        problems(&system),
        ["system[0].text: text content blocks must contain non-whitespace text"]
    );
}

#[test]
fn tool_use_ids_are_unique_across_the_request() {
    let body = with(
        request(&json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "call_0", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_0", "content": "one"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "call_0", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_0", "content": "two"}]}
        ])),
        &json!({"tools": tool_f()}),
    );
    assert_eq!(
        problems(&body),
        [
            "messages[3].content[0].id: `tool_use` ids must be unique: `call_0` is also at messages[1].content[0].id"
        ]
    );
}

#[test]
fn a_tool_result_names_its_tool_use_by_a_well_formed_id() {
    let body = with(
        request(&json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "call.1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call.1", "content": "x"}]}
        ])),
        &json!({"tools": tool_f()}),
    );
    assert_eq!(
        problems(&body),
        [
            "messages[1].content[0].id: `call.1` does not match ^[a-zA-Z0-9_-]+$",
            "messages[2].content[0].tool_use_id: `call.1` does not match ^[a-zA-Z0-9_-]+$",
            "messages[2].content[0].tool_use_id: `call.1` is not the id of a tool_use in the previous message, messages[1]",
        ]
    );
}

#[test]
fn sampling_options_stay_in_their_ranges() {
    let fine = with(
        hello(),
        &json!({"temperature": 0, "top_k": 40, "stop_sequences": ["END"], "stream": true}),
    );
    assert_eq!(problems(&fine), Vec::<String>::new());
    let wrong = with(
        hello(),
        &json!({"temperature": 0.5, "top_p": 1.5, "top_k": -1, "stop_sequences": ["  "], "stream": "no"}),
    );
    assert_eq!(
        problems(&wrong),
        [
            "top_p: must be between 0 and 1 (got 1.5)",
            "top_k: must be at least 0 (got -1)",
            "stop_sequences[0]: must contain non-whitespace characters",
            "top_p: `temperature` and `top_p` cannot both be specified: send one of them",
            "stream: must be a boolean (got string)",
        ]
    );
}

#[test]
fn tool_choice_shapes() {
    for choice in [
        json!({"type": "auto"}),
        json!({"type": "any", "disable_parallel_tool_use": true}),
        json!({"type": "none"}),
        json!({"type": "tool", "name": "f", "disable_parallel_tool_use": false}),
    ] {
        let body = with(hello(), &json!({"tools": tool_f(), "tool_choice": choice}));
        assert_eq!(problems(&body), Vec::<String>::new(), "{choice}");
    }
    assert_eq!(
        problems(&with(hello(), &json!({"tool_choice": {"type": "auto"}}))),
        ["tool_choice: only allowed when tools are specified"]
    );
    assert_eq!(
        problems(&with(
            hello(),
            &json!({"tools": tool_f(), "tool_choice": {"type": "none", "disable_parallel_tool_use": true}})
        )),
        ["tool_choice.disable_parallel_tool_use: unknown field"]
    );
    assert_eq!(
        problems(&with(
            hello(),
            &json!({"tools": tool_f(), "tool_choice": {"type": "any", "disable_parallel_tool_use": "yes"}})
        )),
        ["tool_choice.disable_parallel_tool_use: must be a boolean (got string)"]
    );
    assert_eq!(
        problems(&with(
            hello(),
            &json!({"tools": tool_f(), "tool_choice": {"type": "required"}})
        )),
        ["tool_choice.type: must be one of auto, any, none, tool (got `required`)"]
    );
    let thinking = json!({"type": "enabled", "budget_tokens": 1024});
    let mut body = with(
        hello(),
        &json!({"tools": tool_f(), "tool_choice": {"type": "any"}, "thinking": thinking}),
    );
    body["max_tokens"] = json!(4096);
    assert_eq!(
        problems(&body),
        [
            "tool_choice.type: Thinking may not be enabled when tool_choice forces tool use: use auto or none"
        ]
    );
}
