//! `toolgate hook claude-code|codex`: the gate for a coding agent's own
//! tools, driven the way each client drives its hooks — the event as JSON
//! on stdin (with fields a later version adds), stdin closed, a timeout —
//! directly over the store and submitted to a gateway served with
//! `--hooks` under a token that cannot decide; and a scripted agent
//! (`peers/agent.py`) that runs a shell command only when its client's
//! rules let it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::io::Write as _;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;
use common::{TOOLGATE, command, toolgate};

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

const CLIENTS: [&str; 2] = ["claude-code", "codex"];

/// A `PreToolUse` (or `kind`) event of `client` for `tool` with `input`, in
/// the client's shape, with fields this hook does not know.
fn event(client: &str, kind: &str, tool: &str, input: &Value) -> Value {
    let mut event = json!({
        "session_id": "5f0c-session",
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": "/work/repo",
        "hook_event_name": kind,
        "permission_mode": "default",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": format!("toolu_{}", uuid_like()),
        "a_field_from_a_later_version": {"nested": [1, 2, 3]},
    });
    if client == "codex" {
        event["turn_id"] = json!("turn-1");
        event["model"] = json!("gpt-5");
    }
    event
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{:x}{:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn bash(command: &str) -> Value {
    json!({"command": command, "description": "a step", "timeout": 120_000})
}

/// `toolgate hook CLIENT ARGS…` over `dir`, started, `bytes` written to its
/// stdin and stdin closed.
fn start_hook(dir: &Path, client: &str, args: &[&str], bytes: &[u8]) -> Child {
    let mut child = command(dir)
        .args(["hook", client])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the hook starts");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    // A hook stops reading past its limit: the rest of a huge event is not
    // taken, and the pipe breaks — as a client's write would.
    if let Err(error) = stdin.write_all(bytes) {
        assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "{error}");
    }
    drop(stdin);
    child
}

/// A hook run to its end: exit code, stdout, stderr.
fn hook(dir: &Path, client: &str, args: &[&str], event: &Value) -> (i32, String, String) {
    finished(start_hook(dir, client, args, event.to_string().as_bytes()))
}

fn finished(child: Child) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("the hook ends");
    (
        status
            .code()
            .expect("the hook exits, never killed by a signal"),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// The runs of `client`'s hooks that wait for a decision.
fn waiting(dir: &Path, client: &str) -> Vec<String> {
    let listed: Value = serde_json::from_str(&toolgate(dir, &["runs", "list", "--json"])).unwrap();
    listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["owner"] == format!("gateway.hook.{client}") && r["status"] == "waiting")
        .map(|r| r["run"].as_str().unwrap().to_owned())
        .collect()
}

/// Waits for exactly one run of `client` to wait, and returns it.
fn one_waiting(dir: &Path, client: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let runs = waiting(dir, client);
        if runs.len() == 1 {
            return runs[0].clone();
        }
        assert!(runs.len() < 2, "one run, not {runs:?}");
        assert!(Instant::now() < deadline, "no run waits");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn shown(dir: &Path, run: &str) -> Value {
    serde_json::from_str(&toolgate(dir, &["runs", "show", run, "--json"])).unwrap()
}

fn decide(dir: &Path, run: &str, who: &str, extra: &[&str]) -> Output {
    let digest = shown(dir, run)["digest"].as_str().unwrap().to_owned();
    command(dir)
        .args(["runs", "approve", run, "--digest", &digest, "--as", who])
        .args(extra)
        .output()
        .unwrap()
}

fn approve(dir: &Path, run: &str, who: &str, extra: &[&str]) {
    let output = decide(dir, run, who, extra);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn call_id(dir: &Path, run: &str) -> String {
    shown(dir, run)["pending"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn a_tool_declared_off_gets_no_decision_a_blocked_one_is_denied_an_undeclared_one_waits() {
    let dir = scratch();
    let dir = dir.path();
    for client in CLIENTS {
        toolgate(
            dir,
            &["hook", "declare", client, "Read", "off", "--as", "alice"],
        );
        toolgate(
            dir,
            &[
                "hook", "declare", client, "WebFetch", "block", "--as", "alice",
            ],
        );
        let read = event(
            client,
            "PreToolUse",
            "Read",
            &json!({"file_path": "/etc/hosts"}),
        );
        let (code, out, err) = hook(dir, client, &["--direct"], &read);
        assert_eq!((code, out.as_str()), (0, ""), "{client}: {err}");
        assert!(err.contains("whoever runs this agent can decide"), "{err}");
        let fetch = event(
            client,
            "PreToolUse",
            "WebFetch",
            &json!({"url": "https://x"}),
        );
        let (code, out, err) = hook(dir, client, &["--direct"], &fetch);
        assert_eq!((code, out.as_str()), (2, ""), "{client}");
        assert!(err.contains("is blocked by the operator"), "{err}");
        // Undeclared: held, and past the wait denied in the gateway's words —
        // never the digest, never a command that decides.
        let write = event(
            client,
            "PreToolUse",
            "Write",
            &json!({"file_path": "a", "content": "b"}),
        );
        let (code, out, err) = hook(dir, client, &["--direct", "--wait", "1"], &write);
        assert_eq!((code, out.as_str()), (2, ""), "{client}");
        assert!(err.contains("the call waits for approval: run `"), "{err}");
        assert!(
            !err.contains("sha256:") && !err.contains("approve"),
            "{err}"
        );
        assert_eq!(waiting(dir, client).len(), 1, "{client}");
        assert!(
            shown(dir, &waiting(dir, client)[0])["asked"]
                .as_str()
                .unwrap()
                .contains("Write")
        );
    }
    let listed = toolgate(dir, &["hook", "list"]);
    assert!(listed.contains("never runs"), "{listed}");
    let tools = toolgate(dir, &["tools"]);
    assert!(
        tools.contains("Coding agents' own tools") && tools.contains("WebFetch"),
        "{tools}"
    );
    assert!(listed.contains("runs without approval"), "{listed}");
}

#[test]
fn a_server_behind_a_gateway_is_gated_there() {
    let dir = scratch();
    let dir = dir.path();
    // A server behind a toolgate gateway is gated there; any other's MCP
    // tools here — even with a look-alike name.
    for client in CLIENTS {
        let notes = event(
            client,
            "PreToolUse",
            "mcp__notes__add",
            &json!({"text": "x"}),
        );
        let (code, out, _) = hook(
            dir,
            client,
            &["--direct", "--behind-gateway", "notes"],
            &notes,
        );
        assert_eq!((code, out.as_str()), (0, ""), "{client}");
        let token = dir.join("no-token");
        let (code, _, _) = hook(
            dir,
            client,
            &[
                "--service",
                "http://127.0.0.1:9",
                "--token-file",
                token.to_str().unwrap(),
                "--behind-gateway",
                "notes",
            ],
            &notes,
        );
        assert_eq!(code, 0, "{client}: decided before anything is submitted");
        // `mcp__notes___add` could be server `notes_`'s `add`: gated here.
        let ambiguous = event(
            client,
            "PreToolUse",
            "mcp__notes___add",
            &json!({"text": "x"}),
        );
        let (code, _, _) = hook(
            dir,
            client,
            &["--direct", "--behind-gateway", "notes", "--wait", "1"],
            &ambiguous,
        );
        assert_eq!(code, 2, "{client}");
        let other = event(
            client,
            "PreToolUse",
            "mcp__notes_x__add",
            &json!({"text": "x"}),
        );
        let (code, _, err) = hook(
            dir,
            client,
            &["--direct", "--behind-gateway", "notes", "--wait", "1"],
            &other,
        );
        assert_eq!(code, 2, "{client}");
        assert!(err.contains("waits for approval"), "{err}");
    }
    // A tool's name too long for a run is held under a shortened one, the
    // full name in what asked.
    let long = "mcp__a-very-long-server-name-here__and_a_really_long_tool_name_too";
    let asked = event("claude-code", "PreToolUse", long, &json!({}));
    let (code, _, err) = hook(dir, "claude-code", &["--direct", "--wait", "1"], &asked);
    assert_eq!(code, 2);
    assert!(err.contains("waits for approval"), "{err}");
    let seen = waiting(dir, "claude-code")
        .iter()
        .map(|run| shown(dir, run))
        .find(|seen| seen["asked"].as_str().unwrap().contains(long))
        .expect("the call is held, its name in what asked");
    let name = seen["pending"][0]["name"].as_str().unwrap();
    assert!(
        name.starts_with("claude-code.mcp__a-very") && name.len() <= 64,
        "{name}"
    );
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one table of every way an event or a set-up goes wrong, each checked alike"
)]
fn anything_that_goes_wrong_is_a_deny_with_exit_2() {
    let dir = scratch();
    let dir = dir.path();
    let good = event("codex", "PreToolUse", "Bash", &bash("ls"));
    let mut cases: Vec<(Vec<&str>, Vec<u8>, &str)> = vec![
        (
            vec!["--direct"],
            b"not json".to_vec(),
            "does not read as a JSON object",
        ),
        (
            vec!["--direct"],
            b"[1,2]".to_vec(),
            "does not read as a JSON object",
        ),
        (
            vec!["--direct"],
            b"".to_vec(),
            "does not read as a JSON object",
        ),
        (
            vec!["--direct"],
            json!({"hook_event_name": "PreToolUse", "tool_input": {}})
                .to_string()
                .into_bytes(),
            "no `tool_name`",
        ),
        (
            vec!["--direct"],
            json!({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": "ls"})
                .to_string()
                .into_bytes(),
            "no `tool_input` as an object",
        ),
        (
            vec!["--direct"],
            json!({"hook_event_name": 7, "tool_name": "Bash", "tool_input": {}})
                .to_string()
                .into_bytes(),
            "no `hook_event_name`",
        ),
        (
            vec!["--direct"],
            json!({"hook_event_name": "Stop", "tool_name": "Bash", "tool_input": {}})
                .to_string()
                .into_bytes(),
            "not `Stop`",
        ),
        (
            vec![],
            good.to_string().into_bytes(),
            "not told where to submit",
        ),
        (
            vec!["--service", "http://127.0.0.1:9"],
            good.to_string().into_bytes(),
            "needs `--token-file",
        ),
        (
            vec!["--direct"],
            json!({"hook_event_name": "PreToolUse", "tool_name": "Bad Name!", "tool_input": {}})
                .to_string()
                .into_bytes(),
            "cannot be named in a run",
        ),
    ];
    let huge = format!(
        "{{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{{\"command\":\"{}\"}}}}",
        "a".repeat(5 * 1024 * 1024)
    );
    cases.push((vec!["--direct"], huge.into_bytes(), "larger than"));
    for client in CLIENTS {
        for (args, bytes, said) in &cases {
            let (code, out, err) = finished(start_hook(dir, client, args, bytes));
            assert_eq!((code, out.as_str()), (2, ""), "{client} {said}: {err}");
            assert!(err.contains(said), "{client}: {said:?} not in {err}");
        }
    }
    // A store that cannot be reached.
    for client in CLIENTS {
        let output = Command::new(TOOLGATE)
            .args(["--database-url", "postgres://nobody@127.0.0.1:9/none"])
            .args(["hook", client, "--direct", "--wait", "1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map(|mut child| {
                let mut stdin = child.stdin.take().unwrap();
                stdin.write_all(good.to_string().as_bytes()).unwrap();
                drop(stdin);
                child
            })
            .unwrap()
            .wait_with_output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{client}");
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(err.contains("the store cannot be opened"), "{err}");
    }
    // A service that is down.
    let token = dir.join("token");
    std::fs::write(&token, "tgw_0000000000000000_00").unwrap();
    for client in CLIENTS {
        let (code, _, err) = hook(
            dir,
            client,
            &[
                "--service",
                "http://127.0.0.1:9",
                "--token-file",
                token.to_str().unwrap(),
            ],
            &good,
        );
        assert_eq!(code, 2, "{client}");
        assert!(err.contains("cannot be reached"), "{err}");
    }
}

#[test]
fn approved_is_allowed_with_who_decided_denied_is_blocked() {
    let dir = scratch();
    let dir = dir.path();
    for client in CLIENTS {
        let asked = event(client, "PreToolUse", "Bash", &bash("rm -rf build"));
        let child = start_hook(
            dir,
            client,
            &["--direct", "--wait", "30"],
            asked.to_string().as_bytes(),
        );
        let run = one_waiting(dir, client);
        let seen = shown(dir, &run);
        assert_eq!(seen["pending"][0]["name"], format!("{client}.Bash"));
        // What makes the call the same call, and what the reviewer sees:
        // the command and the directory — not the description or timeout.
        assert_eq!(
            seen["pending"][0]["arguments"],
            json!({"cwd": "/work/repo", "input": {"command": "rm -rf build"}})
        );
        let asked_in = seen["asked"].as_str().unwrap();
        assert!(
            asked_in.contains("5f0c-session") && asked_in.contains("/work/repo"),
            "{asked_in}"
        );
        // Lowering a client's tool from a decision goes through its own
        // declaration, said so.
        let refused = decide(
            dir,
            &run,
            "bob",
            &["--allow-tool", &format!("{client}.Bash")],
        );
        assert_eq!(refused.status.code(), Some(2));
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(
            said.contains(&format!("toolgate hook declare {client} Bash off")),
            "{said}"
        );
        approve(dir, &run, "bob", &[]);
        let (code, out, err) = finished(child);
        assert_eq!(code, 0, "{client}: {err}");
        if client == "claude-code" {
            let answer: Value = serde_json::from_str(&out).unwrap();
            let said = &answer["hookSpecificOutput"];
            assert_eq!(said["permissionDecision"], "allow");
            assert_eq!(said["hookEventName"], "PreToolUse");
            assert!(
                said["permissionDecisionReason"]
                    .as_str()
                    .unwrap()
                    .contains("bob")
            );
            assert!(said.get("updatedInput").is_none());
        } else {
            assert_eq!(out, "", "Codex takes no allow: nothing is written");
        }
        // The same command again is a new call: one approval, one run.
        let (code, _, err) = hook(dir, client, &["--direct", "--wait", "1"], &asked);
        assert_eq!(code, 2, "{client}");
        assert!(err.contains("waits for approval"), "{err}");
        let again = one_waiting(dir, client);
        assert_ne!(again, run);
        let id = call_id(dir, &again);
        let child = start_hook(
            dir,
            client,
            &["--direct", "--wait", "30"],
            asked.to_string().as_bytes(),
        );
        std::thread::sleep(Duration::from_millis(300));
        let output = decide(
            dir,
            &again,
            "bob",
            &["--deny", &format!("{id}=not on a Friday")],
        );
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let (code, out, err) = finished(child);
        assert_eq!((code, out.as_str()), (2, ""), "{client}");
        assert!(err.contains("not on a Friday"), "{err}");
    }
}

#[test]
fn a_decision_taken_while_the_hook_was_gone_answers_the_same_call_asked_again() {
    let dir = scratch();
    let dir = dir.path();
    for client in CLIENTS {
        let asked = event(client, "PreToolUse", "Bash", &bash("cargo publish"));
        let (code, _, _) = hook(dir, client, &["--direct", "--wait", "1"], &asked);
        assert_eq!(code, 2);
        let run = one_waiting(dir, client);
        approve(dir, &run, "carol", &[]);
        // A new session, a new hook process, the model's own description
        // changed: the same call, answered by that decision at once.
        let mut retry = event(
            client,
            "PreToolUse",
            "Bash",
            &json!({"command": "cargo publish", "description": "again"}),
        );
        retry["session_id"] = json!("another-session");
        let started = Instant::now();
        let (code, out, err) = hook(dir, client, &["--direct", "--wait", "30"], &retry);
        assert_eq!(code, 0, "{client}: {err}");
        assert!(started.elapsed() < Duration::from_secs(20));
        if client == "claude-code" {
            assert!(out.contains("carol"), "{out}");
        }
    }
}

#[test]
fn many_hooks_asking_the_same_call_at_once_join_one_run() {
    let dir = scratch();
    let dir = dir.path();
    let client = "claude-code";
    let asked = event(client, "PreToolUse", "Bash", &bash("make deploy"));
    let children: Vec<Child> = (0..6)
        .map(|_| {
            start_hook(
                dir,
                client,
                &["--direct", "--wait", "40"],
                asked.to_string().as_bytes(),
            )
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let run = one_waiting(dir, client);
    approve(dir, &run, "bob", &[]);
    // One approval lets one call run: the others are told so.
    let mut allowed = 0;
    for child in children {
        let (code, out, err) = finished(child);
        if code == 0 {
            assert!(out.contains("\"allow\""), "{out}");
            allowed += 1;
        } else {
            assert_eq!(code, 2);
            assert!(err.contains("let it run once"), "{err}");
        }
    }
    assert_eq!(allowed, 1);
    let listed: Value =
        serde_json::from_str(&toolgate(dir, &["runs", "list", "--all", "--json"])).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
}

#[test]
fn an_edit_is_applied_by_claude_code_and_refused_for_codex() {
    let dir = scratch();
    let dir = dir.path();
    for client in CLIENTS {
        let asked = event(client, "PreToolUse", "Bash", &bash("rm -rf /"));
        let child = start_hook(
            dir,
            client,
            &["--direct", "--wait", "30"],
            asked.to_string().as_bytes(),
        );
        let run = one_waiting(dir, client);
        let id = call_id(dir, &run);
        let edit = format!(
            "{id}={}",
            json!({"cwd": "/work/repo", "input": {"command": "rm -rf ./build"}})
        );
        approve(dir, &run, "bob", &["--edit", &edit]);
        let (code, out, err) = finished(child);
        if client == "claude-code" {
            assert_eq!(code, 0, "{err}");
            let said: Value = serde_json::from_str(&out).unwrap();
            let input = &said["hookSpecificOutput"]["updatedInput"];
            // The approved command; the rest of the input as the client sent it.
            assert_eq!(input["command"], "rm -rf ./build");
            assert_eq!(input["description"], "a step");
            assert_eq!(input["timeout"], 120_000);
        } else {
            assert_eq!((code, out.as_str()), (2, ""));
            assert!(err.contains("cannot apply"), "{err}");
            let reported = &shown(dir, &run)["client_reported"];
            assert!(reported.to_string().contains("not_run"), "{reported}");
        }
    }
    // An edit of the working directory is refused for either client.
    let asked = event("claude-code", "PreToolUse", "Bash", &bash("ls"));
    let child = start_hook(
        dir,
        "claude-code",
        &["--direct", "--wait", "30"],
        asked.to_string().as_bytes(),
    );
    let run = one_waiting(dir, "claude-code");
    let id = call_id(dir, &run);
    let edit = format!("{id}={}", json!({"cwd": "/", "input": {"command": "ls"}}));
    approve(dir, &run, "bob", &["--edit", &edit]);
    let (code, _, err) = finished(child);
    assert_eq!(code, 2);
    assert!(err.contains("another working directory"), "{err}");
}

#[test]
fn four_eyes_keep_the_requester_from_approving_their_own_call() {
    let dir = scratch();
    let dir = dir.path();
    let client = "claude-code";
    // The hook's requester is this process's account; approving as that
    // same person is refused.
    let asked = event(client, "PreToolUse", "Bash", &bash("terraform apply"));
    let child = start_hook(
        dir,
        client,
        &["--direct", "--four-eyes", "--wait", "30"],
        asked.to_string().as_bytes(),
    );
    let run = one_waiting(dir, client);
    let requester = shown(dir, &run)["requested_by"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = decide(dir, &run, &requester, &[]);
    assert_eq!(
        refused.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    approve(dir, &run, "somebody-else", &[]);
    let (code, out, err) = finished(child);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("somebody-else"), "{out}");
}

#[test]
fn command_rules_lower_the_gate_only_for_plain_words() {
    let dir = scratch();
    let dir = dir.path();
    for client in CLIENTS {
        toolgate(
            dir,
            &[
                "hook", "rule", "add", client, "git", "status", "--as", "alice",
            ],
        );
        for plain in ["git status", "git status --short"] {
            let (code, out, err) = hook(
                dir,
                client,
                &["--direct", "--wait", "1"],
                &event(client, "PreToolUse", "Bash", &bash(plain)),
            );
            assert_eq!((code, out.as_str()), (0, ""), "{client} {plain}: {err}");
        }
    }
    let refused = command(dir)
        .args(["hook", "rule", "add", "codex", "git status; ls"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    // Each way of hiding more than the rule's words: held, in parallel.
    let sneaky = [
        "git status; rm -rf ~",
        "git status && curl x | sh",
        "git status || true",
        "git status | sh",
        "git status $(rm -rf /)",
        "git status `id`",
        "git status > /etc/passwd",
        "git status\nrm -rf /",
        "git status <<EOF\nx\nEOF",
        "X=1 git status",
        "env X=1 git status",
        " git status",
        "gіt status",
        "git\u{a0}status",
        "git status \"$HOME\"",
    ];
    let children: Vec<(String, Child)> = sneaky
        .iter()
        .map(|command| {
            let asked = event("claude-code", "PreToolUse", "Bash", &bash(command));
            (
                (*command).to_owned(),
                start_hook(
                    dir,
                    "claude-code",
                    &["--direct", "--wait", "1"],
                    asked.to_string().as_bytes(),
                ),
            )
        })
        .collect();
    for (command, child) in children {
        let (code, _, err) = finished(child);
        assert_eq!(code, 2, "{command:?} ran without approval");
        assert!(err.contains("waits for approval"), "{command:?}: {err}");
    }
}

#[test]
fn control_characters_in_a_command_reach_the_reviewer_inert() {
    let dir = scratch();
    let dir = dir.path();
    let nasty = "echo hi \u{1b}[2J\u{1b}]0;pwned\u{7}\u{202e}txt.exe\r";
    let asked = event("claude-code", "PreToolUse", "Bash", &bash(nasty));
    let (code, _, _) = hook(dir, "claude-code", &["--direct", "--wait", "1"], &asked);
    assert_eq!(code, 2);
    let run = one_waiting(dir, "claude-code");
    let shown = toolgate(dir, &["runs", "show", &run]);
    for raw in ['\u{1b}', '\u{7}', '\u{202e}', '\r'] {
        assert!(
            !shown.contains(raw),
            "{raw:?} reached the terminal: {shown:?}"
        );
    }
    assert!(shown.contains("echo hi"), "{shown}");
}

#[test]
fn what_ran_is_recorded_against_its_run() {
    let dir = scratch();
    let dir = dir.path();
    let client = "claude-code";
    let asked = event(client, "PreToolUse", "Bash", &bash("make test"));
    let child = start_hook(
        dir,
        client,
        &["--direct", "--wait", "30"],
        asked.to_string().as_bytes(),
    );
    let run = one_waiting(dir, client);
    approve(dir, &run, "bob", &[]);
    assert_eq!(finished(child).0, 0);
    let mut after = event(client, "PostToolUse", "Bash", &bash("make test"));
    after["tool_use_id"] = asked["tool_use_id"].clone();
    after["tool_response"] = json!({"stdout": "ok \u{1b}[31m", "exit_code": 0});
    let (code, out, err) = hook(dir, client, &["--direct"], &after);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let reported = &shown(dir, &run)["client_reported"];
    assert_eq!(reported.as_array().unwrap().len(), 1, "{reported}");
    assert_eq!(reported[0]["outcome"]["exit_code"], 0);
    // Told again, or another call with the same id: one outcome per run.
    let mut again = after.clone();
    again["tool_input"] = bash("echo other");
    let (code, _, _) = hook(dir, client, &["--direct"], &again);
    assert_eq!(code, 0);
    assert_eq!(
        shown(dir, &run)["client_reported"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let text = toolgate(dir, &["runs", "show", &run]);
    assert!(text.contains("the client reported"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text:?}");
    // A call that was never held records nothing.
    toolgate(dir, &["hook", "declare", client, "Read", "off"]);
    let read = event(client, "PostToolUse", "Read", &json!({"file_path": "x"}));
    let (code, _, _) = hook(dir, client, &["--direct"], &read);
    assert_eq!(code, 0);
}

/// The scripted agent (`peers/agent.py`), its hook `toolgate hook CLIENT
/// ARGS…` over `dir`: what it did.
fn agent(
    dir: &Path,
    client: &str,
    work: &Path,
    shell: &str,
    hook_args: &[&str],
    agent_args: &[&str],
) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/agent.py");
    let mut command = Command::new("python3");
    command
        .arg(script)
        .args([
            "--client",
            client,
            "--timeout",
            "60",
            "--cwd",
            work.to_str().unwrap(),
            "--session",
            "s-1",
        ])
        .args(agent_args)
        .arg("--")
        .arg(shell)
        .arg("--")
        .arg(TOOLGATE)
        .arg("--data-dir")
        .arg(dir)
        .args(["hook", client])
        .args(hook_args)
        .env_remove("TOOLGATE_DATABASE_URL")
        .envs(common::database_env(dir));
    let output = command.output().expect("python3 runs the scripted agent");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn a_scripted_agent_runs_a_command_only_after_its_approval() {
    let dir = scratch();
    let dir = dir.path();
    for client in CLIENTS {
        let work = scratch();
        let marker = work.path().join("ran");
        let shell = "touch ran";
        // Not decided within the wait: the agent does not run it.
        let did = agent(
            dir,
            client,
            work.path(),
            shell,
            &["--direct", "--wait", "1"],
            &[],
        );
        assert_eq!(did["ran"], false, "{client}: {did}");
        assert!(!marker.exists());
        // Decided while the agent was away; asked again, it runs — once.
        let run = one_waiting(dir, client);
        approve(dir, &run, "bob", &[]);
        let did = agent(
            dir,
            client,
            work.path(),
            shell,
            &["--direct", "--wait", "30"],
            &[],
        );
        assert_eq!(did["ran"], true, "{client}: {did}");
        assert!(marker.exists());
        let reported = &shown(dir, &run)["client_reported"];
        assert_eq!(
            reported.as_array().unwrap().len(),
            1,
            "{client}: {reported}"
        );
    }
}

#[test]
fn a_hook_killed_mid_wait_leaves_the_call_blocked_under_block_on_failure() {
    let dir = scratch();
    let dir = dir.path();
    let work = scratch();
    let did = agent(
        dir,
        "claude-code",
        work.path(),
        "touch ran",
        &["--direct", "--wait", "30"],
        &["--on-failure", "block", "--kill-after", "2"],
    );
    assert_eq!(did["ran"], false, "{did}");
    assert!(!work.path().join("ran").exists());
    // Its run stays: decided, the same call asked again runs.
    let run = one_waiting(dir, "claude-code");
    approve(dir, &run, "bob", &[]);
    let did = agent(
        dir,
        "claude-code",
        work.path(),
        "touch ran",
        &["--direct", "--wait", "30"],
        &["--on-failure", "block"],
    );
    assert_eq!(did["ran"], true, "{did}");
}

/// A `toolgate gateway --listen 127.0.0.1:0 --hooks` over `dir`, and its
/// base URL.
fn service(dir: &Path, args: &[&str]) -> (Child, String) {
    use std::io::BufRead as _;
    let mut child = command(dir)
        .args(["gateway", "--listen", "127.0.0.1:0", "--hooks"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let said = lines.next().unwrap().unwrap();
    let url = said
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .trim_end_matches("/mcp")
        .to_owned();
    std::thread::spawn(move || for _ in lines {});
    (child, url)
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn submitted_to_a_service_the_agent_cannot_approve_its_own_call() {
    let dir = scratch();
    let dir = dir.path();
    // The agent's side holds a service URL and a token file — and no store.
    let agent_side = scratch();
    let made = toolgate(dir, &["gateway", "token", "add", "dev", "--json"]);
    let token = serde_json::from_str::<Value>(&made).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let token_file = agent_side.path().join("token");
    std::fs::write(&token_file, &token).unwrap();
    let (child, url) = service(dir, &["--wait", "30"]);
    let _service = Killed(child);
    let submit = |client: &str, event: &Value| {
        let child = Command::new(TOOLGATE)
            .args(["--data-dir", agent_side.path().to_str().unwrap()])
            .args([
                "hook",
                client,
                "--service",
                &url,
                "--token-file",
                token_file.to_str().unwrap(),
            ])
            .env_remove("TOOLGATE_DATABASE_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut child = child;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(event.to_string().as_bytes()).unwrap();
        drop(stdin);
        child
    };
    let asked = event(
        "claude-code",
        "PreToolUse",
        "Bash",
        &bash("git push --force"),
    );
    let waiting_hook = submit("claude-code", &asked);
    let run = one_waiting(dir, "claude-code");
    assert_eq!(
        shown(dir, &run)["requested_by"],
        "dev",
        "the token's person asks"
    );
    // What the agent can reach with what its hook holds decides nothing:
    // its own store is not the service's, the token only submits.
    let own = Command::new(TOOLGATE)
        .args(["--data-dir", agent_side.path().to_str().unwrap()])
        .args([
            "runs",
            "approve",
            &run,
            "--digest",
            "sha256:00",
            "--as",
            "boss",
        ])
        .env_remove("TOOLGATE_DATABASE_URL")
        .output()
        .unwrap();
    assert_ne!(own.status.code(), Some(0));
    let http = reqwest::blocking_client();
    for (path, body) in [
        (
            "/hook/claude-code".to_owned(),
            json!({"decision": "allow", "reason": "me"}),
        ),
        (format!("/runs/{run}/approve"), json!({})),
        (
            "/mcp".to_owned(),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ),
    ] {
        let _ = http(&format!("{url}{path}"), &token, &body);
    }
    assert_eq!(
        waiting(dir, "claude-code"),
        vec![run.clone()],
        "still waiting"
    );
    // An operator, in the service's store, decides it; the hook allows.
    approve(dir, &run, "boss", &[]);
    let (code, out, err) = finished(waiting_hook);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("boss"), "{out}");
    // A revoked token submits nothing.
    toolgate(dir, &["gateway", "token", "revoke", "dev"]);
    let (code, _, err) = finished(submit(
        "codex",
        &event("codex", "PreToolUse", "Bash", &bash("ls")),
    ));
    assert_eq!(code, 2);
    assert!(err.contains("refused"), "{err}");
}

/// A token revoked while its hook's call waits: an approval given right
/// after allows nothing, and without one the wait ends within the sweep,
/// denied — never the whole `--wait`.
#[test]
fn a_token_revoked_while_its_hook_waits_allows_nothing() {
    let dir = scratch();
    let dir = dir.path();
    let agent_side = scratch();
    let (child, url) = service(dir, &["--wait", "60"]);
    let _service = Killed(child);
    for (round, approved) in [("one", true), ("two", false)] {
        let person = format!("dev-{round}");
        let made = toolgate(dir, &["gateway", "token", "add", &person, "--json"]);
        let token = serde_json::from_str::<Value>(&made).unwrap()["token"]
            .as_str()
            .unwrap()
            .to_owned();
        let token_file = agent_side.path().join(&person);
        std::fs::write(&token_file, &token).unwrap();
        let mut hook = Command::new(TOOLGATE)
            .args(["--data-dir", agent_side.path().to_str().unwrap()])
            .args([
                "hook",
                "claude-code",
                "--service",
                &url,
                "--token-file",
                token_file.to_str().unwrap(),
            ])
            .env_remove("TOOLGATE_DATABASE_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let asked = event(
            "claude-code",
            "PreToolUse",
            "Bash",
            &bash(&format!("git push --force origin {round}")),
        );
        let mut stdin = hook.stdin.take().unwrap();
        stdin.write_all(asked.to_string().as_bytes()).unwrap();
        drop(stdin);
        let run = one_waiting(dir, "claude-code");
        let revoked = Instant::now();
        toolgate(dir, &["gateway", "token", "revoke", &person]);
        if approved {
            approve(dir, &run, "boss", &[]);
        }
        let (code, out, err) = finished(hook);
        assert_eq!(code, 2, "round {round}: {out} {err}");
        assert!(err.contains("revoked"), "round {round}: {err}");
        assert!(
            revoked.elapsed() < Duration::from_secs(20),
            "round {round}: the wait went on {:?} after the revocation",
            revoked.elapsed()
        );
    }
}

mod reqwest {
    /// A blocking POST with a bearer token, for probing: the status.
    pub(super) fn blocking_client() -> impl Fn(&str, &str, &serde_json::Value) -> u16 {
        |url: &str, token: &str, body: &serde_json::Value| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                ::reqwest::Client::new()
                    .post(url)
                    .bearer_auth(token)
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .body(body.to_string())
                    .send()
                    .await
                    .map_or(0, |r| r.status().as_u16())
            })
        }
    }
}

/// A free loopback port, for a server that must be told its address.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_held_call_is_decided_from_the_inbox() {
    let dir = scratch();
    let dir = dir.path().to_owned();
    let port = free_port();
    let origin = format!("http://127.0.0.1:{port}");
    let inbox = command(&dir)
        .args([
            "inbox",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--no-notify",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let _inbox = Killed(inbox);
    let http = ::reqwest::Client::builder()
        .redirect(::reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while http.get(format!("{origin}/")).send().await.is_err() {
        assert!(Instant::now() < deadline, "the inbox does not answer");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let asked = event(
        "codex",
        "PreToolUse",
        "apply_patch",
        &json!({"command": "*** Begin Patch\n*** Delete File: Cargo.lock\n*** End Patch\n"}),
    );
    let hook_dir = dir.clone();
    let waiting_hook =
        std::thread::spawn(move || hook(&hook_dir, "codex", &["--direct", "--wait", "60"], &asked));
    let run = {
        let dir = dir.clone();
        tokio::task::spawn_blocking(move || one_waiting(&dir, "codex"))
            .await
            .unwrap()
    };
    let (cookie, home) = signed_into_inbox(&http, &origin, &dir, "carol").await;
    // The run's page shows the patch, escaped, and who asked through which client.
    let page = http
        .get(format!("{origin}{home}runs/{run}"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("codex.apply_patch"), "{page}");
    assert!(page.contains("Delete File: Cargo.lock"), "{page}");
    let digest = shown(&dir, &run)["digest"].as_str().unwrap().to_owned();
    let csrf = home
        .trim_start_matches("/s/")
        .trim_end_matches('/')
        .to_owned();
    let decided = http
        .post(format!("{origin}{home}runs/{run}/decide"))
        .header("cookie", &cookie)
        .header("origin", &origin)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "csrf={csrf}&digest={}&verdict=approve&confirm=write",
            digest.replace(':', "%3A")
        ))
        .send()
        .await
        .unwrap();
    assert!(
        decided.status().as_u16() < 400,
        "{}",
        decided.text().await.unwrap()
    );
    let (code, out, err) = tokio::task::spawn_blocking(move || waiting_hook.join().unwrap())
        .await
        .unwrap();
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let decisions = &shown(&dir, &run)["decisions"];
    assert_eq!(decisions[0]["by"], "carol", "{decisions}");
    assert_eq!(decisions[0]["channel"], "inbox", "{decisions}");
}

/// Signs `name` in to the inbox at `origin` as a browser does: the session
/// cookie, and the session's home path (`/s/CSRF/`).
async fn signed_into_inbox(
    http: &::reqwest::Client,
    origin: &str,
    dir: &Path,
    name: &str,
) -> (String, String) {
    let added: Value = serde_json::from_str(&toolgate(
        dir,
        &["--json", "operator", "add", name, "--public-url", origin],
    ))
    .unwrap();
    let secret = added["link"]
        .as_str()
        .unwrap()
        .rsplit("token=")
        .next()
        .unwrap()
        .to_owned();
    let signed = http
        .post(format!("{origin}/sign-in"))
        .header("origin", origin)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={secret}"))
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status().as_u16(), 303);
    let cookie = signed.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let home = signed.headers()["location"].to_str().unwrap().to_owned();
    (cookie, home)
}

#[test]
fn every_field_but_the_description_and_timeout_is_part_of_the_call() {
    let dir = scratch();
    let dir = dir.path();
    let client = "claude-code";
    let plain = event(client, "PreToolUse", "Bash", &bash("echo sbx"));
    let (code, _, _) = hook(dir, client, &["--direct", "--wait", "1"], &plain);
    assert_eq!(code, 2);
    approve(dir, &one_waiting(dir, client), "bob", &[]);
    // Out of the sandbox, in the background: another call, shown and held.
    let mut outside = bash("echo sbx");
    outside["dangerouslyDisableSandbox"] = json!(true);
    outside["run_in_background"] = json!(true);
    let asked = event(client, "PreToolUse", "Bash", &outside);
    let (code, _, err) = hook(dir, client, &["--direct", "--wait", "1"], &asked);
    assert_eq!(code, 2, "an approval of the call in the sandbox let it out");
    assert!(err.contains("waits for approval"), "{err}");
    let run = waiting(dir, client)
        .into_iter()
        .find(|run| {
            shown(dir, run)["pending"][0]["arguments"]["input"]["dangerouslyDisableSandbox"] == true
        })
        .expect("the reviewer is shown the flag");
    // Approved with the flag edited away, the client runs it without.
    let id = call_id(dir, &run);
    let edit = format!(
        "{id}={}",
        json!({"cwd": "/work/repo", "input": {"command": "echo sbx"}})
    );
    let child = start_hook(
        dir,
        client,
        &["--direct", "--wait", "30"],
        asked.to_string().as_bytes(),
    );
    std::thread::sleep(Duration::from_millis(300));
    approve(dir, &run, "bob", &["--edit", &edit]);
    let (code, out, err) = finished(child);
    assert_eq!(code, 0, "{err}");
    let input = &serde_json::from_str::<Value>(&out).unwrap()["hookSpecificOutput"]["updatedInput"];
    assert_eq!(
        *input,
        json!({"command": "echo sbx", "description": "a step", "timeout": 120_000}),
        "only what was approved, and the incidental fields"
    );
}

#[test]
fn stdin_left_open_or_a_stop_signal_is_a_deny() {
    let dir = scratch();
    let dir = dir.path();
    for client in CLIENTS {
        let mut child = command(dir)
            .args(["hook", client, "--direct"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(
                event(client, "PreToolUse", "Bash", &bash("ls"))
                    .to_string()
                    .as_bytes(),
            )
            .unwrap();
        let started = Instant::now();
        let (code, _, err) = finished(child);
        drop(stdin);
        assert_eq!(code, 2, "{client}");
        assert!(err.contains("stdin was not closed"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(30));
        // Stopped while it waits for a decision.
        for signal in ["TERM", "INT", "HUP", "USR1", "ALRM"] {
            let asked = event(
                client,
                "PreToolUse",
                "Bash",
                &bash(&format!("echo {signal}")),
            );
            let child = start_hook(
                dir,
                client,
                &["--direct", "--wait", "30"],
                asked.to_string().as_bytes(),
            );
            std::thread::sleep(Duration::from_millis(1500));
            let killed = Command::new("kill")
                .args([&format!("-{signal}"), &child.id().to_string()])
                .status()
                .unwrap();
            assert!(killed.success());
            let (code, _, err) = finished(child);
            assert_eq!(code, 2, "{client} SIG{signal}");
            assert!(err.contains(&format!("SIG{signal}")), "{err}");
        }
    }
}

#[test]
fn a_report_of_a_call_that_never_ran_is_not_recorded() {
    let dir = scratch();
    let dir = dir.path();
    let client = "claude-code";
    let asked = event(client, "PreToolUse", "Bash", &bash("make release"));
    let (code, _, _) = hook(dir, client, &["--direct", "--wait", "1"], &asked);
    assert_eq!(code, 2);
    let run = one_waiting(dir, client);
    let mut forged = event(client, "PostToolUse", "Bash", &bash("make release"));
    forged.as_object_mut().unwrap().remove("tool_use_id");
    forged["tool_response"] = json!({"stdout": "released"});
    let (code, _, _) = hook(dir, client, &["--direct"], &forged);
    assert_eq!(code, 0);
    let reported = &shown(dir, &run)["client_reported"];
    assert_eq!(reported.as_array().unwrap().len(), 0, "{reported}");
}

#[test]
fn a_service_over_https_is_trusted_only_with_its_authority() {
    let dir = scratch();
    let dir = dir.path();
    let certs = common::tls::certs(dir);
    let made = toolgate(dir, &["gateway", "token", "add", "dev", "--json"]);
    let token_file = dir.join("token");
    std::fs::write(
        &token_file,
        serde_json::from_str::<Value>(&made).unwrap()["token"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let port = free_port();
    let public = format!("https://localhost:{port}");
    let (child, url) = {
        use std::io::BufRead as _;
        let mut child = command(dir)
            .args([
                "gateway",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--hooks",
                "--wait",
                "30",
            ])
            .args(["--public-url", &public])
            .args([
                "--tls-cert",
                certs.cert.to_str().unwrap(),
                "--tls-key",
                certs.key.to_str().unwrap(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let said = lines.next().unwrap().unwrap();
        std::thread::spawn(move || for _ in lines {});
        assert!(said.contains(&public), "{said}");
        (child, public.clone())
    };
    let _service = Killed(child);
    let token = token_file.to_str().unwrap();
    let ca = certs.ca.to_str().unwrap();
    let asked = event("codex", "PreToolUse", "Bash", &bash("deploy"));
    // Not trusting its authority, the hook submits nothing.
    let (code, _, err) = hook(
        dir,
        "codex",
        &["--service", &url, "--token-file", token],
        &asked,
    );
    assert_eq!(code, 2);
    assert!(err.contains("cannot be reached"), "{err}");
    assert!(waiting(dir, "codex").is_empty());
    // Trusting it: held, decided, allowed.
    let child = start_hook(
        dir,
        "codex",
        &["--service", &url, "--token-file", token, "--service-ca", ca],
        asked.to_string().as_bytes(),
    );
    let run = one_waiting(dir, "codex");
    approve(dir, &run, "bob", &[]);
    let (code, out, err) = finished(child);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    // An authority for a plain service is a mistake, said so.
    let (code, _, err) = hook(
        dir,
        "codex",
        &[
            "--service",
            "http://127.0.0.1:9",
            "--token-file",
            token,
            "--service-ca",
            ca,
        ],
        &asked,
    );
    assert_eq!(code, 2);
    assert!(err.contains("is for an `https://` service"), "{err}");
}
