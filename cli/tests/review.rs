//! `toolgate runs review`, driven as a person drives it: the real binary on
//! a pseudo-terminal, over a real store holding waiting runs made as the
//! other tests make them (`demo --detach`). What was decided is read back
//! from the store (`runs show --json`), not only from the screen.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::num::NonZeroU16;
use std::path::Path;
use std::process::Command;

use rexpect::process::WaitStatus;
use rexpect::session::PtySession;
use serde_json::{Value, json};
use toolgate::visible::is_hidden;
use toolgate::{
    Agent, Execute, Registry, Tool, ToolOutput,
    run::{Message, RunOptions, RunState, ToolCall, TurnOutcome},
    suspend::SuspendedRun,
    testing::{MemoryLog, ScriptedModel},
};

mod common;
use common::TOOLGATE;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().expect("a scratch directory")
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let text = common::toolgate(dir, &[&["--json"], args].concat());
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The one waiting run, by id.
fn waiting_run(dir: &Path) -> String {
    let runs = json(dir, &["runs", "list"]);
    let open: Vec<&Value> = runs
        .as_array()
        .expect("a list")
        .iter()
        .filter(|r| r["state"] == "open")
        .collect();
    let [run] = open.as_slice() else {
        panic!("expected one waiting run: {runs}");
    };
    run["run"].as_str().expect("an id").to_owned()
}

/// `toolgate runs review ARGS` on a pseudo-terminal over `dir`'s store,
/// with `env` set.
fn review(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> PtySession {
    let mut command = Command::new(TOOLGATE);
    command
        .arg("--data-dir")
        .arg(dir)
        .args(["runs", "review"])
        .args(args)
        .env_remove("TOOLGATE_DATABASE_URL")
        .envs(common::database_env(dir))
        .env("NO_COLOR", "1")
        .env_remove("TOOLGATE_OPERATOR")
        .env_remove("TOOLGATE_LOG")
        .env_remove("EDITOR")
        .env_remove("VISUAL");
    for (name, value) in env {
        command.env(name, value);
    }
    rexpect::session::spawn_command(command, Some(30_000)).expect("a pseudo-terminal")
}

/// What the reader hands over, one char per byte written, as the text
/// written: it must be UTF-8.
fn written(read: &str) -> String {
    let bytes: Vec<u8> = read
        .chars()
        .map(|c| u8::try_from(u32::from(c)).expect("one byte a char"))
        .collect();
    String::from_utf8(bytes).expect("the review writes UTF-8")
}

/// Waits for `text` (ASCII) on the screen; what came before it.
fn expect(session: &mut PtySession, text: &str) -> String {
    let read = session
        .exp_string(text)
        .unwrap_or_else(|e| panic!("`{text}` never came: {e}"));
    written(&read)
}

fn answer(session: &mut PtySession, prompt: &str, line: &str) -> String {
    let before = expect(session, prompt);
    session.send_line(line).expect("the answer is sent");
    before
}

/// Everything left until the review ends, and its exit code.
fn ended(mut session: PtySession) -> (String, i32) {
    let rest = written(&session.exp_eof().expect("the review ends"));
    match session.process().wait().expect("the review is waited for") {
        WaitStatus::Exited(_, code) => (rest, code),
        other => panic!("the review did not exit: {other:?}\n{rest}"),
    }
}

/// The decisions recorded on `run`.
fn decisions(dir: &Path, run: &str) -> Vec<Value> {
    json(dir, &["runs", "show", run])["decisions"]
        .as_array()
        .expect("decisions")
        .clone()
}

/// The verdict of `call` in a recorded decision.
fn verdict<'a>(decision: &'a Value, call: &str) -> &'a Value {
    &decision["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .find(|c| c["call_id"] == call)
        .unwrap_or_else(|| panic!("no call {call} in {decision}"))["verdict"]
}

/// A run of the demo left waiting: its first turn asks for `call_2` and
/// `call_2b` (writes, approval) and `call_2c` (a read that runs).
fn demo_run(dir: &Path, extra: &[&str]) -> String {
    common::toolgate(
        dir,
        &[&["demo", "--detach", "--as", "alice"], extra].concat(),
    );
    waiting_run(dir)
}

#[test]
fn approve_every_call_then_nothing_else_waits() {
    let dir = temp();
    let dir = dir.path();
    let run = demo_run(dir, &[]);
    let mut session = review(dir, &["--as", "bob"], &[]);
    expect(&mut session, "reviewing as bob (name from flag)");
    let shown = answer(&mut session, "call_2 (write_file): [a]pprove", "a");
    assert!(shown.contains("gate: approval"), "{shown}");
    assert!(shown.contains(r#""path":"Cargo.toml""#), "{shown}");
    answer(&mut session, "call_2b (write_file): [a]pprove", "approve");
    let summary = answer(&mut session, "record it as bob?", "y");
    assert!(
        summary.contains("call_2c read_file: runs (needs no verdict)"),
        "{summary}"
    );
    expect(&mut session, "recorded: approved by bob (name from flag)");
    expect(&mut session, "no other run waits for a decision");
    let (_, code) = ended(session);
    assert_eq!(code, 0);

    let recorded = decisions(dir, &run);
    let [decision] = recorded.as_slice() else {
        panic!("one decision: {recorded:?}");
    };
    assert_eq!(decision["verdict"], "approved");
    assert_eq!(decision["by"], "bob");
    assert_eq!(decision["named_by"], "flag");
    assert_eq!(decision["channel"], "console");
    assert_eq!(decision["partial"], false);
    assert_eq!(verdict(decision, "call_2"), &json!({"verdict": "approve"}));
    assert_eq!(verdict(decision, "call_2b"), &json!({"verdict": "approve"}));
    assert_eq!(verdict(decision, "call_2c"), &Value::Null);
}

#[test]
fn a_run_named_that_waits_for_no_one_is_refused_not_missing() {
    let dir = temp();
    let dir = dir.path();
    let run = demo_run(dir, &[]);
    let shown = json(dir, &["runs", "show", &run]);
    let digest = shown["digest"].as_str().expect("a digest").to_owned();
    common::toolgate(
        dir,
        &["runs", "deny", &run, "--digest", &digest, "--as", "bob"],
    );
    let session = review(dir, &[&run, "--as", "carol"], &[]);
    let (rest, code) = ended(session);
    assert_eq!(code, 3, "{rest}");
    assert!(rest.contains("waits for no decision"), "{rest}");
    let (_, missing) = ended(review(dir, &["no-such-run-id", "--as", "carol"], &[]));
    assert_eq!(missing, 4);
}

#[test]
fn deny_one_call_with_a_reason_and_approve_another() {
    let dir = temp();
    let dir = dir.path();
    let run = demo_run(dir, &[]);
    // Named by a prefix of its id, as every `runs` command takes it; the
    // decider named by the environment.
    let prefix: String = run.chars().take(12).collect();
    let mut session = review(dir, &[&prefix], &[("TOOLGATE_OPERATOR", "bob")]);
    expect(&mut session, "reviewing as bob (name from environment)");
    answer(&mut session, "call_2 (write_file): [a]pprove", "d");
    answer(
        &mut session,
        "why (the model reads it",
        "keep 0.1 until Friday",
    );
    answer(&mut session, "call_2b (write_file): [a]pprove", "a");
    let summary = answer(&mut session, "record it as bob?", "yes");
    assert!(
        summary.contains("call_2 write_file: deny: keep 0.1 until Friday"),
        "{summary}"
    );
    expect(
        &mut session,
        "recorded: approved call_2b; denied call_2 by bob",
    );
    let (_, code) = ended(session);
    assert_eq!(code, 0);

    let recorded = decisions(dir, &run);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0]["by"], "bob");
    assert_eq!(recorded[0]["named_by"], "environment");
    assert_eq!(
        verdict(&recorded[0], "call_2"),
        &json!({"verdict": "deny", "reason": "keep 0.1 until Friday"})
    );
    assert_eq!(
        verdict(&recorded[0], "call_2b"),
        &json!({"verdict": "approve"})
    );
    // The host runs what was recorded: the denied write does not run.
    let resumed = common::toolgate(dir, &["host", "--once"]);
    assert!(
        resumed.contains("the call was denied by bob: keep 0.1 until Friday"),
        "{resumed}"
    );
}

#[test]
fn an_edit_the_schema_refuses_is_asked_again_on_the_line() {
    let dir = temp();
    let dir = dir.path();
    let run = demo_run(dir, &[]);
    let mut session = review(dir, &["--as", "bob"], &[]);
    answer(&mut session, "call_2 (write_file): [a]pprove", "a");
    answer(&mut session, "call_2b (write_file): [a]pprove", "e");
    answer(
        &mut session,
        "arguments (JSON; an empty line edits nothing):",
        "",
    );
    let nothing = answer(&mut session, "call_2b (write_file): [a]pprove", "e");
    assert!(
        nothing.contains("no edit; the call's verdict is asked again"),
        "{nothing}"
    );
    let shown = answer(
        &mut session,
        "arguments (JSON; an empty line edits nothing):",
        r#"{"path": 5}"#,
    );
    assert!(shown.contains("current arguments:"), "{shown}");
    let refused = answer(
        &mut session,
        "arguments (JSON; an empty line edits nothing):",
        "{not json",
    );
    assert!(
        refused.contains("does not fit: /path")
            && refused.contains("the verdicts given so far stay"),
        "{refused}"
    );
    let refused = answer(
        &mut session,
        "arguments (JSON; an empty line edits nothing):",
        r###"{"path":"CHANGELOG.md","content":"## 0.2.0\n- Edited by bob.\n"}"###,
    );
    assert!(refused.contains("not JSON"), "{refused}");
    let summary = answer(&mut session, "record it as bob?", "y");
    assert!(
        summary.contains(
            r###"call_2b write_file: approve with edited arguments {"content":"## 0.2.0\n- Edited by bob.\n","path":"CHANGELOG.md"}"###
        ),
        "{summary}"
    );
    expect(&mut session, "recorded: approved by bob");
    let (_, code) = ended(session);
    assert_eq!(code, 0);

    let recorded = decisions(dir, &run);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(
        verdict(&recorded[0], "call_2"),
        &json!({"verdict": "approve"}),
        "the earlier answer stayed"
    );
    assert_eq!(
        verdict(&recorded[0], "call_2b"),
        &json!({"verdict": "edit", "arguments": {"path": "CHANGELOG.md", "content": "## 0.2.0\n- Edited by bob.\n"}})
    );
}

#[test]
fn an_edit_in_the_editor_opens_on_the_arguments_and_is_asked_again() {
    let dir = temp();
    let dir = dir.path();
    let run = demo_run(dir, &[]);
    // An editor that keeps what it was opened on, writes arguments the
    // schema refuses the first time, and good ones the second.
    let script = dir.join("editor.sh");
    std::fs::write(
        &script,
        r###"#!/bin/sh
n=$(ls "$0".opened.* 2>/dev/null | wc -l)
cp "$1" "$0.opened.$n"
if [ "$n" = 0 ]; then
  printf '%s\n' '{"path": "CHANGELOG.md"}' > "$1"
else
  printf '%s\n' '{"path": "CHANGELOG.md", "content": "## 0.2.0\n- From the editor.\n"}' > "$1"
fi
"###,
    )
    .expect("the editor is written");
    std::fs::set_permissions(
        &script,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .expect("the editor runs");
    let editor = script.to_str().expect("a UTF-8 path");
    let mut session = review(dir, &["--as", "bob"], &[("EDITOR", editor)]);
    answer(&mut session, "call_2 (write_file): [a]pprove", "d");
    answer(&mut session, "why (the model reads it", "");
    answer(&mut session, "call_2b (write_file): [a]pprove", "e");
    let refused = answer(&mut session, "record it as bob?", "y");
    assert!(
        refused.contains("does not fit:") && refused.contains("content"),
        "{refused}"
    );
    expect(
        &mut session,
        "recorded: approved call_2b (edited); denied call_2 by bob",
    );
    let (_, code) = ended(session);
    assert_eq!(code, 0);

    let first: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("editor.sh.opened.0")).expect("opened once"),
    )
    .expect("it opened on JSON");
    assert_eq!(
        first,
        json!({"path": "CHANGELOG.md", "content": "## 0.2.0\n- (the model's summary)\n"}),
        "the editor opened on the call's arguments"
    );
    let second: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("editor.sh.opened.1")).expect("opened again"),
    )
    .expect("JSON");
    assert_eq!(
        second,
        json!({"path": "CHANGELOG.md"}),
        "asked again on what was typed"
    );
    let recorded = decisions(dir, &run);
    assert_eq!(
        verdict(&recorded[0], "call_2b"),
        &json!({"verdict": "edit", "arguments": {"path": "CHANGELOG.md", "content": "## 0.2.0\n- From the editor.\n"}})
    );
    assert_eq!(
        verdict(&recorded[0], "call_2"),
        &json!({"verdict": "deny", "reason": ""})
    );
}

#[test]
fn input_for_a_run_waiting_for_it() {
    let dir = temp();
    let dir = dir.path();
    demo_run(dir, &[]);
    // Through the two approvals to the input pause.
    for _ in 0..2 {
        let run = waiting_run(dir);
        let digest = json(dir, &["runs", "show", &run])["digest"]
            .as_str()
            .expect("a digest")
            .to_owned();
        common::toolgate(
            dir,
            &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
        );
        common::toolgate(dir, &["host", "--once"]);
    }
    let run = waiting_run(dir);
    let mut session = review(dir, &["--as", "alice"], &[]);
    let shown = expect(&mut session, "waits for input:");
    assert!(shown.contains("waiting for input"), "{shown}");
    // The whole input as JSON that does not fit, then the form again.
    answer(&mut session, "  notes: ", r#"{"notes": ""}"#);
    let refused = answer(&mut session, "  notes: ", "");
    assert!(refused.contains("does not fit: /notes"), "{refused}");
    let empty = answer(&mut session, "  notes: ", "Ship it.");
    assert!(empty.contains("notes is required; try again"), "{empty}");
    answer(&mut session, "  prerelease: ", "");
    let summary = answer(&mut session, "record it as alice?", "y");
    assert!(
        summary.contains("your input on run") && summary.contains(r#"{"notes":"Ship it."}"#),
        "{summary}"
    );
    expect(&mut session, "recorded: input submitted by alice");
    let (_, code) = ended(session);
    assert_eq!(code, 0);

    let recorded = decisions(dir, &run);
    assert_eq!(
        recorded.len(),
        3,
        "two approvals and the input: {recorded:?}"
    );
    assert_eq!(recorded[2]["verdict"], "input submitted");
    assert_eq!(recorded[2]["by"], "alice");
    let done = common::toolgate(dir, &["host", "--once"]);
    assert!(done.contains("with notes: Ship it."), "{done}");
}

#[test]
fn a_run_decided_elsewhere_while_reviewed_records_nothing() {
    let dir = temp();
    let dir = dir.path();
    let run = demo_run(dir, &[]);
    let mut session = review(dir, &["--as", "bob"], &[]);
    answer(&mut session, "call_2 (write_file): [a]pprove", "a");
    answer(&mut session, "call_2b (write_file): [a]pprove", "a");
    expect(&mut session, "record it as bob?");
    // Meanwhile carol denies it from another terminal.
    let digest = json(dir, &["runs", "show", &run])["digest"]
        .as_str()
        .expect("a digest")
        .to_owned();
    common::toolgate(
        dir,
        &["runs", "deny", &run, "--digest", &digest, "--as", "carol"],
    );
    session.send_line("y").expect("sent");
    expect(
        &mut session,
        "was decided elsewhere, by carol, while you reviewed it; nothing was recorded",
    );
    expect(&mut session, "no other run waits for a decision");
    let (rest, code) = ended(session);
    assert_eq!(code, 3, "{rest}");
    assert!(rest.contains("refused"), "{rest}");

    let recorded = decisions(dir, &run);
    let [decision] = recorded.as_slice() else {
        panic!("carol's decision only: {recorded:?}");
    };
    assert_eq!(decision["by"], "carol");
    assert_eq!(decision["verdict"], "denied");
}

#[test]
fn under_four_eyes_the_requester_reviewing_their_own_run_is_refused() {
    let dir = temp();
    let dir = dir.path();
    let run = demo_run(dir, &["--four-eyes"]);
    let mut session = review(dir, &["--as", "alice"], &[]);
    let shown = answer(&mut session, "call_2 (write_file): [a]pprove", "a");
    assert!(shown.contains("note: that is you"), "{shown}");
    answer(&mut session, "call_2b (write_file): [a]pprove", "a");
    answer(&mut session, "record it as alice?", "y");
    expect(
        &mut session,
        "`alice` started this run, and its approval must come from someone else",
    );
    expect(&mut session, "nothing was recorded");
    let (_, code) = ended(session);
    assert_eq!(code, 3);
    assert!(decisions(dir, &run).is_empty());
    // Still waiting, for someone else.
    assert_eq!(waiting_run(dir), run);
}

#[test]
fn without_a_terminal_it_refuses_and_says_what_to_use() {
    let dir = temp();
    let dir = dir.path();
    let run = demo_run(dir, &[]);
    let output = common::command(dir)
        .args(["runs", "review", "--as", "bob"])
        .output()
        .expect("toolgate runs");
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("`runs review` asks on a terminal")
            && said.contains("runs show RUN")
            && said.contains("runs approve|deny|edit|input RUN --digest D"),
        "{said}"
    );
    assert!(decisions(dir, &run).is_empty());
}

/// A stand-in with the demo's `write_file` name and effect, so the turn
/// suspends for approval; it never runs.
#[derive(Tool)]
#[tool(effect = idempotent_write)]
struct WriteFile;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code, reason = "only the schema is read")]
struct WriteArgs {
    path: String,
    content: String,
}

impl Execute for WriteFile {
    type Args = WriteArgs;
    async fn execute(&self, _: WriteArgs) -> ToolOutput {
        ToolOutput::error("a pending call never runs")
    }
}

/// A waiting run whose calls a hostile model filled with escape sequences,
/// bidi controls and invisible characters, saved as a host saves it.
fn store_hostile_run(dir: &Path, calls: Vec<ToolCall>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let store = toolgate_store::Store::open(common::location(dir))
            .await
            .expect("the store");
        let registry = Registry::builder()
            .builtin(WriteFile)
            .build()
            .expect("a registry");
        let model = ScriptedModel::default();
        let log = MemoryLog::new();
        let agent = Agent::new(&registry, &model, &log);
        let state = RunState {
            denied: Vec::new(),
            client: None,
            run_id: "run-hostile".into(),
            requested_by: "mallory\u{1b}[2K\u{202e}nimda".into(),
            transcript: vec![
                Message::User {
                    content: "bump the version".into(),
                },
                Message::Assistant {
                    content: None,
                    calls: calls.clone(),
                    usage: None,
                },
            ],
            iterations: 1,
            options: RunOptions::default(),
        };
        let Ok(TurnOutcome::AwaitingApproval(suspended)) = agent.process_turn(state, calls).await
        else {
            panic!("the turn should wait for approval");
        };
        store
            .save_suspended(&SuspendedRun::AwaitingApproval(suspended), "demo")
            .await
            .expect("saved");
        store.close().await;
    });
}

#[test]
fn hostile_text_in_a_call_shows_inert() {
    let dir = temp();
    let dir = dir.path();
    store_hostile_run(
        dir,
        vec![
            ToolCall {
                id: "call_1\u{1b}]0;pwned\u{7}".into(),
                name: "write_file".into(),
                arguments: json!({
                    "path": "\u{1b}[2K\u{1b}[1A\u{1b}[2K\r│ harmless",
                    "content": "\u{2066}/etc/passwd\u{2069}\u{202e}txt.\u{9b}2J\u{200b}\u{e0049}",
                }),
            },
            ToolCall {
                id: "call_2\u{202e}txt.exe".into(),
                name: "read\u{200b}_file\u{1b}[31m".into(),
                arguments: json!({"\r\u{1b}[31m": "ok\u{8}\u{8}\u{7f}"}),
            },
        ],
    );
    let mut session = review(dir, &["--as", "bob"], &[]);
    let mut seen = answer(&mut session, "(write_file): [a]pprove", "d");
    seen += &answer(&mut session, "why (the model reads it", "not this");
    seen += &answer(&mut session, "record it as bob?", "y");
    let (rest, code) = ended(session);
    seen += &rest;
    assert_eq!(code, 0, "{seen}");

    let bytes = seen.as_bytes();
    assert!(!bytes.contains(&0x1b), "an ESC reached the terminal");
    let text = seen.as_str();
    let hidden: Vec<String> = text
        .chars()
        .filter(|&c| c != '\n' && c != '\r' && is_hidden(c))
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect();
    assert!(
        hidden.is_empty(),
        "hidden characters shown: {hidden:?}\n{text}"
    );
    // What a terminal shows: the attacks spelled out, nothing acted on.
    let (Some(rows), Some(cols)) = (NonZeroU16::new(200), NonZeroU16::new(400)) else {
        unreachable!("both are non-zero");
    };
    let mut screen = vt100::Parser::new(rows, cols, 0);
    screen.process(bytes);
    let contents = screen.screen().contents();
    for spelled in [
        r"call_1\u{1b}]0;pwned\u{7}",
        r"\u001b[2K\u001b[1A\u001b[2K\r│ harmless",
        r"\u2066/etc/passwd\u2069\u202etxt.\u009b2J\u200b\udb40\udc49",
        r"call_2\u{202e}txt.exe",
        r"read\u{200b}_file\u{1b}[31m",
        r"mallory\u{1b}[2K\u{202e}nimda",
    ] {
        assert!(contents.contains(spelled), "missing {spelled}:\n{contents}");
    }
    let recorded = decisions(dir, "run-hostile");
    assert_eq!(
        verdict(&recorded[0], "call_1\u{1b}]0;pwned\u{7}"),
        &json!({"verdict": "deny", "reason": "not this"})
    );
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

/// A remote write whose answer was lost waits for a rerun or a skip: the
/// review shows the call with what a rerun runs it with, asks for the
/// choice and its reason, and records it through `runs skip`'s path.
#[test]
fn a_call_whose_outcome_is_unknown_is_skipped_with_a_reason() {
    let dir = temp();
    let dir = dir.path();
    let ledger = dir.join("ledger");
    demo_run(dir, &[]);
    let approve = |dir: &Path| {
        let run = waiting_run(dir);
        let digest = json(dir, &["runs", "show", &run])["digest"]
            .as_str()
            .expect("a digest")
            .to_owned();
        common::toolgate(
            dir,
            &["runs", "approve", &run, "--digest", &digest, "--as", "bob"],
        );
        run
    };
    approve(dir);
    let (mut server, url) = notes_over_http(&[
        "--drop-answer",
        "write_note",
        "--ledger",
        ledger.to_str().expect("a UTF-8 path"),
    ]);
    common::toolgate(dir, &["server", "set-transport", "notes", "--url", &url]);
    common::toolgate(dir, &["import", "notes"]);
    common::toolgate(dir, &["host", "--once"]);
    let run = approve(dir);
    common::toolgate(dir, &["host", "--once"]);
    let _ = server.wait();
    assert_eq!(
        json(dir, &["runs", "list"])[0]["standing"],
        "outcome unknown"
    );

    let mut session = review(dir, &["--as", "bob"], &[]);
    let shown = answer(&mut session, "[r]erun it, [s]kip it", "s");
    assert!(
        shown.contains("call call_3 (notes.write_note) of turn")
            && shown.contains("it may have run; a rerun runs it with {"),
        "{shown}"
    );
    answer(&mut session, "why (for the record):", "");
    let empty = answer(
        &mut session,
        "why (for the record):",
        "the note is on the server",
    );
    assert!(empty.contains("a choice needs a reason"), "{empty}");
    answer(&mut session, "record: skip call call_3?", "y");
    expect(
        &mut session,
        "recorded: skip call call_3 (notes.write_note) by bob (name from flag)",
    );
    let (_, code) = ended(session);
    assert_eq!(code, 0);

    let shown = json(dir, &["runs", "show", &run]);
    let call = shown["calls"]
        .as_array()
        .and_then(|calls| calls.iter().find(|c| c["call"] == "call_3"))
        .expect("the call is journaled");
    let choices = call["choices"].to_string();
    assert!(
        choices.contains("skip by bob") && choices.contains("the note is on the server"),
        "{call}"
    );
    let written = std::fs::read_to_string(&ledger).unwrap_or_default();
    assert_eq!(written.lines().count(), 1, "the write ran once: {written}");
}

/// A run that needs two approvers takes one approval per person, partial
/// until the second; after each run the next waiting one is offered.
#[test]
fn two_approvers_and_the_next_run_offered() {
    let dir = temp();
    let dir = dir.path();
    let first = demo_run(dir, &["--approvals", "2"]);
    common::toolgate(dir, &["demo", "--detach", "--as", "alice"]);
    let runs = json(dir, &["runs", "list"]);
    let second = runs
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| r["run"].as_str().expect("an id"))
        .find(|r| *r != first)
        .expect("a second run")
        .to_owned();

    let mut session = review(dir, &["--as", "bob"], &[]);
    let shown = answer(&mut session, "call_2 (write_file): [a]pprove", "a");
    assert!(
        shown.contains(&format!("run {first} — awaiting approval"))
            && shown.contains("needs approvals from 2 distinct people; 0 recorded so far"),
        "{shown}"
    );
    answer(&mut session, "call_2b (write_file): [a]pprove", "a");
    answer(&mut session, "record it as bob?", "y");
    expect(&mut session, "recorded: approval 1 of 2 by bob");
    let offered = answer(&mut session, "[r]eview it or [q]uit?", "r");
    assert!(
        offered.contains(&format!("next: run {second}")),
        "{offered}"
    );
    answer(&mut session, "call_2 (write_file): [a]pprove", "a");
    answer(&mut session, "call_2b (write_file): [a]pprove", "a");
    answer(&mut session, "record it as bob?", "y");
    expect(&mut session, "recorded: approved by bob");
    expect(&mut session, "no other run waits for a decision");
    assert_eq!(ended(session).1, 0);

    // Bob again, under another spelling: the same person, refused.
    let mut session = review(dir, &[&first, "--as", "Bob"], &[]);
    answer(&mut session, "call_2 (write_file): [a]pprove", "a");
    answer(&mut session, "call_2b (write_file): [a]pprove", "a");
    answer(&mut session, "record it as Bob?", "y");
    expect(&mut session, "nothing was recorded");
    assert_eq!(ended(session).1, 3);

    let mut session = review(dir, &["--as", "carol"], &[]);
    answer(&mut session, "call_2 (write_file): [a]pprove", "a");
    answer(&mut session, "call_2b (write_file): [a]pprove", "a");
    answer(&mut session, "record it as carol?", "y");
    expect(&mut session, "recorded: approved by carol");
    assert_eq!(ended(session).1, 0);

    let recorded = decisions(dir, &first);
    let by: Vec<(&str, bool)> = recorded
        .iter()
        .map(|d| (d["by"].as_str().expect("a name"), d["partial"] == true))
        .collect();
    assert_eq!(by, [("bob", true), ("carol", false)]);
    assert_eq!(decisions(dir, &second)[0]["by"], "bob");
}

/// An editor that fails edits nothing: the verdict is asked again, and
/// nothing of the edit is recorded.
#[test]
fn a_failing_editor_asks_the_verdict_again() {
    let dir = temp();
    let dir = dir.path();
    let run = demo_run(dir, &[]);
    let mut session = review(dir, &["--as", "bob"], &[("EDITOR", "false")]);
    answer(&mut session, "call_2 (write_file): [a]pprove", "e");
    let failed = answer(&mut session, "call_2 (write_file): [a]pprove", "a");
    assert!(
        failed.contains("the editor `false` failed: it ended with exit status: 1")
            && failed.contains("no edit; the call's verdict is asked again"),
        "{failed}"
    );
    answer(&mut session, "call_2b (write_file): [a]pprove", "a");
    answer(&mut session, "record it as bob?", "y");
    expect(&mut session, "recorded: approved by bob");
    assert_eq!(ended(session).1, 0);
    let recorded = decisions(dir, &run);
    assert_eq!(
        verdict(&recorded[0], "call_2"),
        &json!({"verdict": "approve"})
    );
}

/// A turn asked again while it is reviewed — paused afresh, with a new
/// digest — refuses the decision taken on what was shown, says the run
/// changed, records nothing, and offers the run again as it is now.
#[test]
fn a_run_that_changed_while_reviewed_is_offered_again() {
    let dir = temp();
    let dir = dir.path();
    let run = demo_run(dir, &["--decision-ttl", "1"]);
    std::thread::sleep(std::time::Duration::from_millis(1_200));
    let mut session = review(dir, &["--as", "bob"], &[]);
    answer(&mut session, "call_2 (write_file): [a]pprove", "d");
    answer(&mut session, "why (the model reads it", "");
    answer(&mut session, "call_2b (write_file): [a]pprove", "d");
    answer(&mut session, "why (the model reads it", "");
    expect(&mut session, "record it as bob?");
    common::toolgate(dir, &["runs", "ask-again", &run, "--as", "carol"]);
    session.send_line("y").expect("sent");
    expect(
        &mut session,
        "changed while you reviewed it (its turn waits with another digest now); nothing was recorded",
    );
    let offered = answer(&mut session, "[r]eview it or [q]uit?", "q");
    assert!(offered.contains(&format!("next: run {run}")), "{offered}");
    let (rest, code) = ended(session);
    assert_eq!(code, 3, "{rest}");
    assert!(
        decisions(dir, &run).iter().all(|d| d["by"] != "bob"),
        "nothing of bob's was recorded"
    );
    assert_eq!(waiting_run(dir), run, "the run still waits");
}
