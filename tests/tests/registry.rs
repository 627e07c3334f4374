//! The registry of SPEC §4: boot check, lazy providers, collisions, failures,
//! allow-lists and `explain`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::sync::atomic::Ordering;

use serde_json::json;
use toolgate::{
    OperatorDeclaration, Registry,
    erased::ErasedTool,
    gate::{Effect, Facts, Origin, Pause, Rule},
    registry::{BootProblem, DropReason, ToolSource},
};
use toolgate_tests::{
    AppendFile, CountingProvider, HandErased, OperatorTool, PickBranch, ReadFile, WriteFile,
};

fn local(effect: Effect) -> Facts {
    Facts::new(Origin::Local, effect)
}

fn with_input(facts: Facts) -> Facts {
    Facts {
        requires_input: true,
        ..facts
    }
}

fn marked(facts: Facts) -> Facts {
    Facts {
        approval_marker: true,
        ..facts
    }
}

fn remote(server: &str, name: &str, declaration: OperatorDeclaration) -> ErasedTool {
    ErasedTool::new(OperatorTool {
        server: server.into(),
        name: name.into(),
        declaration,
    })
}

#[test]
fn boot_check_reports_every_problem_with_the_tool_and_route() {
    let error = Registry::builder()
        .builtin(ReadFile)
        .builtin(ReadFile)
        .erased(HandErased::new(
            "send_message",
            with_input(local(Effect::NonIdempotentWrite)),
        ))
        .erased(HandErased::new(
            "ask secret",
            with_input(marked(local(Effect::ReadOnly))),
        ))
        .build()
        .err()
        .map(|e| e.problems);
    assert_eq!(
        error,
        Some(vec![
            BootProblem::DuplicateName {
                name: "read_file".into()
            },
            BootProblem::BrokenRule {
                name: "send_message".into(),
                rule: Rule::WriteWithInput
            },
            BootProblem::InvalidName {
                name: "ask secret".into(),
                problem: "the name may only hold ASCII letters, digits, `_`, `-` and `.`"
            },
            BootProblem::BrokenRule {
                name: "ask secret".into(),
                rule: Rule::MarkerWithInput
            },
        ])
    );
}

/// A tool erased by hand cannot enter as a builtin by claiming to live on a
/// server: its "operator declaration" would be its own word.
#[test]
fn a_hand_erased_builtin_cannot_claim_a_remote_origin() {
    let Err(error) = Registry::builder()
        .erased(HandErased::new(
            "wipe",
            Facts {
                operator: Some(OperatorDeclaration::NoApproval),
                ..Facts::new(Origin::Remote, Effect::NonIdempotentWrite)
            },
        ))
        .build()
    else {
        panic!("a remote builtin must be refused");
    };
    assert_eq!(
        error.problems,
        vec![BootProblem::RemoteBuiltin {
            name: "wipe".into()
        }]
    );
}

#[test]
fn boot_error_reads_as_a_list() {
    let Err(error) = Registry::builder()
        .erased(HandErased::new(
            "ask",
            with_input(marked(local(Effect::ReadOnly))),
        ))
        .build()
    else {
        panic!("a hand-erased approval+input tool must be refused");
    };
    assert_eq!(
        error.to_string(),
        "the tool registry refused to boot:\n  - tool `ask` breaks rule 2: a tool with the explicit approval marker cannot require input: the approval scan runs before the input scan and the approval resume carries no input, so it would ask for approval on every turn and never run"
    );
}

#[tokio::test]
async fn providers_are_asked_lazily_and_once() {
    let (provider, asked) = CountingProvider::new(
        "mcp",
        vec![remote(
            "gh",
            "gh.create_issue",
            OperatorDeclaration::ApprovalRequired,
        )],
    );
    let registry = Registry::builder()
        .builtin(ReadFile)
        .provider(provider)
        .build();
    let Ok(registry) = registry else {
        panic!("registry must boot");
    };
    assert_eq!(asked.load(Ordering::SeqCst), 0, "not asked at construction");
    let offered = registry.offer_all().await;
    assert!(offered.get("gh.create_issue").is_some());
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    let _ = registry.explain("gh.create_issue").await;
    let _ = registry.offer(Some(&["read_file"])).await;
    let _ = registry.catalogue().await;
    assert_eq!(asked.load(Ordering::SeqCst), 1, "asked once only");
}

#[tokio::test]
async fn builtins_win_name_collisions_and_earlier_providers_win_later_ones() {
    let (first, _) = CountingProvider::new(
        "first",
        vec![
            remote("a", "read_file", OperatorDeclaration::NoApproval),
            remote("a", "shared", OperatorDeclaration::ApprovalRequired),
        ],
    );
    let (second, _) = CountingProvider::new(
        "second",
        vec![remote("b", "shared", OperatorDeclaration::NoApproval)],
    );
    let Ok(registry) = Registry::builder()
        .builtin(ReadFile)
        .provider(first)
        .provider(second)
        .build()
    else {
        panic!("registry must boot");
    };
    let catalogue = registry.catalogue().await;
    assert_eq!(catalogue.len(), 2);
    let dropped: Vec<_> = catalogue
        .dropped()
        .iter()
        .map(|d| (d.name.as_str(), d.provider.as_str(), d.reason.clone()))
        .collect();
    assert_eq!(
        dropped,
        [
            ("read_file", "first", DropReason::NameTaken),
            ("shared", "second", DropReason::NameTaken)
        ]
    );
    let builtin = registry.explain("read_file").await;
    assert_eq!(builtin.map(|e| e.source), Some(ToolSource::Builtin));
    let shared = registry.explain("shared").await;
    assert_eq!(
        shared.map(|e| (e.source, e.ruling.pause)),
        Some((ToolSource::Provider("first".into()), Pause::Approval))
    );
}

#[tokio::test]
async fn a_failing_provider_costs_only_its_own_tools() {
    let (good, _) = CountingProvider::new(
        "good",
        vec![remote(
            "wiki",
            "wiki.search",
            OperatorDeclaration::NoApproval,
        )],
    );
    let Ok(registry) = Registry::builder()
        .builtin(ReadFile)
        .provider(CountingProvider::failing(
            "broken",
            "server table unreadable",
        ))
        .provider(good)
        .build()
    else {
        panic!("registry must boot");
    };
    let catalogue = registry.catalogue().await;
    let names: Vec<_> = catalogue.tools().map(|t| t.name().to_owned()).collect();
    assert_eq!(names, ["read_file", "wiki.search"]);
    assert_eq!(catalogue.failures().len(), 1);
    assert_eq!(catalogue.failures()[0].provider, "broken");
    assert_eq!(catalogue.failures()[0].error, "server table unreadable");
}

#[tokio::test]
async fn provided_tools_that_could_never_run_or_have_bad_names_are_left_out() {
    let (provider, _) = CountingProvider::new(
        "odd",
        vec![
            ErasedTool::from_dyn(HandErased::new(
                "stuck",
                with_input(marked(local(Effect::ReadOnly))),
            )),
            ErasedTool::from_dyn(HandErased::new("bad\u{202e}name", local(Effect::ReadOnly))),
            ErasedTool::from_dyn(HandErased::new(
                "unjudged",
                Facts::new(Origin::Remote, Effect::ReadOnly),
            )),
            ErasedTool::from_dyn(HandErased::new(
                "local_write_runs",
                Facts {
                    operator: Some(OperatorDeclaration::NoApproval),
                    ..local(Effect::NonIdempotentWrite)
                },
            )),
            ErasedTool::from_dyn(HandErased::without_server(
                "nowhere.wipe",
                Facts {
                    operator: Some(OperatorDeclaration::NoApproval),
                    ..Facts::new(Origin::Remote, Effect::NonIdempotentWrite)
                },
            )),
        ],
    );
    let Ok(registry) = Registry::builder().provider(provider).build() else {
        panic!("registry must boot");
    };
    let catalogue = registry.catalogue().await;
    assert!(catalogue.is_empty());
    let reasons: Vec<_> = catalogue
        .dropped()
        .iter()
        .map(|d| d.reason.clone())
        .collect();
    assert_eq!(
        reasons,
        [
            DropReason::BrokenRule(Rule::MarkerWithInput),
            DropReason::InvalidName(
                "the name may only hold ASCII letters, digits, `_`, `-` and `.`"
            ),
            DropReason::BrokenRule(Rule::RemoteWithoutApprovalSource),
            DropReason::BrokenRule(Rule::OperatorOnLocal),
            DropReason::NoServer,
        ]
    );
}

#[tokio::test]
async fn allow_lists_none_is_all_empty_is_none_unknown_is_dropped() {
    let Ok(registry) = Registry::builder()
        .builtin(ReadFile)
        .builtin(WriteFile)
        .builtin(AppendFile)
        .build()
    else {
        panic!("registry must boot");
    };
    let all = registry.offer_all().await;
    assert_eq!(all.tools().count(), 3);
    let none = registry.offer::<&str>(Some(&[])).await;
    assert_eq!(none.tools().count(), 0);
    assert!(none.get("read_file").is_none());
    let some = registry.offer(Some(&["write_file", "no_such_tool"])).await;
    let names: Vec<_> = some.tools().map(|t| t.name().to_owned()).collect();
    assert_eq!(names, ["write_file"]);
    assert!(
        some.get("read_file").is_none(),
        "registered but not offered"
    );
    assert!(some.get("no_such_tool").is_none(), "unknown");
}

#[tokio::test]
async fn explain_speaks_an_operators_words() {
    let (provider, _) = CountingProvider::new(
        "mcp",
        vec![
            remote(
                "gh",
                "gh.create_issue",
                OperatorDeclaration::ApprovalRequired,
            ),
            remote("wiki", "wiki.search", OperatorDeclaration::NoApproval),
            ErasedTool::new(toolgate_tests::DeleteRepo),
        ],
    );
    let Ok(registry) = Registry::builder()
        .builtin(ReadFile)
        .builtin(WriteFile)
        .builtin(AppendFile)
        .builtin(toolgate_tests::ShowSecrets)
        .builtin(PickBranch)
        .erased(HandErased::new("bridge", marked(local(Effect::ReadOnly))))
        .provider(provider)
        .build()
    else {
        panic!("registry must boot");
    };
    let mut lines = Vec::new();
    for explanation in registry.explain_all().await {
        lines.push(format!("{}: {explanation}", explanation.name));
    }
    assert_eq!(
        lines,
        [
            "read_file: runs: local tool declares read_only",
            "write_file: approval: local tool declares idempotent_write",
            "append_file: approval: local tool declares non_idempotent_write",
            "show_secrets: approval: local tool carries the explicit approval marker",
            "pick_branch: input: local tool requires user input",
            "bridge: approval: local tool carries the explicit approval marker (erased by hand: decided from its declared facts)",
            "gh.create_issue: approval: operator declared approval required for server `gh`",
            "wiki.search: runs: operator declared no approval for server `wiki`",
            "gh.delete_repo: approval: remote tool carries the explicit approval marker",
        ]
    );
    assert!(registry.explain("nothing").await.is_none());
}

#[tokio::test]
async fn arguments_that_do_not_fit_become_an_error_result() {
    let Ok(registry) = Registry::builder().builtin(ReadFile).build() else {
        panic!("registry must boot");
    };
    let offered = registry.offer_all().await;
    // A read runs at once: the scan clears its turn and gives its permit.
    let run = |arguments: serde_json::Value| {
        let calls = [toolgate::run::ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments,
        }];
        let offered = &offered;
        async move {
            let toolgate::run::TurnScan::Run(cleared) = toolgate::run::scan_turn(offered, &calls)
            else {
                panic!("a read waits for nobody");
            };
            match cleared.into_calls().next() {
                Some((_, Ok(permit))) => permit.run().await,
                other => panic!("read_file is offered: {other:?}"),
            }
        }
    };
    let ok = run(json!({"path": "a.txt"})).await;
    assert!(!ok.is_error);
    for (arguments, message) in [
        (
            json!({}),
            "invalid arguments for `read_file`: missing field `path`",
        ),
        (
            json!({"path": 7}),
            "invalid arguments for `read_file`: invalid type: integer `7`, expected a string",
        ),
        (
            json!("a.txt"),
            "invalid arguments for `read_file`: invalid type: string \"a.txt\", expected struct PathArgs",
        ),
    ] {
        let output = run(arguments).await;
        assert!(output.is_error);
        assert_eq!(output.content, message);
    }
}

#[tokio::test]
async fn the_parameter_schema_is_the_argument_types() {
    let Ok(registry) = Registry::builder()
        .builtin(ReadFile)
        .builtin(PickBranch)
        .build()
    else {
        panic!("registry must boot");
    };
    let offered = registry.offer_all().await;
    let read = offered
        .get("read_file")
        .map(|t| t.parameters().as_value().clone());
    assert_eq!(
        read.as_ref()
            .and_then(|s| s.pointer("/properties/path/type")),
        Some(&json!("string"))
    );
    assert_eq!(
        read.as_ref().and_then(|s| s.get("required")),
        Some(&json!(["path"]))
    );
    let input = offered
        .get("pick_branch")
        .and_then(|t| t.input_schema().map(|s| s.as_value().clone()));
    assert_eq!(
        input
            .as_ref()
            .and_then(|s| s.pointer("/properties/branch/description")),
        Some(&json!("The branch the user picks."))
    );
}

async fn pause(registry: &Registry) -> Option<Pause> {
    registry
        .explain("gh.create_issue")
        .await
        .map(|e| e.ruling.pause)
}

/// A provider with a revision is asked again when, and only when, its revision
/// moves; an unreadable revision counts as moved.
#[tokio::test]
async fn a_provider_is_asked_again_when_its_revision_moves() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;
    use toolgate::erased::BoxFuture;
    use toolgate::registry::{ProviderError, Revision, ToolProvider};

    struct Revised {
        revision: Arc<AtomicU64>,
        asked: Arc<std::sync::atomic::AtomicUsize>,
        declaration: Arc<std::sync::Mutex<OperatorDeclaration>>,
    }
    impl ToolProvider for Revised {
        fn name(&self) -> &str {
            "revised"
        }
        fn provide(&self) -> BoxFuture<'_, Result<Vec<ErasedTool>, ProviderError>> {
            self.asked.fetch_add(1, Ordering::SeqCst);
            let declaration = *self.declaration.lock().expect("not poisoned");
            Box::pin(async move { Ok(vec![remote("gh", "gh.create_issue", declaration)]) })
        }
        fn revision(&self) -> BoxFuture<'_, Result<Revision, ProviderError>> {
            let now = self.revision.load(Ordering::SeqCst);
            Box::pin(async move {
                if now == u64::MAX {
                    Err(ProviderError::new("the revision cannot be read"))
                } else {
                    Ok(Revision::At(now))
                }
            })
        }
    }
    let revision = Arc::new(AtomicU64::new(1));
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let declaration = Arc::new(std::sync::Mutex::new(OperatorDeclaration::NoApproval));
    let registry = Registry::builder()
        .provider(Revised {
            revision: Arc::clone(&revision),
            asked: Arc::clone(&asked),
            declaration: Arc::clone(&declaration),
        })
        .build()
        .expect("boots");
    assert_eq!(pause(&registry).await, Some(Pause::None));
    assert_eq!(pause(&registry).await, Some(Pause::None));
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "unchanged revision: asked once"
    );
    *declaration.lock().expect("not poisoned") = OperatorDeclaration::ApprovalRequired;
    assert_eq!(
        pause(&registry).await,
        Some(Pause::None),
        "the revision has not moved"
    );
    revision.store(2, Ordering::SeqCst);
    assert_eq!(
        pause(&registry).await,
        Some(Pause::Approval),
        "moved: asked again"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    revision.store(u64::MAX, Ordering::SeqCst);
    let _ = pause(&registry).await;
    assert_eq!(
        asked.load(Ordering::SeqCst),
        3,
        "unreadable counts as moved"
    );
}
