//! What the registry says of one tool to an operator.

use std::fmt;

use super::ToolSource;
use crate::effect::{Effect, Origin};
use crate::gate::{Cause, DeclarationScope, OperatorDeclaration, Ruling};

/// One tool's gate and its cause, for an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    /// The tool.
    pub name: String,
    /// What a model or an MCP client calls it ([`crate::wire`]).
    pub wire_name: String,
    /// Where its body lives.
    pub origin: Origin,
    /// Its declared effect.
    pub effect: Effect,
    /// The server a remote tool lives behind.
    pub server: Option<String>,
    /// Whether a remote tool's operator declaration is its server's or its
    /// own.
    pub declared_for: DeclarationScope,
    /// Its gate.
    pub ruling: Ruling,
    /// How it reached the registry.
    pub source: ToolSource,
    /// True when it was erased by hand: its gate comes from the facts it
    /// declared, not from its types.
    pub hand_erased: bool,
}

impl Explanation {
    /// The cause in words: "local tool declares non_idempotent_write".
    pub fn cause_text(&self) -> String {
        let server = self.server.as_deref().unwrap_or("?");
        let of = match self.declared_for {
            DeclarationScope::Server => format!("server `{server}`"),
            DeclarationScope::Tool => format!("this tool of server `{server}`"),
            DeclarationScope::Unreadable => format!(
                "this tool of server `{server}` (its stored declaration is unreadable, and reads as approval required)"
            ),
        };
        let mut text = match self.ruling.cause {
            Cause::LocalReadOnly => "local tool declares read_only".to_owned(),
            Cause::Marker => format!("{} tool carries the explicit approval marker", self.origin),
            Cause::DeclaredWrite(effect) => format!("local tool declares {effect}"),
            Cause::Operator(OperatorDeclaration::ApprovalRequired) => {
                format!("operator declared approval required for {of}")
            }
            Cause::Operator(OperatorDeclaration::NoApproval) => {
                format!("operator declared no approval for {of}")
            }
            Cause::Quarantined(why) => format!(
                "quarantined: operator declared no approval for {of}, but the tool is {}; it requires approval until an operator accepts it",
                match why {
                    crate::effect::Quarantine::New => "new since they judged its tools",
                    crate::effect::Quarantine::Changed => "changed since they accepted it",
                }
            ),
            Cause::UserInput => format!("{} tool requires user input", self.origin),
            Cause::Refused(rule) => format!("refused: the tool breaks {rule}"),
        };
        if self.hand_erased {
            text.push_str(" (erased by hand: decided from its declared facts)");
        }
        text
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.ruling.pause, self.cause_text())
    }
}
