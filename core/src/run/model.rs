//! The model a run talks to, and how it is told about the tools.

use serde_json::Value;

use crate::erased::BoxFuture;
use crate::registry::ToolSpec;
use crate::transcript::{Message, ToolCall, Usage};

/// What a model answered, as its client read it off the wire: text, the
/// calls it asked for, and what the request cost.
///
/// A client hands on what the model wrote, not what it should have
/// written: a call without an id, or with arguments that are not a JSON
/// object, is kept as it came. The run checks the turn before anything of
/// it runs or is shown to a person; a turn that cannot be used is answered
/// call by call with an error the model reads in its next request, and
/// nothing of it runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Response {
    /// Text, if any. With no calls it is the final answer.
    pub content: Option<String>,
    /// The calls, in the order the model gave them.
    pub calls: Vec<ProposedCall>,
    /// The tokens the request cost, when the provider said.
    pub usage: Option<Usage>,
}

impl Response {
    /// A final answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: Some(text.into()),
            ..Self::default()
        }
    }

    /// The same answer, with what it cost.
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }
}

impl From<Reply> for Response {
    fn from(reply: Reply) -> Self {
        match reply {
            Reply::Text(text) => Response::text(text),
            Reply::Calls { content, calls } => Response {
                content,
                calls: calls.into_iter().map(ProposedCall::from).collect(),
                usage: None,
            },
        }
    }
}

/// One call as a model wrote it, before the run checked it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposedCall {
    /// The model's id for the call; `None` when it gave none.
    pub id: Option<String>,
    /// The tool's name as the model wrote it: a wire name, or a local name.
    pub name: String,
    /// The arguments.
    pub arguments: Arguments,
}

impl From<ToolCall> for ProposedCall {
    fn from(call: ToolCall) -> Self {
        Self {
            id: Some(call.id),
            name: call.name,
            arguments: Arguments::Json(call.arguments),
        }
    }
}

/// A call's arguments as the model wrote them.
#[derive(Debug, Clone, PartialEq)]
pub enum Arguments {
    /// Parsed JSON (an object, when the call is usable).
    Json(Value),
    /// Text that is not JSON, kept with the parser's complaint, for a
    /// protocol that carries arguments as text (OpenAI's `arguments`).
    Unparsed {
        /// What the model wrote, as received (a client may shorten it).
        text: String,
        /// Why it does not parse.
        error: String,
    },
}

impl Arguments {
    /// Parses JSON text as a model's arguments: an object whose keys are
    /// each named once, or [`Arguments::Unparsed`] saying why not. Blank
    /// text is the empty object, as providers send a call without
    /// parameters.
    pub fn parse(text: &str) -> Self {
        if text.trim().is_empty() {
            return Arguments::Json(Value::Object(serde_json::Map::new()));
        }
        let mut reader = serde_json::Deserializer::from_str(text);
        let parsed = crate::unique::value(&mut reader).and_then(|value| {
            reader.end()?;
            Ok(value)
        });
        match parsed {
            Ok(value) => Arguments::Json(value),
            Err(error) => Arguments::Unparsed {
                text: text.to_owned(),
                error: error.to_string(),
            },
        }
    }
}

/// What a model returned, in the short form a script writes: every call
/// with an id and JSON arguments. It converts into an [`Response`].
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
    /// Answers the transcript. A client that keeps the short form returns
    /// `Ok(reply.into())` ([`Reply`] converts).
    fn respond<'a>(
        &'a self,
        transcript: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Response, ModelError>>;
}
