//! Suspend and resume: capture, encode, decode and resume a run with a
//! 100-message transcript and an 8-call turn, beside plain `serde_json`
//! encode and decode of the same transcript.

use std::hint::black_box;

use serde_json::{Map, Value, json};
use toolgate::{
    Agent, Execute, Registry, Tool, ToolOutput,
    run::{Message, Outcome, Reply, RunOptions, RunState, ToolCall, TurnOutcome},
    suspend::{AwaitingApproval, Suspended},
    testing::{MemoryLog, ScriptedModel},
};

fn main() {
    divan::main();
}

/// Appends a line to a file.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct Append;

impl Execute for Append {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("appended")
    }
}

fn call(i: usize) -> ToolCall {
    ToolCall {
        id: format!("call_{i}"),
        name: "append".into(),
        arguments: json!({"path": format!("notes/{i}.md"), "line": "a line of text to append", "n": i}),
    }
}

/// 100 messages: a user prompt, then rounds of an assistant turn and its
/// results, with realistic lengths.
fn transcript() -> Vec<Message> {
    let mut messages = vec![Message::User {
        content: "Summarise the notes and append a line to each.".into(),
    }];
    let mut i = 0;
    while messages.len() < 100 {
        messages.push(Message::Assistant {
            content: Some("Reading the next note.".into()),
            calls: vec![call(i)],
            usage: None,
        });
        messages.push(Message::Tool {
            call_id: format!("call_{i}"),
            name: "append".into(),
            content: "x".repeat(400),
            is_error: false,
            rich: None,
        });
        i += 1;
    }
    messages.truncate(100);
    messages
}

fn state() -> RunState {
    RunState {
        denied: Vec::new(),
        client: None,
        run_id: "8f0c2d3e-bench".into(),
        requested_by: "alice".into(),
        transcript: transcript(),
        iterations: 50,
        options: RunOptions {
            max_iterations: 1_000,
            ..RunOptions::default()
        },
    }
}

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(error) => panic!("{error}"),
    }
}

fn registry() -> Registry {
    match Registry::builder().builtin(Append).build() {
        Ok(registry) => registry,
        Err(error) => panic!("{error}"),
    }
}

async fn capture(
    agent: &Agent<'_>,
    state: RunState,
    turn: Vec<ToolCall>,
) -> Suspended<AwaitingApproval> {
    match agent.process_turn(state, turn).await {
        Ok(TurnOutcome::AwaitingApproval(run)) => run,
        other => panic!("expected an approval pause, got {other:?}"),
    }
}

/// Capture, encode, decode and resume: the run's results after the turn ran.
async fn round_trip(
    registry: &Registry,
    log: &MemoryLog,
    state: RunState,
    turn: Vec<ToolCall>,
    model: &ScriptedModel,
) -> usize {
    let agent = Agent::new(registry, model, log);
    let run = capture(&agent, state, turn).await;
    let document = run.encode().unwrap_or_default();
    let run = Suspended::<AwaitingApproval>::decode(black_box(&document));
    let Ok(run) = run else {
        panic!("decodes");
    };
    let digest = run.digest();
    match run.approve(&agent, "bob", digest).await {
        Ok(Outcome::Finished { state, .. }) => state
            .transcript
            .iter()
            .filter(|m| matches!(m, Message::Tool { content, .. } if content == "appended"))
            .count(),
        other => panic!("the approved turn runs and the run finishes: {other:?}"),
    }
}

/// Capture, encode, decode and resume (approve with the digest; the 8 calls
/// run and the model answers once).
#[divan::bench]
fn capture_encode_decode_resume(bencher: divan::Bencher) {
    let runtime = runtime();
    let registry = registry();
    let log = MemoryLog::new();
    let turn: Vec<ToolCall> = (1000..1008).map(call).collect();
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    let ran = runtime.block_on(round_trip(&registry, &log, state(), turn.clone(), &model));
    assert_eq!(ran, 8, "the 8 approved calls ran");
    bencher
        .with_inputs(|| {
            (
                state(),
                turn.clone(),
                ScriptedModel::new([Reply::Text("done".into())]),
            )
        })
        .bench_local_values(|(state, turn, model)| {
            runtime.block_on(round_trip(&registry, &log, state, turn, &model))
        });
}

/// Encode and decode only.
#[divan::bench]
fn encode_decode(bencher: divan::Bencher) {
    let runtime = runtime();
    let registry = registry();
    let log = MemoryLog::new();
    let model = ScriptedModel::default();
    let agent = Agent::new(&registry, &model, &log);
    let run = runtime.block_on(capture(&agent, state(), (1000..1008).map(call).collect()));
    let document = run.encode().unwrap_or_default();
    match Suspended::<AwaitingApproval>::decode(&document) {
        Ok(decoded) => {
            assert_eq!(decoded.digest(), run.digest(), "the same run comes back");
            assert_eq!(decoded.pending().len(), 8);
        }
        Err(error) => panic!("{error}"),
    }
    bencher.bench_local(|| {
        let document = run.encode().unwrap_or_default();
        Suspended::<AwaitingApproval>::decode(black_box(&document)).is_ok()
    });
}

/// The baseline: plain `serde_json` encode and decode of the same transcript,
/// named to run right after `encode_decode`, so the two are measured side
/// by side.
#[divan::bench]
fn encode_decode_baseline_serde_json(bencher: divan::Bencher) {
    let transcript = transcript();
    let text = serde_json::to_string(&transcript).unwrap_or_default();
    assert_eq!(
        serde_json::from_str::<Vec<Message>>(&text).ok(),
        Some(transcript.clone()),
        "the transcript comes back"
    );
    bencher.bench_local(|| {
        let text = serde_json::to_string(black_box(&transcript)).unwrap_or_default();
        serde_json::from_str::<Vec<Message>>(black_box(&text)).is_ok()
    });
}

/// Decoding a document whose pending turn holds `n` calls (a run whose cap
/// was raised far past the default): the cost must grow linearly with `n`.
/// The time per call is the figure to compare across sizes.
#[divan::bench(args = [1_000, 10_000, 100_000])]
fn decode_large_turn(bencher: divan::Bencher, n: usize) {
    let runtime = runtime();
    let registry = registry();
    let log = MemoryLog::new();
    let model = ScriptedModel::default();
    let agent = Agent::new(&registry, &model, &log);
    let mut state = state();
    state.options.max_calls_per_turn = u32::try_from(n).unwrap_or(u32::MAX);
    let run = runtime.block_on(capture(&agent, state, (0..n).map(call).collect()));
    let document = run.encode().unwrap_or_default();
    match Suspended::<AwaitingApproval>::decode(&document) {
        Ok(decoded) => assert_eq!(decoded.pending().len(), n, "every call comes back"),
        Err(error) => panic!("{error}"),
    }
    bencher
        .counter(divan::counter::ItemsCount::new(n))
        .bench_local(|| Suspended::<AwaitingApproval>::decode(black_box(&document)).is_ok());
}
