//! A real agent with gated tools, against any OpenAI-compatible endpoint or
//! Anthropic's Messages API.
//!
//! Its tools: two builtins declared with the derive — `clock` reads the
//! time, `save_note` appends to a file and so always waits for a person —
//! and the tools of every MCP server imported into the store
//! (`toolgate server add …`, `toolgate import …`). When a turn waits, the
//! run is saved under the host name `agent-example`; decide it from another
//! terminal with `toolgate runs show RUN` and `toolgate runs approve RUN
//! --digest …`, and this process resumes it.
//!
//! ```text
//! # A local Ollama:
//! cargo run -p toolgate-models --example agent -- \
//!     --base-url http://localhost:11434/v1 --model qwen3:8b "Save a note that the build is green"
//! # OpenAI, the answer streamed:
//! OPENAI_API_KEY=sk-… cargo run -p toolgate-models --example agent -- \
//!     --model gpt-4.1-mini --stream "Save a note that the build is green"
//! # Anthropic:
//! ANTHROPIC_API_KEY=sk-ant-… cargo run -p toolgate-models --example agent -- \
//!     --protocol anthropic --model claude-sonnet-4-5 "Save a note that the build is green"
//! ```
//!
//! The store is the command line's: `--data-dir` (or `TOOLGATE_DATA_DIR`,
//! default `~/.local/share/toolgate`) and `TOOLGATE_DATABASE_URL`;
//! `TOOLGATE_INTEGRITY_KEY_FILE` or `TOOLGATE_INTEGRITY_KEY` when the
//! store's runs are sealed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;
use schemars::JsonSchema;
use serde::Deserialize;
use toolgate::integrity::IntegrityKey;
use toolgate::run::{Model, Outcome, RunRequest, RunState};
use toolgate::suspend::SuspendedRun;
use toolgate::testing::MemoryLog;
use toolgate::{Agent, Execute, Registry, Tool, ToolOutput};
use toolgate_mcp::{Deadlines, McpProvider};
use toolgate_models::{Anthropic, ApiKey, OpenAi};
use toolgate_store::{Ended, Host, Location, Store};

/// The host name the example saves and resumes its runs under.
const HOST: &str = "agent-example";

/// The wire protocol the model speaks.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    /// OpenAI Chat Completions: OpenAI, Azure, OpenRouter, Groq, Ollama,
    /// vLLM, llama.cpp, LM Studio.
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

#[derive(Parser, Debug)]
#[command(about = "An agent whose tool calls go through toolgate")]
struct Args {
    /// The protocol.
    #[arg(long, value_enum, default_value = "openai")]
    protocol: Protocol,
    /// The endpoint: up to `/chat/completions` for `openai` (default
    /// `https://api.openai.com/v1`), up to `/v1/messages` for `anthropic`
    /// (default `https://api.anthropic.com`).
    #[arg(long, env = "TOOLGATE_MODEL_BASE_URL")]
    base_url: Option<String>,
    /// The model.
    #[arg(long, env = "TOOLGATE_MODEL", default_value = "gpt-4.1-mini")]
    model: String,
    /// A file holding the API key; else the variable `--key-env` names,
    /// when set; else no key (a local server).
    #[arg(long)]
    key_file: Option<PathBuf>,
    /// The environment variable holding the API key (default
    /// `OPENAI_API_KEY`, or `ANTHROPIC_API_KEY` for `anthropic`).
    #[arg(long)]
    key_env: Option<String>,
    /// Stream each answer (server-sent events).
    #[arg(long)]
    stream: bool,
    /// Seconds one request may take, its answer read included; with
    /// `--stream`, the longest silence between two events instead.
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    deadline: u64,
    /// The most tokens one answer may have.
    #[arg(long, default_value_t = 4096)]
    max_tokens: u32,
    /// The data directory of the store (as `toolgate --data-dir`).
    #[arg(long, env = "TOOLGATE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// The store's URL (as `toolgate --database-url`).
    #[arg(long, env = "TOOLGATE_DATABASE_URL")]
    database_url: Option<String>,
    /// Who asks.
    #[arg(long = "as", default_value = "alice")]
    requester: String,
    /// What to ask.
    prompt: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct NoArgs {}

/// Tells the current time, in seconds since 1970 (UTC).
#[derive(Tool)]
#[tool(effect = read_only)]
struct Clock;

impl Execute for Clock {
    type Args = NoArgs;
    async fn execute(&self, _: NoArgs) -> ToolOutput {
        match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            Ok(now) => ToolOutput::text(format!("{} seconds since 1970-01-01 UTC", now.as_secs())),
            Err(error) => ToolOutput::error(format!("the clock is before 1970: {error}")),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
struct NoteArgs {
    /// The note, one line.
    text: String,
}

/// Saves a note: appends one line to `notes.txt` in the data directory.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct SaveNote(PathBuf);

impl Execute for SaveNote {
    type Args = NoteArgs;
    async fn execute(&self, args: NoteArgs) -> ToolOutput {
        let line = args.text.replace(['\n', '\r'], " ");
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.0)
            .and_then(|mut file| writeln!(file, "{line}"));
        match written {
            Ok(()) => ToolOutput::text(format!("saved the note `{line}`")),
            Err(error) => ToolOutput::error(format!("cannot save the note: {error}")),
        }
    }
}

fn data_dir(given: Option<PathBuf>) -> PathBuf {
    given
        .or_else(|| std::env::var_os("XDG_DATA_HOME").map(|d| PathBuf::from(d).join("toolgate")))
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share/toolgate"))
        })
        .unwrap_or_else(|| PathBuf::from(".toolgate"))
}

fn integrity_key() -> Result<Option<IntegrityKey>, Box<dyn std::error::Error>> {
    let secret = match std::env::var_os("TOOLGATE_INTEGRITY_KEY_FILE") {
        Some(path) => std::fs::read(path)?,
        None => match std::env::var("TOOLGATE_INTEGRITY_KEY") {
            Ok(secret) => secret.into_bytes(),
            Err(_) => return Ok(None),
        },
    };
    Ok(Some(IntegrityKey::new(secret.trim_ascii())?))
}

async fn open_store(args: &Args, dir: &Path) -> Result<Store, Box<dyn std::error::Error>> {
    let url = args
        .database_url
        .as_deref()
        .filter(|u| !u.trim().is_empty());
    let location = if let Some(url) = url {
        Location::parse(url)
    } else {
        std::fs::create_dir_all(dir)?;
        Location::Sqlite(dir.join("toolgate.db"))
    };
    let store = Store::open(location).await?;
    Ok(match integrity_key()? {
        Some(key) => store.with_integrity_key(key),
        None => store,
    })
}

/// The client the arguments ask for, and the URL it posts to.
fn model(args: &Args) -> Result<(Box<dyn Model>, String), Box<dyn std::error::Error>> {
    let key_env = args.key_env.as_deref().unwrap_or(match args.protocol {
        Protocol::Openai => "OPENAI_API_KEY",
        Protocol::Anthropic => "ANTHROPIC_API_KEY",
    });
    let key = match &args.key_file {
        Some(path) => Some(ApiKey::from_file(path)?),
        None if std::env::var_os(key_env).is_some() => Some(ApiKey::from_env(key_env)?),
        None => None,
    };
    let deadline = Duration::from_secs(args.deadline);
    // One set of settings for either client: the builder methods are the same.
    macro_rules! configured {
        ($client:expr) => {{
            let client = $client
                .max_output_tokens(args.max_tokens)
                .deadline(deadline)
                .idle_limit(deadline)
                .stream(args.stream);
            let client = match key {
                Some(key) => client.key(key),
                None => client,
            };
            let url = client.url().to_owned();
            (Box::new(client) as Box<dyn Model>, url)
        }};
    }
    Ok(match args.protocol {
        Protocol::Openai => configured!(OpenAi::new(
            args.base_url
                .as_deref()
                .unwrap_or("https://api.openai.com/v1"),
            &args.model
        )?),
        Protocol::Anthropic => configured!(Anthropic::at(
            args.base_url
                .as_deref()
                .unwrap_or("https://api.anthropic.com"),
            &args.model
        )?),
    })
}

fn waits(run_id: &str, what: &str) {
    println!("run {run_id} waits for {what}. Decide it from another terminal:");
    println!("  toolgate runs show {run_id}");
    println!(
        "  toolgate runs approve {run_id} --digest DIGEST   (or deny; the digest is the one `show` prints)"
    );
    println!("This process resumes it once decided.");
}

fn usage(state: Option<&RunState>) {
    if let Some(usage) = state.and_then(RunState::usage) {
        println!(
            "tokens: {} in ({} cached, {} cache writes), {} out ({} reasoning)",
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.cache_write_input_tokens,
            usage.output_tokens,
            usage.reasoning_tokens
        );
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let args = Args::parse();
    let dir = data_dir(args.data_dir.clone());
    let store = open_store(&args, &dir).await?;
    let registry = Registry::builder()
        .builtin(Clock)
        .builtin(SaveNote(dir.join("notes.txt")))
        .provider(McpProvider::new(store.clone(), Deadlines::default()))
        .build()?;
    let (model, url) = model(&args)?;
    let streamed = if args.stream { ", streamed" } else { "" };
    println!("asking {} at {url}{streamed}", args.model);
    let model = model.as_ref();
    let log = MemoryLog::default();
    let outcome = Agent::new(&registry, model, &log)
        .start(RunRequest::new(&args.requester, &args.prompt))
        .await?;
    let saved = match outcome {
        Outcome::Finished { answer, state } => {
            println!("answer: {answer}");
            usage(Some(&state));
            return Ok(());
        }
        Outcome::LimitReached(state) => {
            println!("the run reached its cap of model requests without an answer");
            usage(Some(&state));
            return Ok(());
        }
        Outcome::AwaitingApproval(run) => SuspendedRun::AwaitingApproval(run),
        Outcome::WaitingForInput(run) => SuspendedRun::WaitingForInput(run),
    };
    store.save_suspended(&saved, HOST).await?;
    let what = match &saved {
        SuspendedRun::AwaitingApproval(_) => "approval",
        SuspendedRun::WaitingForInput(_) => "input",
    };
    waits(saved.run_id(), what);
    let host = Host::new(store.clone(), HOST)?;
    loop {
        let Some(task) = host.next().await? else {
            tokio::time::sleep(Duration::from_millis(250)).await;
            continue;
        };
        let resumed = host.resume(task, &registry, model).await?;
        match resumed.ended {
            Ended::Finished { answer } => {
                println!("answer: {answer}");
                usage(resumed.state.as_ref());
                return Ok(());
            }
            Ended::Suspended { .. } => waits(&resumed.run_id, "a decision again"),
            Ended::OutcomeUnknown { tool, why, .. } => {
                println!("a call to {tool} {why}; its outcome is unknown");
                waits(&resumed.run_id, "a choice to run it again or not");
            }
            Ended::Refused { reason } => {
                println!("the decision was refused at resume: {reason}");
                waits(&resumed.run_id, "a fresh decision");
            }
            other => {
                println!("the run ended: {other:?}");
                return Ok(());
            }
        }
    }
}
