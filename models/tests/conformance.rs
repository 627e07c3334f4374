//! Conformance: transcripts of every shape a run can hold, generated, sent
//! by both clients to one protocol server process, each request checked
//! there against the providers' documented rules (see `models/README.md`,
//! "What a request must satisfy").
//!
//! A case is a transcript — instructions, a prompt that may be blank, turns
//! of calls with their results in any order (empty, failed, denied, run
//! with edited arguments, of unknown outcome, refused as unusable), final
//! answers and follow-up prompts — and the tools offered when it is sent:
//! a subset of the tools its calls were made to, so calls may name tools no
//! longer offered, or none at all. Names and ids are as a model or a
//! registry may write them, wire-safe or not; schemas are of every shape a
//! tool may declare.
//!
//! Each case also sets the request options a host may set — the output
//! limit, sampling within its documented range, stop sequences, a tool
//! choice (which may name a tool no longer offered), parallel calls,
//! streaming, and the body fields of compatible servers.
//!
//! Each client must either send a request the server finds valid, or refuse
//! the transcript locally (`ProviderError::Unsendable`) — and only when the
//! transcript holds nothing the API would take, or the tool choice needs a
//! tool the request does not offer. `PROPTEST_CASES` sets how
//! many cases run (default 128).

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::needless_pass_by_value
)]

mod support;

use std::fmt;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use serde_json::{Map, Value, json};
use support::{KEY, Server};
use toolgate::RichOutput;
use toolgate::run::{Message, RAN_WITH, ToolCall, ToolSpec};
use toolgate_models::openai::TokenLimit;
use toolgate_models::{Anthropic, ApiKey, OpenAi, ProviderError, RetryPolicy, ToolChoice};

const MODEL: &str = "conformance-model";

/// How many cases run when `PROPTEST_CASES` does not say.
const DEFAULT_CASES: u32 = 128;

/// The one answer of the server's script, to every request of either
/// protocol: each protocol's fields, which the other client does not read.
fn answer() -> Value {
    json!({
        "id": "both-1",
        "object": "chat.completion",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Done."}, "finish_reason": "stop"}],
        "content": [{"type": "text", "text": "Done."}],
        "stop_reason": "end_turn",
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2,
                  "input_tokens": 1, "output_tokens": 1}
    })
}

// ---------------------------------------------------------------------------
// What a case is made of, before it is assembled into a transcript.

/// A tool of the registry the run's calls were made to.
#[derive(Debug, Clone)]
struct ToolGen {
    /// The start of its wire name (`{base}_{index}`).
    base: String,
    /// Whether its local name is a server's tool (`srv.{wire}`) rather than
    /// the wire name itself.
    dotted: bool,
    description: String,
    parameters: Value,
    /// Whether it is still offered when the transcript is sent.
    offered: bool,
}

/// The id a call was given.
#[derive(Debug, Clone)]
enum IdGen {
    Fresh(String),
    /// The id of an earlier call of the run (ids are unique within a turn
    /// only).
    Reused(usize),
}

/// The tool a call named, as the transcript keeps it.
#[derive(Debug, Clone)]
enum NameGen {
    /// A tool of the registry, by its local name.
    Local(usize),
    /// A tool of the registry, by its wire name (a name that resolved to no
    /// offered tool is kept as the model wrote it).
    Wire(usize),
    /// A name the model made up.
    MadeUp(String),
}

/// What became of a call.
#[derive(Debug, Clone)]
enum OutcomeGen {
    /// It ran; its text, and what it answered beyond it.
    Ran(String, bool),
    /// It failed, saying this (maybe nothing).
    Failed(String),
    /// A person denied it, with a reason or none.
    Denied(String, Option<String>),
    /// It ran with arguments a person edited.
    RanWith(Value, String, bool),
    /// It started and never ended; a person chose not to run it again.
    Unknown(String),
    /// The turn could not be used, and it was answered why.
    Unusable(String),
}

#[derive(Debug, Clone)]
struct CallGen {
    id: IdGen,
    name: NameGen,
    arguments: Value,
    outcome: OutcomeGen,
    /// Where its result comes among the turn's (results may come in any
    /// order: a call asked for again after a denial is answered first).
    rank: u8,
}

#[derive(Debug, Clone)]
enum RoundGen {
    /// A turn of calls, with text or without, each call answered.
    Calls(Option<String>, Vec<CallGen>),
    /// A final answer, then the user's next prompt.
    Answer(String, String),
}

/// The tool a host's tool choice names.
#[derive(Debug, Clone)]
enum ChoiceGen {
    Auto,
    None,
    Required,
    /// A tool of the registry by its local name, offered or not.
    Local(usize),
    /// A tool of the registry by its wire name, offered or not.
    Wire(usize),
    /// A name no tool has.
    MadeUp(String),
}

/// The options a host sets on a client.
#[derive(Debug, Clone)]
struct SettingsGen {
    max_output_tokens: u32,
    temperature: Option<f64>,
    top_p: Option<f64>,
    stop: Vec<String>,
    choice: ChoiceGen,
    parallel: Option<bool>,
    /// Whether to add the body fields of compatible servers.
    extras: bool,
    token_limit: bool,
    stream: bool,
}

#[derive(Debug, Clone)]
struct CaseGen {
    catalogue: Vec<ToolGen>,
    system: Option<String>,
    prompt: String,
    rounds: Vec<RoundGen>,
    settings: SettingsGen,
}

/// The options of a case, as the clients take them.
#[derive(Debug, Clone)]
struct Settings {
    max_output_tokens: u32,
    temperature: Option<f64>,
    top_p: Option<f64>,
    stop: Vec<String>,
    tool_choice: ToolChoice,
    parallel: Option<bool>,
    extras: bool,
    token_limit: TokenLimit,
    stream: bool,
}

/// A transcript, the tools offered when it is sent, and the options set.
#[derive(Clone)]
struct Case {
    transcript: Vec<Message>,
    tools: Vec<ToolSpec>,
    settings: Settings,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = json!({"transcript": self.transcript, "tools": self.tools,
                           "settings": format!("{:?}", self.settings)});
        let text = serde_json::to_string_pretty(&shown).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl Case {
    /// The OpenAI-compatible client `base` with the case's options.
    fn openai(&self, base: &OpenAi) -> OpenAi {
        let s = &self.settings;
        let mut client = base
            .clone()
            .token_limit(s.token_limit)
            .max_output_tokens(s.max_output_tokens)
            .stop(s.stop.clone())
            .tool_choice(s.tool_choice.clone())
            .stream(s.stream);
        if let Some(t) = s.temperature {
            client = client.temperature(t);
        }
        if let Some(p) = s.top_p {
            client = client.top_p(p);
        }
        if let Some(parallel) = s.parallel {
            client = client.parallel_tool_calls(parallel);
        }
        if s.extras {
            for (name, value) in [
                ("reasoning_effort", json!("low")),
                (
                    "provider",
                    json!({"order": ["groq"], "allow_fallbacks": false}),
                ),
                ("chat_template_kwargs", json!({"enable_thinking": false})),
                ("seed", json!(7)),
            ] {
                client = client.body_field(name, value).unwrap();
            }
        }
        client
    }

    /// The Anthropic client `base` with the case's options.
    fn anthropic(&self, base: &Anthropic) -> Anthropic {
        let s = &self.settings;
        let mut client = base
            .clone()
            .max_output_tokens(s.max_output_tokens)
            .stop(s.stop.clone())
            .tool_choice(s.tool_choice.clone())
            .stream(s.stream);
        if let Some(t) = s.temperature {
            client = client.temperature(t);
        }
        if let Some(p) = s.top_p {
            client = client.top_p(p);
        }
        if let Some(parallel) = s.parallel {
            client = client.parallel_tool_calls(parallel);
        }
        if s.extras {
            for (name, value) in [
                ("metadata", json!({"user_id": "user-7"})),
                ("top_k", json!(40)),
                ("service_tier", json!("auto")),
            ] {
                client = client.body_field(name, value).unwrap();
            }
        }
        client
    }

    /// Whether the tool choice needs a tool the request does not offer:
    /// a call required of no tool, or a tool named that is not offered.
    fn choice_unsatisfiable(&self) -> bool {
        match &self.settings.tool_choice {
            ToolChoice::Required => self.tools.is_empty(),
            ToolChoice::Tool(name) => !self
                .tools
                .iter()
                .any(|spec| spec.local_name == *name || spec.name == *name),
            _ => false,
        }
    }
}

// ---------------------------------------------------------------------------
// Strategies.

/// Text as a person, a model or a tool may write it: empty, blank, plain,
/// any printable Unicode, looking like an error, with a NUL.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => Just(String::new()),
        1 => Just(" ".to_owned()),
        1 => Just("\n\t \u{3000}".to_owned()),
        4 => "[a-zA-Z ,.!?]{1,40}",
        2 => "\\PC{1,24}",
        1 => Just("Error: this result only looks like an error".to_owned()),
        1 => Just("ends in a space ".to_owned()),
        1 => Just("naïve café — 東京 🚀\r\n".to_owned()),
        1 => Just("nul\u{0}inside".to_owned()),
    ]
}

/// A parameter schema of each shape a tool may declare.
fn schema() -> impl Strategy<Value = Value> {
    let property = prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "integer", "minimum": 0})),
        Just(json!({"type": ["string", "null"]})),
        Just(json!({"type": "array", "items": {"type": "number"}})),
        Just(json!({"enum": ["a", "b"]})),
    ];
    let properties = prop::collection::btree_map("[a-z_]{1,8}|ünï", property, 0..4)
        .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>()));
    prop_oneof![
        Just(json!({})),
        Just(json!(true)),
        Just(json!(false)),
        Just(json!({"type": "object"})),
        Just(json!({"type": ["object", "null"]})),
        Just(json!({"type": "string"})),
        Just(json!({"type": "null", "title": "Null", "$schema": "https://json-schema.org/draft/2020-12/schema"})),
        Just(json!({"type": "object", "properties": []})),
        Just(json!({"anyOf": [{"type": "object"}, {"type": "null"}]})),
        properties.clone().prop_map(|p| json!({"properties": p})),
        properties.clone().prop_map(|p| {
            let required: Vec<&String> = p.as_object().map(|m| m.keys().collect()).unwrap_or_default();
            json!({"type": "object", "properties": p, "required": required, "additionalProperties": false})
        }),
        properties.clone().prop_map(|p| json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "properties": {"inner": {"type": "object", "properties": p}},
        })),
        Just(json!({
            "type": "object",
            "properties": {"note": {"$ref": "#/$defs/Note"}, "notes": {"type": "array", "items": {"$ref": "#/$defs/Note"}}},
            "required": ["note"],
            "$defs": {"Note": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
        })),
    ]
}

fn tool_gen() -> impl Strategy<Value = ToolGen> {
    (
        "[a-zA-Z0-9_-]{1,40}",
        any::<bool>(),
        text(),
        schema(),
        prop::bool::weighted(0.6),
    )
        .prop_map(|(base, dotted, description, parameters, offered)| ToolGen {
            base,
            dotted,
            description,
            parameters,
            offered,
        })
}

/// A call id as a provider or the run may write one: providers' own, with
/// dots and colons (`functions.bash:0`), any printable Unicode, and up to
/// the 256 bytes the run keeps.
fn fresh_id() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "call_[a-zA-Z0-9]{24}",
        2 => "toolu_01[a-zA-Z0-9]{22}",
        2 => "[a-zA-Z0-9_-]{1,40}",
        1 => Just("functions.bash:0".to_owned()),
        1 => "toolgate_refused_[0-9]{1,3}_[0-9]",
        1 => "\\PC{1,20}",
        1 => "[a-z]{41,256}",
        1 => "é{21,128}",
    ]
    .prop_filter("a call id is not blank", |id| !id.trim().is_empty())
}

fn id_gen() -> impl Strategy<Value = IdGen> {
    prop_oneof![
        6 => fresh_id().prop_map(IdGen::Fresh),
        1 => any::<usize>().prop_map(IdGen::Reused),
    ]
}

fn name_gen() -> impl Strategy<Value = NameGen> {
    prop_oneof![
        4 => any::<usize>().prop_map(NameGen::Local),
        1 => any::<usize>().prop_map(NameGen::Wire),
        3 => prop_oneof![
            Just(String::new()),
            Just("  ".to_owned()),
            "[a-z_]{1,20}",
            "[a-z]{1,8}\\.[a-z_]{1,12}",
            "[a-z]{1,8}/[a-z -]{1,12}",
            "\\PC{1,20}",
            "[a-z]{65,256}",
        ]
        .prop_map(NameGen::MadeUp),
    ]
}

/// A JSON value of any shape, numbers finite.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1.0e9..1.0e9f64).prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("\\PC{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A call's arguments: an object, often an empty one.
fn arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        2 => Just(json!({})),
        3 => prop::collection::btree_map("[a-z_]{1,8}|\\PC{0,6}", json_value(), 1..4)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
    ]
}

fn outcome_gen() -> impl Strategy<Value = OutcomeGen> {
    prop_oneof![
        4 => (text(), prop::bool::weighted(0.2)).prop_map(|(t, rich)| OutcomeGen::Ran(t, rich)),
        3 => text().prop_map(OutcomeGen::Failed),
        2 => ("[a-z]{1,8}", prop::option::of(text())).prop_map(|(by, why)| OutcomeGen::Denied(by, why)),
        2 => (arguments(), text(), any::<bool>()).prop_map(|(a, t, e)| OutcomeGen::RanWith(a, t, e)),
        1 => "[a-z]{1,8}".prop_map(OutcomeGen::Unknown),
        1 => "[a-z ]{0,30}".prop_map(OutcomeGen::Unusable),
    ]
}

fn call_gen() -> impl Strategy<Value = CallGen> {
    (id_gen(), name_gen(), arguments(), outcome_gen(), 0..4u8).prop_map(
        |(id, name, arguments, outcome, rank)| CallGen {
            id,
            name,
            arguments,
            outcome,
            rank,
        },
    )
}

fn round_gen() -> impl Strategy<Value = RoundGen> {
    prop_oneof![
        3 => (prop::option::of(text()), prop::collection::vec(call_gen(), 1..4))
            .prop_map(|(content, calls)| RoundGen::Calls(content, calls)),
        1 => (text(), text()).prop_map(|(answer, next)| RoundGen::Answer(answer, next)),
    ]
}

fn choice_gen() -> impl Strategy<Value = ChoiceGen> {
    prop_oneof![
        4 => Just(ChoiceGen::Auto),
        1 => Just(ChoiceGen::None),
        1 => Just(ChoiceGen::Required),
        1 => any::<usize>().prop_map(ChoiceGen::Local),
        1 => any::<usize>().prop_map(ChoiceGen::Wire),
        1 => "[a-z_]{1,12}".prop_map(ChoiceGen::MadeUp),
    ]
}

/// Options within the range both protocols document (a temperature of 0
/// to 1, at most four stop sequences that are not blank).
fn settings_gen() -> impl Strategy<Value = SettingsGen> {
    let stop = prop_oneof!["[a-zA-Z#]{1,8}", "\\PC{1,6}"]
        .prop_filter("a stop sequence is not blank", |s| !s.trim().is_empty());
    (
        prop_oneof![Just(4096u32), 1..=8192u32],
        prop::option::weighted(0.3, 0.0..=1.0f64),
        prop::option::weighted(0.2, 0.0..=1.0f64),
        prop::collection::vec(stop, 0..=4),
        choice_gen(),
        prop::option::of(any::<bool>()),
        prop::bool::weighted(0.2),
        any::<bool>(),
        prop::bool::weighted(0.3),
    )
        .prop_map(
            |(
                max_output_tokens,
                temperature,
                top_p,
                stop,
                choice,
                parallel,
                extras,
                token_limit,
                stream,
            )| SettingsGen {
                max_output_tokens,
                temperature,
                top_p,
                stop,
                choice,
                parallel,
                extras,
                token_limit,
                stream,
            },
        )
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(tool_gen(), 0..4),
        prop::option::of(text()),
        text(),
        prop::collection::vec(round_gen(), 0..5),
        settings_gen(),
    )
        .prop_map(|(catalogue, system, prompt, rounds, settings)| {
            assemble(CaseGen {
                catalogue,
                system,
                prompt,
                rounds,
                settings,
            })
        })
}

// ---------------------------------------------------------------------------
// Assembly: the transcript as the run would hold it.

fn assemble(case: CaseGen) -> Case {
    let catalogue: Vec<ToolSpec> = case
        .catalogue
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let name = format!("{}_{i}", tool.base);
            ToolSpec {
                local_name: if tool.dotted {
                    format!("srv.{name}")
                } else {
                    name.clone()
                },
                name,
                description: tool.description.clone(),
                parameters: tool.parameters.clone(),
            }
        })
        .collect();
    let tools = catalogue
        .iter()
        .zip(&case.catalogue)
        .filter(|(_, tool)| tool.offered)
        .map(|(spec, _)| spec.clone())
        .collect();
    let mut transcript = Vec::new();
    if let Some(content) = case.system {
        transcript.push(Message::System { content });
    }
    transcript.push(Message::User {
        content: case.prompt,
    });
    let mut earlier_ids: Vec<String> = Vec::new();
    for (turn, round) in case.rounds.into_iter().enumerate() {
        match round {
            RoundGen::Answer(answer, next) => {
                transcript.push(Message::Assistant {
                    content: Some(answer),
                    calls: Vec::new(),
                    usage: None,
                });
                transcript.push(Message::User { content: next });
            }
            RoundGen::Calls(content, calls) => {
                let written = calls_of(&calls, turn, &catalogue, &earlier_ids);
                earlier_ids.extend(written.iter().map(|c| c.id.clone()));
                let mut order: Vec<usize> = (0..calls.len()).collect();
                order.sort_by_key(|&j| calls[j].rank);
                let results: Vec<Message> = order
                    .into_iter()
                    .map(|j| result(&written[j], &calls[j].outcome))
                    .collect();
                transcript.push(Message::Assistant {
                    content,
                    calls: written,
                    usage: None,
                });
                transcript.extend(results);
            }
        }
    }
    let settings = case.settings;
    Case {
        transcript,
        tools,
        settings: Settings {
            max_output_tokens: settings.max_output_tokens,
            temperature: settings.temperature,
            top_p: settings.top_p,
            stop: settings.stop,
            tool_choice: match settings.choice {
                ChoiceGen::Auto => ToolChoice::Auto,
                ChoiceGen::None => ToolChoice::None,
                ChoiceGen::Required => ToolChoice::Required,
                ChoiceGen::Local(i) => ToolChoice::Tool(pick(&catalogue, i, |t| &t.local_name)),
                ChoiceGen::Wire(i) => ToolChoice::Tool(pick(&catalogue, i, |t| &t.name)),
                ChoiceGen::MadeUp(name) => ToolChoice::Tool(name),
            },
            parallel: settings.parallel,
            extras: settings.extras,
            token_limit: if settings.token_limit {
                TokenLimit::MaxCompletionTokens
            } else {
                TokenLimit::MaxTokens
            },
            stream: settings.stream,
        },
    }
}

/// A name of tool `i` of the catalogue (wrapping), or of a tool the
/// registry no longer has when it has none.
fn pick(catalogue: &[ToolSpec], i: usize, name: impl Fn(&ToolSpec) -> &String) -> String {
    if catalogue.is_empty() {
        "removed_tool".to_owned()
    } else {
        name(&catalogue[i % catalogue.len()]).clone()
    }
}

/// The calls of turn `turn` as the transcript keeps them.
fn calls_of(
    calls: &[CallGen],
    turn: usize,
    catalogue: &[ToolSpec],
    earlier_ids: &[String],
) -> Vec<ToolCall> {
    let mut written: Vec<ToolCall> = Vec::new();
    for (j, call) in calls.iter().enumerate() {
        let mut id = match &call.id {
            IdGen::Fresh(id) => id.clone(),
            IdGen::Reused(k) if !earlier_ids.is_empty() => {
                earlier_ids[k % earlier_ids.len()].clone()
            }
            IdGen::Reused(_) => format!("call_{turn}_{j}"),
        };
        // Ids are unique within a turn: a turn that gives one id to two
        // calls is refused, and the run gives the second one of its own.
        if written.iter().any(|c| c.id == id) {
            id = format!("toolgate_refused_{turn}_{j}");
            while written.iter().any(|c| c.id == id) {
                id.push('_');
            }
        }
        let name = match &call.name {
            NameGen::Local(i) => pick(catalogue, *i, |t| &t.local_name),
            NameGen::Wire(i) => pick(catalogue, *i, |t| &t.name),
            NameGen::MadeUp(name) => name.clone(),
        };
        written.push(ToolCall {
            id,
            name,
            arguments: call.arguments.clone(),
        });
    }
    written
}

/// The result the run writes for `call` (texts as the run words them).
fn result(call: &ToolCall, outcome: &OutcomeGen) -> Message {
    let (content, is_error, rich) = match outcome {
        OutcomeGen::Ran(text, rich) => (
            text.clone(),
            false,
            rich.then(|| {
                Box::new(RichOutput {
                    blocks: vec![json!({"type": "text", "text": text})],
                    structured: Some(json!({"ok": true})),
                })
            }),
        ),
        OutcomeGen::Failed(text) => (text.clone(), true, None),
        OutcomeGen::Denied(by, None) => (
            format!("the call was denied by {by}; it was not executed"),
            true,
            None,
        ),
        OutcomeGen::Denied(by, Some(reason)) => (
            format!("the call was denied by {by}: {reason}; it was not executed"),
            true,
            None,
        ),
        OutcomeGen::RanWith(arguments, text, is_error) => {
            (format!("{RAN_WITH}{arguments}\n\n{text}"), *is_error, None)
        }
        OutcomeGen::Unknown(by) => (
            format!(
                "the call `{}` ({}) was started and never ended — the host stopped, or its answer was lost; its outcome is unknown, and {by} chose not to run it again",
                call.id, call.name
            ),
            true,
            None,
        ),
        OutcomeGen::Unusable(problem) => (
            format!(
                "This call could not be used: {problem}. Nothing of this turn ran; ask again with every call well-formed."
            ),
            true,
            None,
        ),
    };
    Message::Tool {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error,
        rich,
    }
}

// ---------------------------------------------------------------------------
// The property.

/// The two protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    ChatCompletions,
    Messages,
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ChatCompletions => "Chat Completions",
            Self::Messages => "Messages",
        })
    }
}

/// Whether a message carries anything a provider takes: text that is not
/// blank, a call, a result.
fn carries_something(message: &Message) -> bool {
    match message {
        Message::System { .. } => false,
        Message::User { content } => !content.trim().is_empty(),
        Message::Assistant { content, calls, .. } => {
            !calls.is_empty() || content.as_deref().is_some_and(|c| !c.trim().is_empty())
        }
        Message::Tool { .. } => true,
    }
}

/// Whether the transcript holds anything a provider would take as a
/// conversation: a prompt or an answer that is not blank, or a call.
fn has_something_to_send(transcript: &[Message]) -> bool {
    transcript.iter().any(carries_something)
}

/// Why the Messages client refuses a case before sending, beyond a blank
/// prompt or an unmeetable tool choice: a transcript whose last message is
/// the model's own answer (the API would continue it), or both sampling
/// settings (current models take one).
fn messages_refuses(case: &Case) -> bool {
    let last = case
        .transcript
        .iter()
        .rev()
        .find(|m| !matches!(m, Message::System { .. }));
    matches!(last, Some(Message::Assistant { .. }))
        || (case.settings.temperature.is_some() && case.settings.top_p.is_some())
}

/// A Messages request the API took ends with the user's turn: one that
/// ends with an assistant's message asks the model to continue that
/// message (a prefill), which these clients never mean.
fn ends_with_the_user(
    protocol: Protocol,
    body: Result<Vec<u8>, ProviderError>,
) -> Result<(), TestCaseError> {
    if protocol != Protocol::Messages {
        return Ok(());
    }
    let body: Value =
        serde_json::from_slice(&body.map_err(|e| TestCaseError::fail(e.to_string()))?)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let role = body
        .pointer("/messages")
        .and_then(Value::as_array)
        .and_then(|m| m.last())
        .and_then(|m| m.get("role"));
    if role == Some(&json!("user")) {
        Ok(())
    } else {
        Err(TestCaseError::fail(format!(
            "the {protocol} request ends with a message that is not the user's, which asks the model to continue it: {body}"
        )))
    }
}

/// The outcome of one client's request, judged.
fn judge(
    protocol: Protocol,
    sent: Result<toolgate::run::Response, ProviderError>,
    body: Result<Vec<u8>, ProviderError>,
    unsendable: bool,
) -> Result<(), TestCaseError> {
    let Err(error) = sent else {
        return ends_with_the_user(protocol, body);
    };
    if matches!(error, ProviderError::Unsendable { .. }) && unsendable {
        return Ok(());
    }
    let body = match body {
        Ok(bytes) => serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|value| serde_json::to_string_pretty(&value).ok())
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned()),
        Err(error) => format!("(no body: {error})"),
    };
    let what = match &error {
        ProviderError::Unsendable { .. } => {
            "refused the request locally, though the API would take it"
        }
        _ => "did not get its request accepted",
    };
    Err(TestCaseError::fail(format!(
        "the {protocol} client {what}: {error}\nits request body:\n{body}"
    )))
}

#[test]
fn every_generated_transcript_is_sent_as_a_request_both_apis_take() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let script = json!([{"status": 200, "body": answer(), "repeat": true}]);
    let server = runtime.block_on(Server::start(script, &[MODEL]));
    let retry = RetryPolicy {
        max_attempts: 1,
        ..RetryPolicy::default()
    };
    let openai = OpenAi::new(&format!("{}/v1", server.base), MODEL)
        .unwrap()
        .key(ApiKey::new(KEY).unwrap())
        .retry(retry);
    let anthropic = Anthropic::at(&server.base, MODEL)
        .unwrap()
        .key(ApiKey::new(KEY).unwrap())
        .retry(retry);

    let config = if std::env::var_os("PROPTEST_CASES").is_some() {
        Config::default()
    } else {
        Config::with_cases(DEFAULT_CASES)
    };
    let mut runner = TestRunner::new(Config {
        failure_persistence: None,
        ..config
    });
    let outcome = runner.run(&case(), |case| {
        let unsendable = !has_something_to_send(&case.transcript) || case.choice_unsatisfiable();
        let client = case.openai(&openai);
        let sent = runtime.block_on(client.complete(&case.transcript, &case.tools));
        let body = client.request_body(&case.transcript, &case.tools);
        judge(Protocol::ChatCompletions, sent, body, unsendable)?;
        let client = case.anthropic(&anthropic);
        let sent = runtime.block_on(client.complete(&case.transcript, &case.tools));
        let body = client.request_body(&case.transcript, &case.tools);
        judge(
            Protocol::Messages,
            sent,
            body,
            unsendable || messages_refuses(&case),
        )?;
        Ok(())
    });
    drop(server);
    match outcome {
        Ok(()) => {}
        Err(TestError::Fail(reason, case)) => {
            panic!("{reason}\nthe smallest case found:\n{case:?}")
        }
        Err(TestError::Abort(reason)) => panic!("the suite stopped: {reason}"),
    }
}
