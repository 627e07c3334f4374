//! The client's own user decides a held call where the client can ask: a
//! real MCP client (rmcp) that declares it shows forms, over stdio to
//! `toolgate gateway`, the notes test server upstream with elicitation
//! turned on by its operator. Approve runs the call once; deny answers it;
//! decline and cancel decide nothing, and an operator decides; under four
//! eyes, or with elicitation off, no form is ever sent; an operator who
//! decided first wins, and the client's answer is not recorded.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, ErrorData,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use serde_json::{Value, json};

mod common;
use common::gateway::{call, json_of, lines, notes, text};
use common::toolgate;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

/// The notes server, its elicitation turned `on` or `off` by its operator.
fn registered(dir: &Path, ledger: &Path, elicitation: &str) {
    notes(dir, ledger, &[]);
    toolgate(dir, &["server", "elicitation", "notes", elicitation]);
}

/// A client that shows forms, and answers each with `answer` — after
/// `delay` — keeping the messages it was shown.
#[derive(Clone)]
struct Forms {
    answer: ElicitResult,
    delay: Duration,
    shown: Arc<Mutex<Vec<String>>>,
}

impl Forms {
    fn answering(action: ElicitationAction, content: Option<Value>) -> Self {
        let mut answer = ElicitResult::new(action);
        answer.content = content;
        Self {
            answer,
            delay: Duration::ZERO,
            shown: Arc::default(),
        }
    }

    fn shown(&self) -> Vec<String> {
        self.shown.lock().unwrap().clone()
    }
}

impl rmcp::ClientHandler for Forms {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(ElicitationCapability::default());
        let mut config = ClientConfig::default();
        config.capabilities = capabilities;
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.shown.lock().unwrap().push(message);
        }
        tokio::time::sleep(self.delay).await;
        Ok(self.answer.clone())
    }
}

async fn session(dir: &Path, args: &[&str], forms: Forms) -> RunningService<RoleClient, Forms> {
    common::gateway::session(dir, args, forms).await
}

async fn write(client: &RunningService<RoleClient, Forms>, text: &str) -> CallToolResult {
    call(client.peer(), "notes__write_note", json!({"text": text})).await
}

fn write_in_background(
    client: &RunningService<RoleClient, Forms>,
    text: &'static str,
) -> tokio::task::JoinHandle<CallToolResult> {
    let peer = client.peer().clone();
    tokio::spawn(async move { call(&peer, "notes__write_note", json!({"text": text})).await })
}

/// The decisions recorded on the one run: who, through which channel, what.
fn decisions(dir: &Path) -> Vec<(String, String, String)> {
    let runs = json_of(dir, &["runs", "list", "--all"]);
    let run = runs[0]["run"].as_str().unwrap().to_owned();
    let shown = json_of(dir, &["runs", "show", &run]);
    shown["decisions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            (
                d["by"].as_str().unwrap_or_default().to_owned(),
                d["channel"].as_str().unwrap_or_default().to_owned(),
                d["verdict"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_user_approves_and_the_call_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger, "on");
    let forms = Forms::answering(
        ElicitationAction::Accept,
        Some(json!({"decision": "approve"})),
    );
    let client = session(dir, &["--wait", "20"], forms.clone()).await;
    let answered = write(&client, "asked <b>me</b>\u{202e}").await;
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1, "ran once");
    let shown = forms.shown();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(shown[0].contains("notes.write_note"), "{}", shown[0]);
    assert!(shown[0].contains("alice"), "{}", shown[0]);
    assert!(
        !shown[0].contains('\u{202e}') && !shown[0].contains("sha256:"),
        "escaped, and nothing secret: {}",
        shown[0]
    );
    assert_eq!(
        decisions(dir),
        [(
            "alice".to_owned(),
            "elicitation".to_owned(),
            "approved".to_owned()
        )]
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_user_denies_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger, "on");
    let forms = Forms::answering(
        ElicitationAction::Accept,
        Some(json!({"decision": "deny", "reason": "not today"})),
    );
    let client = session(dir, &["--wait", "20"], forms).await;
    let answered = write(&client, "no").await;
    assert_eq!(answered.is_error, Some(true));
    assert!(text(&answered).contains("not today"), "{}", text(&answered));
    assert_eq!(lines(&ledger), 0, "never run");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_or_cancelled_form_decides_nothing_and_an_operator_decides() {
    for action in [ElicitationAction::Decline, ElicitationAction::Cancel] {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let ledger = dir.join("ledger");
        registered(dir, &ledger, "on");
        let forms = Forms::answering(action.clone(), None);
        let client = session(dir, &["--wait", "20"], forms.clone()).await;
        let held = write_in_background(&client, "later");
        let mut run = None;
        for _ in 0..100 {
            if forms.shown().len() == 1
                && let Some(id) = json_of(dir, &["runs", "list"])[0]["run"].as_str()
            {
                run = Some(id.to_owned());
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let run = run.expect("the form was shown and the run waits");
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(decisions(dir).is_empty(), "{action:?} decided nothing");
        let digest = json_of(dir, &["runs", "show", &run])["digest"]
            .as_str()
            .unwrap()
            .to_owned();
        toolgate(
            dir,
            &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
        );
        let answered = held.await.unwrap();
        assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
        assert_eq!(lines(&ledger), 1);
        client.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_form_under_four_eyes_or_with_elicitation_off() {
    for (setting, args) in [
        ("on", &["--wait", "2", "--four-eyes"][..]),
        ("on", &["--wait", "2", "--approvals", "2"][..]),
        ("off", &["--wait", "2"][..]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let ledger = dir.join("ledger");
        registered(dir, &ledger, setting);
        let forms = Forms::answering(
            ElicitationAction::Accept,
            Some(json!({"decision": "approve"})),
        );
        let client = session(dir, args, forms.clone()).await;
        let answered = write(&client, "four eyes").await;
        assert!(
            text(&answered).starts_with("the call waits for approval"),
            "{args:?}: {}",
            text(&answered)
        );
        assert!(forms.shown().is_empty(), "{setting} {args:?}: no form");
        assert_eq!(lines(&ledger), 0);
        client.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_who_decides_first_wins_over_the_form() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger, "on");
    // The client's user approves, but only after 3 s.
    let mut forms = Forms::answering(
        ElicitationAction::Accept,
        Some(json!({"decision": "approve"})),
    );
    forms.delay = Duration::from_secs(3);
    let client = session(dir, &["--wait", "20"], forms.clone()).await;
    let held = write_in_background(&client, "raced");
    let mut run = None;
    for _ in 0..100 {
        if let Some(id) = json_of(dir, &["runs", "list"])[0]["run"].as_str() {
            run = Some(id.to_owned());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let run = run.expect("a run waits");
    let digest = json_of(dir, &["runs", "show", &run])["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    toolgate(
        dir,
        &["runs", "deny", &run, "--digest", &digest, "--as", "bob"],
    );
    let answered = held.await.unwrap();
    assert_eq!(answered.is_error, Some(true), "the operator's denial");
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        decisions(dir),
        [("bob".to_owned(), "console".to_owned(), "denied".to_owned())],
        "one winner: the form's late approval is not recorded"
    );
    assert_eq!(lines(&ledger), 0);
    client.cancel().await.unwrap();
}
