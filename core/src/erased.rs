//! Tools as trait objects: what a registry holds and a turn scan reads.
//!
//! An erased tool's gate is decided once, when it is erased, by the one rule
//! ([`gate::judge`]) over its facts: a typed tool's facts are read off its
//! types, a hand-erased tool's off its [`DynTool`] answers. Those answers are
//! read once and kept, so a tool cannot answer one thing at boot and another
//! at the scan. A tool's parameter schema (and a hand-erased tool's
//! description) is read once too, when it is first needed rather than at
//! erasure (a large catalogue builds only the schemas of the tools it
//! offers), and kept from then on.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use schemars::Schema;
use serde_json::Value;

use crate::effect::{Effect, Origin};
use crate::gate::{self, Facts, OperatorDeclaration, Rule, Ruling};
use crate::tool::{Execute, ToolOutput};

/// A boxed, sendable future, as returned by object-safe async methods.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool as a trait object, for tools that cannot be typed (bridges to other
/// tool systems).
///
/// It declares *facts* — origin, effect, the explicit marker, an operator's
/// declaration, an input schema — never a decision: its gate comes from the
/// same rule as a typed tool's ([`gate::judge`]). Facts the type system would
/// refuse (a local write with input, approval with input, an operator's
/// declaration on a local tool, a remote tool with no approval source) are
/// refused at boot for a builtin, naming the rule, and left out with the
/// reason for a provider's tool.
///
/// The defaults are the strictest reading: no marker, no operator declaration
/// (so a remote tool that forgets to state one is refused), no input.
pub trait DynTool: Send + Sync + 'static {
    /// The name the model calls the tool by.
    fn name(&self) -> &str;
    /// What the tool does, as the model reads it. Asked once, when first
    /// needed, and kept.
    fn description(&self) -> &str;
    /// The parameter schema the model sees. Asked once, when first needed,
    /// and kept.
    fn parameters(&self) -> &Schema;
    /// Where the body lives.
    fn origin(&self) -> Origin;
    /// What a call declares to do.
    fn effect(&self) -> Effect;
    /// The server a remote tool lives behind.
    fn server(&self) -> Option<&str> {
        None
    }
    /// The explicit approval marker: every call asks.
    fn approval_marker(&self) -> bool {
        false
    }
    /// The operator's declaration for a remote tool's server.
    fn operator_declaration(&self) -> Option<OperatorDeclaration> {
        None
    }
    /// Whether a remote tool is quarantined (see
    /// [`RemoteApproval::quarantine`](crate::RemoteApproval::quarantine)).
    fn quarantine(&self) -> Option<crate::effect::Quarantine> {
        None
    }
    /// Whether a remote tool's operator declaration is its server's or its
    /// own (see
    /// [`RemoteApproval::declaration_scope`](crate::RemoteApproval::declaration_scope)).
    fn declaration_scope(&self) -> crate::effect::DeclarationScope {
        crate::effect::DeclarationScope::Server
    }
    /// The input schema, when a call waits for a user's typed input.
    fn input_schema(&self) -> Option<&Schema> {
        None
    }
    /// Runs one call with the model's (or the overlaid) arguments.
    fn execute(&self, arguments: Value) -> BoxFuture<'_, ToolOutput>;
}

/// A shared, type-erased tool with its gate decided.
#[derive(Clone)]
pub struct ErasedTool {
    inner: Arc<Inner>,
}

struct Inner {
    body: Box<dyn Body>,
    name: Box<str>,
    server: Option<Box<str>>,
    facts: Facts,
    scope: crate::effect::DeclarationScope,
    judgement: Result<Ruling, Rule>,
    input_schema: Option<Schema>,
    hand_erased: bool,
}

/// What an erased tool does besides its gate: describe itself and run.
trait Body: Send + Sync + 'static {
    fn description(&self) -> &str;
    fn parameters(&self) -> &Schema;
    fn execute(&self, arguments: Value) -> BoxFuture<'_, ToolOutput>;
}

impl ErasedTool {
    /// Erases a typed tool; its facts are read off its types.
    pub fn new<T: Execute>(tool: T) -> Self {
        let facts = gate::facts(&tool);
        let scope = gate::declaration_scope(&tool);
        let input_schema = gate::input_schema(&tool);
        let server = gate::server(&tool).map(Box::from);
        let name = Box::from(tool.name());
        Self::assemble(
            Box::new(Typed {
                tool,
                parameters: OnceLock::new(),
            }),
            name,
            server,
            facts,
            scope,
            input_schema,
            false,
        )
    }

    /// Wraps a hand-written [`DynTool`]. Its facts are read now, once, and
    /// judged by the one rule; a registry refuses (or leaves out) a tool whose
    /// facts break a rule, and `explain` says the tool was erased by hand.
    pub fn from_dyn(tool: Arc<dyn DynTool>) -> Self {
        let input_schema = tool.input_schema().cloned();
        let facts = Facts {
            origin: tool.origin(),
            effect: tool.effect(),
            approval_marker: tool.approval_marker(),
            operator: tool.operator_declaration(),
            requires_input: input_schema.is_some(),
            quarantine: tool.quarantine(),
        };
        let name = Box::from(tool.name());
        let server = tool.server().map(Box::from);
        let scope = tool.declaration_scope();
        Self::assemble(
            Box::new(HandErased {
                tool,
                description: OnceLock::new(),
                parameters: OnceLock::new(),
            }),
            name,
            server,
            facts,
            scope,
            input_schema,
            true,
        )
    }

    fn assemble(
        body: Box<dyn Body>,
        name: Box<str>,
        server: Option<Box<str>>,
        facts: Facts,
        scope: crate::effect::DeclarationScope,
        input_schema: Option<Schema>,
        hand_erased: bool,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                body,
                name,
                server,
                judgement: gate::judge(&facts),
                facts,
                scope,
                input_schema,
                hand_erased,
            }),
        }
    }

    /// The name the model calls the tool by.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// What the tool does, as the model reads it.
    pub fn description(&self) -> &str {
        self.inner.body.description()
    }

    /// The parameter schema the model sees.
    pub fn parameters(&self) -> &Schema {
        self.inner.body.parameters()
    }

    /// Where the body lives.
    pub fn origin(&self) -> Origin {
        self.inner.facts.origin
    }

    /// What a call declares to do.
    pub fn effect(&self) -> Effect {
        self.inner.facts.effect
    }

    /// The server a remote tool lives behind.
    pub fn server(&self) -> Option<&str> {
        self.inner.server.as_deref()
    }

    /// The facts the gate was decided from.
    pub fn facts(&self) -> Facts {
        self.inner.facts
    }

    /// Whether a remote tool's operator declaration is its server's or its
    /// own: what an operator is told the cause is; the gate does not read
    /// it.
    pub fn declaration_scope(&self) -> crate::effect::DeclarationScope {
        self.inner.scope
    }

    /// The rule's answer: the decision, or the rule the facts break.
    pub fn judgement(&self) -> Result<Ruling, Rule> {
        self.inner.judgement
    }

    /// The gate's decision; for facts that break a rule, the fail-closed
    /// [`Ruling::refused`].
    pub fn ruling(&self) -> Ruling {
        self.inner.judgement.unwrap_or_else(Ruling::refused)
    }

    /// The input schema, when a call waits for a user's input.
    pub fn input_schema(&self) -> Option<&Schema> {
        self.inner.input_schema.as_ref()
    }

    /// Whether a call waits for a user's input — the fact, read by the turn
    /// scan, the resume refusals and the boot check.
    pub fn requires_input(&self) -> bool {
        self.inner.facts.requires_input
    }

    /// True when the tool was not erased from a typed tool.
    pub fn is_hand_erased(&self) -> bool {
        self.inner.hand_erased
    }

    /// Runs one call with the model's (or the overlaid) arguments. Only this
    /// crate runs an erased tool: outside it, a call runs through a
    /// [`Permit`](crate::run::Permit), which only the gate gives.
    pub(crate) fn execute(&self, arguments: Value) -> BoxFuture<'_, ToolOutput> {
        self.inner.body.execute(arguments)
    }
}

impl fmt::Debug for ErasedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ErasedTool")
            .field("name", &self.name())
            .field("facts", &self.inner.facts)
            .field("judgement", &self.inner.judgement)
            .field("hand_erased", &self.inner.hand_erased)
            .finish_non_exhaustive()
    }
}

/// A typed tool. Its parameter schema is asked for once, when it is first
/// needed (a tool in a large catalogue that is never offered never builds
/// it), and kept: every later reader sees that one answer.
struct Typed<T> {
    tool: T,
    parameters: OnceLock<Schema>,
}

impl<T: Execute> Body for Typed<T> {
    fn description(&self) -> &str {
        self.tool.description()
    }
    fn parameters(&self) -> &Schema {
        self.parameters.get_or_init(|| self.tool.parameters())
    }
    fn execute(&self, arguments: Value) -> BoxFuture<'_, ToolOutput> {
        Box::pin(async move {
            match serde_json::from_value::<T::Args>(arguments) {
                Ok(args) => self.tool.execute(args).await,
                Err(error) => ToolOutput::error(format!(
                    "invalid arguments for `{}`: {error}",
                    self.tool.name()
                )),
            }
        })
    }
}

/// A hand-erased tool. Its description and parameter schema are asked for
/// once each, when first needed, and kept: a tool cannot show a model or a
/// reviewer one schema and later another.
struct HandErased {
    tool: Arc<dyn DynTool>,
    description: OnceLock<Box<str>>,
    parameters: OnceLock<Schema>,
}

impl Body for HandErased {
    fn description(&self) -> &str {
        self.description
            .get_or_init(|| Box::from(self.tool.description()))
    }
    fn parameters(&self) -> &Schema {
        self.parameters
            .get_or_init(|| self.tool.parameters().clone())
    }
    fn execute(&self, arguments: Value) -> BoxFuture<'_, ToolOutput> {
        self.tool.execute(arguments)
    }
}
