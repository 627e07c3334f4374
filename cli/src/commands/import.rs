//! `toolgate import`: a server's catalogue, with progress on a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use serde_json::json;
use toolgate_mcp::{Deadlines, ImportLimits, ImportProgress, ImportReport};
use toolgate_store::Store;

use crate::Failure;
use crate::output::{Col, Out, say, say_err};

pub(super) async fn import(
    store: &Store,
    out: Out,
    server: &str,
    deadlines: Deadlines,
    limits: ImportLimits,
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
    let result = toolgate_mcp::import_within(store, server, deadlines, limits, &mut progress).await;
    bar.finish_and_clear();
    let report = result?;
    let warnings = inert(store, server).await?;
    if out.json {
        out.json(&json!({
            "warnings": warnings,
            "server": report.server, "pages": report.pages, "listed": report.listed,
            "digest": report.change.digest,
            "new": report.change.added, "changed": report.change.changed,
            "restored": report.change.restored, "unchanged": report.change.unchanged,
            "orphaned": report.change.orphaned,
            "quarantined": report.change.quarantined.iter().map(|(t, why)| json!({"tool": t, "reason": why.as_str()})).collect::<Vec<_>>(),
            "skipped": report.skipped.iter().map(|s| json!({"remote_name": s.remote_name, "reason": s.reason.to_string()})).collect::<Vec<_>>(),
        }))?;
        return Ok(report);
    }
    print_report(out, &report);
    for warning in &warnings {
        say_err!("warning: {}", warning);
    }
    Ok(report)
}

/// Why the server, as imported, offers no tool at all: it lists none,
/// every tool it lists is blocked, or the server itself supplies nothing
/// (disabled, no data class). Nothing of the import is undone; the operator
/// is told.
async fn inert(store: &Store, server: &str) -> Result<Vec<String>, Failure> {
    let record = store.server(server).await?;
    let live: Vec<_> = store
        .catalogue(server)
        .await?
        .into_iter()
        .filter(|row| !row.orphaned)
        .collect();
    let mut warnings = Vec::new();
    if live.is_empty() {
        warnings.push(format!(
            "server `{server}` lists no tools: it offers nothing to a host or a client"
        ));
    } else if live
        .iter()
        .all(|row| row.gate(record.approval) == toolgate_store::ToolGate::Blocked)
    {
        warnings.push(format!(
            "every tool of server `{server}` is blocked: it offers nothing (`toolgate tool set-approval {server}.TOOL inherit` unblocks one)"
        ));
    }
    if let Some(reason) = record.inert_reason() {
        warnings.push(format!(
            "server `{server}` supplies no tools: {reason}{}",
            if record.data_class.is_none() {
                " (`toolgate server set-data-class` declares one)"
            } else {
                ""
            }
        ));
    }
    Ok(warnings)
}

/// The import's summary as a table, with the digest of what it left.
fn print_report(out: Out, report: &ImportReport) {
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
    let quarantined: Vec<String> = report
        .change
        .quarantined
        .iter()
        .map(|(tool, why)| format!("{tool} ({})", why.as_str()))
        .collect();
    table.row([
        Col::from("quarantined"),
        Col::from(quarantined.len().to_string()),
        Col::from(quarantined.join("; ")),
    ]);
    table.print();
    say!(
        "digest of its {} live tools: {} (`toolgate server show {}` shows them)",
        report.change.live,
        report.change.digest,
        report.server
    );
    if !quarantined.is_empty() {
        say!(
            "quarantined tools require approval until accepted: `toolgate server accept {} [TOOL…]` shows what changed",
            report.server
        );
    }
}
