//! Wire names (`toolgate::wire`): every tool a model is offered goes out
//! under a name every model API and MCP client takes, one-to-one across the
//! catalogue and the same in every process; what comes back is resolved
//! through the offer, and the transcript keeps local names.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::collections::HashSet;
use std::sync::Mutex;

use proptest::prelude::*;
use serde_json::json;
use toolgate::erased::{BoxFuture, ErasedTool};
use toolgate::run::{
    Message, Model, ModelError, Outcome, Reply, Response, RunRequest, ToolCall, ToolSpec,
};
use toolgate::testing::MemoryLog;
use toolgate::{Agent, OperatorDeclaration, Registry};
use toolgate_tests::{CountingProvider, OperatorTool, ReadFile, WriteFile};

fn remote(server: &str, tool: &str) -> ErasedTool {
    ErasedTool::new(OperatorTool {
        server: server.into(),
        name: format!("{server}.{tool}"),
        declaration: OperatorDeclaration::NoApproval,
    })
}

/// A registry of two builtins and the servers' tools, the tools supplied in
/// the order given.
fn registry(tools: Vec<ErasedTool>) -> Registry {
    let (provider, _) = CountingProvider::new("servers", tools);
    Registry::builder()
        .builtin(ReadFile)
        .builtin(WriteFile)
        .provider(provider)
        .build()
        .expect("boots")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Every tool's `(local, wire)` name, by local name.
async fn names(registry: &Registry) -> Vec<(String, String)> {
    let mut names: Vec<(String, String)> = registry
        .explain_all()
        .await
        .into_iter()
        .map(|e| (e.name, e.wire_name))
        .collect();
    names.sort();
    names
}

/// Servers and tools as an operator's store may hold them: ids that differ
/// only by `_` and `-`, tool names that collide once dots are written
/// `__`, names at the longest a local name may be.
fn catalogue() -> impl Strategy<Value = Vec<(String, String)>> {
    let server = prop_oneof![
        Just("a_b".to_owned()),
        Just("a-b".to_owned()),
        Just("a".to_owned()),
        Just("a_".to_owned()),
        "[ab_-]{1,4}",
        "[a-z]{20,30}",
    ];
    let tool = prop_oneof![
        Just("x".to_owned()),
        Just("b_x".to_owned()),
        Just("_x".to_owned()),
        Just("read_file".to_owned()),
        "[a-z_-]{1,8}",
        "[a-z_]{33,33}",
    ];
    proptest::collection::vec((server, tool), 1..30).prop_map(|tools| {
        let mut seen = HashSet::new();
        tools
            .into_iter()
            .filter(|(s, t)| s.len() + 1 + t.len() <= 64 && seen.insert(format!("{s}.{t}")))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Over generated catalogues: one-to-one, within the wire's alphabet
    /// and length, never another tool's local name, reversible through the
    /// catalogue, and the same when the tools arrive in another order (two
    /// processes reading one store).
    #[test]
    fn wire_names_are_one_to_one_within_the_limits_and_the_same_in_every_process(
        tools in catalogue(),
    ) {
        let runtime = runtime();
        let built = |order: &[(String, String)]| {
            registry(order.iter().map(|(s, t)| remote(s, t)).collect())
        };
        let first = built(&tools);
        let mut reversed = tools.clone();
        reversed.reverse();
        let second = built(&reversed);
        let (names, again, catalogue) = runtime.block_on(async {
            (names(&first).await, names(&second).await, first.catalogue().await)
        });
        prop_assert_eq!(&names, &again, "the same in another process");
        prop_assert_eq!(names.len(), tools.len() + 2, "no tool left out");
        let locals: HashSet<&str> = names.iter().map(|(l, _)| l.as_str()).collect();
        let mut wires = HashSet::new();
        for (local, wire) in &names {
            prop_assert!(toolgate::wire::is_wire_name(wire), "{local} → {wire}");
            prop_assert!(wire.len() <= 48);
            prop_assert!(wires.insert(wire.clone()), "{wire} twice");
            prop_assert!(wire == local || !locals.contains(wire.as_str()), "{local} → {wire}: another tool's name");
            prop_assert_eq!(catalogue.by_wire(wire).map(ErasedTool::name), Some(local.as_str()));
            prop_assert_eq!(catalogue.resolve(wire), Some(local.as_str()));
            prop_assert_eq!(catalogue.wire_name(local), Some(wire.as_str()));
        }
    }
}

/// A model that records what it was sent and answers from a script, the
/// script's names sent as they are: what a model client hands back.
struct Recording {
    replies: Mutex<Vec<Reply>>,
    seen: Mutex<Vec<(Vec<ToolSpec>, Vec<Message>)>>,
}

impl Model for Recording {
    fn respond<'a>(
        &'a self,
        transcript: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Response, ModelError>> {
        self.seen
            .lock()
            .expect("not poisoned")
            .push((tools.to_vec(), transcript.to_vec()));
        let next = self.replies.lock().expect("not poisoned").pop();
        Box::pin(async move {
            next.map(Response::from)
                .ok_or_else(|| ModelError::new("no more replies"))
        })
    }
}

fn calls(names: &[(&str, &str)]) -> Reply {
    Reply::Calls {
        content: None,
        calls: names
            .iter()
            .map(|(id, name)| ToolCall {
                id: (*id).into(),
                name: (*name).into(),
                arguments: json!({"path": "Cargo.toml"}),
            })
            .collect(),
    }
}

/// A run's model is sent wire names only; its calls come back by wire name
/// and are written in the transcript under local names; a name that is
/// no tool's wire name (or local name) is an unknown tool: its turn is
/// answered with what the run offers, and nothing of it runs.
#[tokio::test]
async fn a_model_is_sent_wire_names_and_its_calls_are_resolved_through_the_offer() {
    let registry = registry(vec![
        remote("a_b", "x"),
        remote("a-b", "x"),
        remote("a", "b_x"),
    ]);
    let catalogue = registry.catalogue().await;
    let wire = |local: &str| catalogue.wire_name(local).expect("offered").to_owned();
    assert_eq!(wire("read_file"), "read_file", "a plain name is its own");
    assert_eq!(wire("a_b.x"), "a_b__x");
    assert_eq!(wire("a-b.x"), "a-b__x");
    assert_eq!(wire("a.b_x"), "a__b_x");
    let read = wire("read_file");
    let model = Recording {
        // Popped from the end: first the two reads, then a name that is no
        // tool's, then the answer.
        replies: Mutex::new(vec![
            Reply::Text("done".into()),
            calls(&[("3", "a_b__nothing"), ("4", "a_b.x_")]),
            calls(&[("1", read.as_str()), ("2", "read_file")]),
        ]),
        seen: Mutex::new(Vec::new()),
    };
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    let outcome = agent
        .start(RunRequest::new("alice", "read"))
        .await
        .expect("the run goes on");
    let Outcome::Finished { state, .. } = outcome else {
        panic!("finished: {outcome:?}");
    };
    let seen = model.seen.lock().expect("not poisoned");
    for (specs, _) in seen.iter() {
        assert_eq!(specs.len(), 5);
        for spec in specs {
            assert!(
                toolgate::wire::is_wire_name(&spec.name),
                "{} sent as {}",
                spec.local_name,
                spec.name
            );
            assert_eq!(
                catalogue.wire_name(&spec.local_name),
                Some(spec.name.as_str())
            );
        }
    }
    let called: Vec<&str> = state
        .transcript
        .iter()
        .flat_map(|m| match m {
            Message::Assistant { calls, .. } => calls.iter().map(|c| c.name.as_str()).collect(),
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(
        called,
        ["read_file", "read_file", "a_b__nothing", "a_b.x_"],
        "the transcript keeps local names; an unknown name is kept as written"
    );
    let results: Vec<(&str, bool, &str)> = state
        .transcript
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                call_id,
                is_error,
                content,
                ..
            } => Some((call_id.as_str(), *is_error, content.as_str())),
            _ => None,
        })
        .collect();
    assert!(!results[0].1 && !results[1].1, "{results:?}");
    let offers = "the tools it offers are `read_file`, `write_file`, `a_b__x`, `a-b__x`, `a__b_x`";
    assert_eq!(
        results[2],
        (
            "3",
            true,
            format!("This call could not be used: no tool `a_b__nothing` is offered to this run; {offers}. Nothing of this turn ran; ask again with every call well-formed.").as_str()
        )
    );
    assert_eq!(
        results[3],
        (
            "4",
            true,
            format!("This call could not be used: no tool `a_b.x_` is offered to this run; {offers}. Nothing of this turn ran; ask again with every call well-formed.").as_str()
        )
    );
}

fn read_only(name: &str) -> std::sync::Arc<toolgate_tests::HandErased> {
    toolgate_tests::HandErased::new(
        name,
        toolgate::gate::Facts::new(
            toolgate::gate::Origin::Local,
            toolgate::gate::Effect::ReadOnly,
        ),
    )
}

/// Builtins whose plain wire names clash with a provided tool's are hashed;
/// two builtins that could not both keep a wire name — one named as the
/// other's hashed wire name, which it takes as soon as its plain one clashes
/// — are refused when the registry is built, naming both, so a provided tool
/// can never take a builtin's name.
#[test]
fn builtins_no_wire_name_can_tell_apart_are_refused() {
    let (provider, _) = CountingProvider::new("servers", vec![remote("read", "file")]);
    let probe = Registry::builder()
        .erased(read_only("read__file"))
        .provider(provider)
        .build()
        .expect("boots: the two clash, and both are hashed");
    let names = runtime().block_on(names(&probe));
    let hashed = names
        .iter()
        .find(|(local, _)| local == "read__file")
        .map(|(_, wire)| wire.clone())
        .expect("listed");
    assert!(hashed.starts_with("read__file_"), "{hashed}");
    let refused = Registry::builder()
        .erased(read_only("read__file"))
        .erased(read_only(&hashed))
        .build();
    let Err(error) = refused else {
        panic!("refused");
    };
    assert_eq!(
        error.to_string(),
        format!(
            "the tool registry refused to boot:\n  - builtins `read__file` and `{hashed}` could not both keep a wire name: the hashed wire name of one would be the other's, or the other's name; rename one"
        )
    );
}

/// A local tool may not hold a `.`, which marks a server's tool: a builtin
/// spelled like one is refused at boot, and a provided local tool so
/// spelled is left out — neither can pass for that server's tool.
#[tokio::test]
async fn a_local_tool_cannot_take_a_servers_tool_name() {
    let refused = Registry::builder()
        .erased(read_only("notes.write_note"))
        .build();
    let Err(error) = refused else {
        panic!("refused");
    };
    assert_eq!(
        error.to_string(),
        "the tool registry refused to boot:\n  - builtin `notes.write_note` has an unusable name: a local tool's name may not hold `.`, which marks a server's tool (`server.tool`)"
    );
    let (provider, _) = CountingProvider::new(
        "mixed",
        vec![
            ErasedTool::from_dyn(read_only("notes.write_note")),
            remote("notes", "read_note"),
        ],
    );
    let registry = Registry::builder().provider(provider).build().unwrap();
    let catalogue = registry.catalogue().await;
    assert_eq!(catalogue.len(), 1);
    assert!(catalogue.get("notes.read_note").is_some());
    assert_eq!(
        catalogue
            .dropped()
            .iter()
            .map(|d| (d.name.as_str(), d.reason.to_string()))
            .collect::<Vec<_>>(),
        [(
            "notes.write_note",
            "unusable name: a local tool's name may not hold `.`, which marks a server's tool (`server.tool`)".to_owned()
        )]
    );
}
