//! `toolgate server …`: add, list, show, and the operator's declarations.

use serde_json::{Value, json};
use toolgate::OperatorDeclaration;
use toolgate::visible::visible;
use toolgate_store::{DataClass, NewServer, ServerRecord, Store, Transport};

use crate::output::{Col, Out, date_utc, say, stored_json};
use crate::{Failure, OnOff, ServerCommand};

fn approval_word(declaration: OperatorDeclaration) -> &'static str {
    match declaration {
        OperatorDeclaration::ApprovalRequired => "required",
        OperatorDeclaration::NoApproval => "off",
    }
}

fn server_json(server: &ServerRecord) -> Value {
    json!({
        "id": server.id,
        "name": server.name,
        "transport": server.transport,
        "data_class": server.data_class.map(DataClass::as_str),
        "data_class_stored": server.data_class_stored,
        "approval": approval_word(server.approval),
        "enabled": server.enabled,
        "elicitation": server.elicitation,
        "usable": server.is_usable(),
        "inert_reason": server.inert_reason(),
        "import": server.import,
    })
}

pub(super) async fn server(store: &Store, out: Out, command: ServerCommand) -> Result<(), Failure> {
    match command {
        ServerCommand::Add {
            id,
            name,
            url,
            data_class,
            command,
        } => {
            let transport = transport_of(url, command)?;
            add_server(
                store,
                out,
                NewServer {
                    id,
                    name,
                    transport,
                    data_class,
                },
            )
            .await
        }
        ServerCommand::List => list_servers(store, out).await,
        ServerCommand::Show { id } => show_server(store, out, &id).await,
        ServerCommand::SetApproval {
            id,
            setting,
            digest,
        } => set_approval(store, out, &id, setting, digest.as_deref()).await,
        ServerCommand::SetDataClass { id, class } => {
            let s = store.set_data_class(&id, class).await?;
            if out.json {
                return out.json(&server_json(&s));
            }
            say!(
                "server `{}`: data class {}{}",
                id,
                class.as_str(),
                s.inert_reason()
                    .map(|r| format!(" (still inert: {r})"))
                    .unwrap_or_default()
            );
            Ok(())
        }
        ServerCommand::Elicitation { id, setting } => {
            set_elicitation(store, out, &id, setting == "on").await
        }
        ServerCommand::Enable { id } => {
            store.set_enabled(&id, true).await?;
            if out.json {
                return out.json(&json!({"server": id, "enabled": true}));
            }
            say!("server `{}`: enabled", id);
            Ok(())
        }
        ServerCommand::Disable { id } => {
            store.set_enabled(&id, false).await?;
            if out.json {
                return out.json(&json!({"server": id, "enabled": false}));
            }
            say!("server `{}`: disabled; it supplies no tools", id);
            Ok(())
        }
        ServerCommand::SetTransport { id, url, command } => {
            let s = store
                .set_transport(&id, &transport_of(url, command)?)
                .await?;
            if out.json {
                return out.json(&server_json(&s));
            }
            say!(
                "server `{}`: reached by {}; import it again to read its tools there",
                id,
                s.transport.describe()
            );
            Ok(())
        }
        ServerCommand::Accept { id, tools, digest } => {
            accept(store, out, &id, &tools, digest.as_deref()).await
        }
        ServerCommand::Remove { id } => {
            store.remove_server(&id).await?;
            if out.json {
                return out.json(&json!({"server": id, "removed": true}));
            }
            say!("server `{}`: removed, with its catalogue", id);
            Ok(())
        }
    }
}

/// `server set-approval`: the only way the flag is written. Turning it off
/// shows first, then acts on exactly what was shown.
async fn set_approval(
    store: &Store,
    out: Out,
    id: &str,
    setting: OnOff,
    digest: Option<&str>,
) -> Result<(), Failure> {
    let declaration = match setting {
        OnOff::On => OperatorDeclaration::ApprovalRequired,
        OnOff::Off => OperatorDeclaration::NoApproval,
    };
    if declaration == OperatorDeclaration::NoApproval && digest.is_none() {
        let acceptance = store.acceptance(id, &[]).await?;
        show_acceptance(out, &acceptance)?;
        return Err(Failure::Preview(format!(
            "nothing changed: with approval off the {} tool{} of server `{id}` run unattended; review them, then `toolgate server set-approval {id} off --digest {}`",
            acceptance.tools,
            if acceptance.tools == 1 { "" } else { "s" },
            acceptance.digest
        )));
    }
    let (before, after) = store.set_approval(id, declaration, digest).await?;
    if out.json {
        return out.json(&json!({"server": id, "before": approval_word(before.approval), "after": approval_word(after.approval)}));
    }
    if before.approval == after.approval {
        say!(
            "server `{}`: approval {} (unchanged)",
            id,
            approval_word(after.approval)
        );
    } else {
        say!(
            "server `{}`: approval {} → {}",
            id,
            approval_word(before.approval),
            approval_word(after.approval)
        );
    }
    Ok(())
}

/// What an act of acceptance would pin, and the digest it must carry.
fn show_acceptance(out: Out, acceptance: &toolgate_store::Acceptance) -> Result<(), Failure> {
    if out.json {
        return out.json(&json!({
            "server": acceptance.server,
            "tools": acceptance.tools,
            "digest": acceptance.digest,
            "changes": changes_json(&acceptance.changes),
        }));
    }
    if acceptance.changes.is_empty() {
        say!(
            "server `{}`: all {} tools are as accepted",
            acceptance.server,
            acceptance.tools
        );
    } else {
        print_changes("to accept", &acceptance.changes);
    }
    say!("digest: {}", acceptance.digest);
    Ok(())
}

fn changes_json(changes: &[toolgate_store::Accepted]) -> Vec<Value> {
    changes
        .iter()
        .map(|a| {
            json!({
                "tool": a.local_name,
                "before": a.before.as_deref().and_then(|b| serde_json::from_str::<Value>(b).ok()),
                "after": serde_json::from_str::<Value>(&a.after).ok(),
            })
        })
        .collect()
}

/// The transport a command names: `--url`, or a program after `--`.
fn transport_of(url: Option<String>, command: Vec<String>) -> Result<Transport, Failure> {
    match (url, command.is_empty()) {
        (Some(url), _) => Ok(Transport::Http { url }),
        (None, false) => Ok(Transport::Stdio { command }),
        (None, true) => Err(Failure::Usage(
            "give the server's --url, or its program and arguments after `--`".into(),
        )),
    }
}

/// `server accept`: shows what changed since the last accepted definition
/// and the digest; with the digest, pins exactly those definitions.
async fn accept(
    store: &Store,
    out: Out,
    id: &str,
    tools: &[String],
    digest: Option<&str>,
) -> Result<(), Failure> {
    for tool in tools {
        if !tool.contains(toolgate_mcp::SEPARATOR) {
            return Err(Failure::Usage(format!(
                "`{}` names no tool: a tool is named with its server, `{}{}{}` (as `toolgate server show {id}` lists it)",
                visible(tool),
                id,
                toolgate_mcp::SEPARATOR,
                visible(tool)
            )));
        }
    }
    let Some(digest) = digest else {
        let acceptance = store.acceptance(id, tools).await?;
        show_acceptance(out, &acceptance)?;
        return Err(Failure::Preview(format!(
            "nothing accepted: review the definitions above, then `toolgate server accept {id}{}{} --digest {}`",
            if tools.is_empty() { "" } else { " " },
            tools.join(" "),
            acceptance.digest
        )));
    };
    let accepted = store.accept_tools(id, tools, digest).await?;
    if out.json {
        return out.json(&json!({"server": id, "accepted": changes_json(&accepted)}));
    }
    if accepted.is_empty() {
        say!(
            "server `{}`: nothing to accept; every tool is as accepted",
            id
        );
        return Ok(());
    }
    print_changes("accepted", &accepted);
    Ok(())
}

/// Each tool's definition: what changed since it was last accepted, or all
/// of it for a new one.
fn print_changes(verb: &str, changes: &[toolgate_store::Accepted]) {
    for a in changes {
        let after: Value = serde_json::from_str(&a.after).unwrap_or(Value::Null);
        if let Some(Ok(before)) = a.before.as_deref().map(serde_json::from_str::<Value>) {
            say!(
                "{} `{}`, changed since it was last accepted:",
                verb,
                a.local_name
            );
            let mut changes = Vec::new();
            json_changes(&before, &after, "", &mut changes);
            for change in changes {
                say!("  {}", change);
            }
        } else {
            say!("{} `{}`, new:", verb, a.local_name);
            say!(
                "  description: {}",
                after
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            );
            say!(
                "  input schema: {}",
                after.get("input_schema").cloned().unwrap_or(Value::Null)
            );
        }
    }
}

/// What differs between two JSON values, one line per changed leaf, by
/// JSON pointer: `/description: "a" → "b"`, `/input_schema/properties/x:
/// added {…}`.
fn json_changes(before: &Value, after: &Value, path: &str, out: &mut Vec<String>) {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            for (key, old) in b {
                let here = format!("{path}/{key}");
                match a.get(key) {
                    Some(new) => json_changes(old, new, &here, out),
                    None => out.push(format!("{here}: removed (was {old})")),
                }
            }
            for (key, new) in a.iter().filter(|(k, _)| !b.contains_key(*k)) {
                out.push(format!("{path}/{key}: added {new}"));
            }
        }
        (old, new) if old != new => out.push(format!(
            "{}: {old} → {new}",
            if path.is_empty() { "/" } else { path }
        )),
        _ => {}
    }
}

async fn add_server(store: &Store, out: Out, new: NewServer) -> Result<(), Failure> {
    let server = store.add_server(new).await?;
    if out.json {
        return out.json(&server_json(&server));
    }
    say!(
        "added server `{}`: its tools require approval until you run `toolgate server set-approval {} off`",
        server.id,
        server.id
    );
    if let Some(reason) = server.inert_reason() {
        say!(
            "it supplies no tools yet: {} (`toolgate server set-data-class`)",
            reason
        );
    }
    Ok(())
}

async fn list_servers(store: &Store, out: Out) -> Result<(), Failure> {
    let servers = store.servers().await?;
    if out.json {
        return out.json(&servers.iter().map(server_json).collect::<Vec<_>>());
    }
    let mut table = out.table(&[
        "SERVER",
        "NAME",
        "TRANSPORT",
        "DATA CLASS",
        "APPROVAL",
        "STATE",
        "LAST IMPORT (UTC)",
    ]);
    for s in &servers {
        let state = s
            .inert_reason()
            .map_or_else(|| "usable".to_owned(), |r| format!("inert: {r}"));
        let import = match (&s.import.at, &s.import.error) {
            (None, _) => "never".to_owned(),
            (Some(at), None) => format!("ok at {}", date_utc(*at)),
            (Some(at), Some(error)) => format!("failed at {}: {error}", date_utc(*at)),
        };
        table.row([
            Col::from(&s.id),
            Col::from(&s.name),
            Col::from(s.transport.describe()),
            Col::from(s.data_class_stored.as_deref().unwrap_or("(undeclared)")),
            Col::Gate(if s.approval == OperatorDeclaration::NoApproval {
                "runs"
            } else {
                "approval"
            }),
            Col::from(state),
            Col::from(import),
        ]);
    }
    table.print();
    Ok(())
}

async fn show_server(store: &Store, out: Out, id: &str) -> Result<(), Failure> {
    let s = store.server(id).await?;
    let rows = store.catalogue(id).await?;
    let acceptance = store.acceptance(id, &[]).await?;
    if out.json {
        let mut value = server_json(&s);
        value["digest"] = Value::String(acceptance.digest.clone());
        value["unaccepted"] = acceptance
            .changes
            .iter()
            .map(|a| Value::String(a.local_name.clone()))
            .collect();
        value["catalogue"] = rows
            .iter()
            .map(|r| {
                let mut row = json!({
                    "local_name": r.local_name, "remote_name": r.remote_name,
                    "description": r.description, "orphaned": r.orphaned,
                    "annotations": r.annotations.as_deref().and_then(|a| serde_json::from_str::<Value>(a).ok()),
                    "gate": r.gate(s.approval).words(),
                });
                if let (Value::Object(row), Value::Object(declaration)) =
                    (&mut row, super::declare::declaration_json(r))
                {
                    row.extend(declaration);
                }
                row
            })
            .collect();
        return out.json(&value);
    }
    let mut table = out.table(&["FIELD", "VALUE"]);
    table.row([Col::from("server"), Col::from(&s.id)]);
    table.row([Col::from("name"), Col::from(&s.name)]);
    table.row([Col::from("transport"), Col::from(s.transport.describe())]);
    table.row([
        Col::from("data class"),
        Col::from(s.data_class_stored.as_deref().unwrap_or("(undeclared)")),
    ]);
    table.row([
        Col::from("approval"),
        Col::from(format!(
            "{} (stored: {})",
            approval_word(s.approval),
            s.stored_flag
        )),
    ]);
    table.row([Col::from("enabled"), Col::from(s.enabled.to_string())]);
    table.row([
        Col::from("elicitation"),
        Col::from(if s.elicitation {
            "on: a requester may answer through their own client"
        } else {
            "off: operators answer"
        }),
    ]);
    table.row([
        Col::from("state"),
        Col::from(
            s.inert_reason()
                .map_or_else(|| "usable".to_owned(), |r| format!("inert: {r}")),
        ),
    ]);
    table.row([
        Col::from("last import"),
        Col::from(format!(
            "{}{}",
            s.import.status,
            s.import
                .error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        )),
    ]);
    table.print();
    print_catalogue(out, &s, &rows);
    say!(
        "digest of its {} live tools: {}",
        acceptance.tools,
        acceptance.digest
    );
    say!(
        "  turning approval off (`server set-approval {} off --digest …`) or accepting every tool (`server accept {} --digest …`) acts on exactly these definitions",
        id,
        id
    );
    say!(
        "  one tool's own declaration overrides the server's flag for it alone: `toolgate tool set-approval {}.TOOL inherit|on|off|block`",
        id
    );
    Ok(())
}

/// A server's catalogue, a row per tool: its declaration and its gate.
fn print_catalogue(out: Out, s: &ServerRecord, rows: &[toolgate_store::CatalogueRow]) {
    let mut catalogue = out.table(&[
        "TOOL",
        "REMOTE NAME",
        "STATE",
        "DECLARED",
        "GATE",
        "DESCRIPTION (as the server wrote it)",
        "SERVER'S CLAIMS (not used for the decision)",
    ]);
    for r in rows {
        let claims = r.annotations.as_deref().map(stored_json);
        let declared = match &r.declared {
            Some(by) => format!("{} (by {}, {})", r.declaration.word(), by.by, by.channel),
            None => r.declaration.word().to_owned(),
        };
        catalogue.row([
            Col::from(&r.local_name),
            Col::from(&r.remote_name),
            Col::from(if r.orphaned { "orphaned" } else { "live" }),
            Col::from(declared),
            Col::from(r.gate(s.approval).words()),
            Col::from(&r.description),
            claims.as_ref().map_or(Col::from("-"), Col::from),
        ]);
    }
    catalogue.print();
}

/// `server elicitation SERVER on|off`.
async fn set_elicitation(store: &Store, out: Out, id: &str, on: bool) -> Result<(), Failure> {
    store.set_elicitation(id, on).await?;
    if out.json {
        return out.json(&json!({"server": id, "elicitation": on}));
    }
    if on {
        say!(
            "server `{}`: a requester may answer its calls through their own client; an approval so given is still theirs — refused under four eyes, never one of several approvers",
            id
        );
    } else {
        say!("server `{}`: its calls are answered by operators only", id);
    }
    Ok(())
}
