//! A run's page, and the forms that decide it: a verdict on the turn or
//! call by call, input for a call that waits, "and from now on", and the
//! choice on a call whose outcome is unknown.

use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use toolgate::suspend::{CallVerdict, SuspendedRun, TurnDigest};
use toolgate_store::{Answer, ClaimError, Session};

use crate::finished::Finished;
use crate::guard::{decider, same_origin, session_of, token_matches};
use crate::resumer::Resumer;
use crate::{Inbox, Refused, confirm, form, gates, pages};

pub(crate) async fn run_page(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path((key, run)): Path<(String, String)>,
) -> Result<Response, Refused> {
    let (_, session) = session_of(&inbox, &headers, &key).await?;
    shown_run(&inbox, &session, &run, None).await
}

/// A run's page; with `retyped`, the decision form the operator posted,
/// sent back with the errors beside its fields (and the status 422).
async fn shown_run(
    inbox: &Inbox,
    session: &Session,
    run: &str,
    retyped: Option<form::Retyped>,
) -> Result<Response, Refused> {
    // Read first: a change while the run is read is sent to the page too.
    let since = crate::live::since(inbox).await;
    let history = inbox.store().run_history(run).await?;
    let paused = inbox.store().latest_suspended(run).await.ok();
    let unknown = inbox.store().unknown_calls(run).await?;
    if history.suspensions.is_empty() {
        return Ok((
            StatusCode::NOT_FOUND,
            pages::refused(Some(session), "there is no such run", None),
        )
            .into_response());
    }
    let may_declare = session.may_declare && inbox.inner.registry.is_some();
    let mut parts = parts(inbox, run, paused.as_ref(), &history).await;
    parts.since = since;
    let status = if retyped.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    parts.retyped = retyped;
    Ok((
        status,
        pages::run(
            session,
            run,
            paused.as_ref(),
            &history,
            &unknown,
            may_declare,
            &parts,
        ),
    )
        .into_response())
}

/// What a run's page shows beyond its turn and its decisions: each call's
/// gate, what ran and how the run ended, and who resumes it — each read on
/// its own, so one part that cannot be read leaves the others.
async fn parts(
    inbox: &Inbox,
    run: &str,
    paused: Option<&SuspendedRun>,
    history: &toolgate_store::RunHistory,
) -> pages::RunParts {
    let store = inbox.store();
    let gates = match paused {
        Some(paused) => gates::of_turn(inbox, paused).await,
        None => Vec::new(),
    };
    let finished = Finished {
        ran: store.ran_calls(run).await.map_err(|e| e.to_string()),
        answer: store.final_answer(run).await.map_err(|e| e.to_string()),
        client: store.client_outcomes(run).await.map_err(|e| e.to_string()),
    };
    let owner = history
        .suspensions
        .last()
        .map_or("", |latest| latest.owner.as_str());
    let resumer = if toolgate_store::is_reserved_host_name(owner) {
        Resumer::Client {
            gateway: owner.to_owned(),
        }
    } else {
        Resumer::Host(store.host_seen(owner).await.map_err(|e| e.to_string()))
    };
    pages::RunParts {
        gates,
        finished,
        resumer,
        now_ms: crate::now_ms(),
        since: None,
        retyped: None,
    }
}

/// A decision form's fields, each named once: `csrf`, `digest`, `verdict`
/// (`approve`, `deny`, `input` with `input` as JSON, `input-fields` with
/// the input's fields, or `calls` — then `call:ID` = `approve`, `deny`,
/// `form` or `edit` for each call, with `reason:ID`, the fields of the
/// call's arguments and `args:ID` as JSON). The fields built from a schema
/// are named as [`crate::form`] says.
pub(crate) struct DecideForm {
    fields: std::collections::BTreeMap<String, String>,
}

/// Why a decision form gives no answer.
/// The scope of the errors of a JSON box: `json:CALL` for a call's edited
/// arguments, `json:input` for input.
pub(crate) fn json_scope(of: &str) -> String {
    format!("json:{of}")
}

/// A JSON box's text read, and checked against `schema` (the one the
/// reviewer was shown) by the one validator: what does not read or fit is
/// said beside the box, each error at its place, and nothing recorded.
fn json_box(
    text: &str,
    schema: Option<&serde_json::Value>,
) -> Result<serde_json::Value, form::Placed> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|error| {
        form::Placed::from([(String::new(), vec![format!("this is not JSON: {error}")])])
    })?;
    if let Some(schema) = schema
        && let Err(errors) = toolgate::suspend::validate(schema, &value)
    {
        let mut placed = form::Placed::new();
        for error in errors {
            placed.entry(error.path).or_default().push(error.message);
        }
        return Err(placed);
    }
    Ok(value)
}

enum Wrong {
    /// The form is not one the inbox gave, or says nothing to record.
    Form(String),
    /// Fields built from a schema that do not fit it: the errors beside
    /// each, by scope. The page is sent back with them.
    Fields(std::collections::BTreeMap<String, form::Placed>),
}

impl From<String> for Wrong {
    fn from(why: String) -> Self {
        Wrong::Form(why)
    }
}

/// Refuses a plain approval of `call` whose arguments box, or whose
/// fields, no longer hold the arguments the call waits with: the operator
/// meant an edit, and approving as it is would run what they changed.
fn edited_but_approved(
    form: &DecideForm,
    paused: Option<&SuspendedRun>,
    call: &str,
) -> Result<(), String> {
    let pending = paused.map_or(&[][..], SuspendedRun::pending);
    let Some((index, waiting)) = pending.iter().enumerate().find(|(_, c)| c.id == call) else {
        return Ok(());
    };
    let scope = form::edit_scope(call);
    let posted = form::texts_in(&scope, form.fields());
    let fields_same = match paused.and_then(|paused| form::reviewed_schema(paused, index)) {
        Some(schema) if !posted.is_empty() => form::Form::of(schema)
            .ok()
            .and_then(|fields| fields.read(&posted).ok())
            .is_some_and(|read| read == waiting.arguments),
        _ => true,
    };
    let box_same = form.fields.get(&format!("args:{call}")).is_none_or(|text| {
        serde_json::from_str::<serde_json::Value>(text)
            .is_ok_and(|shown| shown == waiting.arguments)
    });
    if fields_same && box_same {
        Ok(())
    } else {
        Err(format!(
            "call `{}`: its arguments were edited, and its verdict is \"approve\", which runs the arguments it waits with — choose \"approve with these arguments\" to run the edited ones, or put them back",
            toolgate::visible::visible(call)
        ))
    }
}

impl DecideForm {
    /// The fields, or the first one named twice: a form whose meaning
    /// depends on which copy is read is refused.
    pub(crate) fn new(pairs: Vec<(String, String)>) -> Result<Self, String> {
        let mut fields = std::collections::BTreeMap::new();
        for (name, value) in pairs {
            if fields.contains_key(&name) {
                return Err(name);
            }
            fields.insert(name, value);
        }
        Ok(Self { fields })
    }

    /// Every field, by name.
    pub(crate) fn fields(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
    }

    pub(crate) fn get(&self, name: &str) -> &str {
        self.fields.get(name).map_or("", String::as_str)
    }

    /// The verdict call `call`'s fields give: its arguments edited, or
    /// approved as they are when the fields hold what it waits with — or
    /// the errors beside each field.
    fn edited_in_fields(
        &self,
        paused: Option<&SuspendedRun>,
        call: &str,
    ) -> Result<Result<CallVerdict, form::Placed>, Wrong> {
        let pending = paused.map_or(&[][..], SuspendedRun::pending);
        let Some((index, waiting)) = pending.iter().enumerate().find(|(_, c)| c.id == call) else {
            return Err(Wrong::Form(format!(
                "call `{}` does not wait",
                toolgate::visible::visible(call)
            )));
        };
        let Some(schema) = paused.and_then(|paused| form::reviewed_schema(paused, index)) else {
            return Err(Wrong::Form(format!(
                "call `{}`: the schema it was shown with is unknown; edit it as JSON",
                toolgate::visible::visible(call)
            )));
        };
        let fields = form::Form::of(schema).map_err(|form::JsonOnly(why)| {
            Wrong::Form(format!(
                "call `{}`: its arguments are edited as JSON only, not field by field: {why}",
                toolgate::visible::visible(call)
            ))
        })?;
        Ok(
            form::read_checked(&fields, schema, &form::edit_scope(call), self.fields()).map(
                |arguments| {
                    if arguments == waiting.arguments {
                        CallVerdict::Approve
                    } else {
                        CallVerdict::Edit { arguments }
                    }
                },
            ),
        )
    }

    /// The answer the form gives, or why it gives none. `paused` is the
    /// run as it waits (none when it could not be read): a call approved
    /// as it is whose arguments box or fields were edited is refused, never
    /// run with the arguments the operator changed their mind about.
    /// Fields built from a schema are read back and checked against it —
    /// the schema the reviewer was shown, or the one the input asked for —
    /// and every call's errors are gathered; arguments edited in fields
    /// back to what the call waits with approve it as it is.
    /// Call `call`'s arguments edited in its JSON box, read and checked
    /// against the schema the reviewer was shown.
    fn edited_as_json(
        &self,
        paused: Option<&SuspendedRun>,
        call: &str,
    ) -> Result<serde_json::Value, form::Placed> {
        let schema = paused.and_then(|paused| {
            let index = paused.pending().iter().position(|c| c.id == call)?;
            form::reviewed_schema(paused, index)
        });
        json_box(self.get(&format!("args:{call}")), schema)
    }

    fn answer(&self, paused: Option<&SuspendedRun>) -> Result<Answer, Wrong> {
        let pending = paused.map_or(&[][..], SuspendedRun::pending);
        match self.get("verdict") {
            "approve" => Ok(Answer::Approve),
            // Every call denied, with the reason the model reads when one
            // is given — the console's `runs deny --reason`.
            "deny" => {
                let reason = self.get("reason").trim();
                if reason.is_empty() || pending.is_empty() {
                    Ok(Answer::Deny)
                } else {
                    Ok(Answer::Calls(
                        pending
                            .iter()
                            .map(|call| {
                                (
                                    call.id.clone(),
                                    CallVerdict::Deny {
                                        reason: reason.to_owned(),
                                    },
                                )
                            })
                            .collect(),
                    ))
                }
            }
            "input" => {
                let schema = match paused {
                    Some(SuspendedRun::WaitingForInput(waiting)) => {
                        Some(waiting.input_schema().as_value())
                    }
                    _ => None,
                };
                json_box(self.get("input"), schema)
                    .map(Answer::Input)
                    .map_err(|placed| Wrong::Fields([(json_scope("input"), placed)].into()))
            }
            "input-fields" => {
                let Some(SuspendedRun::WaitingForInput(waiting)) = paused else {
                    return Err(Wrong::Form("the run does not wait for input".to_owned()));
                };
                let schema = waiting.input_schema().as_value();
                let fields = form::Form::of(schema).map_err(|form::JsonOnly(why)| {
                    Wrong::Form(format!(
                        "this input is given as JSON only, not field by field: {why}"
                    ))
                })?;
                form::read_checked(&fields, schema, form::INPUT_SCOPE, self.fields())
                    .map(Answer::Input)
                    .map_err(|placed| {
                        Wrong::Fields([(form::INPUT_SCOPE.to_owned(), placed)].into())
                    })
            }
            "calls" => {
                let mut calls = std::collections::BTreeMap::new();
                let mut wrong = std::collections::BTreeMap::new();
                for (name, choice) in &self.fields {
                    let Some(call) = name.strip_prefix("call:") else {
                        continue;
                    };
                    let verdict = match choice.as_str() {
                        "approve" => {
                            edited_but_approved(self, paused, call)?;
                            CallVerdict::Approve
                        }
                        "form" => match self.edited_in_fields(paused, call)? {
                            Ok(verdict) => verdict,
                            Err(placed) => {
                                wrong.insert(form::edit_scope(call), placed);
                                continue;
                            }
                        },
                        "deny" => CallVerdict::Deny {
                            reason: self.get(&format!("reason:{call}")).trim().to_owned(),
                        },
                        "edit" => match self.edited_as_json(paused, call) {
                            Ok(arguments) => CallVerdict::Edit { arguments },
                            Err(placed) => {
                                wrong.insert(json_scope(call), placed);
                                continue;
                            }
                        },
                        other => {
                            return Err(Wrong::Form(format!(
                                "call `{}`: `{}` is no verdict (approve, deny, form or edit)",
                                toolgate::visible::visible(call),
                                toolgate::visible::visible(other)
                            )));
                        }
                    };
                    calls.insert(call.to_owned(), verdict);
                }
                if wrong.is_empty() {
                    Ok(Answer::Calls(calls))
                } else {
                    Err(Wrong::Fields(wrong))
                }
            }
            _ => Err(Wrong::Form(
                "the form names no verdict: approve, deny, call by call, or input".to_owned(),
            )),
        }
    }
}

pub(crate) async fn decide(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path((key, run)): Path<(String, String)>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Result<Response, Refused> {
    same_origin(&inbox, &headers)?;
    let (_, session) = session_of(&inbox, &headers, &key).await?;
    let bad_form = |why: String| {
        (
            StatusCode::BAD_REQUEST,
            pages::refused(Some(&session), &why, None),
        )
            .into_response()
    };
    // A field named twice: no form the inbox gave names one twice.
    let form = DecideForm::new(pairs).map_err(|twice| {
        tracing::warn!(field = %toolgate::visible::visible(&twice), "a decision form names a field twice");
        Refused::BadToken
    })?;
    token_matches(&session, form.get("csrf"))?;
    // Whatever is wrong with the run is the decision's to say.
    let paused = inbox.store().load_suspended(&run).await.ok();
    let digest = TurnDigest::from_text(form.get("digest"));
    let fresh = format!(
        "{}/runs/{}",
        pages::base(&session),
        pages::path_segment(&run)
    );
    let answer = match form.answer(paused.as_ref()) {
        Ok(answer) => answer,
        Err(Wrong::Form(why)) => return Ok(bad_form(why)),
        // Fields that do not fit: the page again, as the operator typed
        // it, the errors beside each field; nothing recorded. A run that
        // changed since is news instead.
        Err(Wrong::Fields(errors)) => {
            if paused
                .as_ref()
                .is_none_or(|paused| paused.digest() != digest)
            {
                return Ok(changed(&inbox, &session, &run, &fresh).await);
            }
            let retyped = form::Retyped {
                fields: form
                    .fields()
                    .filter(|(name, _)| *name != "csrf" && *name != confirm::CONFIRM.0)
                    .map(|(name, value)| (name.to_owned(), value.to_owned()))
                    .collect(),
                errors,
            };
            return shown_run(&inbox, &session, &run, Some(retyped)).await;
        }
    };
    let decider = decider(&inbox, &session)?;
    let allow_tool = form.get("allow_tool").trim();
    // An approval of a write asks once more, with the same fields — when
    // the run would take it: a refusal is said at once.
    if let Some(paused) = &paused
        && form.get(confirm::CONFIRM.0) != confirm::CONFIRM.1
        && let Ok(history) = inbox.store().run_history(&run).await
        && confirm::run_would_take(paused, &history, &answer, &digest, decider.name())
        && (allow_tool.is_empty() || may_declare_here(&inbox, &session, paused))
    {
        let writes = confirm::approved_writes(paused, &answer);
        if !writes.is_empty() {
            return Ok(confirm::ask(&session, &run, &writes, &answer, &form).into_response());
        }
    }
    if !allow_tool.is_empty() {
        return from_now_on(&inbox, &session, &run, &digest, answer, allow_tool, &fresh).await;
    }
    match inbox
        .store()
        .decide(&run, Some(&digest), &decider, answer)
        .await
    {
        Ok(_) => Ok(Redirect::to(&fresh).into_response()),
        Err(
            ClaimError::StaleDigest { .. }
            | ClaimError::NotFound(_)
            | ClaimError::AlreadyDecided { .. },
        ) => Ok(changed(&inbox, &session, &run, &fresh).await),
        Err(error) => Ok((
            StatusCode::FORBIDDEN,
            pages::refused(Some(&session), &error.to_string(), Some(&fresh)),
        )
            .into_response()),
    }
}

/// Whether "and from now on" may be taken here, on `paused`: the
/// operator may declare, the inbox knows the tools, and nothing binds the
/// run against it — what [`from_now_on`] and the store refuse otherwise.
fn may_declare_here(inbox: &Inbox, session: &Session, paused: &SuspendedRun) -> bool {
    session.may_declare
        && inbox.inner.registry.is_some()
        && toolgate::audit::standing_declaration_problem(&paused.state().options).is_none()
}

/// A run that changed under the operator's form — decided elsewhere, or
/// paused afresh — told as news, not as an alarm: where it stands now,
/// who decided it and through which channel, and the way to it. Nothing
/// was recorded.
async fn changed(inbox: &Inbox, session: &Session, run: &str, fresh: &str) -> Response {
    let history = inbox.store().run_history(run).await.ok();
    let latest = history.as_ref().and_then(|h| h.suspensions.last());
    let decision = history.as_ref().and_then(|h| {
        h.decisions
            .iter()
            .rev()
            .find(|d| d.record.voided.is_none() && !d.partial)
    });
    let (headline, what) = match (latest, decision) {
        (Some(latest), _) if latest.state == "open" => (
            "The run changed",
            format!(
                "This run changed since the page was shown: it was paused afresh, and waits for a decision on its turn as it is now ({})",
                latest.standing()
            ),
        ),
        (Some(latest), Some(decision)) => (
            "Decided elsewhere",
            format!(
                "This run changed since the page was shown: {} by {}{}, and now {}",
                decision.record.verdict.as_str(),
                decision.record.decided_by,
                decision
                    .record
                    .channel
                    .map(|channel| format!(" through {}", channel.as_str()))
                    .unwrap_or_default(),
                latest.standing()
            ),
        ),
        _ => (
            "The run changed",
            "This run changed since the page was shown, and no longer waits for a decision"
                .to_owned(),
        ),
    };
    (
        StatusCode::CONFLICT,
        pages::news(session, headline, &what, fresh),
    )
        .into_response()
}

/// An approval "and from now on": the decision, and `tool` declared "no
/// approval" — only for an operator given that power, only where the
/// inbox can tell the tool is, now, the one the reviewer was shown.
async fn from_now_on(
    inbox: &Inbox,
    session: &Session,
    run: &str,
    digest: &TurnDigest,
    answer: Answer,
    tool: &str,
    fresh: &str,
) -> Result<Response, Refused> {
    let refused = |status: StatusCode, why: String| {
        Ok((status, pages::refused(Some(session), &why, Some(fresh))).into_response())
    };
    let Some(registry) = inbox
        .inner
        .registry
        .as_ref()
        .filter(|_| session.may_declare)
    else {
        return refused(
            StatusCode::FORBIDDEN,
            "you may not declare tools from the inbox (an operator gives that with `toolgate operator add NAME --may-declare`); nothing was recorded".to_owned(),
        );
    };
    let Some((server, _)) = tool.split_once('.') else {
        return refused(
            StatusCode::BAD_REQUEST,
            format!(
                "`{}` is not an imported tool; nothing was recorded",
                toolgate::visible::visible(tool)
            ),
        );
    };
    let decider = decider(inbox, session)?;
    let shown = match inbox.store().acceptance(server, &[tool.to_owned()]).await {
        Ok(acceptance) => acceptance.digest,
        Err(error) => return refused(StatusCode::FORBIDDEN, error.to_string()),
    };
    let Ok(SuspendedRun::AwaitingApproval(waiting)) = inbox.store().load_suspended(run).await
    else {
        return Ok(changed(inbox, session, run, fresh).await);
    };
    let now = waiting.reviewed_again(registry).await;
    let binding = toolgate_store::FromNowOn {
        tool,
        shown: &shown,
        now: now.review(),
    };
    match inbox
        .store()
        .decide_and_allow_tool(run, Some(digest), &decider, answer, binding)
        .await
    {
        Ok(allowed) => match allowed.declared {
            Ok(_) => Ok(Redirect::to(fresh).into_response()),
            Err(error) => refused(
                StatusCode::CONFLICT,
                format!(
                    "the call is approved, but tool `{}` was not declared: {error}",
                    toolgate::visible::visible(tool)
                ),
            ),
        },
        Err(
            ClaimError::StaleDigest { .. }
            | ClaimError::NotFound(_)
            | ClaimError::AlreadyDecided { .. },
        ) => Ok(changed(inbox, session, run, fresh).await),
        Err(error) => refused(StatusCode::FORBIDDEN, error.to_string()),
    }
}

/// Run again, or not, a call whose outcome is unknown: `csrf`, `call`,
/// `digest` (the one shown beside the call), `choice` (`rerun` or `skip`)
/// and `reason`.
pub(crate) async fn choose(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path((key, run)): Path<(String, String)>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Result<Response, Refused> {
    same_origin(&inbox, &headers)?;
    let (_, session) = session_of(&inbox, &headers, &key).await?;
    let form = DecideForm::new(pairs).map_err(|_| Refused::BadToken)?;
    token_matches(&session, form.get("csrf"))?;
    let choice = match form.get("choice") {
        "rerun" => toolgate_store::Choice::Rerun,
        "skip" => toolgate_store::Choice::Skip,
        _ => {
            return Ok((
                StatusCode::BAD_REQUEST,
                pages::refused(
                    Some(&session),
                    "the form names no choice: rerun or skip",
                    None,
                ),
            )
                .into_response());
        }
    };
    let decider = decider(&inbox, &session)?;
    let digest = toolgate::suspend::RerunDigest::from_text(form.get("digest"));
    let choosing = toolgate_store::Choosing {
        call_id: form.get("call"),
        digest: &digest,
        choice,
        reason: form.get("reason"),
    };
    let fresh = format!(
        "{}/runs/{}",
        pages::base(&session),
        pages::path_segment(&run)
    );
    match inbox.store().choose(&run, &decider, &choosing).await {
        Ok(_) => Ok(Redirect::to(&fresh).into_response()),
        Err(error) => Ok((
            StatusCode::FORBIDDEN,
            pages::refused(Some(&session), &error.to_string(), Some(&fresh)),
        )
            .into_response()),
    }
}
