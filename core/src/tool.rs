//! The five traits a tool is declared with, and the one it runs with.

use std::future::Future;

use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::effect::EffectMarker;
use crate::gate::{
    ApprovalGate, Gate, InputGate, IsRemote, OperatorDeclaration, OperatorGate, OriginOf,
    RemoteGate,
};

/// A tool's declarations: its name, what it is for, where its body lives,
/// what it does to the world and how its calls are gated.
///
/// Derive this, then implement [`Execute`]:
///
/// ```
/// use toolgate::{Execute, Tool, ToolOutput};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Target {
///     /// The environment to deploy to.
///     environment: String,
/// }
///
/// /// Deploys the current build.
/// #[derive(Tool)]
/// #[tool(effect = non_idempotent_write)]
/// struct Deploy;
///
/// impl Execute for Deploy {
///     type Args = Target;
///     async fn execute(&self, target: Target) -> ToolOutput {
///         ToolOutput::text(format!("deployed to {}", target.environment))
///     }
/// }
///
/// assert_eq!(Deploy.name(), "deploy");
/// assert!(toolgate::gate::ruling(&Deploy).requires_approval());
/// ```
///
/// The derive's keys are listed on [`derive(Tool)`](macro@crate::Tool). Written by hand, the
/// associated types are the declarations, and the compiler holds them to the
/// same rules: a local tool that declares a write can only name an approval
/// gate (see [`gate`](crate::gate) and the crate's "Rules" section).
///
/// ```
/// use toolgate::{Execute, Local, NonIdempotentWrite, Tool, ToolOutput, gate};
///
/// struct Deploy;
///
/// impl Tool for Deploy {
///     type Origin = Local;
///     type Effect = NonIdempotentWrite;
///     type Gate = gate::ApprovalByEffect;
///     fn name(&self) -> &str { "deploy" }
///     fn description(&self) -> &str { "Deploys the current build." }
/// }
/// # impl Execute for Deploy {
/// #     type Args = serde_json::Map<String, serde_json::Value>;
/// #     async fn execute(&self, _: Self::Args) -> ToolOutput { ToolOutput::text("ok") }
/// # }
/// assert!(toolgate::gate::ruling(&Deploy).requires_approval());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool",
    label = "`Tool` is not implemented for this type",
    note = "add `#[derive(toolgate::Tool)]` with `#[tool(effect = ...)]` to the type"
)]
pub trait Tool: Send + Sync + Sized + 'static {
    /// Where the body lives: [`Local`](crate::Local) or
    /// [`Remote`](crate::Remote) (the latter only with [`RemoteTool`]).
    type Origin: OriginOf<Self>;
    /// What a call does: [`ReadOnly`](crate::ReadOnly),
    /// [`IdempotentWrite`](crate::IdempotentWrite) or
    /// [`NonIdempotentWrite`](crate::NonIdempotentWrite). There is no default.
    type Effect: EffectMarker;
    /// How calls are gated: one of the gates in [`gate`](crate::gate), each of
    /// which states which tools may name it.
    // `tool` and `gate` name each other here: a gate is a gate *for a tool*,
    // and the tool names its gate. The knot is the point of the design.
    type Gate: Gate<Self>;

    /// The name the model calls the tool by.
    fn name(&self) -> &str;

    /// What the tool does, as the model reads it.
    fn description(&self) -> &str;
}

/// How a tool runs: its typed arguments and its body.
///
/// Arguments from the model are deserialised into [`Execute::Args`] by the
/// registry; arguments that do not fit become an error result naming the
/// problem, and `execute` is not called.
pub trait Execute: Tool {
    /// The arguments. Their JSON Schema is the parameter schema the model sees.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// The parameter schema shown to the model. Generated from
    /// [`Execute::Args`]; a remote tool returns its server's schema instead.
    /// An erased tool asks for it once, when it is first needed, and keeps
    /// that answer.
    fn parameters(&self) -> Schema {
        schemars::schema_for!(Self::Args)
    }

    /// Runs one call.
    fn execute(&self, args: Self::Args) -> impl Future<Output = ToolOutput> + Send;
}

/// A tool whose body lives behind an external server. Its self-description is
/// not trusted for authorisation: its approval comes from an operator
/// ([`RemoteApproval`]) or the explicit marker, never from its effect, and it
/// must name one of the two (`type Gate` is
/// [`ApprovalByOperator`](crate::gate::ApprovalByOperator) or
/// [`ApprovalByMarker`](crate::gate::ApprovalByMarker)).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a remote tool",
    label = "`RemoteTool` is not implemented for this type",
    note = "a remote origin and an operator's declaration (`RemoteApproval` extends `RemoteTool`) stand in for reading the code only when the tool's body lives outside this codebase: implement `RemoteTool` to claim that",
    note = "a builtin's approval is not configurable: a declared write always needs approval, and a `read_only` builtin may add the explicit marker `RequiresApproval`"
)]
pub trait RemoteTool: Tool<Origin: IsRemote, Gate: RemoteGate> {
    /// The identifier of the server the tool lives behind.
    fn server(&self) -> &str;
}

/// A remote tool whose approval comes from its operator's per-server
/// declaration, carried on the tool from the record it was built from.
///
/// The turn scan reads [`RemoteApproval::operator_declaration`] on every call:
/// it must be a field read, never a lookup.
#[diagnostic::on_unimplemented(
    message = "`{Self}` carries no operator's declaration (`RemoteApproval`)",
    label = "an operator's declaration is required here",
    note = "an operator's declaration is for remote tools only: a type that implements `RemoteTool` (with `type Origin = toolgate::Remote`) implements `RemoteApproval`, returning the declaration from the server record it was built from",
    note = "a local tool's approval is never an operator's choice: it follows from its effect, or from the explicit marker `RequiresApproval`; gate it with `ApprovalByEffect` or `ApprovalByMarker`"
)]
pub trait RemoteApproval: RemoteTool<Gate: OperatorGate> {
    /// What the operator declared for this tool's server.
    fn operator_declaration(&self) -> OperatorDeclaration;

    /// Whether the tool is quarantined: not one the operator judged (new, or
    /// changed since they accepted it), so that on a server whose approval
    /// is off it requires approval all the same. `None`, the default, for a
    /// tool whose provider pins nothing: its server's declaration alone
    /// decides, as it says.
    fn quarantine(&self) -> Option<crate::effect::Quarantine> {
        None
    }

    /// Whether [`operator_declaration`](RemoteApproval::operator_declaration)
    /// is the server's (the default) or the tool's own: told to operators
    /// as the cause, never read by the gate.
    fn declaration_scope(&self) -> crate::effect::DeclarationScope {
        crate::effect::DeclarationScope::Server
    }
}

/// The explicit approval marker: every call waits for a human's approval.
///
/// A `read_only` builtin uses it to ask anyway; it never switches approval
/// off. It cannot be combined with [`RequiresInput`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not carry the explicit approval marker (`RequiresApproval`)",
    label = "a tool with the approval marker is required here",
    note = "add `impl toolgate::RequiresApproval for {Self} {{}}` with `type Gate = toolgate::gate::ApprovalByMarker;`, or `#[tool(requires_approval)]` with the derive",
    note = "a tool that waits for input cannot carry the marker (rule 2): the approval resume carries no input"
)]
pub trait RequiresApproval: Tool<Gate: ApprovalGate> {}

/// A tool whose calls wait for typed input from a user.
///
/// The input schema is generated from [`RequiresInput::Input`]. When a call
/// waits ([`WaitingForInput`](crate::suspend::WaitingForInput)), the user's
/// submission is validated against that schema; then each top-level key the
/// schema declares replaces the model's argument of the same name (keys the
/// schema does not declare are dropped), and the tool's
/// [`Execute::Args`] is read from the result. So `Input`'s fields are the
/// fields of `Args` the user, not the model, fills in. No approval may bind
/// the tool by any route.
///
/// A write cannot wait for input (rule 1: its approval would be asked on
/// every turn and the input never taken). Split it: a read-only tool that
/// asks the user for the data, and a write that takes it from the model's
/// next turn and waits for approval as every write does.
///
/// ```
/// use toolgate::{Execute, Tool, ToolOutput};
///
/// /// What the user types.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Notes {
///     /// The release notes.
///     notes: String,
/// }
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct DraftArgs {
///     /// The release tag.
///     tag: String,
///     /// The release notes (the user's, laid over the model's guess).
///     notes: String,
/// }
///
/// /// Asks the user for release notes and hands them back to the model.
/// #[derive(Tool)]
/// #[tool(effect = read_only, input = Notes)]
/// struct DraftNotes;
///
/// impl Execute for DraftNotes {
///     type Args = DraftArgs;
///     async fn execute(&self, args: DraftArgs) -> ToolOutput {
///         ToolOutput::text(format!("notes for {}: {}", args.tag, args.notes))
///     }
/// }
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct PublishArgs {
///     /// The release tag.
///     tag: String,
///     /// The release notes, as the user wrote them.
///     notes: String,
/// }
///
/// /// Publishes a release with the notes the user wrote.
/// #[derive(Tool)]
/// #[tool(effect = non_idempotent_write)]
/// struct Publish;
///
/// impl Execute for Publish {
///     type Args = PublishArgs;
///     async fn execute(&self, args: PublishArgs) -> ToolOutput {
///         ToolOutput::text(format!("published {}", args.tag))
///     }
/// }
///
/// toolgate::assert_gate!(DraftNotes: input);
/// toolgate::assert_gate!(Publish: approval);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not wait for user input (`RequiresInput`)",
    label = "a tool that waits for input is required here",
    note = "only a local `read_only` tool that no approval binds may wait for input: a declared write, the explicit marker and an operator's declaration each need approval, and the approval resume carries no input (rules 1, 2 and 5)",
    note = "for a local `read_only` tool: `#[tool(input = ...)]` with the derive, or `impl toolgate::RequiresInput for {Self} {{ type Input = ...; }}` with `type Gate = toolgate::gate::WaitsForInput;`"
)]
pub trait RequiresInput: Tool<Gate: InputGate> {
    /// The data the user supplies.
    type Input: DeserializeOwned + JsonSchema;
}

/// The result of one call, as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The text handed back to the model.
    pub content: String,
    /// True when the call failed; the content says why.
    pub is_error: bool,
    /// The call may have run and its answer never arrived
    /// ([`ToolOutput::answer_lost`]). Never stored: a lost answer is not a
    /// result, and no journal records it as one.
    #[serde(skip)]
    answer_lost: bool,
    /// What the tool answered beyond its text, kept as it gave it
    /// ([`RichOutput`]); `None` for a result that is text alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rich: Option<Box<RichOutput>>,
}

/// What a tool answered beyond its text, kept as the tool gave it: its
/// content blocks — images, audio, embedded resources, and the text among
/// them — and its structured content, each as the JSON of an MCP content
/// block, for a client that takes them (an MCP client behind a gateway).
/// A model is handed [`ToolOutput::content`], the text that also stands for
/// the result in every record; this is carried beside it, and only for a
/// result that succeeded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RichOutput {
    /// The content blocks, in order, each an MCP content block as JSON.
    pub blocks: Vec<serde_json::Value>,
    /// The structured content, when the tool gave any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<serde_json::Value>,
}

impl ToolOutput {
    /// A successful result.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            answer_lost: false,
            rich: None,
        }
    }

    /// The same result, carrying what the tool answered beyond its text.
    #[must_use]
    pub fn with_rich(mut self, rich: Option<Box<RichOutput>>) -> Self {
        self.rich = rich;
        self
    }

    /// A failed result; `message` tells the model what went wrong.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: message.into(),
            is_error: true,
            answer_lost: false,
            rich: None,
        }
    }

    /// No result: the call was not provably unsent — it may have reached
    /// the tool and run — and its answer was lost (`reason` says how: a
    /// connection closed, a deadline passed, an answer too large to take).
    ///
    /// The run does not tell the model the call failed, since it may have
    /// run. A call whose effect is not safe to run again (a
    /// `non_idempotent_write`, which every remote call counts as) stops the
    /// run with [`RunError::OutcomeUnknown`](crate::run::RunError::OutcomeUnknown),
    /// as a host that died mid-call would leave it: an operator chooses to
    /// run it again or to skip it. A call safe to run again gets `reason` as
    /// an error result.
    pub fn answer_lost(reason: impl Into<String>) -> Self {
        Self {
            content: reason.into(),
            is_error: true,
            answer_lost: true,
            rich: None,
        }
    }

    /// Whether this is [`ToolOutput::answer_lost`]: the call may have run,
    /// and nothing is known of its result.
    pub fn is_answer_lost(&self) -> bool {
        self.answer_lost
    }
}
