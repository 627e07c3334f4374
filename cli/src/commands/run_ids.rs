//! A run as an operator types it: its whole id, or a unique prefix of at
//! least [`toolgate_store::MIN_RUN_PREFIX`] characters, resolved once in the
//! store ([`Store::resolve_run_prefix`]) before any `runs` command reads it.

use toolgate_store::Store;

use crate::{Failure, RunsCommand};

/// The command with its run, if it names one, resolved to the run's whole
/// id; a prefix that names no single run stops it here.
pub(super) async fn resolved(
    store: &Store,
    mut command: RunsCommand,
) -> Result<RunsCommand, Failure> {
    if let Some(run) = typed_run(&mut command) {
        *run = store.resolve_run_prefix(run).await?;
    }
    Ok(command)
}

/// Where a command keeps the run it names.
fn typed_run(command: &mut RunsCommand) -> Option<&mut String> {
    match command {
        RunsCommand::Show { run, .. } | RunsCommand::AskAgain { run, .. } => Some(run),
        RunsCommand::Approve(args) => Some(&mut args.decide.run),
        RunsCommand::Deny(args) => Some(&mut args.decide.run),
        RunsCommand::Edit { decide, .. } | RunsCommand::Input { decide, .. } => {
            Some(&mut decide.run)
        }
        RunsCommand::Rerun(args) | RunsCommand::Skip(args) => Some(&mut args.run),
        RunsCommand::Review(args) => args.run.as_mut(),
        RunsCommand::List { .. } => None,
    }
}
