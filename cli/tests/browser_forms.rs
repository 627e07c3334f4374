//! The inbox's forms built from a schema, in a real browser (Debian's
//! Chromium over chromedriver; without them this test fails, it does not
//! skip): an operator edits a call's arguments field by field — a value
//! that does not parse, then one out of bounds, each refused beside its
//! field with what they typed kept and nothing recorded — then a right
//! one, which the call runs with; gives a run waiting for input its input
//! through the fields the same way, in a browser whose scripts are off;
//! and a call whose schema the fields
//! cannot express is edited as JSON, the page saying so. The runs are
//! saved in the store the command line uses, on this process's backend
//! (SQLite, or PostgreSQL with `TOOLGATE_TEST_POSTGRES`), and resumed by a
//! host of their own, so what ran is what the form recorded. Screenshots
//! go under the target directory (`inbox-screenshots/`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::path::Path;

use fantoccini::{Client, Locator};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolgate::run::{CallRequest, NoModel, Outcome, ToolCall};
use toolgate::suspend::SuspendedRun;
use toolgate::{Agent, Execute, Registry, Tool, ToolOutput};

#[path = "common/browser.rs"]
mod browsing;
mod common;
use browsing::{browser, browser_with, chromedriver, inbox, json_of, page_with, snap};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

/// Where a deployment goes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Environment {
    /// The staging cluster.
    Staging,
    /// The production cluster.
    Production,
}

/// What [`Deploy`] takes.
#[derive(Debug, Deserialize, JsonSchema)]
struct DeployArgs {
    /// The service to deploy.
    #[schemars(length(min = 1, max = 40))]
    service: String,
    /// How many replicas run it.
    #[schemars(range(min = 1, max = 10))]
    replicas: u32,
    /// Where it goes.
    environment: Environment,
    /// Run the database migrations first.
    migrate: bool,
    /// Labels set on each replica.
    labels: Vec<String>,
    /// A note for the log.
    note: Option<String>,
}

/// Deploys a service: a write, so a call of it waits for approval.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct Deploy;

impl Execute for Deploy {
    type Args = DeployArgs;
    async fn execute(&self, args: DeployArgs) -> ToolOutput {
        ToolOutput::text(format!(
            "deployed {} x{} to {:?} (migrate: {}, labels: {}, note: {})",
            args.service,
            args.replicas,
            args.environment,
            args.migrate,
            args.labels.join("+"),
            args.note.unwrap_or_default()
        ))
    }
}

/// What a user types for [`PickBranch`].
#[derive(Debug, Deserialize, JsonSchema)]
struct Pick {
    /// The branch to check out.
    branch: String,
    /// How many commits of history to fetch.
    #[schemars(range(min = 1, max = 50))]
    depth: u8,
    /// Discard local changes.
    force: bool,
}

/// Checks out the branch a user picks: its call waits for their input.
#[derive(Tool)]
#[tool(effect = read_only, input = Pick)]
struct PickBranch;

impl Execute for PickBranch {
    type Args = Pick;
    async fn execute(&self, pick: Pick) -> ToolOutput {
        ToolOutput::text(format!(
            "checked out {} at depth {} (force: {})",
            pick.branch, pick.depth, pick.force
        ))
    }
}

/// Sends a free-form payload: its schema is a map, which no form
/// expresses.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct SendPayload;

impl Execute for SendPayload {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("sent")
    }
}

/// The host that owns the runs this test saves.
const HOST: &str = "gateway.forms";

fn registry() -> Registry {
    Registry::builder()
        .builtin(Deploy)
        .builtin(PickBranch)
        .builtin(SendPayload)
        .build()
        .unwrap()
}

/// Pausing a call records no decision.
struct NoDecisions;

impl toolgate::audit::DecisionLog for NoDecisions {
    fn record<'a>(
        &'a self,
        _: &'a toolgate::audit::DecisionRecord,
    ) -> toolgate::erased::BoxFuture<'a, Result<(), toolgate::audit::LogError>> {
        Box::pin(async {
            Err(toolgate::audit::LogError::new(
                "no decision is recorded here",
            ))
        })
    }
}

/// A run of one call of `tool` with `arguments`, saved in `dir`'s store
/// for [`HOST`]; its id.
async fn paused(dir: &Path, tool: &str, arguments: Value) -> String {
    let store = toolgate_store::Store::open(&common::location(dir))
        .await
        .unwrap();
    let registry = registry();
    let log = NoDecisions;
    let agent = Agent::new(&registry, &NoModel, &log);
    let call = ToolCall {
        id: "c1".into(),
        name: tool.into(),
        arguments,
    };
    let run = match agent
        .call(CallRequest::new("carol", "a call to decide", call))
        .await
    {
        Ok(Outcome::AwaitingApproval(run)) => SuspendedRun::AwaitingApproval(run),
        Ok(Outcome::WaitingForInput(run)) => SuspendedRun::WaitingForInput(run),
        other => panic!("a pause: {other:?}"),
    };
    toolgate_store::CallHost::new(store.clone(), HOST)
        .unwrap()
        .save(&run)
        .await
        .unwrap();
    store.close().await;
    run.run_id().to_owned()
}

/// The decided run `run` claimed and resumed by its host: what its one
/// call answered, and the calls as `runs show` tells them.
async fn resumed(dir: &Path, run: &str) -> (String, String) {
    let store = toolgate_store::Store::open(&common::location(dir))
        .await
        .unwrap();
    let host = toolgate_store::CallHost::new(store.clone(), HOST).unwrap();
    let task = host.claim(run).await.unwrap().expect("the run is decided");
    let resumed = host.resume(task, &registry()).await.unwrap();
    store.close().await;
    let toolgate_store::Ended::Finished { answer } = resumed.ended else {
        panic!("the run ends: {:?}", resumed.ended);
    };
    let shown = json_of(dir, &["runs", "show", run]);
    (answer, shown["calls"].to_string())
}

fn css(selector: &str) -> Locator<'_> {
    Locator::Css(selector)
}

/// Types `text` into the field named `name`, in place of what it held.
async fn retype(client: &Client, name: &str, text: &str) {
    let field = client.find(css(&format!("[name='{name}']"))).await.unwrap();
    field.clear().await.unwrap();
    field.send_keys(text).await.unwrap();
}

async fn click(client: &Client, selector: &str) {
    client
        .find(css(selector))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// The errors shown beside the field named `name`.
async fn errors_beside(client: &Client, name: &str) -> String {
    client
        .find(css(&format!("[data-field='{name}'] .field-error")))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The value the field named `name` holds.
async fn value_of(client: &Client, name: &str) -> String {
    client
        .find(css(&format!("[name='{name}']")))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap()
        .unwrap_or_default()
}

/// `run` once a decision is recorded on it (a click that submits a form
/// returns before the answer has come).
async fn decided(dir: &Path, run: &str) -> Value {
    for _ in 0..100 {
        let shown = json_of(dir, &["runs", "show", run]);
        if shown["state"] == "decided" {
            return shown;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!(
        "{run} is not decided: {}",
        json_of(dir, &["runs", "show", run])
    );
}

/// Nothing was recorded on `run`: it waits as it did.
fn still_open(dir: &Path, run: &str) {
    let shown = json_of(dir, &["runs", "show", run]);
    assert_eq!(shown["state"], "open", "{shown}");
    assert_eq!(shown["decisions"], json!([]), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_driven_edit_and_input_refuse_a_wrong_value_beside_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let deploy = paused(
        dir,
        "deploy",
        json!({"service": "api", "replicas": 2, "environment": "staging", "migrate": false, "labels": ["web"]}),
    )
    .await;
    let pick = paused(dir, "pick_branch", json!({})).await;
    let payload = paused(dir, "send_payload", json!({"to": "ops", "body": {"x": 1}})).await;
    let (_inbox, url) = inbox(dir);
    let link = json_of(dir, &["operator", "add", "bob", "--public-url", &url])["link"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_driver, webdriver) = chromedriver();
    let client = browser(&webdriver).await;
    client.goto(&link).await.unwrap();
    click(&client, "button[type=submit]").await;
    page_with(&client, "signed in as").await;
    let base = client.current_url().await.unwrap().to_string();
    let base = base.trim_end_matches('/').to_owned();

    edit_through_the_form(&client, dir, &base, &deploy).await;

    // The input, in a browser whose scripts are off: plain forms.
    let link = json_of(dir, &["operator", "add", "dana", "--public-url", &url])["link"]
        .as_str()
        .unwrap()
        .to_owned();
    let scriptless = browser_with(&webdriver, &["--blink-settings=scriptEnabled=false"]).await;
    // Scripts are off indeed: a page's script does not run.
    scriptless
        .goto("data:text/html,<title>still</title><script>document.title='ran'</script>")
        .await
        .unwrap();
    assert_eq!(scriptless.title().await.unwrap(), "still");
    scriptless.goto(&link).await.unwrap();
    click(&scriptless, "button[type=submit]").await;
    page_with(&scriptless, "signed in as").await;
    let scriptless_base = scriptless.current_url().await.unwrap().to_string();
    input_through_the_form(
        &scriptless,
        dir,
        scriptless_base.trim_end_matches('/'),
        &pick,
    )
    .await;
    scriptless.close().await.unwrap();

    // A map's schema: no fields; the page says so, and the JSON box is
    // there.
    client
        .goto(&format!("{base}/runs/{payload}"))
        .await
        .unwrap();
    let page = page_with(&client, "edited as JSON only").await;
    assert!(
        page.contains("a map") || page.contains("without declared fields"),
        "{page}"
    );
    assert!(!page.contains("name=\"edit:"), "{page}");
    assert!(page.contains("name=\"args:c1\""), "{page}");
    snap(&client, "forms-3-json-only").await;
    client.close().await.unwrap();
}

/// The deploy call edited field by field: a number that does not parse,
/// then one out of bounds, each refused beside its field; then right
/// values, confirmed as a write, and the call runs with them.
async fn edit_through_the_form(client: &Client, dir: &Path, base: &str, run: &str) {
    client.goto(&format!("{base}/runs/{run}")).await.unwrap();
    let page = page_with(client, "approve with the values below").await;
    // Filled with the arguments as they wait; the schema's words beside.
    assert_eq!(value_of(client, "edit:c1/replicas").await, "2");
    assert_eq!(value_of(client, "edit:c1/service").await, "api");
    assert_eq!(value_of(client, "edit:c1/labels").await, "web");
    assert!(page.contains("How many replicas run it."), "{page}");
    assert!(page.contains("at most 10"), "{page}");

    click(client, "input[name='call:c1'][value='form']").await;
    retype(client, "edit:c1/replicas", "three").await;
    retype(client, "edit:c1/service", "api-v2").await;
    click(client, "form.calls button[type=submit]").await;
    page_with(client, "is not a number").await;
    let beside = errors_beside(client, "edit:c1/replicas").await;
    assert!(beside.contains("`three` is not a number"), "{beside}");
    // What they typed is kept, the choice too; nothing is recorded.
    assert_eq!(value_of(client, "edit:c1/replicas").await, "three");
    assert_eq!(value_of(client, "edit:c1/service").await, "api-v2");
    let chosen = client
        .find(css("input[name='call:c1'][value='form']"))
        .await
        .unwrap()
        .prop("checked")
        .await
        .unwrap();
    assert_eq!(chosen.as_deref(), Some("true"));
    still_open(dir, run);

    // Out of the schema's bounds: refused by the schema, beside it.
    retype(client, "edit:c1/replicas", "12").await;
    click(client, "form.calls button[type=submit]").await;
    page_with(client, "greater than the maximum").await;
    let beside = errors_beside(client, "edit:c1/replicas").await;
    assert!(
        beside.contains("12 is greater than the maximum of 10"),
        "{beside}"
    );
    client
        .execute(
            "document.querySelector('form.calls').previousElementSibling.scrollIntoView(); return null;",
            vec![],
        )
        .await
        .unwrap();
    snap(client, "forms-1-refused-beside-its-field").await;
    still_open(dir, run);

    // Right values: production, migrations, two labels, a note.
    retype(client, "edit:c1/replicas", "3").await;
    client
        .find(css("select[name='edit:c1/environment']"))
        .await
        .unwrap()
        .select_by_value("1")
        .await
        .unwrap();
    click(client, "input[name='edit:c1/migrate']").await;
    retype(client, "edit:c1/labels", "web\ncanary").await;
    retype(client, "edit:c1/note", "friday <b>release</b>").await;
    click(client, "form.calls button[type=submit]").await;
    // A write: asked once more, the edit shown as it will run.
    let asked = page_with(client, "Approve this write?").await;
    assert!(
        asked.contains("api-v2") && asked.contains("canary"),
        "{asked}"
    );
    still_open(dir, run);
    click(client, "main form button[type=submit]").await;
    let decided = decided(dir, run).await;
    assert_eq!(decided["state"], "decided", "{decided}");
    assert_eq!(decided["decisions"][0]["by"], "bob", "{decided}");
    let calls = decided["decisions"][0]["calls"].to_string();
    assert!(
        calls.contains("api-v2") && calls.contains("production"),
        "{calls}"
    );

    let (answer, calls) = resumed(dir, run).await;
    // The call ran with the arguments the form recorded, and says so.
    assert!(
        answer.ends_with(
            "\n\ndeployed api-v2 x3 to Production (migrate: true, labels: web+canary, note: friday <b>release</b>)"
        ),
        "{answer}"
    );
    assert!(
        answer.starts_with("This call ran with other arguments"),
        "{answer}"
    );
    assert!(calls.contains(r#""state":"ended""#), "{calls}");
}

/// The pick call's input given field by field: a depth that does not
/// parse refused beside it, then right values; the call runs with them.
async fn input_through_the_form(client: &Client, dir: &Path, base: &str, run: &str) {
    client.goto(&format!("{base}/runs/{run}")).await.unwrap();
    let page = page_with(client, "Give this input").await;
    assert!(page.contains("The branch to check out."), "{page}");
    assert!(
        page.contains("name=\"input\""),
        "the JSON box stays: {page}"
    );
    retype(client, "in:/branch", "release/1.2").await;
    retype(client, "in:/depth", "deep").await;
    click(client, "form.input-fields button[type=submit]").await;
    page_with(client, "is not a number").await;
    let beside = errors_beside(client, "in:/depth").await;
    assert!(beside.contains("`deep` is not a number"), "{beside}");
    assert_eq!(value_of(client, "in:/branch").await, "release/1.2");
    snap(client, "forms-2-input-refused").await;
    still_open(dir, run);

    retype(client, "in:/depth", "5").await;
    click(client, "input[name='in:/force']").await;
    click(client, "form.input-fields button[type=submit]").await;
    let decided = decided(dir, run).await;
    assert_eq!(decided["state"], "decided", "{decided}");
    assert_eq!(
        decided["decisions"][0]["verdict"], "input submitted",
        "{decided}"
    );
    assert_eq!(decided["decisions"][0]["by"], "dana", "{decided}");
    let (answer, _) = resumed(dir, run).await;
    assert!(
        answer.ends_with("checked out release/1.2 at depth 5 (force: true)"),
        "{answer}"
    );
}
