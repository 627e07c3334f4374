//! `toolgate runs …`: the runs waiting for a decision, one run's pending turn,
//! and the decisions on them (in `decide`).

use serde_json::{Value, json};
use toolgate::{Registry, suspend::SuspendedRun};
use toolgate_store::Store;

use super::decide::{self, Act};
use crate::host::{self, Workspace};
use crate::output::{Col, Out, say, timestamp};
use crate::{Failure, RunsCommand};

pub(super) async fn runs(
    store: &Store,
    workspace: &Workspace,
    out: Out,
    command: RunsCommand,
) -> Result<(), Failure> {
    match command {
        RunsCommand::List => {
            let open = store.open_runs().await?;
            if out.json {
                // No digest here: it is shown only beside the turn itself
                // (`runs show`), so nobody decides a turn they were not shown.
                return out.json(
                    &open
                        .iter()
                        .map(|r| {
                            json!({
                                "run": r.run_id, "status": r.status, "requested_by": r.requested_by,
                                "since": timestamp(r.created_at), "problem": r.problem,
                                "authenticated": store.is_authenticated(),
                            })
                        })
                        .collect::<Vec<_>>(),
                );
            }
            let mut table = out.table(&["RUN", "STATUS", "REQUESTED BY", "SINCE", "PROBLEM"]);
            for r in &open {
                table.row([
                    Col::from(&r.run_id),
                    Col::Gate(if r.status == "waiting_for_input" {
                        "input"
                    } else {
                        "approval"
                    }),
                    Col::from(&r.requested_by),
                    Col::from(timestamp(r.created_at)),
                    Col::from(r.problem.as_deref().unwrap_or("-")),
                ]);
            }
            table.print();
            if store.requires_key() && !store.is_authenticated() {
                say!(
                    "note: this store authenticates its runs and {}; open it with its key (TOOLGATE_INTEGRITY_KEY_FILE)",
                    "this command has none, so it reads none of them"
                );
            } else if !store.is_authenticated() {
                say!(
                    "note: this store is unauthenticated: anyone who can write {} can change a stored run (four eyes, requester, arguments) and recompute its checksum; set TOOLGATE_INTEGRITY_KEY_FILE to authenticate runs and decisions",
                    "the database file"
                );
            }
            Ok(())
        }
        RunsCommand::Show { run } => {
            let suspended = load(store, &run).await?;
            let (registry, provider) = host::registry(store, workspace).map_err(Failure::Error)?;
            show(&registry, out, &suspended).await?;
            provider.close().await;
            Ok(())
        }
        RunsCommand::Approve(args) => {
            decide::command(store, workspace, out, args, Act::Approve).await
        }
        RunsCommand::Deny(args) => decide::command(store, workspace, out, args, Act::Deny).await,
        RunsCommand::Input { decide, data } => {
            let data: Value = serde_json::from_str(&data)
                .map_err(|e| Failure::Refused(format!("the input is not JSON: {e}")))?;
            decide::command(store, workspace, out, decide, Act::Input(data)).await
        }
    }
}

pub(super) async fn load(store: &Store, run: &str) -> Result<SuspendedRun, Failure> {
    Ok(store.load_suspended(run).await?)
}

pub(super) async fn show(registry: &Registry, out: Out, run: &SuspendedRun) -> Result<(), Failure> {
    let offered = registry.offer(run.state().options.allow.as_deref()).await;
    let input = match run {
        SuspendedRun::WaitingForInput(w) => Some((
            w.input_call().id.clone(),
            w.input_schema().as_value().clone(),
        )),
        SuspendedRun::AwaitingApproval(_) => None,
    };
    if out.json {
        return out.json(&json!({
            "run": run.run_id(), "status": run.status().as_str(),
            "requested_by": run.state().requested_by, "digest": run.digest().as_str(),
            "pending": run.pending(), "input_schema": input.as_ref().map(|i| &i.1),
        }));
    }
    say!(
        "run {} — {} — requested by {}",
        run.run_id(),
        run.status().as_str().replace('_', " "),
        run.state().requested_by
    );
    let mut table = out.table(&["CALL", "TOOL", "GATE", "ARGUMENTS"]);
    let mut asking = Vec::new();
    for call in run.pending() {
        let gate = offered.get(&call.name).map_or("not offered", |t| {
            if input.as_ref().is_some_and(|(id, _)| *id == call.id) {
                "input"
            } else {
                t.ruling().pause.as_str()
            }
        });
        if gate == "approval" {
            asking.push(format!("{} ({})", call.name, call.id));
        }
        table.row([
            Col::from(&call.id),
            Col::from(&call.name),
            Col::Gate(gate),
            Col::from(&call.arguments),
        ]);
    }
    table.print();
    if let Some((_, schema)) = input {
        say!("input schema: {}", schema);
    }
    // Repeated last, beside the digest: a turn long enough to scroll its
    // first rows away still names every call that needs approval here.
    let calls = run.pending().len();
    say!(
        "{} {}; {} {} approval: {}",
        calls,
        if calls == 1 { "call" } else { "calls" },
        asking.len(),
        if asking.len() == 1 { "needs" } else { "need" },
        if asking.is_empty() {
            "none".to_owned()
        } else {
            asking.join(", ")
        }
    );
    say!("digest: {}", run.digest().as_str());
    Ok(())
}
