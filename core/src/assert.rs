//! Pins on a tool's gate, for a tool author's CI: [`assert_gate!`](crate::assert_gate!).
//!
//! A tool's gate follows from its declarations — its effect,
//! `requires_approval`, `input`, `remote`, `operator_approval` — and a change
//! to any of them can change whether its calls wait for a human. The diff of
//! such a change shows the declaration, not the gate: `effect =
//! non_idempotent_write` becoming `effect = read_only` reads as a fix, and
//! quietly lets every call run unapproved. Pin the gate next to the tool:
//!
//! ```
//! use toolgate::assert_gate;
//!
//! /// Deletes a file below the workspace root.
//! #[derive(toolgate::Tool)]
//! #[tool(effect = non_idempotent_write)]
//! struct DeleteFile;
//!
//! assert_gate!(DeleteFile: approval);
//! ```
//!
//! and the build fails, with a message naming the tool, its gate and the pin,
//! when the gate drifts from the pin; the pin then changes in the same review
//! as the declaration, where a reviewer sees it:
//!
//! ```compile_fail,E0277
//! # use toolgate::assert_gate;
//! /// Deletes a file below the workspace root.
//! #[derive(toolgate::Tool)]
//! #[tool(effect = read_only)] // was `non_idempotent_write`
//! struct DeleteFile;
//!
//! assert_gate!(DeleteFile: approval);
//! ```
//!
//! The check is a trait bound, checked by the compiler: it costs nothing at run
//! time and needs no test to be run. Each pin is a trait implemented by the
//! gates it admits, with a message of its own; the traits are sealed, so a pin
//! cannot be satisfied by an impl outside toolgate.
//!
//! | pin | the gate ([`gate`](crate::gate)) | every call |
//! |---|---|---|
//! | `runs` | [`Runs`] | runs without a pause |
//! | `approval` | [`ApprovalByEffect`] or [`ApprovalByMarker`] | waits for approval, whatever anyone configures |
//! | `approval by effect` | [`ApprovalByEffect`] | waits for approval: a local tool declares a write |
//! | `approval by marker` | [`ApprovalByMarker`] | waits for approval: the explicit marker |
//! | `approval by operator` | [`ApprovalByOperator`] | waits for approval unless the server's operator declared none |
//! | `input` | [`WaitsForInput`] | waits for a user's typed input |
//!
//! `approval` does not admit [`ApprovalByOperator`]: an operator can declare
//! that a server's tools need no approval, so such a tool is pinned as
//! `approval by operator`, which says who decides.

use crate::gate::{ApprovalByEffect, ApprovalByMarker, ApprovalByOperator, Runs, WaitsForInput};
use crate::tool::Tool;

/// Fails to compile, with a message naming the tool, its gate and the pin,
/// unless the tool's gate is the one pinned.
///
/// ```
/// # use toolgate::{assert_gate, OperatorDeclaration, RemoteApproval, RemoteTool};
/// /// Reads a file below the workspace root.
/// #[derive(toolgate::Tool)]
/// #[tool(effect = read_only)]
/// struct ReadFile;
///
/// /// Shows a secret: read-only, but asks anyway.
/// #[derive(toolgate::Tool)]
/// #[tool(effect = read_only, requires_approval)]
/// struct ShowSecret;
///
/// /// Picks a branch the user chooses.
/// #[derive(toolgate::Tool)]
/// #[tool(effect = read_only, input = String)]
/// struct PickBranch;
///
/// /// Deletes a file below the workspace root.
/// #[toolgate::tool(effect = non_idempotent_write)]
/// async fn delete_file(path: String) -> toolgate::ToolOutput {
///     toolgate::ToolOutput::text(format!("deleted {path}"))
/// }
///
/// /// via the external MCP server `gh`: creates an issue
/// #[derive(toolgate::Tool)]
/// #[tool(remote, operator_approval, effect = non_idempotent_write)]
/// struct CreateIssue(OperatorDeclaration);
/// impl RemoteTool for CreateIssue {
///     fn server(&self) -> &str { "gh" }
/// }
/// impl RemoteApproval for CreateIssue {
///     fn operator_declaration(&self) -> OperatorDeclaration { self.0 }
/// }
///
/// assert_gate!(ReadFile: runs);
/// assert_gate!(ShowSecret: approval);
/// assert_gate!(ShowSecret: approval by marker);
/// assert_gate!(PickBranch: input);
/// assert_gate!(DeleteFile: approval);
/// assert_gate!(DeleteFile: approval by effect);
/// assert_gate!(CreateIssue: approval by operator);
/// ```
///
/// See [`assert`](crate::assert) for what each pin admits and why `approval`
/// does not admit an operator's declaration.
#[macro_export]
macro_rules! assert_gate {
    ($tool:ty: runs) => {
        const _: () = $crate::assert::runs::<$tool>();
    };
    ($tool:ty: approval) => {
        const _: () = $crate::assert::approval::<$tool>();
    };
    ($tool:ty: approval by effect) => {
        const _: () = $crate::assert::approval_by_effect::<$tool>();
    };
    ($tool:ty: approval by marker) => {
        const _: () = $crate::assert::approval_by_marker::<$tool>();
    };
    ($tool:ty: approval by operator) => {
        const _: () = $crate::assert::approval_by_operator::<$tool>();
    };
    ($tool:ty: input) => {
        const _: () = $crate::assert::input::<$tool>();
    };
    ($($other:tt)*) => {
        ::core::compile_error!(
            "expected `assert_gate!(Tool: pin)`: runs, approval, input, approval by effect|marker|operator"
        );
    };
}

// Each pin is a trait implemented by exactly the gates it admits, so a gate
// that drifts fails the bound with the pin's own message. A pin is sealed by a
// supertrait in a private module, implemented only beside the pin's own impls:
// a crate could otherwise write `impl PinnedApproval<ItsTool> for gate::Runs`
// (the orphan rules allow it, `ItsTool` being local) and silence its pin.

/// The pin `runs`: admits [`Runs`].
#[diagnostic::on_unimplemented(
    message = "`{T}` is gated by `{Self}`, but its gate is pinned to `runs`",
    label = "pinned here: every call runs without a pause",
    note = "a tool's gate follows from its declarations (its effect, `requires_approval`, `input`, `remote`, `operator_approval`): if the change is intended, change the pin in the same review",
    note = "`runs` admits only `gate::Runs`: a local `read_only` tool without the explicit marker or input"
)]
pub trait PinnedRuns<T: ?Sized>: seal::Admits<seal::Runs, T> {}
impl<T: ?Sized> PinnedRuns<T> for Runs {}
impl<T: ?Sized> seal::Admits<seal::Runs, T> for Runs {}

/// The pin `approval`: admits [`ApprovalByEffect`] and [`ApprovalByMarker`],
/// the approval gates no one can switch off.
#[diagnostic::on_unimplemented(
    message = "`{T}` is gated by `{Self}`, but its gate is pinned to `approval`",
    label = "pinned here: every call waits for a human's approval, whatever anyone configures",
    note = "a tool's gate follows from its declarations (its effect, `requires_approval`, `input`, `remote`, `operator_approval`): if the change is intended, change the pin in the same review",
    note = "`approval` admits `gate::ApprovalByEffect` (a local tool declares a write) and `gate::ApprovalByMarker` (`requires_approval`); an operator can declare a server's tools free of approval, so a tool gated by the operator is pinned as `approval by operator`"
)]
pub trait PinnedApproval<T: ?Sized>: seal::Admits<seal::Approval, T> {}
impl<T: ?Sized> PinnedApproval<T> for ApprovalByEffect {}
impl<T: ?Sized> PinnedApproval<T> for ApprovalByMarker {}
impl<T: ?Sized> seal::Admits<seal::Approval, T> for ApprovalByEffect {}
impl<T: ?Sized> seal::Admits<seal::Approval, T> for ApprovalByMarker {}

/// The pin `approval by effect`: admits [`ApprovalByEffect`].
#[diagnostic::on_unimplemented(
    message = "`{T}` is gated by `{Self}`, but its gate is pinned to `approval by effect`",
    label = "pinned here: every call waits for approval because the tool declares a write",
    note = "a tool's gate follows from its declarations (its effect, `requires_approval`, `input`, `remote`, `operator_approval`): if the change is intended, change the pin in the same review",
    note = "`approval by effect` admits only `gate::ApprovalByEffect`: a local tool that declares `idempotent_write` or `non_idempotent_write`, without the explicit marker"
)]
pub trait PinnedApprovalByEffect<T: ?Sized>: seal::Admits<seal::ApprovalByEffect, T> {}
impl<T: ?Sized> PinnedApprovalByEffect<T> for ApprovalByEffect {}
impl<T: ?Sized> seal::Admits<seal::ApprovalByEffect, T> for ApprovalByEffect {}

/// The pin `approval by marker`: admits [`ApprovalByMarker`].
#[diagnostic::on_unimplemented(
    message = "`{T}` is gated by `{Self}`, but its gate is pinned to `approval by marker`",
    label = "pinned here: every call waits for approval because of the explicit marker",
    note = "a tool's gate follows from its declarations (its effect, `requires_approval`, `input`, `remote`, `operator_approval`): if the change is intended, change the pin in the same review",
    note = "`approval by marker` admits only `gate::ApprovalByMarker`: a tool with `requires_approval`"
)]
pub trait PinnedApprovalByMarker<T: ?Sized>: seal::Admits<seal::ApprovalByMarker, T> {}
impl<T: ?Sized> PinnedApprovalByMarker<T> for ApprovalByMarker {}
impl<T: ?Sized> seal::Admits<seal::ApprovalByMarker, T> for ApprovalByMarker {}

/// The pin `approval by operator`: admits [`ApprovalByOperator`].
#[diagnostic::on_unimplemented(
    message = "`{T}` is gated by `{Self}`, but its gate is pinned to `approval by operator`",
    label = "pinned here: every call waits for approval unless the server's operator declared none",
    note = "a tool's gate follows from its declarations (its effect, `requires_approval`, `input`, `remote`, `operator_approval`): if the change is intended, change the pin in the same review",
    note = "`approval by operator` admits only `gate::ApprovalByOperator`: a remote tool with `operator_approval` and without the explicit marker"
)]
pub trait PinnedApprovalByOperator<T: ?Sized>: seal::Admits<seal::ApprovalByOperator, T> {}
impl<T: ?Sized> PinnedApprovalByOperator<T> for ApprovalByOperator {}
impl<T: ?Sized> seal::Admits<seal::ApprovalByOperator, T> for ApprovalByOperator {}

/// The pin `input`: admits [`WaitsForInput`].
#[diagnostic::on_unimplemented(
    message = "`{T}` is gated by `{Self}`, but its gate is pinned to `input`",
    label = "pinned here: every call waits for a user's typed input",
    note = "a tool's gate follows from its declarations (its effect, `requires_approval`, `input`, `remote`, `operator_approval`): if the change is intended, change the pin in the same review",
    note = "`input` admits only `gate::WaitsForInput`: a local `read_only` tool with `input = Type`"
)]
pub trait PinnedInput<T: ?Sized>: seal::Admits<seal::Input, T> {}
impl<T: ?Sized> PinnedInput<T> for WaitsForInput {}
impl<T: ?Sized> seal::Admits<seal::Input, T> for WaitsForInput {}

// What `assert_gate!` expands to: a call in a constant, so the bound is
// checked at compile time and nothing runs.

#[doc(hidden)]
pub const fn runs<T: Tool<Gate: PinnedRuns<T>>>() {}
#[doc(hidden)]
pub const fn approval<T: Tool<Gate: PinnedApproval<T>>>() {}
#[doc(hidden)]
pub const fn approval_by_effect<T: Tool<Gate: PinnedApprovalByEffect<T>>>() {}
#[doc(hidden)]
pub const fn approval_by_marker<T: Tool<Gate: PinnedApprovalByMarker<T>>>() {}
#[doc(hidden)]
pub const fn approval_by_operator<T: Tool<Gate: PinnedApprovalByOperator<T>>>() {}
#[doc(hidden)]
pub const fn input<T: Tool<Gate: PinnedInput<T>>>() {}

/// The pins' seal: public in a private module, so nameable here and nowhere
/// else.
#[allow(
    unreachable_pub,
    reason = "sealed-trait pattern: public in a private module"
)]
mod seal {
    /// Which pins admit a gate; the first parameter names the pin.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot satisfy a pin for `{T}`: toolgate's pins are sealed",
        label = "no impl outside toolgate can change what a pin admits",
        note = "a pin admits the gates it names in `toolgate::assert`; if the tool's gate changed on purpose, change the pin in `assert_gate!`"
    )]
    pub trait Admits<Pin, T: ?Sized> {}

    pub enum Runs {}
    pub enum Approval {}
    pub enum ApprovalByEffect {}
    pub enum ApprovalByMarker {}
    pub enum ApprovalByOperator {}
    pub enum Input {}
}
