//! Each pending call's gate and why, in the words every other listing of a
//! gate uses: an imported tool's from the catalogue
//! ([`ToolGate::words`] — the server's flag, the tool's own declaration,
//! quarantine), its effect labelled as assumed; a builtin's from the
//! registry's explanation when the inbox has one, from its declared effect
//! otherwise; a coding agent's own tool (`claude-code.TOOL`,
//! `codex.TOOL`) as the source it is.

use toolgate::suspend::{ReviewedTool, SuspendedRun};
use toolgate_store::{Store, ToolDeclaration, ToolGate};

use crate::Inbox;

/// The clients whose hooks name their tools `CLIENT.TOOL`.
const HOOK_CLIENTS: [&str; 2] = ["claude-code", "codex"];

/// One call's gate, for its page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallGate {
    /// Where the tool lives: a builtin, an imported tool of a server, or a
    /// coding agent's own tool.
    pub(crate) source: String,
    /// Its effect, and whether that is declared or assumed.
    pub(crate) effect: String,
    /// The gate and why.
    pub(crate) words: String,
    /// What the turn's review says the call needed when it paused.
    pub(crate) when_paused: &'static str,
}

/// The gate of each pending call of `paused`, in order.
pub(crate) async fn of_turn(inbox: &Inbox, paused: &SuspendedRun) -> Vec<CallGate> {
    let mut gates = Vec::with_capacity(paused.pending().len());
    for (index, call) in paused.pending().iter().enumerate() {
        let reviewed = paused.review().tools.get(index).and_then(Option::as_ref);
        gates.push(of_call(inbox, &call.name, reviewed).await);
    }
    gates
}

async fn of_call(inbox: &Inbox, name: &str, reviewed: Option<&ReviewedTool>) -> CallGate {
    let when_paused = match reviewed {
        Some(tool) if !tool.needs_approval => "it needed no approval when the turn paused",
        Some(_) => "it needed approval when the turn paused",
        None => "it was not offered when the turn paused: it needs a verdict",
    };
    let Some((server, tool)) = name.split_once('.') else {
        return local(inbox, name, reviewed, when_paused).await;
    };
    let store = inbox.store();
    match catalogue_gate(store, server, name).await {
        Ok(Some(gate)) => CallGate {
            source: format!("imported from server `{server}`"),
            effect: "non_idempotent_write — assumed: a remote tool's effect is never taken from its server".to_owned(),
            words: gate.words(),
            when_paused,
        },
        Ok(None) if HOOK_CLIENTS.contains(&server) => {
            let declared = match store.client_tool_declaration(server, tool).await {
                Ok(ToolDeclaration::Inherit) => String::new(),
                Ok(declaration) => format!(" — declared `{}`", declaration.word()),
                Err(error) => format!(" — its declaration could not be read ({error})"),
            };
            CallGate {
                source: format!("a coding agent's own tool (`{server}`'s hooks)"),
                effect: "not declared: a coding agent's tool may do anything its agent can"
                    .to_owned(),
                words: format!(
                    "a coding agent's own tool: every call waits for approval unless declared otherwise (`toolgate hook list`){declared}"
                ),
                when_paused,
            }
        }
        Ok(None) => CallGate {
            source: format!("server `{server}`"),
            effect: "non_idempotent_write — assumed: a remote tool's effect is never taken from its server".to_owned(),
            words: "not in the catalogue now (removed since the turn paused, or its server is gone): it is not offered".to_owned(),
            when_paused,
        },
        Err(error) => CallGate {
            source: format!("server `{server}`"),
            effect: "non_idempotent_write — assumed: a remote tool's effect is never taken from its server".to_owned(),
            words: format!("the catalogue could not be read: {error}"),
            when_paused,
        },
    }
}

/// The catalogue's gate for `name` of `server`, when the store holds it.
async fn catalogue_gate(
    store: &Store,
    server: &str,
    name: &str,
) -> Result<Option<ToolGate>, toolgate_store::StoreError> {
    let Some(record) = store
        .servers()
        .await?
        .into_iter()
        .find(|record| record.id == server)
    else {
        return Ok(None);
    };
    Ok(store
        .catalogue(server)
        .await?
        .into_iter()
        .find(|row| row.local_name == name)
        .map(|row| row.gate(record.approval)))
}

/// A builtin: its gate comes from its type.
async fn local(
    inbox: &Inbox,
    name: &str,
    reviewed: Option<&ReviewedTool>,
    when_paused: &'static str,
) -> CallGate {
    let explained = match &inbox.inner.registry {
        Some(registry) => registry.explain(name).await,
        None => None,
    };
    let effect = match (&explained, reviewed) {
        (Some(explanation), _) => format!("{} (declared by its type)", explanation.effect),
        (None, Some(tool)) => format!("{} (declared by its type)", tool.effect),
        (None, None) => "unknown: the tool was not offered when the turn paused".to_owned(),
    };
    let words = match (&explained, reviewed) {
        (Some(explanation), _) => explanation.to_string(),
        (None, Some(tool)) if !tool.needs_approval => {
            format!("runs without approval: the tool declares {}", tool.effect)
        }
        (None, Some(tool)) if tool.effect.is_write() => {
            format!("approval required: the tool declares {}", tool.effect)
        }
        (None, Some(_)) => {
            "approval required: the tool's own rule (its approval marker, or it asks for input)"
                .to_owned()
        }
        (None, None) => {
            "approval required: a call of a tool not offered needs a verdict".to_owned()
        }
    };
    CallGate {
        source: "built in (local)".to_owned(),
        effect,
        words,
        when_paused,
    }
}

/// Whether call `index` of `paused` writes, as far as the page can tell:
/// its reviewed effect; a call whose tool was not reviewed counts as a
/// write.
pub(crate) fn writes(paused: &SuspendedRun, index: usize) -> bool {
    paused
        .review()
        .tools
        .get(index)
        .and_then(Option::as_ref)
        .is_none_or(|tool| tool.effect.is_write())
}

/// Whether call `index` of `paused` needs a verdict: it needed approval
/// when the turn paused (every call of a turn paused before reviews were
/// kept does) — the core's own reading.
pub(crate) fn needs_verdict(paused: &SuspendedRun, index: usize) -> bool {
    let tools = &paused.review().tools;
    tools.is_empty()
        || tools
            .get(index)
            .is_some_and(|tool| tool.as_ref().is_some_and(|tool| tool.needs_approval))
}
