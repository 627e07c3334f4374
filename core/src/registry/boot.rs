//! Why a registry refuses to boot, and what it leaves out.

use std::fmt;

use crate::gate::Rule;

/// One reason the registry refuses to boot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BootProblem {
    /// Two builtins share a name.
    #[error("two builtins are named `{name}`: tool names must be unique")]
    DuplicateName {
        /// The shared name.
        name: String,
    },
    /// A builtin's name is unusable.
    #[error("builtin `{name}` has an unusable name: {problem}")]
    InvalidName {
        /// The name.
        name: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A tool erased by hand declares a remote origin but was added as a
    /// builtin: a remote tool's body lives on a server an operator judged, and
    /// reaches a registry through a provider built from that record.
    #[error(
        "tool `{name}` declares a remote origin and cannot be registered as a builtin: builtins are local tools, and remote tools reach a registry through a `ToolProvider` built from an operator's stored server records"
    )]
    RemoteBuiltin {
        /// The tool.
        name: String,
    },
    /// Two builtins that could not both keep a wire name
    /// ([`crate::wire`]): the hashed wire name of one — which it takes as
    /// soon as its plain one clashes with any tool's — would be the other's,
    /// or the other's name.
    #[error(
        "builtins `{first}` and `{second}` could not both keep a wire name: the hashed wire name of one would be the other's, or the other's name; rename one"
    )]
    WireNameClash {
        /// One builtin.
        first: String,
        /// The other.
        second: String,
    },
    /// A tool waits for input fields its arguments do not have: the user's
    /// input is laid over the model's arguments field by field, so those
    /// fields would be thrown away without a word.
    #[error(
        "tool `{name}` waits for input fields its arguments do not have ({}): a user's input is laid over the model's arguments field by field, and the tool would never see these; add them to the tool's `Args`, or remove them from its `input` type",
        fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
    )]
    InputNotTaken {
        /// The tool.
        name: String,
        /// The input's fields its arguments lack.
        fields: Vec<String>,
    },
    /// A tool's declared facts break a rule: the combination the
    /// type system refuses for a typed tool, declared by a hand-erased one.
    #[error("tool `{name}` breaks {rule}")]
    BrokenRule {
        /// The tool.
        name: String,
        /// The rule, with its number.
        rule: Rule,
    },
}

/// The registry refused to boot; every problem found is listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct BootError {
    /// Each problem, in registration order.
    pub problems: Vec<BootProblem>,
}

impl fmt::Display for BootError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the tool registry refused to boot:")?;
        for problem in &self.problems {
            write!(f, "\n  - {problem}")?;
        }
        Ok(())
    }
}

/// Why a provided tool was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DropReason {
    /// A builtin or an earlier provider's tool has the name.
    NameTaken,
    /// The name is unusable.
    InvalidName(&'static str),
    /// The tool's declared facts break a rule.
    BrokenRule(Rule),
    /// A remote tool that names no server: no operator's record can stand
    /// behind its declaration.
    NoServer,
    /// Every wire name its name could take is another tool's
    /// ([`crate::wire`]); builtins keep theirs.
    WireNameTaken,
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DropReason::NameTaken => f.write_str("the name is taken (builtins win)"),
            DropReason::InvalidName(problem) => write!(f, "unusable name: {problem}"),
            DropReason::BrokenRule(rule) => write!(f, "it breaks {rule}"),
            DropReason::WireNameTaken => f.write_str(
                "every wire name its name could take is another tool's (builtins keep theirs)",
            ),
            DropReason::NoServer => f.write_str(
                "it declares a remote origin but names no server, so no operator's record stands behind its declaration",
            ),
        }
    }
}

/// A provided tool the registry left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedTool {
    /// The tool's name.
    pub name: String,
    /// The provider that supplied it.
    pub provider: String,
    /// Why it was left out.
    pub reason: DropReason,
}

/// A provider that failed; its tools are absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderFailure {
    /// The provider.
    pub provider: String,
    /// Its error, as text.
    pub error: String,
}
