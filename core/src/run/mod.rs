//! The run lifecycle: the turn scan, the loop driver and what it
//! returns. No I/O of its own: the model, the tools and the decision log are
//! the host's.
//!
//! Two ways to use it:
//! - [`Agent::start`] runs the whole loop: ask the model, scan its turn, run
//!   or suspend, repeat up to the iteration cap.
//! - A host that keeps its own loop calls [`Agent::process_turn`] with each
//!   turn its model returned; it scans, runs or suspends exactly as the
//!   driver does.
//!
//! Either way a call runs only through the gate. [`scan_turn`] gives a turn
//! it clears a [`Permit`] per call; a turn that needs approval or input has
//! none, and runs only through the [`Suspended`] run it becomes, once a
//! decision on that turn arrives. An offered [`ErasedTool`](crate::erased::ErasedTool) has no public way
//! to run. This guards a host author against a mistake, not against a
//! hostile host, which can always call its own tool's body.

use crate::audit::DecisionLog;
use crate::digest::{Review, ReviewedTool};
use crate::input::input_schema_problem;
use crate::journal::{
    Action, CallRecord, Journal, JournalError, Step, TurnPlan, rerun_stands, skipped,
};
use crate::pause::Suspended;
use crate::registry::{Offered, Registry};
use crate::tool::ToolOutput;
use unusable::Checked;

mod model;
mod one_call;
mod outcome;
mod scan;
mod unusable;

pub use crate::registry::ToolSpec;
pub use model::{Arguments, Model, ModelError, ProposedCall, Reply, Response};
pub use one_call::{CallRequest, NoModel};
pub use outcome::{Outcome, OutcomeUnknown, Recovered, RunError, TurnOutcome};
pub use unusable::{MAX_CALL_ID_BYTES, MAX_CALL_NAME_BYTES};

pub use crate::transcript::{
    DEFAULT_DENIED_REPEATS, DEFAULT_MAX_CALLS_PER_TURN, DeniedCall, Message, RunOptions, RunState,
    ToolCall, Usage,
};
pub use scan::{Cleared, Permit, TurnScan, scan_turn};
pub(crate) use scan::{Scan, not_offered, scan};

/// What starts a run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// System instructions, if any.
    pub system: Option<String>,
    /// The user's message.
    pub prompt: String,
    /// Who is asking.
    pub requested_by: String,
    /// How the run may proceed.
    pub options: RunOptions,
}

impl RunRequest {
    /// A request from `requested_by` with default options.
    pub fn new(requested_by: impl Into<String>, prompt: impl Into<String>) -> Self {
        Self {
            system: None,
            prompt: prompt.into(),
            requested_by: requested_by.into(),
            options: RunOptions::default(),
        }
    }
}

/// What a reviewer is shown of a turn's tools: each call's tool as offered
/// now and whether the call needs approval — the turn scan's own reading.
pub(crate) fn review_of(offered: &Offered, calls: &[ToolCall]) -> Review {
    Review {
        paused_at_ms: crate::audit::now_unix_ms(),
        tools: calls
            .iter()
            .map(|call| {
                offered.gated(&call.name).map(|gated| ReviewedTool {
                    name: gated.tool.name().to_owned(),
                    description: gated.tool.description().to_owned(),
                    parameters: gated.tool.parameters().as_value().clone(),
                    effect: gated.tool.effect(),
                    needs_approval: gated.requires_approval,
                })
            })
            .collect(),
    }
}

/// Answers the calls of a turn a human denied earlier in the run with that
/// denial — never putting them to a human again — and hands back the rest.
/// A call asked for more often than the run allows ends the run.
fn answer_denied(
    offered: &Offered,
    mut state: RunState,
    calls: Vec<ToolCall>,
) -> Result<(RunState, Vec<ToolCall>), RunError> {
    let mut rest = Vec::with_capacity(calls.len());
    for call in calls {
        let parameters = offered.get(&call.name).map(|t| t.parameters().as_value());
        let digest = crate::digest::denial_key(&call.arguments, parameters);
        let limit = state.options.denied_repeats;
        let Some(denied) = state
            .denied
            .iter_mut()
            .find(|d| d.tool == call.name && d.arguments == digest)
        else {
            rest.push(call);
            continue;
        };
        denied.repeats += 1;
        let (repeats, by, reason) = (denied.repeats, denied.by.clone(), denied.reason.clone());
        if repeats > limit {
            tracing::warn!(run = %state.run_id, tool = %call.name, repeats, "the model insists on a denied call; the run ends");
            return Err(RunError::DeniedCallRepeated {
                tool: call.name,
                repeats,
                state: Box::new(state),
            });
        }
        let because = if reason.trim().is_empty() {
            String::new()
        } else {
            format!(": {reason}")
        };
        let output = ToolOutput::error(format!(
            "this call (same tool, same arguments) was denied earlier in this run by {by}{because}; it was not executed, and it will not be put to a human again"
        ));
        tracing::info!(run = %state.run_id, tool = %call.name, repeats, "a denied call asked for again was answered with its denial");
        state.transcript.push(Message::result(&call, output));
    }
    Ok((state, rest))
}

/// The run a journal failure stopped: the plan's run with the results the
/// turn got so far.
fn stopped(plan: TurnPlan, results: Vec<Message>, error: JournalError) -> RunError {
    let TurnPlan { run: mut state, .. } = plan;
    state.transcript.extend(results);
    tracing::error!(run = %state.run_id, %error, "the journal could not record; the run stopped");
    RunError::Journal {
        error,
        state: Box::new(state),
    }
}

/// Whether a planned call may run again without asking anyone: only when
/// both the plan and the tool as it is offered now say its effect is safe
/// to retry.
fn safe_to_retry(offered: &Offered, step: &Step) -> bool {
    let Action::Execute { effect, .. } = &step.action else {
        return true;
    };
    effect.is_safe_to_retry()
        && offered
            .get(&step.call.name)
            .is_none_or(|tool| tool.effect().is_safe_to_retry())
}

/// A call's answer was lost and it is not safe to run again: the run stops
/// with the turn's records, the unknown call started.
fn answer_lost(plan: TurnPlan, index: usize, results: Vec<Message>, reason: String) -> RunError {
    let steps = plan.steps.len();
    let mut known: Vec<CallRecord> = results
        .into_iter()
        .filter_map(|message| match message {
            Message::Tool {
                content,
                is_error,
                rich,
                ..
            } => Some(CallRecord::Ended(if is_error {
                ToolOutput::error(content)
            } else {
                ToolOutput::text(content).with_rich(rich)
            })),
            _ => None,
        })
        .collect();
    known.push(CallRecord::Started);
    known.resize(steps, CallRecord::NotStarted);
    let (call, tool) = plan
        .steps
        .get(index)
        .map(|s| (s.call.id.clone(), s.call.name.clone()))
        .unwrap_or_default();
    tracing::warn!(run = %plan.run.run_id, %call, %tool, %reason, "a call's answer was lost and it is not safe to run again: its outcome is unknown");
    RunError::OutcomeUnknown {
        call,
        tool,
        reason,
        unknown: Box::new(OutcomeUnknown { plan, index }),
        known,
    }
}

/// Runs the loop against one registry, model and decision log.
pub struct Agent<'a> {
    pub(crate) registry: &'a Registry,
    pub(crate) model: &'a dyn Model,
    pub(crate) log: &'a dyn DecisionLog,
    pub(crate) journal: Option<&'a dyn Journal>,
}

impl<'a> Agent<'a> {
    /// An agent over the host's registry, model and decision log.
    pub fn new(registry: &'a Registry, model: &'a dyn Model, log: &'a dyn DecisionLog) -> Self {
        Self {
            registry,
            model,
            log,
            journal: None,
        }
    }

    /// The same agent, recording every turn it runs in `journal` before any
    /// of it runs (see [`journal`](crate::journal)).
    #[must_use]
    pub fn with_journal(mut self, journal: &'a dyn Journal) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Picks up a run whose host stopped mid-turn: `plan` is the last turn the
    /// journal holds, `known` what it knows of each of its calls, in order (a
    /// call it has nothing on is [`CallRecord::NotStarted`]).
    ///
    /// Nothing runs when a call started, never ended and is not safe to run
    /// again (a `non_idempotent_write`, which every remote call counts as) and
    /// no operator chose for it: the run is [`Recovered::OutcomeUnknown`].
    /// Otherwise ended calls keep their recorded result, skipped ones get an
    /// error result saying their outcome is unknown, and the rest run — each
    /// journaled as in a first run — with the tools the registry offers now;
    /// then the run is driven on. A call is safe to run again only when both
    /// the plan and the tool as offered now say its effect is; an operator's
    /// [`CallRecord::Rerun`] counts only when it stands
    /// ([`rerun_stands`]).
    ///
    /// `plan` is what this crate wrote to the journal, read back as it was
    /// stored, and `known` what the journal recorded: recovery runs what the
    /// plan says, so a plan or a record changed in storage runs as changed
    /// (a store keeps both under its integrity key).
    pub async fn recover(
        &self,
        plan: TurnPlan,
        known: &[CallRecord],
    ) -> Result<Recovered, RunError> {
        let offered = self.registry.offer(plan.run.options.allow.as_deref()).await;
        let unknown = plan.steps.iter().enumerate().find(|(index, step)| {
            if !matches!(step.action, Action::Execute { .. }) {
                return false;
            }
            let safe = safe_to_retry(&offered, step);
            match known.get(*index) {
                Some(CallRecord::Started) => !safe,
                Some(CallRecord::Rerun { by }) => !safe && !rerun_stands(&plan.run, by),
                _ => false,
            }
        });
        if let Some((index, step)) = unknown {
            tracing::warn!(run = %plan.run.run_id, call = %step.call.id, tool = %step.call.name, "a call started and never ended, and is not safe to run again: its outcome is unknown");
            return Ok(Recovered::OutcomeUnknown(OutcomeUnknown { plan, index }));
        }
        tracing::info!(run = %plan.run.run_id, turn = plan.turn(), "recovering a turn from its journal");
        let state = self.execute(&offered, plan, known).await?;
        self.drive(state).await.map(Recovered::Outcome)
    }

    /// Journals a planned turn, then runs it; the run with every result.
    pub(crate) async fn run_plan(
        &self,
        offered: &Offered,
        plan: TurnPlan,
    ) -> Result<RunState, RunError> {
        if let Some(journal) = self.journal
            && let Err(error) = journal.planned(&plan).await
        {
            return Err(RunError::Journal {
                error,
                state: Box::new(plan.run),
            });
        }
        self.execute(offered, plan, &[]).await
    }

    /// Runs each step of a plan, journaling each call that runs.
    async fn execute(
        &self,
        offered: &Offered,
        plan: TurnPlan,
        known: &[CallRecord],
    ) -> Result<RunState, RunError> {
        let mut results = Vec::with_capacity(plan.steps.len());
        for (index, step) in plan.steps.iter().enumerate() {
            let output = match (&step.action, known.get(index)) {
                // A journaled result is the one the model was to read, told
                // what ran already.
                (Action::Answer { output }, _)
                | (Action::Execute { .. }, Some(CallRecord::Ended(output))) => output.clone(),
                (Action::Execute { .. }, Some(CallRecord::Skip { by })) => {
                    let output = skipped(&step.call, by);
                    if let Err(error) = self.journal_ended(&plan, index, &output).await {
                        return Err(stopped(plan, results, error));
                    }
                    output
                }
                (Action::Execute { effect, .. }, _)
                    if let Some(reason) = changed_since_planned(offered, &plan, step, *effect) =>
                {
                    tracing::warn!(run = %plan.run.run_id, call = %step.call.id, tool = %step.call.name, %reason, "a planned call's tool changed since its turn was planned; it is not run");
                    let output = ToolOutput::error(reason);
                    if let Err(error) = self.journal_ended(&plan, index, &output).await {
                        return Err(stopped(plan, results, error));
                    }
                    output
                }
                (Action::Execute { arguments, .. }, _) => {
                    if let Some(journal) = self.journal
                        && let Err(error) = journal.started(&plan, index).await
                    {
                        return Err(stopped(plan, results, error));
                    }
                    let tool = offered.get(&step.call.name);
                    let mut output = match tool {
                        Some(tool) => tool.execute(arguments.clone()).await,
                        None => not_offered(offered, &step.call),
                    };
                    if output.is_answer_lost() {
                        if !safe_to_retry(offered, step) {
                            return Err(answer_lost(plan, index, results, output.content));
                        }
                        tracing::warn!(run = %plan.run.run_id, call = %step.call.id, tool = %step.call.name, reason = %output.content, "a call's answer was lost; it is safe to run again, so the model reads the loss as an error");
                        output = ToolOutput::error(output.content);
                    }
                    let output = if tool.is_some() {
                        ran_as(step, output)
                    } else {
                        output
                    };
                    if let Err(error) = self.journal_ended(&plan, index, &output).await {
                        results.push(Message::result(&step.call, output));
                        return Err(stopped(plan, results, error));
                    }
                    output
                }
            };
            results.push(Message::result(&step.call, output));
        }
        let TurnPlan { run: mut state, .. } = plan;
        state.transcript.extend(results);
        Ok(state)
    }

    async fn journal_ended(
        &self,
        plan: &TurnPlan,
        index: usize,
        output: &ToolOutput,
    ) -> Result<(), JournalError> {
        match self.journal {
            Some(journal) => journal.ended(plan, index, output).await,
            None => Ok(()),
        }
    }

    /// Starts a run and drives it until it finishes, suspends or hits its cap.
    ///
    /// Each turn the model returns is scanned before any of it runs. If any
    /// offered call of the turn needs approval, the whole turn waits — every
    /// call of it, reads beside the write too — and the run comes back as
    /// [`Outcome::AwaitingApproval`]: nothing of that turn has run. Otherwise,
    /// if a call waits for a user's data, the turn waits for it
    /// ([`Outcome::WaitingForInput`]). A run that waits is resumed only
    /// through its [`Suspended`] value, with a decision that carries the
    /// digest of the turn its decider was shown.
    pub async fn start(&self, request: RunRequest) -> Result<Outcome, RunError> {
        let requester = crate::identity::Operator::new(
            &request.requested_by,
            crate::identity::IdentitySource::Given,
        )
        .map_err(RunError::InvalidRequester)?;
        let mut transcript = Vec::new();
        if let Some(system) = request.system {
            transcript.push(Message::System { content: system });
        }
        transcript.push(Message::User {
            content: request.prompt,
        });
        let state = RunState {
            run_id: uuid::Uuid::new_v4().to_string(),
            requested_by: requester.name().to_owned(),
            transcript,
            iterations: 0,
            options: request.options,
            denied: Vec::new(),
            client: None,
        };
        tracing::info!(run = %state.run_id, requested_by = %state.requested_by, "run started");
        self.drive(state).await
    }

    /// Drives a run from its current state.
    pub async fn drive(&self, mut state: RunState) -> Result<Outcome, RunError> {
        loop {
            if state.options.one_call && state.iterations >= 1 {
                // A run of one call asks no model once its turn is over.
                return Ok(one_call::finished(state));
            }
            if state.iterations >= state.options.max_iterations {
                tracing::warn!(run = %state.run_id, limit = state.options.max_iterations, "iteration cap reached");
                return Ok(Outcome::LimitReached(state));
            }
            let offered = self.registry.offer(state.options.allow.as_deref()).await;
            let specs = offered.specs();
            let answer = match self.model.respond(&state.transcript, &specs).await {
                Ok(answer) => answer,
                Err(error) => {
                    return Err(RunError::Model {
                        error,
                        state: Box::new(state),
                    });
                }
            };
            state.iterations += 1;
            let usage = answer.usage;
            if let Some(usage) = usage {
                tracing::info!(
                    run = %state.run_id,
                    turn = state.iterations,
                    input_tokens = usage.input_tokens,
                    cached_input_tokens = usage.cached_input_tokens,
                    cache_write_input_tokens = usage.cache_write_input_tokens,
                    output_tokens = usage.output_tokens,
                    reasoning_tokens = usage.reasoning_tokens,
                    "model answered"
                );
            }
            match unusable::check(
                answer,
                state.iterations,
                &offered,
                &specs,
                state.options.max_calls_per_turn,
            ) {
                Checked::Final(answer) => {
                    state.transcript.push(Message::Assistant {
                        content: Some(answer.clone()),
                        calls: Vec::new(),
                        usage,
                    });
                    tracing::info!(run = %state.run_id, "run finished");
                    return Ok(Outcome::Finished { answer, state });
                }
                Checked::Refused {
                    content,
                    calls,
                    results,
                } => {
                    state.transcript.push(Message::Assistant {
                        content,
                        calls,
                        usage,
                    });
                    state.transcript.extend(results);
                }
                Checked::Turn { content, calls } => {
                    state.transcript.push(Message::Assistant {
                        content,
                        calls: calls.clone(),
                        usage,
                    });
                    match self.turn(&offered, state, calls).await? {
                        TurnOutcome::Ran(next) => state = next,
                        TurnOutcome::AwaitingApproval(s) => {
                            return Ok(Outcome::AwaitingApproval(s));
                        }
                        TurnOutcome::WaitingForInput(s) => return Ok(Outcome::WaitingForInput(s)),
                    }
                }
            }
        }
    }

    /// Scans one turn the host's own loop received (already appended to the
    /// transcript by the host or not — this appends nothing but results) and
    /// runs it or suspends. The turn is counted in `state.iterations`, as the
    /// driver counts each model reply: that number is the suspension's place
    /// in the run, which the turn digest binds, so two suspensions of one run
    /// never share a digest.
    pub async fn process_turn(
        &self,
        mut state: RunState,
        calls: Vec<ToolCall>,
    ) -> Result<TurnOutcome, RunError> {
        if state.iterations >= state.options.max_iterations {
            return Err(RunError::IterationCap {
                limit: state.options.max_iterations,
                state: Box::new(state),
            });
        }
        state.iterations += 1;
        let offered = self.registry.offer(state.options.allow.as_deref()).await;
        let mut calls = calls;
        resolve_names(&offered, &mut calls);
        self.turn(&offered, state, calls).await
    }

    async fn turn(
        &self,
        offered: &Offered,
        state: RunState,
        calls: Vec<ToolCall>,
    ) -> Result<TurnOutcome, RunError> {
        if calls.len() > state.options.max_calls_per_turn as usize {
            return Err(RunError::TurnTooLarge {
                calls: calls.len(),
                limit: state.options.max_calls_per_turn,
                state: Box::new(state),
            });
        }
        if let Some(id) = crate::transcript::first_duplicate_id(&calls) {
            return Err(RunError::DuplicateCallId {
                id: id.to_owned(),
                state: Box::new(state),
            });
        }
        let (state, calls) = if state.denied.is_empty() {
            (state, calls)
        } else {
            answer_denied(offered, state, calls)?
        };
        match scan(offered, &calls) {
            Scan::Approval => {
                let review = review_of(offered, &calls);
                let suspended = Suspended::awaiting_approval(state, calls, review);
                tracing::info!(run = %suspended.run_id(), digest = %suspended.digest(), "turn suspended for approval");
                Ok(TurnOutcome::AwaitingApproval(suspended))
            }
            Scan::Input { index, tool } => {
                let schema = match tool.input_schema() {
                    None => Err("the tool declares no input schema"),
                    Some(schema) => input_schema_problem(schema).map_or(Ok(schema), Err),
                };
                let schema = match schema {
                    Ok(schema) => schema.clone(),
                    Err(problem) => {
                        return Err(RunError::UnusableInputSchema {
                            tool: tool.name().to_owned(),
                            problem,
                            state: Box::new(state),
                        });
                    }
                };
                let tool_name = tool.name().to_owned();
                let review = review_of(offered, &calls);
                let suspended =
                    Suspended::waiting_for_input(state, calls, tool_name, index, schema, review);
                tracing::info!(run = %suspended.run_id(), tool = %suspended.input_tool(), "turn suspended for input");
                Ok(TurnOutcome::WaitingForInput(suspended))
            }
            Scan::Run => {
                let steps = calls
                    .into_iter()
                    .map(|call| {
                        let action = match offered.get(&call.name) {
                            Some(tool) => Action::Execute {
                                arguments: call.arguments.clone(),
                                effect: tool.effect(),
                            },
                            None => Action::Answer {
                                output: not_offered(offered, &call),
                            },
                        };
                        Step { call, action }
                    })
                    .collect();
                let plan = TurnPlan {
                    run: state,
                    steps,
                    decided: false,
                };
                Ok(TurnOutcome::Ran(self.run_plan(offered, plan).await?))
            }
        }
    }
}

/// Why a planned step must not run now, if it must not: its tool's effect
/// is not the one planned, or the turn ran with no decision and the tool now
/// needs one. Between planning and running there is nothing to check on a
/// fresh turn (the same offer); after a crash, the offer may have changed.
fn changed_since_planned(
    offered: &Offered,
    plan: &TurnPlan,
    step: &Step,
    planned: crate::effect::Effect,
) -> Option<String> {
    let name = &step.call.name;
    let slot = offered.slot(name)?;
    let tool = offered.tool_at(slot)?;
    if tool.effect() != planned {
        return Some(format!(
            "the call `{}` was not run: tool `{name}` changed since this turn was planned (it was planned as `{planned}`, and is now `{}`); ask again if it is still wanted",
            step.call.id,
            tool.effect()
        ));
    }
    if !plan.decided && slot.requires_approval {
        return Some(format!(
            "the call `{}` was not run: tool `{name}` now needs a person's approval, and this turn was planned when it did not; ask again, and the call will be put to a person",
            step.call.id
        ));
    }
    None
}

/// The head of a result whose call ran with arguments other than the
/// model's — a reviewer's edit, or a user's input laid over them — before
/// the arguments it ran with, as JSON, and a blank line: so the model's next
/// turn builds on what ran, not on what it asked.
pub const RAN_WITH: &str = "This call ran with other arguments than it asked for: ";

/// `output`, told what ran when the call ran with arguments other than its
/// own ([`RAN_WITH`]).
fn ran_as(step: &Step, mut output: ToolOutput) -> ToolOutput {
    if let Action::Execute { arguments, .. } = &step.action
        && *arguments != step.call.arguments
    {
        output.content = format!("{RAN_WITH}{arguments}\n\n{}", output.content);
    }
    output
}

/// Writes each call under the local name its name resolves to (a wire name,
/// or a local name already): the transcript, the digest and the decisions
/// keep local names. A name that resolves to no tool is kept as the model
/// wrote it, and the call is answered as a call to an unknown tool.
fn resolve_names(offered: &Offered, calls: &mut [ToolCall]) {
    for call in calls {
        if let Some(local) = offered.catalogue().resolve(&call.name)
            && local != call.name
        {
            call.name = local.to_owned();
        }
    }
}
