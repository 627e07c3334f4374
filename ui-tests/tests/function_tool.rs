//! A tool function under the workspace's own lints (clippy pedantic,
//! `missing_docs`, `unreachable_pub`, `unused_qualifications`): what the
//! attribute generates must add no warning to a tool author's crate. And the
//! auto traits a host relies on, pinned.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use toolgate::{Execute, Tool, ToolOutput, assert_gate};

/// Appends a line to a file below the workspace root.
#[toolgate::tool(effect = non_idempotent_write)]
pub async fn append_line(
    /// The file, below the workspace root.
    path: String,
    /// The line to append, without its line break.
    line: String,
) -> ToolOutput {
    ToolOutput::text(format!("appended {line:?} to {path}"))
}

/// Names a function `args` whose parameter is `output`: the generated code's
/// own names must not capture them.
#[toolgate::tool(effect = read_only)]
async fn args(
    /// Anything.
    output: String,
) -> ToolOutput {
    ToolOutput::text(output)
}

assert_gate!(AppendLine: approval);
assert_gate!(AppendLine: approval by effect);
assert_gate!(Args: runs);

fn block_on<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("nothing here waits"),
    }
}

fn assert_send<T: Send>(value: T) -> T {
    value
}

#[test]
fn a_tool_function_runs_through_its_tool_type() {
    let args = AppendLineArgs {
        path: "notes.md".to_owned(),
        line: "hello".to_owned(),
    };
    let output = block_on(assert_send(AppendLine.execute(args)));
    assert_eq!(output, ToolOutput::text("appended \"hello\" to notes.md"));
    let output = block_on(Args.execute(ArgsArgs {
        output: "echo".to_owned(),
    }));
    assert_eq!(output, ToolOutput::text("echo"));
}

#[test]
fn the_tool_type_is_a_plain_value() {
    fn plain<T: Copy + Default + std::fmt::Debug + Send + Sync + 'static>() {}
    plain::<AppendLine>();
    assert_eq!(format!("{AppendLine:?}"), "AppendLine");
    assert_eq!(AppendLine.name(), "append_line");
}

#[test]
fn parameter_docs_are_the_schema_descriptions() {
    let schema = serde_json::to_value(AppendLine.parameters()).expect("a schema is JSON");
    assert_eq!(
        schema["properties"]["path"]["description"],
        "The file, below the workspace root."
    );
    assert_eq!(
        schema["properties"]["line"]["description"],
        "The line to append, without its line break."
    );
    assert_eq!(schema["required"], serde_json::json!(["path", "line"]));
}
