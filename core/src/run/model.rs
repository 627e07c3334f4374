//! The model a run talks to, and how it is told about the tools.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::erased::BoxFuture;
use crate::transcript::{Message, ToolCall};

/// A tool as the model is told about it ([`Offered::specs`](crate::registry::Offered::specs)).
///
/// A model is sent `name`, the tool's wire name ([`crate::wire`]): letters,
/// digits, `_` and `-`, at most 48 characters, as every model API takes. The
/// transcript it is handed keeps local names (`local_name`, what the digest
/// and the decisions bind), so a model client writes each past call under
/// the wire name of its `local_name`; the calls it returns may name either,
/// and the run resolves them ([`Catalogue::resolve`](crate::registry::Catalogue::resolve)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name to call it by: its wire name.
    pub name: String,
    /// Its local name, as the transcript writes it.
    pub local_name: String,
    /// What it does.
    pub description: String,
    /// Its parameter schema.
    pub parameters: Value,
}

impl ToolSpec {
    /// The wire name of the tool a transcript names `local_name`, among
    /// `specs`; the name itself for a tool not among them (a call the model
    /// made to a tool it was not offered keeps the name it used).
    pub fn wire_name<'a>(specs: &'a [ToolSpec], local_name: &'a str) -> &'a str {
        specs
            .iter()
            .find(|spec| spec.local_name == local_name)
            .map_or(local_name, |spec| spec.name.as_str())
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
