//! The gate for a coding agent's own tools, reached through its pre-tool
//! hooks (SPEC §15): Claude Code's and Codex's `PreToolUse` and
//! `PostToolUse`.
//!
//! A client's tools are remote tools of a source of their own, named
//! `CLIENT.TOOL` (`claude-code.Bash`): each requires approval until an
//! operator declares otherwise ([`toolgate_store::Store::declare_client_tool`]),
//! and the shell's gate is lowered, call by call, by a command rule only for
//! a command of plain words ([`rules`]). A held call is a run of one call of
//! a gateway of its own (`gateway.hook.CLIENT`), decided like any run —
//! from the console, `runs review`, the inbox, notifications — and answered
//! allow only after an approval, once per approval ([`Verdict`]); what
//! makes a retry the same call is named per tool ([`Client::incidental`]):
//! for the shell, everything but the model's description and timeout, and
//! the working directory.
//!
//! The adapters ([`HookEvent::parse`], [`Verdict::render`]) speak each
//! client's shapes; [`HookGate::answer`] is the one judgement both use,
//! whether the hook reads the store itself or submits to a service
//! ([`crate::http`] serves `POST /hook/CLIENT`).

mod event;
pub mod rules;
pub(crate) mod serve;
mod tool;

pub use event::{Client, EventError, HookEvent, HookKind, MAX_EVENT_BYTES, Rendered, Verdict};
pub(crate) use tool::stamp_run;
use tool::{ClientSource, MARKER};

use std::time::Duration;

use serde_json::{Map, Value, json};
use toolgate::OperatorDeclaration;
use toolgate::identity::DeclaredClient;
use toolgate::visible::visible;
use toolgate_store::{Store, effective_approval};

use crate::Gateway;

/// The most bytes of a client's report of a call that are recorded.
const MAX_OUTCOME_BYTES: usize = 64 * 1024;

/// How long a held call's run is looked for when its client reports what
/// it ran.
const OUTCOME_WITHIN: Duration = Duration::from_hours(24);

/// Why a call that joined an approved run is not allowed.
const ONE_ALLOW: &str = "the approval of this call let it run once, and another asking of the same call took it: it does not run; asked again, it is held for a new decision";

/// Why `tool` is gated elsewhere, when it is a client's call
/// (`mcp__SERVER__TOOL`) of one of `servers`, already behind a toolgate
/// gateway.
pub fn gated_elsewhere(servers: &[String], tool: &str) -> Option<String> {
    let (server, name) = tool.strip_prefix("mcp__")?.split_once("__")?;
    // `mcp__a__b__c` could be server `a`'s `b__c` or server `a__b`'s `c`:
    // gated here.
    // And `mcp__gh___x` could be server `gh_`'s `x`.
    (!name.contains("__") && !name.starts_with('_') && servers.iter().any(|s| s == server)).then(
        || format!("the server `{server}` is behind a toolgate gateway, which gates its calls"),
    )
}

/// The gate for one client's hooks over a store.
#[derive(Clone)]
pub struct HookGate {
    store: Store,
    client: Client,
    wait: Duration,
    poll: Duration,
    four_eyes: bool,
    approvals: u32,
    behind_gateway: Vec<String>,
}

impl HookGate {
    /// The gate for `client`'s hooks: a held call waits
    /// [`crate::DEFAULT_WAIT`] for its decision.
    pub fn new(store: Store, client: Client) -> Self {
        Self {
            store,
            client,
            wait: crate::DEFAULT_WAIT,
            poll: Duration::from_millis(200),
            four_eyes: false,
            approvals: 1,
            behind_gateway: Vec::new(),
        }
    }

    /// How long a held call waits for its decision before it is denied
    /// (asked again, the same call joins its run).
    #[must_use]
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// How often a held call's run is read while it waits.
    #[must_use]
    pub fn poll(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// Whether a requester may not decide their own calls.
    #[must_use]
    pub fn four_eyes(mut self, on: bool) -> Self {
        self.four_eyes = on;
        self
    }

    /// How many people must approve a call.
    #[must_use]
    pub fn approvals(mut self, people: u32) -> Self {
        self.approvals = people;
        self
    }

    /// Servers already behind a toolgate gateway: the client's
    /// `mcp__SERVER__…` calls of them are gated there, not here.
    #[must_use]
    pub fn behind_gateway(mut self, servers: Vec<String>) -> Self {
        self.behind_gateway = servers;
        self
    }

    /// The client.
    pub fn client(&self) -> Client {
        self.client
    }

    /// toolgate's answer to `event`, asked by `requester`: judged and, when
    /// the tool needs approval, held until a decision or the wait; for a
    /// `PostToolUse`, the outcome recorded against the call's run. Never
    /// an allow when unsure: anything that goes wrong is a deny.
    pub async fn answer(&self, event: &HookEvent, requester: &str) -> Verdict {
        match event.kind {
            HookKind::PreToolUse => self.judge(event, requester).await,
            HookKind::PostToolUse => self.record(event, requester).await,
        }
    }

    /// What the gate lets through without a run: `Some(why)` when the call
    /// needs no decision, `Err` for a blocked tool or a failure.
    async fn unheld(&self, event: &HookEvent) -> Result<Option<String>, Verdict> {
        if let Some(why) = gated_elsewhere(&self.behind_gateway, &event.tool) {
            return Ok(Some(why));
        }
        let declaration = self
            .store
            .client_tool_declaration(self.client.name(), &event.tool)
            .await
            .map_err(|error| {
                Verdict::failed(format!(
                    "the operator's declarations cannot be read ({error})"
                ))
            })?;
        match effective_approval(OperatorDeclaration::ApprovalRequired, declaration) {
            None => Err(Verdict::Deny {
                reason: format!(
                    "the tool `{}` is blocked by the operator of toolgate: it does not run",
                    visible(&event.tool)
                ),
            }),
            Some((OperatorDeclaration::NoApproval, _)) => Ok(Some(
                "the operator declared the tool no approval".to_owned(),
            )),
            Some((OperatorDeclaration::ApprovalRequired, _)) => {
                if !self.client.is_shell(&event.tool) {
                    return Ok(None);
                }
                let Some(command) = event.input.get("command").and_then(Value::as_str) else {
                    return Ok(None);
                };
                let rules = self
                    .store
                    .command_rules(Some(self.client.name()))
                    .await
                    .map_err(|error| {
                        Verdict::failed(format!("the command rules cannot be read ({error})"))
                    })?;
                let words: Vec<Vec<String>> = rules.into_iter().map(|r| r.words).collect();
                Ok(rules::matching(&words, command)
                    .map(|rule| format!("the command rule `{}`", rule.join(" "))))
            }
        }
    }

    async fn judge(&self, event: &HookEvent, requester: &str) -> Verdict {
        match self.unheld(event).await {
            Ok(Some(why)) => return Verdict::None { why },
            Ok(None) => {}
            Err(verdict) => return verdict,
        }
        let held = match self.held(event, requester) {
            Ok(held) => held,
            Err(verdict) => return verdict,
        };
        let wire = {
            let catalogue = held.gateway.inner.registry.catalogue().await;
            match catalogue.wire_name(&held.local) {
                Some(wire) => wire.to_owned(),
                None => {
                    return Verdict::failed(format!(
                        "the tool `{}` could not be offered to the gate",
                        visible(&event.tool)
                    ));
                }
            }
        };
        let asker = crate::Asker {
            context: Some(held.context.clone()),
            ..crate::Asker::patient(requester.to_owned())
        };
        let rmcp::model::CallToolResponse::Complete(result) = held
            .gateway
            .asked(
                &wire,
                held.arguments.clone(),
                Some(held.client.clone()),
                asker,
            )
            .await
        else {
            return Verdict::failed("the call was answered with a request for input");
        };
        let marker = (result.is_error != Some(true))
            .then(|| {
                result
                    .structured_content
                    .as_ref()
                    .and_then(|s| s.get(MARKER))
                    .cloned()
            })
            .flatten();
        let Some(marker) = marker else {
            return Verdict::Deny {
                reason: crate::answers::text_of(&result),
            };
        };
        // The run the approval came from, as its answer says; an answer
        // that names none allows nothing.
        let (Some(approved), Some(run)) = (
            marker.get("arguments").cloned(),
            marker.get("run").and_then(Value::as_str).map(str::to_owned),
        ) else {
            return Verdict::failed("the approved answer names no run");
        };
        let run = Some(run);
        let who = match &run {
            Some(run) => self.deciders(run).await,
            None => "a person".to_owned(),
        };
        let reason = format!("approved in toolgate by {who}");
        if approved == held.arguments {
            if !self.took_allow(event, run.as_deref()).await {
                return Verdict::Deny {
                    reason: ONE_ALLOW.to_owned(),
                };
            }
            return Verdict::Allow {
                reason,
                updated_input: None,
            };
        }
        self.edited(event, &held, run.as_deref(), &approved, &reason)
            .await
    }

    /// The answer to a call approved with arguments other than those it
    /// asked with: Claude Code's `updatedInput` with the approved input in
    /// place of the fields that make the call; refused for a client that
    /// cannot apply it, or for another working directory — recorded
    /// against the run as not run.
    async fn edited(
        &self,
        event: &HookEvent,
        held: &Held,
        run: Option<&str>,
        approved: &Value,
        reason: &str,
    ) -> Verdict {
        let refused = if approved.get("cwd") == held.arguments.get("cwd") {
            match approved.get("input") {
                Some(Value::Object(edited)) if self.client.applies_edits() => {
                    // The approved fields; of the rest, only what does not
                    // make the call (the model's description, say).
                    let incidental = self.client.incidental(&event.tool);
                    let mut input = edited.clone();
                    for (field, value) in &event.input {
                        if incidental.contains(&field.as_str()) {
                            input.insert(field.clone(), value.clone());
                        }
                    }
                    if !self.took_allow(event, run).await {
                        return Verdict::Deny {
                            reason: ONE_ALLOW.to_owned(),
                        };
                    }
                    return Verdict::Allow {
                        reason: format!("{reason}, with edited input"),
                        updated_input: Some(input),
                    };
                }
                Some(Value::Object(edited)) => format!(
                    "the call was approved with edited input, which {} cannot apply (it would run the original): it does not run. The approver's version: {}; asked with it, it is held for a decision of its own",
                    self.client,
                    Value::Object(edited.clone())
                ),
                _ => "the approved input does not read as an object: the call does not run"
                    .to_owned(),
            }
        } else {
            "the call was approved in another working directory than the one it runs in: it does not run; ask again".to_owned()
        };
        // The run says it was approved: what the client was told is kept
        // beside it.
        if let Some(run) = run {
            let note = json!({ "not_run": refused }).to_string();
            if let Err(error) = self.store.record_client_outcome(run, None, &note).await {
                tracing::warn!(%run, %error, "what a hook did not run cannot be recorded");
            }
        }
        Verdict::Deny { reason: refused }
    }

    /// Whether this hook took the one allow of run `run`: false when
    /// another asking of the same call took it, when the run cannot be
    /// found, or when the store cannot say.
    async fn took_allow(&self, event: &HookEvent, run: Option<&str>) -> bool {
        let Some(run) = run else {
            tracing::warn!("an approved call's run cannot be found: it is not allowed");
            return false;
        };
        match self
            .store
            .take_client_allow(self.client.name(), event.tool_use_id.as_deref(), run)
            .await
        {
            Ok(taken) => taken,
            Err(error) => {
                tracing::warn!(%run, %error, "the allow of an approved call cannot be taken: it is not allowed");
                false
            }
        }
    }

    /// Who decided run `run`, in words.
    async fn deciders(&self, run: &str) -> String {
        match self.store.decisions(run).await {
            Ok(decisions) => {
                let names: Vec<String> = decisions
                    .iter()
                    .filter(|d| d.voided.is_none())
                    .map(|d| visible(&d.decided_by).into_owned())
                    .collect();
                if names.is_empty() {
                    format!("a person (run {run})")
                } else {
                    format!("{} (run {run})", names.join(", "))
                }
            }
            Err(_) => format!("a person (run {run})"),
        }
    }

    async fn record(&self, event: &HookEvent, requester: &str) -> Verdict {
        // The call allowed under the client's own id for it, whatever input
        // it ran with; else the run its input was last held under, unless
        // that run has its outcome already (this was another call).
        let allowed = match &event.tool_use_id {
            Some(id) => match self.store.run_of_client_call(self.client.name(), id).await {
                Ok(run) => run,
                Err(error) => {
                    return Verdict::failed(format!("the store cannot be read ({error})"));
                }
            },
            None => None,
        };
        let run = if let Some(run) = allowed {
            run
        } else {
            // A call that could not be held was never run by toolgate's
            // leave: nothing to record against.
            let Ok(held) = self.held(event, requester) else {
                return Verdict::None {
                    why: "the call is no toolgate call".to_owned(),
                };
            };
            let Some(run) = held
                .gateway
                .held_run_within(
                    &held.local,
                    &held.arguments,
                    &held.client,
                    requester,
                    OUTCOME_WITHIN,
                )
                .await
            else {
                return Verdict::None {
                    why: "the call was not held".to_owned(),
                };
            };
            // Only a run that let a call run has an outcome to record.
            match self.store.client_allowed(&run).await {
                Ok(true) => run,
                Ok(false) => {
                    return Verdict::None {
                        why: "its run let no call run".to_owned(),
                    };
                }
                Err(error) => {
                    return Verdict::failed(format!("the store cannot be read ({error})"));
                }
            }
        };
        // One outcome per run: a second report is of another call, or the
        // same told twice.
        match self.store.client_outcomes(&run).await {
            Ok(outcomes) if !outcomes.is_empty() => {
                return Verdict::None {
                    why: "its run has its outcome already".to_owned(),
                };
            }
            Ok(_) => {}
            Err(error) => return Verdict::failed(format!("the store cannot be read ({error})")),
        }
        let mut outcome = event
            .response
            .as_ref()
            .map_or_else(|| "null".to_owned(), Value::to_string);
        if outcome.len() > MAX_OUTCOME_BYTES {
            outcome = json!({
                "cut": format!("{} bytes, more than {MAX_OUTCOME_BYTES}", outcome.len()),
            })
            .to_string();
        }
        match self
            .store
            .record_client_outcome(&run, event.tool_use_id.as_deref(), &outcome)
            .await
        {
            Ok(()) => Verdict::None {
                why: format!("the outcome was recorded against run {run}"),
            },
            Err(error) => Verdict::failed(format!(
                "what the call did could not be recorded against run {run} ({error})"
            )),
        }
    }

    /// The gateway of one held call: its one tool, its arguments as the run
    /// records them, its client and context.
    fn held(&self, event: &HookEvent, requester: &str) -> Result<Held, Verdict> {
        let local = local_name(self.client, &event.tool);
        if let Some(problem) = toolgate::registry::tool_name_problem(&local) {
            return Err(Verdict::failed(format!(
                "the tool `{}` cannot be named in a run: {problem}",
                visible(&event.tool)
            )));
        }
        let incidental = self.client.incidental(&event.tool);
        let input: Map<String, Value> = event
            .input
            .iter()
            .filter(|(field, _)| !incidental.contains(&field.as_str()))
            .map(|(field, value)| (field.clone(), value.clone()))
            .collect();
        let cwd = event.cwd.clone().map_or(Value::Null, Value::String);
        let arguments = json!({ "cwd": cwd, "input": input });
        let context = format!(
            "`{}` asked through the {} hook, session `{}`, in `{}`",
            event.tool,
            self.client,
            event.session.as_deref().unwrap_or("none given"),
            event.cwd.as_deref().unwrap_or("no directory given"),
        );
        let gateway = Gateway::builder(self.store.clone())
            .source(ClientSource {
                client: self.client,
                tool: local.clone(),
            })
            .host(&self.client.host())
            .user(requester)
            .wait(self.wait)
            .poll(self.poll)
            .remember(Duration::ZERO)
            .four_eyes(self.four_eyes)
            .approvals(self.approvals)
            .build()
            .map_err(Verdict::failed)?;
        Ok(Held {
            gateway,
            local,
            arguments,
            client: DeclaredClient::new(self.client.name(), None),
            context,
        })
    }
}

/// The name a client's tool is held under: `CLIENT.TOOL`; a name that does
/// not fit a run's 64 characters keeps its first characters and a digest of
/// the whole (the context names the tool in full). A name with characters
/// no tool name holds is kept as it is, and refused.
fn local_name(client: Client, tool: &str) -> String {
    let whole = format!("{}.{tool}", client.name());
    if whole.len() <= 64 {
        return whole;
    }
    let digest = toolgate::suspend::arguments_digest(&Value::String(tool.to_owned()));
    let digest = digest.rsplit(':').next().unwrap_or_default();
    let digest: String = digest.chars().take(10).collect();
    let keep = 64 - client.name().len() - 1 - 1 - digest.len();
    let prefix: String = tool.chars().take(keep).collect();
    format!("{}.{prefix}-{digest}", client.name())
}

struct Held {
    gateway: Gateway,
    local: String,
    arguments: Value,
    client: DeclaredClient,
    context: String,
}

impl Gateway {
    /// The run the call was last held under, answered within `within`.
    async fn held_run_within(
        &self,
        local: &str,
        arguments: &Value,
        client: &DeclaredClient,
        requester: &str,
        within: Duration,
    ) -> Option<String> {
        let key = crate::same::SameCall {
            gateway: self.inner.host.name(),
            requester: requester.trim(),
            tool: local,
            arguments,
            client: Some(client.name.as_str()),
        }
        .key();
        match self.inner.host.held(&key, within).await {
            Ok(held) => held.map(|h| h.run_id),
            Err(error) => {
                tracing::warn!(%error, "a held call's run cannot be read");
                None
            }
        }
    }
}
