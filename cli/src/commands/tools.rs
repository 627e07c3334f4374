//! `toolgate tools`: every tool the host sees, its gate and why.

use serde_json::{Value, json};
use toolgate_store::Store;

use crate::Failure;
use crate::agent::{self, Workspace};
use crate::output::{Col, Out, say, stored_json};

pub(super) async fn tools(store: &Store, workspace: &Workspace, out: Out) -> Result<(), Failure> {
    let (registry, provider) = agent::registry(store, workspace).map_err(Failure::Error)?;
    let (demo_ran, explanations) = offered(store, &registry).await?;
    let rows = store.live_catalogue().await?;
    let claims = |name: &str| {
        rows.iter()
            .find(|r| r.local_name == name)
            .and_then(|r| r.annotations.clone())
    };
    let (_, skipped) = provider.build_tools().await?;
    let servers = store.servers().await?;
    let client_tools = store.client_tools().await?;
    let command_rules = store.command_rules(None).await?;
    if out.json {
        let tools: Vec<Value> = explanations
            .iter()
            .map(|e| {
                json!({
                    "name": e.name,
                    "wire_name": e.wire_name,
                    "origin": e.server.clone().unwrap_or_else(|| "demo builtin".into()),
                    "effect": e.effect.as_str(),
                    "gate": e.ruling.pause.as_str(),
                    "cause": e.cause_text(),
                    "declared_for": e.server.as_ref().map(|_| match e.declared_for {
                        toolgate::DeclarationScope::Server => "server",
                        toolgate::DeclarationScope::Tool => "tool",
                        toolgate::DeclarationScope::Unreadable => "tool (unreadable)",
                    }),
                    "server_claims": claims(&e.name).and_then(|c| serde_json::from_str::<Value>(&c).ok()),
                })
            })
            .collect();
        provider.close().await;
        return out.json(&json!({
            "quarantined": quarantined(&rows, &servers).iter().map(|(r, why)| json!({"tool": r.local_name, "reason": why.as_str()})).collect::<Vec<_>>(),
            "tools": tools,
            "demo_builtins_listed": demo_ran,
            "skipped": skipped.iter().map(|s| json!({"tool": s.local_name, "reason": s.reason.to_string()})).collect::<Vec<_>>(),
            "inert_servers": servers.iter().filter_map(|s| s.inert_reason().map(|r| json!({"server": s.id, "reason": r}))).collect::<Vec<_>>(),
            "coding_agents": super::hook::listing_json(&client_tools, &command_rules),
        }));
    }
    let mut table = out.table(&[
        "TOOL",
        "WIRE NAME",
        "ORIGIN",
        "EFFECT",
        "GATE",
        "CAUSE",
        "SERVER'S CLAIMS (not used)",
    ]);
    for e in &explanations {
        let claims = claims(&e.name).as_deref().map(stored_json);
        table.row([
            Col::from(&e.name),
            Col::from(&e.wire_name),
            Col::from(
                e.server
                    .as_deref()
                    .map_or_else(|| "demo builtin".to_owned(), |s| format!("server {s}")),
            ),
            Col::from(e.effect.as_str()),
            Col::Gate(e.ruling.pause.as_str()),
            Col::from(e.cause_text()),
            claims.as_ref().map_or(Col::from("-"), Col::from),
        ]);
    }
    table.whole(&[0, 1, 4]);
    table.print();
    print_notes(demo_ran, explanations.is_empty());
    for s in servers.iter().filter(|s| !s.is_usable()) {
        if let Some(reason) = s.inert_reason() {
            say!("server `{}` supplies no tools: {}", s.id, reason);
        }
    }
    for s in &skipped {
        say!(
            "left out `{}` of server `{}`: {}",
            s.local_name,
            s.server,
            s.reason.to_string()
        );
    }
    for (row, why) in quarantined(&rows, &servers) {
        say!(
            "quarantined `{}`: {}; it requires approval until `toolgate server accept {} {}`",
            row.local_name,
            why.as_str(),
            row.server_id,
            row.local_name
        );
    }
    if !client_tools.is_empty() || !command_rules.is_empty() {
        say!("Coding agents' own tools, through their hooks (`toolgate hook`):");
        super::hook::print_listing(out, &client_tools, &command_rules);
    }
    provider.close().await;
    Ok(())
}

/// What this store offers: every tool of its servers, and the demo's
/// builtins only where the demo's host has run on it — a builtin belongs
/// to a host program, not to the store. True when the demo's are listed.
async fn offered(
    store: &Store,
    registry: &toolgate::Registry,
) -> Result<(bool, Vec<toolgate::registry::Explanation>), Failure> {
    let demo_ran = store
        .run_owners()
        .await?
        .iter()
        .any(|owner| owner == agent::DEMO_HOST);
    let explanations = registry
        .explain_all()
        .await
        .into_iter()
        .filter(|e| demo_ran || e.server.is_some())
        .collect();
    Ok((demo_ran, explanations))
}

/// What the table means, and where a host's own builtins are listed.
fn print_notes(demo_ran: bool, none: bool) {
    say!(
        "A server's claims are shown as it sent them; no decision reads them. A remote tool's effect is assumed, not claimed."
    );
    say!(
        "A model or an MCP client calls each tool by its wire name; runs and decisions keep the tool's name."
    );
    if demo_ran {
        say!(
            "The builtin tools listed are the demo host's (`toolgate demo`, `toolgate host`); a host of your own lists its own builtins with `Registry::explain_all`."
        );
    } else {
        say!(
            "These are the tools this store's servers offer. A host program's own builtins are its own, not the store's: it lists them with `Registry::explain_all` (the demo's appear here once `toolgate demo` has run on this store)."
        );
    }
    if none {
        say!(
            "No tool is offered: register a server (`toolgate server add`) and import it (`toolgate import`)."
        );
    }
}

/// The live tools held in quarantine — under "no approval", the server's
/// or their own, not the definition an operator accepted — and why.
fn quarantined<'a>(
    rows: &'a [toolgate_store::CatalogueRow],
    servers: &[toolgate_store::ServerRecord],
) -> Vec<(&'a toolgate_store::CatalogueRow, toolgate_store::Quarantine)> {
    rows.iter()
        .filter_map(|row| {
            let server = servers.iter().find(|s| s.id == row.server_id)?;
            row.gate(server.approval).quarantine().map(|why| (row, why))
        })
        .collect()
}
