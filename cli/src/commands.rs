//! The commands.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use comfy_table::Cell;
use serde_json::{Value, json};
use toolgate::{
    Agent, ApprovalDecision, ApprovalVerdict, InputSubmission, MemoryLog, OperatorDeclaration,
    Outcome, Registry, ResumeError, RunOptions, RunRequest, SuspendedRun, TurnDigest, Verdict,
};
use toolgate_mcp::{Deadlines, ImportProgress, ImportReport};
use toolgate_store::{
    ClaimError, DataClass, LoadError, NewServer, ServerRecord, Store, StoreError, Transport,
};

use crate::host::{self, DEMO_SERVER, DemoModel, Workspace};
use crate::output::{Out, timestamp};
use crate::{Cli, Command, DecideArgs, DemoArgs, Failure, OnOff, RunsCommand, ServerCommand};

fn store_failure(error: StoreError) -> Failure {
    match error {
        StoreError::NoSuchServer(_) => Failure::NotFound(error.to_string()),
        StoreError::ServerExists(_) | StoreError::InvalidServerId { .. } => {
            Failure::Refused(error.to_string())
        }
        other => Failure::Error(other.to_string()),
    }
}

fn data_dir(given: Option<PathBuf>) -> PathBuf {
    if let Some(dir) = given {
        return dir;
    }
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(xdg).join("toolgate");
    }
    if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(home)
            .join(".local")
            .join("share")
            .join("toolgate");
    }
    PathBuf::from(".toolgate")
}

pub(crate) async fn run(cli: Cli) -> Result<(), Failure> {
    let out = Out::new(cli.json);
    let data_dir = data_dir(cli.data_dir);
    let store = Store::open(data_dir.join("toolgate.db"))
        .await
        .map_err(|e| Failure::Error(e.to_string()))?;
    let workspace = Workspace::new(&data_dir);
    let result = match cli.command {
        Command::Server(command) => server(&store, out, command).await,
        Command::Import { server, timeout } => {
            let deadlines = Deadlines {
                connect: Duration::from_secs(timeout),
                list_page: Duration::from_secs(timeout),
                ..Deadlines::default()
            };
            import(&store, out, &server, deadlines).await.map(drop)
        }
        Command::Tools => tools(&store, &workspace, out).await,
        Command::Runs(command) => runs(&store, &workspace, out, command).await,
        Command::Demo(args) => demo(&store, &workspace, out, args).await,
        Command::McpTestServer { .. } => Ok(()),
    };
    store.close().await;
    result
}

// ------------------------------------------------------------------ servers

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
        "usable": server.is_usable(),
        "inert_reason": server.inert_reason(),
        "import": server.import,
    })
}

async fn server(store: &Store, out: Out, command: ServerCommand) -> Result<(), Failure> {
    match command {
        ServerCommand::Add {
            id,
            name,
            url,
            data_class,
            command,
        } => {
            let transport = match (url, command.is_empty()) {
                (Some(url), _) => Transport::Http { url },
                (None, false) => Transport::Stdio { command },
                (None, true) => {
                    return Err(Failure::Refused(
                        "give the server's --url, or its program and arguments after `--`".into(),
                    ));
                }
            };
            let server = store
                .add_server(NewServer {
                    id,
                    name,
                    transport,
                    data_class,
                })
                .await
                .map_err(store_failure)?;
            if out.json {
                return out.json(&server_json(&server));
            }
            println!(
                "added server `{}`: its tools require approval until you run `toolgate server set-approval {} off`",
                server.id, server.id
            );
            if let Some(reason) = server.inert_reason() {
                println!("it supplies no tools yet: {reason} (`toolgate server set-data-class`)");
            }
            Ok(())
        }
        ServerCommand::List => list_servers(store, out).await,
        ServerCommand::Show { id } => show_server(store, out, &id).await,
        ServerCommand::SetApproval { id, setting } => {
            let declaration = match setting {
                OnOff::On => OperatorDeclaration::ApprovalRequired,
                OnOff::Off => OperatorDeclaration::NoApproval,
            };
            let (before, after) = store
                .set_approval(&id, declaration)
                .await
                .map_err(store_failure)?;
            if out.json {
                return out.json(&json!({"server": id, "before": approval_word(before.approval), "after": approval_word(after.approval)}));
            }
            if before.approval == after.approval {
                println!(
                    "server `{id}`: approval {} (unchanged)",
                    approval_word(after.approval)
                );
            } else {
                println!(
                    "server `{id}`: approval {} → {}",
                    approval_word(before.approval),
                    approval_word(after.approval)
                );
            }
            Ok(())
        }
        ServerCommand::SetDataClass { id, class } => {
            let s = store
                .set_data_class(&id, class)
                .await
                .map_err(store_failure)?;
            println!(
                "server `{id}`: data class {class}{}",
                s.inert_reason()
                    .map(|r| format!(" (still inert: {r})"))
                    .unwrap_or_default()
            );
            Ok(())
        }
        ServerCommand::Enable { id } => {
            store.set_enabled(&id, true).await.map_err(store_failure)?;
            println!("server `{id}`: enabled");
            Ok(())
        }
        ServerCommand::Disable { id } => {
            store.set_enabled(&id, false).await.map_err(store_failure)?;
            println!("server `{id}`: disabled; it supplies no tools");
            Ok(())
        }
        ServerCommand::Remove { id } => {
            store.remove_server(&id).await.map_err(store_failure)?;
            println!("server `{id}`: removed, with its catalogue");
            Ok(())
        }
    }
}

async fn list_servers(store: &Store, out: Out) -> Result<(), Failure> {
    let servers = store.servers().await.map_err(store_failure)?;
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
        "LAST IMPORT",
    ]);
    for s in &servers {
        let state = s
            .inert_reason()
            .map_or_else(|| "usable".to_owned(), |r| format!("inert: {r}"));
        let import = match (&s.import.at, &s.import.error) {
            (None, _) => "never".to_owned(),
            (Some(at), None) => format!("ok at {}", timestamp(*at)),
            (Some(at), Some(error)) => format!("failed at {}: {error}", timestamp(*at)),
        };
        table.add_row(vec![
            Cell::new(&s.id),
            Cell::new(&s.name),
            Cell::new(s.transport.describe()),
            Cell::new(s.data_class_stored.as_deref().unwrap_or("(undeclared)")),
            out.gate(if s.approval == OperatorDeclaration::NoApproval {
                "runs"
            } else {
                "approval"
            })
            .set_alignment(comfy_table::CellAlignment::Left),
            Cell::new(state),
            Cell::new(import),
        ]);
    }
    println!("{table}");
    Ok(())
}

async fn show_server(store: &Store, out: Out, id: &str) -> Result<(), Failure> {
    let s = store.server(id).await.map_err(store_failure)?;
    let rows = store.catalogue(id).await.map_err(store_failure)?;
    if out.json {
        let mut value = server_json(&s);
        value["catalogue"] = rows
            .iter()
            .map(|r| {
                json!({
                    "local_name": r.local_name, "remote_name": r.remote_name,
                    "description": r.description, "orphaned": r.orphaned,
                    "annotations": r.annotations.as_deref().and_then(|a| serde_json::from_str::<Value>(a).ok()),
                })
            })
            .collect();
        return out.json(&value);
    }
    let mut table = out.table(&["FIELD", "VALUE"]);
    table.add_row(vec!["server", &s.id]);
    table.add_row(vec!["name", &s.name]);
    table.add_row(vec!["transport".to_owned(), s.transport.describe()]);
    table.add_row(vec![
        "data class",
        s.data_class_stored.as_deref().unwrap_or("(undeclared)"),
    ]);
    table.add_row(vec![
        "approval".to_owned(),
        format!(
            "{} (stored: {:?})",
            approval_word(s.approval),
            s.stored_flag
        ),
    ]);
    table.add_row(vec!["enabled".to_owned(), s.enabled.to_string()]);
    table.add_row(vec![
        "state".to_owned(),
        s.inert_reason()
            .map_or_else(|| "usable".to_owned(), |r| format!("inert: {r}")),
    ]);
    table.add_row(vec![
        "last import".to_owned(),
        format!(
            "{}{}",
            s.import.status,
            s.import
                .error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ),
    ]);
    println!("{table}");
    let mut catalogue = out.table(&[
        "TOOL",
        "REMOTE NAME",
        "STATE",
        "SERVER'S CLAIMS (not used for the decision)",
    ]);
    for r in &rows {
        catalogue.add_row(vec![
            r.local_name.as_str(),
            r.remote_name.as_str(),
            if r.orphaned { "orphaned" } else { "live" },
            r.annotations.as_deref().unwrap_or("-"),
        ]);
    }
    println!("{catalogue}");
    Ok(())
}

// ------------------------------------------------------------------- import

async fn import(
    store: &Store,
    out: Out,
    server: &str,
    deadlines: Deadlines,
) -> Result<ImportReport, Failure> {
    let bar = if out.json || !std::io::stderr().is_terminal() {
        indicatif::ProgressBar::hidden()
    } else {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.enable_steady_tick(Duration::from_millis(100));
        bar
    };
    let mut progress = |event: ImportProgress| match event {
        ImportProgress::Connecting => bar.set_message(format!("{server}: connecting")),
        ImportProgress::Page { pages, tools, more } => bar.set_message(format!(
            "{server}: page {pages}, {tools} tools{}",
            if more { ", more to come" } else { "" }
        )),
        ImportProgress::Storing { tools } => {
            bar.set_message(format!("{server}: storing {tools} tools"));
        }
    };
    let result = toolgate_mcp::import(store, server, deadlines, &mut progress).await;
    bar.finish_and_clear();
    let report = result.map_err(|e| match e {
        toolgate_mcp::ImportError::Store(error) => store_failure(error),
        other => Failure::Error(other.to_string()),
    })?;
    if out.json {
        out.json(&json!({
            "server": report.server, "pages": report.pages, "listed": report.listed,
            "added": report.change.added, "changed": report.change.changed,
            "restored": report.change.restored, "unchanged": report.change.unchanged,
            "orphaned": report.change.orphaned,
            "skipped": report.skipped.iter().map(|s| json!({"remote_name": s.remote_name, "reason": s.reason.to_string()})).collect::<Vec<_>>(),
        }))?;
        return Ok(report);
    }
    println!(
        "imported `{}`: {} tools listed in {} pages",
        report.server, report.listed, report.pages
    );
    let mut table = out.table(&["RESULT", "COUNT", "TOOLS"]);
    Out::wrap(&mut table);
    let names = |v: &[String]| v.join(", ");
    table.add_row(vec![
        "new".to_owned(),
        report.change.added.len().to_string(),
        names(&report.change.added),
    ]);
    table.add_row(vec![
        "changed".to_owned(),
        report.change.changed.len().to_string(),
        names(&report.change.changed),
    ]);
    table.add_row(vec![
        "restored".to_owned(),
        report.change.restored.len().to_string(),
        names(&report.change.restored),
    ]);
    table.add_row(vec![
        "unchanged".to_owned(),
        report.change.unchanged.to_string(),
        String::new(),
    ]);
    table.add_row(vec![
        "orphaned".to_owned(),
        report.change.orphaned.len().to_string(),
        names(&report.change.orphaned),
    ]);
    table.add_row(vec![
        "skipped".to_owned(),
        report.skipped.len().to_string(),
        report
            .skipped
            .iter()
            .map(|s| format!("{} ({})", s.remote_name, s.reason))
            .collect::<Vec<_>>()
            .join("; "),
    ]);
    println!("{table}");
    Ok(report)
}

// -------------------------------------------------------------------- tools

async fn tools(store: &Store, workspace: &Workspace, out: Out) -> Result<(), Failure> {
    let (registry, provider) = host::registry(store, workspace).map_err(Failure::Error)?;
    let explanations = registry.explain_all().await;
    let rows = store.live_catalogue().await.map_err(store_failure)?;
    let claims = |name: &str| {
        rows.iter()
            .find(|r| r.local_name == name)
            .and_then(|r| r.annotations.clone())
    };
    let (_, skipped) = provider.build_tools().await.map_err(store_failure)?;
    let servers = store.servers().await.map_err(store_failure)?;
    if out.json {
        let tools: Vec<Value> = explanations
            .iter()
            .map(|e| {
                json!({
                    "name": e.name,
                    "origin": e.server.clone().unwrap_or_else(|| "builtin".into()),
                    "effect": e.effect.as_str(),
                    "gate": e.decision.pause.as_str(),
                    "cause": e.cause_text(),
                    "server_claims": claims(&e.name).and_then(|c| serde_json::from_str::<Value>(&c).ok()),
                })
            })
            .collect();
        provider.close().await;
        return out.json(&json!({
            "tools": tools,
            "skipped": skipped.iter().map(|s| json!({"tool": s.local_name, "reason": s.reason.to_string()})).collect::<Vec<_>>(),
            "inert_servers": servers.iter().filter_map(|s| s.inert_reason().map(|r| json!({"server": s.id, "reason": r}))).collect::<Vec<_>>(),
        }));
    }
    let mut table = out.table(&[
        "TOOL",
        "ORIGIN",
        "EFFECT",
        "GATE",
        "CAUSE",
        "SERVER'S CLAIMS (not used)",
    ]);
    for e in &explanations {
        table.add_row(vec![
            Cell::new(&e.name),
            Cell::new(
                e.server
                    .as_deref()
                    .map_or_else(|| "builtin".to_owned(), |s| format!("server {s}")),
            ),
            Cell::new(e.effect.as_str()),
            out.gate(e.decision.pause.as_str()),
            Cell::new(e.cause_text()),
            Cell::new(claims(&e.name).unwrap_or_else(|| "-".into())),
        ]);
    }
    println!("{table}");
    println!(
        "A server's claims are shown as it sent them; no decision reads them. A remote tool's effect is assumed, not claimed."
    );
    for s in servers.iter().filter(|s| !s.is_usable()) {
        if let Some(reason) = s.inert_reason() {
            println!("server `{}` supplies no tools: {reason}", s.id);
        }
    }
    for s in &skipped {
        println!(
            "left out `{}` of server `{}`: {}",
            s.local_name, s.server, s.reason
        );
    }
    provider.close().await;
    Ok(())
}

// --------------------------------------------------------------------- runs

async fn runs(
    store: &Store,
    workspace: &Workspace,
    out: Out,
    command: RunsCommand,
) -> Result<(), Failure> {
    match command {
        RunsCommand::List => {
            let open = store.open_runs().await.map_err(store_failure)?;
            if out.json {
                return out.json(&open.iter().map(|r| json!({
                    "run": r.run_id, "status": r.status, "requested_by": r.requested_by,
                    "digest": r.digest, "since": timestamp(r.created_at), "problem": r.problem,
                })).collect::<Vec<_>>());
            }
            let mut table = out.table(&[
                "RUN",
                "STATUS",
                "REQUESTED BY",
                "SINCE",
                "DIGEST",
                "PROBLEM",
            ]);
            for r in &open {
                table.add_row(vec![
                    Cell::new(&r.run_id),
                    out.gate(if r.status == "waiting_for_input" {
                        "input"
                    } else {
                        "approval"
                    }),
                    Cell::new(&r.requested_by),
                    Cell::new(timestamp(r.created_at)),
                    Cell::new(&r.digest),
                    Cell::new(r.problem.as_deref().unwrap_or("-")),
                ]);
            }
            println!("{table}");
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
            decide_command(store, workspace, out, args, Act::Approve).await
        }
        RunsCommand::Deny(args) => decide_command(store, workspace, out, args, Act::Deny).await,
        RunsCommand::Input { decide, data } => {
            let data: Value = serde_json::from_str(&data)
                .map_err(|e| Failure::Refused(format!("the input is not JSON: {e}")))?;
            decide_command(store, workspace, out, decide, Act::Input(data)).await
        }
    }
}

async fn load(store: &Store, run: &str) -> Result<SuspendedRun, Failure> {
    store.load_suspended(run).await.map_err(|e| match e {
        LoadError::NotFound(_) => Failure::NotFound(e.to_string()),
        other => Failure::Error(other.to_string()),
    })
}

async fn show(registry: &Registry, out: Out, run: &SuspendedRun) -> Result<(), Failure> {
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
    println!(
        "run {} — {} — requested by {}",
        run.run_id(),
        run.status().as_str().replace('_', " "),
        run.state().requested_by
    );
    let mut table = out.table(&["CALL", "TOOL", "GATE", "ARGUMENTS"]);
    for call in run.pending() {
        let gate = offered.get(&call.name).map_or("not offered", |t| {
            if input.as_ref().is_some_and(|(id, _)| *id == call.id) {
                "input"
            } else {
                t.decision().pause.as_str()
            }
        });
        table.add_row(vec![
            Cell::new(&call.id),
            Cell::new(&call.name),
            out.gate(gate),
            Cell::new(serde_json::to_string(&call.arguments).unwrap_or_default()),
        ]);
    }
    println!("{table}");
    if let Some((_, schema)) = input {
        println!(
            "input schema: {}",
            serde_json::to_string(&schema).unwrap_or_default()
        );
    }
    println!("digest: {}", run.digest());
    Ok(())
}

enum Act {
    Approve,
    Deny,
    Input(Value),
}

async fn decide_command(
    store: &Store,
    workspace: &Workspace,
    out: Out,
    args: DecideArgs,
    act: Act,
) -> Result<(), Failure> {
    let (registry, provider) = host::registry(store, workspace).map_err(Failure::Error)?;
    let digest = args.digest.map(TurnDigest::from_text);
    let result = decide(store, &registry, &args.run, act, digest, &args.operator).await;
    let result = match result {
        Ok(outcome) => report_outcome(store, &registry, out, outcome)
            .await
            .map(drop),
        Err(failure) => Err(failure),
    };
    provider.close().await;
    result
}

/// Checks, claims and takes one decision; the outcome's next pause, if any,
/// is saved.
async fn decide(
    store: &Store,
    registry: &Registry,
    run_id: &str,
    act: Act,
    digest: Option<TurnDigest>,
    operator: &str,
) -> Result<Outcome, Failure> {
    let run = load(store, run_id).await?;
    let verdict = match (&run, &act) {
        (SuspendedRun::AwaitingApproval(pending), Act::Approve | Act::Deny) => {
            let decision = approval(&act, digest.clone(), operator);
            pending
                .check_decision(&decision)
                .map_err(|r| Failure::Refused(r.to_string()))?;
            if matches!(act, Act::Approve) {
                Verdict::Approved
            } else {
                Verdict::Denied
            }
        }
        (SuspendedRun::WaitingForInput(pending), Act::Input(data)) => {
            let submission = InputSubmission {
                data: data.clone(),
                digest: digest.clone(),
                submitted_by: operator.to_owned(),
            };
            pending
                .check_input(&submission)
                .map_err(|r| Failure::Refused(r.to_string()))?;
            Verdict::InputSubmitted
        }
        (SuspendedRun::AwaitingApproval(_), Act::Input(_)) => {
            return Err(Failure::Refused(format!(
                "run `{run_id}` awaits approval, not input: use `toolgate runs approve` or `deny`"
            )));
        }
        (SuspendedRun::WaitingForInput(_), _) => {
            return Err(Failure::Refused(format!(
                "run `{run_id}` waits for input, not approval: use `toolgate runs input`"
            )));
        }
    };
    let claim = store
        .claim(run_id, digest.as_ref(), operator, verdict)
        .await
        .map_err(|e| match e {
            ClaimError::NotFound(_) => Failure::NotFound(e.to_string()),
            ClaimError::AlreadyDecided { .. } | ClaimError::StaleDigest { .. } => {
                Failure::Refused(e.to_string())
            }
            other => Failure::Error(other.to_string()),
        })?;
    let log = claim.log();
    let agent = Agent::new(registry, &DemoModel, &log);
    let suspension = claim.suspension_id;
    let result = match (claim.run, act) {
        (SuspendedRun::AwaitingApproval(pending), act @ (Act::Approve | Act::Deny)) => {
            let decision = approval(&act, digest, operator);
            pending
                .decide(&agent, decision)
                .await
                .map_err(resume_failure)
        }
        (SuspendedRun::WaitingForInput(pending), Act::Input(data)) => pending
            .submit_input(
                &agent,
                InputSubmission {
                    data,
                    digest,
                    submitted_by: operator.to_owned(),
                },
            )
            .await
            .map_err(resume_failure),
        _ => Err((
            true,
            Failure::Error("the run changed between loading and claiming it".into()),
        )),
    };
    match result {
        Ok(outcome) => Ok(outcome),
        Err((refused, failure)) => {
            if refused {
                store.release(suspension).await.map_err(store_failure)?;
            }
            Err(failure)
        }
    }
}

fn approval(act: &Act, digest: Option<TurnDigest>, operator: &str) -> ApprovalDecision {
    ApprovalDecision {
        verdict: if matches!(act, Act::Approve) {
            ApprovalVerdict::Approve
        } else {
            ApprovalVerdict::Deny
        },
        digest,
        decided_by: operator.to_owned(),
    }
}

/// (whether the decision was refused and so never taken, the failure)
fn resume_failure<S>(error: ResumeError<S>) -> (bool, Failure) {
    match error {
        ResumeError::Refused(refused) => (true, Failure::Refused(refused.reason.to_string())),
        ResumeError::Run(error) => (false, Failure::Error(error.to_string())),
    }
}

/// The results a run got that have not been shown yet.
fn print_results(out: Out, state: &toolgate::RunState) {
    if out.json {
        return;
    }
    // Results since the last assistant turn before the newest one.
    let turns: Vec<usize> = state
        .transcript
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, toolgate::Message::Assistant { .. }))
        .map(|(i, _)| i)
        .collect();
    let from = match turns.len() {
        0 | 1 => 0,
        n => turns[n - 2],
    };
    for message in &state.transcript[from..] {
        if let toolgate::Message::Tool {
            name,
            content,
            is_error,
            ..
        } = message
        {
            let mark = if *is_error { "error" } else { "ok" };
            println!(
                "  {name} → {mark}: {}",
                content.lines().next().unwrap_or_default()
            );
        }
    }
}

/// Prints where a run stands, saving its next pause. Returns the run id of a
/// pause, if there is one.
async fn report_outcome(
    store: &Store,
    registry: &Registry,
    out: Out,
    outcome: Outcome,
) -> Result<Option<String>, Failure> {
    match &outcome {
        Outcome::Finished { state, .. } | Outcome::LimitReached(state) => print_results(out, state),
        Outcome::AwaitingApproval(run) => print_results(out, run.state()),
        Outcome::WaitingForInput(run) => print_results(out, run.state()),
    }
    let paused = match outcome {
        Outcome::Finished { answer, state } => {
            if out.json {
                out.json(&json!({"run": state.run_id, "status": "finished", "answer": answer}))?;
            } else {
                println!("run {} finished: {answer}", state.run_id);
            }
            return Ok(None);
        }
        Outcome::LimitReached(state) => {
            println!(
                "run {} stopped at its limit of {} model requests",
                state.run_id, state.options.max_iterations
            );
            return Ok(None);
        }
        Outcome::AwaitingApproval(run) => SuspendedRun::AwaitingApproval(run),
        Outcome::WaitingForInput(run) => SuspendedRun::WaitingForInput(run),
    };
    store.save_suspended(&paused).await.map_err(store_failure)?;
    show(registry, out, &paused).await?;
    Ok(Some(paused.run_id().to_owned()))
}

// --------------------------------------------------------------------- demo

async fn demo(
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
        Ok(_) => {
            store
                .set_transport(DEMO_SERVER, &transport)
                .await
                .map_err(store_failure)?;
        }
        Err(StoreError::NoSuchServer(_)) => {
            store
                .add_server(NewServer {
                    id: DEMO_SERVER.into(),
                    name: "Notes (the built-in MCP test server)".into(),
                    transport,
                    data_class: Some(DataClass::EditorContent),
                })
                .await
                .map_err(store_failure)?;
            println!(
                "registered the MCP test server as `{DEMO_SERVER}` (approval required, data class editor_content)"
            );
        }
        Err(other) => return Err(store_failure(other)),
    }
    import(store, out, DEMO_SERVER, Deadlines::default()).await?;

    let (registry, provider) = host::registry(store, workspace).map_err(Failure::Error)?;
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
    let request = RunRequest {
        system: Some("You prepare releases.".into()),
        prompt:
            "Bump the version to 0.2.0, note it on the team's notes server and draft the release."
                .into(),
        requested_by: args.operator.clone(),
        options: RunOptions {
            four_eyes: args.four_eyes,
            ..RunOptions::default()
        },
    };
    println!("\n{} asks: {}", request.requested_by, request.prompt);
    let outcome = agent
        .start(request)
        .await
        .map_err(|e| Failure::Error(e.to_string()))?;
    let mut next = report_outcome(store, registry, out, outcome).await?;
    while let Some(run_id) = next {
        if args.detach {
            println!(
                "left waiting; decide with `toolgate runs approve|deny|input {run_id} --digest … --as …`"
            );
            return Ok(());
        }
        let run = load(store, &run_id).await?;
        let digest = Some(run.digest());
        let act = match &run {
            SuspendedRun::AwaitingApproval(_) => {
                let approve = if args.yes {
                    true
                } else if args.no {
                    false
                } else {
                    ask_yes_no("approve this turn?")?
                };
                println!(
                    "→ {} {}",
                    args.operator,
                    if approve { "approves" } else { "denies" }
                );
                if approve { Act::Approve } else { Act::Deny }
            }
            SuspendedRun::WaitingForInput(_) => {
                let data = match &args.input {
                    Some(text) => serde_json::from_str(text)
                        .map_err(|e| Failure::Refused(format!("--input is not JSON: {e}")))?,
                    None if interactive && !args.yes => ask_json("input (JSON)")?,
                    None => json!({"notes": "Faster gate, clearer errors."}),
                };
                println!("→ {} submits {data}", args.operator);
                Act::Input(data)
            }
        };
        let outcome = decide(store, registry, &run_id, act, digest, &args.operator).await?;
        next = report_outcome(store, registry, out, outcome).await?;
        if next.is_none() {
            let decisions = store.decisions(&run_id).await.map_err(store_failure)?;
            let mut table =
                out.table(&["DECISION", "BY", "REQUESTED BY", "SELF", "TOOLS", "DIGEST"]);
            for d in &decisions {
                table.add_row(vec![
                    d.verdict.as_str().to_owned(),
                    d.decided_by.clone(),
                    d.requested_by.clone(),
                    if d.self_decided { "yes" } else { "no" }.to_owned(),
                    d.tools.join(", "),
                    d.digest.to_string(),
                ]);
            }
            println!("decision log of run {run_id}:\n{table}");
        }
    }
    Ok(())
}

fn ask_line(prompt: &str) -> Result<String, Failure> {
    print!("{prompt} ");
    std::io::stdout()
        .flush()
        .map_err(|e| Failure::Error(e.to_string()))?;
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| Failure::Error(e.to_string()))?;
    Ok(line.trim().to_owned())
}

fn ask_yes_no(prompt: &str) -> Result<bool, Failure> {
    loop {
        match ask_line(&format!("{prompt} [y/n]"))?
            .to_lowercase()
            .as_str()
        {
            "y" | "yes" => return Ok(true),
            "n" | "no" => return Ok(false),
            _ => println!("answer y or n"),
        }
    }
}

fn ask_json(prompt: &str) -> Result<Value, Failure> {
    loop {
        match serde_json::from_str(&ask_line(&format!("{prompt}:"))?) {
            Ok(value) => return Ok(value),
            Err(error) => println!("not JSON ({error}); try again"),
        }
    }
}
