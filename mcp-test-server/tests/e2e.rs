//! End to end against the real test server process, over stdio and over
//! streamable HTTP on 127.0.0.1: import, the provider, the gate's decision on
//! remote calls, and every way a server can fail.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use toolgate::{
    Agent, OperatorDeclaration, Registry, ToolOutput,
    run::{Outcome, Reply, RunRequest, ToolCall, TurnScan, scan_turn},
    testing::{MemoryLog, ScriptedModel},
};
use toolgate_mcp::{Deadlines, ImportError, ImportProgress, McpProvider, SkipReason, import};
use toolgate_store::{DataClass, NewServer, Store, Transport};

const SERVER: &str = env!("CARGO_BIN_EXE_toolgate-mcp-test-server");

fn temp() -> tempfile::TempDir {
    match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => panic!("{error}"),
    }
}

async fn store(dir: &tempfile::TempDir) -> Store {
    match Store::open(dir.path().join("mcp.db")).await {
        Ok(store) => store,
        Err(error) => panic!("{error}"),
    }
}

fn stdio(args: &[&str]) -> Transport {
    let mut command = vec![SERVER.to_owned()];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    Transport::Stdio { command }
}

async fn add(store: &Store, id: &str, transport: Transport, class: Option<DataClass>) {
    let added = store
        .add_server(NewServer {
            id: id.into(),
            name: format!("{id} (test server)"),
            transport,
            data_class: class,
        })
        .await;
    assert!(added.is_ok(), "{added:?}");
}

fn quick() -> Deadlines {
    Deadlines {
        connect: Duration::from_secs(20),
        list_page: Duration::from_secs(2),
        call: Duration::from_secs(2),
    }
}

async fn run_import(store: &Store, id: &str) -> Result<toolgate_mcp::ImportReport, ImportError> {
    let mut events = Vec::new();
    let result = import(store, id, quick(), &mut |p| events.push(p)).await;
    if result.is_ok() {
        assert_eq!(events.first(), Some(&ImportProgress::Connecting));
        assert!(matches!(
            events.last(),
            Some(ImportProgress::Storing { .. })
        ));
    }
    result
}

fn registry_of(store: &Store) -> (Registry, std::sync::Arc<McpProvider>) {
    let provider = std::sync::Arc::new(McpProvider::new(store.clone(), quick()));
    let registry = Registry::builder()
        .provider(std::sync::Arc::clone(&provider))
        .build();
    match registry {
        Ok(registry) => (registry, provider),
        Err(error) => panic!("{error}"),
    }
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

/// One call through the gate: scanned as a turn of its own, which must be
/// cleared to run now (the server's approval is off), and run by its permit.
async fn execute(registry: &Registry, name: &str, arguments: Value) -> ToolOutput {
    let offered = registry.offer_all().await;
    let calls = [call("c1", name, arguments)];
    let TurnScan::Run(cleared) = scan_turn(&offered, &calls) else {
        panic!("`{name}` waits for a human");
    };
    match cleared.into_calls().next() {
        Some((_, Ok(permit))) => permit.run().await,
        other => panic!("`{name}` is not offered: {other:?}"),
    }
}

#[tokio::test]
async fn import_lists_every_page_and_the_provider_supplies_prefixed_tools() {
    let dir = temp();
    let store = store(&dir).await;
    add(&store, "notes", stdio(&[]), Some(DataClass::EditorContent)).await;
    let report = match run_import(&store, "notes").await {
        Ok(report) => report,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(report.listed, 12, "6 tools and 6 fillers");
    assert_eq!(report.pages, 3, "pages of 4");
    assert_eq!(report.change.added.len(), 12);
    assert!(report.skipped.is_empty());
    let rows = store
        .catalogue("notes")
        .await
        .expect("`catalogue` succeeds");
    let tidy = rows.iter().find(|r| r.remote_name == "tidy_notes");
    assert_eq!(
        tidy.and_then(|r| r.annotations.as_deref()),
        Some(r#"{"readOnlyHint":true,"title":"Tidy notes"}"#),
        "annotations are stored as the server sent them"
    );
    let server = store.server("notes").await.ok();
    assert_eq!(server.map(|s| s.import.status), Some("ok".into()));

    let (registry, provider) = registry_of(&store);
    let names: Vec<String> = registry
        .catalogue()
        .await
        .tools()
        .map(|t| t.name().to_owned())
        .collect();
    assert!(names.contains(&"notes.read_note".to_owned()));
    assert!(names.iter().all(|n| n.starts_with("notes.")));
    let explanation = registry.explain("notes.read_note").await;
    let Some(explanation) = explanation else {
        panic!("explained");
    };
    assert_eq!(
        explanation.to_string(),
        "approval: operator declared approval required for server `notes`"
    );
    let description = registry
        .catalogue()
        .await
        .get("notes.read_note")
        .map(|t| t.description().to_owned());
    assert_eq!(
        description.as_deref(),
        Some("via the external MCP server `notes`: Reads a note by its number.")
    );
    provider.close().await;
}

#[tokio::test]
async fn with_the_default_flag_every_remote_call_suspends_then_runs_once_the_operator_says_so() {
    let dir = temp();
    let store = store(&dir).await;
    add(&store, "notes", stdio(&[]), Some(DataClass::EditorContent)).await;
    run_import(&store, "notes")
        .await
        .expect("`run_import` succeeds");

    // Approval required (the default): each call suspends on its own,
    // `tidy_notes` — which claims `readOnlyHint: true` — included.
    let (registry, provider) = registry_of(&store);
    let offered = registry.offer_all().await;
    for name in [
        "notes.read_note",
        "notes.tidy_notes",
        "notes.write_note",
        "notes.lookup_00",
    ] {
        let turn = [call("1", name, json!({}))];
        assert!(
            matches!(scan_turn(&offered, &turn), TurnScan::Approval),
            "{name} must wait for approval"
        );
    }
    let model = ScriptedModel::new([Reply::Calls {
        content: None,
        calls: vec![call("1", "notes.tidy_notes", json!({}))],
    }]);
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    let outcome = agent.start(RunRequest::new("alice", "tidy up")).await;
    assert!(
        matches!(outcome, Ok(Outcome::AwaitingApproval(_))),
        "{outcome:?}"
    );
    provider.close().await;

    // The operator turns approval off for this server: the same calls run.
    assert!(
        store
            .set_approval(
                "notes",
                OperatorDeclaration::NoApproval,
                Some(&reviewed(&store, "notes").await)
            )
            .await
            .is_ok()
    );
    let (registry, provider) = registry_of(&store);
    let model = ScriptedModel::new([
        Reply::Calls {
            content: None,
            calls: vec![
                call("1", "notes.read_note", json!({"id": 0})),
                call("2", "notes.tidy_notes", json!({})),
                call("3", "notes.read_note", json!({"id": 0})),
            ],
        },
        Reply::Text("done".into()),
    ]);
    let agent = Agent::new(&registry, &model, &log);
    let state = match agent.start(RunRequest::new("alice", "tidy up")).await {
        Ok(Outcome::Finished { state, .. }) => state,
        other => panic!("expected the calls to run, got {other:?}"),
    };
    let results: Vec<String> = state
        .transcript
        .iter()
        .filter_map(|m| match m {
            toolgate::run::Message::Tool { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            "note 0: buy milk",
            "tidied: deleted 1 notes",
            "note 0: (none; 0 notes)"
        ]
    );
    provider.close().await;
}

#[tokio::test]
async fn a_server_without_a_declared_data_class_supplies_nothing() {
    let dir = temp();
    let store = store(&dir).await;
    add(&store, "undeclared", stdio(&[]), None).await;
    add(
        &store,
        "declared",
        stdio(&["--fillers", "0"]),
        Some(DataClass::PublicContent),
    )
    .await;
    run_import(&store, "undeclared")
        .await
        .expect("`run_import` succeeds");
    run_import(&store, "declared")
        .await
        .expect("`run_import` succeeds");
    let (registry, provider) = registry_of(&store);
    let catalogue = registry.catalogue().await;
    assert!(catalogue.tools().all(|t| t.name().starts_with("declared.")));
    assert_eq!(catalogue.len(), 6);
    provider.close().await;
}

#[tokio::test]
async fn is_error_a_killed_server_and_a_hung_call_are_error_results_within_the_deadline() {
    let dir = temp();
    let store = store(&dir).await;
    add(&store, "notes", stdio(&[]), Some(DataClass::EditorContent)).await;
    run_import(&store, "notes")
        .await
        .expect("`run_import` succeeds");
    assert!(
        store
            .set_approval(
                "notes",
                OperatorDeclaration::NoApproval,
                Some(&reviewed(&store, "notes").await)
            )
            .await
            .is_ok()
    );
    let (registry, provider) = registry_of(&store);

    let failed = execute(&registry, "notes.always_fails", json!({})).await;
    assert!(failed.is_error);
    assert_eq!(
        failed.content,
        "server `notes` reported an error: the backend refused the request[31m (code 503)",
        "control characters are stripped"
    );

    let started = Instant::now();
    let hung = execute(&registry, "notes.slow", json!({"seconds": 60})).await;
    assert!(hung.is_answer_lost(), "the call was sent: {hung:?}");
    assert_eq!(
        hung.content,
        "server `notes`: the call reached the server; its answer was lost: none came within 2 s"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // The connection comes back after the hung call...
    let read = execute(&registry, "notes.read_note", json!({"id": 0})).await;
    assert_eq!(read, ToolOutput::text("note 0: buy milk"));
    // ...and a server that dies mid-call lost its answer: the call was
    // sent, and may have run.
    let started = Instant::now();
    let crashed = execute(&registry, "notes.crash", json!({})).await;
    assert!(crashed.is_answer_lost(), "{crashed:?}");
    assert!(
        crashed
            .content
            .starts_with("server `notes`: the call reached the server; its answer was lost: "),
        "{}",
        crashed.content
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // Arguments that are not an object never reach the server.
    let bad = execute(&registry, "notes.read_note", json!([1, 2])).await;
    assert!(bad.is_error);
    assert!(
        bad.content
            .starts_with("invalid arguments for `notes.read_note`"),
        "{}",
        bad.content
    );
    provider.close().await;
}

#[tokio::test]
async fn a_reimport_after_the_server_drops_a_tool_marks_it_orphaned() {
    let dir = temp();
    let store = store(&dir).await;
    add(&store, "notes", stdio(&[]), Some(DataClass::EditorContent)).await;
    run_import(&store, "notes")
        .await
        .expect("`run_import` succeeds");
    let changed = store
        .set_transport("notes", &stdio(&["--drop", "write_note"]))
        .await;
    changed.expect("`changed` is Ok");
    let report = match run_import(&store, "notes").await {
        Ok(report) => report,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(report.change.orphaned, ["notes.write_note"]);
    assert_eq!(report.change.unchanged, 11);
    let rows = store
        .catalogue("notes")
        .await
        .expect("`catalogue` succeeds");
    assert!(
        rows.iter()
            .any(|r| r.remote_name == "write_note" && r.orphaned)
    );
    let (registry, provider) = registry_of(&store);
    assert!(registry.catalogue().await.get("notes.write_note").is_none());
    provider.close().await;
}

#[tokio::test]
async fn names_that_do_not_fit_are_skipped_with_a_reason() {
    let dir = temp();
    let store = store(&dir).await;
    add(
        &store,
        "notes",
        stdio(&["--odd-names", "--fillers", "0"]),
        Some(DataClass::EditorContent),
    )
    .await;
    let report = match run_import(&store, "notes").await {
        Ok(report) => report,
        Err(error) => panic!("{error}"),
    };
    let reasons: Vec<String> = report
        .skipped
        .iter()
        .map(|s| format!("{}: {}", s.remote_name, s.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            "read\u{430}note: the name holds a non-ASCII character (U+0430 а) that can pass for another".to_owned(),
            "tab\\u{9}name: the name holds a control character (\\t)".to_owned(),
            format!("{}: the local name would be 76 characters long; at most 64 are allowed", "x".repeat(70)),
            "read_note: the server lists this name more than once".to_owned(),
        ]
    );
    assert!(matches!(report.skipped[3].reason, SkipReason::Duplicate));
    assert_eq!(report.change.added.len(), 6);
}

#[tokio::test]
async fn an_import_that_fails_keeps_the_previous_catalogue() {
    let dir = temp();
    let store = store(&dir).await;
    add(&store, "notes", stdio(&[]), Some(DataClass::EditorContent)).await;
    run_import(&store, "notes")
        .await
        .expect("`run_import` succeeds");
    let before = store
        .catalogue("notes")
        .await
        .expect("`catalogue` succeeds");
    assert_eq!(before.len(), 12);
    for (args, expected) in [
        (
            vec!["--hang-on-list"],
            "server `notes` did not answer tools/list within 2 s",
        ),
        (vec!["--die-on-list"], "server `notes` failed tools/list"),
        (vec!["--garbage"], "cannot connect to server `notes`: "),
    ] {
        let changed = store.set_transport("notes", &stdio(&args)).await;
        changed.expect("`changed` is Ok");
        let started = Instant::now();
        let deadlines = Deadlines {
            connect: Duration::from_secs(3),
            ..quick()
        };
        let result = import(&store, "notes", deadlines, &mut |_| {}).await;
        let error = match result {
            Err(error) => error.to_string(),
            Ok(report) => panic!("{args:?}: expected a failure, got {report:?}"),
        };
        assert!(error.starts_with(expected), "{args:?}: {error}");
        assert!(started.elapsed() < Duration::from_secs(15), "{args:?}");
        assert_eq!(
            store
                .catalogue("notes")
                .await
                .expect("`catalogue` succeeds"),
            before,
            "{args:?}"
        );
        let server = store.server("notes").await.ok();
        assert_eq!(
            server.as_ref().map(|s| s.import.status.as_str()),
            Some("failed")
        );
        assert_eq!(server.and_then(|s| s.import.error), Some(error));
    }
}

/// The test server over streamable HTTP on 127.0.0.1, killed at the end.
struct HttpServer {
    child: tokio::process::Child,
    url: String,
}

async fn http_server() -> HttpServer {
    let child = tokio::process::Command::new(SERVER)
        .args(["--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(error) => panic!("{error}"),
    };
    let Some(stdout) = child.stdout.take() else {
        panic!("no stdout");
    };
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await;
    let Ok(Ok(Some(line))) = line else {
        panic!("the server did not say where it listens: {line:?}");
    };
    let Some(url) = line.strip_prefix("listening on ") else {
        panic!("unexpected line {line}");
    };
    HttpServer {
        url: url.to_owned(),
        child,
    }
}

#[tokio::test]
async fn over_http_import_calls_and_a_killed_server() {
    let mut server = http_server().await;
    let dir = temp();
    let store = store(&dir).await;
    add(
        &store,
        "web",
        Transport::Http {
            url: server.url.clone(),
        },
        Some(DataClass::PublicContent),
    )
    .await;
    let report = match run_import(&store, "web").await {
        Ok(report) => report,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(report.listed, 12);
    assert!(
        store
            .set_approval(
                "web",
                OperatorDeclaration::NoApproval,
                Some(&reviewed(&store, "web").await)
            )
            .await
            .is_ok()
    );
    let (registry, provider) = registry_of(&store);
    let wrote = execute(&registry, "web.write_note", json!({"text": "over http"})).await;
    assert_eq!(wrote, ToolOutput::text("wrote note 1"));
    let failed = execute(&registry, "web.always_fails", json!({})).await;
    assert!(failed.is_error);

    let killed = server.child.kill().await;
    killed.expect("`killed` is Ok");
    let started = Instant::now();
    let after = execute(&registry, "web.read_note", json!({"id": 1})).await;
    assert!(after.is_error, "{after:?}");
    assert!(
        !after.is_answer_lost(),
        "no connection could be made, so the call provably never left: {after:?}"
    );
    assert!(
        after.content.starts_with("server `web`"),
        "{}",
        after.content
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    provider.close().await;
}

/// The notes server over stdio with `args`, imported, its approval turned
/// off; a registry over it whose calls have `call` to answer.
async fn notes_unattended(
    dir: &tempfile::TempDir,
    args: &[&str],
    call: Duration,
) -> (Store, Registry, std::sync::Arc<McpProvider>) {
    let store = store(dir).await;
    add(&store, "notes", stdio(args), Some(DataClass::EditorContent)).await;
    run_import(&store, "notes")
        .await
        .expect("`run_import` succeeds");
    assert!(
        store
            .set_approval(
                "notes",
                OperatorDeclaration::NoApproval,
                Some(&reviewed(&store, "notes").await)
            )
            .await
            .is_ok()
    );
    let patient = Deadlines { call, ..quick() };
    let provider = std::sync::Arc::new(McpProvider::new(store.clone(), patient));
    let registry = Registry::builder()
        .provider(std::sync::Arc::clone(&provider))
        .build()
        .expect("the registry builds");
    (store, registry, provider)
}

/// A result larger than the client takes in one message (rmcp drops such a
/// line unseen) is reported as too large as soon as it arrives — not as a
/// server that "did not answer" when the call's deadline, here ten minutes,
/// runs out — and the connection comes back for the next call.
#[tokio::test]
async fn a_result_too_large_is_reported_at_once_not_at_the_deadline() {
    let dir = temp();
    let huge = format!("read_note={}", 17 * 1024 * 1024);
    let (_store, registry, provider) =
        notes_unattended(&dir, &["--huge", &huge], Duration::from_mins(10)).await;
    let read = execute(&registry, "notes.read_note", json!({"id": 0})).await;
    assert!(read.is_answer_lost(), "{:?}", &read.content.get(..200));
    assert_eq!(
        read.content,
        "server `notes`: the call reached the server; its answer was lost: it was over 16 MiB in one message, the client's limit, and was dropped"
    );
    // The next call, small, gets its answer on the same connection.
    let wrote = execute(&registry, "notes.write_note", json!({"text": "hello"})).await;
    assert!(!wrote.is_error, "{wrote:?}");
    provider.close().await;
}

/// The digest of a server's tools as an operator is shown them, which turning
/// its approval off carries.
async fn reviewed(store: &Store, server: &str) -> String {
    store
        .acceptance(server, &[])
        .await
        .expect("the server's tools are shown")
        .digest
}

/// One call's failure does not lose another's answer: while a write waits
/// on the server, a read whose answer is too large to take fails — and the
/// write still gets its answer on the same connection. The read cannot tell
/// the dropped message was its own while another call is in flight, so it
/// waits for its deadline, and its answer is lost.
#[tokio::test]
async fn a_failed_call_does_not_reset_the_connection_under_another() {
    let dir = temp();
    let huge = format!("read_note={}", 17 * 1024 * 1024);
    let (_store, registry, provider) = notes_unattended(
        &dir,
        &["--huge", &huge, "--delay", "write_note=2"],
        Duration::from_secs(6),
    )
    .await;
    // The connection is made first, so both calls share it.
    let first = execute(&registry, "notes.lookup_00", json!({})).await;
    assert!(!first.is_error, "{first:?}");
    let (wrote, read) = tokio::join!(
        execute(&registry, "notes.write_note", json!({"text": "kept"})),
        async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            execute(&registry, "notes.read_note", json!({"id": 0})).await
        }
    );
    assert_eq!(wrote, ToolOutput::text("wrote note 1"));
    assert!(read.is_answer_lost(), "{:?}", read.content.get(..200));
    assert_eq!(
        read.content,
        "server `notes`: the call reached the server; its answer was lost: none came within 6 s"
    );
    provider.close().await;
}
