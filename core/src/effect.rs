//! What a tool does to the world, and where its body lives.
//!
//! Both facts exist twice on purpose: once as a *type* (the markers
//! [`ReadOnly`], [`IdempotentWrite`], [`NonIdempotentWrite`], [`Local`],
//! [`Remote`]), which is what a tool declares and what the compiler checks,
//! and once as a *value* ([`Effect`], [`Origin`]), read off the type for
//! display, audit and persistence. The value is never the source of a rule.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::sealed::Sealed;

/// The effect a tool declares, as a run-time value.
///
/// Deliberately exhaustive: a caller matches every effect, so that an effect
/// added later could not be silently treated as one of these.
///
/// Read off a tool's effect marker type with [`EffectMarker::EFFECT`]; it is a
/// description of the declaration, used for display, audit and retry policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Calling the tool changes nothing.
    ReadOnly,
    /// Calling the tool changes something; repeating the call converges.
    IdempotentWrite,
    /// Calling the tool changes something; repeating the call compounds.
    NonIdempotentWrite,
}

impl Effect {
    /// Every effect, weakest first.
    pub const ALL: [Effect; 3] = [
        Effect::ReadOnly,
        Effect::IdempotentWrite,
        Effect::NonIdempotentWrite,
    ];

    /// True for both kinds of write.
    pub const fn is_write(self) -> bool {
        !matches!(self, Effect::ReadOnly)
    }

    /// False only for [`Effect::NonIdempotentWrite`]: repeating such a call
    /// after an unclear outcome may do the work twice.
    pub const fn is_safe_to_retry(self) -> bool {
        !matches!(self, Effect::NonIdempotentWrite)
    }

    /// The stable snake_case name, as written in `#[tool(effect = ...)]`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Effect::ReadOnly => "read_only",
            Effect::IdempotentWrite => "idempotent_write",
            Effect::NonIdempotentWrite => "non_idempotent_write",
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a tool's body lives, as a run-time value. Deliberately exhaustive,
/// like [`Effect`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Compiled into the host: its declarations are trusted.
    Local,
    /// Behind an external server: its self-description is not trusted.
    Remote,
}

impl Origin {
    /// The stable snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Origin::Local => "local",
            Origin::Remote => "remote",
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An effect declared as a type: one of [`ReadOnly`], [`IdempotentWrite`],
/// [`NonIdempotentWrite`]. Sealed.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an effect",
    label = "not one of `ReadOnly`, `IdempotentWrite`, `NonIdempotentWrite`",
    note = "a tool declares its effect with `type Effect = toolgate::ReadOnly;` (or `IdempotentWrite`, `NonIdempotentWrite`), or with `#[tool(effect = read_only)]`"
)]
pub trait EffectMarker: Sealed + Send + Sync + 'static {
    /// The run-time value of this declaration.
    const EFFECT: Effect;
}

/// Effect marker: calling the tool changes nothing.
#[derive(Debug, Clone, Copy)]
pub enum ReadOnly {}
/// Effect marker: the tool writes; repeating a call converges.
#[derive(Debug, Clone, Copy)]
pub enum IdempotentWrite {}
/// Effect marker: the tool writes; repeating a call compounds.
#[derive(Debug, Clone, Copy)]
pub enum NonIdempotentWrite {}

impl Sealed for ReadOnly {}
impl Sealed for IdempotentWrite {}
impl Sealed for NonIdempotentWrite {}

impl EffectMarker for ReadOnly {
    const EFFECT: Effect = Effect::ReadOnly;
}
impl EffectMarker for IdempotentWrite {
    const EFFECT: Effect = Effect::IdempotentWrite;
}
impl EffectMarker for NonIdempotentWrite {
    const EFFECT: Effect = Effect::NonIdempotentWrite;
}

/// Origin marker: the tool's body is compiled into the host.
#[derive(Debug, Clone, Copy)]
pub enum Local {}
/// Origin marker: the tool's body lives behind an external server. A tool
/// with this origin must implement [`RemoteTool`](crate::RemoteTool).
#[derive(Debug, Clone, Copy)]
pub enum Remote {}

impl Sealed for Local {}
impl Sealed for Remote {}

/// An operator's per-server declaration of whether a remote tool needs
/// approval. The default — and the reading of anything unreadable — is
/// [`OperatorDeclaration::ApprovalRequired`].
///
/// Deliberately exhaustive: a reader must handle both answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorDeclaration {
    /// Every call of the server's tools waits for a human's approval.
    #[default]
    ApprovalRequired,
    /// The operator judged the server's tools safe to run unattended.
    NoApproval,
}

/// Where an operator's declaration for a remote tool was made: for its
/// whole server (the server's flag), or for the tool alone (a per-tool
/// declaration, which overrides the server's flag for that tool). It
/// changes nothing the gate decides — the declaration is the same two
/// answers either way — only what an operator is told the cause is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeclarationScope {
    /// The declaration is the server's, for all its tools.
    #[default]
    Server,
    /// The declaration is the tool's own.
    Tool,
    /// The tool's own declaration is stored but could not be read: it
    /// reads as approval required, whatever its server's flag says.
    Unreadable,
}

/// Why a remote tool of a server whose approval the operator turned off
/// still requires approval: the tool is not one the operator judged (tool
/// pinning). An operator's "no approval" covers the tools as they were when
/// it was given (or accepted since); a tool that appeared or changed after
/// that waits for a human until an operator accepts it as it is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quarantine {
    /// No operator accepted any definition of it: it is new since approval
    /// was turned off (or since its server's tools were first pinned).
    New,
    /// Its definition changed since an operator accepted it.
    Changed,
}

impl Quarantine {
    /// The reason, in words.
    pub const fn as_str(self) -> &'static str {
        match self {
            Quarantine::New => "new since an operator judged the server's tools",
            Quarantine::Changed => "its definition changed since an operator accepted it",
        }
    }
}

impl fmt::Display for Quarantine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a tool declares about itself — never its decision. The input to the
/// one rule, [`judge`](crate::gate::judge).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Facts {
    /// Where the body lives.
    pub origin: Origin,
    /// What a call declares to do. Not read for a remote tool.
    pub effect: Effect,
    /// The explicit approval marker: every call asks.
    pub approval_marker: bool,
    /// The operator's declaration for a remote tool's server.
    pub operator: Option<OperatorDeclaration>,
    /// The call waits for typed input from a user.
    pub requires_input: bool,
    /// A remote tool its operator has not accepted as it is now: on a server
    /// whose approval is off it requires approval all the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantine: Option<Quarantine>,
}

impl Facts {
    /// A tool of this origin and effect, with no marker, no operator
    /// declaration and no input.
    pub const fn new(origin: Origin, effect: Effect) -> Self {
        Self {
            origin,
            effect,
            approval_marker: false,
            operator: None,
            requires_input: false,
            quarantine: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_retries() {
        assert!(!Effect::ReadOnly.is_write());
        assert!(Effect::IdempotentWrite.is_write());
        assert!(Effect::NonIdempotentWrite.is_write());
        assert!(Effect::ReadOnly.is_safe_to_retry());
        assert!(Effect::IdempotentWrite.is_safe_to_retry());
        assert!(!Effect::NonIdempotentWrite.is_safe_to_retry());
    }

    #[test]
    fn names_are_stable_snake_case() {
        for effect in Effect::ALL {
            let json = serde_json::to_value(effect).unwrap_or_default();
            assert_eq!(json, serde_json::Value::from(effect.as_str()));
            assert_eq!(effect.to_string(), effect.as_str());
        }
        assert_eq!(
            Effect::ALL.map(Effect::as_str),
            ["read_only", "idempotent_write", "non_idempotent_write"]
        );
        assert_eq!(<ReadOnly as EffectMarker>::EFFECT, Effect::ReadOnly);
        assert_eq!(
            <IdempotentWrite as EffectMarker>::EFFECT,
            Effect::IdempotentWrite
        );
        assert_eq!(
            <NonIdempotentWrite as EffectMarker>::EFFECT,
            Effect::NonIdempotentWrite
        );
        assert_eq!(Origin::Local.as_str(), "local");
        assert_eq!(Origin::Remote.to_string(), "remote");
    }
}
