//! A run's page against a real store, on SQLite and again on PostgreSQL:
//! the conversation that led to the turn, each call's real gate and why,
//! a denial of every call with the reason the model reads, a write
//! approved only once asked again, what a finished run ran and answered
//! (and what a coding agent's client reported), and who resumes the run —
//! with what the store knows of whether such a host was seen.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::fmt::Write as _;
use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::{Map, Value, json};
use toolgate::erased::{BoxFuture, ErasedTool};
use toolgate::gate::ApprovalByOperator;
use toolgate::identity::{IdentitySource, Operator};
use toolgate::registry::{ProviderError, Revision, ToolProvider};
use toolgate::run::{CallRequest, Outcome, Reply, RunRequest, ToolCall};
use toolgate::suspend::{CallVerdict, SuspendedRun};
use toolgate::testing::{MemoryLog, ScriptedModel};
use toolgate::{
    Agent, DeclarationScope, Execute, NonIdempotentWrite, OperatorDeclaration, Registry, Remote,
    RemoteApproval, RemoteTool, Tool, ToolOutput,
};
use toolgate_store::{Answer, CallHost, DataClass, Host, Store, ToolDeclaration};

#[path = "../../store/tests/backend/mod.rs"]
mod backend;
use backend::TestDb;

mod common;
use common::catalogue::{declare, server};
use common::{ORIGIN, get, inbox, post, send, signed_in};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    backend::rerun_on_postgres();
}

/// Deletes a branch.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct DeleteBranch;

impl Execute for DeleteBranch {
    type Args = Map<String, Value>;
    async fn execute(&self, args: Self::Args) -> ToolOutput {
        let branch = args.get("branch").and_then(Value::as_str).unwrap_or("?");
        ToolOutput::text(format!("deleted {branch}\nand its reflog"))
    }
}

fn bob() -> Operator {
    Operator::new("bob", IdentitySource::Flag).unwrap()
}

fn registry() -> Registry {
    Registry::builder().builtin(DeleteBranch).build().unwrap()
}

fn delete(id: &str, branch: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "delete_branch".into(),
        arguments: json!({"branch": branch}),
    }
}

/// The model's words before its turn: markup, a hidden character, and a
/// text long enough to be folded.
fn model_words() -> String {
    let mut words = "I will <b>tidy</b> up\u{202e}now.\n".to_owned();
    for line in 0..20 {
        writeln!(words, "step {line}: look at the branches").unwrap();
    }
    words
}

/// The model that asks for two deletions and then answers `answer`.
fn model(answer: &str) -> ScriptedModel {
    ScriptedModel::new([
        Reply::Calls {
            content: Some(model_words()),
            calls: vec![delete("c1", "old"), delete("c2", "stale")],
        },
        Reply::Text(answer.to_owned()),
    ])
}

/// A run of alice's, paused on the model's two deletions, saved for host
/// `demo`.
async fn two_deletions(store: &Store, registry: &Registry, model: &ScriptedModel) -> SuspendedRun {
    let log = MemoryLog::new();
    let agent = Agent::new(registry, model, &log);
    let request = RunRequest::new("alice", "tidy the <script>branches</script>");
    let Ok(Outcome::AwaitingApproval(run)) = agent.start(request).await else {
        panic!("an approval pause");
    };
    let run = SuspendedRun::AwaitingApproval(run);
    store.save_suspended(&run, "demo").await.unwrap();
    run
}

async fn page(inbox: &toolgate_inbox::Inbox, cookie: &str, csrf: &str, run: &str) -> String {
    let page = send(inbox, get(&format!("/s/{csrf}/runs/{run}"), Some(cookie))).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    page.body
}

/// The section of `body` from `heading` to the next `<h2>`.
fn section<'a>(body: &'a str, heading: &str) -> &'a str {
    let start = body
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading} in {body}"));
    let rest = &body[start..];
    let end = rest[heading.len()..]
        .find("<h2>")
        .map_or(rest.len(), |at| at + heading.len());
    &rest[..end]
}

/// The hidden fields of the page's form, as a browser posts them.
fn hidden_fields(body: &str) -> Vec<(String, String)> {
    let unescape = |text: &str| {
        text.replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    };
    body.split("<input type=\"hidden\" name=\"")
        .skip(1)
        .map(|rest| {
            let (name, rest) = rest.split_once('"').unwrap();
            let value = rest
                .strip_prefix(" value=\"")
                .and_then(|rest| rest.split_once('"'))
                .map_or("", |(value, _)| value);
            (unescape(name), unescape(value))
        })
        .collect()
}

/// The conversation that led to the turn: the user's request and the
/// model's words, escaped, hidden characters shown, a long text folded.
#[tokio::test]
async fn the_page_shows_the_conversation_that_led_to_the_turn() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let registry = registry();
    let run = two_deletions(&store, &registry, &model("done")).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let body = page(&inbox, &cookie, &csrf, run.run_id()).await;
    let conversation = section(&body, "<h2>The conversation</h2>");
    assert!(
        conversation.contains("The user asked")
            && conversation.contains("tidy the &lt;script&gt;branches&lt;/script&gt;"),
        "{conversation}"
    );
    assert!(!body.contains("<script>branches"), "{body}");
    assert!(
        conversation.contains("The model")
            && conversation.contains("I will &lt;b&gt;tidy&lt;/b&gt; up\\u{202e}now."),
        "{conversation}"
    );
    assert!(!body.contains('\u{202e}'), "a hidden character is shown");
    // Long: folded behind its first line, the whole text inside.
    assert!(
        conversation.contains("<details class=\"long\"><summary><bdi>I will")
            && conversation.contains("step 19: look at the branches"),
        "{conversation}"
    );
    assert!(
        conversation.contains("asked for <code><bdi>delete_branch</bdi></code>"),
        "{conversation}"
    );
}

/// A remote tool of a server, its one operator-supplied tool, and the
/// registry that offers it: `notes.write_note`, under the server's flag.
async fn notes(store: &Store) -> Arc<Registry> {
    server(
        store,
        "notes",
        "Notes",
        Some(DataClass::EditorContent),
        &["write_note"],
    )
    .await;
    let provider = Arc::new(toolgate_mcp::McpProvider::new(
        store.clone(),
        toolgate_mcp::Deadlines::default(),
    ));
    Arc::new(Registry::builder().provider(provider).build().unwrap())
}

/// A held call of `name` by alice, through `registry`, saved for `owner`.
async fn held_call(
    store: &Store,
    registry: &Registry,
    name: &str,
    arguments: Value,
    owner: &str,
) -> SuspendedRun {
    let log = MemoryLog::new();
    let model = ScriptedModel::new(Vec::<Reply>::new());
    let agent = Agent::new(registry, &model, &log);
    let request = CallRequest::new(
        "alice".to_owned(),
        "a test".to_owned(),
        ToolCall {
            id: "h1".into(),
            name: name.into(),
            arguments,
        },
    );
    let Ok(Outcome::AwaitingApproval(run)) = agent.call(request).await else {
        panic!("an approval pause");
    };
    let run = SuspendedRun::AwaitingApproval(run);
    store.save_suspended(&run, owner).await.unwrap();
    run
}

/// A coding agent's own tool, as its hooks offer it: remote, its effect
/// unknown, requiring approval.
#[derive(Debug)]
struct AgentTool;

impl Tool for AgentTool {
    type Origin = Remote;
    type Effect = NonIdempotentWrite;
    type Gate = ApprovalByOperator;
    fn name(&self) -> &str {
        "claude-code.Bash"
    }
    fn description(&self) -> &str {
        "runs a shell command"
    }
}

impl RemoteTool for AgentTool {
    fn server(&self) -> &str {
        "claude-code"
    }
}

impl RemoteApproval for AgentTool {
    fn operator_declaration(&self) -> OperatorDeclaration {
        OperatorDeclaration::ApprovalRequired
    }
    fn declaration_scope(&self) -> DeclarationScope {
        DeclarationScope::Tool
    }
}

impl Execute for AgentTool {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("approved: the agent runs the call itself")
    }
}

/// The agent's tools as a source of their own.
struct AgentTools;

impl ToolProvider for AgentTools {
    fn name(&self) -> &str {
        "claude-code"
    }
    fn provide(&self) -> BoxFuture<'_, Result<Vec<ErasedTool>, ProviderError>> {
        Box::pin(async { Ok(vec![ErasedTool::new(AgentTool)]) })
    }
    fn revision(&self) -> BoxFuture<'_, Result<Revision, ProviderError>> {
        Box::pin(async { Ok(Revision::Fixed) })
    }
}

/// Each call's gate in the store's one wording: a builtin's from its type
/// (the registry's explanation when the inbox has one), an imported
/// tool's from the catalogue — the server's flag, then the tool's own
/// declaration — its effect labelled as assumed, and a coding agent's own
/// tool as such. No generic phrase.
#[tokio::test]
async fn each_call_says_its_real_gate_and_why() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;

    let local = two_deletions(&store, &registry(), &model("done")).await;
    let body = page(&inbox, &cookie, &csrf, local.run_id()).await;
    assert!(
        body.contains("approval required: the tool declares non_idempotent_write")
            && body.contains("built in (local)"),
        "{body}"
    );
    let with_registry = inbox.clone().with_registry(Arc::new(registry()));
    let body = page(&with_registry, &cookie, &csrf, local.run_id()).await;
    assert!(
        body.contains("local tool declares non_idempotent_write"),
        "{body}"
    );
    assert!(!body.contains("the operator's declaration for its server, or"));

    let registry = notes(&store).await;
    let remote = held_call(
        &store,
        &registry,
        "notes.write_note",
        json!({"text": "hi"}),
        "gateway",
    )
    .await;
    let body = page(&inbox, &cookie, &csrf, remote.run_id()).await;
    assert!(
        body.contains("approval required (the server&#39;s flag)")
            || body.contains("approval required (the server's flag)"),
        "{body}"
    );
    assert!(
        body.contains("imported from server `notes`")
            && body.contains("non_idempotent_write — assumed"),
        "{body}"
    );
    declare(
        &store,
        "notes",
        "notes.write_note",
        ToolDeclaration::ApprovalRequired,
    )
    .await;
    let body = page(&inbox, &cookie, &csrf, remote.run_id()).await;
    assert!(
        body.contains("approval required (the tool&#39;s declaration)")
            || body.contains("approval required (the tool's declaration)"),
        "{body}"
    );

    let agent = Registry::builder().provider(AgentTools).build().unwrap();
    let hooked = held_call(
        &store,
        &agent,
        "claude-code.Bash",
        json!({"command": "rm -rf <target>"}),
        "gateway.hook.claude-code",
    )
    .await;
    let body = page(&inbox, &cookie, &csrf, hooked.run_id()).await;
    assert!(
        body.contains(
            "a coding agent&#39;s own tool: every call waits for approval unless declared otherwise (`toolgate hook list`)"
        ) || body.contains(
            "a coding agent's own tool: every call waits for approval unless declared otherwise (`toolgate hook list`)"
        ),
        "{body}"
    );
}

/// "Deny every call" takes a reason: each call denied with it, as the
/// console's `runs deny --reason` records it, and no confirmation asked.
#[tokio::test]
async fn deny_every_call_takes_the_reason_the_model_reads() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let run = two_deletions(&store, &registry(), &model("done")).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let body = page(&inbox, &cookie, &csrf, run.run_id()).await;
    assert!(
        body.contains("name=\"reason\" placeholder=\"the reason the model reads\""),
        "{body}"
    );
    let digest = run.digest();
    let answer = send(
        &inbox,
        post(
            &format!("/s/{csrf}/runs/{}/decide", run.run_id()),
            Some(&cookie),
            Some(ORIGIN),
            &[
                ("csrf", &csrf),
                ("digest", digest.as_str()),
                ("reason", "  not <today>  "),
                ("verdict", "deny"),
            ],
        ),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let history = store.run_history(run.run_id()).await.unwrap();
    let [decision] = history.decisions.as_slice() else {
        panic!("{:?}", history.decisions);
    };
    let reasons: Vec<_> = decision
        .record
        .calls
        .iter()
        .map(|call| call.verdict.clone())
        .collect();
    assert_eq!(
        reasons,
        vec![
            Some(CallVerdict::Deny {
                reason: "not <today>".into()
            });
            2
        ]
    );
    let body = page(&inbox, &cookie, &csrf, run.run_id()).await;
    assert!(body.contains("not &lt;today&gt;"), "{body}");
}

/// Approving a write asks once more: the answer is a page that shows the
/// writes and their arguments and records nothing; its form carries the
/// same token and digest, and posting it records the approval. An edit
/// is shown as it will run.
#[tokio::test]
async fn approving_a_write_asks_once_more() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let run = two_deletions(&store, &registry(), &model("done")).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let path = format!("/s/{csrf}/runs/{}/decide", run.run_id());
    let digest = run.digest();
    let asked = send(
        &inbox,
        post(
            &path,
            Some(&cookie),
            Some(ORIGIN),
            &[
                ("csrf", &csrf),
                ("digest", digest.as_str()),
                ("verdict", "calls"),
                ("call:c1", "deny"),
                ("reason:c1", "keep <it>"),
                ("call:c2", "edit"),
                ("args:c2", r#"{"branch": "<stale-2>"}"#),
            ],
        ),
    )
    .await;
    assert_eq!(asked.status, StatusCode::OK, "{}", asked.body);
    assert!(asked.body.contains("Approve this write?"), "{}", asked.body);
    assert!(
        asked.body.contains("&lt;stale-2&gt;") && !asked.body.contains("<stale-2>"),
        "the edit, as it will run: {}",
        asked.body
    );
    assert!(
        asked.body.contains("<h2>And denies</h2>") && asked.body.contains("keep &lt;it&gt;"),
        "the rest of the answer, in view: {}",
        asked.body
    );
    assert!(
        !asked.body.contains("<h3>Call <code><bdi>c1</bdi>"),
        "a denied call is no write to confirm: {}",
        asked.body
    );
    assert!(
        store
            .run_history(run.run_id())
            .await
            .unwrap()
            .decisions
            .is_empty(),
        "nothing recorded before the confirmation"
    );
    let fields = hidden_fields(&asked.body);
    let named = |name: &str| {
        fields
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.clone())
    };
    assert_eq!(named("digest").as_deref(), Some(digest.as_str()));
    assert_eq!(named("confirm").as_deref(), Some("write"));
    assert_eq!(
        named("args:c2").as_deref(),
        Some(r#"{"branch": "<stale-2>"}"#)
    );
    // The form, as the browser posts it: the sign-out form's token first,
    // then the confirmation's own fields.
    let confirmation: Vec<(&str, &str)> = fields
        .iter()
        .skip(1)
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    let confirmed = send(
        &inbox,
        post(&path, Some(&cookie), Some(ORIGIN), &confirmation),
    )
    .await;
    assert_eq!(
        confirmed.status,
        StatusCode::SEE_OTHER,
        "{}",
        confirmed.body
    );
    let history = store.run_history(run.run_id()).await.unwrap();
    let [decision] = history.decisions.as_slice() else {
        panic!("{:?}", history.decisions);
    };
    assert_eq!(decision.record.decided_by, "bob");
    assert_eq!(
        decision.record.calls[0].verdict,
        Some(CallVerdict::Deny {
            reason: "keep <it>".into()
        })
    );
    assert!(matches!(
        decision.record.calls[1].verdict,
        Some(CallVerdict::Edit { .. })
    ));
}

/// A finished run shows the arguments that ran (an edit marked), each
/// call's outcome — the denied one too, with the reason the model read —
/// its full result folded, and the final answer, all escaped.
#[tokio::test]
async fn a_finished_run_shows_what_ran_and_the_final_answer() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let registry = registry();
    let model = model("All tidy: <i>two</i> branches looked at.");
    let run = two_deletions(&store, &registry, &model).await;
    let answer = Answer::Calls(
        [
            (
                "c1".to_owned(),
                CallVerdict::Deny {
                    reason: "keep <old>".into(),
                },
            ),
            (
                "c2".to_owned(),
                CallVerdict::Edit {
                    arguments: json!({"branch": "stale-2"}),
                },
            ),
        ]
        .into_iter()
        .collect(),
    );
    store
        .decide(run.run_id(), Some(&run.digest()), &bob(), answer)
        .await
        .unwrap();
    let host = Host::new(store.clone(), "demo").unwrap();
    let task = host.next().await.unwrap().unwrap();
    host.resume(task, &registry, &model).await.unwrap();
    assert_eq!(
        store.final_answer(run.run_id()).await.unwrap().as_deref(),
        Some("All tidy: <i>two</i> branches looked at.")
    );

    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let body = page(&inbox, &cookie, &csrf, run.run_id()).await;
    let ran = section(&body, "<h2>Calls the host ran</h2>");
    assert!(
        ran.contains("Not run: the call was answered without running")
            && ran.contains("keep &lt;old&gt;"),
        "the denied call, with what the model read: {ran}"
    );
    assert!(
        ran.contains("<p class=\"outcome\"><bdi>Ran: ")
            && ran.contains("deleted stale-2")
            && ran.contains("Arguments it ran with — not the model")
            && ran.contains("stale-2"),
        "the edited call, as it ran: {ran}"
    );
    assert!(
        ran.contains("<details class=\"result\"><summary>Its result, in full")
            && ran.contains("and its reflog"),
        "the full result, folded: {ran}"
    );
    let who = section(&body, "<h2>Who resumes it</h2>");
    assert!(
        who.contains("Host <code><bdi>demo</bdi></code> resumed it."),
        "{who}"
    );
    let answer = section(&body, "<h2>The final answer</h2>");
    assert!(
        answer.contains("All tidy: &lt;i&gt;two&lt;/i&gt; branches looked at."),
        "{answer}"
    );
    assert!(!body.contains("<i>two</i>"));
}

/// Who resumes the run, and what the store knows of it: a host never
/// seen is said so, with the command that starts one; once a process of
/// it looked for work, it is seen lately. A gateway's run says its client
/// asks again, and never to start `toolgate host`; a coding agent's shows
/// what its client reported.
#[tokio::test]
async fn the_page_says_who_resumes_the_run_and_whether_it_was_seen() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let run = two_deletions(&store, &registry(), &model("done")).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let body = page(&inbox, &cookie, &csrf, run.run_id()).await;
    let who = section(&body, "<h2>Who resumes it</h2>");
    assert!(
        who.contains("Never seen") && who.contains("toolgate host --name <bdi>demo</bdi>"),
        "{who}"
    );
    assert_eq!(store.host_seen("demo").await.unwrap().seen_at, None);

    // A process of the host looks for work: nothing is decided, and it is
    // seen.
    let host = Host::new(store.clone(), "demo").unwrap();
    assert!(host.next().await.unwrap().is_none());
    assert!(store.host_seen("demo").await.unwrap().seen_at.is_some());
    let body = page(&inbox, &cookie, &csrf, run.run_id()).await;
    let who = section(&body, "<h2>Who resumes it</h2>");
    assert!(who.contains("Seen lately"), "{who}");
    assert!(!who.contains("Never seen"), "{who}");

    // Its heartbeat ten minutes old: not seen lately, and said so.
    let ten_minutes_ago = store.host_seen("demo").await.unwrap().seen_at.unwrap() - 600_000;
    toolgate_store::Query::new("UPDATE host_seen SET seen_at = $1 WHERE host = 'demo'")
        .bind(ten_minutes_ago)
        .execute_on(&store)
        .await
        .unwrap();
    let body = page(&inbox, &cookie, &csrf, run.run_id()).await;
    let who = section(&body, "<h2>Who resumes it</h2>");
    assert!(
        who.contains("Not seen lately") && who.contains("(10 min ago)"),
        "{who}"
    );

    // A coding agent's held call: its client asks again; nothing to start.
    let agent = Registry::builder().provider(AgentTools).build().unwrap();
    let hooked = held_call(
        &store,
        &agent,
        "claude-code.Bash",
        json!({"command": "ls"}),
        "gateway.hook.claude-code",
    )
    .await;
    let body = page(&inbox, &cookie, &csrf, hooked.run_id()).await;
    let who = section(&body, "<h2>Who resumes it</h2>");
    assert!(
        who.contains("runs when its client asks for the call again"),
        "{who}"
    );
    assert!(!body.contains("toolgate host"), "{body}");

    // Decided, run, and reported on by the client.
    store
        .decide(
            hooked.run_id(),
            Some(&hooked.digest()),
            &bob(),
            Answer::Approve,
        )
        .await
        .unwrap();
    let gateway = CallHost::new(store.clone(), "gateway.hook.claude-code").unwrap();
    let task = gateway.claim(hooked.run_id()).await.unwrap().unwrap();
    gateway.resume(task, &agent).await.unwrap();
    store
        .record_client_outcome(
            hooked.run_id(),
            Some("toolu_1"),
            r#"{"exit_code": 0, "stdout": "<dir>"}"#,
        )
        .await
        .unwrap();
    let body = page(&inbox, &cookie, &csrf, hooked.run_id()).await;
    let who = section(&body, "<h2>Who resumes it</h2>");
    assert!(
        who.contains("it was resumed when its client asked for the call again"),
        "{who}"
    );
    let reported = section(&body, "<h2>What the client reported</h2>");
    assert!(
        reported.contains("toolu_1") && reported.contains("&lt;dir&gt;"),
        "{reported}"
    );
    assert!(!body.contains("toolgate host"), "{body}");
}
