//! `toolgate tool set-approval SERVER.TOOL inherit|on|off|block`: one
//! tool's own declaration. A tool's gate, put together from its server's
//! flag and its own declaration, is told in the store's words
//! ([`toolgate_store::ToolGate::words`]).

use serde_json::{Value, json};
use toolgate::visible::visible;
use toolgate_store::{CatalogueRow, Store, ToolDeclaration};

use super::identity::operator_identity;
use crate::output::{Out, say};
use crate::{Failure, ToolCommand, ToolSetting};

pub(super) async fn tool(store: &Store, out: Out, command: ToolCommand) -> Result<(), Failure> {
    match command {
        ToolCommand::SetApproval {
            tool,
            setting,
            digest,
            operator,
        } => set_approval(store, out, &tool, setting, digest.as_deref(), operator).await,
    }
}

/// A tool's declaration as JSON: the word, the stored value, who made it.
pub(super) fn declaration_json(row: &CatalogueRow) -> Value {
    json!({
        "declaration": row.declaration.word(),
        "stored": row.stored_declaration.to_string(),
        "declared": row.declared.as_ref().map(|d| json!({
            "by": d.by, "source": d.source, "channel": d.channel,
            "digest": d.digest, "at": d.at,
        })),
    })
}

/// `SERVER.TOOL` split at its first `.`: server identifiers cannot hold
/// one, so the server is what comes before it; the tool is named by the
/// whole, its local name.
fn server_of(tool: &str) -> Result<&str, Failure> {
    match tool.split_once(toolgate_mcp::SEPARATOR) {
        Some((server, rest)) if !server.is_empty() && !rest.is_empty() => Ok(server),
        _ => Err(Failure::Usage(format!(
            "`{}` does not name a tool: give it as `SERVER.TOOL`, as `toolgate tools` lists it",
            visible(tool)
        ))),
    }
}

async fn set_approval(
    store: &Store,
    out: Out,
    tool: &str,
    setting: ToolSetting,
    digest: Option<&str>,
    operator: Option<String>,
) -> Result<(), Failure> {
    let server = server_of(tool)?;
    let declaration = match setting {
        ToolSetting::Inherit => ToolDeclaration::Inherit,
        ToolSetting::On => ToolDeclaration::ApprovalRequired,
        ToolSetting::Off => ToolDeclaration::NoApproval,
        ToolSetting::Block => ToolDeclaration::Blocked,
    };
    let operator = operator_identity(operator.as_deref())?;
    if declaration.lowers() && digest.is_none() {
        // Shown first: the definition the declaration would cover.
        let acceptance = store.acceptance(server, &[tool.to_owned()]).await?;
        let row = store
            .catalogue(server)
            .await?
            .into_iter()
            .find(|row| row.local_name == tool && !row.orphaned);
        let definition = row.as_ref().map(CatalogueRow::definition);
        if out.json {
            out.json(&json!({
                "tool": tool,
                "definition": definition.as_deref().and_then(|d| serde_json::from_str::<Value>(d).ok()),
                "digest": acceptance.digest,
            }))?;
        } else if let Some(Ok(definition)) =
            definition.as_deref().map(serde_json::from_str::<Value>)
        {
            say!("tool `{}`, as it would run unattended:", tool);
            for (field, value) in [
                ("description", definition.get("description")),
                ("input schema", definition.get("input_schema")),
                ("server's claims (not used)", definition.get("annotations")),
            ] {
                let value = value.cloned().unwrap_or(Value::Null);
                let text = match &value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                say!("  {}: {}", field, text);
            }
            say!("digest: {}", acceptance.digest);
        }
        return Err(Failure::Preview(format!(
            "nothing changed: with approval off, tool `{}` runs unattended; review its definition, then `toolgate tool set-approval {} off --digest {}`",
            visible(tool),
            visible(tool),
            acceptance.digest
        )));
    }
    let (before, after) = store
        .declare_tool(server, tool, declaration, digest, &operator)
        .await?;
    let flag = store.server(server).await?.approval;
    let gate = after.gate(flag).words();
    if out.json {
        return out.json(&json!({
            "tool": tool,
            "server": server,
            "before": before.declaration.word(),
            "after": after.declaration.word(),
            "gate": gate,
            "declared": declaration_json(&after)["declared"],
        }));
    }
    if before.declaration == after.declaration {
        say!(
            "tool `{}`: {} (unchanged); its gate: {}",
            tool,
            after.declaration.word(),
            gate
        );
    } else {
        say!(
            "tool `{}`: {} → {}; its gate: {}",
            tool,
            before.declaration.word(),
            after.declaration.word(),
            gate
        );
    }
    Ok(())
}
