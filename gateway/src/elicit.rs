//! The requester's own client asked to decide a held call: an
//! `elicitation/create` in form mode, sent while the call is held, to a
//! client that declared it can show forms — when the store says such an
//! answer may decide the run ([`toolgate_store::Store::elicitation_refused`]:
//! the server's operator turned elicitation on, no four eyes, one approver,
//! no builtin).
//!
//! The form asks one thing: approve or deny, with an optional reason. Only
//! an accepted form decides: "approve" approves, "deny" denies with the
//! reason. A declined or cancelled form — some clients decline without
//! asking anyone — leaves the run to the operators: a recorded denial would
//! answer that call for ever. The answer is recorded as the requester's,
//! through the elicitation channel, by the same conditional update as an
//! operator's decision: of the two, exactly one wins, and the other is
//! refused as decided already.
//!
//! A client of the stateless protocol (2026-07-28), which takes no request
//! from a server, is sent the same form in the answer to its call, and its
//! answer is read and recorded here too (see `mrtr`).

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    EnumSchema,
};
use toolgate::audit::{CallVerdict, DecisionKind, DecisionRecord};
use toolgate::identity::{Channel, IdentitySource, Operator};
use toolgate::suspend::{SuspendedRun, TurnDigest};
use toolgate_store::{Answer, ClaimError, Recorded};

use crate::Gateway;

/// The most characters of the arguments a form shows.
const SHOWN_ARGUMENTS: usize = 2000;

/// Whether a client that declared `capabilities` shows forms: an
/// `elicitation` capability with `form` — or, as protocols before
/// 2025-11-25 declared it, with neither mode named.
pub(crate) fn shows_forms(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities.is_some_and(|capabilities| {
        capabilities
            .elicitation
            .as_ref()
            .is_some_and(|modes| modes.form.is_some() || modes.url.is_none())
    })
}

/// What an answered form decides, when it decides: only an accepted form
/// with "approve" or "deny" does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FormAnswer {
    /// Run the call once.
    Approve,
    /// Do not run it; the model reads the reason (may be empty).
    Deny {
        /// Why.
        reason: String,
    },
}

impl FormAnswer {
    /// What `answered` decides; `None` for a declined or cancelled form, or
    /// an accepted one that says neither.
    pub(crate) fn of(answered: &ElicitResult) -> Option<Self> {
        if answered.action != ElicitationAction::Accept {
            return None;
        }
        let content = answered.content.as_ref()?;
        match content
            .get("decision")
            .and_then(serde_json::Value::as_str)?
        {
            "approve" => Some(Self::Approve),
            "deny" => Some(Self::Deny {
                reason: content
                    .get("reason")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            }),
            _ => None,
        }
    }

    /// The answer as the store records it for `run`: every pending call
    /// denied with the reason, or the turn approved.
    fn answer(&self, run: &SuspendedRun) -> Answer {
        match self {
            Self::Approve => Answer::Approve,
            Self::Deny { reason } => Answer::Calls(
                run.pending()
                    .iter()
                    .map(|call| {
                        (
                            call.id.clone(),
                            CallVerdict::Deny {
                                reason: reason.clone(),
                            },
                        )
                    })
                    .collect::<BTreeMap<_, _>>(),
            ),
        }
    }

    /// True when `record` is this answer, standing: the requester's own,
    /// through the elicitation channel, with the same verdict (and, for a
    /// denial, the same reason on every call).
    pub(crate) fn is_recorded_in(&self, record: &DecisionRecord) -> bool {
        let by_the_requester = record.voided.is_none()
            && record.channel == Some(Channel::Elicitation)
            && toolgate::identity::same_person(&record.decided_by, &record.requested_by);
        let verdict = match self {
            Self::Approve => {
                record.verdict == DecisionKind::Approved
                    && record
                        .calls
                        .iter()
                        .filter_map(|call| call.verdict.as_ref())
                        .all(|verdict| *verdict == CallVerdict::Approve)
            }
            Self::Deny { reason } => record.verdict == DecisionKind::Denied
                && record
                    .calls
                    .iter()
                    .filter_map(|call| call.verdict.as_ref())
                    .all(
                        |verdict| matches!(verdict, CallVerdict::Deny { reason: r } if r == reason),
                    ),
        };
        by_the_requester && verdict
    }
}

impl Gateway {
    /// Records `answer` on `run`, paused on the turn `digest`, as its
    /// requester's own through the elicitation channel: the same
    /// conditional update as an operator's decision, so that of the two
    /// exactly one wins.
    pub(crate) async fn record_form(
        &self,
        run: &SuspendedRun,
        digest: &TurnDigest,
        answer: &FormAnswer,
    ) -> Result<Recorded, ClaimError> {
        let requester = Operator::new(&run.state().requested_by, IdentitySource::Given)
            .map_err(|error| ClaimError::Refused {
                run_id: run.run_id().to_owned(),
                reason: toolgate::suspend::Refusal::InvalidIdentity(error),
            })?
            .via(Channel::Elicitation);
        self.inner
            .host
            .store()
            .decide(run.run_id(), Some(digest), &requester, answer.answer(run))
            .await
    }

    /// Asks the client behind `peer` to decide the held run `run_id`, for
    /// at most `within`; records its answer when it accepted the form.
    pub(crate) async fn elicit(
        &self,
        peer: rmcp::Peer<RoleServer>,
        run_id: String,
        within: Duration,
    ) {
        let store = self.inner.host.store();
        // Decided already, waiting for input, or unreadable: no form.
        let Ok(run @ SuspendedRun::AwaitingApproval(_)) = store.load_suspended(&run_id).await
        else {
            return;
        };
        match store.elicitation_refused(&run).await {
            Ok(None) => {}
            Ok(Some(why)) => {
                tracing::debug!(run = %run_id, %why, "the client is not asked to decide its call");
                return;
            }
            Err(error) => {
                tracing::warn!(run = %run_id, %error, "cannot tell whether the client may decide its call; it is not asked");
                return;
            }
        }
        let Some(params) = form(&run, self.inner.host.name()) else {
            return;
        };
        tracing::info!(run = %run_id, "the client is asked to decide its held call");
        let answered = match peer
            .create_elicitation_with_timeout(params, Some(within))
            .await
        {
            Ok(answered) => answered,
            Err(error) => {
                tracing::info!(run = %run_id, %error, "the client gave no answer to the form; the run waits for an operator");
                return;
            }
        };
        let Some(answer) = FormAnswer::of(&answered) else {
            tracing::info!(run = %run_id, action = ?answered.action, "the client's form decided nothing; the run waits for an operator");
            return;
        };
        match self.record_form(&run, &run.digest(), &answer).await {
            Ok(recorded) => {
                tracing::info!(run = %run_id, verdict = %recorded.record.verdict.as_str(), "the client's own user decided the held call");
            }
            Err(ClaimError::AlreadyDecided { .. }) => {
                tracing::info!(run = %run_id, "an operator decided the call first; the client's answer is not recorded");
            }
            Err(error) => {
                tracing::warn!(run = %run_id, %error, "the client's answer was refused");
            }
        }
    }
}

/// The form for a held run of one call: what it asks to run, escaped, and
/// approve or deny. Never the digest or anything secret: the client's
/// model may read it.
pub(crate) fn form(run: &SuspendedRun, gateway: &str) -> Option<ElicitRequestParams> {
    let call = run.pending().first()?;
    // On one line: a form shows the text as it is, and the escaping below
    // would write a line break as `\u{a}`.
    let arguments = serde_json::to_string(&call.arguments).unwrap_or_default();
    let shown = toolgate::visible::visible(&arguments);
    let mut arguments: String = shown.chars().take(SHOWN_ARGUMENTS).collect();
    if arguments.len() < shown.len() {
        arguments.push('…');
    }
    let state = run.state();
    let message = format!(
        "toolgate: a tool call waits for approval.\n\nTool: {tool}\nAsked by: {who}, through gateway `{gateway}`{client}\nArguments:\n{arguments}\n\nApprove runs it once; deny answers the call with your reason. (Run {run})",
        tool = toolgate::visible::visible(&call.name),
        who = toolgate::visible::visible(&state.requested_by),
        client = state.client.as_ref().map_or_else(String::new, |c| format!(
            " (client `{}`)",
            toolgate::visible::visible(&c.name)
        )),
        run = run.run_id(),
    );
    let decision = EnumSchema::builder(vec!["approve".to_owned(), "deny".to_owned()])
        .enum_titles(vec![
            "Approve: run it once".to_owned(),
            "Deny: do not run it".to_owned(),
        ])
        .ok()?
        .build();
    let schema = ElicitationSchema::builder()
        .required_enum_schema("decision", decision)
        .optional_string("reason")
        .build()
        .ok()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: schema,
    })
}
