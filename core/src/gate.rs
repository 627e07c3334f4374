//! The gate: how a tool's declarations become a [`Ruling`].
//!
//! This module is the one home of the approval rule. Every tool —
//! typed, erased by hand, or supplied by a provider — is reduced to its
//! [`Facts`] (origin, effect, explicit marker, operator declaration, input),
//! and one function, [`judge`], turns facts into a decision or names the rule
//! they break. A tool never states its own decision.
//!
//! | origin | facts | decision |
//! |---|---|---|
//! | any | explicit approval marker | approval ([`Cause::Marker`]) |
//! | local | `read_only` | none ([`Cause::LocalReadOnly`]) |
//! | local | `read_only`, input | input ([`Cause::UserInput`]) |
//! | local | a write | approval ([`Cause::DeclaredWrite`]), never switched off |
//! | remote | operator declaration | the operator's answer ([`Cause::Operator`]) |
//! | remote | no approval, but quarantined | approval ([`Cause::Quarantined`]) |
//! | remote | neither marker nor declaration | refused: [`Rule::RemoteWithoutApprovalSource`] |
//!
//! A typed tool names its gate as a type (`type Gate = ...` in [`Tool`],
//! chosen for you by `#[derive(Tool)]`); each gate type states as trait bounds
//! which tools may name it, so the facts of a typed tool are lawful by
//! construction, and the compiler refuses the rest with a message of ours:
//!
//! | gate | who may name it | facts it reports |
//! |---|---|---|
//! | [`Runs`] | a local `read_only` tool | none beyond origin and effect |
//! | [`ApprovalByMarker`] | a tool implementing [`RequiresApproval`] | the marker |
//! | [`ApprovalByEffect`] | a local tool declaring a write | none beyond origin and effect |
//! | [`ApprovalByOperator`] | a tool implementing [`RemoteApproval`] | the operator's declaration |
//! | [`WaitsForInput`] | a local `read_only` tool implementing [`RequiresInput`] | input |
//!
//! # Sealing
//!
//! Every trait here is sealed for every type parameter: no impl outside this
//! crate can add a gate, an origin, an effect, or widen who may name a gate.
//! Traits without a parameter are closed by a private supertrait; `Gate<T>`
//! and `OriginOf<T>` — where `T` is the user's tool, which the orphan rules
//! would otherwise let a user fill in for toolgate's own types — by a private
//! supertrait that carries the same parameter and is implemented only for
//! toolgate's own gates and origins.

use std::fmt;

use schemars::Schema;
use serde::{Deserialize, Serialize};

pub use crate::effect::{
    DeclarationScope, Effect, EffectMarker, Facts, OperatorDeclaration, Origin, Quarantine,
};
use crate::effect::{IdempotentWrite, Local, NonIdempotentWrite, ReadOnly, Remote};
use crate::sealed::Sealed;
use crate::tool::{RemoteApproval, RemoteTool, RequiresApproval, RequiresInput, Tool};
use seal::{GateRule, OriginRule};

/// What the loop must do before running a call.
///
/// Deliberately exhaustive: a caller matches every pause, so that a new one
/// could not be ignored by code written before it existed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pause {
    /// Nothing: the call may run now.
    None,
    /// Wait for a human's verdict.
    Approval,
    /// Wait for a human's data, validated against the tool's input schema.
    Input,
}

impl Pause {
    /// The word an operator reads: `runs`, `approval` or `input`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Pause::None => "runs",
            Pause::Approval => "approval",
            Pause::Input => "input",
        }
    }
}

impl fmt::Display for Pause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rule of the crate's "Rules" section that a set of facts breaks. The
/// numbers are those of the compile errors that refuse the same combination
/// in a typed tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Rule {
    /// Rule 1: a local tool that declares a write requires input.
    WriteWithInput,
    /// Rule 2: the explicit approval marker with input.
    MarkerWithInput,
    /// Rule 4: an operator's declaration on a tool that is not remote.
    OperatorOnLocal,
    /// Rule 5: an operator-declared approval with input.
    OperatorWithInput,
    /// Rule 8: a remote tool that names no approval source (neither the
    /// operator's declaration nor the marker).
    RemoteWithoutApprovalSource,
}

impl Rule {
    /// The rule's number in the crate's "Rules" section.
    pub const fn number(self) -> u8 {
        match self {
            Rule::WriteWithInput => 1,
            Rule::MarkerWithInput => 2,
            Rule::OperatorOnLocal => 4,
            Rule::OperatorWithInput => 5,
            Rule::RemoteWithoutApprovalSource => 8,
        }
    }
}

const NEVER_RUNS: &str = "the approval scan runs before the input scan and the approval resume carries no input, so it would ask for approval on every turn and never run";

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rule {}: ", self.number())?;
        match self {
            Rule::WriteWithInput => write!(
                f,
                "a local tool that declares a write cannot require input: its write needs approval, and {NEVER_RUNS}"
            ),
            Rule::MarkerWithInput => write!(
                f,
                "a tool with the explicit approval marker cannot require input: {NEVER_RUNS}"
            ),
            Rule::OperatorOnLocal => f.write_str(
                "an operator's declaration is for remote tools only: a local tool's approval follows from its effect or the explicit marker",
            ),
            Rule::OperatorWithInput => write!(
                f,
                "a tool whose approval the operator declares cannot require input: the declaration defaults to \"approval required\", and {NEVER_RUNS}"
            ),
            Rule::RemoteWithoutApprovalSource => f.write_str(
                "a remote tool must name its approval source (the operator's declaration or the explicit marker): a server nobody has judged asks first",
            ),
        }
    }
}

impl std::error::Error for Rule {}

/// Why a tool has the gate it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "cause", content = "detail")]
#[non_exhaustive]
pub enum Cause {
    /// A local tool that declares `read_only` and carries no marker.
    LocalReadOnly,
    /// The tool carries the explicit approval marker.
    Marker,
    /// A local tool that declares a write: approval is implied by the effect.
    DeclaredWrite(Effect),
    /// The operator's declaration for the tool's server.
    Operator(OperatorDeclaration),
    /// The operator turned approval off for the tool's server, but the tool
    /// is not one they judged: it requires approval until accepted.
    Quarantined(Quarantine),
    /// The tool waits for typed input from a user.
    UserInput,
    /// The tool's facts break a rule; it never runs. A registry refuses such a
    /// tool at boot (or leaves a provider's out), so this is only the
    /// fail-closed answer for a tool asked outside a registry.
    Refused(Rule),
}

/// The route by which approval binds a tool, for boot errors and audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalRoute {
    /// The explicit approval marker ([`RequiresApproval`]).
    Marker,
    /// A local tool's declared write.
    DeclaredWrite,
    /// An operator's declaration for a remote server ([`RemoteApproval`]).
    OperatorDeclaration,
}

impl fmt::Display for ApprovalRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ApprovalRoute::Marker => "explicit approval marker",
            ApprovalRoute::DeclaredWrite => "declared write",
            ApprovalRoute::OperatorDeclaration => "operator declaration",
        })
    }
}

/// A tool's gate: the pause its calls get and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ruling {
    /// What the loop must do before running a call.
    pub pause: Pause,
    /// Why.
    pub cause: Cause,
}

impl Ruling {
    /// The fail-closed decision for facts that break `rule`: approval, which
    /// no verdict can satisfy for a registry that refuses the tool anyway.
    pub const fn refused(rule: Rule) -> Self {
        Self {
            pause: Pause::Approval,
            cause: Cause::Refused(rule),
        }
    }

    /// The approval predicate: true when a call must wait for a human's
    /// verdict. Every reader of the rule — boot check, turn scan, `explain`,
    /// resume — asks this.
    pub const fn requires_approval(&self) -> bool {
        matches!(self.pause, Pause::Approval)
    }

    /// True when a call must wait for typed input.
    pub const fn requires_input(&self) -> bool {
        matches!(self.pause, Pause::Input)
    }

    /// The route by which approval binds, if a lawful one does.
    pub const fn approval_route(&self) -> Option<ApprovalRoute> {
        if !self.requires_approval() {
            return None;
        }
        match self.cause {
            Cause::Marker => Some(ApprovalRoute::Marker),
            Cause::DeclaredWrite(_) => Some(ApprovalRoute::DeclaredWrite),
            Cause::Operator(_) | Cause::Quarantined(_) => Some(ApprovalRoute::OperatorDeclaration),
            Cause::LocalReadOnly | Cause::UserInput | Cause::Refused(_) => None,
        }
    }
}

/// The approval rule: the decision for a tool's facts, or the rule
/// they break. This is the only place facts become a decision; typed tools,
/// hand-erased tools and provided tools all come here.
pub const fn judge(facts: &Facts) -> Result<Ruling, Rule> {
    let local = matches!(facts.origin, Origin::Local);
    if local && (facts.operator.is_some() || facts.quarantine.is_some()) {
        return Err(Rule::OperatorOnLocal);
    }
    if facts.requires_input {
        if facts.approval_marker {
            return Err(Rule::MarkerWithInput);
        }
        if facts.operator.is_some() {
            return Err(Rule::OperatorWithInput);
        }
        if local && facts.effect.is_write() {
            return Err(Rule::WriteWithInput);
        }
    }
    if facts.approval_marker {
        return Ok(Ruling {
            pause: Pause::Approval,
            cause: Cause::Marker,
        });
    }
    if !local {
        return match (facts.operator, facts.quarantine) {
            (Some(OperatorDeclaration::NoApproval), Some(quarantine)) => Ok(Ruling {
                pause: Pause::Approval,
                cause: Cause::Quarantined(quarantine),
            }),
            (Some(declaration), _) => Ok(Ruling {
                pause: match declaration {
                    OperatorDeclaration::ApprovalRequired => Pause::Approval,
                    OperatorDeclaration::NoApproval => Pause::None,
                },
                cause: Cause::Operator(declaration),
            }),
            (None, _) => Err(Rule::RemoteWithoutApprovalSource),
        };
    }
    if facts.effect.is_write() {
        return Ok(Ruling {
            pause: Pause::Approval,
            cause: Cause::DeclaredWrite(facts.effect),
        });
    }
    if facts.requires_input {
        return Ok(Ruling {
            pause: Pause::Input,
            cause: Cause::UserInput,
        });
    }
    Ok(Ruling {
        pause: Pause::None,
        cause: Cause::LocalReadOnly,
    })
}

/// The facts of a typed tool, as its gate states them.
pub fn facts<T: Tool>(tool: &T) -> Facts {
    <T::Gate as GateRule<T>>::facts(tool)
}

/// Decides the gate of a typed tool: [`judge`] over its [`facts`]. A typed
/// tool's facts are lawful by construction (its gate's bounds admit nothing
/// else), so this never meets a broken rule; if it did, the answer would be
/// [`Ruling::refused`].
pub fn ruling<T: Tool>(tool: &T) -> Ruling {
    match judge(&facts(tool)) {
        Ok(decision) => decision,
        Err(rule) => Ruling::refused(rule),
    }
}

pub(crate) fn input_schema<T: Tool>(tool: &T) -> Option<Schema> {
    <T::Gate as GateRule<T>>::input_schema(tool)
}

pub(crate) fn declaration_scope<T: Tool>(tool: &T) -> DeclarationScope {
    <T::Gate as GateRule<T>>::declaration_scope(tool)
}

pub(crate) fn server<T: Tool>(tool: &T) -> Option<&str> {
    <T::Origin as OriginRule<T>>::server(tool)
}

fn base<T: Tool>() -> Facts {
    Facts::new(
        <T::Origin as OriginRule<T>>::ORIGIN,
        <T::Effect as EffectMarker>::EFFECT,
    )
}

/// A gate a tool may name as `type Gate = ...`. Sealed for every `T`: the five
/// gates of this module are all there are, each states who may name it, and
/// no impl outside toolgate can make another type — or one of these for
/// another tool — a gate.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot gate `{T}`",
    label = "this gate is not allowed for this tool",
    note = "name one of the gates in `toolgate::gate`, or let `#[derive(Tool)]` choose"
)]
pub trait Gate<T: ?Sized>: GateRule<T> {}

// Each gate is a `Gate<T>` exactly where its sealed rule holds, so the bounds
// are written once, on the rule, and a failing bound is reported at its leaf.
impl<T: ?Sized> Gate<T> for Runs where Runs: GateRule<T> {}
impl<T: ?Sized> Gate<T> for ApprovalByMarker where ApprovalByMarker: GateRule<T> {}
impl<T: ?Sized> Gate<T> for ApprovalByEffect where ApprovalByEffect: GateRule<T> {}
impl<T: ?Sized> Gate<T> for ApprovalByOperator where ApprovalByOperator: GateRule<T> {}
impl<T: ?Sized> Gate<T> for WaitsForInput where WaitsForInput: GateRule<T> {}

/// Gate: the call runs without a pause. For a local tool that declares
/// `read_only` only.
#[derive(Debug, Clone, Copy)]
pub enum Runs {}

/// Gate: every call waits for approval, because the tool carries the explicit
/// marker [`RequiresApproval`].
#[derive(Debug, Clone, Copy)]
pub enum ApprovalByMarker {}

/// Gate: every call waits for approval, because a local tool declares a write.
#[derive(Debug, Clone, Copy)]
pub enum ApprovalByEffect {}

/// Gate: a remote tool's calls wait for approval unless the operator declared
/// its server as needing none ([`RemoteApproval`]).
#[derive(Debug, Clone, Copy)]
pub enum ApprovalByOperator {}

/// Gate: every call waits for typed input from a user ([`RequiresInput`]).
#[derive(Debug, Clone, Copy)]
pub enum WaitsForInput {}

impl Sealed for Runs {}
impl Sealed for ApprovalByMarker {}
impl Sealed for ApprovalByEffect {}
impl Sealed for ApprovalByOperator {}
impl Sealed for WaitsForInput {}

// The helper traits below take an effect parameter bounded by the sealed
// `EffectMarker` and a sealed `Self`: a user's type fits neither side, and the
// orphan rules forbid a user's impl of them for toolgate's own types.

/// Which origins may run a tool of effect `E` without any pause: a local
/// `read_only` tool, and nothing else.
#[diagnostic::on_unimplemented(
    message = "`gate::Runs` would run a `{E}` tool unapproved",
    label = "a tool gated by `Runs` would run every call without a human's approval",
    note = "`gate::Runs` is only for a local `read_only` tool; this one is `{Self}` and declares `{E}`",
    note = "a local tool's declared write always needs approval and cannot be switched off: use `type Gate = toolgate::gate::ApprovalByEffect;` (what `#[derive(Tool)]` chooses), or declare `read_only` if the tool changes nothing",
    note = "a remote tool names its approval source: `type Gate = toolgate::gate::ApprovalByOperator;` with `impl RemoteApproval`, or `toolgate::gate::ApprovalByMarker` with `impl RequiresApproval`"
)]
pub trait RunsWithoutApproval<E: EffectMarker>: Sealed {}
impl RunsWithoutApproval<ReadOnly> for Local {}

/// Which origins and effects imply approval: a local write.
#[diagnostic::on_unimplemented(
    message = "`ApprovalByEffect` is for a local write, not a `{Self}` tool declaring `{E}`",
    label = "approval is implied only by a local tool's declared write",
    note = "a `read_only` builtin asks for approval through the explicit marker: `type Gate = toolgate::gate::ApprovalByMarker;` with `impl RequiresApproval`",
    note = "a remote tool's effect is not its consent: its approval comes from the operator (`RemoteApproval`) or the explicit marker"
)]
pub trait ApprovalImpliedBy<E: EffectMarker>: Sealed {}
impl ApprovalImpliedBy<IdempotentWrite> for Local {}
impl ApprovalImpliedBy<NonIdempotentWrite> for Local {}

/// Which origins and effects may wait for input: a local `read_only` tool.
#[diagnostic::on_unimplemented(
    message = "a `{Self}` tool declaring `{E}` cannot take input",
    label = "only a local `read_only` tool that no approval binds may wait for input",
    note = "a local write needs approval, and a remote tool needs an approval source; the approval scan runs before the input scan and the approval resume carries no input, so such a tool would ask for approval on every turn and never run",
    note = "a tool that needs both a human's data and a human's consent cannot be built: split it, or declare `read_only` if it changes nothing"
)]
pub trait AdmitsInput<E: EffectMarker>: Sealed {}
impl AdmitsInput<ReadOnly> for Local {}

impl<T> GateRule<T> for Runs
where
    T: Tool,
    T::Origin: RunsWithoutApproval<T::Effect>,
{
    fn facts(_: &T) -> Facts {
        base::<T>()
    }
}

impl<T: RequiresApproval> GateRule<T> for ApprovalByMarker {
    fn facts(_: &T) -> Facts {
        Facts {
            approval_marker: true,
            ..base::<T>()
        }
    }
}

impl<T> GateRule<T> for ApprovalByEffect
where
    T: Tool,
    T::Origin: ApprovalImpliedBy<T::Effect>,
{
    fn facts(_: &T) -> Facts {
        base::<T>()
    }
}

impl<T: RemoteApproval> GateRule<T> for ApprovalByOperator {
    fn facts(tool: &T) -> Facts {
        Facts {
            operator: Some(tool.operator_declaration()),
            quarantine: tool.quarantine(),
            ..base::<T>()
        }
    }

    fn declaration_scope(tool: &T) -> DeclarationScope {
        tool.declaration_scope()
    }
}

impl<T> GateRule<T> for WaitsForInput
where
    T: RequiresInput,
    T::Origin: AdmitsInput<T::Effect>,
{
    fn facts(_: &T) -> Facts {
        Facts {
            requires_input: true,
            ..base::<T>()
        }
    }

    fn input_schema(_: &T) -> Option<Schema> {
        Some(schemars::schema_for!(T::Input))
    }
}

/// The gates a tool implementing [`RequiresApproval`] may name.
#[diagnostic::on_unimplemented(
    message = "a tool that implements `RequiresApproval` cannot be gated by `{Self}`",
    label = "the explicit approval marker needs an approval gate",
    note = "use `type Gate = toolgate::gate::ApprovalByMarker;`",
    note = "approval and input cannot be combined: the approval resume carries no input, so a tool that needs both would ask on every turn and never run"
)]
pub trait ApprovalGate: Sealed {}
impl ApprovalGate for ApprovalByMarker {}
impl ApprovalGate for ApprovalByEffect {}

/// The gates a tool implementing [`RequiresInput`] may name.
#[diagnostic::on_unimplemented(
    message = "a tool gated by `{Self}` cannot require user input",
    label = "this tool already waits for something else",
    note = "the approval scan runs before the input scan and the approval resume carries no input, so an approval-bound tool that requires input would ask for approval on every turn and never run",
    note = "a tool that requires input is gated by `toolgate::gate::WaitsForInput`, and may not need approval by any route"
)]
pub trait InputGate: Sealed {}
impl InputGate for WaitsForInput {}

/// The gates a tool implementing [`RemoteApproval`] may name.
#[diagnostic::on_unimplemented(
    message = "a tool that implements `RemoteApproval` cannot be gated by `{Self}`",
    label = "the operator's declaration needs the operator gate",
    note = "use `type Gate = toolgate::gate::ApprovalByOperator;`",
    note = "the operator's declaration defaults to \"approval required\": on every server nobody has judged, a tool that also required input would ask for approval on every turn and never run"
)]
pub trait OperatorGate: Sealed {}
impl OperatorGate for ApprovalByOperator {}
impl OperatorGate for ApprovalByMarker {}

/// The gates a [`RemoteTool`] may name: its approval source.
#[diagnostic::on_unimplemented(
    message = "a remote tool must name its approval source, not `{Self}`",
    label = "a server nobody has judged asks first",
    note = "a remote tool's approval comes from the operator's per-server declaration (`type Gate = toolgate::gate::ApprovalByOperator;` with `impl RemoteApproval`) or from the explicit marker (`type Gate = toolgate::gate::ApprovalByMarker;` with `impl RequiresApproval`)",
    note = "with the derive: `#[tool(remote, operator_approval)]` or `#[tool(remote, requires_approval)]`"
)]
pub trait RemoteGate: Sealed {}
impl RemoteGate for ApprovalByOperator {}
impl RemoteGate for ApprovalByMarker {}

/// Ties an origin marker to the tool declaring it: [`Remote`] only for a
/// [`RemoteTool`]. Sealed for every `T`.
#[diagnostic::on_unimplemented(
    message = "`{T}` declares `type Origin = {Self}` but does not implement `RemoteTool`",
    label = "a remote origin is claimed by implementing `RemoteTool`",
    note = "implement `toolgate::RemoteTool` for the type, or declare `type Origin = toolgate::Local;`"
)]
pub trait OriginOf<T: ?Sized>: OriginRule<T> {}
impl<T: ?Sized> OriginOf<T> for Local where Local: OriginRule<T> {}
impl<T: ?Sized> OriginOf<T> for Remote where Remote: OriginRule<T> {}

impl<T: ?Sized> OriginRule<T> for Local {
    const ORIGIN: Origin = Origin::Local;
    fn server(_: &T) -> Option<&str> {
        None
    }
}
impl<T: RemoteTool> OriginRule<T> for Remote {
    const ORIGIN: Origin = Origin::Remote;
    fn server(tool: &T) -> Option<&str> {
        Some(tool.server())
    }
}

/// The origins a [`RemoteTool`] may declare.
#[diagnostic::on_unimplemented(
    message = "a `RemoteTool` must declare `type Origin = toolgate::Remote`, not `{Self}`",
    label = "a remote tool's body lives outside this codebase",
    note = "set `type Origin = toolgate::Remote;` in its `Tool` impl"
)]
pub trait IsRemote: Sealed {}
impl IsRemote for Remote {}

/// The origins a builtin may declare.
#[diagnostic::on_unimplemented(
    message = "a remote tool cannot be registered as a builtin",
    label = "builtins are local tools",
    note = "remote tools reach a registry through a `ToolProvider`, built from an operator's stored server records"
)]
pub trait IsLocal: Sealed {}
impl IsLocal for Local {}

/// The seals of `Gate<T>` and `OriginOf<T>`: public traits in a private
/// module, so nameable here and nowhere else. They carry the tool as their
/// parameter, are implemented only for toolgate's own gates and origins under
/// the bounds those admit, and hold what the public traits compute.
mod seal {
    use schemars::Schema;

    use crate::effect::{DeclarationScope, Facts, Origin};

    /// What a gate reports about a tool: its facts, and its input schema.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot gate `{T}`: toolgate's gates are sealed",
        label = "no impl outside toolgate can decide how `{T}` is gated",
        note = "a tool names one of the gates in `toolgate::gate` with `type Gate = ...;`, and which gate it may name follows from its declarations (origin, effect, markers)",
        note = "no impl of `Gate` outside toolgate is accepted: remove it, and let `#[derive(Tool)]` choose the gate"
    )]
    #[allow(
        unreachable_pub,
        reason = "sealed-trait pattern: public in a private module"
    )]
    pub trait GateRule<T: ?Sized> {
        /// The tool's facts as this gate states them.
        fn facts(tool: &T) -> Facts;
        /// The input schema, for the one gate that waits for input.
        fn input_schema(tool: &T) -> Option<Schema> {
            let _ = tool;
            None
        }
        /// Where an operator's declaration was made, for the one gate an
        /// operator declares.
        fn declaration_scope(tool: &T) -> DeclarationScope {
            let _ = tool;
            DeclarationScope::Server
        }
    }

    /// What an origin reports about a tool.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be made the origin of `{T}`: toolgate's origins are sealed",
        label = "no impl outside toolgate can decide where `{T}` lives",
        note = "a tool declares `type Origin = toolgate::Local;`, or `toolgate::Remote` together with `impl toolgate::RemoteTool`",
        note = "no impl of `OriginOf` outside toolgate is accepted: remove it"
    )]
    #[allow(
        unreachable_pub,
        reason = "sealed-trait pattern: public in a private module"
    )]
    pub trait OriginRule<T: ?Sized> {
        /// The run-time value of the origin.
        const ORIGIN: Origin;
        /// The server a remote tool lives behind.
        fn server(tool: &T) -> Option<&str>;
    }
}
