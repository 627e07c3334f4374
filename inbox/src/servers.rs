//! The servers and their tools (`/s/KEY/servers`): what each server's
//! operator declared — its approval flag as the gate reads it, its data
//! class, its state and last import — and, per tool, its wire name, its
//! gate and why ([`ToolGate::words`], what `toolgate server show` and
//! `toolgate tools` say), its own declaration and who made it; a
//! quarantined tool with what changed since it was accepted and the digest
//! `toolgate server accept` takes.
//!
//! An operator who may declare declares there too ([`crate::declare`]): a
//! server's approval and each tool's own, what tightens at once, what lets
//! calls run without a person shown first and bound to the digest of the
//! definitions shown. The other act it offers is accepting a tool
//! quarantined under its own "no approval" declaration: a form carrying
//! the digest of the definition shown, recorded as that operator's
//! declaration through the inbox; a definition changed again since the
//! page was shown is refused, and nothing is recorded.

use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde_json::Value;
use toolgate::visible::visible_json;
use toolgate::{DeclarationScope, OperatorDeclaration};
use toolgate_store::{
    CatalogueRow, Quarantine, ServerRecord, Session, StoreError, ToolDeclaration, ToolGate,
};

use crate::guard::{decider, same_origin, session_of, token_matches};
use crate::pages::{at, base, page, shown};
use crate::run::DecideForm;
use crate::{Inbox, Refused};

/// One tool as the page shows it.
struct ToolView {
    row: CatalogueRow,
    gate: ToolGate,
    /// Its wire name as the hosts' registry offers it; `None` when it is
    /// not offered there (blocked, on an inert server, left out).
    wire: Option<String>,
    /// For a quarantined tool, the digest accepting it alone carries
    /// ([`toolgate_store::Store::acceptance`]), or why it could not be
    /// read.
    digest: Option<Result<String, String>>,
}

/// One server and its tools.
struct ServerView {
    server: ServerRecord,
    tools: Vec<ToolView>,
}

pub(crate) async fn servers(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path(key): Path<String>,
) -> Result<Response, Refused> {
    let (_, session) = session_of(&inbox, &headers, &key).await?;
    let store = inbox.store();
    let catalogue = match &inbox.inner.registry {
        Some(registry) => Some(registry.catalogue().await),
        None => None,
    };
    let mut views = Vec::new();
    for server in store.servers().await? {
        let mut tools = Vec::new();
        for row in store.catalogue(&server.id).await? {
            let gate = row.gate(server.approval);
            let wire = catalogue
                .as_ref()
                .and_then(|c| c.wire_name(&row.local_name))
                .map(str::to_owned);
            let digest = if gate.quarantine().is_some() && !row.orphaned {
                Some(
                    store
                        .acceptance(&server.id, std::slice::from_ref(&row.local_name))
                        .await
                        .map(|acceptance| acceptance.digest)
                        .map_err(|error| error.to_string()),
                )
            } else {
                None
            };
            tools.push(ToolView {
                row,
                gate,
                wire,
                digest,
            });
        }
        views.push(ServerView { server, tools });
    }
    Ok(page(
        "Servers and tools",
        Some(&session),
        &html! {
            h1 { "Servers and tools" }
            p {
                "What each server's operator declared, and each tool's gate and why — "
                "as " code { "toolgate server show" } " and " code { "toolgate tools" } " say it. "
                "Everything a server wrote (names, descriptions, schemas) is shown as text."
            }
            (how_to_change())
            @if catalogue.is_none() {
                p.note {
                    "This inbox was started without the hosts' tools, so it cannot say the "
                    "wire names a model or an MCP client is sent."
                }
            }
            @if views.is_empty() {
                p { "No server is registered: " code { "toolgate server add" } "." }
            }
            @for view in &views {
                (server_section(&session, view, catalogue.is_some()))
            }
        },
    )
    .into_response())
}

/// Where a gate is lowered, and why not here; where a quarantined tool is
/// accepted.
fn how_to_change() -> Markup {
    html! {
        p.note {
            "An operator who may declare (" code { "toolgate operator add NAME --may-declare" } ") "
            "declares a server's approval and each tool's own here, as "
            code { "toolgate server set-approval" } " and " code { "toolgate tool set-approval" }
            " do: what tightens is recorded at once; what lets calls run without a person is "
            "shown first — every definition it covers and their digest — and acts only on that "
            "digest, a deliberate act bound to what was reviewed. A quarantined tool is accepted "
            "as shown below: here, when it is held under its own declaration; otherwise with "
            code { "toolgate server accept" } " and the digest beside it."
        }
    }
}

/// The server's flag as the gate reads it — fail-closed: only the exact
/// value the typed write path stores for "off" is off — and what is stored.
fn approval(server: &ServerRecord) -> Markup {
    html! {
        @match server.approval {
            OperatorDeclaration::ApprovalRequired => { "required" }
            OperatorDeclaration::NoApproval => { "off" }
        }
        " " small { "(stored: " (shown(&server.stored_flag.to_string())) ")" }
    }
}

fn server_section(session: &Session, view: &ServerView, with_wire: bool) -> Markup {
    let server = &view.server;
    html! {
        section.server id={ "server-" (server.id) } {
            h2 { (shown(&server.name)) " " code { (shown(&server.id)) } }
            table.facts {
                tr {
                    th { "approval (the operator's declaration)" }
                    th { "data class" }
                    th { "state" }
                    th { "last import" }
                }
                tr {
                    td { (approval(server)) }
                    td {
                        @match (&server.data_class, &server.data_class_stored) {
                            (Some(class), _) => { code { (class.as_str()) } }
                            (None, Some(stored)) => { "unknown: " code { (shown(stored)) } ", inert" }
                            (None, None) => { "undeclared: inert" }
                        }
                    }
                    td {
                        @if server.enabled { "enabled" } @else { "disabled" }
                        ", "
                        @match server.inert_reason() {
                            Some(why) => span.problem { "inert: " (shown(&why)) }
                            None => { "usable" }
                        }
                    }
                    td {
                        (shown(&server.import.status))
                        @if let Some(when) = server.import.at { " at " (at(when)) }
                        @if let Some(error) = &server.import.error { ": " (shown(error)) }
                    }
                }
            }
            @if session.may_declare {
                (crate::declare::server_form(session, server))
            }
            @if view.tools.is_empty() {
                p { "No tool imported: " code { "toolgate import " (shown(&server.id)) } "." }
            } @else {
                table.tools {
                    tr {
                        th { "tool" }
                        th { "gate" }
                        th { "its own declaration" }
                        th { "description (as the server wrote it)" }
                        @if session.may_declare { th { "declare" } }
                    }
                    @for tool in &view.tools {
                        (tool_row(session, tool, with_wire))
                    }
                }
                @for tool in view.tools.iter().filter(|t| t.gate.quarantine().is_some() && !t.row.orphaned) {
                    (quarantined(session, server, tool))
                }
            }
        }
    }
}

fn tool_row(session: &Session, tool: &ToolView, with_wire: bool) -> Markup {
    let row = &tool.row;
    html! {
        tr.tool {
            td {
                code { (shown(&row.local_name)) }
                @if with_wire {
                    span.local {
                        @match &tool.wire {
                            Some(wire) => { "wire name " code { (shown(wire)) } }
                            None => { "not offered" }
                        }
                    }
                }
                @if row.remote_name != row.local_name.split_once('.').map_or("", |(_, rest)| rest) {
                    span.local { "the server's name " code { (shown(&row.remote_name)) } }
                }
                @if row.orphaned { span.problem { "orphaned: the server no longer lists it" } }
            }
            td.gate {
                @if tool.gate.quarantine().is_some() { span.problem { "quarantined" } " " }
                (tool.gate.words())
            }
            td {
                code { (row.declaration.word()) }
                @if row.declaration == ToolDeclaration::Unreadable {
                    " " small { "(stored: " (shown(&row.stored_declaration.to_string())) "; read as approval required)" }
                }
                @if let Some(declared) = &row.declared {
                    span.local {
                        "by " (shown(&declared.by)) " (" (shown(&declared.source)) ") through "
                        (shown(&declared.channel)) ", " span.when { (at(declared.at)) }
                    }
                }
            }
            td.description { (shown(&row.description)) }
            @if session.may_declare {
                td { @if !row.orphaned { (crate::declare::tool_form(session, row)) } }
            }
        }
    }
}

/// A quarantined tool: why, what differs from the definition accepted,
/// and the digest that accepts it as it is now.
fn quarantined(session: &Session, server: &ServerRecord, tool: &ToolView) -> Markup {
    let row = &tool.row;
    let now: Value = serde_json::from_str(&row.definition()).unwrap_or(Value::Null);
    let before: Option<Value> = row
        .pinned_definition
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok());
    let field = |value: &Value, name: &str| value.get(name).cloned().unwrap_or(Value::Null);
    html! {
        section.quarantine {
            h3 { "Quarantined: " code { (shown(&row.local_name)) } }
            @if let Some(why) = tool.gate.quarantine() {
                p {
                    "Why: " (why.as_str()) ". It requires approval until an operator accepts it as it is now."
                }
            }
            @match (&before, tool.gate.quarantine()) {
                (Some(before), Some(Quarantine::Changed)) => {
                    table.diff {
                        tr { th {} th { "accepted" } th { "now" } }
                        @for (name, label) in [("description", "description"), ("input_schema", "input schema"), ("annotations", "server's claims (not used)"), ("name", "the server's name")] {
                            @let (old, new) = (field(before, name), field(&now, name));
                            @if old != new {
                                tr { th { (label) } td.old { (value_text(&old)) } td.new { (value_text(&new)) } }
                            }
                        }
                    }
                }
                _ => {
                    p { "No definition of it was accepted before. As it is now:" }
                    table.diff {
                        tr { th { "description" } td.new { (value_text(&field(&now, "description"))) } }
                        tr { th { "input schema" } td.new { (value_text(&field(&now, "input_schema"))) } }
                    }
                }
            }
            @match &tool.digest {
                Some(Ok(digest)) => {
                    @if session.may_declare && acceptable_here(tool.gate) {
                        form.accept method="post" action={ (base(session)) "/servers/accept" } {
                            input type="hidden" name="csrf" value=(session.csrf_token);
                            input type="hidden" name="server" value=(server.id);
                            input type="hidden" name="tool" value=(row.local_name);
                            input type="hidden" name="digest" value=(digest);
                            button type="submit" { "Accept this definition: " (shown(&row.local_name)) " runs unattended as shown" }
                        }
                        p.digest { "Recorded as your declaration, for the definition of digest " code { (digest) } "." }
                    } @else {
                        p { "To accept it as shown here, from the console:" }
                        pre.command {
                            "toolgate server accept " (shown(&server.id)) " " (shown(&row.local_name)) " --digest " (digest)
                        }
                    }
                }
                Some(Err(why)) => { p.refusal { "Its digest could not be read: " (shown(why)) } }
                None => {}
            }
        }
    }
}

/// A definition's field as text: a string with its line breaks, anything
/// else as JSON — hidden characters escaped in both.
pub(crate) fn value_text(value: &Value) -> Markup {
    match value {
        Value::String(text) => {
            html! { pre.text { bdi { (toolgate::visible::visible_lines(text)) } } }
        }
        other => html! { pre.json { bdi { (visible_json(other)) } } },
    }
}

/// Whether the inbox accepts a tool in this gate: quarantined under its
/// own "no approval", which accepting declares again for the definition as
/// it is now, recorded with who accepted it. One quarantined under its
/// server's flag is accepted from the console (`toolgate server accept`).
fn acceptable_here(gate: ToolGate) -> bool {
    matches!(
        gate,
        ToolGate::Offered {
            approval: OperatorDeclaration::NoApproval,
            scope: DeclarationScope::Tool,
            quarantine: Some(_),
        }
    )
}

/// Accepts a quarantined tool from the page: `csrf`, `server`, `tool` and
/// `digest` — the digest of the definition the page showed. Recorded as the
/// signed-in operator's "no approval" declaration for that definition,
/// through the inbox; a definition changed since is refused with nothing
/// recorded.
pub(crate) async fn accept(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path(key): Path<String>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Result<Response, Refused> {
    same_origin(&inbox, &headers)?;
    let (_, session) = session_of(&inbox, &headers, &key).await?;
    let form = DecideForm::new(pairs).map_err(|_| Refused::BadToken)?;
    token_matches(&session, form.get("csrf"))?;
    let fresh = format!("{}/servers", base(&session));
    let refused = |status: StatusCode, why: &str| {
        (
            status,
            crate::pages::refused(Some(&session), why, Some(&fresh)),
        )
            .into_response()
    };
    if !session.may_declare {
        return Ok(refused(
            StatusCode::FORBIDDEN,
            "you may not declare tools from the inbox (an operator gives that with `toolgate operator add NAME --may-declare`); nothing was recorded",
        ));
    }
    let (server_id, local) = (form.get("server"), form.get("tool"));
    let server = match inbox.store().server(server_id).await {
        Ok(server) => server,
        Err(StoreError::NoSuchServer(_)) => {
            return Ok(changed(
                &session,
                "There is no such server now: it was removed since this page was shown.",
                &fresh,
            ));
        }
        Err(error) => return Err(error.into()),
    };
    let row = inbox
        .store()
        .catalogue(server_id)
        .await?
        .into_iter()
        .find(|row| row.local_name == local && !row.orphaned);
    let Some(row) = row.filter(|row| acceptable_here(row.gate(server.approval))) else {
        return Ok(changed(
            &session,
            "This tool is no longer held in quarantine under its own declaration: it was accepted, declared again, or removed since this page was shown.",
            &fresh,
        ));
    };
    let operator = decider(&inbox, &session)?;
    match inbox
        .store()
        .accept_declared_tool(server_id, &row.local_name, form.get("digest"), &operator)
        .await
    {
        Ok(_) => Ok(Redirect::to(&fresh).into_response()),
        Err(StoreError::ToolDeclaredSince { now, .. }) => Ok(changed(
            &session,
            &format!("It was declared `{now}` since this page was shown: nothing was accepted."),
            &fresh,
        )),
        Err(StoreError::CatalogueChanged { .. }) => Ok(changed(
            &session,
            "Its definition changed again since this page was shown: it stays in quarantine. Review it as it is now.",
            &fresh,
        )),
        Err(error) => Ok(refused(StatusCode::FORBIDDEN, &error.to_string())),
    }
}

/// News, not an alarm: the tool changed under the operator's form, and
/// nothing was recorded.
pub(crate) fn changed(session: &Session, what: &str, fresh: &str) -> Response {
    (
        StatusCode::CONFLICT,
        page(
            "It changed",
            Some(session),
            &html! {
                h1 { "It changed again since this page" }
                p.news { (what) }
                p { "Nothing was recorded from your form." }
                p.back { a href=(fresh) { "See the servers and tools as they are now" } }
            },
        ),
    )
        .into_response()
}
