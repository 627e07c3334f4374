//! A tool function: the doc comment is the description, the name is the
//! function's, each parameter's doc comment is its description in the schema
//! the model reads, and the tool runs through a registry. No `use serde` or
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

    let registry = Registry::builder().builtin(CopyFile).builtin(List).build().unwrap();
    let offered = block_on(registry.offer(None::<&[&str]>));
    let copy = offered.get("copy_file").unwrap();
    let output = block_on(copy.execute(serde_json::json!({"from": "a.txt", "to": "b.txt", "overwrite": true})));
    assert_eq!(output, ToolOutput::text("copied a.txt to b.txt (overwritten)"));
    let output = block_on(copy.execute(serde_json::json!({"from": "a.txt"})));
    assert!(output.is_error);
    assert_eq!(output.content, "invalid arguments for `copy_file`: missing field `to`");
    let output = block_on(offered.get("list").unwrap().execute(serde_json::json!({})));
    assert_eq!(output, ToolOutput::text("README.md"));
}
