//! The commands, one module per group: `servers`, `import`, `tools`, `runs`
//! (listing and showing), `decide` (approve, deny, input, rerun, skip — all
//! only recorded — and where a resumed run stands), `serve` (the demo's
//! host, which resumes), `demo`; `identity` holds who decides and the integrity key.
//! Every failure converts to [`Failure`] in one place (`crate::failure`), so
//! the commands use `?`.

mod decide;
mod declare;
mod demo;
mod form;
mod forward;
mod gateway;
mod gateway_http;
mod hook;
mod host;
mod identity;
mod import;
mod inbox;
mod notify;
mod operators;
mod review;
mod run_ids;
mod runs;
mod servers;
mod serving;
mod tools;
mod turn;

use std::path::PathBuf;
use std::time::Duration;

use toolgate_mcp::Deadlines;
use toolgate_store::{Location, Store};

pub(crate) use forward::forward;
pub(crate) use gateway_http::{GatewayCommand, GatewayHttpArgs};
pub(crate) use hook::{HookCommand, hook_process};
pub(crate) use notify::NotifyCommand;

use crate::agent::Workspace;
use crate::output::Out;
use crate::{Cli, Command, Failure};

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
    let key = identity::integrity_key(cli.integrity_key_file.as_deref())?;
    let location = match cli
        .database_url
        .as_deref()
        .filter(|url| !url.trim().is_empty())
    {
        Some(url) => Location::try_parse(url).map_err(|e| Failure::Usage(e.to_string()))?,
        None => Location::Sqlite(data_dir.join("toolgate.db")),
    };
    let mut store = Store::open(location).await?;
    if let Some(key) = key {
        store = store.with_integrity_key(key);
    }
    let workspace = Workspace::new(&data_dir);
    let result = match cli.command {
        Command::Server(command) => servers::server(&store, out, command).await,
        Command::Import {
            server,
            timeout,
            max_tools,
            max_catalogue_mib,
        } => {
            let deadlines = Deadlines {
                connect: Duration::from_secs(timeout),
                list_page: Duration::from_secs(timeout),
                ..Deadlines::default()
            };
            let limits = toolgate_mcp::ImportLimits {
                max_tools,
                max_bytes: usize::try_from(max_catalogue_mib.saturating_mul(1024 * 1024))
                    .unwrap_or(usize::MAX),
            };
            import::import(&store, out, &server, deadlines, limits)
                .await
                .map(drop)
        }
        Command::Tools => tools::tools(&store, &workspace, out).await,
        Command::Tool(command) => declare::tool(&store, out, command).await,
        Command::Runs(command) => runs::runs(&store, &workspace, out, command).await,
        Command::Demo(args) => demo::demo(&store, &workspace, out, args).await,
        Command::Host(args) => host::host(&store, &workspace, out, args).await,
        Command::Gateway(args) => gateway::gateway(&store, out, args).await,
        Command::Operator(command) => operators::operator(&store, out, command).await,
        Command::Inbox(args) => inbox::inbox(&store, &workspace, args).await,
        Command::Notify(command) => notify::notify(&store, out, command).await,
        Command::Hook(command) => hook::command(&store, out, command).await,
        Command::McpTestServer { .. } => Ok(()),
    };
    store.close().await;
    result
}
