//! One rule for every tool (SPEC §2, §4): over every combination of facts a
//! tool could declare (origin × effect × marker × operator declaration ×
//! input × quarantine, 216 in all), the decision of a hand-erased tool equals the decision of
//! the typed tool with the same facts wherever such a typed tool compiles, and
//! the facts are refused — at boot for a builtin, by leaving the tool out for
//! a provider — wherever it does not. The typed side is written by hand below,
//! one fixture per lawful combination; the ui suite pins that every other
//! combination fails to compile, and which rule's message it fails with.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::marker::PhantomData;

use serde_json::{Map, Value};
use toolgate::gate::{
    self, AdmitsInput, ApprovalByEffect, ApprovalByMarker, ApprovalByOperator, ApprovalImpliedBy,
    Runs, WaitsForInput, ruling,
};
use toolgate::{
    Execute, IdempotentWrite, Local, NonIdempotentWrite, OperatorDeclaration, ReadOnly, Registry,
    Remote, RemoteApproval, RemoteTool, RequiresApproval, RequiresInput, Tool, ToolOutput,
    erased::ErasedTool,
    gate::{Effect, EffectMarker, Facts, Origin, Pause, Quarantine, Rule, Ruling, judge},
    registry::{BootProblem, DropReason},
};
use toolgate_tests::{Choice, CountingProvider, HandErased, every_combination_of_facts};

/// A local tool of effect `E` gated by `G`.
struct LocalTool<E, G>(PhantomData<fn() -> (E, G)>);

impl<E, G> LocalTool<E, G> {
    fn new() -> Self {
        Self(PhantomData)
    }
}

impl<E: EffectMarker> Tool for LocalTool<E, Runs>
where
    Local: gate::RunsWithoutApproval<E>,
{
    type Origin = Local;
    type Effect = E;
    type Gate = Runs;
    fn name(&self) -> &str {
        "typed"
    }
    fn description(&self) -> &str {
        "A typed local tool."
    }
}

impl<E: EffectMarker> Tool for LocalTool<E, ApprovalByEffect>
where
    Local: ApprovalImpliedBy<E>,
{
    type Origin = Local;
    type Effect = E;
    type Gate = ApprovalByEffect;
    fn name(&self) -> &str {
        "typed"
    }
    fn description(&self) -> &str {
        "A typed local tool."
    }
}

impl<E: EffectMarker> Tool for LocalTool<E, ApprovalByMarker> {
    type Origin = Local;
    type Effect = E;
    type Gate = ApprovalByMarker;
    fn name(&self) -> &str {
        "typed"
    }
    fn description(&self) -> &str {
        "A typed local tool."
    }
}
impl<E: EffectMarker> RequiresApproval for LocalTool<E, ApprovalByMarker> {}

impl<E: EffectMarker> Tool for LocalTool<E, WaitsForInput>
where
    Local: AdmitsInput<E>,
{
    type Origin = Local;
    type Effect = E;
    type Gate = WaitsForInput;
    fn name(&self) -> &str {
        "typed"
    }
    fn description(&self) -> &str {
        "A typed local tool."
    }
}
impl<E: EffectMarker> RequiresInput for LocalTool<E, WaitsForInput>
where
    Local: AdmitsInput<E>,
{
    type Input = Choice;
}

/// A remote tool of effect `E` gated by `G`; `declaration` is the operator's
/// where `RemoteApproval` is implemented.
struct RemoteFixture<E, G> {
    declaration: OperatorDeclaration,
    quarantine: Option<Quarantine>,
    _types: PhantomData<fn() -> (E, G)>,
}

impl<E, G> RemoteFixture<E, G> {
    fn new(declaration: OperatorDeclaration) -> Self {
        Self {
            declaration,
            quarantine: None,
            _types: PhantomData,
        }
    }

    fn quarantined(self, quarantine: Option<Quarantine>) -> Self {
        Self { quarantine, ..self }
    }
}

impl<E: EffectMarker> Tool for RemoteFixture<E, ApprovalByOperator> {
    type Origin = Remote;
    type Effect = E;
    type Gate = ApprovalByOperator;
    fn name(&self) -> &str {
        "typed"
    }
    fn description(&self) -> &str {
        "A typed remote tool."
    }
}
impl<E: EffectMarker> Tool for RemoteFixture<E, ApprovalByMarker> {
    type Origin = Remote;
    type Effect = E;
    type Gate = ApprovalByMarker;
    fn name(&self) -> &str {
        "typed"
    }
    fn description(&self) -> &str {
        "A typed remote tool."
    }
}
impl<E: EffectMarker, G: 'static> RemoteTool for RemoteFixture<E, G>
where
    Self: Tool<Origin = Remote, Gate: gate::RemoteGate>,
{
    fn server(&self) -> &str {
        "bridge"
    }
}
impl<E: EffectMarker, G: 'static> RemoteApproval for RemoteFixture<E, G>
where
    Self: RemoteTool<Gate: gate::OperatorGate>,
{
    fn operator_declaration(&self) -> OperatorDeclaration {
        self.declaration
    }
    fn quarantine(&self) -> Option<Quarantine> {
        self.quarantine
    }
}
impl<E: EffectMarker> RequiresApproval for RemoteFixture<E, ApprovalByMarker> {}

macro_rules! runs_nothing {
    ($($ty:ty),* $(,)?) => {$(
        impl Execute for $ty {
            type Args = Map<String, Value>;
            async fn execute(&self, _: Self::Args) -> ToolOutput {
                ToolOutput::text("ran")
            }
        }
    )*};
}

/// The decision of the typed tool with these facts, erased from its types and
/// read directly, if such a typed tool compiles; `None` where none does.
fn typed_decision(facts: Facts) -> Option<Ruling> {
    fn both<T: Execute>(tool: T) -> Ruling {
        let direct = ruling(&tool);
        let erased = ErasedTool::new(tool);
        assert!(!erased.is_hand_erased());
        assert_eq!(
            erased.judgement(),
            Ok(direct),
            "erasing a typed tool keeps its decision"
        );
        direct
    }
    let Facts {
        origin,
        effect,
        approval_marker: marker,
        operator,
        requires_input: input,
        quarantine,
    } = facts;
    // A quarantine is a remote tool's fact: no local tool carries one.
    if origin == Origin::Local && quarantine.is_some() {
        return None;
    }
    Some(match (origin, marker, operator, input) {
        (Origin::Local, false, None, false) if effect == Effect::ReadOnly => {
            both(LocalTool::<ReadOnly, Runs>::new())
        }
        (Origin::Local, false, None, true) if effect == Effect::ReadOnly => {
            both(LocalTool::<ReadOnly, WaitsForInput>::new())
        }
        (Origin::Local, false, None, false) => match effect {
            Effect::IdempotentWrite => both(LocalTool::<IdempotentWrite, ApprovalByEffect>::new()),
            Effect::NonIdempotentWrite => {
                both(LocalTool::<NonIdempotentWrite, ApprovalByEffect>::new())
            }
            Effect::ReadOnly => return None,
        },
        (Origin::Local, true, None, false) => match effect {
            Effect::ReadOnly => both(LocalTool::<ReadOnly, ApprovalByMarker>::new()),
            Effect::IdempotentWrite => both(LocalTool::<IdempotentWrite, ApprovalByMarker>::new()),
            Effect::NonIdempotentWrite => {
                both(LocalTool::<NonIdempotentWrite, ApprovalByMarker>::new())
            }
        },
        (Origin::Remote, false, Some(declaration), false) => match effect {
            Effect::ReadOnly => both(
                RemoteFixture::<ReadOnly, ApprovalByOperator>::new(declaration)
                    .quarantined(quarantine),
            ),
            Effect::IdempotentWrite => both(
                RemoteFixture::<IdempotentWrite, ApprovalByOperator>::new(declaration)
                    .quarantined(quarantine),
            ),
            Effect::NonIdempotentWrite => both(
                RemoteFixture::<NonIdempotentWrite, ApprovalByOperator>::new(declaration)
                    .quarantined(quarantine),
            ),
        },
        // The marker wins over a declaration the tool also carries.
        (Origin::Remote, true, declaration, false) => {
            let declaration = declaration.unwrap_or_default();
            match effect {
                Effect::ReadOnly => both(RemoteFixture::<ReadOnly, ApprovalByMarker>::new(
                    declaration,
                )),
                Effect::IdempotentWrite => both(
                    RemoteFixture::<IdempotentWrite, ApprovalByMarker>::new(declaration),
                ),
                Effect::NonIdempotentWrite => both(RemoteFixture::<
                    NonIdempotentWrite,
                    ApprovalByMarker,
                >::new(declaration)),
            }
        }
        _ => return None,
    })
}

runs_nothing!(
    LocalTool<ReadOnly, Runs>,
    LocalTool<ReadOnly, WaitsForInput>,
    LocalTool<IdempotentWrite, ApprovalByEffect>,
    LocalTool<NonIdempotentWrite, ApprovalByEffect>,
    LocalTool<ReadOnly, ApprovalByMarker>,
    LocalTool<IdempotentWrite, ApprovalByMarker>,
    LocalTool<NonIdempotentWrite, ApprovalByMarker>,
    RemoteFixture<ReadOnly, ApprovalByOperator>,
    RemoteFixture<IdempotentWrite, ApprovalByOperator>,
    RemoteFixture<NonIdempotentWrite, ApprovalByOperator>,
    RemoteFixture<ReadOnly, ApprovalByMarker>,
    RemoteFixture<IdempotentWrite, ApprovalByMarker>,
    RemoteFixture<NonIdempotentWrite, ApprovalByMarker>,
);

#[tokio::test]
async fn hand_erased_decision_equals_typed_decision_and_unlawful_facts_are_refused() {
    let mut lawful = 0;
    let mut refused = 0;
    for facts in every_combination_of_facts() {
        let hand = HandErased::new("bridge", facts);
        let erased = ErasedTool::from_dyn(hand.clone());
        assert!(erased.is_hand_erased());
        assert_eq!(erased.facts(), facts);
        assert_eq!(erased.judgement(), judge(&facts));

        // As a builtin (only a local tool may be one): boots exactly when a
        // typed tool with these facts compiles; otherwise the boot check names
        // the tool and the rule. A remote tool is refused as a builtin.
        let boot = Registry::builder().erased(hand.clone()).build();
        if facts.origin == Origin::Remote {
            let Err(error) = &boot else {
                panic!("a remote tool is never a builtin: {facts:?}");
            };
            assert_eq!(
                error.problems,
                vec![BootProblem::RemoteBuiltin {
                    name: "bridge".into()
                }]
            );
        }
        // As a provider's tool: kept or left out with the same rule.
        let (provider, _) = CountingProvider::new("bridges", vec![erased.clone()]);
        let Ok(with_provider) = Registry::builder().provider(provider).build() else {
            panic!("a registry with only a provider always boots");
        };
        let catalogue = with_provider.catalogue().await;

        if let Some(typed) = typed_decision(facts) {
            lawful += 1;
            assert_eq!(erased.judgement(), Ok(typed), "{facts:?}");
            if facts.origin == Origin::Local {
                let Ok(registry) = boot else {
                    panic!("lawful local facts must boot: {facts:?}");
                };
                assert_eq!(
                    registry.explain("bridge").await.map(|e| e.ruling),
                    Some(typed)
                );
            }
            let Some(explained) = with_provider.explain("bridge").await else {
                panic!("the tool is provided: {facts:?}");
            };
            assert_eq!(explained.ruling, typed);
            assert!(explained.hand_erased);
            assert!(
                explained
                    .to_string()
                    .ends_with("(erased by hand: decided from its declared facts)"),
                "{explained}"
            );
            assert!(catalogue.dropped().is_empty(), "{facts:?}");
            assert_eq!(catalogue.len(), 1);
        } else {
            refused += 1;
            // The rule is the one rule's own answer — no copy of it here —
            // and the boot check and the provider name that same rule.
            let Err(rule) = judge(&facts) else {
                panic!("no typed tool has these facts, so the rule refuses them: {facts:?}");
            };
            assert_eq!(erased.judgement(), Err(rule), "{facts:?}");
            assert_eq!(erased.ruling(), Ruling::refused(rule));
            assert!(
                erased.ruling().requires_approval(),
                "fail-closed outside a registry"
            );
            if facts.origin == Origin::Local {
                let Err(error) = boot else {
                    panic!("unlawful facts must not boot: {facts:?}");
                };
                assert_eq!(
                    error.problems,
                    vec![BootProblem::BrokenRule {
                        name: "bridge".into(),
                        rule
                    }]
                );
                let text = error.to_string();
                assert!(
                    text.contains(&format!("tool `bridge` breaks rule {}:", rule.number())),
                    "{text}"
                );
            }
            assert!(catalogue.is_empty(), "{facts:?}");
            assert_eq!(catalogue.dropped().len(), 1);
            assert_eq!(catalogue.dropped()[0].reason, DropReason::BrokenRule(rule));
        }
        assert_eq!(hand.calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    }
    assert_eq!((lawful, refused), (52, 164));
}

#[test]
fn a_local_write_needs_approval_whatever_else_a_hand_erased_tool_declares() {
    for facts in every_combination_of_facts() {
        if facts.origin == Origin::Local && facts.effect.is_write() {
            match judge(&facts) {
                Ok(decision) => assert!(decision.requires_approval(), "{facts:?}"),
                Err(rule) => assert!(
                    matches!(
                        rule,
                        Rule::OperatorOnLocal | Rule::WriteWithInput | Rule::MarkerWithInput
                    ),
                    "{facts:?}: {rule}"
                ),
            }
        }
        if let Ok(decision) = judge(&facts)
            && decision.pause == Pause::None
        {
            assert!(
                (facts.origin == Origin::Local
                    && facts.effect == Effect::ReadOnly
                    && !facts.approval_marker)
                    || (facts.operator == Some(OperatorDeclaration::NoApproval)
                        && facts.quarantine.is_none()),
                "only a local read_only tool or an operator's \"no approval\" runs unpaused: {facts:?}"
            );
        }
    }
}
