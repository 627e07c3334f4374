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
    /// The arguments, as the model wrote them.
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
    },
}

impl Message {
    pub(crate) fn result(call: &ToolCall, output: ToolOutput) -> Self {
        Message::Tool {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: output.content,
            is_error: output.is_error,
        }
    }
}

/// How a run may proceed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunOptions {
    /// How many model requests the run may make.
    pub max_iterations: u32,
    /// The allow-list: `None` offers every registered tool, an empty list none.
    pub allow: Option<Vec<String>>,
    /// When true, an approval must come from someone other than the requester.
    pub four_eyes: bool,
    /// How many calls one turn of the model may hold; a larger turn is
    /// refused before anything of it runs or is stored. A reviewer must be
    /// able to read every call of a turn they approve.
    #[serde(default = "default_max_calls_per_turn")]
    pub max_calls_per_turn: u32,
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
