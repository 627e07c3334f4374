//! `toolgate host`: the demo's host. It owns the runs the demo saves (host
//! name `demo` unless told otherwise), and resumes each once it is decided —
//! with the demo's scripted model and the demo's registry, which only this
//! process (and the interactive demo) holds. `runs approve|deny|input` only
//! record.

use std::time::Duration;

use toolgate_store::{Host, Store};

use super::decide::report_resumed;
use crate::host::{self, DemoModel, Workspace};
use crate::output::{Out, say};
use crate::{Failure, HostArgs};

pub(super) async fn host(
    store: &Store,
    workspace: &Workspace,
    out: Out,
    args: HostArgs,
) -> Result<(), Failure> {
    workspace
        .prepare()
        .map_err(|e| Failure::Error(format!("cannot prepare the demo workspace: {e}")))?;
    let (registry, provider) = host::registry(store, workspace).map_err(Failure::Error)?;
    let host =
        Host::new(store.clone(), &args.name)?.with_lease(Duration::from_millis(args.lease_ms));
    let poll = Duration::from_millis(args.poll_ms);
    if !args.once && !out.json {
        say!(
            "host `{}` resumes its runs as they are decided (looking every {} ms; Ctrl-C stops it)",
            host.name(),
            args.poll_ms
        );
    }
    let result = serve(&host, store, &registry, out, &args, poll).await;
    provider.close().await;
    result
}

async fn serve(
    host: &Host,
    store: &Store,
    registry: &toolgate::Registry,
    out: Out,
    args: &HostArgs,
    poll: Duration,
) -> Result<(), Failure> {
    let mut resumed_any = false;
    loop {
        let task = if args.once {
            match host.next().await? {
                Some(task) => task,
                None => break,
            }
        } else {
            tokio::select! {
                task = host.wait(poll) => task?,
                stop = tokio::signal::ctrl_c() => {
                    stop.map_err(|e| Failure::Error(format!("cannot wait for Ctrl-C: {e}")))?;
                    say!("host `{}` stops", host.name());
                    break;
                }
            }
        };
        if !out.json {
            say!(
                "{} run {}",
                if task.is_recovery() {
                    "recovering"
                } else {
                    "resuming"
                },
                task.run_id()
            );
        }
        let resumed = host.resume(task, registry, &DemoModel).await?;
        report_resumed(store, registry, out, &resumed).await?;
        resumed_any = true;
    }
    if args.once && !resumed_any && !out.json {
        say!("host `{}`: no decided run to resume", host.name());
    }
    Ok(())
}
