//! The inbox's router against a real store, on SQLite and again on
//! PostgreSQL: sign-in with a one-time link, the session cookie, the
//! waiting page, a run's page, a decision — and every refusal: no session,
//! a used or made-up link, a revoked operator, a missing or wrong token, a
//! wrong origin, a stale digest, four eyes. Everything a model wrote is
//! rendered as text.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Map, Value, json};
use toolgate::run::{Outcome, Reply, RunOptions, RunRequest, ToolCall};
use toolgate::suspend::SuspendedRun;
use toolgate::testing::{MemoryLog, ScriptedModel};
use toolgate::{Agent, Execute, Registry, Tool, ToolOutput};
use toolgate_inbox::{Inbox, SESSION_COOKIE};
use toolgate_store::Store;

#[path = "../../store/tests/backend/mod.rs"]
mod backend;
use backend::TestDb;

mod common;
use common::{Answer, HOST, ORIGIN, get, inbox, post, send, signed_in};

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
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("deleted")
    }
}

/// A run of alice's, paused for approval of `delete_branch` with
/// `arguments`, saved for the host `demo`.
async fn paused(store: &Store, arguments: Value, options: RunOptions) -> SuspendedRun {
    let registry = Registry::builder().builtin(DeleteBranch).build().unwrap();
    let model = ScriptedModel::new([Reply::Calls {
        content: None,
        calls: vec![ToolCall {
            id: "c1".into(),
            name: "delete_branch".into(),
            arguments,
        }],
    }]);
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    let request = RunRequest {
        options,
        ..RunRequest::new("alice", "tidy the branches")
    };
    let Ok(Outcome::AwaitingApproval(run)) = agent.start(request).await else {
        panic!("an approval pause");
    };
    let run = SuspendedRun::AwaitingApproval(run);
    store.save_suspended(&run, "demo").await.unwrap();
    run
}

/// `verdict` on the run at `path`, from the inbox's origin, with the
/// session `cookie` and its token `csrf`, on `digest`.
async fn decide_as(
    inbox: &Inbox,
    path: &str,
    cookie: &str,
    csrf: &str,
    digest: &str,
    verdict: &str,
) -> Answer {
    send(
        inbox,
        post(
            path,
            Some(cookie),
            Some(ORIGIN),
            &[("csrf", csrf), ("digest", digest), ("verdict", verdict)],
        ),
    )
    .await
}

#[tokio::test]
async fn without_a_session_every_page_sends_you_to_sign_in() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let run = paused(&store, json!({"branch": "old"}), RunOptions::default()).await;
    for path in [
        format!("/s/{}/", "0".repeat(64)),
        format!("/s/{}/runs/{}", "0".repeat(64), run.run_id()),
    ] {
        for cookie in [None, Some("0".repeat(64))] {
            let answer = send(&inbox, get(&path, cookie.as_deref())).await;
            assert_eq!(answer.status, StatusCode::SEE_OTHER, "{path}");
            assert_eq!(answer.headers[header::LOCATION], "/signed-out");
        }
    }
    // A decision without a session records nothing.
    let answer = send(
        &inbox,
        post(
            &format!("/s/{}/runs/{}/decide", "0".repeat(64), run.run_id()),
            None,
            Some(ORIGIN),
            &[
                ("csrf", "x"),
                ("digest", run.digest().as_str()),
                ("verdict", "approve"),
            ],
        ),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert!(
        store
            .run_history(run.run_id())
            .await
            .unwrap()
            .decisions
            .is_empty()
    );
}

#[tokio::test]
async fn a_link_signs_in_once_from_the_inbox_own_origin() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let link = store
        .add_operator("bob", Duration::from_mins(10))
        .await
        .unwrap();
    // From another origin — another port of 127.0.0.1 is same-site, not
    // same-origin — or with none: refused, the link not spent.
    for origin in [
        None,
        Some("http://127.0.0.1:9999"),
        Some("http://evil.example"),
    ] {
        let answer = send(
            &inbox,
            post("/sign-in", None, origin, &[("token", &link.secret)]),
        )
        .await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{origin:?}");
        assert!(!answer.headers.contains_key(header::SET_COOKIE));
    }
    // `Origin: null`, as a browser sends under `no-referrer`, with
    // `Sec-Fetch-Site` other than `same-origin`: refused too.
    for site in [None, Some("same-site"), Some("cross-site"), Some("none")] {
        let mut request = post("/sign-in", None, Some("null"), &[("token", &link.secret)]);
        if let Some(site) = site {
            request
                .headers_mut()
                .insert("sec-fetch-site", site.parse().unwrap());
        }
        let answer = send(&inbox, request).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{site:?}");
    }
    // The inbox's own origin, but the browser says the request came from
    // elsewhere: its word is taken, refused.
    for site in ["same-site", "cross-site", "none"] {
        let mut request = post("/sign-in", None, Some(ORIGIN), &[("token", &link.secret)]);
        request
            .headers_mut()
            .insert("sec-fetch-site", site.parse().unwrap());
        let answer = send(&inbox, request).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{site}");
    }
    // The browser's own word: `null` and `Sec-Fetch-Site: same-origin`.
    let mut request = post("/sign-in", None, Some("null"), &[("token", &link.secret)]);
    request
        .headers_mut()
        .insert("sec-fetch-site", "same-origin".parse().unwrap());
    let answer = send(&inbox, request).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    let cookie = answer.headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(cookie.starts_with(SESSION_COOKIE), "{cookie}");
    // Sent to the session's own pages only: its path holds the key the
    // sign-in leads to.
    let location = answer.headers[header::LOCATION].to_str().unwrap();
    assert!(location.starts_with("/s/"), "{location}");
    assert!(
        cookie.contains(&format!("Path={location}")),
        "{cookie} {location}"
    );
    // Used once.
    let again = send(
        &inbox,
        post("/sign-in", None, Some(ORIGIN), &[("token", &link.secret)]),
    )
    .await;
    assert_eq!(again.status, StatusCode::UNAUTHORIZED);
    assert!(again.body.contains("signs no one in"), "{}", again.body);
}

#[tokio::test]
async fn the_waiting_page_and_a_run_render_what_a_model_wrote_as_text() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let hostile = json!({
        "branch": "<script>document.title='owned'</script>",
        "note": "<img src=x onerror=alert(1)>",
        "link": "javascript:alert(1)",
        "style": "</pre><style>body{display:none}</style>",
        "rtl": "abc\u{202e}fed",
        "hidden": "a\u{200b}b",
        "arabic": "שלום world",
    });
    let run = paused(&store, hostile, RunOptions::default()).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let list = send(&inbox, get(&format!("/s/{csrf}/"), Some(&cookie))).await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(list.body.contains(run.run_id()), "{}", list.body);
    assert!(list.body.contains("awaiting approval"), "{}", list.body);

    let page = send(
        &inbox,
        get(&format!("/s/{csrf}/runs/{}", run.run_id()), Some(&cookie)),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    for injected in ["<script>", "<img", "<style>", "</pre><style>"] {
        assert!(!body.contains(injected), "{injected} reached the page raw");
    }
    assert!(body.contains("&lt;script&gt;"), "shown as text");
    assert!(body.contains("\\u{202e}"), "the override shown escaped");
    assert!(
        body.contains("\\u{200b}"),
        "the zero-width space shown escaped"
    );
    assert!(!body.contains('\u{202e}') && !body.contains('\u{200b}'));
    assert!(body.contains("<bdi>"), "isolated");
    assert!(
        body.contains(run.digest().as_str()),
        "the digest the decision carries"
    );
    // The headers of every page.
    let csp = page.headers[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap();
    assert!(
        csp.contains("default-src 'none'")
            && csp.contains("script-src 'self';")
            && !csp.contains("unsafe"),
        "{csp}"
    );
    assert_eq!(page.headers[header::X_FRAME_OPTIONS], "DENY");
    assert_eq!(page.headers[header::REFERRER_POLICY], "same-origin");
    assert_eq!(page.headers[header::CACHE_CONTROL], "no-store");
}

#[tokio::test]
async fn a_decision_carries_the_session_token_the_origin_and_the_shown_digest() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let run = paused(&store, json!({"branch": "old"}), RunOptions::default()).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let path = format!("/s/{csrf}/runs/{}/decide", run.run_id());
    let digest = run.digest();
    let refused = [
        (None, csrf.as_str(), digest.as_str(), StatusCode::FORBIDDEN),
        (
            Some("http://127.0.0.1:9999"),
            csrf.as_str(),
            digest.as_str(),
            StatusCode::FORBIDDEN,
        ),
        (Some(ORIGIN), "", digest.as_str(), StatusCode::FORBIDDEN),
        (Some(ORIGIN), "0123", digest.as_str(), StatusCode::FORBIDDEN),
        (
            Some(ORIGIN),
            csrf.as_str(),
            "sha256:00",
            StatusCode::CONFLICT,
        ),
    ];
    for (origin, token, shown, status) in refused {
        let answer = send(
            &inbox,
            post(
                &path,
                Some(&cookie),
                origin,
                &[("csrf", token), ("digest", shown), ("verdict", "approve")],
            ),
        )
        .await;
        assert_eq!(
            answer.status, status,
            "{origin:?} {token} {shown}: {}",
            answer.body
        );
        assert!(
            store
                .run_history(run.run_id())
                .await
                .unwrap()
                .decisions
                .is_empty()
        );
    }
    decided_once(&inbox, &store, &run, &cookie, &csrf).await;
}

/// A stale digest is refused with a link to the run as it is now; the shown
/// one records the signed-in operator's denial through the inbox, once.
async fn decided_once(inbox: &Inbox, store: &Store, run: &SuspendedRun, cookie: &str, csrf: &str) {
    let path = format!("/s/{csrf}/runs/{}/decide", run.run_id());
    let digest = run.digest();
    let stale = decide_as(inbox, &path, cookie, csrf, "sha256:00", "approve").await;
    assert!(
        stale.body.contains("changed since the page was shown"),
        "{}",
        stale.body
    );
    assert!(
        stale
            .body
            .contains(&format!("/s/{csrf}/runs/{}", run.run_id())),
        "a link to the fresh view"
    );

    let decided = decide_as(inbox, &path, cookie, csrf, digest.as_str(), "deny").await;
    assert_eq!(decided.status, StatusCode::SEE_OTHER, "{}", decided.body);
    let history = store.run_history(run.run_id()).await.unwrap();
    let [decision] = history.decisions.as_slice() else {
        panic!("one decision: {:?}", history.decisions);
    };
    assert_eq!(decision.record.decided_by, "bob");
    assert_eq!(decision.record.decided_by_source.as_str(), "signed_in");
    assert_eq!(
        decision
            .record
            .channel
            .map(toolgate::identity::Channel::as_str),
        Some("inbox")
    );
    assert_eq!(decision.record.verdict.as_str(), "denied");
    // The same form again: the run no longer waits.
    let again = decide_as(inbox, &path, cookie, csrf, digest.as_str(), "approve").await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);
    assert_eq!(
        store
            .run_history(run.run_id())
            .await
            .unwrap()
            .decisions
            .len(),
        1
    );
}

#[tokio::test]
async fn four_eyes_holds_in_the_browser_and_a_revoked_operator_is_signed_out() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let options = RunOptions {
        four_eyes: true,
        ..RunOptions::default()
    };
    let run = paused(&store, json!({"branch": "old"}), options).await;
    // The requester, signed in as `Alice`: the same person.
    let (cookie, csrf) = signed_in(&inbox, &store, "Alice").await;
    let path = format!("/s/{csrf}/runs/{}/decide", run.run_id());
    let digest = run.digest();
    let answer = decide_as(&inbox, &path, &cookie, &csrf, digest.as_str(), "approve").await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.body);
    assert!(
        answer.body.contains("must come from someone else"),
        "{}",
        answer.body
    );
    assert!(
        store
            .run_history(run.run_id())
            .await
            .unwrap()
            .decisions
            .is_empty()
    );

    store.revoke_operator("alice").await.unwrap();
    let after = send(&inbox, get(&format!("/s/{csrf}/"), Some(&cookie))).await;
    assert_eq!(after.status, StatusCode::SEE_OTHER);
    assert_eq!(after.headers[header::LOCATION], "/signed-out");
}

#[tokio::test]
async fn failed_sign_ins_are_limited_and_sign_out_ends_the_session() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "carol").await;
    // Signing out needs the session's token too.
    let refused = send(
        &inbox,
        post(
            &format!("/s/{csrf}/sign-out"),
            Some(&cookie),
            Some(ORIGIN),
            &[("csrf", "nope")],
        ),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let out = send(
        &inbox,
        post(
            &format!("/s/{csrf}/sign-out"),
            Some(&cookie),
            Some(ORIGIN),
            &[("csrf", &csrf)],
        ),
    )
    .await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert!(store.session(&cookie).await.unwrap().is_none());

    for _ in 0..toolgate_inbox::SIGN_IN_FAILURES_PER_MINUTE {
        let guess = send(
            &inbox,
            post("/sign-in", None, Some(ORIGIN), &[("token", "guess")]),
        )
        .await;
        assert_eq!(guess.status, StatusCode::UNAUTHORIZED);
    }
    // Past the limit even a good link waits a minute.
    let link = store
        .add_operator("carol", Duration::from_mins(10))
        .await
        .unwrap();
    let limited = send(
        &inbox,
        post("/sign-in", None, Some(ORIGIN), &[("token", &link.secret)]),
    )
    .await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
}

/// A call approved as it is, its arguments box holding the same arguments
/// however laid out, is an approval; the box edited, it is refused.
#[tokio::test]
async fn an_approval_runs_the_arguments_shown_and_an_edited_box_is_no_approval() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let run = two_calls(&store).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let path = format!("/s/{csrf}/runs/{}/decide", run.run_id());
    let digest = run.digest();
    let decide = |args_c1: &str| {
        vec![
            ("csrf", csrf.clone()),
            ("digest", digest.as_str().to_owned()),
            ("verdict", "calls".to_owned()),
            ("call:c1", "approve".to_owned()),
            ("args:c1", args_c1.to_owned()),
            ("call:c2", "approve".to_owned()),
            // An approval of a write, confirmed.
            ("confirm", "write".to_owned()),
        ]
    };
    let edited = decide(r#"{"branch": "main"}"#);
    let pairs: Vec<(&str, &str)> = edited.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let answer = send(&inbox, post(&path, Some(&cookie), Some(ORIGIN), &pairs)).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
    assert!(
        answer.body.contains("approve with these arguments"),
        "{}",
        answer.body
    );
    assert!(
        store
            .run_history(run.run_id())
            .await
            .unwrap()
            .decisions
            .is_empty()
    );

    let same = decide("{ \"branch\" :\n \"old\" }");
    let pairs: Vec<(&str, &str)> = same.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let answer = send(&inbox, post(&path, Some(&cookie), Some(ORIGIN), &pairs)).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let history = store.run_history(run.run_id()).await.unwrap();
    let [decision] = history.decisions.as_slice() else {
        panic!("{:?}", history.decisions);
    };
    assert_eq!(
        decision.record.verdict,
        toolgate::audit::DecisionKind::Approved
    );
}

/// A run of alice's whose turn holds two `delete_branch` calls.
async fn two_calls(store: &Store) -> SuspendedRun {
    let registry = Registry::builder().builtin(DeleteBranch).build().unwrap();
    let call = |id: &str, branch: &str| ToolCall {
        id: id.into(),
        name: "delete_branch".into(),
        arguments: json!({"branch": branch}),
    };
    let model = ScriptedModel::new([Reply::Calls {
        content: None,
        calls: vec![call("c1", "old"), call("c2", "stale")],
    }]);
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    let Ok(Outcome::AwaitingApproval(run)) = agent.start(RunRequest::new("alice", "tidy")).await
    else {
        panic!("an approval pause");
    };
    let run = SuspendedRun::AwaitingApproval(run);
    store.save_suspended(&run, "demo").await.unwrap();
    run
}

/// Call by call: one denied with a reason, one approved with edited
/// arguments — recorded as such; a form that names a field twice, misses
/// a call, or edits into what the schema refuses records nothing.
#[tokio::test]
#[allow(
    clippy::too_many_lines,
    reason = "each refused form beside the one recorded, in one table"
)]
async fn calls_are_decided_one_by_one_and_an_edit_is_checked() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let run = two_calls(&store).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let page = send(
        &inbox,
        get(&format!("/s/{csrf}/runs/{}", run.run_id()), Some(&cookie)),
    )
    .await;
    assert!(
        page.body.contains("name=\"call:c1\"") && page.body.contains("name=\"args:c2\""),
        "{}",
        page.body
    );
    let path = format!("/s/{csrf}/runs/{}/decide", run.run_id());
    let digest = run.digest();
    let with = |fields: &[(&'static str, &'static str)]| {
        let mut all = vec![
            ("csrf", csrf.clone()),
            ("digest", digest.as_str().to_owned()),
            ("verdict", "calls".to_owned()),
            // An approval of a write, confirmed.
            ("confirm", "write".to_owned()),
        ];
        all.extend(fields.iter().map(|(k, v)| (*k, (*v).to_owned())));
        all
    };
    let refused: [(&[(&str, &str)], StatusCode); 4] = [
        // One call left out.
        (&[("call:c1", "approve")], StatusCode::FORBIDDEN),
        // Arguments that are not JSON: said beside the box, the page
        // sent back as typed.
        (
            &[
                ("call:c1", "approve"),
                ("call:c2", "edit"),
                ("args:c2", "{"),
            ],
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        // Arguments the schema refuses (an object is required): the same.
        (
            &[
                ("call:c1", "approve"),
                ("call:c2", "edit"),
                ("args:c2", "[1]"),
            ],
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        // A field named twice.
        (
            &[
                ("call:c1", "approve"),
                ("call:c1", "deny"),
                ("call:c2", "approve"),
            ],
            StatusCode::FORBIDDEN,
        ),
    ];
    for (fields, status) in refused {
        let form = with(fields);
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let answer = send(&inbox, post(&path, Some(&cookie), Some(ORIGIN), &pairs)).await;
        assert_eq!(answer.status, status, "{fields:?}: {}", answer.body);
        if status == StatusCode::UNPROCESSABLE_ENTITY {
            assert!(answer.body.contains("field-error"), "{}", answer.body);
            let kept = fields
                .iter()
                .find(|(k, _)| *k == "args:c2")
                .map(|(_, v)| *v);
            assert!(
                kept.is_some_and(|typed| answer
                    .body
                    .contains(&format!(">{}</textarea>", typed.replace('"', "&quot;")))),
                "the box keeps what was typed: {}",
                answer.body
            );
        }
        assert!(
            store
                .run_history(run.run_id())
                .await
                .unwrap()
                .decisions
                .is_empty(),
            "{fields:?}"
        );
    }
    let form = with(&[
        ("call:c1", "deny"),
        ("reason:c1", "keep the old branch"),
        ("call:c2", "edit"),
        ("args:c2", "{\"branch\": \"stale-2\"}"),
    ]);
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let answer = send(&inbox, post(&path, Some(&cookie), Some(ORIGIN), &pairs)).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let history = store.run_history(run.run_id()).await.unwrap();
    let [decision] = history.decisions.as_slice() else {
        panic!("{:?}", history.decisions);
    };
    let verdicts: Vec<(String, String)> = decision
        .record
        .calls
        .iter()
        .map(|c| {
            (
                c.call_id.clone(),
                serde_json::to_string(&c.verdict).unwrap(),
            )
        })
        .collect();
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    shows_the_reason(&inbox, &cookie, &csrf, run.run_id()).await;
    assert!(
        verdicts[0].1.contains("keep the old branch"),
        "{verdicts:?}"
    );
    assert!(verdicts[1].1.contains("stale-2"), "{verdicts:?}");
}

/// What a user types for [`PickBranch`].
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Pick {
    /// The branch.
    branch: String,
}

/// Checks out the branch a user picks: its call waits for their input.
#[derive(Tool)]
#[tool(effect = read_only, input = Pick)]
struct PickBranch;

impl Execute for PickBranch {
    type Args = Pick;
    async fn execute(&self, pick: Pick) -> ToolOutput {
        ToolOutput::text(format!("checked out {}", pick.branch))
    }
}

/// A run that waits for input is given it as JSON, checked against the
/// schema the call asked for.
#[tokio::test]
async fn a_run_waiting_for_input_is_given_it() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let registry = Registry::builder().builtin(PickBranch).build().unwrap();
    let model = ScriptedModel::new([Reply::Calls {
        content: None,
        calls: vec![ToolCall {
            id: "p1".into(),
            name: "pick_branch".into(),
            arguments: json!({}),
        }],
    }]);
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    let Ok(Outcome::WaitingForInput(run)) = agent.start(RunRequest::new("alice", "pick")).await
    else {
        panic!("an input pause");
    };
    let run = SuspendedRun::WaitingForInput(run);
    store.save_suspended(&run, "demo").await.unwrap();
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let page = send(
        &inbox,
        get(&format!("/s/{csrf}/runs/{}", run.run_id()), Some(&cookie)),
    )
    .await;
    assert!(page.body.contains("name=\"input\""), "{}", page.body);
    assert!(!page.body.contains("Approve every call"), "{}", page.body);
    let path = format!("/s/{csrf}/runs/{}/decide", run.run_id());
    let digest = run.digest();
    let give = |input: &'static str| {
        let (csrf, digest) = (csrf.clone(), digest.as_str().to_owned());
        post(
            &path,
            Some(&cookie),
            Some(ORIGIN),
            &[
                ("csrf", &csrf),
                ("digest", &digest),
                ("verdict", "input"),
                ("input", input),
            ],
        )
    };
    for (input, beside) in [("{", "this is not JSON"), (r#"{"branch": 5}"#, "/branch")] {
        let answer = send(&inbox, give(input)).await;
        assert_eq!(
            answer.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{input}: {}",
            answer.body
        );
        assert!(answer.body.contains(beside), "{input}: {}", answer.body);
        assert!(
            store
                .run_history(run.run_id())
                .await
                .unwrap()
                .decisions
                .is_empty()
        );
    }
    let answer = send(&inbox, give(r#"{"branch": "main"}"#)).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let history = store.run_history(run.run_id()).await.unwrap();
    assert_eq!(
        history.decisions[0].record.verdict.as_str(),
        "input submitted"
    );
    assert_eq!(history.decisions[0].record.decided_by, "bob");
}

/// A write whose answer is lost after it reached its tool.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct LoseAnswer;

impl Execute for LoseAnswer {
    type Args = Map<String, Value>;
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::answer_lost("the connection closed")
    }
}

/// A call whose outcome is unknown is chosen from the page — with a reason
/// for the record, the session's token and the digest shown beside it.
#[tokio::test]
async fn a_call_of_unknown_outcome_is_chosen_from_the_page() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let registry = Registry::builder().builtin(LoseAnswer).build().unwrap();
    let model = ScriptedModel::new([
        Reply::Calls {
            content: None,
            calls: vec![ToolCall {
                id: "w1".into(),
                name: "lose_answer".into(),
                arguments: json!({}),
            }],
        },
        Reply::Text("done".into()),
    ]);
    let log = MemoryLog::new();
    let agent = Agent::new(&registry, &model, &log);
    let Ok(Outcome::AwaitingApproval(run)) = agent.start(RunRequest::new("alice", "write")).await
    else {
        panic!("an approval pause");
    };
    let run = SuspendedRun::AwaitingApproval(run);
    store.save_suspended(&run, "demo").await.unwrap();
    let bob =
        toolgate::identity::Operator::new("bob", toolgate::identity::IdentitySource::Flag).unwrap();
    store
        .decide(
            run.run_id(),
            Some(&run.digest()),
            &bob,
            toolgate_store::Answer::Approve,
        )
        .await
        .unwrap();
    let host = toolgate_store::Host::new(store.clone(), "demo").unwrap();
    let task = host.next().await.unwrap().unwrap();
    host.resume(task, &registry, &model).await.unwrap();
    let unknown = store.unknown_calls(run.run_id()).await.unwrap();
    let [call] = unknown.as_slice() else {
        panic!("one call of unknown outcome: {unknown:?}");
    };

    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let page = send(
        &inbox,
        get(&format!("/s/{csrf}/runs/{}", run.run_id()), Some(&cookie)),
    )
    .await;
    assert!(
        page.body.contains("Outcome unknown") && page.body.contains(call.digest.as_str()),
        "{}",
        page.body
    );
    let path = format!("/s/{csrf}/runs/{}/choose", run.run_id());
    let form = |token: &str, reason: &str| {
        post(
            &path,
            Some(&cookie),
            Some(ORIGIN),
            &[
                ("csrf", token),
                ("call", &call.call_id),
                ("digest", call.digest.as_str()),
                ("choice", "skip"),
                ("reason", reason),
            ],
        )
    };
    let refused = send(&inbox, form("wrong", "checked by hand")).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let chosen = send(&inbox, form(&csrf, "checked by hand")).await;
    assert_eq!(chosen.status, StatusCode::SEE_OTHER, "{}", chosen.body);
    let history = store.run_history(run.run_id()).await.unwrap();
    let recorded: Vec<&String> = history.calls.iter().flat_map(|c| &c.choices).collect();
    assert!(
        recorded.iter().any(|c| c.contains("skip by bob")
            && c.contains("inbox")
            && c.contains("checked by hand")),
        "{recorded:?}"
    );
}

/// A session past its time is no session: the page sends the browser to
/// sign in again.
#[tokio::test]
async fn an_expired_session_signs_no_one_in() {
    let db = TestDb::new().await;
    let store = Store::open(db.location()).await.unwrap();
    let inbox = Inbox::new(store.clone(), ORIGIN).with_session_for(Duration::from_secs(1));
    let (cookie, csrf) = signed_in(&inbox, &store, "dora").await;
    assert_eq!(
        send(&inbox, get(&format!("/s/{csrf}/"), Some(&cookie)))
            .await
            .status,
        StatusCode::OK
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let after = send(&inbox, get(&format!("/s/{csrf}/"), Some(&cookie))).await;
    assert_eq!(after.status, StatusCode::SEE_OTHER);
    assert_eq!(after.headers[header::LOCATION], "/signed-out");
}

/// The cookie alone opens nothing. A browser sends the inbox's cookie to
/// every port of its host — another server there receives it — but the
/// session's pages live under a key only the sign-in's answer gave: with
/// the cookie and without the key, no page shows a thing, no form is
/// taken, and nothing says the key.
#[tokio::test]
async fn a_stolen_cookie_without_the_session_key_opens_nothing() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let run = paused(&store, json!({"branch": "old"}), RunOptions::default()).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let guessed = "0".repeat(64);
    for path in [
        "/".to_owned(),
        "/signed-out".to_owned(),
        format!("/s/{guessed}/"),
        format!("/s/{guessed}/runs/{}", run.run_id()),
    ] {
        let answer = send(&inbox, get(&path, Some(&cookie))).await;
        assert!(!answer.body.contains(&csrf), "{path} gave the key away");
        assert!(!answer.body.contains(run.run_id()), "{path} showed the run");
        assert!(
            !answer
                .headers
                .get(header::LOCATION)
                .is_some_and(|to| to.to_str().unwrap().contains(&csrf)),
            "{path} redirected to the key"
        );
    }
    // With the cookie and the form's token — but not the key in the path.
    let answer = send(
        &inbox,
        post(
            &format!("/s/{guessed}/runs/{}/decide", run.run_id()),
            Some(&cookie),
            Some(ORIGIN),
            &[
                ("csrf", &csrf),
                ("digest", run.digest().as_str()),
                ("verdict", "approve"),
            ],
        ),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert_eq!(answer.headers[header::LOCATION], "/signed-out");
    assert!(
        store
            .run_history(run.run_id())
            .await
            .unwrap()
            .decisions
            .is_empty()
    );
}

/// The run's page shows a decision taken call by call, call by call — the
/// denial's reason too.
async fn shows_the_reason(inbox: &Inbox, cookie: &str, key: &str, run: &str) {
    let page = send(inbox, get(&format!("/s/{key}/runs/{run}"), Some(cookie))).await;
    assert!(page.body.contains("keep the old branch"), "{}", page.body);
}

/// A request naming another host — a page of another name resolving to
/// the inbox's address — reads nothing and decides nothing; the inbox's
/// own name, with or without its default port, and the listen address it
/// was told of, are answered.
#[tokio::test]
async fn a_request_naming_another_host_is_refused() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let run = paused(&store, json!({"branch": "old"}), RunOptions::default()).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let named = |mut request: Request<Body>, host: Option<&str>| {
        let headers = request.headers_mut();
        headers.remove(header::HOST);
        if let Some(host) = host {
            headers.insert(header::HOST, host.parse().unwrap());
        }
        request
    };
    for host in [
        Some("evil.example"),
        Some("evil.example:8640"),
        Some("127.0.0.1:9999"),
        Some("127.0.0.1.evil.example:8640"),
        None,
    ] {
        let list = send(
            &inbox,
            named(get(&format!("/s/{csrf}/"), Some(&cookie)), host),
        )
        .await;
        assert_eq!(list.status, StatusCode::MISDIRECTED_REQUEST, "{host:?}");
        assert!(!list.body.contains(run.run_id()), "{host:?}: {}", list.body);
        assert!(list.body.contains("answers at http://127.0.0.1:8640 only"));
        let decided = send(
            &inbox,
            named(
                post(
                    &format!("/s/{csrf}/runs/{}/decide", run.run_id()),
                    Some(&cookie),
                    Some(ORIGIN),
                    &[
                        ("csrf", &csrf),
                        ("digest", run.digest().as_str()),
                        ("verdict", "approve"),
                    ],
                ),
                host,
            ),
        )
        .await;
        assert_eq!(decided.status, StatusCode::MISDIRECTED_REQUEST, "{host:?}");
        assert!(
            store
                .run_history(run.run_id())
                .await
                .unwrap()
                .decisions
                .is_empty(),
            "{host:?}: nothing recorded"
        );
    }
    for host in [
        "127.0.0.1:8640",
        "127.0.0.1:8640 ",
        "127.0.0.1:8640".to_uppercase().as_str(),
    ] {
        let list = send(
            &inbox,
            named(get(&format!("/s/{csrf}/"), Some(&cookie)), Some(host)),
        )
        .await;
        assert_eq!(list.status, StatusCode::OK, "{host}");
    }
    // An https inbox without a port is its own with `:443`; the listen
    // address told of is answered too.
    let secure =
        Inbox::new(store.clone(), "https://inbox.example.com").answering_at("127.0.0.1:8641");
    for (host, status) in [
        ("inbox.example.com", StatusCode::SEE_OTHER),
        ("inbox.example.com:443", StatusCode::SEE_OTHER),
        ("127.0.0.1:8641", StatusCode::SEE_OTHER),
        ("inbox.example.com:80", StatusCode::MISDIRECTED_REQUEST),
        ("example.com", StatusCode::MISDIRECTED_REQUEST),
    ] {
        let answer = send(&secure, named(get("/s/nope/", None), Some(host))).await;
        assert_eq!(answer.status, status, "{host}: {}", answer.body);
    }
}

/// A cookie of the session's name set by a page on another port of the
/// host (sent first, on a narrower path) does not lock the operator out:
/// every cookie of the name is tried against the session's key.
#[tokio::test]
async fn a_tossed_cookie_does_not_lock_the_operator_out() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let (other, _) = signed_in(&inbox, &store, "mallory").await;
    for tossed in ["forged", other.as_str()] {
        let request = Request::get(format!("/s/{csrf}/"))
            .header(header::HOST, HOST)
            .header(
                header::COOKIE,
                format!("{SESSION_COOKIE}={tossed}; {SESSION_COOKIE}={cookie}"),
            )
            .body(Body::empty())
            .unwrap();
        let page = send(&inbox, request).await;
        assert_eq!(page.status, StatusCode::OK, "{tossed}: {}", page.body);
        assert!(page.body.contains("bob"), "bob's own page");
    }
    // Another's cookie alone opens nothing under bob's key.
    let stolen = send(&inbox, get(&format!("/s/{csrf}/"), Some(&other))).await;
    assert_eq!(stolen.status, StatusCode::SEE_OTHER);
}

/// A form past the limit is answered as an inbox page that says the limit
/// and leads back — not bare text — and records nothing.
#[tokio::test]
async fn a_form_past_the_limit_is_an_inbox_page() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let run = paused(&store, json!({"branch": "old"}), RunOptions::default()).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let huge = "x".repeat(5 * 1024 * 1024);
    let answer = send(
        &inbox,
        post(
            &format!("/s/{csrf}/runs/{}/decide", run.run_id()),
            Some(&cookie),
            Some(ORIGIN),
            &[
                ("csrf", &csrf),
                ("digest", run.digest().as_str()),
                ("verdict", "calls"),
                ("args:call_1", &huge),
            ],
        ),
    )
    .await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        answer.headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "{:?}",
        answer.headers
    );
    assert!(
        answer.body.contains("larger than the inbox takes (2 MiB)"),
        "{}",
        answer.body
    );
    assert!(
        store
            .run_history(run.run_id())
            .await
            .unwrap()
            .decisions
            .is_empty()
    );
    // Every answer keeps the origin on the inbox's own forms, and sends no
    // referrer elsewhere.
    assert_eq!(answer.headers[header::REFERRER_POLICY], "same-origin");
}

/// Sign-in guesses sent at once are counted before they are checked: no
/// more than the limit are tried, whatever their number.
#[tokio::test]
async fn sign_in_guesses_sent_at_once_are_limited() {
    let db = TestDb::new().await;
    let (_store, inbox) = inbox(&db).await;
    let mut guesses = tokio::task::JoinSet::new();
    for n in 0..200 {
        let inbox = inbox.clone();
        guesses.spawn(async move {
            send(
                &inbox,
                post(
                    "/sign-in",
                    None,
                    Some(ORIGIN),
                    &[("token", &format!("guess-{n}"))],
                ),
            )
            .await
            .status
        });
    }
    let answers = guesses.join_all().await;
    let tried = answers
        .iter()
        .filter(|status| **status == StatusCode::UNAUTHORIZED)
        .count();
    let limited = answers
        .iter()
        .filter(|status| **status == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!(
        tried,
        toolgate_inbox::SIGN_IN_FAILURES_PER_MINUTE,
        "{answers:?}"
    );
    assert_eq!(tried + limited, 200, "{answers:?}");
}

/// Several approvers: bob approves with edited arguments; carol's page
/// shows his verdicts and the edit, and approving exactly that decides the
/// run — she is never asked to match what she was not shown.
#[tokio::test]
#[allow(
    clippy::too_many_lines,
    reason = "two approvers' pages and posts, in the order they act"
)]
async fn a_later_approver_sees_and_approves_the_first_ones_edit() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let options = RunOptions {
        approvals_required: 2,
        ..RunOptions::default()
    };
    let run = paused(&store, json!({"branch": "old"}), options).await;
    let path = format!("/s/{{}}/runs/{}/decide", run.run_id());
    let digest = run.digest();
    let (bob, bob_csrf) = signed_in(&inbox, &store, "bob").await;
    let first = send(
        &inbox,
        post(
            &path.replace("{}", &bob_csrf),
            Some(&bob),
            Some(ORIGIN),
            &[
                ("csrf", &bob_csrf),
                ("digest", digest.as_str()),
                ("verdict", "calls"),
                ("call:c1", "edit"),
                ("args:c1", r#"{"branch": "older"}"#),
                ("confirm", "write"),
            ],
        ),
    )
    .await;
    assert_eq!(first.status, StatusCode::SEE_OTHER, "{}", first.body);

    let (carol, carol_csrf) = signed_in(&inbox, &store, "carol").await;
    let page = send(
        &inbox,
        get(
            &format!("/s/{carol_csrf}/runs/{}", run.run_id()),
            Some(&carol),
        ),
    )
    .await;
    assert!(page.body.contains("Approved so far"), "{}", page.body);
    assert!(
        page.body.contains("older"),
        "the edit is shown: {}",
        page.body
    );
    assert!(page.body.contains("Approve exactly this"), "{}", page.body);
    // Only bob's verdicts are offered, and "deny": no approval the store
    // would refuse.
    assert!(!page.body.contains("Approve every call"), "{}", page.body);
    assert!(page.body.contains("Deny every call"), "{}", page.body);
    // Bob, who approved, is offered no approval again.
    let bobs = send(
        &inbox,
        get(&format!("/s/{bob_csrf}/runs/{}", run.run_id()), Some(&bob)),
    )
    .await;
    assert!(
        bobs.body.contains("You approved this turn"),
        "{}",
        bobs.body
    );
    assert!(!bobs.body.contains("Approve exactly this"), "{}", bobs.body);
    assert!(!bobs.body.contains("Approve every call"), "{}", bobs.body);
    // The original, approved by hand-made form: refused at once, never
    // asked about as if it would run.
    let original = send(
        &inbox,
        post(
            &path.replace("{}", &carol_csrf),
            Some(&carol),
            Some(ORIGIN),
            &[
                ("csrf", &carol_csrf),
                ("digest", digest.as_str()),
                ("verdict", "approve"),
            ],
        ),
    )
    .await;
    assert_ne!(original.status, StatusCode::OK, "{}", original.body);
    assert!(
        !original.body.contains("runs with the arguments below"),
        "{}",
        original.body
    );
    assert_eq!(
        store
            .run_history(run.run_id())
            .await
            .unwrap()
            .decisions
            .len(),
        1
    );
    // What the form carries, as a browser sends it.
    let carried = |name: &str| {
        let marker = format!("name=\"{name}\" value=\"");
        let start = page.body.find(&marker).map(|at| at + marker.len())?;
        let end = page.body[start..].find('"')? + start;
        Some(
            page.body[start..end]
                .replace("&quot;", "\"")
                .replace("&amp;", "&"),
        )
    };
    let verdict = carried("call:c1").expect("the verdict is carried");
    let arguments = carried("args:c1").expect("the edit is carried");
    assert_eq!(verdict, "edit");
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"branch": "older"})
    );
    let second = send(
        &inbox,
        post(
            &path.replace("{}", &carol_csrf),
            Some(&carol),
            Some(ORIGIN),
            &[
                ("csrf", &carol_csrf),
                ("digest", digest.as_str()),
                ("verdict", "calls"),
                ("call:c1", &verdict),
                ("args:c1", &arguments),
                ("confirm", "write"),
            ],
        ),
    )
    .await;
    assert_eq!(second.status, StatusCode::SEE_OTHER, "{}", second.body);
    let decisions = store.run_history(run.run_id()).await.unwrap().decisions;
    assert_eq!(decisions.len(), 2, "{decisions:?}");
    assert!(decisions.iter().all(|d| d.record.voided.is_none()));
    assert_eq!(decisions[1].record.decided_by, "carol");
}

/// An imported tool `notes.write_note` in the store (server `notes`), the
/// registry that offers it, and a held call of it by alice under
/// `options`, saved as a gateway saves it.
async fn remote_call(store: &Store, options: RunOptions) -> (Arc<Registry>, SuspendedRun) {
    let added = store
        .add_server(toolgate_store::NewServer {
            id: "notes".into(),
            name: "Notes".into(),
            transport: toolgate_store::Transport::Stdio {
                command: vec!["notes-mcp".into()],
            },
            data_class: Some(toolgate_store::DataClass::EditorContent),
        })
        .await;
    if let Err(error) = added {
        assert!(error.to_string().contains("exists already"), "{error}");
    }
    let _ = toolgate_store::Query::new(
        "INSERT INTO mcp_tool (server_id, remote_name, local_name, description, input_schema, first_seen_at, last_seen_at)
         VALUES ('notes', 'write_note', 'notes.write_note', 'Appends a note.', '{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}', 1, 1)",
    )
    .execute_on(store)
    .await;
    let provider = Arc::new(toolgate_mcp::McpProvider::new(
        store.clone(),
        toolgate_mcp::Deadlines::default(),
    ));
    let registry = Arc::new(Registry::builder().provider(provider).build().unwrap());
    let log = MemoryLog::new();
    let model = ScriptedModel::new(Vec::<Reply>::new());
    let agent = Agent::new(&registry, &model, &log);
    let mut request = toolgate::run::CallRequest::new(
        "alice".to_owned(),
        "a test".to_owned(),
        ToolCall {
            id: "c1".into(),
            name: "notes.write_note".into(),
            arguments: json!({"text": "hello"}),
        },
    );
    request.options = options;
    let Ok(Outcome::AwaitingApproval(run)) = agent.call(request).await else {
        panic!("an approval pause");
    };
    let run = SuspendedRun::AwaitingApproval(run);
    store.save_suspended(&run, "gateway").await.unwrap();
    (registry, run)
}

/// "And from now on" from the inbox: offered only to an operator given the
/// power, only where no four eyes or several approvers bind the run;
/// recorded as their declaration through the inbox, bound to the tool's
/// definition. Anyone else's attempt records nothing.
#[tokio::test]
async fn from_now_on_in_the_inbox_is_an_operators_power() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let (registry, run) = remote_call(&store, RunOptions::default()).await;
    let inbox = inbox.with_registry(registry);
    let declaration = |store: Store| async move {
        store
            .catalogue("notes")
            .await
            .unwrap()
            .into_iter()
            .find(|row| row.local_name == "notes.write_note")
            .unwrap()
    };
    let from_now_on = |csrf: &str, run: &SuspendedRun| {
        vec![
            ("csrf".to_owned(), csrf.to_owned()),
            ("digest".to_owned(), run.digest().as_str().to_owned()),
            ("verdict".to_owned(), "approve".to_owned()),
            ("allow_tool".to_owned(), "notes.write_note".to_owned()),
            ("confirm".to_owned(), "write".to_owned()),
        ]
    };
    let as_pairs = |form: &[(String, String)]| -> Vec<(String, String)> { form.to_vec() };

    // carol may not: no button, and her attempt records nothing.
    let (carol, carol_csrf) = signed_in(&inbox, &store, "carol").await;
    let page = send(
        &inbox,
        get(
            &format!("/s/{carol_csrf}/runs/{}", run.run_id()),
            Some(&carol),
        ),
    )
    .await;
    assert!(!page.body.contains("allow_tool"), "{}", page.body);
    let form = as_pairs(&from_now_on(&carol_csrf, &run));
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let path = |csrf: &str| format!("/s/{csrf}/runs/{}/decide", run.run_id());
    let refused = send(
        &inbox,
        post(&path(&carol_csrf), Some(&carol), Some(ORIGIN), &pairs),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert!(refused.body.contains("may-declare"), "{}", refused.body);
    assert!(
        store
            .run_history(run.run_id())
            .await
            .unwrap()
            .decisions
            .is_empty()
    );

    // bob may: the button, and one act that approves and declares.
    store
        .add_operator("bob", Duration::from_mins(10))
        .await
        .unwrap();
    store.set_may_declare("bob", true).await.unwrap();
    let (bob, bob_csrf) = signed_in(&inbox, &store, "bob").await;
    let page = send(
        &inbox,
        get(&format!("/s/{bob_csrf}/runs/{}", run.run_id()), Some(&bob)),
    )
    .await;
    assert!(
        page.body
            .contains("name=\"allow_tool\" value=\"notes.write_note\""),
        "{}",
        page.body
    );
    let form = as_pairs(&from_now_on(&bob_csrf, &run));
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let done = send(
        &inbox,
        post(&path(&bob_csrf), Some(&bob), Some(ORIGIN), &pairs),
    )
    .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    let decisions = store.run_history(run.run_id()).await.unwrap().decisions;
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].record.decided_by, "bob");
    let row = declaration(store.clone()).await;
    assert_eq!(row.declaration, toolgate_store::ToolDeclaration::NoApproval);
    let declared = row.declared.expect("declared");
    assert_eq!(
        (declared.by.as_str(), declared.channel.as_str()),
        ("bob", "inbox")
    );
    assert!(declared.digest.is_some_and(|d| d.starts_with("sha256:")));
}

/// Under four eyes the inbox offers no "and from now on", and refuses it
/// even to an operator who may declare: nothing is recorded.
#[tokio::test]
async fn from_now_on_is_refused_under_four_eyes() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let options = RunOptions {
        four_eyes: true,
        ..RunOptions::default()
    };
    let (registry, run) = remote_call(&store, options).await;
    let inbox = inbox.with_registry(registry);
    store
        .add_operator("bob", Duration::from_mins(10))
        .await
        .unwrap();
    store.set_may_declare("bob", true).await.unwrap();
    let (bob, csrf) = signed_in(&inbox, &store, "bob").await;
    let page = send(
        &inbox,
        get(&format!("/s/{csrf}/runs/{}", run.run_id()), Some(&bob)),
    )
    .await;
    assert!(!page.body.contains("allow_tool"), "{}", page.body);
    let digest = run.digest();
    let refused = send(
        &inbox,
        post(
            &format!("/s/{csrf}/runs/{}/decide", run.run_id()),
            Some(&bob),
            Some(ORIGIN),
            &[
                ("csrf", &csrf),
                ("digest", digest.as_str()),
                ("verdict", "approve"),
                ("allow_tool", "notes.write_note"),
            ],
        ),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert!(refused.body.contains("four eyes"), "{}", refused.body);
    assert!(
        store
            .run_history(run.run_id())
            .await
            .unwrap()
            .decisions
            .is_empty()
    );
}

/// A run's stable address — the link a notification carries — is one page
/// for every request: with the session's cookie or without, it shows the
/// run's id and how to sign in, names the script that opens it in a kept
/// session, and never the session's address.
#[tokio::test]
async fn a_runs_stable_address_reveals_no_session_to_the_cookie() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let run = paused(&store, json!({"branch": "old"}), RunOptions::default()).await;
    let (cookie, key) = signed_in(&inbox, &store, "bob").await;
    let link = toolgate_inbox::run_link(&format!("{ORIGIN}/"), run.run_id());
    assert_eq!(link, format!("{ORIGIN}/runs/{}", run.run_id()));
    let path = link.strip_prefix(ORIGIN).unwrap();

    let without = send(&inbox, get(path, None)).await;
    let with = send(&inbox, get(path, Some(&cookie))).await;
    assert_eq!(with.status, StatusCode::OK, "{}", with.body);
    assert_eq!(with.body, without.body, "the cookie changes nothing");
    assert!(
        !with.body.contains(&key),
        "the session's address given away"
    );
    assert!(!with.headers.contains_key(header::SET_COOKIE));
    assert!(!with.headers.contains_key(header::LOCATION));
    assert!(
        with.body
            .contains(&format!("data-run=\"{}\"", run.run_id())),
        "{}",
        with.body
    );
    assert!(
        with.body
            .contains("toolgate operator add YOUR-NAME --public-url http://127.0.0.1:8640"),
        "{}",
        with.body
    );
    // The one script, from the inbox itself; none inline.
    assert_eq!(with.body.matches("<script").count(), 1, "{}", with.body);
    assert!(with.body.contains("<script src=\"/inbox.js\" defer>"));
    let csp = with.headers[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(with.headers["cross-origin-opener-policy"], "same-origin");
    assert_eq!(with.headers["cross-origin-resource-policy"], "same-origin");

    // Not a run id: refused, and nothing of it is markup.
    for bad in ["%3Cscript%3Ealert(1)%3C%2Fscript%3E", "a.b", "x%20y"] {
        let answer = send(&inbox, get(&format!("/runs/{bad}"), Some(&cookie))).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{bad}");
        assert!(!answer.body.contains("<script>alert"), "{}", answer.body);
        assert!(!answer.body.contains(&key));
    }
    // An id that no run has is the same page: the address is no oracle.
    let unknown = send(&inbox, get("/runs/no-such-run", Some(&cookie))).await;
    assert_eq!(unknown.status, StatusCode::OK);
    assert_eq!(
        unknown.body.replace("no-such-run", "X"),
        without.body.replace(run.run_id(), "X")
    );
}

/// The script the pages load keeps the session's address in the origin's
/// storage, follows only an address of a session's shape, and forgets it
/// at sign-out; a signed-in page names its address for it.
#[tokio::test]
async fn the_signed_in_pages_hand_their_address_to_the_inbox_script_only() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let run = paused(&store, json!({"branch": "old"}), RunOptions::default()).await;
    let (cookie, key) = signed_in(&inbox, &store, "bob").await;
    let script = send(&inbox, get("/inbox.js", None)).await;
    assert_eq!(script.status, StatusCode::OK);
    assert_eq!(
        script.headers[header::CONTENT_TYPE],
        "text/javascript; charset=utf-8"
    );
    for part in [
        "localStorage",
        "removeItem",
        "form.sign-out",
        "^\\/s\\/[A-Za-z0-9_-]+$",
    ] {
        assert!(script.body.contains(part), "{part}");
    }
    for path in [
        format!("/s/{key}/"),
        format!("/s/{key}/runs/{}", run.run_id()),
    ] {
        let page = send(&inbox, get(&path, Some(&cookie))).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        assert!(
            page.body.contains(&format!("data-session=\"/s/{key}\"")),
            "{path}: {}",
            page.body
        );
        assert!(page.body.contains("class=\"inline sign-out\""), "{path}");
        assert_eq!(page.body.matches("<script").count(), 1, "{path}");
    }
}

/// A lost session's address is not a dead end: the root page and the page
/// an ended session leads to say how to get back in — a fresh link, the
/// command that prints it — and, with the cookie or without, the same.
#[tokio::test]
async fn the_root_page_says_how_to_get_back_in() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let (cookie, key) = signed_in(&inbox, &store, "bob").await;
    for path in ["/", "/signed-out"] {
        let with = send(&inbox, get(path, Some(&cookie))).await;
        let without = send(&inbox, get(path, None)).await;
        assert_eq!(with.status, StatusCode::OK, "{path}");
        assert_eq!(
            with.body, without.body,
            "{path}: the cookie changes nothing"
        );
        assert!(!with.body.contains(&key), "{path}");
        assert!(
            with.body
                .contains("toolgate operator add YOUR-NAME --public-url http://127.0.0.1:8640"),
            "{path}: {}",
            with.body
        );
    }
    // The way back is the browser's, shown by the script: hidden here.
    let root = send(&inbox, get("/", Some(&cookie))).await;
    assert!(root.body.contains("id=\"back\" hidden"), "{}", root.body);
}

/// The list says how many runs there are and, per row, what each is —
/// server, tools, requester and the way it came, its arguments in one
/// escaped line, its age — and narrows by server, tool, requester, state
/// and a search through a plain `GET` form; decided runs are in the
/// history.
#[tokio::test]
async fn the_list_shows_what_each_run_is_and_narrows_in_the_store() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let long = "x".repeat(300);
    let local = paused(
        &store,
        json!({"branch": "<b>old</b>\u{202e}", "note": long}),
        RunOptions::default(),
    )
    .await;
    let (_, remote) = remote_call(&store, RunOptions::default()).await;
    let decided = paused(&store, json!({"branch": "gone"}), RunOptions::default()).await;
    let (cookie, key) = signed_in(&inbox, &store, "bob").await;
    let answer = decide_as(
        &inbox,
        &format!("/s/{key}/runs/{}/decide", decided.run_id()),
        &cookie,
        &key,
        decided.digest().as_str(),
        "deny",
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let list = |query: &str| {
        let inbox = inbox.clone();
        let path = format!("/s/{key}/{query}");
        let cookie = cookie.clone();
        async move {
            let answer = send(&inbox, get(&path, Some(&cookie))).await;
            assert_eq!(answer.status, StatusCode::OK, "{path}: {}", answer.body);
            answer.body
        }
    };
    let rows = |body: &str| body.matches(&format!("href=\"/s/{key}/runs/")).count();

    let all = list("").await;
    assert!(all.contains("3 runs waiting"), "{all}");
    assert_eq!(rows(&all), 3);
    // A short id that links to the run; the whole id in its title.
    let short = &local.run_id()[..8];
    assert!(
        all.contains(&format!(
            "href=\"/s/{key}/runs/{id}\" title=\"{id}\"><code>{short}…</code>",
            id = local.run_id()
        )),
        "{all}"
    );
    // Server, tool, requester and channel.
    assert!(all.contains(">notes</bdi></a>"), "{all}");
    assert!(all.contains(">write_note</bdi></a>"), "{all}");
    assert!(all.contains(">delete_branch</bdi></a>"), "{all}");
    assert!(all.contains("<span class=\"local\">local</span>"), "{all}");
    assert!(all.contains("agent host <bdi>demo</bdi>"), "{all}");
    assert!(all.contains("gateway <bdi>gateway</bdi>"), "{all}");
    assert!(all.contains("just now"), "{all}");
    // The arguments in one line: escaped once, hidden characters shown,
    // cut short.
    assert!(
        all.contains("branch: &quot;&lt;b&gt;old&lt;/b&gt;\\u{202e}&quot;, note: &quot;xxx"),
        "{all}"
    );
    assert!(!all.contains("<b>old") && !all.contains('\u{202e}'));
    assert!(!all.contains(&long), "the summary is cut");
    // The filters: a plain GET form, kept in the links a row makes.
    assert!(all.contains(&format!(
        "<form class=\"filters\" method=\"get\" action=\"/s/{key}/\">"
    )));
    assert!(
        all.contains(&format!("href=\"/s/{key}/?server=notes\"")),
        "{all}"
    );

    let notes = list("?server=notes").await;
    assert_eq!(rows(&notes), 1);
    assert!(
        notes.contains(remote.run_id()) && notes.contains("1 run waiting, matching the filter")
    );
    assert!(
        notes.contains("value=\"notes\""),
        "the form keeps the filter"
    );
    let tool = list("?tool=delete_branch").await;
    assert_eq!(rows(&tool), 2);
    assert!(!tool.contains(remote.run_id()));
    let mut by = list("?requester=alice&state=approval").await;
    assert_eq!(rows(&by), 2, "{by}");
    assert!(by.contains("<option value=\"approval\" selected>"), "{by}");
    by = list("?requester=nobody").await;
    assert_eq!(rows(&by), 0);
    assert!(by.contains("No run matches."), "{by}");
    let search = list(&format!("?q={}", &remote.run_id()[..6])).await;
    assert_eq!(rows(&search), 1, "{search}");
    assert!(search.contains(remote.run_id()));
    // Hostile filter text is shown as text.
    let hostile = list("?q=%3Cscript%3E&tool=%22%3E%3Cimg").await;
    assert!(
        !hostile.contains("<script>") && !hostile.contains("\"><img"),
        "{hostile}"
    );
    assert!(hostile.contains("value=\"&lt;script&gt;\""), "{hostile}");

    // The history: the decided run, who decided it.
    let history = list("?view=history").await;
    assert_eq!(rows(&history), 1, "{history}");
    assert!(history.contains(decided.run_id()));
    assert!(history.contains("1 run decided"), "{history}");
    assert!(history.contains("decided by <bdi>bob</bdi>"), "{history}");
    assert!(history.contains("<input type=\"hidden\" name=\"view\" value=\"history\">"));
}

/// The list is a page at a time; the next page's link keeps the filter.
#[tokio::test]
async fn the_list_pages_keep_their_filter() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    for _ in 0..=toolgate_inbox::PAGE {
        paused(&store, json!({"branch": "old"}), RunOptions::default()).await;
    }
    let (cookie, key) = signed_in(&inbox, &store, "bob").await;
    let first = send(
        &inbox,
        get(&format!("/s/{key}/?tool=delete_branch"), Some(&cookie)),
    )
    .await;
    let rows = |body: &str| body.matches(&format!("href=\"/s/{key}/runs/")).count();
    assert_eq!(rows(&first.body), toolgate_inbox::PAGE as usize);
    assert!(first.body.contains("51 runs waiting, matching the filter"));
    let next = first
        .body
        .split(&format!("href=\"/s/{key}/?tool=delete_branch&amp;before="))
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("a link to the next page: {}", first.body));
    let second = send(
        &inbox,
        get(
            &format!("/s/{key}/?tool=delete_branch&before={next}"),
            Some(&cookie),
        ),
    )
    .await;
    assert_eq!(rows(&second.body), 1, "{}", second.body);
    assert!(!second.body.contains("Older runs"));
}

/// A run decided elsewhere while its page was open is news, not an alarm:
/// who decided, through which channel, where it stands now, under the
/// page's header; a refusal keeps the header too — who is signed in, the
/// way back.
#[tokio::test]
async fn a_run_decided_elsewhere_is_news_and_refusals_keep_the_header() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let run = paused(&store, json!({"branch": "old"}), RunOptions::default()).await;
    let (cookie, key) = signed_in(&inbox, &store, "bob").await;
    let path = format!("/s/{key}/runs/{}/decide", run.run_id());

    // A form that does not read: refused, under the header.
    let bad = send(
        &inbox,
        post(
            &path,
            Some(&cookie),
            Some(ORIGIN),
            &[
                ("csrf", &key),
                ("digest", run.digest().as_str()),
                ("verdict", "maybe"),
            ],
        ),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    for part in [
        "<h1>Refused</h1>",
        "signed in as <bdi>bob</bdi>",
        &format!("href=\"/s/{key}/\">Back to the waiting runs"),
    ] {
        assert!(bad.body.contains(part), "{part}: {}", bad.body);
    }

    // Carol denies it from the console while bob's page is open.
    let carol =
        toolgate::identity::Operator::new("carol", toolgate::identity::IdentitySource::Flag)
            .unwrap()
            .via(toolgate::identity::Channel::Console);
    store
        .decide(
            run.run_id(),
            Some(&run.digest()),
            &carol,
            toolgate_store::Answer::Deny,
        )
        .await
        .unwrap();
    let late = decide_as(
        &inbox,
        &path,
        &cookie,
        &key,
        run.digest().as_str(),
        "approve",
    )
    .await;
    assert_eq!(late.status, StatusCode::CONFLICT);
    for part in [
        "<h1>Decided elsewhere</h1>",
        "denied by carol through console",
        "Nothing was recorded from your form.",
        "signed in as <bdi>bob</bdi>",
        &format!(
            "href=\"/s/{key}/runs/{}\">See the run as it is now",
            run.run_id()
        ),
    ] {
        assert!(late.body.contains(part), "{part}: {}", late.body);
    }
    assert!(!late.body.contains("Refused") && !late.body.contains("class=\"refusal\""));
    assert_eq!(
        store
            .run_history(run.run_id())
            .await
            .unwrap()
            .decisions
            .len(),
        1
    );
}

/// Under four eyes the requester is offered no approval — the store would
/// refuse it — only a denial, and told who approves; another operator is
/// offered every form.
#[tokio::test]
async fn the_requester_is_offered_no_approval_under_four_eyes() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let options = RunOptions {
        four_eyes: true,
        ..RunOptions::default()
    };
    let run = paused(&store, json!({"branch": "old"}), options).await;
    let page = |name: &'static str| {
        let (inbox, store) = (inbox.clone(), store.clone());
        let run = run.run_id().to_owned();
        async move {
            let (cookie, key) = signed_in(&inbox, &store, name).await;
            let page = send(&inbox, get(&format!("/s/{key}/runs/{run}"), Some(&cookie))).await;
            assert_eq!(page.status, StatusCode::OK);
            (cookie, key, page.body)
        }
    };
    let (cookie, key, own) = page("Alice").await;
    assert!(
        own.contains("requires four eyes: another operator approves it"),
        "{own}"
    );
    assert!(own.contains("Deny every call"), "{own}");
    for offered in [
        "Approve every call",
        "value=\"approve\"",
        "value=\"edit\"",
        "value=\"calls\"",
    ] {
        assert!(!own.contains(offered), "{offered} offered to the requester");
    }
    let (_, _, other) = page("bob").await;
    assert!(other.contains("Approve every call") && !other.contains("requires four eyes"));
    // The denial offered is taken.
    let denied = decide_as(
        &inbox,
        &format!("/s/{key}/runs/{}/decide", run.run_id()),
        &cookie,
        &key,
        run.digest().as_str(),
        "deny",
    )
    .await;
    assert_eq!(denied.status, StatusCode::SEE_OTHER, "{}", denied.body);
}

/// A turn whose time to be approved ran out offers no approval — the
/// store would refuse it — but a denial, and says how to ask for it again.
#[tokio::test]
async fn an_expired_turn_offers_a_denial_and_the_way_to_ask_again() {
    let db = TestDb::new().await;
    let (store, inbox) = inbox(&db).await;
    let options = RunOptions {
        decision_ttl_ms: Some(1),
        ..RunOptions::default()
    };
    let run = paused(&store, json!({"branch": "old"}), options).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (cookie, csrf) = signed_in(&inbox, &store, "bob").await;
    let page = send(
        &inbox,
        get(&format!("/s/{csrf}/runs/{}", run.run_id()), Some(&cookie)),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("ran out"), "{}", page.body);
    assert!(
        page.body
            .contains(&format!("toolgate runs ask-again {}", run.run_id())),
        "{}",
        page.body
    );
    assert!(!page.body.contains("Approve every call"), "{}", page.body);
    assert!(
        !page.body.contains("Record these verdicts"),
        "{}",
        page.body
    );
    assert!(page.body.contains("Deny every call"), "{}", page.body);
}
