//! The seal on the declaration traits: only this crate adds effects, origins
//! and gates.

/// Implemented by this crate's marker types only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not one of toolgate's effects, origins or gates",
    label = "toolgate's declaration markers are sealed",
    note = "the effects, origins and gates are a closed set, so that no new one can let an unapproved write through; name one of `toolgate`'s own"
)]
#[allow(
    unreachable_pub,
    reason = "sealed-trait pattern: public in a private module"
)]
pub trait Sealed {}
