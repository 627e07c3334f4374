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
