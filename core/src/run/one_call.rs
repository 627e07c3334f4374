//! Runs of one call: a call that arrives without a model — an MCP client's
//! `tools/call` — recorded and gated as a run of one turn, so digests,
//! reviews, per-call verdicts, expiry, the audit trail, the journal and
//! crash safety apply to it unchanged, and finished with the call's result.

use crate::erased::BoxFuture;
use crate::identity::DeclaredClient;
use crate::transcript::{Message, RunOptions, RunState, ToolCall};

use super::{Agent, Model, ModelError, Outcome, Response, RunError, ToolSpec, TurnOutcome};

/// What starts a run of one call ([`Agent::call`]).
#[derive(Debug, Clone)]
pub struct CallRequest {
    /// Who is asking.
    pub requested_by: String,
    /// What asked for the call, in words — the run's user message, shown to
    /// a reviewer: "`tools/call` from client `zed` 0.190".
    pub context: String,
    /// The call, its tool named by its local name (a caller that received a
    /// wire name resolves it first, [`Catalogue::by_wire`](crate::registry::Catalogue::by_wire)).
    pub call: ToolCall,
    /// The MCP client the requester asked through, as it declared itself:
    /// shown beside the requester, never read by a decision.
    pub client: Option<DeclaredClient>,
    /// How the run may proceed; `max_iterations` and `one_call` are set by
    /// [`Agent::call`].
    pub options: RunOptions,
}

impl CallRequest {
    /// A request from `requested_by` for `call`, with default options.
    pub fn new(
        requested_by: impl Into<String>,
        context: impl Into<String>,
        call: ToolCall,
    ) -> Self {
        Self {
            requested_by: requested_by.into(),
            context: context.into(),
            call,
            client: None,
            options: RunOptions::default(),
        }
    }
}

/// The model of a run of one call: there is none, and none is asked. An
/// [`Agent`] that only makes runs of one call, and a host that resumes
/// them, are given this.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoModel;

impl Model for NoModel {
    fn respond<'a>(
        &'a self,
        _: &'a [Message],
        _: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Response, ModelError>> {
        Box::pin(async {
            Err(ModelError::new(
                "this run has no model: a run of one call finishes with its call's result",
            ))
        })
    }
}

impl Agent<'_> {
    /// Starts a run of one call: its one turn is `request.call`, scanned and
    /// gated as any turn — it runs now, or the run suspends for approval or
    /// input exactly as [`Agent::start`] would — and once it has run, or
    /// been denied, the run is [`Outcome::Finished`] with the call's result
    /// as its answer, asking no model; a resumed run of one call finishes
    /// the same way. The transcript holds what asked for the call, the call,
    /// and its result. A call whose arguments do not fit its tool's
    /// parameter schema is neither run nor put to a person: the run
    /// finishes at once with an error result that names each wrong field.
    pub async fn call(&self, request: CallRequest) -> Result<Outcome, RunError> {
        let requester = crate::identity::Operator::new(
            &request.requested_by,
            crate::identity::IdentitySource::Given,
        )
        .map_err(RunError::InvalidRequester)?;
        let call = request.call;
        let state = RunState {
            run_id: uuid::Uuid::new_v4().to_string(),
            requested_by: requester.name().to_owned(),
            transcript: vec![
                Message::User {
                    content: request.context,
                },
                Message::Assistant {
                    content: None,
                    calls: vec![call.clone()],
                    usage: None,
                },
            ],
            // The call is the run's one turn.
            iterations: 1,
            options: RunOptions {
                max_iterations: 1,
                one_call: true,
                ..request.options
            },
            denied: Vec::new(),
            client: request.client,
        };
        tracing::info!(run = %state.run_id, requested_by = %state.requested_by, tool = %call.name, "run of one call started");
        let offered = self.registry.offer(state.options.allow.as_deref()).await;
        if let Some(problem) = offered.arguments_problem(&call.name, &call.arguments) {
            // Arguments that do not fit the tool's schema: nothing runs, and
            // nothing is put to a person; the caller reads why.
            tracing::warn!(run = %state.run_id, tool = %call.name, "a call's arguments do not fit its tool's schema; it is not run");
            let mut state = state;
            state.transcript.push(Message::Tool {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: format!("This call could not be used: {problem}. It was not run."),
                is_error: true,
                rich: None,
            });
            return Ok(finished(state));
        }
        match self.turn(&offered, state, vec![call]).await? {
            TurnOutcome::Ran(state) => Ok(finished(state)),
            TurnOutcome::AwaitingApproval(run) => Ok(Outcome::AwaitingApproval(run)),
            TurnOutcome::WaitingForInput(run) => Ok(Outcome::WaitingForInput(run)),
        }
    }
}

/// A run of one call whose turn is over: finished with the call's result —
/// its text, or its error, a denial included — as the answer.
pub(super) fn finished(state: RunState) -> Outcome {
    let answer = state
        .transcript
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Tool { content, .. } => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_default();
    tracing::info!(run = %state.run_id, "run of one call finished");
    Outcome::Finished { answer, state }
}
