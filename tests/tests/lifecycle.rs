//! The run lifecycle, rule by rule: the turn scan (SPEC §5), suspension and
//! resume (§6), turn binding (§7) and the audit record.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};
use toolgate::{
    Agent, OperatorDeclaration, Registry,
    erased::ErasedTool,
    gate::{Effect, Facts},
    run::{
        Arguments, Message, Outcome, ProposedCall, Response, RunError, RunOptions, RunRequest,
        Usage,
    },
    suspend::{
        AwaitingApproval, Decision, InputSubmission, Refusal, ResumeError, Suspended, TurnDigest,
        Verdict, WaitingForInput,
    },
    testing::ScriptedModel,
};
use toolgate_tests::{
    CountingProvider, Greet, HandErased, Journal, JournalLog, OperatorTool, PickColour, ReadNote,
    ShowSecrets, WriteNote, call, turn,
};

fn registry_with(journal: &Journal, issue: OperatorDeclaration, write_note: bool) -> Registry {
    let (provider, _) = CountingProvider::new(
        "servers",
        vec![ErasedTool::new(OperatorTool {
            server: "gh".into(),
            name: "gh.create_issue".into(),
            declaration: issue,
        })],
    );
    let mut builder = Registry::builder()
        .builtin(ReadNote {
            journal: journal.clone(),
        })
        .builtin(Greet {
            journal: journal.clone(),
        })
        .builtin(PickColour {
            journal: journal.clone(),
        })
        .builtin(ShowSecrets)
        .provider(provider);
    if write_note {
        builder = builder.builtin(WriteNote {
            journal: journal.clone(),
        });
    }
    match builder.build() {
        Ok(registry) => registry,
        Err(error) => panic!("{error}"),
    }
}

fn registry(journal: &Journal) -> Registry {
    registry_with(journal, OperatorDeclaration::ApprovalRequired, true)
}

/// A registry over a journal, a scripted model and a journaling log: what
/// most tests here start from.
struct World {
    journal: Journal,
    registry: Registry,
    model: ScriptedModel,
    log: JournalLog,
}

impl World {
    fn new<R: Into<Response>>(script: impl IntoIterator<Item = R>) -> Self {
        let journal = Journal::default();
        Self {
            registry: registry(&journal),
            model: ScriptedModel::new(script),
            log: JournalLog::new(&journal),
            journal,
        }
    }

    fn agent(&self) -> Agent<'_> {
        Agent::new(&self.registry, &self.model, &self.log)
    }
}

fn request(options: RunOptions) -> RunRequest {
    RunRequest {
        options,
        ..RunRequest::new("alice", "do the thing")
    }
}

async fn start(agent: &Agent<'_>, options: RunOptions) -> Outcome {
    match agent.start(request(options)).await {
        Ok(outcome) => outcome,
        Err(error) => panic!("run failed: {error}"),
    }
}

fn awaiting(outcome: Outcome) -> Suspended<AwaitingApproval> {
    match outcome {
        Outcome::AwaitingApproval(run) => run,
        other => panic!("expected a run awaiting approval, got {other:?}"),
    }
}

fn waiting(outcome: Outcome) -> Suspended<WaitingForInput> {
    match outcome {
        Outcome::WaitingForInput(run) => run,
        other => panic!("expected a run waiting for input, got {other:?}"),
    }
}

fn finished<S: std::fmt::Debug>(
    result: Result<Outcome, ResumeError<S>>,
) -> toolgate::run::RunState {
    match result {
        Ok(Outcome::Finished { state, .. }) => state,
        other => panic!("expected a finished run, got {other:?}"),
    }
}

fn refused<S: std::fmt::Debug>(result: Result<Outcome, ResumeError<S>>) -> (Suspended<S>, Refusal) {
    match result {
        Err(ResumeError::Refused { run, reason }) => (run, reason),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// The results the run got, as (tool, is_error, content).
fn results(state: &toolgate::run::RunState) -> Vec<(String, bool, String)> {
    state
        .transcript
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                name,
                content,
                is_error,
                ..
            } => Some((name.clone(), *is_error, content.clone())),
            _ => None,
        })
        .collect()
}

fn approve(run: &Suspended<AwaitingApproval>, by: &str) -> Decision {
    Decision {
        verdict: Verdict::Approve,
        digest: run.digest(),
        decided_by: by.into(),
    }
}

fn input(run: &Suspended<WaitingForInput>, data: Value) -> InputSubmission {
    InputSubmission {
        data,
        digest: run.digest(),
        submitted_by: "alice".into(),
    }
}

fn done() -> toolgate::run::Reply {
    toolgate::run::Reply::Text("done".into())
}

// ---------------------------------------------------------------- §5 scan

#[tokio::test]
async fn scan_approval_first_and_nothing_of_the_turn_runs_before_it_passes() {
    let world = World::new([turn(vec![
        call("1", "read_note", json!({})),
        call("2", "write_note", json!({"text": "hi"})),
    ])]);
    let agent = world.agent();
    let run = awaiting(start(&agent, RunOptions::default()).await);
    assert_eq!(run.pending().len(), 2);
    assert!(
        world.journal.entries().is_empty(),
        "the read ran before the scan passed"
    );
}

#[tokio::test]
async fn scan_input_second_names_the_tool_and_carries_its_schema() {
    let world = World::new([turn(vec![
        call("1", "read_note", json!({})),
        call("2", "greet", json!({})),
    ])]);
    let agent = world.agent();
    let run = waiting(start(&agent, RunOptions::default()).await);
    assert_eq!(run.input_tool(), "greet");
    assert_eq!(run.input_call().id, "2");
    let schema = run.input_schema().as_value();
    assert_eq!(
        schema.pointer("/properties/name/minLength"),
        Some(&json!(1))
    );
    assert!(world.journal.entries().is_empty());
}

#[tokio::test]
async fn scan_the_approval_scan_runs_before_the_input_scan() {
    let world = World::new([turn(vec![
        call("1", "greet", json!({})),
        call("2", "write_note", json!({})),
    ])]);
    let agent = world.agent();
    let _ = awaiting(start(&agent, RunOptions::default()).await);
}

/// A call to a tool the run does not offer — outside its allow-list, or
/// unknown — is answered with an error naming what is offered, and never
/// pauses the run: the turn holding it is refused whole (its write is never
/// put to a person beside a call that cannot run), and the model's next,
/// usable, turn runs.
#[tokio::test]
async fn scan_unknown_and_non_offered_calls_get_error_results_and_never_pause() {
    let world = World::new([
        turn(vec![
            call("1", "write_note", json!({})),
            call("2", "greet", json!({})),
            call("3", "no_such_tool", json!({})),
            call("4", "read_note", json!({"id": 7})),
        ]),
        turn(vec![call("5", "read_note", json!({"id": 7}))]),
        done(),
    ]);
    let agent = world.agent();
    let options = RunOptions {
        allow: Some(vec!["read_note".into()]),
        ..RunOptions::default()
    };
    let Outcome::Finished { state, .. } = start(&agent, options).await else {
        panic!("a turn of non-offered calls must not pause");
    };
    let refused = |name: &str| {
        format!(
            "This call could not be used: no tool `{name}` is offered to this run; the tools it offers are `read_note`. Nothing of this turn ran; ask again with every call well-formed."
        )
    };
    assert_eq!(
        results(&state),
        [
            ("write_note".into(), true, refused("write_note")),
            ("greet".into(), true, refused("greet")),
            ("no_such_tool".into(), true, refused("no_such_tool")),
            (
                "read_note".into(),
                true,
                "This call was not run: 3 other calls of this turn could not be used (see their results). Nothing of this turn ran; ask again.".into()
            ),
            (
                "read_note".into(),
                false,
                r#"read_note ran with {"id":7}"#.into()
            ),
        ]
    );
    assert_eq!(world.journal.entries(), [r#"read_note {"id":7}"#]);
}

#[tokio::test]
async fn scan_a_degenerate_input_schema_is_refused_at_capture() {
    let tool = Arc::new(HandErased {
        name: "ask".into(),
        facts: Facts {
            requires_input: true,
            ..Facts::new(toolgate::gate::Origin::Local, Effect::ReadOnly)
        },
        input: Some(schemars::Schema::default()),
        parameters: schemars::Schema::default(),
        server: None,
        calls: std::sync::atomic::AtomicUsize::default(),
    });
    let registry = match Registry::builder().erased(tool).build() {
        Ok(registry) => registry,
        Err(error) => panic!("{error}"),
    };
    let model = ScriptedModel::new([turn(vec![call("1", "ask", json!({}))])]);
    let log = toolgate::testing::MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    match agent.start(RunRequest::new("alice", "ask")).await {
        Err(RunError::UnusableInputSchema {
            tool,
            problem,
            state,
        }) => {
            assert_eq!(tool, "ask");
            assert_eq!(
                problem,
                "the schema has no `type` and no `properties`, so it would accept anything"
            );
            assert_eq!(state.iterations, 1, "the run is handed back");
        }
        other => panic!("expected the schema to be refused, got {other:?}"),
    }
}

#[tokio::test]
async fn the_driver_stops_at_the_iteration_cap() {
    let world =
        World::new((0..5).map(|i| turn(vec![call(&i.to_string(), "read_note", json!({}))])));
    let agent = world.agent();
    let options = RunOptions {
        max_iterations: 3,
        ..RunOptions::default()
    };
    let Outcome::LimitReached(state) = start(&agent, options).await else {
        panic!("expected the cap");
    };
    assert_eq!(state.iterations, 3);
    assert_eq!(world.journal.entries().len(), 3);
}

// ------------------------------------------------------ §6 approval resume

#[tokio::test]
async fn approval_denied_every_pending_call_gets_an_error_result() {
    let world = World::new([
        turn(vec![
            call("1", "read_note", json!({})),
            call("2", "write_note", json!({})),
        ]),
        done(),
    ]);
    let agent = world.agent();
    let run = awaiting(start(&agent, RunOptions::default()).await);
    let decision = Decision {
        verdict: Verdict::Deny,
        ..approve(&run, "bob")
    };
    let state = finished(run.decide(&agent, decision).await);
    let denied = "the call was denied by bob; it was not executed";
    assert_eq!(
        results(&state),
        [
            ("read_note".into(), true, denied.into()),
            ("write_note".into(), true, denied.into())
        ]
    );
    assert_eq!(world.journal.entries(), ["record denied by bob"]);
}

#[tokio::test]
async fn approval_is_recorded_before_anything_of_the_turn_runs() {
    let world = World::new([
        turn(vec![
            call("1", "read_note", json!({})),
            call("2", "write_note", json!({"text": "hi"})),
        ]),
        done(),
    ]);
    let agent = world.agent();
    let run = awaiting(start(&agent, RunOptions::default()).await);
    let digest = run.digest();
    let decision = approve(&run, "bob");
    let _ = finished(run.decide(&agent, decision).await);
    assert_eq!(
        world.journal.entries(),
        [
            "record approved by bob",
            "read_note {}",
            r#"write_note {"text":"hi"}"#
        ]
    );
    let records = world.log.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].digest, digest);
    assert_eq!(records[0].tools, ["read_note", "write_note"]);
    assert_eq!(records[0].requested_by, "alice");
    assert!(!records[0].self_decided);
    assert!(records[0].at_unix_ms > 0);
}

#[tokio::test]
async fn approval_a_tool_no_longer_offered_at_resume_is_refused() {
    let journal = Journal::default();
    let before = registry(&journal);
    let model = ScriptedModel::new([
        turn(vec![
            call("1", "write_note", json!({})),
            call("2", "read_note", json!({})),
        ]),
        done(),
    ]);
    let log = JournalLog::new(&journal);
    let run = awaiting(start(&Agent::new(&before, &model, &log), RunOptions::default()).await);
    // The host restarted with `write_note` gone; the offer is recomputed.
    let after = registry_with(&journal, OperatorDeclaration::ApprovalRequired, false);
    let agent = Agent::new(&after, &model, &log);
    let decision = approve(&run, "bob");
    let state = finished(run.decide(&agent, decision).await);
    assert_eq!(
        results(&state),
        [
            (
                "write_note".into(),
                true,
                "unknown tool `write_note`; the call was not executed".into()
            ),
            ("read_note".into(), false, "read_note ran with {}".into()),
        ]
    );
}

#[tokio::test]
async fn approval_a_pending_call_that_requires_input_is_refused() {
    let world = World::new([
        turn(vec![
            call("1", "greet", json!({"name": "model"})),
            call("2", "write_note", json!({})),
        ]),
        done(),
    ]);
    let agent = world.agent();
    let run = awaiting(start(&agent, RunOptions::default()).await);
    let decision = approve(&run, "bob");
    let state = finished(run.decide(&agent, decision).await);
    assert_eq!(
        results(&state)[0],
        (
            "greet".into(),
            true,
            "tool `greet` requires user input that was not provided; the call was not executed"
                .into()
        )
    );
    assert_eq!(
        world.journal.entries(),
        ["record approved by bob", "write_note {}"]
    );
}

/// SPEC §3.1 for a tool erased by hand: a local write that requires input
/// breaks rule 1 and is refused at boot, naming the tool and the rule. A tool
/// that hides its input schema until the registry has checked it gains
/// nothing: its facts were read once, when it was erased, so it stays a plain
/// write — approval, then one execution with the model's arguments.
#[tokio::test]
async fn the_approval_and_input_deadlock_is_refused_at_boot_and_cannot_be_smuggled_in_later() {
    let deadlock = || {
        HandErased::new(
            "send_message",
            Facts {
                requires_input: true,
                ..Facts::new(toolgate::gate::Origin::Local, Effect::NonIdempotentWrite)
            },
        )
    };
    let Err(error) = Registry::builder().erased(deadlock()).build() else {
        panic!("the boot check must refuse the tool");
    };
    assert_eq!(
        error.to_string(),
        "the tool registry refused to boot:\n  - tool `send_message` breaks rule 1: a local tool that declares a write cannot require input: its write needs approval, and the approval scan runs before the input scan and the approval resume carries no input, so it would ask for approval on every turn and never run"
    );

    let tool = deadlock();
    let honest_at_boot = Arc::new(LiesAtBoot {
        inner: Arc::clone(&tool),
        show_input: std::sync::atomic::AtomicBool::default(),
    });
    let registry = match Registry::builder().erased(honest_at_boot.clone()).build() {
        Ok(registry) => registry,
        Err(error) => panic!("{error}"),
    };
    honest_at_boot.show_input.store(true, Ordering::SeqCst);
    let offered = registry.offer_all().await;
    let Some(erased) = offered.get("send_message") else {
        panic!("registered");
    };
    assert!(
        !erased.requires_input(),
        "the facts were read once, at erasure"
    );
    assert!(erased.input_schema().is_none());
    let model = ScriptedModel::new([
        turn(vec![call("1", "send_message", json!({"to": "bob"}))]),
        done(),
    ]);
    let log = toolgate::testing::MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    let run = awaiting(start(&agent, RunOptions::default()).await);
    let decision = approve(&run, "bob");
    match run.decide(&agent, decision).await {
        Ok(Outcome::Finished { .. }) => {}
        other => panic!("expected the approved write to run and the run to finish, got {other:?}"),
    }
    assert_eq!(log.records().len(), 1);
    assert_eq!(tool.calls.load(Ordering::SeqCst), 1);
}

struct LiesAtBoot {
    inner: Arc<HandErased>,
    show_input: std::sync::atomic::AtomicBool,
}

impl toolgate::erased::DynTool for LiesAtBoot {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn parameters(&self) -> &schemars::Schema {
        self.inner.parameters()
    }
    fn origin(&self) -> toolgate::gate::Origin {
        self.inner.origin()
    }
    fn effect(&self) -> Effect {
        self.inner.effect()
    }
    fn input_schema(&self) -> Option<&schemars::Schema> {
        if self.show_input.load(Ordering::SeqCst) {
            self.inner.input_schema()
        } else {
            None
        }
    }
    fn execute(&self, arguments: Value) -> toolgate::erased::BoxFuture<'_, toolgate::ToolOutput> {
        self.inner.execute(arguments)
    }
}

// --------------------------------------------------------- §6 input resume

#[tokio::test]
async fn input_invalid_data_hands_the_run_back_intact_and_can_be_resubmitted() {
    let world = World::new([turn(vec![call("1", "greet", json!({}))]), done()]);
    let agent = world.agent();
    let run = waiting(start(&agent, RunOptions::default()).await);
    let before = run.clone();
    let submission = input(&run, json!({"name": "", "formality": 9}));
    let (run, reason) = refused(run.submit_input(&agent, submission).await);
    assert_eq!(run, before, "the run is handed back unchanged");
    let Refusal::InvalidInput(errors) = reason else {
        panic!("expected invalid input, got {reason:?}");
    };
    let mut paths: Vec<_> = errors.iter().map(|e| e.path.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(paths, ["/formality", "/name"]);
    assert!(
        world.log.records().is_empty(),
        "a refused submission decides nothing"
    );
    assert!(world.journal.entries().is_empty());

    let submission = input(&run, json!({"name": "Ada"}));
    let state = finished(run.submit_input(&agent, submission).await);
    assert_eq!(results(&state).len(), 1);
    assert!(!results(&state)[0].1);
}

#[tokio::test]
async fn input_is_overlaid_on_the_models_arguments_bounded_to_declared_keys() {
    let world = World::new([
        turn(vec![call(
            "1",
            "greet",
            json!({"name": "Model's guess", "formality": 3, "language": "fr"}),
        )]),
        done(),
    ]);
    let agent = world.agent();
    let run = waiting(start(&agent, RunOptions::default()).await);
    let submission = input(
        &run,
        json!({"name": "Ada", "language": "de", "admin": true}),
    );
    let _ = finished(run.submit_input(&agent, submission).await);
    // `name` and `formality` are declared: the model's values are dropped and
    // the human's taken. `language` and `admin` are not: the human's are not
    // taken, the model's `language` stays.
    assert_eq!(
        world.journal.entries(),
        [
            "record input submitted by alice",
            r#"greet {"formality":null,"language":"fr","name":"Ada"}"#
        ]
    );
}

#[tokio::test]
async fn input_a_second_input_requiring_call_is_refused_and_other_siblings_run() {
    let world = World::new([
        turn(vec![
            call("1", "greet", json!({})),
            call("2", "pick_colour", json!({})),
            call("3", "read_note", json!({})),
        ]),
        done(),
    ]);
    let agent = world.agent();
    let run = waiting(start(&agent, RunOptions::default()).await);
    let submission = input(&run, json!({"name": "Ada"}));
    let state = finished(run.submit_input(&agent, submission).await);
    let outcome: Vec<_> = results(&state)
        .into_iter()
        .map(|(n, e, _)| (n, e))
        .collect();
    assert_eq!(
        outcome,
        [
            ("greet".into(), false),
            ("pick_colour".into(), true),
            ("read_note".into(), false),
        ]
    );
    assert_eq!(
        results(&state)[1].2,
        "tool `pick_colour` requires user input that was not provided (one call per turn can wait for input); the call was not executed"
    );
}

#[tokio::test]
async fn input_a_sibling_that_needs_approval_is_refused_an_input_is_never_an_approval() {
    let journal = Journal::default();
    // When the turn was scanned the operator had declared `gh` safe...
    let before = registry_with(&journal, OperatorDeclaration::NoApproval, true);
    let model = ScriptedModel::new([
        turn(vec![
            call("1", "greet", json!({})),
            call("2", "gh.create_issue", json!({"title": "x"})),
        ]),
        done(),
    ]);
    let log = JournalLog::new(&journal);
    let run = waiting(start(&Agent::new(&before, &model, &log), RunOptions::default()).await);
    // ...and turned approval back on before the user answered.
    let after = registry_with(&journal, OperatorDeclaration::ApprovalRequired, true);
    let agent = Agent::new(&after, &model, &log);
    let submission = input(&run, json!({"name": "Ada"}));
    let state = finished(run.submit_input(&agent, submission).await);
    assert_eq!(
        results(&state)[1],
        (
            "gh.create_issue".into(),
            true,
            "tool `gh.create_issue` requires approval that was not given (an input submission is not an approval); the call was not executed".into()
        )
    );
}

// ------------------------------------------------------ §7 turn binding

#[tokio::test]
async fn binding_a_missing_or_wrong_digest_is_refused_and_the_run_is_unchanged() {
    let world = World::new([
        turn(vec![call("1", "write_note", json!({}))]),
        turn(vec![call("2", "greet", json!({}))]),
        done(),
    ]);
    let agent = world.agent();
    let mut run = awaiting(start(&agent, RunOptions::default()).await);
    // A decision cannot be built without a digest; a wrong one is refused.
    for digest in [
        TurnDigest::from_text(""),
        TurnDigest::from_text("sha256:0000"),
        toolgate::testing::rules::turn_digest(
            run.run_id(),
            run.state().iterations,
            &[call("1", "write_note", json!({"x": 1}))],
            None,
        ),
    ] {
        let before = run.clone();
        let decision = Decision {
            digest: digest.clone(),
            ..approve(&run, "bob")
        };
        let (back, reason) = refused(run.decide(&agent, decision).await);
        assert_eq!(back, before);
        assert_eq!(reason, Refusal::UnknownTurn);
        let text = reason.to_string();
        assert!(
            !text.contains(before.digest().as_str()) && !text.contains("sha256:"),
            "a refusal never shows the expected digest: {text}"
        );
        run = back;
    }
    assert!(
        world.journal.entries().is_empty(),
        "nothing ran and nothing was recorded"
    );
    assert_eq!(
        run.digest(),
        toolgate::testing::rules::reviewed_turn_digest(
            run.run_id(),
            run.state().iterations,
            run.pending(),
            None,
            run.review()
        )
    );
    let decision = approve(&run, "bob");
    let run = match run.decide(&agent, decision).await {
        Ok(Outcome::WaitingForInput(run)) => run,
        other => panic!("{other:?}"),
    };
    let submission = InputSubmission {
        digest: TurnDigest::from_text(""),
        ..input(&run, json!({"name": "Ada"}))
    };
    let (run, reason) = refused(run.submit_input(&agent, submission).await);
    assert_eq!(reason, Refusal::UnknownTurn);
    let submission = input_for(&run);
    let _ = finished(run.submit_input(&agent, submission).await);
}

fn input_for(run: &Suspended<WaitingForInput>) -> InputSubmission {
    input(run, json!({"name": "Ada"}))
}

#[tokio::test]
async fn binding_four_eyes_refuses_the_requesters_own_approval() {
    let world = World::new([turn(vec![call("1", "write_note", json!({}))]), done()]);
    let agent = world.agent();
    let options = RunOptions {
        four_eyes: true,
        ..RunOptions::default()
    };
    let run = awaiting(start(&agent, options).await);
    let before = run.clone();
    let decision = approve(&run, "alice");
    let (run, reason) = refused(run.decide(&agent, decision).await);
    assert_eq!(run, before);
    assert_eq!(
        reason.to_string(),
        "`alice` started this run, and its approval must come from someone else"
    );
    let decision = approve(&run, "bob");
    let _ = finished(run.decide(&agent, decision).await);
    assert_eq!(world.log.records()[0].decided_by, "bob");
}

#[tokio::test]
async fn binding_a_self_approval_is_always_visible_in_the_record() {
    let world = World::new([turn(vec![call("1", "write_note", json!({}))]), done()]);
    let agent = world.agent();
    let run = awaiting(start(&agent, RunOptions::default()).await);
    let decision = approve(&run, "alice");
    let _ = finished(run.decide(&agent, decision).await);
    let records = world.log.records();
    assert_eq!(records.len(), 1);
    assert!(records[0].self_decided);
    assert_eq!(records[0].decided_by, records[0].requested_by);
}

// ------------------------------------------------------------ audit

#[tokio::test]
async fn audit_a_failed_record_refuses_the_approval_of_a_write() {
    let world = World::new([turn(vec![call("1", "write_note", json!({}))]), done()]);
    let agent = world.agent();
    let run = awaiting(start(&agent, RunOptions::default()).await);
    world.log.fail.store(true, Ordering::SeqCst);
    let before = run.clone();
    let decision = approve(&run, "bob");
    let (run, reason) = refused(run.decide(&agent, decision).await);
    assert_eq!(run, before);
    assert_eq!(
        reason.to_string(),
        "the decision could not be recorded, and the turn would run a write: the decision log failed: disk full"
    );
    assert_eq!(world.journal.entries(), ["log failed"]);
    world.log.fail.store(false, Ordering::SeqCst);
    let decision = approve(&run, "bob");
    let _ = finished(run.decide(&agent, decision).await);
    assert_eq!(
        world.journal.entries(),
        ["log failed", "record approved by bob", "write_note {}"]
    );
}

#[tokio::test]
async fn audit_a_failed_record_does_not_block_a_read_only_turn() {
    let world = World::new([
        turn(vec![
            call("1", "show_secrets", json!({"path": "a"})),
            call("2", "read_note", json!({})),
        ]),
        done(),
    ]);
    let agent = world.agent();
    let run = awaiting(start(&agent, RunOptions::default()).await);
    world.log.fail.store(true, Ordering::SeqCst);
    let decision = approve(&run, "bob");
    let state = finished(run.decide(&agent, decision).await);
    assert!(results(&state).iter().all(|(_, is_error, _)| !is_error));
    assert_eq!(world.journal.entries(), ["log failed", "read_note {}"]);
}

#[tokio::test]
async fn audit_a_failed_record_never_blocks_a_denial() {
    let world = World::new([turn(vec![call("1", "write_note", json!({}))]), done()]);
    let agent = world.agent();
    let run = awaiting(start(&agent, RunOptions::default()).await);
    world.log.fail.store(true, Ordering::SeqCst);
    let decision = Decision {
        verdict: Verdict::Deny,
        ..approve(&run, "bob")
    };
    let state = finished(run.decide(&agent, decision).await);
    assert!(results(&state)[0].1);
    assert_eq!(world.journal.entries(), ["log failed"]);
}

// ------------------------------------------------------------ persistence

#[tokio::test]
async fn a_suspended_run_survives_encode_and_decode_and_resumes() {
    let world = World::new([turn(vec![call("1", "write_note", json!({}))]), done()]);
    let agent = world.agent();
    let run = awaiting(start(&agent, RunOptions::default()).await);
    let document = match run.encode() {
        Ok(document) => document,
        Err(error) => panic!("{error}"),
    };
    let reloaded = match Suspended::<AwaitingApproval>::decode(&document) {
        Ok(run) => run,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(reloaded, run);
    assert_eq!(reloaded.digest(), run.digest());
    let wrong_kind = Suspended::<WaitingForInput>::decode(&document);
    assert_eq!(
        wrong_kind.err().map(|e| e.reason),
        Some("the document holds a run awaiting approval, not a run waiting for input".into())
    );
    let decision = approve(&reloaded, "bob");
    let _ = finished(reloaded.decide(&agent, decision).await);
    assert_eq!(
        world.journal.entries(),
        ["record approved by bob", "write_note {}"]
    );
}

// ------------------------------------------------------------ bounded turns

/// A turn larger than the run allows is refused before anything of it runs
/// or is stored: the model is told, with the first calls up to the cap each
/// answered, and the run goes on.
#[tokio::test]
async fn bounded_a_turn_over_the_cap_is_refused() {
    let world = World::new([
        turn(
            (0..=toolgate::run::DEFAULT_MAX_CALLS_PER_TURN)
                .map(|i| call(&i.to_string(), "write_note", json!({"text": "hi"})))
                .collect(),
        ),
        done(),
    ]);
    let agent = world.agent();
    let Ok(Outcome::Finished { answer, state }) = agent.start(request(RunOptions::default())).await
    else {
        panic!("the run goes on after the turn is refused, and finishes");
    };
    assert_eq!(answer, "done");
    let cap = toolgate::run::DEFAULT_MAX_CALLS_PER_TURN as usize;
    let results: Vec<&str> = state
        .transcript
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                content, is_error, ..
            } => {
                assert!(is_error);
                Some(content.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), cap, "the calls kept, each answered");
    assert!(
        results[0].contains("this turn holds 129 calls, and a turn may hold at most 128"),
        "{}",
        results[0]
    );
    assert!(world.journal.entries().is_empty(), "nothing ran");
}

// ------------------------------------------------------------ unusable turns

fn proposed(id: Option<&str>, name: &str, arguments: Arguments) -> ProposedCall {
    ProposedCall {
        id: id.map(str::to_owned),
        name: name.into(),
        arguments,
    }
}

fn proposing(calls: Vec<ProposedCall>) -> Response {
    Response {
        calls,
        ..Response::default()
    }
}

/// The calls of the first assistant message, as (id, name, arguments).
fn first_turn(state: &toolgate::run::RunState) -> Vec<(String, String, Value)> {
    state
        .transcript
        .iter()
        .find_map(|m| match m {
            Message::Assistant { calls, .. } if !calls.is_empty() => Some(
                calls
                    .iter()
                    .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
                    .collect(),
            ),
            _ => None,
        })
        .unwrap_or_default()
}

/// A write whose arguments do not parse is never put to a person: the
/// model is told what was wrong, the run goes on, and its corrected call is
/// the one that waits for approval.
#[tokio::test]
async fn unusable_arguments_that_do_not_parse_are_answered_and_the_model_corrects_itself() {
    let world = World::new([
        proposing(vec![proposed(
            Some("1"),
            "write_note",
            Arguments::parse(r#"{"text": "hi"#),
        )]),
        Response::from(turn(vec![call("2", "write_note", json!({"text": "hi"}))])),
    ]);
    let agent = world.agent();
    let run = awaiting(start(&agent, RunOptions::default()).await);
    assert!(world.journal.entries().is_empty(), "nothing ran");
    assert_eq!(run.state().iterations, 2);
    let told = results(run.state());
    assert_eq!(told.len(), 1);
    assert_eq!(told[0].0, "write_note");
    assert!(told[0].1, "an error result");
    assert_eq!(
        told[0].2,
        "This call could not be used: the arguments are not valid JSON (EOF while parsing a string at line 1 column 12): `{\"text\": \"hi`. Nothing of this turn ran; ask again with every call well-formed."
    );
    assert_eq!(
        first_turn(run.state()),
        [("1".into(), "write_note".into(), json!({}))],
        "the transcript keeps the model's id; arguments that are no object are written as {{}}"
    );
    assert_eq!(run.pending().len(), 1);
    assert_eq!(run.pending()[0].id, "2");
}

/// A call without an id, or with an empty one, cannot be answered: the
/// turn is refused whole, its other calls are told why they did not run,
/// and the transcript gives the unusable call an id of the run's own.
#[tokio::test]
async fn unusable_a_call_without_an_id_refuses_the_whole_turn() {
    let world = World::new([
        proposing(vec![
            proposed(None, "read_note", Arguments::Json(json!({}))),
            proposed(Some(" "), "read_note", Arguments::Json(json!({}))),
            proposed(Some("r"), "read_note", Arguments::Json(json!({}))),
        ]),
        Response::text("done"),
    ]);
    let agent = world.agent();
    let state = match start(&agent, RunOptions::default()).await {
        Outcome::Finished { state, .. } => state,
        other => panic!("expected the run to finish, got {other:?}"),
    };
    assert!(
        world.journal.entries().is_empty(),
        "no call of the turn ran"
    );
    let ids: Vec<String> = first_turn(&state).into_iter().map(|c| c.0).collect();
    assert_eq!(ids, ["toolgate_refused_1_0", "toolgate_refused_1_1", "r"]);
    let told: Vec<String> = results(&state).into_iter().map(|r| r.2).collect();
    assert_eq!(
        told,
        [
            "This call could not be used: the call has no id, so no result can be matched to it. Nothing of this turn ran; ask again with every call well-formed.",
            "This call could not be used: the call's id is empty, so no result can be matched to it. Nothing of this turn ran; ask again with every call well-formed.",
            "This call was not run: 2 other calls of this turn could not be used (see their results). Nothing of this turn ran; ask again.",
        ]
    );
}

/// Two calls under one id, arguments that are JSON but no object, and a
/// call naming no tool each make a turn unusable; a write among them is
/// not paused for approval.
#[tokio::test]
async fn unusable_repeated_ids_non_object_arguments_and_nameless_calls() {
    let world = World::new([
        proposing(vec![
            proposed(Some("1"), "read_note", Arguments::Json(json!({}))),
            proposed(Some("1"), "write_note", Arguments::Json(json!({}))),
        ]),
        proposing(vec![proposed(
            Some("2"),
            "write_note",
            Arguments::Json(json!(["hi"])),
        )]),
        proposing(vec![proposed(Some("3"), "", Arguments::Json(json!({})))]),
        Response::text("done"),
    ]);
    let agent = world.agent();
    let state = match start(&agent, RunOptions::default()).await {
        Outcome::Finished { state, .. } => state,
        other => panic!("expected the run to finish, got {other:?}"),
    };
    assert!(world.journal.entries().is_empty(), "nothing ran");
    assert_eq!(state.iterations, 4);
    let ids: Vec<String> = first_turn(&state).into_iter().map(|c| c.0).collect();
    assert_eq!(ids, ["1", "toolgate_refused_1_1"]);
    let told: Vec<String> = results(&state).into_iter().map(|r| r.2).collect();
    let repeated = "This call could not be used: the id `1` is given to 2 calls of this turn; each call needs an id of its own. Nothing of this turn ran; ask again with every call well-formed.";
    assert_eq!(told[0], repeated);
    assert_eq!(told[1], repeated);
    assert_eq!(
        told[2],
        "This call could not be used: the arguments are a JSON array, not an object of named parameters. Nothing of this turn ran; ask again with every call well-formed."
    );
    assert_eq!(
        told[3],
        "This call could not be used: the call names no tool. Nothing of this turn ran; ask again with every call well-formed."
    );
}

/// What each model request cost is kept on its answer in the transcript,
/// summed by the run, and survives the stored document.
#[tokio::test]
async fn usage_is_kept_per_turn_and_summed() {
    let first = Usage {
        input_tokens: 120,
        cached_input_tokens: 100,
        cache_write_input_tokens: 0,
        output_tokens: 30,
        reasoning_tokens: 12,
    };
    let second = Usage {
        input_tokens: 200,
        cached_input_tokens: 0,
        cache_write_input_tokens: 150,
        output_tokens: 7,
        reasoning_tokens: 0,
    };
    let world = World::new([
        Response::from(turn(vec![call("1", "read_note", json!({}))])).with_usage(first),
        Response::from(turn(vec![call("2", "write_note", json!({}))])).with_usage(second),
        Response::text("done"),
    ]);
    let agent = world.agent();
    let run = awaiting(start(&agent, RunOptions::default()).await);
    assert_eq!(
        run.state().usage(),
        Some(Usage {
            input_tokens: 320,
            cached_input_tokens: 100,
            cache_write_input_tokens: 150,
            output_tokens: 37,
            reasoning_tokens: 12,
        })
    );
    let document = match run.encode() {
        Ok(document) => document,
        Err(error) => panic!("{error}"),
    };
    assert!(document.contains("\"version\":9"), "{document}");
    let reloaded = match Suspended::<AwaitingApproval>::decode(&document) {
        Ok(run) => run,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(reloaded.state().usage(), run.state().usage());
    let per_turn: Vec<Option<Usage>> = reloaded
        .state()
        .transcript
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { usage, .. } => Some(*usage),
            _ => None,
        })
        .collect();
    assert_eq!(per_turn, [Some(first), Some(second)]);
    let decision = approve(&reloaded, "bob");
    let state = finished(reloaded.decide(&agent, decision).await);
    assert_eq!(state.usage().map(|u| u.total_tokens()), Some(357));
}

/// A requester or decider that names nobody is refused; four eyes compares
/// normalised names, so the requester cannot approve as ` ALICE `.
#[tokio::test]
async fn binding_four_eyes_compares_people_not_strings() {
    let world = World::new([turn(vec![call("1", "write_note", json!({}))]), done()]);
    let agent = world.agent();
    let options = RunOptions {
        four_eyes: true,
        ..RunOptions::default()
    };
    let mut run = awaiting(start(&agent, options).await);
    for dodge in ["alice ", " ALICE", "ａｌｉｃｅ"] {
        let decision = approve(&run, dodge);
        let (back, reason) = refused(run.decide(&agent, decision).await);
        assert!(
            matches!(reason, Refusal::SelfApproval { .. }),
            "{dodge}: {reason}"
        );
        run = back;
    }
    for nobody in ["", "   ", "bob\u{202e}"] {
        let decision = approve(&run, nobody);
        let (back, reason) = refused(run.decide(&agent, decision).await);
        assert!(
            matches!(reason, Refusal::InvalidIdentity(_)),
            "{nobody:?}: {reason}"
        );
        run = back;
    }
    let decision = approve(&run, " Bob ");
    let _ = finished(run.decide(&agent, decision).await);
    assert_eq!(world.log.records()[0].decided_by, "Bob");
    match agent.start(RunRequest::new(" ", "hi")).await {
        Err(RunError::InvalidRequester(_)) => {}
        other => panic!("expected the requester to be refused, got {other:?}"),
    }
}

/// Two runs whose pending turns are identical have different digests: one
/// run's digest does not approve the other.
#[tokio::test]
async fn binding_one_runs_digest_does_not_approve_another() {
    let script = || [turn(vec![call("1", "write_note", json!({}))]), done()];
    let (first, second) = (World::new(script()), World::new(script()));
    let a = awaiting(start(&first.agent(), RunOptions::default()).await);
    let b = awaiting(start(&second.agent(), RunOptions::default()).await);
    assert_eq!(a.pending(), b.pending());
    assert_ne!(a.digest(), b.digest());
    let decision = approve(&a, "bob");
    let (_, reason) = refused(b.decide(&second.agent(), decision).await);
    assert_eq!(reason, Refusal::UnknownTurn);
    assert!(second.journal.entries().is_empty());
}

/// A host's own loop: each `process_turn` counts the turn, so two suspensions
/// of one run on identical calls have different digests, and the first one's
/// digest does not approve the second. Past the cap nothing runs.
#[tokio::test]
async fn binding_process_turn_counts_turns_so_suspensions_never_share_a_digest() {
    let world = World::new(Vec::<Response>::new());
    let agent = world.agent();
    let state = toolgate::run::RunState {
        denied: Vec::new(),
        client: None,
        run_id: "host-loop".into(),
        requested_by: "alice".into(),
        transcript: Vec::new(),
        iterations: 0,
        options: RunOptions {
            max_iterations: 2,
            ..RunOptions::default()
        },
    };
    let calls = || vec![call("1", "write_note", json!({}))];
    let first = match agent.process_turn(state.clone(), calls()).await {
        Ok(toolgate::run::TurnOutcome::AwaitingApproval(run)) => run,
        other => panic!("expected an approval pause, got {other:?}"),
    };
    let second = match agent.process_turn(first.state().clone(), calls()).await {
        Ok(toolgate::run::TurnOutcome::AwaitingApproval(run)) => run,
        other => panic!("expected an approval pause, got {other:?}"),
    };
    assert_ne!(first.digest(), second.digest());
    let decision = approve(&first, "bob");
    let (second, reason) = refused(second.decide(&agent, decision).await);
    assert_eq!(reason, Refusal::UnknownTurn);
    match agent.process_turn(second.state().clone(), calls()).await {
        Err(RunError::IterationCap { limit: 2, .. }) => {}
        other => panic!("expected the cap, got {other:?}"),
    }
    assert!(world.journal.entries().is_empty(), "nothing ran");
}
