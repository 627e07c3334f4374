//! What the store benches share: a paused run's document, saved again under
//! fresh run ids, so a store can hold as many waiting runs as a bench needs.

use serde_json::{Map, Value, json};
use toolgate::{
    Agent, Execute, Registry, Tool, ToolOutput,
    run::{Outcome, Reply, RunRequest, ToolCall},
    suspend::SuspendedRun,
    testing::{MemoryLog, ScriptedModel},
};

/// Deletes a branch.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
pub(crate) struct DeleteBranch;

impl Execute for DeleteBranch {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("deleted")
    }
}

/// The document of alice's run, paused for approval of `delete_branch`.
pub(crate) async fn template() -> String {
    let registry = match Registry::builder().builtin(DeleteBranch).build() {
        Ok(registry) => registry,
        Err(error) => panic!("{error}"),
    };
    let model = ScriptedModel::new([Reply::Calls {
        content: None,
        calls: vec![ToolCall {
            id: "c1".into(),
            name: "delete_branch".into(),
            arguments: json!({"branch": "old"}),
        }],
    }]);
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    let Ok(Outcome::AwaitingApproval(run)) = agent.start(RunRequest::new("alice", "tidy")).await
    else {
        panic!("expected an approval pause");
    };
    run.encode().unwrap_or_default()
}

/// `template` as the run `id`, its checksum made again.
pub(crate) fn reidentified(template: &str, id: &str) -> SuspendedRun {
    let mut value: Value = serde_json::from_str(template).unwrap_or_default();
    if let Some(run_id) = value.pointer_mut("/body/run/run_id") {
        *run_id = json!(id);
    }
    let body = value["body"].to_string();
    value["checksum"] = json!(toolgate::testing::rules::document_checksum(
        value["version"].as_u64().unwrap_or_default(),
        value["status"].as_str().unwrap_or_default(),
        &body
    ));
    match SuspendedRun::decode(&value.to_string()) {
        Ok(run) => run,
        Err(error) => panic!("{error}"),
    }
}
