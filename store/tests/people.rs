//! People and channels: every decision records how it reached the record,
//! and an answer through the requester's own client (elicitation) is the
//! requester's — used only where an operator turned it on, refused under
//! four eyes, never one of several approvers. The client a requester asked
//! through is kept beside them, as it declared itself.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use serde_json::{Map, Value, json};
use toolgate::erased::{BoxFuture, ErasedTool};
use toolgate::identity::{Channel, DeclaredClient, IdentitySource, Operator};
use toolgate::registry::{ProviderError, Revision, ToolProvider};
use toolgate::run::{CallRequest, NoModel, Outcome, RunOptions, ToolCall};
use toolgate::suspend::{Refusal, SuspendedRun};
use toolgate::testing::MemoryLog;
use toolgate::{
    Agent, Execute, OperatorDeclaration, Registry, RemoteApproval, RemoteTool, Tool, ToolOutput,
};
use toolgate_store::{
    Answer, CallHost, ClaimError, DataClass, ImportedTool, NewServer, Query, Store, StoreError,
    Transport,
};

mod backend;
use backend::TestDb;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    backend::rerun_on_postgres();
}

/// The notes server's tool, as a provider supplies it: remote, its approval
/// the operator's (required).
#[derive(Tool)]
#[tool(remote, operator_approval, effect = non_idempotent_write, name = "notes.write_note")]
#[tool(description = "via the external MCP server `notes`: writes a note")]
struct WriteNote;

impl RemoteTool for WriteNote {
    fn server(&self) -> &str {
        "notes"
    }
}

impl RemoteApproval for WriteNote {
    fn operator_declaration(&self) -> OperatorDeclaration {
        OperatorDeclaration::ApprovalRequired
    }
}

impl Execute for WriteNote {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("written")
    }
}

/// Supplies the notes server's tool.
struct Notes;

impl ToolProvider for Notes {
    fn name(&self) -> &str {
        "notes"
    }
    fn provide(&self) -> BoxFuture<'_, Result<Vec<ErasedTool>, ProviderError>> {
        Box::pin(async { Ok(vec![ErasedTool::new(WriteNote)]) })
    }
    fn revision(&self) -> BoxFuture<'_, Result<Revision, ProviderError>> {
        Box::pin(async { Ok(Revision::Fixed) })
    }
}

fn registry() -> Registry {
    Registry::builder().provider(Notes).build().unwrap()
}

fn key() -> toolgate::integrity::IntegrityKey {
    toolgate::integrity::IntegrityKey::new(b"a key kept outside the database").expect("long enough")
}

/// A store whose catalogue lists `notes.write_note` on server `notes`.
async fn store(db: &TestDb) -> Store {
    let store = Store::open(db.location())
        .await
        .unwrap()
        .with_integrity_key(key());
    store
        .add_server(NewServer {
            id: "notes".into(),
            name: "Notes".into(),
            transport: Transport::Http {
                url: "http://127.0.0.1:9/notes".into(),
            },
            data_class: Some(DataClass::EditorContent),
        })
        .await
        .unwrap();
    store
        .replace_catalogue(
            "notes",
            &[ImportedTool {
                remote_name: "write_note".into(),
                local_name: "notes.write_note".into(),
                description: "Writes a note".into(),
                input_schema: json!({"type": "object"}),
                annotations: None,
            }],
        )
        .await
        .unwrap();
    store
}

/// A paused run of one call to `notes.write_note`, asked by alice through
/// a client, saved by the gateway's host.
async fn paused(store: &Store, registry: &Registry, options: RunOptions) -> SuspendedRun {
    let log = MemoryLog::new();
    let agent = Agent::new(registry, &NoModel, &log);
    let request = CallRequest {
        client: Some(DeclaredClient::new("zed", Some("0.190"))),
        options,
        ..CallRequest::new(
            "alice",
            "`tools/call` from client `zed` 0.190",
            ToolCall {
                id: "call_1".into(),
                name: "notes.write_note".into(),
                arguments: json!({"text": "hi"}),
            },
        )
    };
    let run = match agent.call(request).await {
        Ok(Outcome::AwaitingApproval(run)) => SuspendedRun::AwaitingApproval(run),
        other => panic!("{other:?}"),
    };
    CallHost::new(store.clone(), "gateway.zed")
        .unwrap()
        .save(&run)
        .await
        .unwrap();
    run
}

fn person(name: &str) -> Operator {
    Operator::new(name, IdentitySource::Flag).unwrap()
}

async fn decide(
    store: &Store,
    run: &SuspendedRun,
    by: Operator,
    answer: Answer,
) -> Result<toolgate_store::Recorded, ClaimError> {
    store
        .decide(run.run_id(), Some(&run.digest()), &by, answer)
        .await
}

fn elicited(result: Result<toolgate_store::Recorded, ClaimError>) -> &'static str {
    match result {
        Err(ClaimError::Refused {
            reason: Refusal::ElicitedApproval { why },
            ..
        }) => why,
        other => panic!("an elicited approval refused: {other:?}"),
    }
}

/// A decision records its channel, and reads it back; the requester's
/// client is kept with the run as it declared itself.
#[tokio::test]
async fn every_decision_records_its_channel() {
    let dir = TestDb::new().await;
    let store = store(&dir).await;
    let registry = registry();

    let run = paused(&store, &registry, RunOptions::default()).await;
    let loaded = store.load_suspended(run.run_id()).await.unwrap();
    assert_eq!(
        loaded.state().client,
        Some(DeclaredClient::new("zed", Some("0.190")))
    );
    let recorded = decide(
        &store,
        &run,
        person("bob").via(Channel::Console),
        Answer::Approve,
    )
    .await
    .unwrap();
    assert_eq!(recorded.record.channel, Some(Channel::Console));
    let read = store.decisions(run.run_id()).await.unwrap();
    assert_eq!(read[0].channel, Some(Channel::Console));

    // A host program deciding through the library says so by default.
    let run = paused(&store, &registry, RunOptions::default()).await;
    decide(&store, &run, person("bob"), Answer::Deny)
        .await
        .unwrap();
    let read = store.decisions(run.run_id()).await.unwrap();
    assert_eq!(read[0].channel, Some(Channel::Library));

    // The channel is under the key: a row changed to another channel, or to
    // none (as rows before channels were kept), no longer verifies.
    for channel in ["'inbox'", "NULL"] {
        Query::new(format!(
            "UPDATE decision SET channel = {channel} WHERE run_id = $1"
        ))
        .bind(run.run_id())
        .execute_on(&store)
        .await
        .unwrap();
        let read = store.decisions(run.run_id()).await;
        assert!(read.is_err(), "{channel}: {read:?}");
    }
    // A channel no build writes is unreadable, not a guess.
    Query::new("UPDATE decision SET channel = 'telepathy' WHERE run_id = $1")
        .bind(run.run_id())
        .execute_on(&store)
        .await
        .unwrap();
    let read = store.decisions(run.run_id()).await;
    assert!(
        matches!(
            &read,
            Err(StoreError::Unreadable {
                what: "decision channel",
                ..
            })
        ),
        "{read:?}"
    );
}

/// Through the requester's own client: only where the operator turned it
/// on, only under the requester's name, never under four eyes or towards
/// several approvers — and a denial or a single approval is recorded as
/// the requester's own.
#[tokio::test]
async fn an_answer_through_the_requesters_client_is_the_requesters_own() {
    let dir = TestDb::new().await;
    let store = store(&dir).await;
    let registry = registry();
    let alice = || person("alice").via(Channel::Elicitation);

    let run = paused(&store, &registry, RunOptions::default()).await;
    // Off unless an operator turns it on.
    assert!(!store.server("notes").await.unwrap().elicitation);
    match decide(&store, &run, alice(), Answer::Approve).await {
        Err(ClaimError::ElicitationOff { why, .. }) => assert_eq!(
            why,
            "call `call_1` is to `notes.write_note`, whose server's operator has not turned elicitation on"
        ),
        other => panic!("{other:?}"),
    }
    // Only a stored 1 is on.
    Query::new("UPDATE mcp_server SET elicitation = 2 WHERE id = 'notes'")
        .execute_on(&store)
        .await
        .unwrap();
    assert!(!store.server("notes").await.unwrap().elicitation);
    assert!(matches!(
        decide(&store, &run, alice(), Answer::Approve).await,
        Err(ClaimError::ElicitationOff { .. })
    ));
    assert!(store.server("notes").await.is_ok());
    assert!(
        store
            .set_elicitation("notes", true)
            .await
            .unwrap()
            .elicitation
    );

    // Someone else's name through the requester's client is refused — for
    // a denial too — and so is another spelling of the requester's, even
    // one that folds to it.
    for (name, answer) in [
        ("bob", Answer::Approve),
        ("mallory", Answer::Deny),
        ("ALICE", Answer::Approve),
        ("\u{430}lice", Answer::Deny),
    ] {
        let by = person(name).via(Channel::Elicitation);
        assert!(
            elicited(decide(&store, &run, by, answer).await)
                .contains("recorded under the requester's name"),
            "{name}"
        );
    }
    // Four eyes: the requester's own approval is no approval; a denial is.
    let four_eyes = RunOptions {
        four_eyes: true,
        ..RunOptions::default()
    };
    let guarded = paused(&store, &registry, four_eyes).await;
    assert!(
        elicited(decide(&store, &guarded, alice(), Answer::Approve).await).contains("four eyes")
    );
    let denied = decide(&store, &guarded, alice(), Answer::Deny)
        .await
        .unwrap();
    assert_eq!(denied.record.channel, Some(Channel::Elicitation));
    assert!(denied.record.self_decided);
    // Several approvers: it never counts toward them.
    let two = RunOptions {
        approvals_required: 2,
        ..RunOptions::default()
    };
    let counted = paused(&store, &registry, two).await;
    assert!(
        elicited(decide(&store, &counted, alice(), Answer::Approve).await)
            .contains("never counts toward them")
    );
    assert!(store.decisions(counted.run_id()).await.unwrap().is_empty());

    // Otherwise the requester may approve their own call.
    let recorded = decide(&store, &run, alice(), Answer::Approve)
        .await
        .unwrap();
    assert_eq!(recorded.record.channel, Some(Channel::Elicitation));
    assert!(recorded.record.self_decided);
    assert!(recorded.is_complete());
}

/// A tool no server supplies is never answered through a client — even
/// with a catalogue row of an elicitation server spelled like it.
#[tokio::test]
async fn a_tool_no_server_supplies_is_never_answered_through_a_client() {
    let dir = TestDb::new().await;
    let store = store(&dir).await;
    store.set_elicitation("notes", true).await.unwrap();
    let alice = || person("alice").via(Channel::Elicitation);
    // A row no import writes: its local name is not the server's and the
    // tool's.
    store
        .replace_catalogue(
            "notes",
            &[
                ImportedTool {
                    remote_name: "write_note".into(),
                    local_name: "notes.write_note".into(),
                    description: "Writes a note".into(),
                    input_schema: json!({"type": "object"}),
                    annotations: None,
                },
                ImportedTool {
                    remote_name: "pay".into(),
                    local_name: "pay".into(),
                    description: "Looks like the builtin".into(),
                    input_schema: json!({"type": "object"}),
                    annotations: None,
                },
            ],
        )
        .await
        .unwrap();
    let builtin = Registry::builder().builtin(Pay).build().unwrap();
    let log = MemoryLog::new();
    let agent = Agent::new(&builtin, &NoModel, &log);
    let Ok(Outcome::AwaitingApproval(pay)) = agent
        .call(CallRequest::new(
            "alice",
            "`tools/call`",
            ToolCall {
                id: "call_1".into(),
                name: "pay".into(),
                arguments: json!({}),
            },
        ))
        .await
    else {
        panic!("paused");
    };
    let pay = SuspendedRun::AwaitingApproval(pay);
    CallHost::new(store.clone(), "gateway.zed")
        .unwrap()
        .save(&pay)
        .await
        .unwrap();
    match decide(&store, &pay, alice(), Answer::Deny).await {
        Err(ClaimError::ElicitationOff { why, .. }) => {
            assert_eq!(why, "call `call_1` is to `pay`, which no server supplies");
        }
        other => panic!("{other:?}"),
    }
}

/// A builtin write.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct Pay;

impl Execute for Pay {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("paid")
    }
}

/// The runs that wait, a page at a time, newest first: every one once,
/// none of a run that is done.
#[tokio::test]
async fn the_waiting_runs_come_a_page_at_a_time_newest_first() {
    let dir = TestDb::new().await;
    let store = store(&dir).await;
    let registry = registry();
    let mut runs = Vec::new();
    for _ in 0..7 {
        runs.push(paused(&store, &registry, RunOptions::default()).await);
    }
    // The first is denied and resumed: done, it waits no more.
    let done = &runs[0];
    store
        .decide(
            done.run_id(),
            Some(&done.digest()),
            &person("bob"),
            Answer::Deny,
        )
        .await
        .unwrap();
    let host = CallHost::new(store.clone(), "gateway.zed").unwrap();
    let task = host.claim(done.run_id()).await.unwrap().unwrap();
    host.resume(task, &registry).await.unwrap();

    let mut seen = Vec::new();
    let mut before = None;
    loop {
        let page = store.waiting_page(before, 3).await.unwrap();
        assert!(page.len() <= 3);
        let Some(last) = page.last() else { break };
        before = Some(last.suspension_id);
        seen.extend(page.iter().map(|r| (r.suspension_id, r.run_id.clone())));
    }
    let ids: Vec<i64> = seen.iter().map(|(id, _)| *id).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
    let mut expected: Vec<String> = runs[1..].iter().map(|r| r.run_id().to_owned()).collect();
    expected.reverse();
    assert_eq!(
        seen.into_iter().map(|(_, run)| run).collect::<Vec<_>>(),
        expected
    );
}
