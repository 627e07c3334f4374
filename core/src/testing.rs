//! Test doubles for hosts and tool authors: a model that plays back canned
//! replies, and a decision log in memory. Not for production: neither
//! persists anything.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::erased::BoxFuture;
use crate::run::{Model, ModelError, Response, ToolSpec};
use crate::transcript::Message;

use crate::audit::{DecisionLog, DecisionRecord, LogError};

/// The rules' own functions, for tests that compute what a stored record
/// must hold or write one by hand. Behind the `test-util` feature: not part
/// of the API.
#[cfg(feature = "test-util")]
pub mod rules {
    pub use crate::digest::{arguments_digest, denial_key, reviewed_turn_digest, turn_digest};
    pub use crate::persist::{body_checksum, document_checksum, plan_checksum};
}

/// A model that plays back canned replies in order, for tests and examples.
///
/// Its replies are written with local names (`notes.write_note`), and it
/// sends each call as a model does: under the tool's wire name, as the
/// tools it is handed say ([`ToolSpec::wire_name`]). A call to a name no
/// tool has keeps the name written. A script holds [`Reply`](crate::run::Reply) values, or
/// whole [`Response`]s for a reply a real model could give and a script
/// could not: a call without an id, arguments that do not parse, a cost.
#[derive(Debug, Default)]
pub struct ScriptedModel {
    replies: Mutex<VecDeque<Response>>,
}

impl ScriptedModel {
    /// A model that will answer with `replies`, one per request.
    pub fn new<R: Into<Response>>(replies: impl IntoIterator<Item = R>) -> Self {
        Self {
            replies: Mutex::new(replies.into_iter().map(Into::into).collect()),
        }
    }

    /// How many replies are left.
    pub fn remaining(&self) -> usize {
        self.replies.lock().map_or(0, |r| r.len())
    }
}

impl Model for ScriptedModel {
    fn respond<'a>(
        &'a self,
        _: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Response, ModelError>> {
        let next = match self.replies.lock() {
            Ok(mut replies) => replies
                .pop_front()
                .ok_or_else(|| ModelError::new("the script has no more replies")),
            Err(_) => Err(ModelError::new("the script's lock was poisoned")),
        };
        let next = next.map(|mut answer| {
            for call in &mut answer.calls {
                call.name = ToolSpec::wire_name(tools, &call.name).to_owned();
            }
            answer
        });
        Box::pin(async move { next })
    }
}

/// A decision log in memory, for tests and examples.
#[derive(Debug, Default)]
pub struct MemoryLog {
    records: Mutex<Vec<DecisionRecord>>,
}

impl MemoryLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every record so far.
    pub fn records(&self) -> Vec<DecisionRecord> {
        self.records.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl DecisionLog for MemoryLog {
    fn record<'a>(&'a self, record: &'a DecisionRecord) -> BoxFuture<'a, Result<(), LogError>> {
        let result = self
            .records
            .lock()
            .map(|mut r| r.push(record.clone()))
            .map_err(|_| LogError::new("the in-memory log's lock was poisoned"));
        Box::pin(async move { result })
    }
}
