//! The first page of the waiting runs — what the operator's inbox shows
//! first — with 1,000 and with 100,000 runs waiting, side by side, on an
//! SQLite file: keyset pagination over an index of the runs that are not
//! done, so the two should cost the same (target: within 1.5×).

use std::sync::OnceLock;

use serde_json::{Map, Value, json};
use toolgate::{
    Agent, Execute, Registry, Tool, ToolOutput,
    run::{Outcome, Reply, RunRequest, ToolCall},
    suspend::SuspendedRun,
    testing::{MemoryLog, ScriptedModel},
};
use toolgate_store::{Location, Store};

fn main() {
    divan::main();
}

/// Deletes a branch.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct DeleteBranch;

impl Execute for DeleteBranch {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("deleted")
    }
}

struct Waiting {
    runtime: tokio::runtime::Runtime,
    store: Store,
    _dir: tempfile::TempDir,
}

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => panic!("{error}"),
    }
}

/// A paused run's document, to be saved again under fresh run ids.
async fn template() -> String {
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

/// A store with `count` runs waiting, each saved through the store.
fn waiting(count: usize) -> Waiting {
    let runtime = runtime();
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => panic!("{error}"),
    };
    let store = runtime.block_on(async {
        let store = match Store::open(&Location::Sqlite(dir.path().join("toolgate.db"))).await {
            Ok(store) => store,
            Err(error) => panic!("{error}"),
        };
        let template = template().await;
        for n in 0..count {
            let mut value: Value = serde_json::from_str(&template).unwrap_or_default();
            if let Some(run_id) = value.pointer_mut("/body/run/run_id") {
                *run_id = json!(format!("run-{n}"));
            }
            let body = value["body"].to_string();
            value["checksum"] = json!(toolgate::testing::rules::document_checksum(
                value["version"].as_u64().unwrap_or_default(),
                value["status"].as_str().unwrap_or_default(),
                &body
            ));
            let Ok(run) = SuspendedRun::decode(&value.to_string()) else {
                panic!("decodes");
            };
            if let Err(error) = store.save_suspended(&run, "bench").await {
                panic!("{error}");
            }
        }
        store
    });
    Waiting {
        runtime,
        store,
        _dir: dir,
    }
}

fn with(count: usize) -> &'static Waiting {
    static THOUSAND: OnceLock<Waiting> = OnceLock::new();
    static HUNDRED_THOUSAND: OnceLock<Waiting> = OnceLock::new();
    let cell = if count == 1_000 {
        &THOUSAND
    } else {
        &HUNDRED_THOUSAND
    };
    cell.get_or_init(|| waiting(count))
}

/// The first page (50 runs) of the waiting runs.
#[divan::bench(args = [1_000, 100_000], sample_count = 200)]
fn first_page(bencher: divan::Bencher, count: usize) {
    let waiting = with(count);
    bencher.bench_local(|| {
        let page = waiting
            .runtime
            .block_on(waiting.store.waiting_page(None, 50));
        match page {
            Ok(page) => assert_eq!(page.len(), 50),
            Err(error) => panic!("{error}"),
        }
    });
}
