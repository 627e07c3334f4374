//! The seals on the declaration traits. Everything here is public in a
//! private module: nameable by this crate, unnameable by any other, so no impl
//! outside toolgate can satisfy these traits.
//!
//! Why two kinds of seal: [`Sealed`] closes a trait without a type parameter
//! (an effect, an origin, a gate, a pause) — a user's type cannot implement it,
//! and the orphan rules forbid a user's impl of a toolgate trait for a toolgate
//! type. A trait with a type parameter that may be the *user's* type
//! (`Gate<T>`, `OriginOf<T>`) is not closed by that: the orphan rules let a
//! crate implement `Gate<ItsTool>` for `toolgate::Local`. Those traits take a
//! seal that carries the same parameter ([`GateRule`], [`OriginRule`]) and is
//! implemented only for toolgate's own gates and origins, under the same
//! bounds; that seal also holds what the trait computes, so the public trait
//! has nothing a user could write.

use schemars::Schema;

use crate::effect::{Facts, Origin};

/// Implemented by this crate's marker types only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not one of toolgate's effects, origins, gates or pauses",
    label = "toolgate's declaration markers are sealed",
    note = "the effects, origins and gates are a closed set, so that no new one can let an unapproved write through; name one of `toolgate`'s own"
)]
#[allow(
    unreachable_pub,
    reason = "sealed-trait pattern: public in a private module"
)]
pub trait Sealed {}

/// What a gate reports about a tool: its facts, and its input schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be made a gate for `{T}`: toolgate's gates are sealed",
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

/// What a pause adds to its turn's digest: nothing for a verdict, the input
/// tool, its call and its schema for data — so a changed schema names a
/// different turn.
#[allow(
    unreachable_pub,
    reason = "sealed-trait pattern: public in a private module"
)]
pub trait PauseBinding {
    /// The input pause's tool, call index and schema, if this is one.
    fn input_binding(&self) -> Option<(&str, usize, &Schema)>;
}
