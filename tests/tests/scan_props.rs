//! Property tests: for generated tool sets and turns, the registry's boot
//! check, the turn scan and `explain` agree with the one rule (`judge`) and
//! the one predicate, `Ruling::requires_approval`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use proptest::prelude::*;
use serde_json::json;
use toolgate::{
    Registry,
    erased::ErasedTool,
    gate::{Effect, Facts, Origin, judge},
    run::{TurnScan, scan_turn},
};
use toolgate_tests::{HandErased, every_combination_of_facts, every_legal_tool};

fn facts() -> impl Strategy<Value = Facts> {
    prop::sample::select(every_combination_of_facts())
}

/// A generated tool set: hand-erased tools declaring arbitrary facts, plus a
/// selection of the typed fixtures.
fn tool_set() -> impl Strategy<Value = Vec<ErasedTool>> {
    (
        prop::collection::vec(facts(), 0..6),
        prop::collection::vec(any::<bool>(), 9),
    )
        .prop_map(|(claims, pick)| {
            let mut tools: Vec<ErasedTool> = claims
                .into_iter()
                .enumerate()
                .map(|(i, facts)| {
                    ErasedTool::from_dyn(HandErased::new(&format!("hand_{i}"), facts))
                })
                .collect();
            tools.extend(
                every_legal_tool()
                    .into_iter()
                    .zip(pick)
                    .filter_map(|(tool, keep)| keep.then_some(tool)),
            );
            tools
        })
}

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(error) => panic!("{error}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_scan_the_boot_check_and_explain_agree_with_the_predicate(
        tools in tool_set(),
        turn in prop::collection::vec(0usize..20, 0..6),
        allow in proptest::option::of(prop::collection::vec(0usize..20, 0..8)),
    ) {
        let names: Vec<String> = tools.iter().map(|t| t.name().to_owned()).collect();
        let name_of = |i: usize| names.get(i).cloned().unwrap_or_else(|| format!("unknown_{i}"));
        // Local tools are builtins; remote ones reach the registry through a
        // provider, which leaves out those whose facts break a rule.
        let (remote, local): (Vec<&ErasedTool>, Vec<&ErasedTool>) =
            tools.iter().partition(|t| t.origin() == Origin::Remote);
        let unlawful = local.iter().any(|t| judge(&t.facts()).is_err());
        let provided: Vec<ErasedTool> = remote
            .iter()
            .map(|t| ErasedTool::from_dyn(std::sync::Arc::new(Forward((*t).clone()))))
            .collect();
        let (provider, _) = toolgate_tests::CountingProvider::new("servers", provided);
        let registry = local
            .iter()
            .fold(Registry::builder(), |b, t| b.erased(std::sync::Arc::new(Forward((*t).clone()))))
            .provider(provider)
            .build();
        // The boot check refuses exactly the builtins whose facts break a rule.
        prop_assert_eq!(registry.is_err(), unlawful);
        let Ok(registry) = registry else { return Ok(()); };

        let allow: Option<Vec<String>> = allow.map(|a| a.into_iter().map(name_of).collect());
        let calls: Vec<toolgate::run::ToolCall> = turn
            .iter()
            .enumerate()
            .map(|(i, &t)| toolgate_tests::call(&i.to_string(), &name_of(t), json!({})))
            .collect();
        runtime().block_on(async {
            let offered = registry.offer(allow.as_deref()).await;
            let offered_tools: Vec<(usize, &ErasedTool)> = calls
                .iter()
                .enumerate()
                .filter_map(|(i, c)| offered.get(&c.name).map(|t| (i, t)))
                .collect();
            let approval = offered_tools.iter().any(|(_, t)| t.ruling().requires_approval());
            let input = offered_tools.iter().find(|(_, t)| t.requires_input()).map(|(i, _)| *i);
            match scan_turn(&offered, &calls) {
                TurnScan::Approval => prop_assert!(approval),
                TurnScan::Input { index, tool } => {
                    prop_assert!(!approval);
                    prop_assert_eq!(Some(index), input);
                    prop_assert_eq!(tool.name(), calls[index].name.as_str());
                }
                TurnScan::Run(_) => prop_assert!(!approval && input.is_none()),
            }
            for tool in &tools {
                let explained = registry.explain(tool.name()).await;
                // A provided tool whose facts break a rule is left out.
                let expected = tool.judgement().ok();
                prop_assert_eq!(explained.map(|e| e.ruling), expected);
            }
            Ok(())
        })?;
    }
}

/// Registers any erased tool, typed or not, through the checked route.
struct Forward(ErasedTool);

impl toolgate::erased::DynTool for Forward {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn description(&self) -> &str {
        self.0.description()
    }
    fn parameters(&self) -> &schemars::Schema {
        self.0.parameters()
    }
    fn origin(&self) -> Origin {
        self.0.origin()
    }
    fn effect(&self) -> Effect {
        self.0.effect()
    }
    fn server(&self) -> Option<&str> {
        self.0.server()
    }
    fn approval_marker(&self) -> bool {
        self.0.facts().approval_marker
    }
    fn operator_declaration(&self) -> Option<toolgate::OperatorDeclaration> {
        self.0.facts().operator
    }
    fn quarantine(&self) -> Option<toolgate::gate::Quarantine> {
        self.0.facts().quarantine
    }
    fn input_schema(&self) -> Option<&schemars::Schema> {
        self.0.input_schema()
    }
    /// Never called: the property scans turns and runs none.
    fn execute(
        &self,
        _: serde_json::Value,
    ) -> toolgate::erased::BoxFuture<'_, toolgate::ToolOutput> {
        Box::pin(async { toolgate::ToolOutput::error("this fixture is scanned, never run") })
    }
}
