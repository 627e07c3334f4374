//! The gate: how a tool's declarations become a [`Decision`].
//!
//! This module is the one home of the approval rule (SPEC §2). A tool names
//! its gate as a type (`type Gate = ...` in [`Tool`], chosen for
//! you by `#[derive(Tool)]`), and each gate type may only be named by the tools
//! the rule allows:
//!
//! | gate | who may name it | pause | cause |
//! |---|---|---|---|
//! | [`Runs`] | a local `read_only` tool; a remote tool | none | [`Cause::LocalReadOnly`] / [`Cause::RemoteUndeclared`] |
//! | [`ApprovalByMarker`] | a tool implementing [`RequiresApproval`] | approval | [`Cause::Marker`] |
//! | [`ApprovalByEffect`] | a local tool declaring a write | approval | [`Cause::DeclaredWrite`] |
//! | [`ApprovalByOperator`] | a tool implementing [`RemoteApproval`] | the operator's answer | [`Cause::Operator`] |
//! | [`WaitsForInput`] | a tool implementing [`RequiresInput`] that no approval binds | input | [`Cause::UserInput`] |
//!
//! A local tool that declares a write can name only the two approval gates,
//! so a write-without-approval builtin does not type-check. Each gate computes
//! its [`Decision`] in one place ([`Gate::decide`]); the registry's boot check,
//! the turn scan and `explain` all read that decision through [`decide`] and
//! never restate the table.

use std::fmt;

use schemars::Schema;
use serde::{Deserialize, Serialize};

use crate::effect::{
    Effect, EffectMarker, IdempotentWrite, Local, NonIdempotentWrite, Origin, ReadOnly, Remote,
};
use crate::sealed::Sealed;
use crate::tool::{RemoteApproval, RemoteTool, RequiresApproval, RequiresInput, Tool};

/// What the loop must do before running a call.
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

/// An operator's per-server declaration of whether a remote tool needs
/// approval. The default — and the reading of anything unreadable — is
/// [`OperatorDeclaration::ApprovalRequired`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorDeclaration {
    /// Every call of the server's tools waits for a human's approval.
    #[default]
    ApprovalRequired,
    /// The operator judged the server's tools safe to run unattended.
    NoApproval,
}

/// Why a tool has the gate it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "cause", content = "detail")]
pub enum Cause {
    /// A local tool that declares `read_only` and carries no marker.
    LocalReadOnly,
    /// A remote tool with no operator declaration: its effect is not used.
    RemoteUndeclared,
    /// The tool carries the explicit approval marker.
    Marker,
    /// A local tool that declares a write: approval is implied by the effect.
    DeclaredWrite(Effect),
    /// The operator's declaration for the tool's server.
    Operator(OperatorDeclaration),
    /// The tool waits for typed input from a user.
    UserInput,
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
pub struct Decision {
    /// What the loop must do before running a call.
    pub pause: Pause,
    /// Why.
    pub cause: Cause,
}

impl Decision {
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

    /// The route by which approval binds, if it does.
    pub const fn approval_route(&self) -> Option<ApprovalRoute> {
        if !self.requires_approval() {
            return None;
        }
        match self.cause {
            Cause::Marker => Some(ApprovalRoute::Marker),
            Cause::DeclaredWrite(_) => Some(ApprovalRoute::DeclaredWrite),
            Cause::Operator(_) => Some(ApprovalRoute::OperatorDeclaration),
            // A hand-erased tool may pair an approval pause with any cause;
            // the marker is the closest honest description of "it says so".
            Cause::LocalReadOnly | Cause::RemoteUndeclared | Cause::UserInput => {
                Some(ApprovalRoute::Marker)
            }
        }
    }
}

/// Decides the gate of a typed tool. This is the only function that turns a
/// tool's declarations into a [`Decision`]; everything else calls it.
pub fn decide<T: Tool>(tool: &T) -> Decision {
    <T::Gate as Gate<T>>::decide(tool)
}

/// A gate a tool may name as `type Gate = ...`. Sealed: the five gates of this
/// module are all there are, and each one states who may use it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot gate `{T}`",
    label = "this gate is not allowed for this tool",
    note = "name one of the gates in `toolgate::gate`, or let `#[derive(Tool)]` choose"
)]
pub trait Gate<T: ?Sized>: Sealed {
    /// The gate's decision for `tool`.
    fn decide(tool: &T) -> Decision;

    /// The input schema, for the one gate that waits for input.
    fn input_schema(tool: &T) -> Option<Schema> {
        let _ = tool;
        None
    }
}

/// Gate: the call runs without a pause. For a local tool that declares
/// `read_only`, and for a remote tool without an operator declaration.
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

/// Which origins may run a tool of effect `E` without any pause.
#[diagnostic::on_unimplemented(
    message = "a `{Self}` tool that declares `{E}` cannot run without approval",
    label = "this tool declares a write, so every call needs a human's approval",
    note = "a builtin's declared write always implies approval and cannot be switched off",
    note = "use `type Gate = toolgate::gate::ApprovalByEffect;` (what `#[derive(Tool)]` chooses for a write), or declare `read_only` if the tool changes nothing"
)]
pub trait RunsWithoutApproval<E>: Sealed {
    /// Why such a tool runs.
    const CAUSE: Cause;
}
impl RunsWithoutApproval<ReadOnly> for Local {
    const CAUSE: Cause = Cause::LocalReadOnly;
}
impl<E: EffectMarker> RunsWithoutApproval<E> for Remote {
    const CAUSE: Cause = Cause::RemoteUndeclared;
}

/// Which origins and effects imply approval.
#[diagnostic::on_unimplemented(
    message = "`ApprovalByEffect` applies only to a local tool that declares a write, not to a `{Self}` tool that declares `{E}`",
    label = "approval is implied only by a local tool's declared write",
    note = "a `read_only` builtin asks for approval through the explicit marker: `type Gate = toolgate::gate::ApprovalByMarker;` with `impl RequiresApproval`",
    note = "a remote tool's effect is not its consent: its approval comes from the operator (`RemoteApproval`) or the explicit marker"
)]
pub trait ApprovalImpliedBy<E>: Sealed {}
impl ApprovalImpliedBy<IdempotentWrite> for Local {}
impl ApprovalImpliedBy<NonIdempotentWrite> for Local {}

/// Which origins and effects may wait for input.
#[diagnostic::on_unimplemented(
    message = "a `{Self}` tool that declares `{E}` cannot wait for user input",
    label = "this tool's declared write already needs approval",
    note = "the approval scan runs before the input scan and the approval resume carries no input, so the tool would ask for approval on every turn and never run",
    note = "a tool that needs both a human's data and a human's consent cannot be built: split it, or declare `read_only` if it changes nothing"
)]
pub trait AdmitsInput<E>: Sealed {}
impl AdmitsInput<ReadOnly> for Local {}
impl<E: EffectMarker> AdmitsInput<E> for Remote {}

impl<T> Gate<T> for Runs
where
    T: Tool,
    T::Origin: RunsWithoutApproval<T::Effect>,
{
    fn decide(_: &T) -> Decision {
        Decision {
            pause: Pause::None,
            cause: <T::Origin as RunsWithoutApproval<T::Effect>>::CAUSE,
        }
    }
}

impl<T: RequiresApproval> Gate<T> for ApprovalByMarker {
    fn decide(_: &T) -> Decision {
        Decision {
            pause: Pause::Approval,
            cause: Cause::Marker,
        }
    }
}

impl<T> Gate<T> for ApprovalByEffect
where
    T: Tool,
    T::Origin: ApprovalImpliedBy<T::Effect>,
{
    fn decide(_: &T) -> Decision {
        Decision {
            pause: Pause::Approval,
            cause: Cause::DeclaredWrite(<T::Effect as EffectMarker>::EFFECT),
        }
    }
}

impl<T: RemoteApproval> Gate<T> for ApprovalByOperator {
    fn decide(tool: &T) -> Decision {
        let declaration = tool.operator_declaration();
        Decision {
            pause: match declaration {
                OperatorDeclaration::ApprovalRequired => Pause::Approval,
                OperatorDeclaration::NoApproval => Pause::None,
            },
            cause: Cause::Operator(declaration),
        }
    }
}

impl<T> Gate<T> for WaitsForInput
where
    T: RequiresInput,
    T::Origin: AdmitsInput<T::Effect>,
{
    fn decide(_: &T) -> Decision {
        Decision {
            pause: Pause::Input,
            cause: Cause::UserInput,
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

/// Ties an origin marker to the tool declaring it: [`Remote`] only for a
/// [`RemoteTool`].
#[diagnostic::on_unimplemented(
    message = "`{T}` declares `type Origin = {Self}` but does not implement `RemoteTool`",
    label = "a remote origin is claimed by implementing `RemoteTool`",
    note = "implement `toolgate::RemoteTool` for the type, or declare `type Origin = toolgate::Local;`"
)]
pub trait OriginOf<T: ?Sized>: Sealed {
    /// The run-time value of this origin.
    const ORIGIN: Origin;
    /// The server a remote tool lives behind.
    fn server(tool: &T) -> Option<&str>;
}
impl<T: ?Sized> OriginOf<T> for Local {
    const ORIGIN: Origin = Origin::Local;
    fn server(_: &T) -> Option<&str> {
        None
    }
}
impl<T: RemoteTool> OriginOf<T> for Remote {
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
