//! The model a run talks to, and how it is told about the tools.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::erased::{BoxFuture, ErasedTool};
use crate::transcript::{Message, ToolCall};

/// A tool as the model is told about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name to call it by.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its parameter schema.
    pub parameters: Value,
}

impl ToolSpec {
    /// The spec of one tool.
    pub fn of(tool: &ErasedTool) -> Self {
        Self {
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            parameters: tool.parameters().as_value().clone(),
        }
    }
}

/// What a model returned.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A final answer.
    Text(String),
    /// A turn of calls, with any text that came with it.
    Calls {
        /// Text beside the calls.
        content: Option<String>,
        /// The turn.
        calls: Vec<ToolCall>,
    },
}

crate::error::message_error!(
    /// The model could not answer. Carries the model client's own error as its
    /// source when there is one.
    ModelError,
    "the model failed: "
);

/// A language model: transcript and tool specs in, text or a turn out.
pub trait Model: Send + Sync {
    /// Answers the transcript.
    fn respond<'a>(
        &'a self,
        transcript: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Reply, ModelError>>;
}
