#![doc = include_str!("../README.md")]
//!
//! # Floor plan
//!
//! The crate's modules stand in layers, and every import points down: a
//! module uses only modules of lower layers and the modules listed before
//! it in its own row. The one circle is `tool` ⇄ `gate`, and it is one by
//! nature — a tool names its gate, and a gate is admitted by what the tool
//! declares. Read from the top row down, each row needs only what is above
//! it; `tests/layers.rs` reads this table and fails on any import that
//! points up.
//!
//! | layer | modules, in order | what it owns |
//! |---|---|---|
//! | floor | `error`, `unique`, `visible`, `integrity`, `sealed` | the error helpers, JSON read with no duplicate key, text escaped for a reader, the integrity key, the seal on the crate's traits |
//! | what a tool is | `effect`, `tool`, `gate`, `erased`, `input`, `assert` | effects and origins, the tool traits, the gate and its one rule ([`gate::judge`]), tools behind a `dyn`, the input schema check, the gate pins |
//! | the registry and the offer | `wire`, `registry` | wire names, the registry, its catalogue, what a run offers and the specs the model reads |
//! | people | `identity` | names compared as people, channels, the client a requester declared |
//! | the transcript and a run's options | `transcript` | messages, calls, token usage, [`run::RunOptions`], [`run::RunState`] |
//! | digests | `digest` | the turn digest, the arguments digest, the rerun digest, the review a digest binds |
//! | decisions | `audit` | verdicts, the decision record and log, the rule of answers through the requester's own client |
//! | pauses and the journal | `pause`, `journal`, `persist` | the typed pauses and their checks, the journal and its threat model, the sealed codecs of suspended runs and of turn plans |
//! | the run driver | `run` | [`Agent`]: the model's turns checked, scanned, run or suspended, and recovered |
//! | resume | `resume` | deciding a suspended run and running its turn |
//! | the front | `testing`, `lib` | what the crate shows: the root, [`suspend`], the rules for tests |
//!
//! # Rules
//!
//! Each illegal combination, why it is illegal, and what enforces it. The
//! derive reports each one earlier, under the attribute you wrote; the traits
//! hold hand-written impls to the same rules, so no route avoids them.
//!
//! | # | illegal combination | enforced by |
//! |---|---|---|
//! | 1 | a local tool that declares a write and requires input | derive error; `RequiresInput` needs the gate [`gate::WaitsForInput`], which only a local `read_only` tool may name ([`gate::AdmitsInput`]) |
//! | 2 | the explicit approval marker with input | derive error; [`RequiresApproval`] needs an approval gate, [`RequiresInput`] needs the input gate: one type cannot have both |
//! | 3 | a local tool that declares a write and runs without approval | no derive key switches approval off; [`gate::Runs`] is only for local `read_only` tools ([`gate::RunsWithoutApproval`]); [`gate::ApprovalByOperator`] needs [`RemoteApproval`], which needs [`RemoteTool`], which needs `type Origin = Remote`; builtins must be [`Local`] ([`gate::IsLocal`]) |
//! | 4 | [`RemoteApproval`] on a type that is not a [`RemoteTool`] | supertrait, with its own message |
//! | 5 | an operator-declared approval with input | derive error; [`RemoteApproval`] needs [`gate::OperatorGate`], [`RequiresInput`] needs the input gate |
//! | 6 | a builtin with no effect, an unknown effect, an unknown or repeated `#[tool]` key, or no description | derive errors, all reported at once |
//! | 7 | `submit_input` on a run awaiting approval; `approve`, `deny` or `decide` on a run waiting for input | type-state: [`Suspended`](suspend::Suspended) offers each only where its pause implements [`TakesInput`](suspend::TakesInput) or [`TakesVerdict`](suspend::TakesVerdict), with a message of ours; a pause cannot be built outside the crate |
//! | 8 | a remote tool that names no approval source (neither the operator's declaration nor the explicit marker) | derive error; [`RemoteTool`] needs [`gate::RemoteGate`]: [`gate::ApprovalByOperator`] or [`gate::ApprovalByMarker`] |
//!
//! **Sealed, for every type parameter.** Each trait that could change a
//! decision, an origin, an effect or a gate's admission — [`gate::Gate`],
//! [`gate::OriginOf`], [`EffectMarker`](gate::EffectMarker), and the admission traits of
//! [`gate`] — is closed to impls outside this crate, including impls of
//! toolgate's traits for toolgate's own types with a user's type as the
//! parameter (see [`gate`], "Sealing"). A wrapper type, a custom gate, a
//! forged impl behind `#[tool(crate = path)]`: each ends at the same seal.
//!
//! **What the seal cannot see.** The macros trust the path to toolgate they
//! are given (`crate = path`, or `::toolgate` itself, which a crate can
//! redirect with `extern crate self as toolgate`). A module there that renames
//! toolgate's items — `ReadOnly` as `NonIdempotentWrite`, `gate::Runs` as
//! `gate::ApprovalByEffect` — yields a tool that is lawful under its *real*
//! types, which `explain` reports, but that reads otherwise in its attribute.
//! Pin the gate with `::toolgate::assert_gate!(Tool: approval)` (the absolute
//! path, so no local macro can stand in for it): the pin checks the real
//! gate. `serde` and `schemars` attributes on a function tool's parameters are
//! forwarded as written; keeping the schema and the deserializer in step is
//! their author's.
//!
//! **Hand-erased and provided tools** ([`DynTool`](erased::DynTool)) declare facts, never a
//! decision. Their gate comes from the same rule, [`judge`](gate::judge); facts that break
//! rule 1, 2, 4, 5 or 8 are refused by the registry's boot check
//! ([`RegistryBuilder::build`](registry::RegistryBuilder::build)), naming the tool and the rule, and a
//! provider's such tool is left out with the reason.
//!
//! A local write that would run unapproved does not compile:
//!
//! ```compile_fail,E0277
//! use toolgate::{Local, NonIdempotentWrite, Tool, gate};
//!
//! struct Wipe;
//! impl Tool for Wipe {
//!     type Origin = Local;
//!     type Effect = NonIdempotentWrite;
//!     type Gate = gate::Runs; // a local write cannot run unapproved
//!     fn name(&self) -> &str { "wipe" }
//!     fn description(&self) -> &str { "Wipes the disk." }
//! }
//! ```
//!
//! Nor does a declared write that waits for input:
//!
//! ```compile_fail
//! #[derive(toolgate::Tool)]
//! /// Sends a message the user types.
//! #[tool(effect = non_idempotent_write, input = String)]
//! struct Send;
//! ```
//!
//! Nor input on a run that waits for a verdict:
//!
//! ```compile_fail,E0277
//! use toolgate::Agent;
//! use toolgate::suspend::{AwaitingApproval, InputSubmission, Suspended};
//!
//! async fn resume(run: Suspended<AwaitingApproval>, agent: &Agent<'_>, data: InputSubmission) {
//!     let _ = run.submit_input(agent, data).await;
//! }
//! ```
//!
//! Nor an operator declaration on a tool that does not live on a server:
//!
//! ```compile_fail,E0277
//! use toolgate::{Local, OperatorDeclaration, ReadOnly, RemoteApproval, Tool, gate};
//!
//! struct Search;
//! impl Tool for Search {
//!     type Origin = Local;
//!     type Effect = ReadOnly;
//!     type Gate = gate::Runs;
//!     fn name(&self) -> &str { "search" }
//!     fn description(&self) -> &str { "Searches." }
//! }
//! impl RemoteApproval for Search {
//!     fn operator_declaration(&self) -> OperatorDeclaration { OperatorDeclaration::NoApproval }
//! }
//! ```

pub mod assert;
pub mod audit;
mod digest;
mod effect;
pub mod erased;
mod error;
pub mod gate;
pub mod identity;
mod input;
pub mod integrity;
pub mod journal;
mod pause;
mod persist;
pub mod registry;
mod resume;
pub mod run;
mod sealed;
/// Runs that wait: the typed pauses, a human's decision or
/// data, the turn digest that binds it, and the persisted document.
pub mod suspend {
    pub use crate::audit::CallVerdict;
    pub use crate::digest::{
        DefinitionsDigest, RerunDigest, Review, ReviewedTool, TurnDigest, UnknownCall,
        accepted_definitions_digest, arguments_digest, rerun_digest,
    };
    pub use crate::input::{InputError, input_fields_not_taken, input_schema_problem, validate};
    pub use crate::pause::{
        AwaitingApproval, CallDecisions, Decision, InputSubmission, Pause, Refusal, Suspended,
        TakesInput, TakesVerdict, Verdict, WaitingForInput,
    };
    pub use crate::persist::{CorruptState, EncodeError, SuspendedRun, SuspendedStatus};
    pub use crate::resume::ResumeError;
}
pub mod testing;
mod tool;
mod transcript;
mod unique;
pub mod visible;
pub mod wire;

// The root holds what a tool author writes and a host's two entry points;
// everything else is grouped in the modules above by who uses it.
pub use effect::{
    DeclarationScope, IdempotentWrite, Local, NonIdempotentWrite, OperatorDeclaration, ReadOnly,
    Remote,
};
pub use registry::Registry;
pub use run::Agent;
pub use tool::{
    Execute, RemoteApproval, RemoteTool, RequiresApproval, RequiresInput, RichOutput, Tool,
    ToolOutput,
};

/// Derives [`Tool`] from `#[tool(...)]` declarations.
///
/// The same keys, read by the same code and held to the same rules, go in
/// [`#[toolgate::tool(...)]`](macro@tool) on an `async fn`, which makes the
/// tool type, its arguments and its [`Execute`] impl from the function.
///
/// | key | meaning |
/// |---|---|
/// | `effect = read_only \| idempotent_write \| non_idempotent_write` | required: what a call does |
/// | `name = "..."` | the name the model sees; defaults to the type's name in snake_case, or the function's name |
/// | `description = "..."` | what the tool does; defaults to the type's or the function's doc comment, and one of the two is required |
/// | `requires_approval` | the explicit approval marker, for a `read_only` tool that should ask anyway |
/// | `input = Type` | the call waits for a user's typed input (`Type: Deserialize + JsonSchema`) |
/// | `remote` | the body lives behind a server; implement [`RemoteTool`] by hand, and name the approval source: `operator_approval` or `requires_approval` (rule 8); not on a function, whose body runs here |
/// | `operator_approval` | with `remote`: approval comes from the operator; implement [`RemoteApproval`] by hand |
/// | `crate = path` | where `toolgate` is, if renamed |
///
/// A declared write on a local tool always needs approval: there is no key
/// that switches it off, and `input` beside it is refused. Write `#[tool(...)]`
/// below `#[derive(Tool)]`.
///
/// ```
/// use toolgate::{Execute, Tool, ToolOutput};
///
/// /// Reads a file below the workspace root.
/// #[derive(Tool)]
/// #[tool(effect = read_only)]
/// struct ReadFile;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Path { path: String }
///
/// impl Execute for ReadFile {
///     type Args = Path;
///     async fn execute(&self, args: Path) -> ToolOutput {
///         ToolOutput::text(format!("contents of {}", args.path))
///     }
/// }
///
/// assert_eq!(ReadFile.name(), "read_file");
/// assert!(!toolgate::gate::ruling(&ReadFile).requires_approval());
/// ```
#[doc(inline)]
pub use toolgate_macros::Tool;

/// Makes a tool of an `async fn`: its doc comment is the description, its
/// parameters are the arguments, and its keys are those of
/// [`derive(Tool)`](macro@Tool), held to the same rules.
///
/// ```
/// use toolgate::{Execute, Tool, ToolOutput};
///
/// /// Deletes a file below the workspace root.
/// #[toolgate::tool(effect = non_idempotent_write)]
/// async fn delete_file(
///     /// A path below the workspace root.
///     path: String,
/// ) -> ToolOutput {
///     ToolOutput::text(format!("deleted {path}"))
/// }
///
/// assert_eq!(DeleteFile.name(), "delete_file");
/// assert_eq!(DeleteFile.description(), "Deletes a file below the workspace root.");
/// assert!(toolgate::gate::ruling(&DeleteFile).requires_approval());
/// let schema = serde_json::to_value(DeleteFile.parameters()).unwrap();
/// assert_eq!(schema["properties"]["path"]["description"], "A path below the workspace root.");
/// ```
///
/// Beside the function, which stays as written (call it and test it
/// directly), it generates:
///
/// - the tool type: a unit struct named after the function in UpperCamelCase
///   (`delete_file` → `DeleteFile`), with the function's visibility and doc
///   comment, implementing [`Tool`] by the derive's own expansion and
///   [`Execute`] by calling the function;
/// - its [`Execute::Args`], `DeleteFileArgs` (hidden from the docs): one field
///   per parameter, deriving serde's `Deserialize` and schemars' `JsonSchema`
///   through toolgate, so your crate needs neither dependency. A parameter's
///   doc comment becomes its field's, which is its description in the schema
///   the model reads; `#[serde(...)]` and `#[schemars(...)]` on a parameter
///   move to its field too.
///
/// The function must be a free `async fn`: not generic, without `self`, its
/// parameters plain names of owned types, returning [`ToolOutput`] (or a type
/// that converts into one). Anything else is refused with an error at the
/// token that breaks it. The name defaults to the function's; `remote` is
/// refused, since the function's body runs here. Keys may also go in
/// `#[tool(...)]` attributes below it, as with the derive.
///
/// Write it by its path, `#[toolgate::tool(...)]`. Imported as `tool`, it
/// shares its name with the derive's `#[tool(...)]` helper: that still works
/// below `#[derive(Tool)]`, but a `#[tool(...)]` above the derive becomes
/// ambiguous (E0659).
#[doc(inline)]
pub use toolgate_macros::tool;

/// The repository README's examples, compiled as doctests so they cannot
/// drift from the crate.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct RepositoryReadme;

#[doc(hidden)]
/// Not public API: items the derive's expansion names.
pub mod __private {
    /// Proves the macro and runtime crates are the same release.
    pub const VERSION_0_1: () = ();
    // `#[toolgate::tool]` derives serde's and schemars' traits on a tool
    // function's arguments through these, so a tool author's crate need not
    // depend on either.
    pub use schemars;
    pub use serde;

    /// What a tool function may return: the bound `#[toolgate::tool]` puts on
    /// its return type, so a wrong one is reported in our words, at that type.
    #[diagnostic::on_unimplemented(
        message = "a tool function must return `ToolOutput`, not `{Self}`",
        label = "the model reads what this returns",
        note = "return `toolgate::ToolOutput::text(...)`, or `toolgate::ToolOutput::error(...)` for a failure the model should see"
    )]
    pub trait ToolFunctionOutput {
        /// The result as the model sees it.
        fn into_tool_output(self) -> crate::ToolOutput;
    }

    #[diagnostic::do_not_recommend]
    impl<O: Into<crate::ToolOutput>> ToolFunctionOutput for O {
        fn into_tool_output(self) -> crate::ToolOutput {
            self.into()
        }
    }
}
