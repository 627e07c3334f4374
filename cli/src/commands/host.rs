//! `toolgate host`: the demo's host. It owns the runs the demo saves (host
//! name `demo` unless told otherwise), and resumes each once it is decided —
//! with the demo's scripted model and the demo's registry, which only this
//! process (and the interactive demo) holds. `runs approve|deny|input` only
//! record.

use std::time::Duration;

use toolgate_store::{Host, Store};

use super::decide::report_resumed;
use crate::agent::{self, DemoModel, Workspace};
use crate::output::{Out, say, say_err};
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
    let (registry, provider) = agent::registry(store, workspace).map_err(Failure::Error)?;
    let host =
        Host::new(store.clone(), &args.name)?.with_lease(Duration::from_millis(args.lease_ms));
    let poll = Duration::from_millis(args.poll_ms);
    if !args.once && !out.json {
        if store.backend() == toolgate_store::Backend::Postgres {
            say!(
                "host `{}` resumes its runs as they are decided: it listens for PostgreSQL's notifications (LISTEN toolgate_inbox, toolgate_operator) and wakes at once when a run is decided or an operator changes a server, and looks every {} ms as well; Ctrl-C stops it",
                host.name(),
                args.poll_ms
            );
        } else {
            say!(
                "host `{}` resumes its runs as they are decided (looking every {} ms; Ctrl-C stops it)",
                host.name(),
                args.poll_ms
            );
        }
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
    let mut reported = 0;
    let mut stop = Stop::new()?;
    loop {
        report_set_aside(host, &mut reported);
        let task = if args.once {
            match host.next().await? {
                Some(task) => task,
                None => break,
            }
        } else {
            tokio::select! {
                task = host.wait(poll) => task?,
                () = stop.requested() => {
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
        let run_id = task.run_id().to_owned();
        let spinner = Spinner::start(out, &run_id);
        // Ctrl-C or SIGTERM mid-run stops the resume where it is: the calls
        // it started stay journaled (the run shows what was executing), and
        // the stdio servers it started are stopped with the provider.
        let resumed = tokio::select! {
            resumed = host.resume(task, registry, &DemoModel) => resumed,
            () = stop.requested() => {
                spinner.finish();
                say!(
                    "host `{}` stops mid-run: run {} keeps its journal, and a host `{}` picks it up once this one's lease runs out",
                    host.name(),
                    run_id,
                    host.name()
                );
                return Ok(());
            }
        };
        spinner.finish();
        report_resumed(store, registry, out, &resumed?).await?;
        resumed_any = true;
    }
    report_set_aside(host, &mut reported);
    if args.once && !resumed_any && !out.json {
        say!("host `{}`: no decided run to resume", host.name());
    }
    Ok(())
}

/// Says which decided runs the host passed over since the last report: it
/// could not read them (the wrong key, a row changed outside the store).
/// They stay decided and waiting; the others are resumed.
fn report_set_aside(host: &Host, reported: &mut usize) {
    let aside = host.set_aside();
    for run in aside.iter().skip(*reported) {
        say_err!(
            "warning: passed over run {}, which this host cannot read; it stays decided and waiting: {}",
            run.run_id,
            run.reason
        );
    }
    *reported = aside.len();
}

/// Ctrl-C or SIGTERM, whichever comes first.
struct Stop {
    terminate: tokio::signal::unix::Signal,
}

impl Stop {
    fn new() -> Result<Self, Failure> {
        let terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| Failure::Error(format!("cannot wait for SIGTERM: {e}")))?;
        Ok(Self { terminate })
    }

    async fn requested(&mut self) {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = self.terminate.recv() => {}
        }
    }
}

/// A spinner with the time a resume has taken, on a terminal only.
struct Spinner(indicatif::ProgressBar);

impl Spinner {
    fn start(out: Out, run_id: &str) -> Self {
        use std::io::IsTerminal;
        if out.json || !std::io::stderr().is_terminal() {
            return Self(indicatif::ProgressBar::hidden());
        }
        let bar = indicatif::ProgressBar::new_spinner();
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
            bar.set_style(style);
        }
        bar.set_message(format!("run {}", toolgate::visible::visible(run_id)));
        bar.enable_steady_tick(Duration::from_millis(100));
        Self(bar)
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }
}
