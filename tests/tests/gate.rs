//! The one approval rule (SPEC §2): every legal combination, read through the
//! registry's boot check, the predicate and `explain`, must agree — and the
//! trait impls the compiler allows are exactly the ones the table allows.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use static_assertions::{assert_impl_all, assert_not_impl_any};
use toolgate::{
    Execute, OperatorDeclaration, Registry, RemoteApproval, RemoteTool, RequiresApproval,
    RequiresInput, Tool,
    erased::ErasedTool,
    gate::{ApprovalRoute, Effect, Origin, Pause, ruling},
};
use toolgate_tests::{
    AppendFile, AppendFileMarked, CountingProvider, DeleteRepo, OperatorTool, PickBranch, ReadFile,
    ShowSecrets, WriteFile, every_legal_tool,
};

// Positive and negative in pairs: each fixture implements exactly the traits
// of its row.
assert_impl_all!(ReadFile: Tool, Execute);
assert_not_impl_any!(ReadFile: RequiresApproval, RequiresInput, RemoteTool, RemoteApproval);
assert_impl_all!(ShowSecrets: RequiresApproval);
assert_not_impl_any!(ShowSecrets: RequiresInput, RemoteTool);
assert_impl_all!(WriteFile: Tool);
assert_not_impl_any!(WriteFile: RequiresApproval, RequiresInput, RemoteTool);
assert_impl_all!(AppendFileMarked: RequiresApproval);
assert_not_impl_any!(AppendFileMarked: RequiresInput);
assert_impl_all!(PickBranch: RequiresInput);
assert_not_impl_any!(PickBranch: RequiresApproval, RemoteTool);
assert_impl_all!(OperatorTool: RemoteTool, RemoteApproval);
assert_not_impl_any!(OperatorTool: RequiresApproval, RequiresInput);
assert_impl_all!(DeleteRepo: RemoteTool, RequiresApproval);
assert_not_impl_any!(DeleteRepo: RemoteApproval, RequiresInput);

/// The expected gate of each fixture, from the table of SPEC §2 as a reader
/// would state it — the one thing this test writes down by hand.
fn expected(name: &str) -> (Pause, Option<ApprovalRoute>) {
    match name {
        "read_file" | "wiki.search" => (Pause::None, None),
        "show_secrets" | "append_file_marked" | "gh.delete_repo" => {
            (Pause::Approval, Some(ApprovalRoute::Marker))
        }
        "write_file" | "append_file" => (Pause::Approval, Some(ApprovalRoute::DeclaredWrite)),
        "gh.create_issue" => (Pause::Approval, Some(ApprovalRoute::OperatorDeclaration)),
        "pick_branch" => (Pause::Input, None),
        other => panic!("no expectation for `{other}`"),
    }
}

#[tokio::test]
async fn boot_check_predicate_and_explain_agree_on_every_legal_combination() {
    let tools = every_legal_tool();
    assert_eq!(tools.len(), 9);
    // Local tools are builtins (boot check at `build`); remote ones can only
    // arrive through a provider (the same check at resolution).
    let (remote, local): (Vec<_>, Vec<_>) = tools
        .iter()
        .cloned()
        .partition(|t| t.origin() == Origin::Remote);
    let (provider, _) = CountingProvider::new("servers", remote);
    let registry = Registry::builder()
        .builtin(ReadFile)
        .builtin(ShowSecrets)
        .builtin(WriteFile)
        .builtin(AppendFile)
        .builtin(AppendFileMarked)
        .builtin(PickBranch)
        .provider(provider)
        .build();
    let registry = match registry {
        Ok(registry) => registry,
        Err(error) => panic!("every legal combination must pass the boot check: {error}"),
    };
    assert_eq!(local.len(), 6);
    let catalogue = registry.catalogue().await;
    assert!(catalogue.dropped().is_empty(), "{:?}", catalogue.dropped());
    assert_eq!(catalogue.len(), tools.len());
    for tool in &tools {
        let decision = tool.ruling();
        let (pause, route) = expected(tool.name());
        assert_eq!(decision.pause, pause, "{}", tool.name());
        assert_eq!(decision.approval_route(), route, "{}", tool.name());
        assert_eq!(decision.requires_approval(), pause == Pause::Approval);
        assert_eq!(decision.requires_input(), tool.input_schema().is_some());
        let Some(explanation) = registry.explain(tool.name()).await else {
            panic!("{} is registered", tool.name());
        };
        assert_eq!(explanation.ruling, decision);
        let text = explanation.to_string();
        let word = if decision.requires_approval() {
            "approval: "
        } else if decision.requires_input() {
            "input: "
        } else {
            "runs: "
        };
        assert!(text.starts_with(word), "{text}");
        if tool.origin() == Origin::Remote {
            assert_eq!(tool.effect(), Effect::NonIdempotentWrite);
        }
    }
}

#[test]
fn the_erased_decision_is_the_typed_decision() {
    let operator = |declaration| OperatorTool {
        server: "gh".into(),
        name: "gh.x".into(),
        declaration,
    };
    let pairs = [
        (ruling(&ReadFile), ErasedTool::new(ReadFile).ruling()),
        (ruling(&ShowSecrets), ErasedTool::new(ShowSecrets).ruling()),
        (ruling(&WriteFile), ErasedTool::new(WriteFile).ruling()),
        (ruling(&AppendFile), ErasedTool::new(AppendFile).ruling()),
        (ruling(&PickBranch), ErasedTool::new(PickBranch).ruling()),
        (ruling(&DeleteRepo), ErasedTool::new(DeleteRepo).ruling()),
        (
            ruling(&operator(OperatorDeclaration::NoApproval)),
            ErasedTool::new(operator(OperatorDeclaration::NoApproval)).ruling(),
        ),
        (
            ruling(&operator(OperatorDeclaration::ApprovalRequired)),
            ErasedTool::new(operator(OperatorDeclaration::ApprovalRequired)).ruling(),
        ),
    ];
    for (typed, erased) in pairs {
        assert_eq!(typed, erased);
    }
    assert_eq!(
        ruling(&operator(OperatorDeclaration::default())).pause,
        Pause::Approval,
        "the operator declaration defaults to approval required"
    );
}
