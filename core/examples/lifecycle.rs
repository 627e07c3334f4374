//! A scripted conversation through the gate: a read runs, a write suspends
//! for approval, the suspended run is persisted and reloaded, approved with
//! its digest, then suspends for input, gets invalid input (and stays
//! waiting), then valid input, and finishes.
//!
//! Run with `cargo run -p toolgate --example lifecycle`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolgate::{
    Agent, Execute, Registry, Tool, ToolOutput,
    run::{Message, Outcome, Reply, RunRequest, ToolCall},
    suspend::{AwaitingApproval, InputSubmission, ResumeError, Suspended, WaitingForInput},
    testing::{MemoryLog, ScriptedModel},
};

#[derive(Deserialize, JsonSchema)]
struct PathArgs {
    /// A path below the workspace root.
    path: String,
}

/// Reads a file below the workspace root.
#[derive(Tool)]
#[tool(effect = read_only)]
struct ReadFile;

impl Execute for ReadFile {
    type Args = PathArgs;
    async fn execute(&self, args: PathArgs) -> ToolOutput {
        ToolOutput::text(format!("{}: version = \"0.1.0\"", args.path))
    }
}

#[derive(Deserialize, JsonSchema)]
struct BumpArgs {
    /// The new version.
    version: String,
}

/// Sets the crate's version in its manifest.
#[derive(Tool)]
#[tool(effect = idempotent_write)]
struct SetVersion;

impl Execute for SetVersion {
    type Args = BumpArgs;
    async fn execute(&self, args: BumpArgs) -> ToolOutput {
        ToolOutput::text(format!("version set to {}", args.version))
    }
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Notes {
    /// The release notes, one line at least.
    #[schemars(length(min = 1))]
    notes: String,
}

#[derive(Deserialize, JsonSchema)]
struct TagArgs {
    /// The tag to create.
    tag: String,
    /// The release notes, supplied by the user.
    notes: Option<String>,
}

/// Drafts the release with notes the user writes.
#[derive(Tool)]
#[tool(effect = read_only, input = Notes)]
struct DraftRelease;

impl Execute for DraftRelease {
    type Args = TagArgs;
    async fn execute(&self, args: TagArgs) -> ToolOutput {
        ToolOutput::text(format!(
            "drafted {} with notes {:?}",
            args.tag,
            args.notes.unwrap_or_default()
        ))
    }
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

fn turn(calls: Vec<ToolCall>) -> Reply {
    Reply::Calls {
        content: None,
        calls,
    }
}

fn show_results(state: &toolgate::run::RunState, from: usize) -> usize {
    for message in &state.transcript[from..] {
        if let Message::Tool {
            name,
            content,
            is_error,
            ..
        } = message
        {
            let mark = if *is_error { "error" } else { "ok" };
            println!("    {name} -> {mark}: {content}");
        }
    }
    state.transcript.len()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::builder()
        .builtin(ReadFile)
        .builtin(SetVersion)
        .builtin(DraftRelease)
        .build()?;
    let model = ScriptedModel::new([
        turn(vec![call("c1", "read_file", json!({"path": "Cargo.toml"}))]),
        turn(vec![call("c2", "set_version", json!({"version": "0.2.0"}))]),
        turn(vec![call(
            "c3",
            "draft_release",
            json!({"tag": "v0.2.0", "notes": "(the model's guess)"}),
        )]),
        Reply::Text("Released v0.2.0.".into()),
    ]);
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);

    println!("1. alice asks for a release");
    let outcome = agent
        .start(RunRequest::new(
            "alice",
            "Bump to 0.2.0 and draft the release.",
        ))
        .await?;
    let Outcome::AwaitingApproval(run) = outcome else {
        return Err("expected an approval pause".into());
    };
    let seen = show_results(run.state(), 0);
    println!("2. suspended for approval of:");
    for call in run.pending() {
        println!("    {} {}", call.name, call.arguments);
    }
    println!("   digest {}", run.digest());

    let document = run.encode()?;
    println!(
        "3. persisted as a {}-byte version-1 JSON document; reloaded",
        document.len()
    );
    let run = Suspended::<AwaitingApproval>::decode(&document)?;

    println!("4. bob approves with the digest he saw");
    let digest = run.digest();
    let outcome = run
        .approve(&agent, "bob", digest)
        .await
        .map_err(|e| e.to_string())?;
    let Outcome::WaitingForInput(run) = outcome else {
        return Err("expected an input pause".into());
    };
    let seen = show_results(run.state(), seen);
    println!(
        "5. waiting for input to `{}`, schema requires: {}",
        run.input_tool(),
        run.input_schema().as_value()["required"]
    );

    let submission = |run: &Suspended<WaitingForInput>, data| InputSubmission {
        data,
        digest: run.digest(),
        submitted_by: "alice".into(),
    };
    let invalid = submission(&run, json!({"notes": ""}));
    let run = match run.submit_input(&agent, invalid).await {
        Err(ResumeError::Refused { run, reason }) => {
            println!("6. invalid input refused, still waiting: {reason}");
            run
        }
        other => return Err(format!("expected a refusal, got {other:?}").into()),
    };

    let valid = submission(&run, json!({"notes": "Faster gate."}));
    let outcome = match run.submit_input(&agent, valid).await {
        Ok(outcome) => outcome,
        Err(error) => return Err(error.to_string().into()),
    };
    let Outcome::Finished { answer, state } = outcome else {
        return Err("expected the run to finish".into());
    };
    println!("7. valid input accepted");
    show_results(&state, seen);
    println!(
        "8. finished after {} model requests: {answer}",
        state.iterations
    );
    println!("\ndecision log:");
    for record in log.records() {
        println!(
            "    {} by {} (requested by {}) on {} [{}]",
            record.verdict.as_str(),
            record.decided_by,
            record.requested_by,
            record.tools.join(", "),
            record.digest
        );
    }
    Ok(())
}
