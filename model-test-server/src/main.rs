//! A local HTTP/1.1 server for toolgate's model tests.
//!
//! It speaks OpenAI Chat Completions (`POST /v1/chat/completions`, also
//! `/chat/completions` and `/openai/v1/chat/completions`) and Anthropic
//! Messages (`POST /v1/messages`), checks every request field by field against
//! the documented schema, answers from a script of steps, and logs every
//! request as one JSON line.
//!
//! ```text
//! toolgate-model-test-server --script FILE --log FILE [--listen 127.0.0.1:0] [--key KEY] [--model NAME]...
//! ```
//!
//! Once bound it prints `listening on http://ADDR` on stdout; everything else
//! goes to stderr.

mod anthropic;
mod check;
mod conn;
mod log;
mod openai;
mod script;
mod server;
mod stream;

use std::{error::Error, io::Write, net::SocketAddr, path::PathBuf, sync::Arc};

use clap::Parser;
use tokio::net::TcpListener;

use crate::{
    conn::{ControlledListener, Peer},
    log::RequestLog,
    script::Script,
    server::{App, Config},
};

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "toolgate-model-test-server",
    about = "A local OpenAI Chat Completions and Anthropic Messages server that checks requests and answers from a script"
)]
struct Cli {
    /// The script: a JSON array of steps, one used per valid request.
    #[arg(long, value_name = "FILE")]
    script: PathBuf,
    /// Where to append one JSON line per request received.
    #[arg(long, value_name = "FILE")]
    log: PathBuf,
    /// The address to listen on; port 0 picks a free port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// The API key requests must carry (`Authorization: Bearer` for OpenAI, `x-api-key` for Anthropic).
    #[arg(long, value_name = "KEY")]
    key: Option<String>,
    /// A model that exists (repeatable); without any, every model does.
    #[arg(long = "model", value_name = "NAME")]
    models: Vec<String>,
}

#[tokio::main]
async fn main() {
    if let Err(error) = run(Cli::parse()).await {
        eprintln!("toolgate-model-test-server: {error}");
        std::process::exit(2);
    }
}

/// Loads the script, binds, announces the address and serves until killed.
async fn run(cli: Cli) -> Result<(), Box<dyn Error>> {
    let text = std::fs::read_to_string(&cli.script)
        .map_err(|error| format!("cannot read the script {}: {error}", cli.script.display()))?;
    let steps = script::parse(&text)
        .map_err(|error| format!("the script {}: {error}", cli.script.display()))?;
    let log = RequestLog::open(&cli.log)
        .map_err(|error| format!("cannot open the log {}: {error}", cli.log.display()))?;
    let listener = TcpListener::bind(cli.listen)
        .await
        .map_err(|error| format!("cannot listen on {}: {error}", cli.listen))?;
    let addr = listener.local_addr()?;
    eprintln!(
        "toolgate-model-test-server: {} script steps, key {}, models {}",
        steps.len(),
        if cli.key.is_some() {
            "required"
        } else {
            "not checked"
        },
        if cli.models.is_empty() {
            "any".to_owned()
        } else {
            cli.models.join(", ")
        }
    );
    let config = Config {
        key: cli.key,
        models: cli.models,
    };
    let app = Arc::new(App::new(config, Script::new(steps), log));
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on http://{addr}")?;
        stdout.flush()?;
    }
    let service = server::router(app).into_make_service_with_connect_info::<Peer>();
    axum::serve(ControlledListener::new(listener), service).await?;
    Ok(())
}
