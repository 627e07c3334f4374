//! A write runs only after a decision, whatever public route a host author
//! takes: an offered tool has no way to run itself (pinned by the ui suite),
//! the turn scan gives no permit to a turn that needs approval, a permit runs
//! exactly the call the scan cleared, and a turn with a write runs through
//! the typed suspended run only once a human approved it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Map, Value, json};
use toolgate::run::{Outcome, Reply, RunRequest, ToolCall, TurnScan, scan_turn};
use toolgate::testing::{MemoryLog, ScriptedModel};
use toolgate::{Agent, Execute, Registry, Tool, ToolOutput};

/// Sends money: counts its runs.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct Pay(Arc<AtomicUsize>);

impl Execute for Pay {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        self.0.fetch_add(1, Ordering::SeqCst);
        ToolOutput::text("paid")
    }
}

/// Reads the balance: counts its runs.
#[derive(Tool)]
#[tool(effect = read_only)]
struct Balance(Arc<AtomicUsize>);

impl Execute for Balance {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        self.0.fetch_add(1, Ordering::SeqCst);
        ToolOutput::text("100")
    }
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: json!({"cents": 100}),
    }
}

struct World {
    paid: Arc<AtomicUsize>,
    read: Arc<AtomicUsize>,
    registry: Registry,
}

fn world() -> World {
    let paid = Arc::new(AtomicUsize::new(0));
    let read = Arc::new(AtomicUsize::new(0));
    let registry = Registry::builder()
        .builtin(Pay(Arc::clone(&paid)))
        .builtin(Balance(Arc::clone(&read)))
        .build()
        .unwrap();
    World {
        paid,
        read,
        registry,
    }
}

#[tokio::test]
async fn the_scan_gives_no_permit_to_a_turn_with_a_write() {
    let w = world();
    let offered = w.registry.offer_all().await;
    for turn in [
        vec![call("1", "pay")],
        vec![call("1", "balance"), call("2", "pay")],
        vec![call("1", "pay"), call("2", "balance"), call("3", "unknown")],
    ] {
        assert!(
            matches!(scan_turn(&offered, &turn), TurnScan::Approval),
            "{turn:?}"
        );
    }
    // A read alone is cleared, and its permit runs exactly that call.
    let turn = [call("1", "balance"), call("2", "unknown")];
    let TurnScan::Run(cleared) = scan_turn(&offered, &turn) else {
        panic!("a read waits for nobody");
    };
    let mut outputs = Vec::new();
    for (call, permit) in cleared.into_calls() {
        match permit {
            Ok(permit) => {
                assert_eq!(permit.call(), call);
                assert_eq!(permit.tool().name(), "balance");
                outputs.push(permit.run().await);
            }
            Err(output) => outputs.push(output),
        }
    }
    assert_eq!(outputs[0], ToolOutput::text("100"));
    assert_eq!(
        outputs[1],
        ToolOutput::error("unknown tool `unknown`; the call was not executed")
    );
    // A write the run is not offered is no call at all: it gets an error.
    let reads_only = w.registry.offer(Some(&["balance"])).await;
    let turn = [call("1", "pay")];
    let TurnScan::Run(cleared) = scan_turn(&reads_only, &turn) else {
        panic!("a call the run is not offered needs no approval: it never runs");
    };
    let (_, permit) = cleared.into_calls().next().unwrap();
    assert!(permit.is_err());
    assert_eq!(w.paid.load(Ordering::SeqCst), 0, "no write ran");
    assert_eq!(w.read.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_write_runs_once_after_an_approval_and_never_before() {
    let w = world();
    let model = ScriptedModel::new([
        Reply::Calls {
            content: None,
            calls: vec![call("1", "balance"), call("2", "pay")],
        },
        Reply::Text("paid".into()),
    ]);
    let log = MemoryLog::new();
    let agent = Agent::new(&w.registry, &model, &log);
    let Ok(Outcome::AwaitingApproval(run)) = agent.start(RunRequest::new("alice", "pay")).await
    else {
        panic!("a turn with a write waits");
    };
    assert_eq!(
        (w.read.load(Ordering::SeqCst), w.paid.load(Ordering::SeqCst)),
        (0, 0),
        "the whole turn waits: the read beside the write too"
    );
    // A decision on another turn hands the run back, and nothing runs.
    let refused = run
        .approve(
            &agent,
            "bob",
            toolgate::suspend::TurnDigest::from_text("sha256:0"),
        )
        .await;
    let run = refused
        .err()
        .and_then(toolgate::suspend::ResumeError::into_run)
        .expect("a refused decision hands the run back");
    assert_eq!(w.paid.load(Ordering::SeqCst), 0);
    let digest = run.digest();
    let outcome = run.approve(&agent, "bob", digest).await.unwrap();
    assert!(matches!(outcome, Outcome::Finished { .. }), "{outcome:?}");
    assert_eq!(
        (w.read.load(Ordering::SeqCst), w.paid.load(Ordering::SeqCst)),
        (1, 1)
    );
    assert_eq!(log.records().len(), 1);
}

/// `bob`'s approval of every call of the pending turn, after `others`.
fn approval(
    run: &toolgate::suspend::Suspended<toolgate::suspend::AwaitingApproval>,
    others: &[&str],
) -> toolgate::suspend::CallDecisions {
    toolgate::suspend::CallDecisions {
        calls: run
            .pending()
            .iter()
            .map(|c| (c.id.clone(), toolgate::suspend::CallVerdict::Approve))
            .collect(),
        digest: run.digest(),
        decided_by: "bob".into(),
        also_approved_by: others.iter().map(|o| (*o).to_owned()).collect(),
    }
}

/// A run that needs two approvers runs its write only on a decision that
/// names two distinct people — with four eyes, neither the requester.
#[tokio::test]
async fn a_write_that_needs_two_approvers_runs_only_with_two() {
    for (four_eyes, others, runs) in [
        (false, &[][..], false),
        (false, &["BOB"][..], false),
        (true, &["alice"][..], false),
        (true, &["\u{430}lice"][..], false),
        (false, &["carol"][..], true),
        (true, &["carol", "dave"][..], true),
    ] {
        let w = world();
        let model = ScriptedModel::new([
            Reply::Calls {
                content: None,
                calls: vec![call("1", "pay")],
            },
            Reply::Text("paid".into()),
        ]);
        let log = MemoryLog::new();
        let agent = Agent::new(&w.registry, &model, &log);
        let request = RunRequest {
            options: toolgate::run::RunOptions {
                approvals_required: 2,
                four_eyes,
                ..Default::default()
            },
            ..RunRequest::new("alice", "pay")
        };
        let Ok(Outcome::AwaitingApproval(run)) = agent.start(request).await else {
            panic!("a write waits");
        };
        let decision = approval(&run, others);
        let outcome = run.decide_calls(&agent, decision).await;
        match outcome {
            Ok(_) => assert!(runs, "{others:?} ran"),
            Err(toolgate::suspend::ResumeError::Refused {
                reason: toolgate::suspend::Refusal::TooFewApprovals { need: 2, .. },
                ..
            }) => assert!(!runs, "{others:?} was refused"),
            Err(other) => panic!("{others:?}: {other}"),
        }
        assert_eq!(
            w.paid.load(Ordering::SeqCst),
            usize::from(runs),
            "{others:?}"
        );
    }
}

/// Keeps the plans a run journals, as a store would.
#[derive(Default)]
struct Plans(std::sync::Mutex<Vec<toolgate::journal::TurnPlan>>);

impl toolgate::journal::Journal for Plans {
    fn planned<'a>(
        &'a self,
        plan: &'a toolgate::journal::TurnPlan,
    ) -> toolgate::erased::BoxFuture<'a, Result<(), toolgate::journal::JournalError>> {
        self.0.lock().unwrap().push(plan.clone());
        Box::pin(async { Ok(()) })
    }
    fn started<'a>(
        &'a self,
        _: &'a toolgate::journal::TurnPlan,
        _: usize,
    ) -> toolgate::erased::BoxFuture<'a, Result<(), toolgate::journal::JournalError>> {
        Box::pin(async { Ok(()) })
    }
    fn ended<'a>(
        &'a self,
        _: &'a toolgate::journal::TurnPlan,
        _: usize,
        _: &'a ToolOutput,
    ) -> toolgate::erased::BoxFuture<'a, Result<(), toolgate::journal::JournalError>> {
        Box::pin(async { Ok(()) })
    }
}

/// The plan a run journals for an approved write, read back as a store reads
/// it: with `edit` applied to its stored text.
async fn journaled_plan(
    w: &World,
    options: toolgate::run::RunOptions,
    edit: impl Fn(String) -> String,
) -> toolgate::journal::TurnPlan {
    let model = ScriptedModel::new([
        Reply::Calls {
            content: None,
            calls: vec![call("1", "pay")],
        },
        Reply::Text("paid".into()),
    ]);
    let log = MemoryLog::new();
    let plans = Plans::default();
    let agent = Agent::new(&w.registry, &model, &log).with_journal(&plans);
    let request = RunRequest {
        options,
        ..RunRequest::new("alice", "pay")
    };
    let Ok(Outcome::AwaitingApproval(run)) = agent.start(request).await else {
        panic!("a write waits");
    };
    let decision = approval(&run, &["carol"]);
    let outcome = run.decide_calls(&agent, decision).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let plan = plans
        .0
        .lock()
        .unwrap()
        .first()
        .cloned()
        .expect("a plan was journaled");
    let text = resealed(&plan.encode_with(None).unwrap(), edit);
    toolgate::journal::TurnPlan::decode_with(&text, None).expect("the stored plan reads")
}

/// A plan document with `edit` applied to its body, and a plain checksum
/// recomputed over the edited body: what a writer of a store without an
/// integrity key can do, read back through the crate's codec.
fn resealed(document: &str, edit: impl Fn(String) -> String) -> String {
    let mut value: Value = serde_json::from_str(document).unwrap();
    let body = edit(value["body"].to_string());
    value["checksum"] = toolgate::testing::rules::plan_checksum(&body).into();
    value["body"] = serde_json::from_str(&body).unwrap();
    value.to_string()
}

/// A recovery runs a call that started and never ended again only when the
/// plan and the tool as offered now both say it is safe to: a stored plan
/// whose effect was rewritten to `read_only` leaves the write's outcome
/// unknown.
#[tokio::test]
async fn a_recovery_trusts_the_tools_effect_not_only_the_plans() {
    let w = world();
    let plan = journaled_plan(&w, toolgate::run::RunOptions::default(), |text| {
        text.replace("non_idempotent_write", "read_only")
    })
    .await;
    let before = w.paid.load(Ordering::SeqCst);
    let model = ScriptedModel::new([Reply::Text("done".into())]);
    let log = MemoryLog::new();
    let agent = Agent::new(&w.registry, &model, &log);
    let recovered = agent
        .recover(plan, &[toolgate::journal::CallRecord::Started])
        .await
        .unwrap();
    assert!(
        matches!(recovered, toolgate::run::Recovered::OutcomeUnknown(_)),
        "{recovered:?}"
    );
    assert_eq!(w.paid.load(Ordering::SeqCst), before, "not run again");
}

/// A rerun counts only when it stands: under four eyes not the requester's,
/// and on a run that needs two approvers, two distinct people's.
#[tokio::test]
async fn a_recovery_obeys_a_rerun_only_when_it_stands() {
    use toolgate::journal::CallRecord;
    use toolgate::run::Recovered;
    let cases: [(toolgate::run::RunOptions, &[&str], bool); 5] = [
        (
            toolgate::run::RunOptions {
                four_eyes: true,
                ..Default::default()
            },
            &["alice"],
            false,
        ),
        (
            toolgate::run::RunOptions {
                four_eyes: true,
                ..Default::default()
            },
            &["ALICE", "\u{1d00}lice"],
            false,
        ),
        (
            toolgate::run::RunOptions {
                approvals_required: 2,
                ..Default::default()
            },
            &["bob", "Bob"],
            false,
        ),
        (
            toolgate::run::RunOptions {
                approvals_required: 2,
                ..Default::default()
            },
            &["bob", "carol"],
            true,
        ),
        (toolgate::run::RunOptions::default(), &["bob"], true),
    ];
    for (options, by, runs) in cases {
        let w = world();
        let plan = journaled_plan(&w, options.clone(), |text| text).await;
        let before = w.paid.load(Ordering::SeqCst);
        let model = ScriptedModel::new([Reply::Text("done".into())]);
        let log = MemoryLog::new();
        let agent = Agent::new(&w.registry, &model, &log);
        let rerun = CallRecord::Rerun {
            by: by.iter().map(|b| (*b).to_owned()).collect(),
        };
        let recovered = agent.recover(plan, &[rerun]).await.unwrap();
        assert_eq!(
            matches!(recovered, Recovered::Outcome(_)),
            runs,
            "{options:?} {by:?}: {recovered:?}"
        );
        assert_eq!(
            w.paid.load(Ordering::SeqCst) - before,
            usize::from(runs),
            "{by:?}"
        );
    }
}

/// A plan comes back from storage only through its seal: under a key, only
/// the document that key tagged, unchanged; without one, only a document
/// whose plain checksum matches. Anything else is refused with a reason,
/// and nothing of it can reach `recover`.
#[tokio::test]
async fn a_plan_reads_back_only_through_its_seal() {
    use toolgate::integrity::IntegrityKey;
    use toolgate::journal::TurnPlan;
    let w = world();
    let plan = journaled_plan(&w, toolgate::run::RunOptions::default(), |text| text).await;
    let key = IntegrityKey::new(&[7; 32]).unwrap();
    let other = IntegrityKey::new(&[8; 32]).unwrap();
    let tagged = plan.encode_with(Some(&key)).unwrap();
    assert_eq!(TurnPlan::decode_with(&tagged, Some(&key)).unwrap(), plan);

    let refused = |text: &str, key: Option<&IntegrityKey>| {
        TurnPlan::decode_with(text, key)
            .map(|_| ())
            .expect_err("refused")
            .message()
            .to_owned()
    };
    assert!(refused(&tagged, Some(&other)).contains("does not verify"));
    assert!(refused(&tagged, None).contains("authenticated with an integrity key"));
    let rewritten = tagged.replace("non_idempotent_write", "read_only");
    assert_ne!(rewritten, tagged);
    assert!(refused(&rewritten, Some(&key)).contains("does not verify"));

    // Without a key: a plain checksum, which catches damage.
    let unkeyed = plan.encode_with(None).unwrap();
    assert_eq!(TurnPlan::decode_with(&unkeyed, None).unwrap(), plan);
    assert!(refused(&unkeyed, Some(&key)).contains("carries a plain checksum"));
    let damaged = unkeyed.replace("\"pay\"", "\"pya\"");
    assert_ne!(damaged, unkeyed);
    assert!(refused(&damaged, None).contains("checksum does not match"));

    // The header is sealed too, and nothing but a plan document is read.
    let relabelled = unkeyed.replacen("\"version\":1", "\"version\":2", 1);
    assert!(refused(&relabelled, None).contains("version is 2"));
    let raw = serde_json::to_string(&plan).unwrap();
    assert!(refused(&raw, None).contains("not a turn-plan document"));
    let mut extra: Value = serde_json::from_str(&unkeyed).unwrap();
    extra["note"] = "x".into();
    assert!(refused(&extra.to_string(), None).contains("unknown field"));

    // A plan whose call id repeats is no plan the crate writes, even sealed.
    let twice = resealed(&unkeyed, |body| {
        let mut value: Value = serde_json::from_str(&body).unwrap();
        let step = value["steps"][0].clone();
        value["steps"].as_array_mut().unwrap().push(step);
        value.to_string()
    });
    assert!(refused(&twice, None).contains("twice"));
    // The resealed document itself reads: the refusal above is the rule's.
    assert!(TurnPlan::decode_with(&resealed(&unkeyed, |body| body), None).is_ok());
}

/// `balance` once it writes: the same name, a gated effect.
#[derive(Tool)]
#[tool(name = "balance", effect = non_idempotent_write)]
struct BalanceThatWrites(Arc<AtomicUsize>);

impl Execute for BalanceThatWrites {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        self.0.fetch_add(1, Ordering::SeqCst);
        ToolOutput::text("wrote")
    }
}

/// `balance` once an operator asks for a person on every read.
#[derive(Tool)]
#[tool(name = "balance", effect = read_only, requires_approval)]
struct BalanceThatAsks(Arc<AtomicUsize>);

impl Execute for BalanceThatAsks {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        self.0.fetch_add(1, Ordering::SeqCst);
        ToolOutput::text("100")
    }
}

/// A turn the gate let run with no decision, planned, and recovered after
/// its tool changed: a tool that now writes, or now needs approval, does
/// not run from the old plan. The model is told, and nothing is recorded
/// as decided.
#[tokio::test]
async fn a_recovery_does_not_run_a_step_whose_tool_changed_since_it_was_planned() {
    let w = world();
    let model = ScriptedModel::new([
        Reply::Calls {
            content: None,
            calls: vec![call("1", "balance")],
        },
        Reply::Text("done".into()),
    ]);
    let log = MemoryLog::new();
    let plans = Plans::default();
    let agent = Agent::new(&w.registry, &model, &log).with_journal(&plans);
    let outcome = agent.start(RunRequest::new("alice", "balance?")).await;
    assert!(
        matches!(outcome, Ok(Outcome::Finished { .. })),
        "{outcome:?}"
    );
    let plan = plans.0.lock().unwrap()[0].clone();
    assert!(!plan.decided(), "no decision let this turn run");

    let ran = Arc::new(AtomicUsize::new(0));
    let now_writes = Registry::builder()
        .builtin(BalanceThatWrites(Arc::clone(&ran)))
        .build()
        .unwrap();
    let now_asks = Registry::builder()
        .builtin(BalanceThatAsks(Arc::clone(&ran)))
        .build()
        .unwrap();
    for (registry, why) in [
        (&now_writes, "changed since this turn was planned"),
        (&now_asks, "now needs a person's approval"),
    ] {
        let model = ScriptedModel::new([Reply::Text("done".into())]);
        let log = MemoryLog::new();
        let recovered = Agent::new(registry, &model, &log)
            .recover(plan.clone(), &[toolgate::journal::CallRecord::NotStarted])
            .await
            .unwrap();
        let toolgate::run::Recovered::Outcome(Outcome::Finished { state, .. }) = recovered else {
            panic!("the run goes on: {recovered:?}");
        };
        let told = state
            .transcript
            .iter()
            .find_map(|m| match m {
                toolgate::run::Message::Tool {
                    content, is_error, ..
                } => Some((content.clone(), *is_error)),
                _ => None,
            })
            .unwrap();
        assert!(told.1 && told.0.contains(why), "{told:?}");
        assert!(log.records().is_empty(), "nothing was decided");
    }
    assert_eq!(ran.load(Ordering::SeqCst), 0, "the changed tool never ran");
}
