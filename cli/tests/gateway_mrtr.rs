//! The client's own user decides a held call on MCP's stateless protocol
//! (2026-07-28): a real MCP client (rmcp) that never initialises, over
//! stdio to `toolgate gateway`, the notes test server upstream with
//! elicitation turned on by its operator and the store under an integrity
//! key. The call is answered `input_required` — the form and a sealed
//! request state — and asked again with the form's answer: approve runs it
//! once, deny answers it, decline and cancel decide nothing; a state
//! changed, expired, or sealed for another call is refused and nothing
//! runs; the same state and answer again is answered by the run, another
//! answer refused; without an integrity key no form is sent. A listening
//! client is told when the tools change.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::path::Path;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, InputRequest,
    InputRequiredResult, InputResponses, ProtocolVersion, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _, RoleClient, RunningService};
use serde_json::{Value, json};

mod common;
use common::gateway::{lines, text};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

/// The store's integrity key, in these tests.
const KEY: &str = "the integrity key of this test's store";

/// The name of the form in an `input_required` answer.
const FORM: &str = "approval";

/// `toolgate ARGS` over `dir`, with the store's key when `keyed`; its
/// standard output.
fn toolgate(dir: &Path, keyed: bool, args: &[&str]) -> String {
    let mut command = common::command(dir);
    command.args(args).env("NO_COLOR", "1");
    if keyed {
        command.env("TOOLGATE_INTEGRITY_KEY", KEY);
    }
    let output = command.output().expect("toolgate runs");
    assert!(
        output.status.success(),
        "toolgate {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `toolgate --json ARGS` over the keyed store of `dir`, read.
fn json_of(dir: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&toolgate(dir, true, &[&["--json"][..], args].concat())).expect("JSON")
}

/// The notes server registered over `dir`, every write it runs a line of
/// `ledger`, its elicitation turned on by its operator.
fn registered(dir: &Path, ledger: &Path, keyed: bool) {
    let ledger = ledger.to_str().expect("a UTF-8 path");
    toolgate(
        dir,
        keyed,
        &[
            "server",
            "add",
            "notes",
            "--name",
            "Notes",
            "--data-class",
            "editor_content",
            "--",
            common::TOOLGATE,
            "mcp-test-server",
            "--ledger",
            ledger,
        ],
    );
    toolgate(dir, keyed, &["import", "notes"]);
    toolgate(dir, keyed, &["server", "elicitation", "notes", "on"]);
}

/// A client of the stateless protocol that declares it shows forms.
#[derive(Clone)]
struct Stateless;

impl rmcp::ClientHandler for Stateless {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(ElicitationCapability::default());
        let mut config = ClientConfig::default();
        config.capabilities = capabilities;
        config
    }
}

type Client = RunningService<RoleClient, Stateless>;

/// A `toolgate gateway --user alice ARGS…` over `dir` — with the store's
/// key when `keyed` — and a client of protocol 2026-07-28 connected to it,
/// which never initialises.
async fn session(dir: &Path, args: &[&str], keyed: bool) -> Client {
    let envs: &[(&str, &str)] = if keyed {
        &[("TOOLGATE_INTEGRITY_KEY", KEY)]
    } else {
        &[]
    };
    let client = Stateless
        .serve_with_lifecycle(
            common::gateway::process(dir, args, envs),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("the client connects");
    let server = client.peer().peer_info().expect("the server is known");
    assert_eq!(server.protocol_version, ProtocolVersion::V_2026_07_28);
    client
}

/// `notes__write_note` of `note`, as the client asks it again with
/// `returned` — the request state and the form's answer — when given.
fn write_note(note: &str, returned: Option<(&str, InputResponses)>) -> CallToolRequestParams {
    let Value::Object(arguments) = json!({"text": note}) else {
        unreachable!("an object")
    };
    let params = CallToolRequestParams::new("notes__write_note").with_arguments(arguments);
    match returned {
        Some((state, responses)) => params
            .with_request_state(state)
            .with_input_responses(responses),
        None => params,
    }
}

/// One round of `notes__write_note` of `note`: what the gateway answered.
async fn ask(
    client: &Client,
    note: &str,
    returned: Option<(&str, InputResponses)>,
) -> CallToolResponse {
    client
        .call_tool_once(write_note(note, returned))
        .await
        .expect("the call is answered")
}

/// The form the gateway sent for `note`: the `input_required` answer.
async fn form_for(client: &Client, note: &str) -> InputRequiredResult {
    match ask(client, note, None).await {
        CallToolResponse::InputRequired(input) => input,
        other => panic!("a form is sent for the held call, not {other:?}"),
    }
}

/// The call's final answer.
fn complete(response: CallToolResponse) -> CallToolResult {
    match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("the call is answered, not {other:?}"),
    }
}

/// The form's answer as the client sends it back: `action`, with `content`.
fn answer(action: ElicitationAction, content: Option<Value>) -> InputResponses {
    let mut answered = ElicitResult::new(action);
    answered.content = content;
    InputResponses::from([(
        FORM.to_owned(),
        serde_json::to_value(answered).expect("an answer writes"),
    )])
}

fn approve() -> InputResponses {
    answer(
        ElicitationAction::Accept,
        Some(json!({"decision": "approve"})),
    )
}

fn deny(reason: &str) -> InputResponses {
    answer(
        ElicitationAction::Accept,
        Some(json!({"decision": "deny", "reason": reason})),
    )
}

/// The sealed state an `input_required` answer carries.
fn state_of(input: &InputRequiredResult) -> String {
    input
        .request_state
        .clone()
        .expect("the answer carries a request state")
}

/// The runs that wait for a decision.
fn waiting(dir: &Path) -> Vec<String> {
    json_of(dir, &["runs", "list"])
        .as_array()
        .expect("a list")
        .iter()
        .map(|run| run["run"].as_str().expect("a run id").to_owned())
        .collect()
}

/// The decisions recorded on `run`: who, through which channel, what.
fn decisions(dir: &Path, run: &str) -> Vec<(String, String, String)> {
    let shown = json_of(dir, &["runs", "show", run]);
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

/// The one run of `dir`, waiting or not.
fn only_run(dir: &Path) -> String {
    let runs = json_of(dir, &["runs", "list", "--all"]);
    let runs = runs.as_array().expect("a list");
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0]["run"].as_str().expect("a run id").to_owned()
}

/// `toolgate runs approve|deny RUN` as bob, with the digest shown.
fn operator(dir: &Path, verdict: &str, run: &str) {
    let digest = json_of(dir, &["runs", "show", run])["digest"]
        .as_str()
        .expect("a digest")
        .to_owned();
    toolgate(
        dir,
        true,
        &["runs", verdict, run, "--digest", &digest, "--as", "bob"],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_user_approves_in_the_answer_and_the_call_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger, true);
    let client = session(dir, &["--wait", "20"], true).await;
    let input = form_for(&client, "asked <b>me</b>\u{202e}").await;
    let requests = input.input_requests.as_ref().expect("a form is asked for");
    assert_eq!(requests.keys().collect::<Vec<_>>(), [FORM]);
    let InputRequest::Elicitation(form) = &requests[FORM] else {
        panic!("the form is an elicitation: {requests:?}");
    };
    let ElicitRequestParams::FormElicitationParams {
        message,
        requested_schema,
        ..
    } = &form.params
    else {
        panic!("a form, not a URL: {form:?}");
    };
    assert!(message.contains("notes.write_note"), "{message}");
    assert!(message.contains("alice"), "{message}");
    assert!(
        !message.contains('\u{202e}') && !message.contains("sha256:"),
        "escaped, and nothing secret: {message}"
    );
    let schema = serde_json::to_value(requested_schema).unwrap();
    assert_eq!(schema["required"], json!(["decision"]), "{schema}");
    assert_eq!(
        waiting(dir).len(),
        1,
        "the call is held while the form is out"
    );
    assert_eq!(lines(&ledger), 0, "not run before the answer");

    let state = state_of(&input);
    let answered = complete(
        ask(
            &client,
            "asked <b>me</b>\u{202e}",
            Some((&state, approve())),
        )
        .await,
    );
    assert_eq!(answered.is_error, Some(false), "{}", text(&answered));
    assert_eq!(lines(&ledger), 1, "ran once");
    let run = only_run(dir);
    assert_eq!(
        decisions(dir, &run),
        [(
            "alice".to_owned(),
            "elicitation".to_owned(),
            "approved".to_owned()
        )]
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_user_denies_in_the_answer_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger, true);
    let client = session(dir, &["--wait", "20"], true).await;
    let state = state_of(&form_for(&client, "no").await);
    let answered = complete(ask(&client, "no", Some((&state, deny("not today")))).await);
    assert_eq!(answered.is_error, Some(true), "{}", text(&answered));
    assert!(text(&answered).contains("not today"), "{}", text(&answered));
    assert_eq!(lines(&ledger), 0, "never run");
    let run = only_run(dir);
    assert_eq!(
        decisions(dir, &run),
        [(
            "alice".to_owned(),
            "elicitation".to_owned(),
            "denied".to_owned()
        )]
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_or_cancelled_form_decides_nothing_and_an_operator_decides() {
    for action in [ElicitationAction::Decline, ElicitationAction::Cancel] {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let ledger = dir.join("ledger");
        registered(dir, &ledger, true);
        let client = session(dir, &["--wait", "4"], true).await;
        let state = state_of(&form_for(&client, "later").await);
        let answered = complete(
            ask(
                &client,
                "later",
                Some((&state, answer(action.clone(), None))),
            )
            .await,
        );
        assert!(
            text(&answered).starts_with("the call waits for approval"),
            "{action:?}: {}",
            text(&answered)
        );
        let run = only_run(dir);
        assert_eq!(
            waiting(dir),
            [run.as_str()],
            "{action:?}: the run still waits"
        );
        assert!(
            decisions(dir, &run).is_empty(),
            "{action:?} decided nothing"
        );
        assert_eq!(lines(&ledger), 0);

        // The same call, asked again while an operator decides it, is
        // answered by that decision.
        let peer = client.peer().clone();
        let asked = tokio::spawn(async move {
            peer.call_tool_once(write_note(
                "later",
                Some((&state, answer(ElicitationAction::Cancel, None))),
            ))
            .await
            .expect("the call is answered")
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        operator(dir, "approve", &run);
        let answered = complete(asked.await.unwrap());
        assert_eq!(
            answered.is_error,
            Some(false),
            "{action:?}: {}",
            text(&answered)
        );
        assert_eq!(lines(&ledger), 1, "{action:?}: ran once");
        assert_eq!(
            decisions(dir, &run),
            [(
                "bob".to_owned(),
                "console".to_owned(),
                "approved".to_owned()
            )]
        );
        client.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_changed_by_one_byte_is_refused_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger, true);
    let client = session(dir, &["--wait", "20"], true).await;
    let state = state_of(&form_for(&client, "tampered").await);
    // One character of the sealed body, changed.
    let mut bytes = state.clone().into_bytes();
    let at = state.find('.').expect("a sealed state has sections") + 3;
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    assert_ne!(tampered, state);
    let answered = complete(ask(&client, "tampered", Some((&tampered, approve()))).await);
    assert_eq!(answered.is_error, Some(true));
    assert!(
        text(&answered).starts_with("the request state does not verify"),
        "{}",
        text(&answered)
    );
    assert!(text(&answered).contains("nothing was recorded, and the call was not run"));
    let run = only_run(dir);
    assert_eq!(waiting(dir), [run.as_str()], "the run still waits");
    assert!(decisions(dir, &run).is_empty(), "nothing recorded");
    assert_eq!(lines(&ledger), 0, "never run");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_state_and_answer_again_is_answered_by_the_run_and_another_answer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger, true);
    let client = session(dir, &["--wait", "20"], true).await;
    let state = state_of(&form_for(&client, "once").await);
    let first = complete(ask(&client, "once", Some((&state, approve()))).await);
    assert_eq!(first.is_error, Some(false), "{}", text(&first));
    assert_eq!(lines(&ledger), 1);

    let again = complete(ask(&client, "once", Some((&state, approve()))).await);
    assert_eq!(again.is_error, Some(false), "{}", text(&again));
    assert_eq!(text(&again), text(&first), "the stored result");
    assert_eq!(lines(&ledger), 1, "never run twice");

    let other = complete(ask(&client, "once", Some((&state, deny("changed my mind")))).await);
    assert_eq!(other.is_error, Some(true));
    assert!(
        text(&other).contains("was decided already"),
        "{}",
        text(&other)
    );
    let run = only_run(dir);
    assert_eq!(
        decisions(dir, &run),
        [(
            "alice".to_owned(),
            "elicitation".to_owned(),
            "approved".to_owned()
        )],
        "the other answer is not recorded"
    );
    assert_eq!(lines(&ledger), 1);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_state_is_refused_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger, true);
    let client = session(dir, &["--wait", "20", "--answer-within", "1"], true).await;
    let state = state_of(&form_for(&client, "too late").await);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let answered = complete(ask(&client, "too late", Some((&state, approve()))).await);
    assert_eq!(answered.is_error, Some(true));
    assert!(
        text(&answered).starts_with("the request state expired"),
        "{}",
        text(&answered)
    );
    let run = only_run(dir);
    assert!(decisions(dir, &run).is_empty(), "nothing recorded");
    assert_eq!(lines(&ledger), 0, "never run");

    // Asked again without it, the call is sent a new form.
    let fresh = state_of(&form_for(&client, "too late").await);
    assert_ne!(fresh, state);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_sealed_for_another_run_is_refused_on_this_call() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger, true);
    let client = session(dir, &["--wait", "20"], true).await;
    let one = state_of(&form_for(&client, "one").await);
    let two = state_of(&form_for(&client, "two").await);
    assert_ne!(one, two);
    assert_eq!(waiting(dir).len(), 2, "a run for each call");
    let answered = complete(ask(&client, "two", Some((&one, approve()))).await);
    assert_eq!(answered.is_error, Some(true));
    assert!(
        text(&answered).starts_with("the request state does not verify"),
        "{}",
        text(&answered)
    );
    for run in waiting(dir) {
        assert!(decisions(dir, &run).is_empty(), "nothing recorded on {run}");
    }
    assert_eq!(waiting(dir).len(), 2, "both still wait");
    assert_eq!(lines(&ledger), 0, "never run");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_who_decides_first_wins_over_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger, true);
    let client = session(dir, &["--wait", "20"], true).await;
    let state = state_of(&form_for(&client, "raced").await);
    let run = only_run(dir);
    operator(dir, "deny", &run);
    let answered = complete(ask(&client, "raced", Some((&state, approve()))).await);
    assert_eq!(answered.is_error, Some(true));
    assert!(
        text(&answered).contains("was decided already by `bob`"),
        "{}",
        text(&answered)
    );
    assert_eq!(
        decisions(dir, &run),
        [("bob".to_owned(), "console".to_owned(), "denied".to_owned())],
        "one winner: the client's approval is not recorded"
    );
    assert_eq!(lines(&ledger), 0);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_integrity_key_or_under_four_eyes_no_form_is_sent_and_the_call_waits() {
    for (keyed, args) in [
        (false, &["--wait", "2"][..]),
        (true, &["--wait", "2", "--four-eyes"][..]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let ledger = dir.join("ledger");
        registered(dir, &ledger, keyed);
        let client = session(dir, args, keyed).await;
        let answered = complete(ask(&client, "unasked", None).await);
        assert!(
            text(&answered).starts_with("the call waits for approval"),
            "{args:?}: {}",
            text(&answered)
        );
        assert_eq!(lines(&ledger), 0);
        client.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listening_client_is_told_when_the_tools_change() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    registered(dir, &ledger, true);
    let client = session(dir, &[], true).await;
    let mut subscription = client
        .peer()
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .expect("the gateway accepts the subscription");
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    // A tool's gate changes: the operator turns the server's approval off.
    common::approval_off(dir, "notes");
    let told = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("told within the interval")
        .expect("the subscription stands");
    assert!(
        matches!(
            told,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{told:?}"
    );
    client.cancel().await.unwrap();
}
