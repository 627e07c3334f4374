//! The forms built from a schema, through the inbox's router against a real
//! store, on SQLite and again on PostgreSQL: a call's arguments edited in
//! fields and a run's input given in fields — a wrong value answered with
//! the page again (422), the error beside its field, what was typed kept,
//! nothing recorded; a right one recorded; an edit back to the original
//! recorded as an approval as it is; an approval whose fields were changed
//! refused; a key holding markup shown as text; a schema the fields cannot
//! express edited as JSON, the page saying so.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use axum::http::StatusCode;
use serde_json::{Map, Value, json};
use toolgate::run::{Outcome, Reply, RunRequest, ToolCall};
use toolgate::suspend::{CallVerdict, SuspendedRun};
use toolgate::testing::{MemoryLog, ScriptedModel};
use toolgate::{Agent, Execute, Registry, Tool, ToolOutput};
use toolgate_inbox::Inbox;
use toolgate_store::Store;

#[path = "../../store/tests/backend/mod.rs"]
mod backend;
use backend::TestDb;

mod common;
use common::{ORIGIN, get, inbox, post, send, signed_in};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    backend::rerun_on_postgres();
}

/// What [`Rename`] takes.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct RenameArgs {
    /// The branch to rename.
    #[schemars(length(min = 1))]
    branch: String,
    /// How many times to try.
    #[schemars(range(min = 1, max = 5))]
    tries: u8,
    /// A key a server could name with markup.
    #[serde(rename = "<b>x</b>")]
    marked: Option<String>,
}

/// Renames a branch: a write.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct Rename;

impl Execute for Rename {
    type Args = RenameArgs;
    async fn execute(&self, args: RenameArgs) -> ToolOutput {
        ToolOutput::text(format!(
            "renamed {} in {} tries ({:?})",
            args.branch, args.tries, args.marked
        ))
    }
}

/// What a user types for [`PickBranch`].
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Pick {
    /// The branch.
    branch: String,
    /// How deep.
    #[schemars(range(min = 1, max = 9))]
    depth: u8,
}

/// Checks out the branch a user picks.
#[derive(Tool)]
#[tool(effect = read_only, input = Pick)]
struct PickBranch;

impl Execute for PickBranch {
    type Args = Pick;
    async fn execute(&self, pick: Pick) -> ToolOutput {
        ToolOutput::text(format!("checked out {} at {}", pick.branch, pick.depth))
    }
}

/// Sends anything: its schema is a map.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct Send;

impl Execute for Send {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("sent")
    }
}

/// What [`Toggle`] takes.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct ToggleArgs {
    /// On or off.
    on: bool,
}

/// Turns a switch on or off: a write, whose one field is a checkbox.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct Toggle;

impl Execute for Toggle {
    type Args = ToggleArgs;
    async fn execute(&self, args: ToggleArgs) -> ToolOutput {
        ToolOutput::text(format!("on: {}", args.on))
    }
}

/// A run of alice's whose one call is `tool` with `arguments`, saved for
/// the host `demo`.
async fn paused(store: &Store, tool: &str, arguments: Value) -> SuspendedRun {
    paused_calls(
        store,
        vec![ToolCall {
            id: "c1".into(),
            name: tool.into(),
            arguments,
        }],
    )
    .await
}

/// A run of alice's whose turn is `calls`, saved for the host `demo`.
async fn paused_calls(store: &Store, calls: Vec<ToolCall>) -> SuspendedRun {
    let registry = Registry::builder()
        .builtin(Rename)
        .builtin(PickBranch)
        .builtin(Send)
        .builtin(Toggle)
        .build()
        .unwrap();
    let model = ScriptedModel::new([Reply::Calls {
        content: None,
        calls,
    }]);
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    let run = match agent.start(RunRequest::new("alice", "go")).await {
        Ok(Outcome::AwaitingApproval(run)) => SuspendedRun::AwaitingApproval(run),
        Ok(Outcome::WaitingForInput(run)) => SuspendedRun::WaitingForInput(run),
        _ => panic!("a pause"),
    };
    store.save_suspended(&run, "demo").await.unwrap();
    run
}

/// A signed-in operator's view of one run.
struct Operator {
    inbox: Inbox,
    store: Store,
    cookie: String,
    csrf: String,
}

impl Operator {
    async fn page(&self, run: &SuspendedRun) -> String {
        let path = format!("/s/{}/runs/{}", self.csrf, run.run_id());
        let answer = send(&self.inbox, get(&path, Some(&self.cookie))).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        answer.body
    }

    /// Posts `fields` with the session's token and the run's digest.
    async fn decide(&self, run: &SuspendedRun, fields: &[(&str, &str)]) -> common::Answer {
        let path = format!("/s/{}/runs/{}/decide", self.csrf, run.run_id());
        let digest = run.digest();
        let mut form = vec![("csrf", self.csrf.as_str()), ("digest", digest.as_str())];
        form.extend_from_slice(fields);
        send(
            &self.inbox,
            post(&path, Some(&self.cookie), Some(ORIGIN), &form),
        )
        .await
    }

    async fn decisions(&self, run: &SuspendedRun) -> Vec<toolgate_store::StoredDecision> {
        self.store
            .run_history(run.run_id())
            .await
            .unwrap()
            .decisions
    }
}

async fn operator(db: &TestDb) -> Operator {
    let (store, inbox) = inbox(db).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    Operator {
        inbox,
        store,
        cookie,
        csrf,
    }
}

#[tokio::test]
#[allow(
    clippy::too_many_lines,
    reason = "one edit, from the page through each refusal to the record, in the order an operator meets them"
)]
async fn an_edit_in_fields_is_checked_beside_each_field_then_recorded() {
    let db = TestDb::new().await;
    let bob = operator(&db).await;
    let run = paused(&bob.store, "rename", json!({"branch": "old", "tries": 2})).await;
    let page = bob.page(&run).await;
    assert!(
        page.contains("name=\"edit:c1/branch\" value=\"old\""),
        "{page}"
    );
    assert!(
        page.contains("name=\"edit:c1/tries\" value=\"2\""),
        "{page}"
    );
    // The key holding markup: its name escaped, its label text.
    assert!(
        page.contains("name=\"edit:c1/&lt;b&gt;x&lt;~1b&gt;\""),
        "{page}"
    );
    assert!(!page.contains("<b>x</b>"), "{page}");
    assert!(page.contains("edit as JSON"), "{page}");

    // A number that does not parse and a string too short: the page
    // again, each error beside its field, what was typed kept.
    let answer = bob
        .decide(
            &run,
            &[
                ("verdict", "calls"),
                ("call:c1", "form"),
                ("edit:c1/branch", ""),
                ("edit:c1/tries", "twice"),
                ("edit:c1/<b>x<~1b>", "<script>1</script>"),
            ],
        )
        .await;
    assert_eq!(
        answer.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        answer.body
    );
    let body = &answer.body;
    let beside = |name: &str| {
        let at = body
            .find(&format!("data-field=\"{name}\""))
            .unwrap_or_else(|| panic!("{name}: {body}"));
        let end = body[at..].find("</div>").unwrap() + at;
        body[at..end].to_owned()
    };
    assert!(
        beside("edit:c1/tries").contains("`twice` is not a number"),
        "{body}"
    );
    assert!(
        beside("edit:c1/tries").contains("value=\"twice\""),
        "{body}"
    );
    assert!(!body.contains("<script>1</script>"), "{body}");
    assert!(body.contains("&lt;script&gt;1&lt;/script&gt;"), "{body}");
    assert!(body.contains("value=\"form\" checked"), "{body}");
    assert!(bob.decisions(&run).await.is_empty());

    // Out of bounds, and too short: the schema's errors, beside each.
    let answer = bob
        .decide(
            &run,
            &[
                ("verdict", "calls"),
                ("call:c1", "form"),
                ("edit:c1/branch", ""),
                ("edit:c1/tries", "9"),
            ],
        )
        .await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    let body = &answer.body;
    let at = body.find("data-field=\"edit:c1/tries\"").unwrap();
    assert!(
        body[at..].contains("greater than the maximum of 5"),
        "{body}"
    );
    let at = body.find("data-field=\"edit:c1/branch\"").unwrap();
    assert!(body[at..].contains("shorter than 1 character"), "{body}");
    assert!(bob.decisions(&run).await.is_empty());

    // Edited fields under the verdict "approve": refused, never run as
    // it waits.
    let answer = bob
        .decide(
            &run,
            &[
                ("verdict", "calls"),
                ("call:c1", "approve"),
                ("edit:c1/branch", "new"),
                ("edit:c1/tries", "2"),
            ],
        )
        .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
    assert!(
        answer.body.contains("its arguments were edited"),
        "{}",
        answer.body
    );
    assert!(bob.decisions(&run).await.is_empty());

    // Right values: asked once more (a write), then recorded as an edit,
    // the optional field left empty absent.
    let right = [
        ("verdict", "calls"),
        ("call:c1", "form"),
        ("edit:c1/branch", "new"),
        ("edit:c1/tries", "3"),
        ("edit:c1/<b>x<~1b>", ""),
    ];
    let asked = bob.decide(&run, &right).await;
    assert_eq!(asked.status, StatusCode::OK);
    assert!(asked.body.contains("Approve this write?"), "{}", asked.body);
    assert!(
        asked.body.contains("name=\"edit:c1/tries\" value=\"3\""),
        "{}",
        asked.body
    );
    assert!(bob.decisions(&run).await.is_empty());
    let mut confirmed = right.to_vec();
    confirmed.push(("confirm", "write"));
    let answer = bob.decide(&run, &confirmed).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let decisions = bob.decisions(&run).await;
    assert_eq!(
        decisions[0].record.calls[0].verdict,
        Some(CallVerdict::Edit {
            arguments: json!({"branch": "new", "tries": 3})
        })
    );
}

#[tokio::test]
async fn fields_that_hold_the_original_approve_it_as_it_is() {
    let db = TestDb::new().await;
    let bob = operator(&db).await;
    let run = paused(
        &bob.store,
        "rename",
        json!({"branch": "old", "tries": 2, "<b>x</b>": "kept"}),
    )
    .await;
    let answer = bob
        .decide(
            &run,
            &[
                ("verdict", "calls"),
                ("call:c1", "form"),
                ("edit:c1/branch", "old"),
                ("edit:c1/tries", " 2 "),
                ("edit:c1/<b>x<~1b>", "kept"),
                ("confirm", "write"),
            ],
        )
        .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let decisions = bob.decisions(&run).await;
    assert_eq!(
        decisions[0].record.calls[0].verdict,
        Some(CallVerdict::Approve)
    );
}

#[tokio::test]
async fn input_in_fields_is_checked_beside_each_field_then_recorded() {
    let db = TestDb::new().await;
    let bob = operator(&db).await;
    let run = paused(&bob.store, "pick_branch", json!({})).await;
    let page = bob.page(&run).await;
    assert!(page.contains("name=\"in:/branch\""), "{page}");
    assert!(
        page.contains("name=\"input\""),
        "the JSON box stays: {page}"
    );
    assert!(
        page.contains("Input schema, as the call asked for it"),
        "{page}"
    );
    let answer = bob
        .decide(
            &run,
            &[
                ("verdict", "input-fields"),
                ("in:/branch", "main"),
                ("in:/depth", ""),
            ],
        )
        .await;
    assert_eq!(
        answer.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        answer.body
    );
    let at = answer.body.find("data-field=\"in:/depth\"").unwrap();
    assert!(
        answer.body[at..].contains("is a required property"),
        "{}",
        answer.body
    );
    assert!(
        answer.body.contains("name=\"in:/branch\" value=\"main\""),
        "{}",
        answer.body
    );
    assert!(bob.decisions(&run).await.is_empty());
    let answer = bob
        .decide(
            &run,
            &[
                ("verdict", "input-fields"),
                ("in:/branch", "main"),
                ("in:/depth", "4"),
            ],
        )
        .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let decisions = bob.decisions(&run).await;
    assert_eq!(decisions[0].record.verdict.as_str(), "input submitted");
}

#[tokio::test]
async fn a_schema_the_fields_cannot_express_is_edited_as_json() {
    let db = TestDb::new().await;
    let bob = operator(&db).await;
    let run = paused(&bob.store, "send", json!({"to": "ops"})).await;
    let page = bob.page(&run).await;
    assert!(page.contains("edited as JSON only"), "{page}");
    assert!(!page.contains("value=\"form\""), "{page}");
    assert!(page.contains("name=\"args:c1\""), "{page}");
    // Fields posted anyway: refused, nothing recorded.
    let answer = bob
        .decide(
            &run,
            &[
                ("verdict", "calls"),
                ("call:c1", "form"),
                ("edit:c1/to", "x"),
            ],
        )
        .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
    assert!(
        answer.body.contains("edited as JSON only"),
        "{}",
        answer.body
    );
    assert!(bob.decisions(&run).await.is_empty());
}

#[tokio::test]
async fn calls_whose_ids_share_a_prefix_are_kept_apart() {
    let db = TestDb::new().await;
    let bob = operator(&db).await;
    let call = |id: &str, branch: &str| ToolCall {
        id: id.into(),
        name: "rename".into(),
        arguments: json!({"branch": branch, "tries": 1}),
    };
    let run = paused_calls(&bob.store, vec![call("c1", "one"), call("c10", "ten")]).await;
    let page = bob.page(&run).await;
    assert!(
        page.contains("name=\"edit:c10/branch\" value=\"ten\""),
        "{page}"
    );
    // c1 approved as it is, its fields untouched; c10 edited.
    let answer = bob
        .decide(
            &run,
            &[
                ("verdict", "calls"),
                ("call:c1", "approve"),
                ("edit:c1", ""),
                ("edit:c1/branch", "one"),
                ("edit:c1/tries", "1"),
                ("call:c10", "form"),
                ("edit:c10", ""),
                ("edit:c10/branch", "eleven"),
                ("edit:c10/tries", "1"),
                ("confirm", "write"),
            ],
        )
        .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let decisions = bob.decisions(&run).await;
    let verdict = |id: &str| {
        decisions[0]
            .record
            .calls
            .iter()
            .find(|call| call.call_id == id)
            .and_then(|call| call.verdict.clone())
    };
    assert_eq!(verdict("c1"), Some(CallVerdict::Approve));
    assert_eq!(
        verdict("c10"),
        Some(CallVerdict::Edit {
            arguments: json!({"branch": "eleven", "tries": 1})
        })
    );
}

#[tokio::test]
async fn a_checkbox_unchecked_under_an_approval_as_it_is_is_refused() {
    let db = TestDb::new().await;
    let bob = operator(&db).await;
    let run = paused(&bob.store, "toggle", json!({"on": true})).await;
    let page = bob.page(&run).await;
    assert!(
        page.contains("type=\"checkbox\" name=\"edit:c1/on\" value=\"true\" checked"),
        "{page}"
    );
    assert!(page.contains("type=\"hidden\" name=\"edit:c1\""), "{page}");
    // Unchecked: the checkbox sends nothing, the marker does.
    let answer = bob
        .decide(
            &run,
            &[
                ("verdict", "calls"),
                ("call:c1", "approve"),
                ("edit:c1", ""),
                ("confirm", "write"),
            ],
        )
        .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
    assert!(bob.decisions(&run).await.is_empty());
    // The same through the fields: recorded as the edit it is.
    let answer = bob
        .decide(
            &run,
            &[
                ("verdict", "calls"),
                ("call:c1", "form"),
                ("edit:c1", ""),
                ("confirm", "write"),
            ],
        )
        .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let decisions = bob.decisions(&run).await;
    assert_eq!(
        decisions[0].record.calls[0].verdict,
        Some(CallVerdict::Edit {
            arguments: json!({"on": false})
        })
    );
}
