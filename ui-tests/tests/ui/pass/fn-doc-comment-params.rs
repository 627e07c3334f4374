//! A tool function: the doc comment is the description, the name is the
//! function's, each parameter's doc comment is its description in the schema
//! the model reads, and the tool runs: a read through a registry, by the
//! permit the turn scan gives it; a write from the model's JSON through its
//! typed arguments (through a registry it waits for a decision). No `use serde` or
//! `use schemars`: the generated arguments reach both through toolgate. The
//! generated code adds no warning, and documents what it makes public.
#![deny(warnings, missing_docs, unused_qualifications, unused_results)]
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use toolgate::{gate::ruling, Execute, Registry, Tool, ToolOutput};

/// Copies a file below the workspace root.
///
/// Overwrites the target.
#[toolgate::tool(effect = idempotent_write)]
pub async fn copy_file(
    /// The file to copy, below the workspace root.
    from: String,
    /// Where to put the copy.
    mut to: String,
    overwrite: Option<bool>,
) -> ToolOutput {
    to.push_str(if overwrite.unwrap_or(false) { " (overwritten)" } else { "" });
    ToolOutput::text(format!("copied {from} to {to}"))
}

/// Lists the workspace.
#[toolgate::tool(effect = read_only)]
async fn list() -> ToolOutput {
    ToolOutput::text("README.md")
}

// The futures here never wait, so polling once finishes them.
fn block_on<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("nothing here waits"),
    }
}

fn main() {
    assert_eq!(CopyFile.name(), "copy_file");
    assert_eq!(CopyFile.description(), "Copies a file below the workspace root.\n\nOverwrites the target.");
    assert!(ruling(&CopyFile).requires_approval());
    assert_eq!(List.name(), "list");
    assert!(!ruling(&List).requires_approval());

    let schema = serde_json::to_value(CopyFile.parameters()).unwrap();
    let properties = &schema["properties"];
    assert_eq!(properties["from"]["description"], "The file to copy, below the workspace root.");
    assert_eq!(properties["to"]["description"], "Where to put the copy.");
    assert!(properties["overwrite"].get("description").is_none());
    assert_eq!(schema["required"], serde_json::json!(["from", "to"]));
    assert!(schema.get("description").is_none(), "the arguments' own docs stay out of the schema");
    let schema = serde_json::to_value(List.parameters()).unwrap();
    assert_eq!(schema["type"], "object");

    // The function is still a function.
    let direct = block_on(copy_file("a".into(), "b".into(), None));
    assert_eq!(direct, ToolOutput::text("copied a to b"));

    let args: <CopyFile as Execute>::Args =
        serde_json::from_value(serde_json::json!({"from": "a.txt", "to": "b.txt", "overwrite": true})).unwrap();
    let output = block_on(CopyFile.execute(args));
    assert_eq!(output, ToolOutput::text("copied a.txt to b.txt (overwritten)"));
    let missing = serde_json::from_value::<<CopyFile as Execute>::Args>(serde_json::json!({"from": "a.txt"}));
    assert_eq!(missing.err().map(|e| e.to_string()).as_deref(), Some("missing field `to`"));

    let registry = Registry::builder().builtin(CopyFile).builtin(List).build().unwrap();
    let offered = block_on(registry.offer_all());
    let calls = [toolgate::run::ToolCall { id: "1".into(), name: "list".into(), arguments: serde_json::json!({}) }];
    let toolgate::run::TurnScan::Run(cleared) = toolgate::run::scan_turn(&offered, &calls) else {
        panic!("a read waits for nobody");
    };
    let Some((_, Ok(permit))) = cleared.into_calls().next() else { panic!("offered") };
    let output = block_on(permit.run());
    assert_eq!(output, ToolOutput::text("README.md"));
    let calls = [toolgate::run::ToolCall { id: "2".into(), name: "copy_file".into(), arguments: serde_json::json!({}) }];
    assert!(matches!(toolgate::run::scan_turn(&offered, &calls), toolgate::run::TurnScan::Approval));
}
