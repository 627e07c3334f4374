//! `toolgate demo`: a scripted agent through the gate, end to end, deciding
//! each pause on the terminal or from its flags.

use std::io::IsTerminal;

use std::collections::BTreeMap;

use serde_json::{Value, json};
use toolgate::identity::{IdentitySource, Operator};
use toolgate::suspend::Refusal;
use toolgate::{
    Agent, Registry,
    run::{Outcome, RunOptions, RunRequest, ToolCall},
    suspend::{AwaitingApproval, CallVerdict, Suspended, SuspendedRun},
    testing::MemoryLog,
};
use toolgate_mcp::Deadlines;
use toolgate_store::{
    Answer, ClaimError, DataClass, Host, NewServer, Store, StoreError, Transport,
};

use super::decide::{print_results, report_recorded, report_resumed};
use super::form::{ask_form, ask_json, ask_line};
use super::identity::operator_identity;
use super::import::import;
use super::runs::load;
use super::turn::show;
use crate::agent::{self, DEMO_HOST, DEMO_SERVER, DemoModel, Workspace};
use crate::output::{Col, Out, say};
use crate::{DemoArgs, Failure};

/// The name the demo registers its server under: how it knows the
/// registration is its own.
const DEMO_SERVER_NAME: &str = "Notes (the built-in MCP test server)";

pub(super) async fn demo(
    store: &Store,
    workspace: &Workspace,
    out: Out,
    args: DemoArgs,
) -> Result<(), Failure> {
    workspace
        .prepare()
        .map_err(|e| Failure::Error(format!("cannot prepare the demo workspace: {e}")))?;
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Error(format!("cannot find this program: {e}")))?;
    let transport = Transport::Stdio {
        command: vec![exe.to_string_lossy().into_owned(), "mcp-test-server".into()],
    };
    match store.server(DEMO_SERVER).await {
        // The demo's own registration: pointed at this program again, which
        // may have moved since.
        Ok(server) if server.name == DEMO_SERVER_NAME => {
            store.set_transport(DEMO_SERVER, &transport).await?;
        }
        // Someone registered a server of that name: it is theirs, and the
        // demo changes nothing of it.
        Ok(_) => {
            return Err(Failure::Refused(format!(
                "server `{DEMO_SERVER}` is registered already, and not by the demo: the demo leaves it as it is; run the demo on a data directory of its own (`--data-dir`), or remove that server first (`toolgate server remove {DEMO_SERVER}`)"
            )));
        }
        Err(StoreError::NoSuchServer(_)) => {
            store
                .add_server(NewServer {
                    id: DEMO_SERVER.into(),
                    name: DEMO_SERVER_NAME.into(),
                    transport,
                    data_class: Some(DataClass::EditorContent),
                })
                .await?;
            say!(
                "registered the MCP test server as `{}` (approval required, data class editor_content)",
                DEMO_SERVER
            );
        }
        Err(other) => return Err(other.into()),
    }
    import(
        store,
        out,
        DEMO_SERVER,
        Deadlines::default(),
        toolgate_mcp::ImportLimits::default(),
    )
    .await?;

    let (registry, provider) = agent::registry(store, workspace).map_err(Failure::Error)?;
    let result = demo_run(store, &registry, out, &args).await;
    provider.close().await;
    result
}

async fn demo_run(
    store: &Store,
    registry: &Registry,
    out: Out,
    args: &DemoArgs,
) -> Result<(), Failure> {
    let interactive = std::io::stdin().is_terminal();
    if !interactive && !args.yes && !args.no && !args.detach {
        return Err(Failure::Refused(
            "no terminal to ask on: pass --yes or --no (and --input JSON), or --detach".into(),
        ));
    }
    let log = MemoryLog::new();
    let agent = Agent::new(registry, &DemoModel, &log);
    // The interactive demo is both: it decides, and as host `demo` it resumes
    // what it decided — through the same store records as `runs approve` and
    // `toolgate host`.
    let host = Host::new(store.clone(), DEMO_HOST)?;
    // Without `--as` or `TOOLGATE_OPERATOR` its operator is the name it
    // gives, `operator`.
    let decider = match (&args.operator, std::env::var("TOOLGATE_OPERATOR")) {
        (None, Err(_)) => Operator::new("operator", IdentitySource::Given)
            .map(|operator| operator.via(toolgate::identity::Channel::Console))
            .map_err(|e| Failure::Error(e.to_string()))?,
        _ => operator_identity(args.operator.as_deref())?,
    };
    let request = RunRequest {
        system: Some("You prepare releases.".into()),
        prompt:
            "Bump the version to 0.2.0, note it on the team's notes server and draft the release."
                .into(),
        requested_by: decider.name().to_owned(),
        options: RunOptions {
            four_eyes: args.four_eyes,
            approvals_required: args.approvals,
            decision_ttl_ms: args.decision_ttl.map(|secs| secs.saturating_mul(1000)),
            ..RunOptions::default()
        },
    };
    say!();
    say!("{} asks: {}", request.requested_by, request.prompt);
    let outcome = agent
        .start(request)
        .await
        .map_err(|e| Failure::Error(e.to_string()))?;
    let mut next = first_pause(&host, registry, out, outcome).await?;
    while let Some(run_id) = next.take() {
        if args.detach {
            say!(
                "left waiting; decide with `toolgate runs approve|deny|input {} --digest … --as …`, and `toolgate host` resumes it",
                run_id
            );
            return Ok(());
        }
        let run = load(store, &run_id).await?;
        let digest = run.digest();
        let answer = match &run {
            SuspendedRun::AwaitingApproval(pending) => {
                Decided::Answer(decide_turn(pending, args, interactive, decider.name())?)
            }
            SuspendedRun::WaitingForInput(waiting) => {
                let asking = interactive && !args.yes && args.input.is_none();
                loop {
                    let data = match &args.input {
                        Some(text) => serde_json::from_str(text)
                            .map_err(|e| Failure::Refused(format!("--input is not JSON: {e}")))?,
                        None if asking => ask_form(waiting.input_schema().as_value())?,
                        None => json!({"notes": "Faster gate, clearer errors."}),
                    };
                    say!("→ {} submits {}", decider.name(), data);
                    // Input that does not fit hands the run back intact: ask
                    // again on a terminal, rather than end.
                    match store
                        .decide(&run_id, Some(&digest), &decider, Answer::Input(data))
                        .await
                    {
                        Err(ClaimError::Refused {
                            reason: Refusal::InvalidInput(errors),
                            ..
                        }) if asking => {
                            for error in errors {
                                say!("  does not fit: {}", error.to_string());
                            }
                            say!("  the run still waits; try again");
                        }
                        other => break Decided::Now(other?),
                    }
                }
            }
        };
        let recorded = match answer {
            Decided::Now(recorded) => recorded,
            Decided::Answer(answer) => {
                store
                    .decide(&run_id, Some(&digest), &decider, answer)
                    .await?
            }
        };
        report_recorded(out, &recorded, &decider)?;
        // Acting as the host: resume what is decided, this run among them.
        while let Some(task) = host.next().await? {
            let resumed = host.resume(task, registry, &DemoModel).await?;
            let paused = report_resumed(store, registry, out, &resumed).await?;
            if resumed.run_id == run_id {
                next = paused;
            }
        }
        if next.is_none() {
            print_decision_log(store, out, &run_id).await?;
        }
    }
    Ok(())
}

/// The demo's decision on a turn awaiting approval. With `--yes` a turn of
/// one call is approved; a turn of several is decided call by call, with the
/// changelog entry's text edited — the model's guess replaced — to show a
/// per-call decision with an edited argument. `--no` denies; on a terminal
/// each call is asked for.
fn decide_turn(
    pending: &Suspended<AwaitingApproval>,
    args: &DemoArgs,
    interactive: bool,
    decider: &str,
) -> Result<Answer, Failure> {
    let calls: Vec<&ToolCall> = pending
        .pending()
        .iter()
        .enumerate()
        .filter(|(i, _)| pending.needs_verdict(*i))
        .map(|(_, c)| c)
        .collect();
    if args.no {
        say!("→ {} denies", decider);
        return Ok(Answer::Deny);
    }
    if args.yes && calls.len() <= 1 {
        say!("→ {} approves", decider);
        return Ok(Answer::Approve);
    }
    let mut verdicts = BTreeMap::new();
    for call in calls {
        let verdict = if args.yes || !interactive {
            match call.arguments.get("path").and_then(Value::as_str) {
                Some("CHANGELOG.md") => CallVerdict::Edit {
                    arguments: json!({
                        "path": "CHANGELOG.md",
                        "content": "## 0.2.0\n- Faster gate, clearer errors.\n",
                    }),
                },
                _ => CallVerdict::Approve,
            }
        } else {
            ask_verdict(call)?
        };
        say!(
            "→ {} {} {}{}",
            decider,
            match verdict {
                CallVerdict::Approve | CallVerdict::Edit { .. } => "approves",
                CallVerdict::Deny { .. } => "denies",
            },
            call.id,
            match &verdict {
                CallVerdict::Edit { arguments } => format!(" with edited arguments {arguments}"),
                CallVerdict::Deny { reason } if !reason.is_empty() => format!(": {reason}"),
                _ => String::new(),
            }
        );
        verdicts.insert(call.id.clone(), verdict);
    }
    Ok(Answer::Calls(verdicts))
}

/// Asks for one call's verdict until the answer is usable.
fn ask_verdict(call: &ToolCall) -> Result<CallVerdict, Failure> {
    loop {
        match ask_line(&format!(
            "{} ({}): [a]pprove, [d]eny or [e]dit?",
            call.id, call.name
        ))?
        .to_lowercase()
        .as_str()
        {
            "a" | "approve" => return Ok(CallVerdict::Approve),
            "d" | "deny" => {
                let reason = ask_line("why (for the model; may be empty):")?;
                return Ok(CallVerdict::Deny { reason });
            }
            "e" | "edit" => {
                return Ok(CallVerdict::Edit {
                    arguments: ask_json("arguments (JSON)")?,
                });
            }
            _ => say!("answer a, d or e"),
        }
    }
}

/// An answer to record, or one recorded already (input, asked until it
/// fits).
enum Decided {
    Answer(Answer),
    Now(toolgate_store::Recorded),
}

/// Prints how the run's first stretch went, and saves its pause for the
/// demo host.
async fn first_pause(
    host: &Host,
    registry: &Registry,
    out: Out,
    outcome: Outcome,
) -> Result<Option<String>, Failure> {
    let paused = match outcome {
        Outcome::Finished { answer, state } => {
            print_results(&state);
            say!("run {} finished: {}", state.run_id, answer);
            return Ok(None);
        }
        Outcome::LimitReached(state) => {
            print_results(&state);
            say!(
                "run {} stopped at its limit of model requests",
                state.run_id
            );
            return Ok(None);
        }
        Outcome::AwaitingApproval(run) => SuspendedRun::AwaitingApproval(run),
        Outcome::WaitingForInput(run) => SuspendedRun::WaitingForInput(run),
    };
    if !out.json {
        print_results(paused.state());
    }
    host.save(&paused).await?;
    show(registry, out, &paused).await?;
    Ok(Some(paused.run_id().to_owned()))
}

/// Every decision taken on the run, voided ones included, as a table.
async fn print_decision_log(store: &Store, out: Out, run_id: &str) -> Result<(), Failure> {
    let decisions = store.decisions(run_id).await?;
    let mut table = out.table(&[
        "DECISION",
        "BY",
        "NAMED BY",
        "REQUESTED BY",
        "SELF",
        "CALLS",
        "DIGEST",
        "STANDS",
    ]);
    for d in &decisions {
        table.row([
            Col::from(d.summary()),
            Col::from(&d.decided_by),
            Col::from(d.decided_by_source.as_str()),
            Col::from(&d.requested_by),
            Col::from(if d.self_decided { "yes" } else { "no" }),
            Col::from(super::runs::audited_calls(d)),
            Col::from(d.digest.to_string()),
            Col::from(
                d.voided
                    .as_deref()
                    .map_or_else(|| "yes".to_owned(), |why| format!("voided: {why}")),
            ),
        ]);
    }
    say!("decision log of run {}:", run_id);
    table.print();
    Ok(())
}
