//! What a run carries: the calls a model asks for, the transcript, the run's
//! options and its state between model requests. A leaf: it depends on no
//! other module of the crate, so the digest, the audit record, the suspended
//! run and the driver can all build on it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::ToolOutput;

/// One call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The model's id for the call, echoed in its result.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as the model wrote them. Read back, an object that
    /// names a key twice is refused.
    #[serde(deserialize_with = "crate::unique::value")]
    pub arguments: Value,
}

/// One entry of a run's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case", deny_unknown_fields)]
pub enum Message {
    /// Instructions for the model.
    System {
        /// The text.
        content: String,
    },
    /// What the user said.
    User {
        /// The text.
        content: String,
    },
    /// What the model answered: text, calls, or both.
    Assistant {
        /// Its text, if any.
        content: Option<String>,
        /// The turn of calls, possibly empty.
        calls: Vec<ToolCall>,
        /// The tokens the request that produced this answer cost, when the
        /// model reported them ([`Response::usage`](crate::run::Response::usage)).
        /// Stored from document version 8; its cache writes and reasoning
        /// tokens from version 9.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// The result of one call.
    Tool {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The result's text.
        content: String,
        /// True when the call failed or was refused.
        is_error: bool,
        /// What the tool answered beyond its text, when it did
        /// ([`ToolOutput::rich`]); a model is handed `content`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rich: Option<Box<crate::tool::RichOutput>>,
    },
}

impl Message {
    pub(crate) fn result(call: &ToolCall, output: ToolOutput) -> Self {
        Message::Tool {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: output.content,
            is_error: output.is_error,
            rich: output.rich,
        }
    }
}

/// The tokens one model request cost, as its provider counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Tokens read: the transcript, the tool specs and the instructions,
    /// cached ones included.
    pub input_tokens: u64,
    /// Of `input_tokens`, those the provider read from its prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    /// Of `input_tokens`, those the provider wrote to its prompt cache
    /// (Anthropic's `cache_creation_input_tokens`); apart from the cache
    /// reads in `cached_input_tokens`. Stored from document version 9.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_input_tokens: u64,
    /// Tokens written: the answer's text and calls, reasoning included.
    pub output_tokens: u64,
    /// Of `output_tokens`, those the model spent on reasoning (OpenAI's
    /// `completion_tokens_details.reasoning_tokens`). Stored from document
    /// version 9.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Input and output together.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(other.cached_input_tokens);
        self.cache_write_input_tokens = self
            .cache_write_input_tokens
            .saturating_add(other.cache_write_input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
    }
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// How a run may proceed. [`RunOptions::default()`] gives each field the
/// default named on it: 16 model requests, every tool offered, four eyes
/// off, 128 calls a turn, one approval, no decision time limit, a denied
/// call asked again twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunOptions {
    /// How many model requests the run may make. Default: 16.
    pub max_iterations: u32,
    /// The allow-list: `None` offers every registered tool, an empty list
    /// none. Default: `None`.
    pub allow: Option<Vec<String>>,
    /// When true, an approval must come from someone other than the
    /// requester (names compared as people, see [`identity`](crate::identity)).
    /// Default: `false` — four eyes is off unless a run asks for it.
    pub four_eyes: bool,
    /// How many calls one turn of the model may hold; a larger turn is
    /// refused before anything of it runs or is stored. A reviewer must be
    /// able to read every call of a turn they approve. Default:
    /// [`DEFAULT_MAX_CALLS_PER_TURN`] (128).
    #[serde(default = "default_max_calls_per_turn")]
    pub max_calls_per_turn: u32,
    /// How many distinct people must approve a turn that needs approval
    /// (with `four_eyes`, none of them the requester). Partial approvals are
    /// recorded by the store; the run resumes when the last one arrives.
    /// Default: 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub approvals_required: u32,
    /// How long, in milliseconds, a paused turn may be approved; after that
    /// it can only be denied or asked again. Default: `None`, no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_ttl_ms: Option<u64>,
    /// How often the model may ask again for a call a human denied in this
    /// run (same tool, same arguments) — each time answered with the earlier
    /// denial, never asked of a human again — before the run ends. Default:
    /// [`DEFAULT_DENIED_REPEATS`] (2).
    #[serde(
        default = "default_denied_repeats",
        skip_serializing_if = "is_default_denied_repeats"
    )]
    pub denied_repeats: u32,
    /// True for a run of one call ([`Agent::call`](crate::Agent::call)):
    /// its one turn is the call it was started with, and once that turn has
    /// run — or been denied — the run finishes with the call's result,
    /// asking no model. Set by `Agent::call`; stored from document version 6
    /// when true. Default: `false`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub one_call: bool,
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_false(value: &bool) -> bool {
    !*value
}

fn one() -> u32 {
    1
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_one(value: &u32) -> bool {
    *value == 1
}

/// The default of [`RunOptions::denied_repeats`].
pub const DEFAULT_DENIED_REPEATS: u32 = 2;

fn default_denied_repeats() -> u32 {
    DEFAULT_DENIED_REPEATS
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_default_denied_repeats(value: &u32) -> bool {
    *value == DEFAULT_DENIED_REPEATS
}

/// The default cap on calls per turn.
pub const DEFAULT_MAX_CALLS_PER_TURN: u32 = 128;

fn default_max_calls_per_turn() -> u32 {
    DEFAULT_MAX_CALLS_PER_TURN
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            max_iterations: 16,
            allow: None,
            four_eyes: false,
            max_calls_per_turn: DEFAULT_MAX_CALLS_PER_TURN,
            approvals_required: 1,
            decision_ttl_ms: None,
            denied_repeats: DEFAULT_DENIED_REPEATS,
            one_call: false,
        }
    }
}

/// Everything a run carries between model requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunState {
    /// The run's identifier.
    pub run_id: String,
    /// Who started the run.
    pub requested_by: String,
    /// The conversation so far.
    pub transcript: Vec<Message>,
    /// Model requests made so far.
    pub iterations: u32,
    /// How the run may proceed.
    pub options: RunOptions,
    /// The calls a human denied in this run: asked again, they are answered
    /// with the denial and never put to a human a second time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub denied: Vec<DeniedCall>,
    /// The MCP client the requester asked through, as it declared itself —
    /// shown beside `requested_by`, never read by a decision. `None` for a
    /// run no client asked for. Stored from document version 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<crate::identity::DeclaredClient>,
}

impl RunState {
    /// The tokens every model request of the run cost so far, summed over
    /// the answers that reported them; `None` when none did.
    pub fn usage(&self) -> Option<Usage> {
        self.transcript
            .iter()
            .filter_map(|message| match message {
                Message::Assistant { usage, .. } => *usage,
                _ => None,
            })
            .reduce(|mut total, turn| {
                total += turn;
                total
            })
    }
}

/// A call a human denied, remembered by its tool and a digest of its
/// arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeniedCall {
    /// The tool.
    pub tool: String,
    /// The digest of the arguments denied.
    pub arguments: String,
    /// Who denied it.
    pub by: String,
    /// Why, as the model was told.
    pub reason: String,
    /// How often the model asked for it again.
    pub repeats: u32,
}

/// The first call id that occurs twice in a turn, found in time linear in the
/// number of calls.
pub(crate) fn first_duplicate_id(calls: &[ToolCall]) -> Option<&str> {
    let mut seen = std::collections::HashSet::with_capacity(calls.len());
    calls
        .iter()
        .map(|c| c.id.as_str())
        .find(|id| !seen.insert(*id))
}
