//! `toolgate hook claude-code|codex`: the gate for a coding agent's own
//! tools, run by the client before (and after) each tool call
//! ([`toolgate_gateway::hook`]); and `toolgate hook declare|rule|list`,
//! the operator's declarations for those tools.
//!
//! A hook process answers one event and exits 0 or 2 — never another code,
//! whatever goes wrong (a panic included): a deny is exit 2 with the reason
//! on stderr.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::json;
use toolgate::visible::visible;
use toolgate_gateway::hook::{Client, HookEvent, HookGate, MAX_EVENT_BYTES, Verdict, rules};
use toolgate_store::{Location, Store, ToolDeclaration};

use super::identity::{operator_identity, os_account};
use crate::output::{Col, Out, say, timestamp};
use crate::{Cli, Failure, ToolSetting};

/// `toolgate hook …`.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum HookCommand {
    /// Answer one Claude Code hook event (`PreToolUse`, `PostToolUse`) read
    /// on stdin: the command a Claude Code `settings.json` hook runs.
    ClaudeCode(HookArgs),
    /// Answer one Codex hook event (`PreToolUse`, `PostToolUse`) read on
    /// stdin: the command a Codex `hooks.json` or `config.toml` hook runs.
    Codex(HookArgs),
    /// Declare what a client's tool needs: `on` (approval, the default for
    /// every tool), `off` (no approval: the client's own rules alone),
    /// `block` (never runs) or `inherit` (back to the default).
    Declare {
        /// `claude-code` or `codex`.
        client: String,
        /// The tool as the client names it: `Read`, `Bash`,
        /// `mcp__github__create_issue`.
        tool: String,
        /// `inherit`, `on`, `off` or `block`.
        #[arg(value_enum)]
        setting: ToolSetting,
        /// Who declares. Without it: `TOOLGATE_OPERATOR`, else the account
        /// of this process's user id.
        #[arg(long = "as")]
        operator: Option<String>,
    },
    /// Command rules: a shell command that is nothing but plain words
    /// beginning with a rule's words runs without approval.
    #[command(subcommand)]
    Rule(RuleCommand),
    /// Every client tool's declaration and every command rule.
    List,
}

/// `toolgate hook rule …`.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum RuleCommand {
    /// Let a shell command that begins with these words, and holds nothing
    /// but plain words, run without approval: `toolgate hook rule add
    /// claude-code git status`.
    Add {
        /// `claude-code` or `codex`.
        client: String,
        /// The words, as the command begins with them.
        #[arg(required = true, num_args = 1..)]
        words: Vec<String>,
        /// Who declares.
        #[arg(long = "as")]
        operator: Option<String>,
    },
    /// Remove a rule.
    Remove {
        /// `claude-code` or `codex`.
        client: String,
        /// The rule's words.
        #[arg(required = true, num_args = 1..)]
        words: Vec<String>,
    },
}

/// How a hook process submits a call.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct HookArgs {
    /// Submit to a toolgate gateway served with `--listen ADDR --hooks`
    /// under another account: `http://ADDR`. The recommended set-up: the
    /// agent's user can submit a call and never decide one.
    #[arg(long, env = "TOOLGATE_HOOK_SERVICE", value_name = "URL")]
    service: Option<String>,
    /// The file holding the token to submit with (`toolgate gateway token
    /// add NAME`), for `--service`.
    #[arg(long, env = "TOOLGATE_HOOK_TOKEN_FILE", value_name = "PATH")]
    token_file: Option<PathBuf>,
    /// For an `https://` service: the certificate (PEM) of the authority
    /// that signed its certificate — trusted alone, so that no other
    /// program answering at that address (one the agent started on a port
    /// the gateway left free) can answer for it.
    #[arg(long, env = "TOOLGATE_HOOK_SERVICE_CA", value_name = "PATH")]
    service_ca: Option<PathBuf>,
    /// Read and write the store itself, as this process's user: for one
    /// person who accepts that whoever runs the agent can decide its calls.
    #[arg(long, conflicts_with = "service")]
    direct: bool,
    /// How long, in seconds, a held call waits for its decision before the
    /// call is denied (asked again, it joins its run). Keep the client's
    /// hook timeout well above it. With `--service`, the gateway's `--wait`
    /// holds the call; this bounds the request.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=3600))]
    wait: u64,
    /// With `--direct`: a requester may not decide their own calls.
    #[arg(long)]
    four_eyes: bool,
    /// With `--direct`: how many people must approve a call.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    approvals: u32,
    /// A server already behind a toolgate gateway: the client's
    /// `mcp__SERVER__…` calls are gated there, not here. May be given more
    /// than once.
    #[arg(long, value_name = "SERVER")]
    behind_gateway: Vec<String>,
}

/// Runs a hook: reads the event on stdin, answers it, and exits 0 or 2 —
/// whatever happens, a panic included.
pub(crate) fn hook_process(cli: &Cli, client: Client, args: &HookArgs) -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(
            std::io::stderr(),
            "toolgate could not judge this call, so it does not run: the hook failed ({})",
            visible(&info.to_string())
        );
    }));
    let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| Verdict::failed(format!("cannot start the runtime ({error})")))?;
        let answered = runtime.block_on(async {
            tokio::select! {
                answered = answer(cli, client, args) => answered,
                signal = stopped() => (
                    Verdict::failed(format!("the hook was stopped ({signal})")),
                    toolgate_gateway::hook::HookKind::PreToolUse,
                ),
            }
        });
        // A read of stdin that never ends is left behind, not waited for.
        runtime.shutdown_timeout(Duration::from_millis(100));
        Ok::<_, Verdict>(answered)
    }));
    let (verdict, kind) = match answered {
        Ok(Ok(answered)) => answered,
        Ok(Err(verdict)) => (verdict, toolgate_gateway::hook::HookKind::PreToolUse),
        // The panic hook said why.
        Err(_) => return ExitCode::from(2),
    };
    let rendered = verdict.render(client, kind);
    // Never a panic on a closed stream: the exit code still says it.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), rendered.stdout.as_bytes());
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let _ = std::io::Write::write_all(&mut std::io::stderr(), rendered.stderr.as_bytes());
    ExitCode::from(rendered.exit)
}

/// How long a hook waits for its client to write the event and close stdin.
const READ_WITHIN: Duration = Duration::from_secs(10);

/// The signals a hook answers with a deny rather than dying with another
/// exit code (Linux numbers): all that end a process and can be caught —
/// SIGKILL and SIGSTOP cannot, and a fault (SIGSEGV, SIGILL, SIGFPE, SIGBUS)
/// is no request to stop.
const STOPPING: &[(i32, &str)] = &[
    (1, "SIGHUP"),
    (2, "SIGINT"),
    (3, "SIGQUIT"),
    (5, "SIGTRAP"),
    (6, "SIGABRT"),
    (10, "SIGUSR1"),
    (12, "SIGUSR2"),
    (14, "SIGALRM"),
    (15, "SIGTERM"),
    (16, "SIGSTKFLT"),
    (24, "SIGXCPU"),
    (25, "SIGXFSZ"),
    (26, "SIGVTALRM"),
    (27, "SIGPROF"),
    (30, "SIGPWR"),
    (31, "SIGSYS"),
];

/// Resolves when the process is sent a signal that would end it: the call
/// is denied, with exit 2, rather than the process dying with a code a
/// client reads as a failure that lets the call run.
async fn stopped() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (tell, mut told) = tokio::sync::mpsc::channel(STOPPING.len());
    for &(number, name) in STOPPING {
        if let Ok(mut stream) = signal(SignalKind::from_raw(number)) {
            let tell = tell.clone();
            tokio::spawn(async move {
                if stream.recv().await.is_some() {
                    let _ = tell.send(name).await;
                }
            });
        }
    }
    drop(tell);
    match told.recv().await {
        Some(name) => name,
        None => std::future::pending().await,
    }
}

/// The verdict on the event on stdin, and which hook asked.
async fn answer(
    cli: &Cli,
    client: Client,
    args: &HookArgs,
) -> (Verdict, toolgate_gateway::hook::HookKind) {
    use toolgate_gateway::hook::HookKind;
    // A client writes the event and closes stdin; one that keeps it open
    // is answered all the same, before its own timeout lets the call run.
    let read = tokio::task::spawn_blocking(|| {
        let mut bytes = Vec::new();
        let limit = u64::try_from(MAX_EVENT_BYTES).unwrap_or(u64::MAX) + 1;
        std::io::stdin()
            .take(limit)
            .read_to_end(&mut bytes)
            .map(|_| bytes)
    });
    let bytes = match tokio::time::timeout(READ_WITHIN, read).await {
        Ok(Ok(Ok(bytes))) => bytes,
        Ok(Ok(Err(error))) => {
            return (
                Verdict::failed(format!("the event cannot be read ({error})")),
                HookKind::PreToolUse,
            );
        }
        Ok(Err(error)) => {
            return (
                Verdict::failed(format!("the event cannot be read ({error})")),
                HookKind::PreToolUse,
            );
        }
        Err(_) => {
            return (
                Verdict::failed(format!(
                    "stdin was not closed within {} seconds of the hook's start",
                    READ_WITHIN.as_secs()
                )),
                HookKind::PreToolUse,
            );
        }
    };
    let event = match HookEvent::parse(&bytes) {
        Ok(event) => event,
        Err(error) => return (Verdict::failed(error), HookKind::PreToolUse),
    };
    let kind = event.kind;
    if let Some(why) = toolgate_gateway::hook::gated_elsewhere(&args.behind_gateway, &event.tool) {
        return (Verdict::None { why }, kind);
    }
    let verdict = match (&args.service, args.direct) {
        (Some(service), _) => submit(service, args, client, &bytes).await,
        (None, true) => direct(cli, client, args, &event).await,
        (None, false) => Verdict::failed(
            "the hook is not told where to submit: give `--service URL --token-file PATH` (a gateway served with `--hooks` under another account), or `--direct`",
        ),
    };
    tracing::info!(%client, verdict = ?verdict, "a hook was answered");
    (verdict, kind)
}

/// Submits the event to a gateway served with `--hooks`.
async fn submit(service: &str, args: &HookArgs, client: Client, bytes: &[u8]) -> Verdict {
    let Some(path) = &args.token_file else {
        return Verdict::failed("`--service` needs `--token-file PATH`, the token to submit with");
    };
    let token = match std::fs::read_to_string(path) {
        Ok(token) => token.trim().to_owned(),
        Err(error) => {
            return Verdict::failed(format!(
                "the token file {} cannot be read ({error})",
                visible(&path.display().to_string())
            ));
        }
    };
    let url = format!("{}/hook/{}", service.trim_end_matches('/'), client.name());
    let mut http = reqwest::Client::builder()
        .timeout(Duration::from_secs(args.wait) + Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none());
    match (&args.service_ca, service.starts_with("https://")) {
        (Some(path), true) => {
            let pem = match std::fs::read(path) {
                Ok(pem) => pem,
                Err(error) => {
                    return Verdict::failed(format!(
                        "the service's authority {} cannot be read ({error})",
                        visible(&path.display().to_string())
                    ));
                }
            };
            match reqwest::Certificate::from_pem(&pem) {
                Ok(ca) => http = http.tls_certs_only([ca]),
                Err(error) => {
                    return Verdict::failed(format!(
                        "the service's authority {} is not a PEM certificate ({error})",
                        visible(&path.display().to_string())
                    ));
                }
            }
        }
        (Some(_), false) => {
            return Verdict::failed(
                "`--service-ca` is for an `https://` service: give the service's https address",
            );
        }
        (None, _) => {}
    }
    let http = match http.build() {
        Ok(http) => http,
        Err(error) => return Verdict::failed(format!("no HTTP client ({error})")),
    };
    let response = match http
        .post(&url)
        .bearer_auth(token)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(bytes.to_vec())
        .send()
        .await
    {
        Ok(response) => response,
        Err(error) => {
            return Verdict::failed(format!(
                "the toolgate service at {} cannot be reached ({error})",
                visible(service)
            ));
        }
    };
    let status = response.status();
    let body = match response.bytes().await {
        Ok(body) => body,
        Err(error) => return Verdict::failed(format!("the service's answer was cut ({error})")),
    };
    if !status.is_success() {
        let said = String::from_utf8_lossy(&body[..body.len().min(2000)]).into_owned();
        return Verdict::failed(format!(
            "the toolgate service refused the call ({status}): {}",
            visible(&said)
        ));
    }
    serde_json::from_slice::<Verdict>(&body).unwrap_or_else(|error| {
        Verdict::failed(format!("the service's answer does not read ({error})"))
    })
}

/// Judges the event against the store itself.
async fn direct(cli: &Cli, client: Client, args: &HookArgs, event: &HookEvent) -> Verdict {
    let _ = writeln!(
        std::io::stderr(),
        "toolgate hook --direct: this hook writes the store itself, so whoever runs this agent can decide its calls; submit to a gateway under another account (`--service`) to keep deciding apart"
    );
    let location = match cli
        .database_url
        .as_deref()
        .filter(|url| !url.trim().is_empty())
    {
        Some(url) => match Location::try_parse(url) {
            Ok(location) => location,
            Err(error) => return Verdict::failed(error),
        },
        None => Location::Sqlite(super::data_dir(cli.data_dir.clone()).join("toolgate.db")),
    };
    let key = match super::identity::integrity_key(cli.integrity_key_file.as_deref()) {
        Ok(key) => key,
        Err(failure) => return Verdict::failed(failure.message()),
    };
    let mut store = match Store::open(location).await {
        Ok(store) => store,
        Err(error) => return Verdict::failed(format!("the store cannot be opened ({error})")),
    };
    if let Some(key) = key {
        store = store.with_integrity_key(key);
    }
    let requester = os_account().name().to_owned();
    let verdict = HookGate::new(store.clone(), client)
        .wait(Duration::from_secs(args.wait))
        .four_eyes(args.four_eyes)
        .approvals(args.approvals)
        .behind_gateway(args.behind_gateway.clone())
        .answer(event, &requester)
        .await;
    store.close().await;
    verdict
}

fn client_named(name: &str) -> Result<Client, Failure> {
    Client::named(name).ok_or_else(|| {
        Failure::Usage(format!(
            "no client `{}`: hooks are answered for `claude-code` and `codex`",
            visible(name)
        ))
    })
}

/// `toolgate hook declare|rule|list`.
pub(super) async fn command(store: &Store, out: Out, command: HookCommand) -> Result<(), Failure> {
    match command {
        // Answered before the store is opened (`hook_process`).
        HookCommand::ClaudeCode(_) | HookCommand::Codex(_) => Ok(()),
        HookCommand::Declare {
            client,
            tool,
            setting,
            operator,
        } => {
            let client = client_named(&client)?;
            let operator = operator_identity(operator.as_deref())?;
            let declaration = match setting {
                ToolSetting::Inherit => ToolDeclaration::Inherit,
                ToolSetting::On => ToolDeclaration::ApprovalRequired,
                ToolSetting::Off => ToolDeclaration::NoApproval,
                ToolSetting::Block => ToolDeclaration::Blocked,
            };
            store
                .declare_client_tool(client.name(), &tool, declaration, &operator)
                .await
                .map_err(|error| match error {
                    toolgate_store::StoreError::InvalidClientTool { .. } => {
                        Failure::Usage(error.to_string())
                    }
                    other => other.into(),
                })?;
            if out.json {
                return out.json(&json!({
                    "client": client.name(), "tool": tool, "declaration": declaration.label(),
                }));
            }
            say!(
                "{}'s `{}`: {}",
                client.name(),
                tool,
                words(declaration, client.is_shell(&tool))
            );
            Ok(())
        }
        HookCommand::Rule(RuleCommand::Add {
            client,
            words,
            operator,
        }) => {
            let client = client_named(&client)?;
            let words = rules::rule_words(&words).map_err(Failure::Usage)?;
            let operator = operator_identity(operator.as_deref())?;
            let added = store
                .add_command_rule(client.name(), &words, &operator)
                .await
                .map_err(|error| Failure::Usage(error.to_string()))?;
            if out.json {
                return out.json(&json!({"client": client.name(), "rule": words, "added": added}));
            }
            if added {
                say!(
                    "{}'s shell: a command of plain words that begins `{}` runs without approval (any quoting, `;`, `&&`, `|`, `$(…)`, redirection or assignment makes it wait)",
                    client.name(),
                    words.join(" ")
                );
            } else {
                say!(
                    "{}'s shell has the rule `{}` already",
                    client.name(),
                    words.join(" ")
                );
            }
            Ok(())
        }
        HookCommand::Rule(RuleCommand::Remove { client, words }) => {
            let client = client_named(&client)?;
            if store.remove_command_rule(client.name(), &words).await? {
                say!("{}'s rule `{}` removed", client.name(), words.join(" "));
                Ok(())
            } else {
                Err(Failure::NotFound(format!(
                    "{} has no rule `{}` (`toolgate hook list`)",
                    client.name(),
                    visible(&words.join(" "))
                )))
            }
        }
        HookCommand::List => list(store, out).await,
    }
}

/// A declaration in words, as a tool's gate.
fn words(declaration: ToolDeclaration, shell: bool) -> &'static str {
    match declaration {
        ToolDeclaration::Inherit | ToolDeclaration::ApprovalRequired if shell => {
            "every call waits for approval, but for a command a rule lets run"
        }
        ToolDeclaration::Inherit | ToolDeclaration::ApprovalRequired => {
            "every call waits for approval"
        }
        ToolDeclaration::NoApproval => "runs without approval (the client's own rules still apply)",
        ToolDeclaration::Blocked => "never runs: every call is denied",
        ToolDeclaration::Unreadable => {
            "the declaration does not read: every call waits for approval"
        }
    }
}

async fn list(store: &Store, out: Out) -> Result<(), Failure> {
    let tools = store.client_tools().await?;
    let rules = store.command_rules(None).await?;
    if out.json {
        return out.json(&listing_json(&tools, &rules));
    }
    print_listing(out, &tools, &rules);
    Ok(())
}

/// The declarations of clients' tools and the command rules, as JSON.
pub(super) fn listing_json(
    tools: &[toolgate_store::ClientToolRecord],
    rules: &[toolgate_store::CommandRule],
) -> serde_json::Value {
    json!({
            "tools": tools.iter().map(|t| json!({
                "client": t.client, "tool": t.tool, "declaration": t.declaration.label(),
                "stored": t.stored.to_string(), "declared_by": t.declared_by, "declared_at": t.declared_at,
            })).collect::<Vec<_>>(),
            "rules": rules.iter().map(|r| json!({
                "client": r.client, "words": r.words, "declared_by": r.declared_by, "declared_at": r.declared_at,
            })).collect::<Vec<_>>(),
    })
}

/// The declarations of clients' tools and the command rules, as tables.
pub(super) fn print_listing(
    out: Out,
    tools: &[toolgate_store::ClientToolRecord],
    rules: &[toolgate_store::CommandRule],
) {
    say!("Every tool of a client not listed here waits for approval.");
    if !tools.is_empty() {
        print_tools(out, tools);
    }
    if rules.is_empty() {
        say!("No command rules: every shell command waits for approval.");
    } else {
        print_rules(out, rules);
    }
}

fn print_tools(out: Out, tools: &[toolgate_store::ClientToolRecord]) {
    let mut table = out.table(&["CLIENT", "TOOL", "GATE", "DECLARED BY"]);
    for t in tools {
        let shell = Client::named(&t.client).is_some_and(|c| c.is_shell(&t.tool));
        table.row([
            Col::from(&t.client),
            Col::from(&t.tool),
            Col::from(words(t.declaration, shell)),
            Col::from(format!("{} at {}", t.declared_by, timestamp(t.declared_at))),
        ]);
    }
    table.print();
}

fn print_rules(out: Out, rules: &[toolgate_store::CommandRule]) {
    say!("Command rules: a command of plain words beginning so runs without approval.");
    let mut table = out.table(&["CLIENT", "COMMAND BEGINS", "DECLARED BY"]);
    for r in rules {
        table.row([
            Col::from(&r.client),
            Col::from(r.words.join(" ")),
            Col::from(format!("{} at {}", r.declared_by, timestamp(r.declared_at))),
        ]);
    }
    table.print();
}
