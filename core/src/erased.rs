//! Tools as trait objects: what a registry holds and a turn scan reads.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use schemars::Schema;
use serde_json::Value;

use crate::effect::{Effect, EffectMarker, Origin};
use crate::gate::{self, Decision, Gate, OriginOf};
use crate::tool::{Execute, ToolOutput};

/// A boxed, sendable future, as returned by object-safe async methods.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool as a trait object.
///
/// Typed tools reach this through [`ErasedTool::new`], which reads every
/// answer off the tool's types. Implementing it by hand is the escape hatch
/// for tools that cannot be typed (bridges to other tool systems): such a tool
/// answers for itself, so a registry's boot check refuses the combinations the
/// type system would have refused (see [`Registry`](crate::Registry)).
pub trait DynTool: Send + Sync + 'static {
    /// The name the model calls the tool by.
    fn name(&self) -> &str;
    /// What the tool does, as the model reads it.
    fn description(&self) -> &str;
    /// The parameter schema the model sees.
    fn parameters(&self) -> &Schema;
    /// Where the body lives.
    fn origin(&self) -> Origin;
    /// What a call declares to do.
    fn effect(&self) -> Effect;
    /// The server a remote tool lives behind.
    fn server(&self) -> Option<&str>;
    /// The gate's decision. For typed tools this is [`gate::decide`].
    fn decision(&self) -> Decision;
    /// The input schema, when the tool requires input.
    fn input_schema(&self) -> Option<&Schema>;
    /// Runs one call with the model's (or the overlaid) arguments.
    fn execute(&self, arguments: Value) -> BoxFuture<'_, ToolOutput>;
}

/// A shared, type-erased tool.
#[derive(Clone)]
pub struct ErasedTool {
    inner: Arc<dyn DynTool>,
    hand_erased: bool,
}

impl ErasedTool {
    /// Erases a typed tool; its gate is read off its types.
    pub fn new<T: Execute>(tool: T) -> Self {
        let parameters = tool.parameters();
        let input_schema = <T::Gate as Gate<T>>::input_schema(&tool);
        // A typed tool's decision is fixed for its lifetime (an operator's
        // declaration is carried in at construction), so it is read once.
        let decision = gate::decide(&tool);
        Self {
            inner: Arc::new(Typed {
                tool,
                parameters,
                input_schema,
                decision,
            }),
            hand_erased: false,
        }
    }

    /// Wraps a hand-written [`DynTool`]. Its answers are its own; registries
    /// check them at boot and `explain` says the tool was erased by hand.
    pub fn from_dyn(tool: Arc<dyn DynTool>) -> Self {
        Self {
            inner: tool,
            hand_erased: true,
        }
    }

    /// Whether a call waits for a user's input: the tool carries an input
    /// schema or its gate says so. The turn scan, the resume refusals and the
    /// boot check all ask this.
    pub fn requires_input(&self) -> bool {
        self.input_schema().is_some() || self.decision().requires_input()
    }

    /// True when the tool was not erased from a typed tool.
    pub fn is_hand_erased(&self) -> bool {
        self.hand_erased
    }
}

impl std::ops::Deref for ErasedTool {
    type Target = dyn DynTool;
    fn deref(&self) -> &Self::Target {
        &*self.inner
    }
}

impl fmt::Debug for ErasedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ErasedTool")
            .field("name", &self.name())
            .field("origin", &self.origin())
            .field("effect", &self.effect())
            .field("decision", &self.decision())
            .field("hand_erased", &self.hand_erased)
            .finish_non_exhaustive()
    }
}

struct Typed<T> {
    tool: T,
    parameters: Schema,
    input_schema: Option<Schema>,
    decision: Decision,
}

impl<T: Execute> DynTool for Typed<T> {
    fn name(&self) -> &str {
        self.tool.name()
    }
    fn description(&self) -> &str {
        self.tool.description()
    }
    fn parameters(&self) -> &Schema {
        &self.parameters
    }
    fn origin(&self) -> Origin {
        <T::Origin as OriginOf<T>>::ORIGIN
    }
    fn effect(&self) -> Effect {
        <T::Effect as EffectMarker>::EFFECT
    }
    fn server(&self) -> Option<&str> {
        <T::Origin as OriginOf<T>>::server(&self.tool)
    }
    fn decision(&self) -> Decision {
        self.decision
    }
    fn input_schema(&self) -> Option<&Schema> {
        self.input_schema.as_ref()
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
