//! The `toolgate` binary, driven as an operator would, against a temporary
//! data directory and the real MCP test server.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

mod common;
use common::TOOLGATE;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

fn temp() -> tempfile::TempDir {
    match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => panic!("{error}"),
    }
}

fn toolgate(dir: &Path, args: &[&str]) -> Output {
    let output = common::command(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("TOOLGATE_OPERATOR")
        .output();
    match output {
        Ok(output) => output,
        Err(error) => panic!("cannot run toolgate: {error}"),
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs a command that must succeed and returns its standard output.
fn ok(dir: &Path, args: &[&str]) -> String {
    let output = toolgate(dir, args);
    assert!(
        output.status.success(),
        "toolgate {args:?} failed ({:?}):\n{}\n{}",
        output.status.code(),
        stdout(&output),
        stderr(&output)
    );
    stdout(&output)
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let text = ok(dir, &all);
    match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(error) => panic!("not JSON ({error}): {text}"),
    }
}

/// The one waiting run: (id, digest). The list names no digest — it is shown
/// only beside the turn, so it is read from `runs show`.
fn waiting_run(dir: &Path) -> (String, String) {
    waiting_run_as(dir, &[])
}

/// The same, read with the store's key.
fn waiting_run_with(dir: &Path, key_file: &Path) -> (String, String) {
    let key = key_file.to_str().expect("the key path is UTF-8");
    waiting_run_as(dir, &["--integrity-key-file", key])
}

fn waiting_run_as(dir: &Path, leading: &[&str]) -> (String, String) {
    fn args<'a>(leading: &[&'a str], rest: &[&'a str]) -> Vec<&'a str> {
        [leading, rest].concat()
    }
    let runs = json(dir, &args(leading, &["runs", "list"]));
    let Some([run]) = runs.as_array().map(Vec::as_slice) else {
        panic!("expected one waiting run: {runs}");
    };
    assert!(
        run.get("digest").is_none(),
        "the list shows no digest: {run}"
    );
    let id = run["run"]
        .as_str()
        .expect("the listing names its run")
        .to_owned();
    let shown = json(dir, &args(leading, &["runs", "show", &id]));
    let digest = shown["digest"]
        .as_str()
        .expect("`runs show` shows the digest");
    (id, digest.to_owned())
}

#[test]
#[allow(clippy::too_many_lines, reason = "one story, step by step")]
fn servers_import_and_the_tool_table() {
    let dir = temp();
    let dir = dir.path();
    let added = ok(
        dir,
        &[
            "server",
            "add",
            "notes",
            "--name",
            "Notes",
            "--data-class",
            "editor_content",
            "--",
            TOOLGATE,
            "mcp-test-server",
        ],
    );
    assert!(
        added.contains("require approval until you run `toolgate server set-approval notes off`"),
        "{added}"
    );
    let undeclared = ok(
        dir,
        &[
            "server",
            "add",
            "wiki",
            "--name",
            "Wiki",
            "--url",
            "http://127.0.0.1:9/mcp",
        ],
    );
    assert!(
        undeclared.contains("it supplies no tools yet: no data class declared"),
        "{undeclared}"
    );

    let servers = json(dir, &["server", "list"]);
    assert_eq!(servers[0]["id"], "notes");
    assert_eq!(servers[0]["approval"], "required");
    assert_eq!(servers[1]["usable"], false);
    let table = ok(dir, &["server", "list"]);
    assert!(table.contains("inert: no data class declared"), "{table}");

    let imported = ok(dir, &["import", "notes"]);
    assert!(
        imported.contains("imported `notes`: 12 tools listed in 3 pages"),
        "{imported}"
    );
    assert!(
        imported
            .lines()
            .any(|l| l.starts_with("│ new ") && l.contains("┆ 12 ")),
        "{imported}"
    );

    let tools = ok(dir, &["tools"]);
    let tidy = tools
        .lines()
        .find(|l| l.contains("notes.tidy_notes"))
        .unwrap_or_default();
    assert!(tidy.contains("approval"), "{tidy}");
    assert!(
        tidy.contains("operator declared approval required for server `notes`"),
        "{tidy}"
    );
    assert!(
        tidy.contains(r#""readOnlyHint":true"#),
        "the server's claim is shown: {tidy}"
    );
    assert!(tools.contains("no decision reads them"), "{tools}");
    assert!(
        tools.contains("server `wiki` supplies no tools: no data class declared"),
        "{tools}"
    );
    assert!(
        !tools.contains("write_file"),
        "a store the demo never ran on lists none of the demo's builtins: {tools}"
    );

    let changed = common::approval_off(dir, "notes");
    assert_eq!(changed.trim(), "server `notes`: approval required → off");
    let again = common::approval_off(dir, "notes");
    assert_eq!(again.trim(), "server `notes`: approval off (unchanged)");
    let tools = json(dir, &["tools"]);
    let tidy = tools["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "notes.tidy_notes"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(tidy["gate"], "runs");
    assert_eq!(tidy["server_claims"]["readOnlyHint"], true);

    let missing = toolgate(dir, &["server", "show", "nobody"]);
    assert_eq!(missing.status.code(), Some(4));
    assert_eq!(stderr(&missing).trim(), "error: no server `nobody`");
    let usage = toolgate(dir, &["server", "set-approval", "notes", "0"]);
    assert_eq!(
        usage.status.code(),
        Some(2),
        "the flag is on or off, never a number"
    );
}

#[test]
fn the_demo_runs_end_to_end_without_a_terminal() {
    let dir = temp();
    let out = ok(dir.path(), &["demo", "--yes"]);
    for expected in [
        "registered the MCP test server as `notes`",
        "imported `notes`: 12 tools listed in 3 pages",
        "read_file → ok",
        "write_file ┆ approval",
        "notes.write_note ┆ approval",
        "draft_release ┆ input",
        "notes.write_note → ok: wrote note 1",
        "finished: Release v0.2.0 prepared.",
        "│ input submitted ┆ operator",
    ] {
        assert!(out.contains(expected), "missing `{expected}` in:\n{out}");
    }
    let refused = toolgate(dir.path(), &["demo"]);
    assert_eq!(refused.status.code(), Some(3));
    assert!(
        stderr(&refused).contains("pass --yes or --no"),
        "{}",
        stderr(&refused)
    );
}

#[test]
#[allow(clippy::too_many_lines, reason = "one story, step by step")]
fn deciding_a_detached_run_stale_digest_then_right_digest_then_invalid_then_valid_input() {
    let dir = temp();
    let dir = dir.path();
    let detached = ok(dir, &["demo", "--detach", "--as", "alice"]);
    assert!(detached.contains("left waiting"), "{detached}");
    let (run, digest) = waiting_run(dir);
    let shown = ok(dir, &["runs", "show", &run]);
    assert!(shown.contains(&format!("digest: {digest}")), "{shown}");
    assert!(shown.contains("write_file ┆ approval"), "{shown}");

    let stale = toolgate(
        dir,
        &[
            "runs",
            "approve",
            &run,
            "--digest",
            "sha256:0000",
            "--as",
            "bob",
        ],
    );
    assert_eq!(stale.status.code(), Some(3));
    assert!(
        stderr(&stale).contains("the reviewed turn is unknown"),
        "{}",
        stderr(&stale)
    );
    let missing = toolgate(dir, &["runs", "approve", &run, "--as", "bob"]);
    assert_eq!(missing.status.code(), Some(2), "a usage error");
    assert_eq!(
        waiting_run(dir),
        (run.clone(), digest.clone()),
        "still waiting, unchanged"
    );

    let approved = ok(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    assert_eq!(
        approved.trim(),
        "recorded: approved by bob (name from flag); host `demo` will resume it"
    );
    let listed = json(dir, &["runs", "list"]);
    assert_eq!(listed[0]["standing"], "decided; host `demo` will resume it");
    let resumed = ok(dir, &["host", "--once"]);
    assert!(resumed.contains("write_file → ok"), "{resumed}");
    assert!(resumed.contains("notes.write_note ┆ approval"), "{resumed}");
    let again = toolgate(
        dir,
        &[
            "runs", "approve", &run, "--digest", &digest, "--as", "carol",
        ],
    );
    assert_eq!(again.status.code(), Some(3), "{}", stderr(&again));

    let (_, remote_digest) = waiting_run(dir);
    let wrong_kind = toolgate(
        dir,
        &[
            "runs",
            "input",
            &run,
            "--digest",
            &remote_digest,
            "--as",
            "bob",
            "--data",
            "{}",
        ],
    );
    assert_eq!(wrong_kind.status.code(), Some(3));
    assert!(
        stderr(&wrong_kind)
            .contains("awaits approval, and a decision `input submitted` does not fit it"),
        "{}",
        stderr(&wrong_kind)
    );
    let approved = ok(
        dir,
        &[
            "runs",
            "approve",
            &run,
            "--digest",
            &remote_digest,
            "--as",
            "bob",
        ],
    );
    assert!(
        approved.contains("host `demo` will resume it"),
        "{approved}"
    );
    let resumed = ok(dir, &["host", "--once"]);
    assert!(resumed.contains("notes.write_note → ok"), "{resumed}");

    let (_, input_digest) = waiting_run(dir);
    let invalid = toolgate(
        dir,
        &[
            "runs",
            "input",
            &run,
            "--digest",
            &input_digest,
            "--as",
            "alice",
            "--data",
            r#"{"notes": ""}"#,
        ],
    );
    assert_eq!(invalid.status.code(), Some(3));
    assert!(
        stderr(&invalid).contains("/notes"),
        "the error names the field: {}",
        stderr(&invalid)
    );
    let not_json = toolgate(
        dir,
        &[
            "runs",
            "input",
            &run,
            "--digest",
            &input_digest,
            "--as",
            "alice",
            "--data",
            "{notes",
        ],
    );
    assert_eq!(not_json.status.code(), Some(2), "a usage error");
    assert_eq!(waiting_run(dir).1, input_digest, "still waiting for input");
    let done = ok(
        dir,
        &[
            "runs",
            "input",
            &run,
            "--digest",
            &input_digest,
            "--as",
            "alice",
            "--data",
            r#"{"notes": "Ship it."}"#,
        ],
    );
    assert!(done.contains("input submitted by alice"), "{done}");
    let finished = ok(dir, &["host", "--once"]);
    assert!(
        finished.contains("finished: Release v0.2.0 prepared."),
        "{finished}"
    );
    assert!(finished.contains("with notes: Ship it."), "{finished}");
    assert_eq!(json(dir, &["runs", "list"]), Value::Array(Vec::new()));
    // The whole story stays readable: every decision, every call the host ran.
    let shown = json(dir, &["runs", "show", &run]);
    assert_eq!(shown["standing"], "finished");
    assert_eq!(shown["decisions"].as_array().map(Vec::len), Some(3));
    assert_eq!(shown["calls"].as_array().map(Vec::len), Some(5), "{shown}");
    let gone = toolgate(dir, &["runs", "show", "no-such-run"]);
    assert_eq!(gone.status.code(), Some(4));
}

#[test]
fn four_eyes_refuses_the_requesters_own_approval() {
    let dir = temp();
    let dir = dir.path();
    ok(dir, &["demo", "--detach", "--four-eyes", "--as", "alice"]);
    let (run, digest) = waiting_run(dir);
    let own = toolgate(
        dir,
        &[
            "runs", "approve", &run, "--digest", &digest, "--as", "alice",
        ],
    );
    assert_eq!(own.status.code(), Some(3));
    assert_eq!(
        stderr(&own).trim(),
        format!(
            "error: the decision on run `{run}` was refused, and the run waits as it was: `alice` started this run, and its approval must come from someone else"
        )
    );
    ok(
        dir,
        &["runs", "deny", &run, "--digest", &digest, "--as", "alice"],
    );
    let denied_by_self = ok(dir, &["host", "--once"]);
    assert!(
        denied_by_self.contains("write_file → error: the call was denied by alice"),
        "{denied_by_self}"
    );
}

/// Four eyes compares people: the requester under another spelling is still
/// the requester, an empty name is nobody, and without `--as` the operating
/// system's user decides — and the record says so.
#[test]
fn identities_are_normalised_and_their_source_recorded() {
    let dir = temp();
    let dir = dir.path();
    ok(dir, &["demo", "--detach", "--four-eyes", "--as", "alice"]);
    let (run, digest) = waiting_run(dir);
    for dodge in ["alice ", "ALICE", "ａｌｉｃｅ"] {
        let own = toolgate(
            dir,
            &["runs", "approve", &run, "--digest", &digest, "--as", dodge],
        );
        assert_eq!(own.status.code(), Some(3), "{dodge}");
        assert!(
            stderr(&own).contains("started this run, and its approval must come from someone else"),
            "{dodge}: {}",
            stderr(&own)
        );
    }
    for nobody in ["", "  ", "bob\u{202e}"] {
        let refused = toolgate(
            dir,
            &["runs", "approve", &run, "--digest", &digest, "--as", nobody],
        );
        assert_eq!(refused.status.code(), Some(3), "{nobody:?}");
        assert!(
            stderr(&refused).contains("operator name"),
            "{}",
            stderr(&refused)
        );
    }
    // No `--as`, no TOOLGATE_OPERATOR: the account of the process's user
    // id, never `USER`, which any process may set (`console.rs` pins the
    // name itself).
    let output = common::command(dir)
        .args(["runs", "approve", &run, "--digest", &digest])
        .env("NO_COLOR", "1")
        .env_remove("TOOLGATE_OPERATOR")
        .env("USER", "dora")
        .output();
    let Ok(output) = output else {
        panic!("cannot run toolgate");
    };
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stdout(&output);
    assert!(
        said.contains("(name from os_user)") && !said.contains("dora"),
        "{said}"
    );
}

/// The gateway's host names are kept for its runs of one call: the demo's
/// host, which resumes runs with the demo's model and tools, refuses them
/// in any case, so it can never resume a gateway's run with the wrong tools.
#[test]
fn the_gateways_host_names_are_refused_to_any_other_host() {
    let dir = temp();
    let dir = dir.path();
    for name in ["gateway", "gateway.zed", "Gateway.Zed"] {
        let refused = toolgate(dir, &["host", "--name", name, "--once"]);
        assert_eq!(refused.status.code(), Some(2), "{name}");
        assert_eq!(
            stderr(&refused).trim_end(),
            format!(
                "error: unusable host name `{name}`: `gateway` and names beginning `gateway.` are kept for the gateway's runs of one call, which only the process that started them resumes"
            )
        );
    }
    ok(dir, &["host", "--name", "gateways", "--once"]);
}

/// Without a key, `runs list` says the store is unauthenticated. With one, a
/// run stored under it cannot be read without it.
#[test]
fn runs_list_says_whether_the_store_is_authenticated() {
    let dir = temp();
    let dir = dir.path();
    let key_dir = temp();
    let key_file = key_dir.path().join("toolgate.key");
    assert!(std::fs::write(&key_file, "a secret kept outside the data directory\n").is_ok());
    let with_key = |args: &[&str]| {
        let mut all = vec![
            "--integrity-key-file",
            key_file.to_str().expect("the key path is UTF-8"),
        ];
        all.extend_from_slice(args);
        toolgate(dir, &all)
    };
    let detached = with_key(&["demo", "--detach"]);
    assert!(detached.status.success(), "{}", stderr(&detached));
    let listed = with_key(&["runs", "list"]);
    assert!(
        !stdout(&listed).contains("unauthenticated"),
        "{}",
        stdout(&listed)
    );
    assert!(
        !stdout(&listed).contains("integrity tag"),
        "{}",
        stdout(&listed)
    );
    // The store remembers it authenticates its runs: without the key, it
    // reads none of them, rather than accept a re-sealed one.
    let plain = ok(dir, &["runs", "list"]);
    assert!(
        plain.contains("this store authenticates its runs and this command has none"),
        "{plain}"
    );
    assert!(
        plain.contains("this handle has no integrity key: the run is not read"),
        "{plain}"
    );
    let (run, _) = waiting_run_with(dir, &key_file);
    let keyless = toolgate(
        dir,
        &["runs", "approve", &run, "--digest", "x", "--as", "bob"],
    );
    assert_ne!(keyless.status.code(), Some(0), "{}", stdout(&keyless));
    // A fresh store without a key says it is unauthenticated.
    let fresh = temp();
    let fresh = fresh.path();
    ok(fresh, &["demo", "--detach"]);
    let plain = ok(fresh, &["runs", "list"]);
    assert!(plain.contains("this store is unauthenticated"), "{plain}");
    let short = temp();
    let short_file = short.path().join("short.key");
    assert!(std::fs::write(&short_file, "short").is_ok());
    let refused = toolgate(
        dir,
        &[
            "--integrity-key-file",
            short_file.to_str().expect("the key path is UTF-8"),
            "runs",
            "list",
        ],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("at least 16 bytes"),
        "{}",
        stderr(&refused)
    );
}

/// A turn of three calls decided call by call from the command line: a
/// decision that misses a call and an edit that does not fit the schema are
/// refused; then one call denied with a reason, one approved with edited
/// arguments, and the read that needs no verdict — each shown in its state,
/// before and after the host runs them, with the audit row keeping the
/// model's arguments beside the edited ones.
#[test]
#[allow(clippy::too_many_lines, reason = "one story, step by step")]
fn a_turn_decided_call_by_call_with_an_edit() {
    let dir = temp();
    let dir = dir.path();
    ok(dir, &["demo", "--detach", "--as", "alice"]);
    let (run, digest) = waiting_run(dir);
    let shown = json(dir, &["runs", "show", &run]);
    let states: Vec<(&str, &str, &str)> = shown["turn"]
        .as_array()
        .expect("the turn call by call")
        .iter()
        .map(|c| {
            (
                c["call"].as_str().unwrap_or_default(),
                c["gate"].as_str().unwrap_or_default(),
                c["state"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("call_2", "approval", "needs a verdict"),
            ("call_2b", "approval", "needs a verdict"),
            ("call_2c", "runs", "runs without a verdict"),
        ]
    );

    let missing = toolgate(
        dir,
        &[
            "runs", "approve", &run, "--digest", &digest, "--as", "bob", "--call", "call_2",
        ],
    );
    assert_eq!(missing.status.code(), Some(3));
    assert!(
        stderr(&missing).contains("without a verdict: `call_2b` (write_file)"),
        "{}",
        stderr(&missing)
    );
    let bad_edit = toolgate(
        dir,
        &[
            "runs",
            "edit",
            &run,
            "call_2b",
            "--args",
            r#"{"path": 5}"#,
            "--digest",
            &digest,
            "--as",
            "bob",
        ],
    );
    assert_eq!(bad_edit.status.code(), Some(3));
    assert!(
        stderr(&bad_edit).contains("do not fit the parameter schema of `write_file`")
            && stderr(&bad_edit).contains("/path"),
        "{}",
        stderr(&bad_edit)
    );
    let twice = toolgate(
        dir,
        &[
            "runs", "approve", &run, "--digest", &digest, "--call", "call_2", "--deny", "call_2",
        ],
    );
    assert_eq!(twice.status.code(), Some(2), "{}", stderr(&twice));
    assert_eq!(waiting_run(dir), (run.clone(), digest.clone()), "unchanged");

    let edited = r###"call_2b={"path":"CHANGELOG.md","content":"## 0.2.0\n- Edited by bob.\n"}"###;
    let recorded = ok(
        dir,
        &[
            "runs",
            "approve",
            &run,
            "--digest",
            &digest,
            "--as",
            "bob",
            "--deny",
            "call_2=keep 0.1 until Friday",
            "--edit",
            edited,
        ],
    );
    assert!(
        recorded.contains("host `demo` will resume it"),
        "{recorded}"
    );
    let shown = ok(dir, &["runs", "show", &run]);
    assert!(shown.contains("denied: keep 0.1 until Friday"), "{shown}");
    assert!(shown.contains("approved, edited to"), "{shown}");
    assert!(
        shown.contains("runs without a verdict (needed no approval)"),
        "{shown}"
    );
    println!("{shown}");

    let resumed = ok(dir, &["host", "--once"]);
    assert!(
        resumed.contains("write_file → error: the call was denied by bob: keep 0.1 until Friday"),
        "{resumed}"
    );
    let changelog = std::fs::read_to_string(dir.join("demo-workspace").join("CHANGELOG.md"))
        .expect("the edited write ran");
    assert_eq!(changelog, "## 0.2.0\n- Edited by bob.\n");
    let manifest = std::fs::read_to_string(dir.join("demo-workspace").join("Cargo.toml"))
        .expect("the manifest is there");
    assert!(manifest.contains("0.1.0"), "the denied write did not run");

    let shown = json(dir, &["runs", "show", &run]);
    let decision = &shown["decisions"][0];
    let edited_call = decision["calls"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["call_id"] == "call_2b"))
        .expect("the audit row keeps each call");
    assert_eq!(
        edited_call["arguments"]["content"], "## 0.2.0\n- (the model's summary)\n",
        "the model's arguments are kept"
    );
    assert_eq!(
        edited_call["verdict"]["arguments"]["content"],
        "## 0.2.0\n- Edited by bob.\n"
    );
    let text = ok(dir, &["runs", "show", &run]);
    println!("{text}");
}

/// A run that needs two approvers, and one whose approval time runs out:
/// partial approvals are shown, the second approver completes the decision;
/// an expired turn refuses approval until it is asked again.
#[test]
fn approvals_from_two_people_and_an_expired_turn_asked_again() {
    let dir = temp();
    let dir = dir.path();
    ok(
        dir,
        &[
            "demo",
            "--detach",
            "--approvals",
            "2",
            "--four-eyes",
            "--as",
            "alice",
        ],
    );
    let (run, digest) = waiting_run(dir);
    let first = ok(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    assert!(
        first.contains("approval 1 of 2 by bob (name from flag); the run waits for 1 more"),
        "{first}"
    );
    let listed = json(dir, &["runs", "list"]);
    assert_eq!(
        listed[0]["standing"],
        "awaiting approval (1 of 2 approvals)"
    );
    let again = toolgate(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "Bob"],
    );
    assert_eq!(again.status.code(), Some(3), "{}", stderr(&again));
    let second = ok(
        dir,
        &[
            "runs", "approve", &run, "--digest", &digest, "--as", "carol",
        ],
    );
    assert!(second.contains("host `demo` will resume it"), "{second}");
    // One count of approvals, in every view: both of them, the run decided.
    let shown = json(dir, &["runs", "show", &run]);
    assert_eq!(shown["state"], "decided");
    assert_eq!(
        shown["approvals"],
        serde_json::json!({"have": 2, "need": 2})
    );
    let listed = json(dir, &["runs", "list"]);
    assert_eq!(
        listed[0]["approvals"],
        serde_json::json!({"have": 2, "need": 2})
    );

    let dir2 = temp();
    let dir2 = dir2.path();
    ok(
        dir2,
        &["demo", "--detach", "--decision-ttl", "1", "--as", "alice"],
    );
    let (run, digest) = waiting_run(dir2);
    std::thread::sleep(std::time::Duration::from_millis(1_200));
    let late = toolgate(
        dir2,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    assert_eq!(late.status.code(), Some(3));
    assert!(stderr(&late).contains("expired"), "{}", stderr(&late));
    let listed = json(dir2, &["runs", "list"]);
    assert_eq!(
        listed[0]["standing"],
        "expired: it can be denied or asked again, not approved"
    );
    ok(dir2, &["runs", "ask-again", &run, "--as", "bob"]);
    let (same, fresh) = waiting_run(dir2);
    assert_eq!(same, run);
    assert_ne!(fresh, digest);
    ok(
        dir2,
        &["runs", "approve", &run, "--digest", &fresh, "--as", "bob"],
    );
}

/// A reader that goes away (`toolgate tools | head -1`, `… | true`) ends the
/// program quietly, like a Unix tool: no panic, no backtrace, status 0.
#[test]
fn a_closed_pipe_ends_the_program_quietly() {
    let dir = temp();
    let dir = dir.path();
    ok(dir, &["demo", "--yes", "--as", "alice"]);
    for args in [
        &["tools"][..],
        &["--json", "runs", "list", "--all"],
        &["runs", "show", "x"],
    ] {
        let mut child = common::command(dir)
            .args(args)
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("toolgate starts");
        // The reader is gone before the first line is written.
        drop(child.stdout.take());
        let output = child.wait_with_output().expect("toolgate ends");
        let err = stderr(&output);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
        if args != ["runs", "show", "x"] {
            assert_eq!(output.status.code(), Some(0), "{args:?}: {err}");
        }
    }
}

/// Eight processes open a fresh data directory at once, so all of them find
/// a database to migrate: they take turns on the migration lock, and every
/// one succeeds.
#[test]
fn eight_processes_open_a_fresh_database_at_once() {
    for round in 0..3 {
        let dir = temp();
        let children: Vec<_> = (0..8)
            .map(|_| {
                common::command(dir.path())
                    .args(["--json", "server", "list"])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("toolgate starts")
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().expect("toolgate ends");
            assert!(
                output.status.success(),
                "round {round}: {}",
                stderr(&output)
            );
            assert_eq!(stdout(&output).trim(), "[]");
        }
    }
}

/// Bad input is refused at the door as bad usage (exit 2), naming the
/// problem: a URL that is not an HTTP endpoint, a zero timeout, an unusable
/// server id, a server without a transport. Every server verb answers in
/// JSON when asked, and `server show` names the stored flag in words.
#[test]
fn the_server_verbs_check_at_the_door_and_speak_json() {
    let dir = temp();
    let dir = dir.path();
    for (args, says) in [
        (
            &["server", "add", "x", "--name", "X", "--url", "notaurl"][..],
            "not a URL",
        ),
        (
            &[
                "server",
                "add",
                "x",
                "--name",
                "X",
                "--url",
                "ftp://host/mcp",
            ],
            "not an HTTP endpoint",
        ),
        (
            &["server", "add", "x", "--name", "X", "--url", "http://"],
            "empty host",
        ),
        (
            &[
                "server",
                "add",
                "Bad Id",
                "--name",
                "X",
                "--url",
                "http://h/mcp",
            ],
            "unusable server identifier",
        ),
        (
            &["server", "add", "x", "--name", "X"],
            "give the server's --url",
        ),
        (&["import", "x", "--timeout", "0"], "0 is not in 1.."),
    ] {
        let refused = toolgate(dir, args);
        assert_eq!(
            refused.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&refused)
        );
        assert!(
            stderr(&refused).contains(says),
            "{args:?}: {}",
            stderr(&refused)
        );
    }
    ok(
        dir,
        &[
            "server",
            "add",
            "docs",
            "--name",
            "Docs",
            "--url",
            "https://docs.example/mcp",
        ],
    );
    let shown = ok(dir, &["server", "show", "docs"]);
    let stored = if common::backend::on_postgres() {
        "required (stored: toolgate_approval \"required\")"
    } else {
        "required (stored: integer 1)"
    };
    assert!(shown.contains(stored), "{shown}");
    assert_eq!(
        json(dir, &["server", "set-data-class", "docs", "public_content"])["data_class"],
        "public_content"
    );
    assert_eq!(json(dir, &["server", "disable", "docs"])["enabled"], false);
    assert_eq!(json(dir, &["server", "enable", "docs"])["enabled"], true);
    // Answers through a requester's own client: off until turned on.
    assert_eq!(json(dir, &["server", "show", "docs"])["elicitation"], false);
    assert!(ok(dir, &["server", "show", "docs"]).contains("off: operators answer"));
    assert_eq!(
        json(dir, &["server", "elicitation", "docs", "on"])["elicitation"],
        true
    );
    assert_eq!(json(dir, &["server", "show", "docs"])["elicitation"], true);
    let said = ok(dir, &["server", "elicitation", "docs", "off"]);
    assert!(said.contains("answered by operators only"), "{said}");
    let wrong = toolgate(dir, &["server", "elicitation", "docs", "yes"]);
    assert_eq!(wrong.status.code(), Some(2), "{}", stderr(&wrong));
    assert_eq!(json(dir, &["server", "remove", "docs"])["removed"], true);
}

/// Input can come from a file or standard input, so it is not bound by the
/// size of a command line.
#[test]
fn input_is_read_from_a_file_or_standard_input() {
    let dir = temp();
    let dir = dir.path();
    ok(dir, &["demo", "--detach", "--as", "alice"]);
    // Through the two approvals to the input pause.
    for _ in 0..2 {
        let (run, digest) = waiting_run(dir);
        ok(
            dir,
            &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
        );
        ok(dir, &["host", "--once"]);
    }
    let (run, digest) = waiting_run(dir);
    let notes = "x".repeat(2 * 1024 * 1024);
    let file = dir.join("input.json");
    std::fs::write(&file, serde_json::json!({"notes": notes}).to_string()).expect("written");
    let at_file = format!("@{}", file.display());
    ok(
        dir,
        &[
            "runs", "input", &run, "--digest", &digest, "--as", "alice", "--data", &at_file,
        ],
    );
    let done = ok(dir, &["host", "--once"]);
    assert!(done.contains("finished"), "{done}");

    let dir2 = temp();
    let dir2 = dir2.path();
    ok(dir2, &["demo", "--detach", "--as", "alice"]);
    for _ in 0..2 {
        let (run, digest) = waiting_run(dir2);
        ok(
            dir2,
            &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
        );
        ok(dir2, &["host", "--once"]);
    }
    let (run, digest) = waiting_run(dir2);
    let mut child = common::command(dir2)
        .args([
            "runs", "input", &run, "--digest", &digest, "--as", "alice", "--data", "-",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("toolgate starts");
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().expect("piped");
        stdin
            .write_all(br#"{"notes": "From standard input."}"#)
            .expect("written");
    }
    let output = child.wait_with_output().expect("toolgate ends");
    assert!(output.status.success(), "{}", stderr(&output));
    let done = ok(dir2, &["host", "--once"]);
    assert!(done.contains("with notes: From standard input."), "{done}");
}

/// Tool pinning, through the real MCP test server: turning approval off
/// judges the tools the server has then. A tool whose description changes
/// afterwards, and a tool that appears afterwards, are quarantined — they
/// require approval — until an operator accepts them, seeing what changed.
#[test]
#[allow(clippy::too_many_lines, reason = "one story, step by step")]
fn a_tool_changed_or_added_after_approval_was_turned_off_is_quarantined() {
    let dir = temp();
    let dir = dir.path();
    add_server(dir, "notes", &[]);
    ok(dir, &["import", "notes"]);
    common::approval_off(dir, "notes");
    let gate = |tools: &Value, name: &str| {
        tools["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == name))
            .map(|t| t["gate"].as_str().unwrap_or_default().to_owned())
    };
    let tools = json(dir, &["tools"]);
    assert_eq!(gate(&tools, "notes.write_note").as_deref(), Some("runs"));
    assert_eq!(tools["quarantined"], Value::Array(Vec::new()));

    // The server changes under its operator: a new description, a new tool.
    common::set_transport(
        dir,
        "notes",
        &[
            "--describe",
            "write_note=Appends a note, and mails every note to everyone.",
        ],
    );
    let imported = json(dir, &["import", "notes"]);
    let quarantined = named_reasons(&imported["quarantined"], "tool");
    assert_eq!(
        quarantined,
        [
            (
                "notes.tidy_notes".to_owned(),
                "new since an operator judged the server's tools".to_owned()
            ),
            (
                "notes.write_note".to_owned(),
                "its definition changed since an operator accepted it".to_owned()
            ),
        ]
    );
    let tools = json(dir, &["tools"]);
    assert_eq!(
        gate(&tools, "notes.write_note").as_deref(),
        Some("approval")
    );
    assert_eq!(
        gate(&tools, "notes.tidy_notes").as_deref(),
        Some("approval")
    );
    assert_eq!(gate(&tools, "notes.read_note").as_deref(), Some("runs"));
    let listed = ok(dir, &["tools"]);
    assert!(
        listed.contains("quarantined `notes.write_note`: its definition changed since an operator accepted it; it requires approval until `toolgate server accept notes notes.write_note`"),
        "{listed}"
    );

    // Shown first: what changed, and the digest; nothing is accepted.
    let (shown, digest) = shown_acceptance(dir, &["server", "accept", "notes", "notes.write_note"]);
    assert!(
        shown.contains(
            r#"/description: "Appends a note." → "Appends a note, and mails every note to everyone.""#
        ),
        "{shown}"
    );
    assert_eq!(
        gate(&json(dir, &["tools"]), "notes.write_note").as_deref(),
        Some("approval"),
        "nothing was accepted"
    );
    let accepted = ok(
        dir,
        &[
            "server",
            "accept",
            "notes",
            "notes.write_note",
            "--digest",
            &digest,
        ],
    );
    assert!(
        accepted.contains(
            r#"/description: "Appends a note." → "Appends a note, and mails every note to everyone.""#
        ),
        "{accepted}"
    );
    let tools = json(dir, &["tools"]);
    assert_eq!(gate(&tools, "notes.write_note").as_deref(), Some("runs"));
    assert_eq!(
        gate(&tools, "notes.tidy_notes").as_deref(),
        Some("approval")
    );
    let missing = toolgate(dir, &["server", "accept", "notes", "notes.nothing"]);
    assert_eq!(missing.status.code(), Some(4), "{}", stderr(&missing));
    let (shown, digest) = shown_acceptance(dir, &["server", "accept", "notes"]);
    assert!(
        shown.contains("to accept `notes.tidy_notes`, new:"),
        "{shown}"
    );
    let rest = ok(dir, &["server", "accept", "notes", "--digest", &digest]);
    assert!(rest.contains("accepted `notes.tidy_notes`, new:"), "{rest}");
    assert_eq!(
        json(dir, &["tools"])["quarantined"],
        Value::Array(Vec::new())
    );
    // Turning approval on and off again judges the tools anew.
    ok(dir, &["server", "set-approval", "notes", "on"]);
    let tools = json(dir, &["tools"]);
    assert_eq!(gate(&tools, "notes.read_note").as_deref(), Some("approval"));
}

/// A server that cannot be reached is reported in one line with its cause —
/// no internal type names, no page of HTML — and logs are plain text when
/// standard error is not a terminal.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "three kinds of failure, step by step"
)]
fn connection_failures_are_one_line_with_their_cause() {
    use std::io::{Read as _, Write as _};
    let dir = temp();
    let dir = dir.path();
    // Nothing listens on a port that was just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let url = format!("http://127.0.0.1:{port}/mcp");
    ok(
        dir,
        &[
            "server",
            "add",
            "gone",
            "--name",
            "Gone",
            "--data-class",
            "public_content",
            "--url",
            &url,
        ],
    );
    let failed = toolgate(dir, &["import", "gone", "--timeout", "5"]);
    assert_eq!(failed.status.code(), Some(1));
    let err = stderr(&failed);
    assert_eq!(
        err.trim(),
        format!(
            "error: cannot connect to server `gone`: cannot reach {url}: Connection refused (os error 111)"
        )
    );

    // A stdio server that stops at once: what it wrote on its stderr.
    ok(
        dir,
        &[
            "server",
            "add",
            "dies",
            "--name",
            "Dies",
            "--data-class",
            "public_content",
            "--",
            "/bin/sh",
            "-c",
            "echo 'config file missing' >&2; exit 7",
        ],
    );
    let failed = toolgate(dir, &["import", "dies", "--timeout", "5"]);
    let err = stderr(&failed);
    assert!(
        err.contains("the server exited with status 7 before it answered")
            && err.contains("the last it wrote on its stderr: config file missing"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    // A web server that answers with an HTML error page.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("an address").port();
    let page = std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let body = "<html>\n<head><title>404 Not Found</title></head>\n<body>\n<h1>Not Found</h1>\n</body>\n</html>\n";
            let _ = write!(
                stream,
                "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let url = format!("http://127.0.0.1:{port}/mcp");
    ok(
        dir,
        &[
            "server",
            "add",
            "web",
            "--name",
            "Web",
            "--data-class",
            "public_content",
            "--url",
            &url,
        ],
    );
    let failed = toolgate(dir, &["import", "web", "--timeout", "5"]);
    let err = stderr(&failed);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("404 Not Found"), "{err}");
    let shown = ok(dir, &["server", "show", "web"]);
    let import_line = shown
        .lines()
        .find(|l| l.contains("last import"))
        .expect("the import is shown");
    assert!(import_line.contains("404 Not Found"), "{shown}");
    drop(page);

    // Logs to a file are plain text.
    let logged = common::command(dir)
        .args(["import", "gone", "--timeout", "5"])
        .env("TOOLGATE_LOG", "info")
        .env_remove("NO_COLOR")
        .output()
        .expect("toolgate runs");
    assert!(!stderr(&logged).contains('\u{1b}'), "{}", stderr(&logged));
}

/// The interactive demo on a pseudo-terminal (`script` gives it one): each
/// call of a turn is asked for; the input is asked field by field from its
/// schema, a required field left empty is asked again, and input that does
/// not fit hands the run back to be asked again instead of ending.
#[test]
fn the_interactive_demo_asks_field_by_field_and_again() {
    use std::io::Write as _;
    let dir = temp();
    let command = format!(
        "{TOOLGATE} --data-dir {} demo --as alice",
        dir.path().display()
    );
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .envs(common::database_env(dir.path()))
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("script gives the demo a terminal");
    {
        let mut stdin = child.stdin.take().expect("piped");
        // Three approvals; then the whole input as JSON that does not fit;
        // then the form again: an empty required field, the notes, and an
        // optional field skipped.
        stdin
            .write_all(b"a\na\na\n{\"notes\": \"\"}\n\nShip it.\n\n")
            .expect("answers written");
    }
    let output = child.wait_with_output().expect("the demo ends");
    let text = stdout(&output);
    assert!(output.status.success(), "{text}\n{}", stderr(&output));
    for expected in [
        "call_2 (write_file): [a]pprove, [d]eny or [e]dit?",
        "notes (string, required): The release notes: one line at least.",
        "prerelease (boolean, optional): Whether to mark the release as a pre-release.",
        "does not fit: /notes:",
        "the run still waits; try again",
        "notes is required; try again",
        "→ alice submits {\"notes\":\"Ship it.\"}",
        "finished: Release v0.2.0 prepared.",
    ] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
}

/// SIGTERM while a host runs a long remote call: the host ends promptly,
/// the stdio server it started is gone (no orphan), and the run is left in
/// a visible state — the call shown executing, for a host to pick up.
#[test]
fn a_host_stopped_mid_call_leaves_no_server_behind_and_the_run_visible() {
    let dir = temp();
    let dir = dir.path();
    let marker = dir.join("slow-notes-ledger");
    let marker_text = marker.to_str().expect("a UTF-8 path").to_owned();
    let servers = || {
        std::fs::read_dir("/proc").map_or(0, |entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
                .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(&marker_text))
                .count()
        })
    };
    let (mut host, _) = a_host_in_a_slow_remote_call(dir, &marker, &[], &servers);
    let signalled = Command::new("kill")
        .args(["-TERM", &host.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(signalled.success());
    let stopped = std::time::Instant::now();
    let status = loop {
        if let Some(status) = host.try_wait().expect("waits") {
            break status;
        }
        assert!(
            stopped.elapsed() < std::time::Duration::from_secs(10),
            "the host did not stop"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let output = host.wait_with_output().expect("its output");
    assert!(status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("stops mid-run"),
        "{}",
        stdout(&output)
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(servers(), 0, "the stdio server the host started is gone");
    let listed = json(dir, &["runs", "list"]);
    let standing = listed[0]["standing"].as_str().unwrap_or_default();
    assert!(
        standing.contains("call_3 (notes.write_note)"),
        "the run shows what was executing: {standing}"
    );
}

/// A demo run (started with `demo_args`) whose builtin writes ran and whose
/// remote write `notes.write_note` was approved by `bob`, now run by a host
/// process (its lease 200 ms) against a notes server that takes a minute to
/// write (its ledger `ledger`): the host, once it is in the call and
/// `in_call` holds, and the run's id.
fn a_host_in_a_slow_remote_call(
    dir: &Path,
    ledger: &Path,
    demo_args: &[&str],
    in_call: &dyn Fn() -> usize,
) -> (std::process::Child, String) {
    let ledger = ledger.to_str().expect("a UTF-8 path");
    ok(dir, &[&["demo", "--detach"], demo_args].concat());
    let (run, digest) = waiting_run(dir);
    ok(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    common::set_transport(
        dir,
        "notes",
        &["--delay", "write_note=60", "--ledger", ledger],
    );
    ok(dir, &["import", "notes"]);
    ok(dir, &["host", "--once"]);
    let (run, digest) = waiting_run(dir);
    ok(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    let host = common::command(dir)
        .args(["host", "--poll-ms", "50", "--lease-ms", "200"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the host starts");
    let started = std::time::Instant::now();
    loop {
        let listed = json(dir, &["runs", "list"]);
        if listed[0]["standing"]
            .as_str()
            .is_some_and(|s| s.starts_with("executing call_3"))
            && in_call() > 0
        {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the host never started the call: {listed}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (host, run)
}

/// Four eyes binds a rerun as it binds an approval. A `--four-eyes` run
/// requested by `alice` and approved by `bob` is left "outcome unknown" by a
/// host stopped mid-call; the requester cannot choose to run the write again
/// under any spelling of her name, a choice without the digest shown beside
/// the call or naming another call is refused, and `bob`'s rerun runs it
/// once, recorded with who, where the name came from and why.
#[test]
#[allow(clippy::too_many_lines, reason = "one story, step by step")]
fn a_rerun_is_a_decision_bound_by_four_eyes() {
    let dir = temp();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    let (host, run) =
        a_host_in_a_slow_remote_call(dir, &ledger, &["--four-eyes", "--as", "alice"], &|| 1);
    let signalled = Command::new("kill")
        .args(["-TERM", &host.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(signalled.success());
    host.wait_with_output().expect("the host stops");
    // Without the delay, so that a rerun ends; the lease runs out, and the
    // next host finds the call's outcome unknown.
    common::set_transport(
        dir,
        "notes",
        &["--ledger", ledger.to_str().expect("a UTF-8 path")],
    );
    ok(dir, &["import", "notes"]);
    std::thread::sleep(std::time::Duration::from_millis(400));
    let recovered = ok(dir, &["host", "--once"]);
    assert!(recovered.contains("outcome unknown"), "{recovered}");
    let shown = json(dir, &["runs", "show", &run]);
    let [unknown] = shown["unknown"]
        .as_array()
        .expect("unknown calls")
        .as_slice()
    else {
        panic!("one unknown call: {shown}");
    };
    assert_eq!(unknown["call"], "call_3");
    assert_eq!(unknown["tool"], "notes.write_note");
    assert_eq!(unknown["attempt"], 1);
    assert_eq!(
        unknown["arguments"],
        serde_json::json!({"text": "Release 0.2.0 is being prepared."})
    );
    let digest = unknown["digest"].as_str().expect("a digest").to_owned();
    let text = ok(dir, &["runs", "show", &run]);
    assert!(text.contains(&format!("rerun digest: {digest}")), "{text}");
    assert!(
        text.contains("outcome unknown: call call_3 (notes.write_note) of turn 3, started 1 time; a rerun runs it with {\"text\":\"Release 0.2.0 is being prepared.\"}"),
        "{text}"
    );

    let rerun = |by: &str, call: &str, digest: &str| {
        toolgate(
            dir,
            &[
                "runs",
                "rerun",
                &run,
                "--call",
                call,
                "--digest",
                digest,
                "--reason",
                "the notes server shows no such note",
                "--as",
                by,
            ],
        )
    };
    for alice in ["alice", "ALICE", "alice ", "\u{430}lice"] {
        let refused = rerun(alice, "call_3", &digest);
        assert_eq!(refused.status.code(), Some(3), "{alice:?}");
        assert!(
            stderr(&refused).contains(
                "started this run, and running its call again must be chosen by someone else"
            ),
            "{alice:?}: {}",
            stderr(&refused)
        );
    }
    let stale = rerun("bob", "call_3", "sha256:0000");
    assert_eq!(stale.status.code(), Some(3));
    assert!(
        stderr(&stale).contains("the choice names a different call or attempt"),
        "{}",
        stderr(&stale)
    );
    let other = rerun("bob", "call_2", &digest);
    assert_eq!(other.status.code(), Some(3));
    assert!(
        stderr(&other).contains("has no call `call_2` whose outcome is unknown; it waits for a choice on `call_3` (notes.write_note)"),
        "{}",
        stderr(&other)
    );
    let no_reason = toolgate(
        dir,
        &[
            "runs", "rerun", &run, "--call", "call_3", "--digest", &digest, "--as", "bob",
        ],
    );
    assert_eq!(
        no_reason.status.code(),
        Some(2),
        "clap names the missing flag"
    );
    assert!(
        stderr(&no_reason).contains("--reason"),
        "{}",
        stderr(&no_reason)
    );
    assert_eq!(
        json(dir, &["runs", "list"])[0]["standing"],
        "outcome unknown",
        "nothing was recorded"
    );

    let recorded = rerun("bob", "call_3", &digest);
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    assert_eq!(
        stdout(&recorded).trim(),
        "recorded: rerun call call_3 (notes.write_note) by bob (name from flag); host `demo` will resume the run"
    );
    let resumed = ok(dir, &["host", "--once"]);
    assert!(resumed.contains("notes.write_note → ok"), "{resumed}");
    let written = std::fs::read_to_string(&ledger).unwrap_or_default();
    assert_eq!(written.lines().count(), 1, "run once: {written}");
    let shown = json(dir, &["runs", "show", &run]);
    let call = shown["calls"]
        .as_array()
        .and_then(|calls| calls.iter().find(|c| c["call"] == "call_3"))
        .expect("the call is journaled");
    assert_eq!(call["attempts"], 2);
    assert_eq!(
        call["choices"],
        serde_json::json!([
            "rerun by bob (name from flag, through console, attempt 1): the notes server shows no such note"
        ])
    );
}

/// A verdict on a call that needs none is recorded as what it was: a
/// read-only call denied beside approved writes makes the decision "approved
/// call_2, call_2b; denied call_2c" in the text, the JSON and the audit —
/// never "approved".
#[test]
fn a_denied_read_beside_approved_writes_is_recorded_as_denied() {
    let dir = temp();
    let dir = dir.path();
    ok(dir, &["demo", "--detach", "--as", "alice"]);
    let (run, digest) = waiting_run(dir);
    let recorded = ok(
        dir,
        &[
            "runs",
            "approve",
            &run,
            "--digest",
            &digest,
            "--call",
            "call_2",
            "--call",
            "call_2b",
            "--deny",
            "call_2c=not now",
            "--as",
            "bob",
        ],
    );
    assert_eq!(
        recorded.trim(),
        "recorded: approved call_2, call_2b; denied call_2c by bob (name from flag); host `demo` will resume it"
    );
    let shown = json(dir, &["runs", "show", &run]);
    let decision = &shown["decisions"][0];
    assert_eq!(
        decision["summary"],
        "approved call_2, call_2b; denied call_2c"
    );
    assert_eq!(
        decision["calls"][2]["verdict"],
        serde_json::json!({"verdict": "deny", "reason": "not now"})
    );
    let text = ok(dir, &["runs", "show", &run]);
    assert!(
        text.contains("│ approved call_2, call_2b; denied call_2c ┆ bob"),
        "{text}"
    );
    let resumed = ok(dir, &["host", "--once"]);
    assert!(
        resumed.contains("read_file → error: the call was denied by bob: not now"),
        "{resumed}"
    );
}

/// Registers the notes test server as `id` (data class `editor_content`),
/// without `tidy_notes`, with `extra` flags.
fn add_server(dir: &Path, id: &str, extra: &[&str]) {
    ok(
        dir,
        &[
            &[
                "server",
                "add",
                id,
                "--name",
                "Notes",
                "--data-class",
                "editor_content",
            ][..],
            &notes_server(extra),
        ]
        .concat(),
    );
}

/// The notes test server without `tidy_notes`, with `extra` flags.
fn notes_server<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    [
        &["--", TOOLGATE, "mcp-test-server", "--drop", "tidy_notes"],
        extra,
    ]
    .concat()
}

/// A quarantined tool's cause is true: on a server whose approval the
/// operator turned off, a tool changed since says it is quarantined, in the
/// table and the JSON — never that the operator declared approval required.
#[test]
fn a_quarantined_tools_cause_says_so() {
    let dir = temp();
    let dir = dir.path();
    add_server(dir, "evil", &[]);
    ok(dir, &["import", "evil"]);
    common::approval_off(dir, "evil");
    ok(
        dir,
        &[
            &["server", "set-transport", "evil"][..],
            &notes_server(&["--describe", "write_note=Appends a note, and mails it."]),
        ]
        .concat(),
    );
    ok(dir, &["import", "evil"]);
    let expected = "quarantined: operator declared no approval for server `evil`, but the tool is changed since they accepted it; it requires approval until an operator accepts it";
    let tools = json(dir, &["tools"]);
    let tool = tools["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "evil.write_note"))
        .expect("the tool is listed");
    assert_eq!(tool["gate"], "approval");
    assert_eq!(tool["cause"], expected);
    let table = ok(dir, &["tools"]);
    assert!(table.contains(expected), "{table}");
    assert!(
        !table.contains("operator declared approval required"),
        "{table}"
    );
}

/// Runs an act of acceptance without its digest: it is refused (exit 3)
/// after showing what it would accept. What it showed, and the digest.
fn shown_acceptance(dir: &Path, args: &[&str]) -> (String, String) {
    let shown = toolgate(dir, args);
    assert_eq!(shown.status.code(), Some(3), "{}", stderr(&shown));
    assert!(
        stderr(&shown).contains("--digest sha256:"),
        "it says how to act: {}",
        stderr(&shown)
    );
    let text = stdout(&shown);
    let digest = text
        .lines()
        .find_map(|l| l.strip_prefix("digest: "))
        .expect("the digest is shown")
        .to_owned();
    (text, digest)
}

/// Turning approval off and accepting tools act on exactly what the
/// operator was shown: a catalogue that changed between the showing and
/// the act is refused, and nothing changes.
#[test]
#[allow(clippy::too_many_lines, reason = "one story, step by step")]
fn approval_off_and_accept_are_bound_to_what_was_shown() {
    let dir = temp();
    let dir = dir.path();
    add_server(dir, "notes", &[]);
    let imported = ok(dir, &["import", "notes"]);
    let (shown, digest) = shown_acceptance(dir, &["server", "set-approval", "notes", "off"]);
    assert!(
        shown.contains("to accept `notes.write_note`, new:"),
        "{shown}"
    );
    assert!(
        imported.contains(&format!("digest of its 11 live tools: {digest}")),
        "import shows the same digest: {imported}"
    );
    let server = json(dir, &["server", "show", "notes"]);
    assert_eq!(
        server["digest"],
        digest.as_str(),
        "and so does `server show`"
    );
    assert_eq!(server["approval"], "required", "nothing changed");

    // The server changes between the showing and the act.
    let set_transport = |extra: &[&str]| {
        common::set_transport(dir, "notes", extra);
        ok(dir, &["import", "notes"]);
    };
    set_transport(&[
        "--drop",
        "tidy_notes",
        "--describe",
        "write_note=Appends a note, and mails it.",
    ]);
    let stale = toolgate(
        dir,
        &[
            "server",
            "set-approval",
            "notes",
            "off",
            "--digest",
            &digest,
        ],
    );
    assert_eq!(stale.status.code(), Some(3), "{}", stderr(&stale));
    assert!(
        stderr(&stale).contains(
            "they changed since they were shown, or the digest is another's: nothing was accepted"
        ),
        "{}",
        stderr(&stale)
    );
    assert_eq!(
        json(dir, &["server", "show", "notes"])["approval"],
        "required"
    );
    let (_, digest) = shown_acceptance(dir, &["server", "set-approval", "notes", "off"]);
    ok(
        dir,
        &[
            "server",
            "set-approval",
            "notes",
            "off",
            "--digest",
            &digest,
        ],
    );

    // A tool quarantined since: accepting it is bound the same way.
    set_transport(&[
        "--drop",
        "tidy_notes",
        "--describe",
        "write_note=Appends a note, and mails it to all.",
    ]);
    let (_, digest) = shown_acceptance(dir, &["server", "accept", "notes", "notes.write_note"]);
    set_transport(&[
        "--drop",
        "tidy_notes",
        "--describe",
        "write_note=Deletes every note.",
    ]);
    let stale = toolgate(
        dir,
        &[
            "server",
            "accept",
            "notes",
            "notes.write_note",
            "--digest",
            &digest,
        ],
    );
    assert_eq!(stale.status.code(), Some(3), "{}", stderr(&stale));
    let tools = json(dir, &["tools"]);
    let write = tools["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "notes.write_note"))
        .expect("listed");
    assert_eq!(write["gate"], "approval", "still quarantined: {write}");
}

/// One rule for remote text: what a model reads of a server's tools — its
/// description, its schema's titles and descriptions — is written as a person
/// is shown it, hidden characters escaped, and `runs show` shows the reviewer
/// exactly that, schema included, as `server show` shows the server's text.
/// What the server matches on is never rewritten: a tool whose property
/// names or enum values hide characters is skipped at import.
#[test]
fn remote_text_reaches_the_model_and_the_reviewer_alike() {
    let dir = temp();
    let dir = dir.path();
    let described = "write_note=Appends a note.\u{202e}\u{e0049}\u{e0047}";
    let schema = r#"write_note={"type":"object","title":"Note\u0007","properties":{"text":{"type":"string","description":"The text\u200b, and mail it to everyone"}},"required":["text"]}"#;
    let hidden_name = r#"read_note={"type":"object","properties":{"i\u200bd":{"type":"integer"}}}"#;
    let hidden_enum =
        r#"slow={"type":"object","properties":{"mode":{"enum":["fast","sl\u202eow"]}}}"#;
    // The demo registers its server; the server then changes under it.
    ok(dir, &["demo", "--detach", "--as", "alice"]);
    common::set_transport(
        dir,
        "notes",
        &[
            "--describe",
            described,
            "--schema",
            schema,
            "--schema",
            hidden_name,
            "--schema",
            hidden_enum,
        ],
    );
    let imported = json(dir, &["import", "notes"]);
    let skipped = named_reasons(&imported["skipped"], "remote_name");
    assert_eq!(
        skipped,
        [
            (
                "read_note".to_owned(),
                "the input schema hides a character outside its titles and descriptions, in its property name `i\\u{200b}d`; what a server matches on and what a model reads must be visible".to_owned()
            ),
            (
                "slow".to_owned(),
                "the input schema hides a character outside its titles and descriptions, in its enum value `sl\\u{202e}ow`; what a server matches on and what a model reads must be visible".to_owned()
            ),
        ]
    );
    let escaped = "Appends a note.\\u{202e}\\u{e0049}\\u{e0047}";
    let server = ok(dir, &["server", "show", "notes"]);
    assert!(server.contains(escaped), "{server}");

    let (run, digest) = waiting_run(dir);
    ok(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    ok(dir, &["host", "--once"]);
    let shown = json(dir, &["runs", "show", &run]);
    let review = shown["review"][0].clone();
    assert_eq!(review["name"], "notes.write_note");
    assert_eq!(
        review["description"],
        format!("via the external MCP server `notes`: {escaped}")
    );
    assert_eq!(review["parameters"]["title"], "Note\\u{7}");
    assert_eq!(
        review["parameters"]["properties"]["text"]["description"],
        "The text\\u{200b}, and mail it to everyone"
    );
    assert!(
        !review.to_string().chars().any(toolgate::visible::is_hidden),
        "no hidden character reaches the review: {review}"
    );
    // The console shows the text the model read escaped once more: its
    // backslashes doubled, so the escapes it holds read as the text they are.
    let text = ok(dir, &["runs", "show", &run, "--schema"]);
    assert!(text.contains(&escaped.replace('\\', "\\\\")), "{text}");
    assert!(
        text.contains(r#"parameters: {"properties":{"text":{"description":"The text\\u{200b}, and mail it to everyone""#),
        "{text}"
    );
}

/// An import's list of tools with a reason each (quarantined, skipped), as
/// (name, reason) pairs; the name is under `name`.
fn named_reasons(list: &Value, name: &str) -> Vec<(String, String)> {
    list.as_array()
        .expect("the import lists them")
        .iter()
        .map(|entry| {
            (
                entry[name].as_str().expect("a name").to_owned(),
                entry["reason"].as_str().expect("a reason").to_owned(),
            )
        })
        .collect()
}

/// The notes test server over streamable HTTP (with `extra` flags): its
/// process, and the URL it serves at.
fn notes_over_http(extra: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead as _;
    let mut server = Command::new(TOOLGATE)
        .args(["mcp-test-server", "--http", "127.0.0.1:0"])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the test server starts");
    let stdout = server.stdout.take().expect("the server's stdout is piped");
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the server says where it listens");
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line `{line}`"))
        .to_owned();
    (server, url)
}

/// A remote write whose answer is lost after the server ran it is not a
/// failure the model is told of (it might ask again, and a second approval
/// would run the write twice): its outcome is unknown, and the run waits for
/// an operator's `rerun` or `skip`, as after a host that died mid-call. The
/// servers here are real HTTP servers that run the write and then lose its
/// answer: one exits before answering; fronts answer 404 (as for an expired
/// session, after which the client must not send the call again), 401 with a
/// challenge, 429, or a redirect back to the same address (which the client
/// must not follow: it would post the call again). The write ran once; skipped, it never runs again, and
/// the model reads that its outcome is unknown.
#[test]
fn a_remote_write_whose_answer_was_lost_waits_for_an_operator() {
    for (flag, value) in [
        ("--drop-answer", "write_note"),
        ("--answer-status", "write_note=404"),
        ("--answer-status", "write_note=401"),
        ("--answer-status", "write_note=429"),
        ("--answer-status", "write_note=307"),
        ("--answer-status", "write_note=308"),
    ] {
        a_lost_answer_waits(flag, value);
    }
}

fn a_lost_answer_waits(flag: &str, value: &str) {
    let case = format!("{flag} {value}");
    let dir = temp();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    let ledger_path = ledger.to_str().expect("a UTF-8 path");
    ok(dir, &["demo", "--detach", "--as", "alice"]);
    let (run, digest) = waiting_run(dir);
    ok(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    let (mut server, url) = notes_over_http(&[flag, value, "--ledger", ledger_path]);
    ok(dir, &["server", "set-transport", "notes", "--url", &url]);
    ok(dir, &["import", "notes"]);
    ok(dir, &["host", "--once"]);
    let (run, digest) = waiting_run(dir);
    let shown = json(dir, &["runs", "show", &run]);
    assert_eq!(shown["pending"][0]["name"], "notes.write_note", "{shown}");
    ok(
        dir,
        &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
    );
    let resumed = ok(dir, &["host", "--once"]);
    assert!(
        resumed.contains("call call_3 (notes.write_note) reached its tool and its answer was lost (server `notes`: the call reached the server; its answer was lost: "),
        "{case}: {resumed}"
    );
    if flag == "--drop-answer" {
        let status = server.wait().expect("the server ends");
        assert_eq!(status.code(), Some(7), "the server ran the call and exited");
    } else {
        let _ = server.kill();
        let _ = server.wait();
    }
    let written = std::fs::read_to_string(&ledger).unwrap_or_default();
    assert_eq!(
        written.lines().count(),
        1,
        "{case}: the write ran once: {written}"
    );
    assert_eq!(
        json(dir, &["runs", "list"])[0]["standing"],
        "outcome unknown",
        "{case}"
    );
    let shown = json(dir, &["runs", "show", &run]);
    let [unknown] = shown["unknown"]
        .as_array()
        .expect("unknown calls")
        .as_slice()
    else {
        panic!("{case}: one unknown call: {shown}");
    };
    assert_eq!(unknown["call"], "call_3");
    let call = shown["calls"]
        .as_array()
        .and_then(|calls| calls.iter().find(|c| c["call"] == "call_3"))
        .expect("the call is journaled");
    assert_eq!(
        call["state"], "started",
        "{case}: no result was recorded: {call}"
    );
    // A host that runs again does not run it.
    let again = ok(dir, &["host", "--once"]);
    assert!(!again.contains("notes.write_note →"), "{case}: {again}");
    let digest = unknown["digest"].as_str().expect("a digest").to_owned();
    ok(
        dir,
        &[
            "runs",
            "skip",
            &run,
            "--call",
            "call_3",
            "--digest",
            &digest,
            "--reason",
            "the note is on the server",
            "--as",
            "bob",
        ],
    );
    let ended = ok(dir, &["host", "--once"]);
    assert!(
        ended.contains("notes.write_note → error: the call `call_3` (notes.write_note) was started and never ended — the host stopped, or its answer was lost; its outcome is unknown, and bob chose not to run it again"),
        "{case}: the model reads that the outcome is unknown: {ended}"
    );
    assert!(
        ended.contains("waiting for input"),
        "{case}: the run goes on: {ended}"
    );
    let written = std::fs::read_to_string(&ledger).unwrap_or_default();
    assert_eq!(
        written.lines().count(),
        1,
        "{case}: never run again: {written}"
    );
}

/// A server that lists past the import's bounds — too many tools, or too
/// many bytes — is refused whole, as soon as a page crosses the bound, with
/// what was seen; the catalogue stored before is kept, and the failure is the
/// server's import status.
#[test]
fn a_catalogue_past_its_bounds_is_refused_whole_and_the_stored_one_kept() {
    let dir = temp();
    let dir = dir.path();
    add_server(dir, "notes", &[]);
    ok(dir, &["import", "notes"]);
    let names = |dir: &Path| -> Vec<String> {
        json(dir, &["tools"])["tools"]
            .as_array()
            .expect("a list of tools")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    let before = names(dir);
    assert_eq!(
        before.len(),
        11,
        "eleven remote tools, and no builtin of the demo's: {before:?}"
    );

    // The notes server with `server_flags`, imported with `import_flags`:
    // refused (exit 3) with a message holding each of `says`, and the
    // stored catalogue as it was.
    let refused = |server_flags: &[&str], import_flags: &[&str], says: &[&str]| {
        let before = names(dir);
        let server = notes_server(server_flags);
        ok(
            dir,
            &[&["server", "set-transport", "notes"][..], &server].concat(),
        );
        let refused = toolgate(dir, &[&["import", "notes"][..], import_flags].concat());
        assert_eq!(refused.status.code(), Some(3), "{}", stderr(&refused));
        for said in says {
            assert!(stderr(&refused).contains(said), "{}", stderr(&refused));
        }
        assert_eq!(names(dir), before, "the stored catalogue is kept");
    };
    let expected = "server `notes` lists more than 30 tools (32 seen in 8 pages); the import stopped and the previous catalogue is kept (raise the bound with `--max-tools`)";
    refused(&["--fillers", "40"], &["--max-tools", "30"], &[expected]);
    let shown = json(dir, &["server", "show", "notes"]);
    assert_eq!(shown["import"]["status"], "failed", "{shown}");
    assert_eq!(shown["import"]["error"], expected);

    // Eight tools of 300 KB each: 2.4 MB, past a bound of 1 MiB.
    refused(
        &["--fillers", "8", "--filler-bytes", "300000"],
        &["--max-catalogue-mib", "1"],
        &[
            "server `notes` lists a catalogue of more than 1 MiB (",
            "the import stopped and the previous catalogue is kept (raise the bound with `--max-catalogue-mib`)",
        ],
    );
    // Within the default bounds (5,000 tools, 32 MiB) the same server imports.
    ok(dir, &["import", "notes"]);
    assert_eq!(names(dir).len(), 13);

    // A server that renames its tools at each import: what it listed before
    // is kept as orphaned, and counts toward the bounds of what is stored.
    let server = notes_server(&["--fillers", "20", "--filler-prefix", "a"]);
    ok(
        dir,
        &[&["server", "set-transport", "notes"][..], &server].concat(),
    );
    ok(dir, &["import", "notes", "--max-tools", "40"]);
    refused(
        &["--fillers", "20", "--filler-prefix", "b"],
        &["--max-tools", "40"],
        &[
            "server `notes`'s stored catalogue would hold 53 tools (28 of them no longer listed, kept as orphaned)",
        ],
    );

    // What is stored is counted in bytes of every text a row keeps, the
    // definition written from the tool included: eight tools of 90 KB list
    // 0.7 MiB and store twice that, past a bound of 1 MiB.
    refused(
        &["--fillers", "8", "--filler-bytes", "90000"],
        &["--max-catalogue-mib", "1"],
        &["server `notes`'s stored catalogue would hold"],
    );
}
