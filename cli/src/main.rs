//! `toolgate`: the operator's command line.
//!
//! Exit codes: 0 done; 1 failed (a store, server or run error); 2 bad usage
//! (an unusable flag, server id, host name or URL);
//! 3 refused (a stale digest, a run already decided, a self-approval where
//! four eyes are required, input that does not fit its schema); 4 not found.
//!
//! Everything printed for a person passes `toolgate::visible` (see
//! `output`). Logs go to stderr, filtered by `TOOLGATE_LOG` (default
//! `error,rmcp=off`;
//! `TOOLGATE_LOG=toolgate_mcp=info` shows what stdio servers write to their
//! stderr), coloured only when stderr is a terminal and `NO_COLOR` is unset.

mod agent;
mod commands;
mod failure;
mod output;
mod runs_args;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

pub(crate) use crate::failure::Failure;
use crate::output::say_err;
pub(crate) use crate::runs_args::{
    ApproveArgs, ChooseArgs, DecideArgs, DenyArgs, ReviewArgs, RunsCommand,
};

/// Operate toolgate: MCP servers and their approval declarations, imports,
/// the tools a host sees, and suspended runs.
#[derive(Parser, Debug)]
#[command(name = "toolgate", version, about, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    /// Where the demo's files live — and the database, unless
    /// `--database-url` names one.
    #[arg(long, global = true, env = "TOOLGATE_DATA_DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// The store: a `postgres://user:password@host/database` URL (the
    /// database must exist; toolgate creates its tables), or an SQLite file
    /// (`sqlite:PATH` or a path). Default: `toolgate.db` in the data
    /// directory.
    #[arg(long, global = true, env = "TOOLGATE_DATABASE_URL", value_name = "URL")]
    pub(crate) database_url: Option<String>,
    /// Print listings as JSON, for scripts.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// A file holding the secret that authenticates stored runs and
    /// decisions (at least 16 bytes; surrounding white space is trimmed).
    /// Keep it outside the data directory. `TOOLGATE_INTEGRITY_KEY` may hold
    /// the secret itself instead.
    #[arg(long, global = true, env = "TOOLGATE_INTEGRITY_KEY_FILE")]
    pub(crate) integrity_key_file: Option<PathBuf>,
    #[command(subcommand)]
    pub(crate) command: Command,
}

const EXIT_CODES: &str = "Exit codes: 0 done, 1 failed, 2 bad usage (an unusable flag, name or URL), 3 refused (stale digest, already decided, self-approval under four eyes, invalid input), 4 not found.";

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Manage MCP servers and their declarations.
    #[command(subcommand)]
    Server(ServerCommand),
    /// Import a server's tool catalogue (connects to the server).
    Import {
        /// The server's identifier.
        server: String,
        /// Seconds allowed for each step (start, each page).
        #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..))]
        timeout: u64,
        /// The most tools the server may list; past it the import is refused
        /// and the stored catalogue kept.
        #[arg(long, default_value_t = toolgate_mcp::ImportLimits::DEFAULT_MAX_TOOLS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        max_tools: usize,
        /// The most MiB the server's catalogue may take as stored (names,
        /// descriptions, schemas, annotations); past it the import is refused
        /// and the stored catalogue kept.
        #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=65_536))]
        max_catalogue_mib: u64,
    },
    /// Every tool the host sees, with its gate and why.
    Tools,
    /// One imported tool's own declaration, which overrides its server's
    /// flag for that tool alone.
    #[command(subcommand)]
    Tool(ToolCommand),
    /// Suspended runs: list, show, approve, deny, input.
    #[command(subcommand)]
    Runs(RunsCommand),
    /// Run the demo: a scripted agent through the gate, end to end.
    Demo(DemoArgs),
    /// Be the demo's host: resume the decided runs it owns, as they are
    /// decided (`runs approve|deny|input` only record).
    Host(HostArgs),
    /// Serve every registered server's tools over stdio — or over HTTP with
    /// `--listen`, a person behind every token (`gateway token`) — as one
    /// MCP server whose every call passes the gate: point an MCP client at
    /// this.
    Gateway(GatewayArgs),
    /// Serve the operator's inbox on the web: the runs that wait, and a
    /// decision per run from a browser, for operators signed in.
    Inbox(InboxArgs),
    /// Tell people at once when a run waits: sinks (a signed webhook,
    /// Slack, email), their delivery status, and the dispatcher.
    #[command(subcommand)]
    Notify(commands::NotifyCommand),
    /// The gate for a coding agent's own tools: the command Claude Code's
    /// and Codex's hooks run (`hook claude-code`, `hook codex`), and the
    /// declarations of their tools and shell commands.
    #[command(subcommand)]
    Hook(commands::HookCommand),
    /// The people who sign in to the web inbox to decide: add (with a
    /// one-time sign-in link), list, revoke.
    #[command(subcommand)]
    Operator(OperatorCommand),
    /// Serve the built-in MCP test server over stdio (used by the demo).
    #[command(hide = true, name = "mcp-test-server")]
    McpTestServer {
        /// Flags for the test server.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum ToolCommand {
    /// Declare what one tool needs: `inherit` (its server's flag decides,
    /// the default), `on` (every call waits for approval), `off` (calls run
    /// unattended) or `block` (never offered). Blocked beats everything;
    /// then the tool's own `on` or `off`; then the server's flag.
    /// `off` makes the tool run unattended: without `--digest` it shows the
    /// definition it would judge and its digest, and changes nothing; with
    /// the digest shown, it pins exactly that definition (one changed since
    /// is refused, and one that changes later is quarantined until
    /// accepted).
    SetApproval {
        /// The tool, as `toolgate tools` and `server show` name it:
        /// `SERVER.TOOL`.
        tool: String,
        /// `inherit`, `on`, `off` or `block`.
        setting: ToolSetting,
        /// The digest of the definition you reviewed, for `off` (shown
        /// without it).
        #[arg(long)]
        digest: Option<String>,
        /// Who declares. Without it: `TOOLGATE_OPERATOR`, else the account
        /// of this process's user id (`uid-N` where it has none). The
        /// declaration records which.
        #[arg(long = "as")]
        operator: Option<String>,
    },
}

/// A tool's declaration, as the console takes it.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ToolSetting {
    /// Its server's flag decides.
    Inherit,
    /// Approval required.
    On,
    /// No approval, for the definition reviewed.
    Off,
    /// Never offered.
    Block,
}

#[derive(Subcommand, Debug)]
pub(crate) enum ServerCommand {
    /// Add a server. It requires approval until an operator turns that off.
    Add {
        /// The identifier; it prefixes every tool of the server.
        id: String,
        /// A name for people.
        #[arg(long)]
        name: String,
        /// The streamable HTTP endpoint: an `http://` or `https://` URL.
        #[arg(long, conflicts_with = "command", value_parser = parse_url)]
        url: Option<String>,
        /// What the server's tools return, least sensitive first:
        /// public_content, editor_content, source_code,
        /// internal_configuration, system_diagnostics, secret_adjacent.
        /// Without it the server is inert — it supplies no tools — until
        /// one is declared (`server set-data-class`); a notification sink
        /// is sent only runs of servers up to its ceiling.
        #[arg(long, value_name = "CLASS", value_parser = parse_class)]
        data_class: Option<toolgate_store::DataClass>,
        /// The program and arguments of a stdio server, after `--`.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// List the servers.
    List,
    /// Show one server and its catalogue.
    Show {
        /// The server.
        id: String,
    },
    /// Declare whether the server's tools need approval.
    /// Turning approval off makes the server's tools run unattended: without
    /// `--digest` it shows the tools it would judge and their digest, and
    /// changes nothing; with the digest shown, it acts on exactly those
    /// definitions (a catalogue changed since is refused).
    SetApproval {
        /// The server.
        id: String,
        /// `on`: every call waits for approval; `off`: calls run unattended.
        setting: OnOff,
        /// The digest of the tools you reviewed (shown without it, and by
        /// `server show`).
        #[arg(long)]
        digest: Option<String>,
    },
    /// Declare what the server's tools return.
    SetDataClass {
        /// The server.
        id: String,
        /// One of: public_content, editor_content, source_code,
        /// internal_configuration, system_diagnostics, secret_adjacent.
        #[arg(value_parser = parse_class)]
        class: toolgate_store::DataClass,
    },
    /// Let a requester answer this server's calls through their own MCP
    /// client (elicitation), or stop it. Off unless turned on: some clients
    /// answer without asking anyone.
    Elicitation {
        /// The server.
        id: String,
        /// `on` or `off`.
        #[arg(value_parser = ["on", "off"])]
        setting: String,
    },
    /// Let the server supply tools.
    Enable {
        /// The server.
        id: String,
    },
    /// Stop the server from supplying tools.
    Disable {
        /// The server.
        id: String,
    },
    /// Remove the server and its catalogue.
    Remove {
        /// The server.
        id: String,
    },
    /// Change how the server is reached.
    SetTransport {
        /// The server.
        id: String,
        /// The streamable HTTP endpoint: an `http://` or `https://` URL.
        #[arg(long, conflicts_with = "command", value_parser = parse_url)]
        url: Option<String>,
        /// The program and arguments of a stdio server, after `--`.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Accept the server's tools as they are now — all of them, or those
    /// named: on a server whose approval is off, a tool that is new or
    /// changed since an operator accepted it requires approval until
    /// accepted. Without `--digest` it shows what changed and the digest, and
    /// accepts nothing; with the digest shown, it accepts exactly those
    /// definitions (a catalogue changed since is refused).
    Accept {
        /// The server.
        id: String,
        /// The tools (local names); without any, every tool of the server.
        tools: Vec<String>,
        /// The digest of the definitions you reviewed (shown without it).
        #[arg(long)]
        digest: Option<String>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum OnOff {
    /// Approval required.
    On,
    /// No approval.
    Off,
}

/// An MCP server's streamable HTTP endpoint: refused at the door unless it
/// is an `http` or `https` URL with a host.
fn parse_url(text: &str) -> Result<String, String> {
    let url = url::Url::parse(text).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "`{}` is not an HTTP endpoint: MCP's streamable HTTP transport takes http:// or https://",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("the URL names no host".into());
    }
    Ok(text.to_owned())
}

fn parse_class(text: &str) -> Result<toolgate_store::DataClass, String> {
    text.parse()
        .map_err(|e: toolgate_store::UnknownDataClass| e.to_string())
}

#[derive(clap::Args, Debug)]
pub(crate) struct HostArgs {
    /// The host's name: it resumes the runs saved under it.
    #[arg(long, default_value = agent::DEMO_HOST)]
    pub(crate) name: String,
    /// Resume what is decided now, then exit.
    #[arg(long)]
    pub(crate) once: bool,
    /// How often to look for decided runs, in milliseconds.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(10..))]
    pub(crate) poll_ms: u64,
    /// How long a run this host claimed stays its own without a sign of
    /// life, in milliseconds; another host picks it up after that.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(10..))]
    pub(crate) lease_ms: u64,
}

#[derive(clap::Args, Debug)]
pub(crate) struct GatewayArgs {
    /// The requester of every call it serves: the name of the person whose
    /// client this is.
    #[arg(long, env = "TOOLGATE_GATEWAY_USER", default_value = "gateway")]
    pub(crate) user: String,
    /// The gateway's host name: `gateway`, or a name that begins `gateway.`.
    #[arg(long, default_value = "gateway")]
    pub(crate) name: String,
    /// How long a gated call is held for an operator's decision, in seconds
    /// (below the client's own timeout for a tool call).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) wait: u64,
    /// How old, in milliseconds, its reading of the operator's changes may
    /// be when a call is judged: a change (approval turned on, a server
    /// disabled) reaches every call judged this long after it. `0` reads
    /// them for every call.
    #[arg(long, default_value_t = 100)]
    pub(crate) follow_ms: u64,
    /// How long, in milliseconds, a run it resumes stays its own without a
    /// sign of life (renewed while a call runs): a gateway of the same
    /// `--name` picks up a run whose gateway stopped mid-call once it ran
    /// out.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub(crate) lease_ms: u64,
    /// How long, in seconds, a decided run waits for its client to ask for
    /// the call again before it expires (a client that never comes back
    /// leaves it decided and unrun): 24 hours by default.
    #[arg(long, default_value_t = 86_400, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) expire_unasked: u64,
    /// Four eyes: a held call is decided by someone other than `--user`.
    #[arg(long)]
    pub(crate) four_eyes: bool,
    /// How many distinct people approve a held call before it runs; with
    /// `--four-eyes`, none of them `--user`.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub(crate) approvals: u32,
    /// How long, in seconds, a client of MCP's stateless protocol
    /// (2026-07-28) has to answer the form it is sent for a held call: the
    /// request state it hands back expires then (5 minutes by default).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) answer_within: u64,
    /// Open no store: forward to a toolgate gateway served over HTTP
    /// (`http://HOST:PORT/mcp`), with the token in `--token-file` — for a
    /// machine where an agent has a shell, which then holds nothing that
    /// decides. Every call is judged there, as the token's person.
    #[arg(long, value_name = "URL", conflicts_with = "listen")]
    pub(crate) upstream: Option<String>,
    /// The file holding the token to forward with (`toolgate gateway token
    /// add NAME` on the upstream gateway's machine).
    #[arg(long, value_name = "PATH", requires = "upstream")]
    pub(crate) token_file: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) http: commands::GatewayHttpArgs,
    #[command(subcommand)]
    pub(crate) command: Option<commands::GatewayCommand>,
}

/// `toolgate inbox`.
#[derive(clap::Args, Debug)]
pub(crate) struct InboxArgs {
    /// Where to listen: a loopback address and port — or any address, over
    /// HTTPS (`--tls-cert`, `--tls-key`) or behind a proxy that signs
    /// people in (`--behind-proxy`), with `--public-url`.
    #[arg(long, default_value = "127.0.0.1:8640")]
    pub(crate) listen: std::net::SocketAddr,
    /// Where a browser reaches the inbox, when not at the listen address (a
    /// proxy in front, or a name on the network): every change must come
    /// from this origin.
    #[arg(long)]
    pub(crate) public_url: Option<String>,
    /// Serve HTTPS with this certificate (PEM: the server's certificate,
    /// then any intermediates).
    #[arg(long, value_name = "PATH", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM, unencrypted).
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// Behind an authenticating reverse proxy: the name it sets in
    /// `--user-header` is the operator (recorded through the channel
    /// `proxy`), on requests that prove they come from it with the secret
    /// of `--proxy-secret-file` in `X-Toolgate-Proxy-Secret`; any other
    /// request is refused. Needs `--public-url`, the proxy's address.
    #[arg(long, requires_all = ["user_header", "proxy_secret_file", "public_url"])]
    pub(crate) behind_proxy: bool,
    /// The header the proxy names the signed-in user in (e.g.
    /// `X-Forwarded-User`); it must replace any the browser sent.
    #[arg(long, value_name = "NAME", requires = "behind_proxy")]
    pub(crate) user_header: Option<String>,
    /// A file holding the secret the proxy sends with every request, in
    /// `X-Toolgate-Proxy-Secret` (at least 16 characters; `openssl rand
    /// -hex 32`).
    #[arg(long, value_name = "PATH", requires = "behind_proxy")]
    pub(crate) proxy_secret_file: Option<PathBuf>,
    /// Do not deliver notifications from this process (by default the
    /// inbox delivers the outbox to every sink, with links to its runs).
    #[arg(long)]
    pub(crate) no_notify: bool,
}

/// `toolgate operator …`.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum OperatorCommand {
    /// Add an operator — or give one a new link — and print a one-time
    /// sign-in link: it signs them in once, before it expires. Only its hash
    /// is stored.
    Add {
        /// Their name, as decisions will record it.
        name: String,
        /// Where the inbox is reached from the operator's browser: the
        /// link's base.
        #[arg(long, default_value = "http://127.0.0.1:8640")]
        public_url: String,
        /// How long the link works, in minutes.
        #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=10_080))]
        valid_for_mins: u64,
        /// Let them approve a call "and from now on" in the inbox —
        /// declaring its tool "no approval" in the same act (never on a run
        /// under four eyes or needing several approvers). Without it, an
        /// operator added before keeps the power they had; `--may-declare
        /// false` takes it away.
        #[arg(long, num_args = 0..=1, default_missing_value = "true")]
        may_declare: Option<bool>,
    },
    /// Revoke an operator: every session of theirs ends at once, every
    /// unused link stops working.
    Revoke {
        /// Their name.
        name: String,
    },
    /// Every operator, with their live sessions.
    List,
}

#[derive(clap::Args, Debug)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one field per command-line switch"
)]
pub(crate) struct DemoArgs {
    /// Approve every approval pause without asking.
    #[arg(long, conflicts_with = "no")]
    pub(crate) yes: bool,
    /// Deny every approval pause without asking.
    #[arg(long)]
    pub(crate) no: bool,
    /// The input to submit without asking, as JSON.
    #[arg(long)]
    pub(crate) input: Option<String>,
    /// Stop at the first pause and leave the run for `toolgate runs` and
    /// `toolgate host`.
    #[arg(long)]
    pub(crate) detach: bool,
    /// Require approvals from someone other than the requester.
    #[arg(long)]
    pub(crate) four_eyes: bool,
    /// How many distinct people must approve each turn that needs approval.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub(crate) approvals: u32,
    /// How long, in seconds, a paused turn may be approved; after that it
    /// can only be denied or asked again.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) decision_ttl: Option<u64>,
    /// Who starts the run (and, without four eyes, decides in the demo).
    /// Without it: `TOOLGATE_OPERATOR`, else `operator`.
    #[arg(long = "as")]
    pub(crate) operator: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::McpTestServer { args } = &cli.command {
        return serve_test_server(args.clone());
    }
    // Log lines are plain text unless stderr is a terminal (and NO_COLOR is
    // unset); every field passes the sanitiser either way.
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .fmt_fields(output::log_fields())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TOOLGATE_LOG")
                // rmcp's own error lines repeat, with internal type names,
                // what the command reports in one line.
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error,rmcp=off")),
        )
        .init();
    match &cli.command {
        Command::Hook(commands::HookCommand::ClaudeCode(args)) => {
            return commands::hook_process(&cli, toolgate_gateway::hook::Client::ClaudeCode, args);
        }
        Command::Hook(commands::HookCommand::Codex(args)) => {
            return commands::hook_process(&cli, toolgate_gateway::hook::Client::Codex, args);
        }
        _ => {}
    }
    let Some(runtime) = runtime() else {
        return ExitCode::from(1);
    };
    // A gateway that forwards opens no store: it never goes through `run`.
    let done = match &cli.command {
        Command::Gateway(args) if args.upstream.is_some() => {
            runtime.block_on(commands::forward(args))
        }
        _ => runtime.block_on(commands::run(cli)),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            say_err!("{}{}", failure.prefix(), failure.message());
            ExitCode::from(failure.code())
        }
    }
}

fn runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => Some(runtime),
        Err(error) => {
            say_err!("error: cannot start the runtime: {}", error.to_string());
            None
        }
    }
}

fn serve_test_server(args: Vec<String>) -> ExitCode {
    let Some(runtime) = runtime() else {
        return ExitCode::from(1);
    };
    match runtime.block_on(toolgate_mcp_test_server::run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            say_err!("error: {}", error);
            ExitCode::from(1)
        }
    }
}
