//! Declaring from the servers page, by an operator who may declare
//! (`toolgate operator add NAME --may-declare`): a tool's own declaration
//! (`on`, `off`, `block`, `inherit`) and a server's approval flag (`on`,
//! `off`) — the console's acts (`toolgate tool set-approval`, `toolgate
//! server set-approval`) under the same binding.
//!
//! - **What tightens** (approval required, blocked, inherit over a server
//!   whose approval is on) is recorded at once.
//! - **What lets calls run unattended** (a tool's "no approval", inherit
//!   over a server whose approval is off, a server's approval off) is shown
//!   first, on a page of its own: every definition it covers as it is now
//!   and their digest, the one [`toolgate_store::Store::acceptance`] gives.
//!   Only the form on that page acts, carrying that digest; a definition
//!   changed since is refused with nothing recorded, as in the console.
//! - **Who**: a tool's declaration is recorded as the signed-in operator's,
//!   through the inbox (or the trusted proxy); a server's flag records no
//!   name in the store, as from the console, and the act is logged with
//!   the operator's name.
//!
//! Every form is a `POST` from the inbox's own origin carrying the
//! session's token against cross-site requests.

use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde_json::Value;
use toolgate::OperatorDeclaration;
use toolgate_store::{CatalogueRow, ServerRecord, Session, StoreError, ToolDeclaration, ToolGate};

use crate::guard::{decider, same_origin, session_of, token_matches};
use crate::pages::{base, page, shown};
use crate::run::DecideForm;
use crate::servers::{changed, value_text};
use crate::{Inbox, Refused};

/// The form beside a tool: its declaration, for an operator who may
/// declare.
pub(crate) fn tool_form(session: &Session, row: &CatalogueRow) -> Markup {
    html! {
        form.declare method="post" action={ (base(session)) "/servers/declare" } {
            input type="hidden" name="csrf" value=(session.csrf_token);
            input type="hidden" name="server" value=(row.server_id);
            input type="hidden" name="tool" value=(row.local_name);
            label {
                select name="setting" aria-label="its declaration" {
                    @for (word, says) in [
                        ("on", "on: approval required"),
                        ("block", "block: never offered"),
                        ("inherit", "inherit: the server's flag"),
                        ("off", "off: runs unattended (shown first)"),
                    ] {
                        @if word == row.declaration.word() {
                            option value=(word) selected { (says) }
                        } @else {
                            option value=(word) { (says) }
                        }
                    }
                }
            }
            " "
            button type="submit" { "Declare" }
        }
    }
}

/// The form beside a server's flag, for an operator who may declare.
pub(crate) fn server_form(session: &Session, server: &ServerRecord) -> Markup {
    let (word, says) = match server.approval {
        OperatorDeclaration::ApprovalRequired => ("off", "Turn approval off (shown first)"),
        OperatorDeclaration::NoApproval => ("on", "Turn approval on"),
    };
    html! {
        form.declare method="post" action={ (base(session)) "/servers/approval" } {
            input type="hidden" name="csrf" value=(session.csrf_token);
            input type="hidden" name="server" value=(server.id);
            input type="hidden" name="setting" value=(word);
            button type="submit" { (says) }
        }
    }
}

/// What a declaration form carried, checked: the session's, from the
/// inbox's origin, by an operator who may declare.
struct Checked {
    session: Session,
    form: DecideForm,
    fresh: String,
}

async fn checked(
    inbox: &Inbox,
    headers: &HeaderMap,
    key: &str,
    pairs: Vec<(String, String)>,
) -> Result<Result<Checked, Response>, Refused> {
    same_origin(inbox, headers)?;
    let (_, session) = session_of(inbox, headers, key).await?;
    let form = DecideForm::new(pairs).map_err(|_| Refused::BadToken)?;
    token_matches(&session, form.get("csrf"))?;
    let fresh = format!("{}/servers", base(&session));
    if !session.may_declare {
        return Ok(Err(refused(
            &session,
            StatusCode::FORBIDDEN,
            "you may not declare tools or servers from the inbox (an operator gives that with `toolgate operator add NAME --may-declare`); nothing was recorded",
            &fresh,
        )));
    }
    Ok(Ok(Checked {
        session,
        form,
        fresh,
    }))
}

fn refused(session: &Session, status: StatusCode, why: &str, fresh: &str) -> Response {
    (
        status,
        crate::pages::refused(Some(session), why, Some(fresh)),
    )
        .into_response()
}

/// The server a form names, as it is now; the news that it was removed
/// since the page was shown, when it was.
async fn server_now(
    inbox: &Inbox,
    session: &Session,
    id: &str,
    fresh: &str,
) -> Result<Result<ServerRecord, Response>, Refused> {
    match inbox.store().server(id).await {
        Ok(server) => Ok(Ok(server)),
        Err(StoreError::NoSuchServer(_)) => Ok(Err(changed(
            session,
            "There is no such server now: it was removed since this page was shown.",
            fresh,
        ))),
        Err(error) => Err(error.into()),
    }
}

/// Whether a tool in this gate runs without a person.
fn unattended(gate: ToolGate) -> bool {
    matches!(
        gate,
        ToolGate::Offered {
            approval: OperatorDeclaration::NoApproval,
            quarantine: None,
            ..
        }
    )
}

/// `POST /s/KEY/servers/declare`: `csrf`, `server`, `tool`, `setting`
/// (`on`, `off`, `block`, `inherit`); for what lets calls run unattended,
/// `digest` and `confirm=yes` from the page that showed the definition.
#[allow(
    clippy::too_many_lines,
    reason = "one act read top to bottom: the form, the tool as it is, shown first or recorded"
)]
pub(crate) async fn declare_tool(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path(key): Path<String>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Result<Response, Refused> {
    let Checked {
        session,
        form,
        fresh,
    } = match checked(&inbox, &headers, &key, pairs).await? {
        Ok(checked) => checked,
        Err(refusal) => return Ok(refusal),
    };
    let declaration = match form.get("setting") {
        "on" => ToolDeclaration::ApprovalRequired,
        "off" => ToolDeclaration::NoApproval,
        "block" => ToolDeclaration::Blocked,
        "inherit" => ToolDeclaration::Inherit,
        other => {
            return Ok(refused(
                &session,
                StatusCode::BAD_REQUEST,
                &format!(
                    "`{}` is no declaration: on, off, block or inherit; nothing was recorded",
                    toolgate::visible::visible(other)
                ),
                &fresh,
            ));
        }
    };
    let (server_id, local) = (form.get("server"), form.get("tool"));
    let store = inbox.store();
    let server = match server_now(&inbox, &session, server_id, &fresh).await? {
        Ok(server) => server,
        Err(changed) => return Ok(changed),
    };
    let Some(row) = store
        .catalogue(server_id)
        .await?
        .into_iter()
        .find(|row| row.local_name == local && !row.orphaned)
    else {
        return Ok(changed(
            &session,
            "There is no such tool now: it was removed since this page was shown.",
            &fresh,
        ));
    };
    let mut after = row.clone();
    after.declaration = declaration;
    // "No approval" pins the definition as reviewed: judged as pinned.
    if declaration == ToolDeclaration::NoApproval {
        after.pinned_definition = Some(row.definition());
    }
    let operator = decider(&inbox, &session)?;
    let reviewed = if unattended(after.gate(server.approval)) {
        let acceptance = store
            .acceptance(server_id, std::slice::from_ref(&row.local_name))
            .await?;
        if form.get("confirm") != "yes" {
            return Ok(shown_first(
                &session,
                &ShownFirst {
                    what: format!(
                        "`{}` declared `{}`: its calls run without a person",
                        row.local_name,
                        declaration.word()
                    ),
                    action: "/servers/declare",
                    fields: vec![
                        ("server", server.id.clone()),
                        ("tool", row.local_name.clone()),
                        ("setting", declaration.word().to_owned()),
                    ],
                    rows: vec![row],
                    digest: acceptance.digest,
                },
            ));
        }
        if form.get("digest") != acceptance.digest {
            return Ok(changed(
                &session,
                "Its definition changed since it was shown to you: nothing was declared. Review it as it is now.",
                &fresh,
            ));
        }
        declaration.lowers().then(|| form.get("digest"))
    } else {
        None
    };
    match store
        .declare_tool(server_id, local, declaration, reviewed, &operator)
        .await
    {
        Ok(_) => {
            tracing::info!(server = %server_id, tool = %local, declaration = declaration.word(), by = %session.operator, "a tool declared from the inbox");
            Ok(Redirect::to(&format!("{fresh}#server-{server_id}")).into_response())
        }
        Err(StoreError::CatalogueChanged { .. }) => Ok(changed(
            &session,
            "Its definition changed since it was shown to you: nothing was declared. Review it as it is now.",
            &fresh,
        )),
        Err(error) => Ok(refused(
            &session,
            StatusCode::CONFLICT,
            &format!("nothing was declared: {error}"),
            &fresh,
        )),
    }
}

/// `POST /s/KEY/servers/approval`: `csrf`, `server`, `setting` (`on`,
/// `off`); turning approval off takes `digest` and `confirm=yes` from the
/// page that showed every definition it covers.
pub(crate) async fn server_approval(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path(key): Path<String>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Result<Response, Refused> {
    let Checked {
        session,
        form,
        fresh,
    } = match checked(&inbox, &headers, &key, pairs).await? {
        Ok(checked) => checked,
        Err(refusal) => return Ok(refusal),
    };
    let declaration = match form.get("setting") {
        "on" => OperatorDeclaration::ApprovalRequired,
        "off" => OperatorDeclaration::NoApproval,
        other => {
            return Ok(refused(
                &session,
                StatusCode::BAD_REQUEST,
                &format!(
                    "`{}` is no setting of a server's approval: on or off; nothing was recorded",
                    toolgate::visible::visible(other)
                ),
                &fresh,
            ));
        }
    };
    let store = inbox.store();
    let server_id = form.get("server");
    let server = match server_now(&inbox, &session, server_id, &fresh).await? {
        Ok(server) => server,
        Err(changed) => return Ok(changed),
    };
    let reviewed = if declaration == OperatorDeclaration::NoApproval {
        let acceptance = store.acceptance(server_id, &[]).await?;
        if form.get("confirm") != "yes" {
            let rows = store
                .catalogue(server_id)
                .await?
                .into_iter()
                .filter(|row| !row.orphaned)
                .collect();
            return Ok(shown_first(
                &session,
                &ShownFirst {
                    what: format!(
                        "server `{}`'s approval off: the calls of its tools that do not declare otherwise run without a person",
                        server.id
                    ),
                    action: "/servers/approval",
                    fields: vec![("server", server.id.clone()), ("setting", "off".to_owned())],
                    rows,
                    digest: acceptance.digest,
                },
            ));
        }
        Some(form.get("digest"))
    } else {
        None
    };
    match store.set_approval(server_id, declaration, reviewed).await {
        Ok(_) => {
            tracing::info!(server = %server_id, approval = ?declaration, by = %session.operator, "a server's approval declared from the inbox");
            Ok(Redirect::to(&format!("{fresh}#server-{server_id}")).into_response())
        }
        Err(StoreError::CatalogueChanged { .. }) => Ok(changed(
            &session,
            "Its tools changed since they were shown to you: nothing was declared. Review them as they are now.",
            &fresh,
        )),
        Err(error) => Ok(refused(
            &session,
            StatusCode::CONFLICT,
            &format!("nothing was declared: {error}"),
            &fresh,
        )),
    }
}

/// What a declaration that lets calls run unattended shows first.
struct ShownFirst {
    what: String,
    /// Where the confirming form posts, under the session.
    action: &'static str,
    fields: Vec<(&'static str, String)>,
    rows: Vec<CatalogueRow>,
    digest: String,
}

fn shown_first(session: &Session, shown_first: &ShownFirst) -> Response {
    let definition = |row: &CatalogueRow, name: &str| {
        serde_json::from_str::<Value>(&row.definition())
            .ok()
            .and_then(|value| value.get(name).cloned())
            .unwrap_or(Value::Null)
    };
    page(
        "Shown first",
        Some(session),
        &html! {
            h1 { "Review what would run without a person" }
            p.news { (shown(&shown_first.what)) }
            p {
                "Each definition below is what the declaration covers, as it is now. A definition "
                "that changes later is quarantined and needs approval until it is accepted."
            }
            @for row in &shown_first.rows {
                section.quarantine {
                    h3 { code { (shown(&row.local_name)) } }
                    table.diff {
                        tr { th { "description" } td.new { (value_text(&definition(row, "description"))) } }
                        tr { th { "input schema" } td.new { (value_text(&definition(row, "input_schema"))) } }
                    }
                }
            }
            form.confirm method="post" action={ (base(session)) (shown_first.action) } {
                input type="hidden" name="csrf" value=(session.csrf_token);
                @for (name, value) in &shown_first.fields {
                    input type="hidden" name=(name) value=(value);
                }
                input type="hidden" name="digest" value=(shown_first.digest);
                input type="hidden" name="confirm" value="yes";
                button type="submit" { "Declare it, for these definitions" }
            }
            p.digest { "Bound to the digest " code { (shown_first.digest) } "." }
            p.back { a href={ (base(session)) "/servers" } { "Back to the servers, nothing declared" } }
        },
    )
    .into_response()
}
