//! The commands.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::identity::{IdentitySource, Operator};
use toolgate::integrity::IntegrityKey;
use toolgate::{
    Agent, OperatorDeclaration, Registry,
    audit::DecisionKind,
    run::{Outcome, RunOptions, RunRequest},
    suspend::{Decision, InputSubmission, ResumeError, SuspendedRun, TurnDigest, Verdict},
    testing::MemoryLog,
};
use toolgate_mcp::{Deadlines, ImportProgress, ImportReport};
use toolgate_store::{
    ClaimError, DataClass, LoadError, NewServer, ServerRecord, Store, StoreError, Transport,
};

use crate::host::{self, DEMO_SERVER, DemoModel, Workspace};
use crate::output::{Col, Out, ask, say, stored_json, timestamp};
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
    let key = integrity_key(cli.integrity_key_file.as_deref())?;
    let mut store = Store::open(data_dir.join("toolgate.db"))
        .await
        .map_err(|e| Failure::Error(e.to_string()))?;
    if let Some(key) = key {
        store = store.with_integrity_key(key);
    }
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

/// The integrity key, from `--integrity-key-file` (or
/// `TOOLGATE_INTEGRITY_KEY_FILE`) or `TOOLGATE_INTEGRITY_KEY`; none when
/// neither is set. A key that cannot be read or is too short stops the
/// command: running unauthenticated by accident would be silent.
fn integrity_key(file: Option<&std::path::Path>) -> Result<Option<IntegrityKey>, Failure> {
    let secret = match file {
        Some(path) => std::fs::read(path).map_err(|e| {
            Failure::Error(format!(
                "cannot read the integrity key file {}: {e}",
                path.display()
            ))
        })?,
        None => match std::env::var("TOOLGATE_INTEGRITY_KEY") {
            Ok(secret) => secret.into_bytes(),
            Err(_) => return Ok(None),
        },
    };
    let secret = secret.trim_ascii();
    IntegrityKey::new(secret)
        .map(Some)
        .map_err(|e| Failure::Error(e.to_string()))
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
        ServerCommand::SetDataClass { id, class } => {
            let s = store
                .set_data_class(&id, class)
                .await
                .map_err(store_failure)?;
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
        ServerCommand::Enable { id } => {
            store.set_enabled(&id, true).await.map_err(store_failure)?;
            say!("server `{}`: enabled", id);
            Ok(())
        }
        ServerCommand::Disable { id } => {
            store.set_enabled(&id, false).await.map_err(store_failure)?;
            say!("server `{}`: disabled; it supplies no tools", id);
            Ok(())
        }
        ServerCommand::Remove { id } => {
            store.remove_server(&id).await.map_err(store_failure)?;
            say!("server `{}`: removed, with its catalogue", id);
            Ok(())
        }
    }
}

async fn add_server(store: &Store, out: Out, new: NewServer) -> Result<(), Failure> {
    let server = store.add_server(new).await.map_err(store_failure)?;
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
            "{} (stored: {:?})",
            approval_word(s.approval),
            s.stored_flag
        )),
    ]);
    table.row([Col::from("enabled"), Col::from(s.enabled.to_string())]);
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
    let mut catalogue = out.table(&[
        "TOOL",
        "REMOTE NAME",
        "STATE",
        "DESCRIPTION (as the server wrote it)",
        "SERVER'S CLAIMS (not used for the decision)",
    ]);
    for r in &rows {
        let claims = r.annotations.as_deref().map(stored_json);
        catalogue.row([
            Col::from(&r.local_name),
            Col::from(&r.remote_name),
            Col::from(if r.orphaned { "orphaned" } else { "live" }),
            Col::from(&r.description),
            claims.as_ref().map_or(Col::from("-"), Col::from),
        ]);
    }
    catalogue.print();
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
    // The progress line is output too: the server id passes the sanitiser.
    let shown = toolgate::visible::visible(server);
    let mut progress = |event: ImportProgress| match event {
        ImportProgress::Connecting => bar.set_message(format!("{shown}: connecting")),
        ImportProgress::Page { pages, tools, more } => bar.set_message(format!(
            "{shown}: page {pages}, {tools} tools{}",
            if more { ", more to come" } else { "" }
        )),
        ImportProgress::Storing { tools } => {
            bar.set_message(format!("{shown}: storing {tools} tools"));
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
    say!(
        "imported `{}`: {} tools listed in {} pages",
        report.server,
        report.listed,
        report.pages
    );
    let mut table = out.table(&["RESULT", "COUNT", "TOOLS"]);
    table.wrap();
    let mut row = |result: &str, names: &[String], count: usize| {
        table.row([
            Col::from(result),
            Col::from(count.to_string()),
            Col::from(names.join(", ")),
        ]);
    };
    row("new", &report.change.added, report.change.added.len());
    row(
        "changed",
        &report.change.changed,
        report.change.changed.len(),
    );
    row(
        "restored",
        &report.change.restored,
        report.change.restored.len(),
    );
    row("unchanged", &[], report.change.unchanged);
    row(
        "orphaned",
        &report.change.orphaned,
        report.change.orphaned.len(),
    );
    let skipped: Vec<String> = report
        .skipped
        .iter()
        .map(|s| format!("{} ({})", s.remote_name, s.reason))
        .collect();
    table.row([
        Col::from("skipped"),
        Col::from(skipped.len().to_string()),
        Col::from(skipped.join("; ")),
    ]);
    table.print();
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
                    "gate": e.ruling.pause.as_str(),
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
        let claims = claims(&e.name).as_deref().map(stored_json);
        table.row([
            Col::from(&e.name),
            Col::from(
                e.server
                    .as_deref()
                    .map_or_else(|| "builtin".to_owned(), |s| format!("server {s}")),
            ),
            Col::from(e.effect.as_str()),
            Col::Gate(e.ruling.pause.as_str()),
            Col::from(e.cause_text()),
            claims.as_ref().map_or(Col::from("-"), Col::from),
        ]);
    }
    table.print();
    say!(
        "A server's claims are shown as it sent them; no decision reads them. A remote tool's effect is assumed, not claimed."
    );
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
            if !store.is_authenticated() {
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
    say!(
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
                t.ruling().pause.as_str()
            }
        });
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
    say!("digest: {}", run.digest().as_str());
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
    let result = match operator_identity(args.operator.as_deref()) {
        Ok(operator) => {
            let verdict = match &act {
                Act::Approve => "approved",
                Act::Deny => "denied",
                Act::Input(_) => "input submitted",
            };
            let outcome = decide(store, &registry, &args.run, act, digest, &operator).await;
            if outcome.is_ok() && !out.json {
                say!(
                    "recorded: {} by {} (name from {})",
                    verdict,
                    operator.name(),
                    operator.source().as_str()
                );
            }
            outcome
        }
        Err(failure) => Err(failure),
    };
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
    decider: &Operator,
) -> Result<Outcome, Failure> {
    let operator = decider.name();
    let run = load(store, run_id).await?;
    let verdict = match (&run, &act) {
        (SuspendedRun::AwaitingApproval(pending), Act::Approve | Act::Deny) => {
            let decision = approval(&act, digest.clone(), operator);
            pending
                .check_decision(&decision)
                .map_err(|r| Failure::Refused(r.to_string()))?;
            if matches!(act, Act::Approve) {
                DecisionKind::Approved
            } else {
                DecisionKind::Denied
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
            DecisionKind::InputSubmitted
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
        .claim(run_id, digest.as_ref(), decider, verdict)
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

/// Who decides, and where the name came from: `--as`, else
/// `TOOLGATE_OPERATOR`, else the operating system's user (`USER`, then
/// `LOGNAME`). A name that does not normalise to a printable, non-empty name
/// is refused; with none of the three, the decision is refused.
pub(crate) fn operator_identity(flag: Option<&str>) -> Result<Operator, Failure> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let (name, source) = if let Some(flag) = flag {
        (flag.to_owned(), IdentitySource::Flag)
    } else if let Some(name) = env("TOOLGATE_OPERATOR") {
        (name, IdentitySource::Environment)
    } else if let Some(name) = env("USER").or_else(|| env("LOGNAME")) {
        (name, IdentitySource::OsUser)
    } else {
        return Err(Failure::Refused(
            "no operator identity: pass `--as NAME` or set TOOLGATE_OPERATOR".into(),
        ));
    };
    Operator::new(&name, source).map_err(|e| Failure::Refused(format!("{e} (from {source})")))
}

fn approval(act: &Act, digest: Option<TurnDigest>, operator: &str) -> Decision {
    Decision {
        verdict: if matches!(act, Act::Approve) {
            Verdict::Approve
        } else {
            Verdict::Deny
        },
        digest,
        decided_by: operator.to_owned(),
    }
}

/// (whether the decision was refused and so never taken, the failure)
fn resume_failure<S>(error: ResumeError<S>) -> (bool, Failure) {
    match error {
        ResumeError::Refused { reason, .. } => (true, Failure::Refused(reason.to_string())),
        ResumeError::Run(error) => (false, Failure::Error(error.to_string())),
        // A kind this build does not know: the claim is kept, never released.
        other => (false, Failure::Error(other.to_string())),
    }
}

/// The results a run got that have not been shown yet.
fn print_results(out: Out, state: &toolgate::run::RunState) {
    if out.json {
        return;
    }
    // Results since the last assistant turn before the newest one.
    let turns: Vec<usize> = state
        .transcript
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, toolgate::run::Message::Assistant { .. }))
        .map(|(i, _)| i)
        .collect();
    let from = match turns.len() {
        0 | 1 => 0,
        n => turns[n - 2],
    };
    for message in &state.transcript[from..] {
        if let toolgate::run::Message::Tool {
            name,
            content,
            is_error,
            ..
        } = message
        {
            let mark = if *is_error { "error" } else { "ok" };
            say!(
                "  {} → {}: {}",
                name,
                mark,
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
                say!("run {} finished: {}", state.run_id, answer);
            }
            return Ok(None);
        }
        Outcome::LimitReached(state) => {
            say!(
                "run {} stopped at its limit of {} model requests",
                state.run_id,
                state.options.max_iterations
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
            say!(
                "registered the MCP test server as `{}` (approval required, data class editor_content)",
                DEMO_SERVER
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
    // The demo is its own host: without `--as` or `TOOLGATE_OPERATOR` its
    // operator is the name it gives, `operator`.
    let decider = match (&args.operator, std::env::var("TOOLGATE_OPERATOR")) {
        (None, Err(_)) => Operator::new("operator", IdentitySource::Given)
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
            ..RunOptions::default()
        },
    };
    say!();
    say!("{} asks: {}", request.requested_by, request.prompt);
    let outcome = agent
        .start(request)
        .await
        .map_err(|e| Failure::Error(e.to_string()))?;
    let mut next = report_outcome(store, registry, out, outcome).await?;
    while let Some(run_id) = next {
        if args.detach {
            say!(
                "left waiting; decide with `toolgate runs approve|deny|input {} --digest … --as …`",
                run_id
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
                say!(
                    "→ {} {}",
                    decider.name(),
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
                say!("→ {} submits {}", decider.name(), data);
                Act::Input(data)
            }
        };
        let outcome = decide(store, registry, &run_id, act, digest, &decider).await?;
        next = report_outcome(store, registry, out, outcome).await?;
        if next.is_none() {
            let decisions = store.decisions(&run_id).await.map_err(store_failure)?;
            let mut table = out.table(&[
                "DECISION",
                "BY",
                "NAMED BY",
                "REQUESTED BY",
                "SELF",
                "TOOLS",
                "DIGEST",
            ]);
            for d in &decisions {
                table.row([
                    Col::from(d.verdict.as_str()),
                    Col::from(&d.decided_by),
                    Col::from(d.decided_by_source.as_str()),
                    Col::from(&d.requested_by),
                    Col::from(if d.self_decided { "yes" } else { "no" }),
                    Col::from(d.tools.join(", ")),
                    Col::from(d.digest.to_string()),
                ]);
            }
            say!("decision log of run {}:", run_id);
            table.print();
        }
    }
    Ok(())
}

fn ask_line(prompt: &str) -> Result<String, Failure> {
    ask!("{} ", prompt);
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
            _ => say!("answer y or n"),
        }
    }
}

fn ask_json(prompt: &str) -> Result<Value, Failure> {
    loop {
        match serde_json::from_str(&ask_line(&format!("{prompt}:"))?) {
            Ok(value) => return Ok(value),
            Err(error) => say!("not JSON ({}); try again", error.to_string()),
        }
    }
}
