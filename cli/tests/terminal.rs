//! What a person sees: the `toolgate` binary's real output, rendered through
//! a terminal emulator (vt100), for a suspended run whose pending turn a
//! hostile model filled with escape sequences, bidi controls and invisible
//! characters.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::num::NonZeroU16;
use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use toolgate::visible::{is_hidden, visible, visible_json};
use toolgate::{
    Agent, Execute, Registry, Tool, ToolOutput,
    run::{Message, RunOptions, RunState, ToolCall, TurnOutcome},
    suspend::SuspendedRun,
    testing::{MemoryLog, ScriptedModel},
};

mod common;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}
use common::TOOLGATE;

/// A stand-in with the demo's `write_file` name and effect, so the turn
/// suspends for approval as the demo's would; it never runs.
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

/// Counts what a terminal would do besides drawing text: a bell, a title, a
/// clipboard write, a sequence it does not know.
#[derive(Default)]
struct Effects(Vec<String>);

impl vt100::Callbacks for Effects {
    fn audible_bell(&mut self, _: &mut vt100::Screen) {
        self.0.push("bell".into());
    }
    fn visual_bell(&mut self, _: &mut vt100::Screen) {
        self.0.push("visual bell".into());
    }
    fn resize(&mut self, _: &mut vt100::Screen, request: (u16, u16)) {
        self.0.push(format!("resize {request:?}"));
    }
    fn set_window_icon_name(&mut self, _: &mut vt100::Screen, name: &[u8]) {
        self.0
            .push(format!("icon name {}", String::from_utf8_lossy(name)));
    }
    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.0
            .push(format!("title {}", String::from_utf8_lossy(title)));
    }
    fn copy_to_clipboard(&mut self, _: &mut vt100::Screen, _: &[u8], data: &[u8]) {
        self.0
            .push(format!("clipboard {}", String::from_utf8_lossy(data)));
    }
    fn paste_from_clipboard(&mut self, _: &mut vt100::Screen, _: &[u8]) {
        self.0.push("paste".into());
    }
    fn unhandled_char(&mut self, _: &mut vt100::Screen, c: char) {
        self.0.push(format!("unhandled char {c:?}"));
    }
    fn unhandled_control(&mut self, _: &mut vt100::Screen, b: u8) {
        self.0.push(format!("unhandled control {b:#x}"));
    }
    fn unhandled_escape(&mut self, _: &mut vt100::Screen, _: Option<u8>, _: Option<u8>, b: u8) {
        self.0.push(format!("unhandled escape {b:#x}"));
    }
    fn unhandled_csi(
        &mut self,
        _: &mut vt100::Screen,
        _: Option<u8>,
        _: Option<u8>,
        _: &[&[u16]],
        c: char,
    ) {
        self.0.push(format!("unhandled csi {c:?}"));
    }
    fn unhandled_osc(&mut self, _: &mut vt100::Screen, _: &[&[u8]]) {
        self.0.push("unhandled osc".into());
    }
}

/// A screen with room for everything the commands print, so nothing wraps or
/// scrolls away.
fn screen(bytes: &[u8]) -> (String, Vec<String>) {
    let (Some(rows), Some(cols)) = (NonZeroU16::new(200), NonZeroU16::new(1000)) else {
        unreachable!("both are non-zero");
    };
    let mut parser = vt100::Parser::new_with_callbacks(rows, cols, 0, Effects::default());
    // A terminal's line discipline turns each line feed into CR LF (onlcr);
    // the emulator is fed what the terminal would receive.
    let mut fed = Vec::with_capacity(bytes.len() + 64);
    for &b in bytes {
        if b == b'\n' {
            fed.push(b'\r');
        }
        fed.push(b);
    }
    parser.process(&fed);
    (parser.screen().contents(), parser.callbacks().0.clone())
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
        .env_remove("NO_COLOR")
        .env_remove("TOOLGATE_OPERATOR")
        .env_remove("TOOLGATE_LOG")
        .output();
    match output {
        Ok(output) if output.status.success() => output,
        Ok(output) => panic!(
            "toolgate {args:?} failed ({:?}):\n{}\n{}",
            output.status.code(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(error) => panic!("cannot run toolgate: {error}"),
    }
}

/// Every hostile sequence, in call ids, tool names, argument keys and values.
fn hostile_calls() -> Vec<ToolCall> {
    vec![
        ToolCall {
            id: "call_1".into(),
            name: "write_file".into(),
            arguments: json!({"path": "Cargo.toml", "content": "version = \"0.2.0\"\n"}),
        },
        ToolCall {
            // Erase this line, move up, erase the line above (the
            // `write_file` row), and draw a row of its own there.
            id: "\u{1b}[2K\u{1b}[1A\u{1b}[2K\r│ call_3".into(),
            name: "read_file\u{1b}]0;hi\u{7}".into(),
            arguments: json!({"path": "\u{1b}[2K\u{1b}[1A\u{1b}[2K\r│ harmless"}),
        },
        ToolCall {
            // A C1 CSI clears the screen; backspaces eat what was drawn.
            id: "call_4\u{9b}2J\u{8}\u{8}\u{8}\u{8}\u{8}\u{8}".into(),
            name: "notes.write_note\rread_file".into(),
            arguments: json!({"text": "ok\u{8}\u{8}\u{8}\u{7f}\u{9b}1A", "\r\u{1b}[31m": "red"}),
        },
        ToolCall {
            // Bidi override and isolate: text that reads in another order.
            id: "call_5\u{202e}txt.exe\u{2066}".into(),
            name: "delete\u{202e}elif_daer".into(),
            arguments: json!({"path": "\u{2066}/etc/passwd\u{2069}\u{202e}txt.", "to": "a\u{2028}b"}),
        },
        ToolCall {
            // Invisible characters: zero-width space, byte order mark, tag
            // characters that spell a hidden instruction, a line separator.
            id: "call_\u{200b}6\u{feff}".into(),
            name: "read\u{200b}_file\u{e0041}\u{e0042}".into(),
            arguments: json!({"note": "\u{e0049}\u{e0047}\u{e004e}\u{e004f}\u{e0052}\u{e0045}", "\u{feff}k": "\u{200b}"}),
        },
    ]
}

/// A suspended run, as a host would have stored it, whose pending turn holds
/// the hostile calls beside a `write_file` call that needs approval.
fn store_hostile_run(dir: &Path, run_id: &str, requested_by: &str) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => panic!("{error}"),
    };
    runtime.block_on(async {
        let store = match toolgate_store::Store::open(common::location(dir)).await {
            Ok(store) => store,
            Err(error) => panic!("{error}"),
        };
        let registry = match Registry::builder().builtin(WriteFile).build() {
            Ok(registry) => registry,
            Err(error) => panic!("{error}"),
        };
        let model = ScriptedModel::default();
        let log = MemoryLog::new();
        let agent = Agent::new(&registry, &model, &log);
        let calls = hostile_calls();
        let state = RunState {
            denied: Vec::new(),
            client: None,
            run_id: run_id.into(),
            requested_by: requested_by.into(),
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
        let suspended = match agent.process_turn(state, calls).await {
            Ok(TurnOutcome::AwaitingApproval(suspended)) => suspended,
            Ok(other) => panic!("the turn should wait for approval: {other:?}"),
            Err(error) => panic!("{error}"),
        };
        if let Err(error) = store
            .save_suspended(&SuspendedRun::AwaitingApproval(suspended), "demo")
            .await
        {
            panic!("{error}");
        }
        store.close().await;
    });
}

/// Nothing a terminal would act on or hide: no ESC (so no CSI or OSC), no C1
/// control, no carriage return, backspace or bell, no bidi, zero-width or tag
/// character. Line breaks are the only control left.
fn assert_plain(command: &str, bytes: &[u8]) {
    assert!(
        !bytes.contains(&0x1b),
        "`{command}` wrote an ESC byte with stdout not a terminal"
    );
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => panic!("`{command}` wrote text that is not UTF-8: {error}"),
    };
    let hidden: Vec<String> = text
        .chars()
        .filter(|&c| c != '\n' && is_hidden(c))
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect();
    assert!(hidden.is_empty(), "`{command}` wrote {hidden:?}:\n{text}");
}

/// The screen shows exactly the lines written, each on its own row: no line
/// was erased, overwritten, moved or reordered.
fn assert_screen_is_the_text(command: &str, bytes: &[u8]) -> String {
    let (contents, effects) = screen(bytes);
    assert!(
        effects.is_empty(),
        "`{command}` made the terminal do {effects:?}"
    );
    let text = String::from_utf8_lossy(bytes);
    let written: Vec<&str> = text.lines().map(str::trim_end).collect();
    let shown: Vec<&str> = contents.lines().map(str::trim_end).collect();
    assert_eq!(
        shown, written,
        "`{command}`: the screen differs from the lines written"
    );
    contents
}

/// The cells of a table row as the screen shows them (`│ a ┆ b │`), trimmed;
/// empty for any other line.
fn cells(line: &str) -> Vec<&str> {
    line.trim_end()
        .strip_prefix('│')
        .and_then(|l| l.strip_suffix('│'))
        .map(|l| l.split('┆').map(str::trim).collect())
        .unwrap_or_default()
}

#[test]
fn the_emulator_falls_for_the_attack_on_raw_text() {
    // The checks of what the screen shows are not passed by accident: the
    // same row written raw erases the `write_file` row above it and
    // retitles the window.
    let calls = hostile_calls();
    let raw = format!(
        "│ call_1 ┆ write_file ┆ approval\n│ {} ┆ {}\n",
        calls[1].id, calls[1].name
    );
    let (raw_screen, effects) = screen(raw.as_bytes());
    assert!(
        !raw_screen.contains("write_file"),
        "the attack should work on raw text: {raw_screen}"
    );
    assert!(effects.contains(&"title hi".to_owned()), "{effects:?}");
}

#[test]
fn a_hostile_pending_turn_reads_on_a_terminal_exactly_as_it_is() {
    let dir = temp();
    let dir = dir.path();
    let run_id = "run-\u{1b}]0;pwned\u{7}-\u{202e}1";
    let requested_by = "mallory\u{1b}[2K\u{202e}nimda";
    store_hostile_run(dir, run_id, requested_by);
    let calls = hostile_calls();

    let shown = toolgate(dir, &["runs", "show", run_id]);
    assert_plain("runs show", &shown.stdout);
    let contents = assert_screen_is_the_text("runs show", &shown.stdout);

    // Every pending call is one row of the table, whole: its id, tool name
    // and arguments, escaped, side by side.
    for call in &calls {
        let (id, name, arguments) = (
            visible(&call.id),
            visible(&call.name),
            visible_json(&call.arguments),
        );
        let row = contents
            .lines()
            .map(cells)
            .find(|cells| cells.first() == Some(&id.as_ref()));
        let Some(row) = row else {
            panic!("no row for call id `{id}`:\n{contents}");
        };
        let gate = if call.name == "write_file" {
            "approval"
        } else {
            "not offered"
        };
        let state = if gate == "approval" {
            "needs a verdict"
        } else {
            "-"
        };
        assert_eq!(
            row,
            [id.as_ref(), name.as_ref(), gate, arguments.as_str(), state],
            "\n{contents}"
        );
    }
    let table_rows = contents
        .lines()
        .filter(|l| l.starts_with("│ ") && l.contains(" ┆ "))
        .count();
    assert_eq!(
        table_rows,
        1 + calls.len(),
        "the header and one row per pending call:\n{contents}"
    );
    assert_eq!(
        contents
            .lines()
            .map(cells)
            .find(|c| c.contains(&"write_file")),
        Some(vec![
            "call_1",
            "write_file",
            "approval",
            r#"{"content":"version = \"0.2.0\"\n","path":"Cargo.toml"}"#,
            "needs a verdict"
        ]),
        "\n{contents}"
    );
    assert!(
        contents.contains(&format!(
            "run {} — awaiting approval — requested by {}",
            visible(run_id),
            visible(requested_by)
        )),
        "{contents}"
    );
    // Escaped means spelled out: the bytes of each attack are there to read.
    for spelled in [
        r"\u{1b}[2K\u{1b}[1A\u{1b}[2K\u{d}│ call_3",
        r"read_file\u{1b}]0;hi\u{7}",
        r"call_4\u{9b}2J\u{8}",
        r"call_5\u{202e}txt.exe\u{2066}",
        r"call_\u{200b}6\u{feff}",
        r"read\u{200b}_file\u{e0041}\u{e0042}",
        r#""to":"a\u2028b""#,
    ] {
        assert!(contents.contains(spelled), "missing {spelled}:\n{contents}");
    }

    let listed = toolgate(dir, &["runs", "list"]);
    assert_plain("runs list", &listed.stdout);
    let contents = assert_screen_is_the_text("runs list", &listed.stdout);
    let row = contents
        .lines()
        .map(cells)
        .find(|c| c.first() == Some(&visible(run_id).as_ref()));
    let Some(row) = row else {
        panic!("the run is not listed:\n{contents}");
    };
    assert_eq!(
        [row[1], row[4]],
        ["approval", visible(requested_by).as_ref()],
        "\n{contents}"
    );

    json_output_is_exact_and_terminal_safe(dir, run_id, &calls);
}

/// Scripts still get exact JSON, and the JSON text is safe on a terminal.
fn json_output_is_exact_and_terminal_safe(dir: &Path, run_id: &str, calls: &[ToolCall]) {
    let json = toolgate(dir, &["--json", "runs", "show", run_id]);
    let value: Value = match serde_json::from_slice(&json.stdout) {
        Ok(value) => value,
        Err(error) => panic!("not JSON: {error}"),
    };
    let ids: Vec<&str> = value["pending"]
        .as_array()
        .map(|p| p.iter().filter_map(|c| c["id"].as_str()).collect())
        .unwrap_or_default();
    let expected: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, expected);
    // ... and the JSON text is safe on a terminal too: C1 controls, bidi and
    // invisible characters inside its strings are `\u` escapes, not raw.
    let text = String::from_utf8_lossy(&json.stdout);
    assert!(
        !text.chars().any(|c| c != '\n' && is_hidden(c)),
        "raw hidden characters in --json output"
    );
    let (contents, effects) = screen(&json.stdout);
    assert!(effects.is_empty(), "the terminal only drew: {effects:?}");
    for call in calls {
        let shown = serde_json::to_string(&call.id).unwrap_or_default();
        let shown = toolgate::visible::visible_json_text(&shown);
        assert!(
            contents.contains(shown.as_ref()),
            "call {shown} is visible in --json output"
        );
    }
}

#[test]
fn a_stdio_servers_stderr_is_logged_escaped_and_logs_are_plain_without_a_terminal() {
    let dir = temp();
    let dir = dir.path();
    // A server that retitles the window, erases the line and rings the bell
    // on its stderr before it starts serving.
    let script =
        r#"printf '\033]0;pwned\007\033[2K\rboom\342\200\256!\n' >&2; exec "$0" mcp-test-server"#;
    toolgate(
        dir,
        &[
            "server",
            "add",
            "loud",
            "--name",
            "Loud \u{1b}[31mred\u{1b}[0m",
            "--data-class",
            "editor_content",
            "--",
            "sh",
            "-c",
            script,
            TOOLGATE,
        ],
    );
    let output = common::command(dir)
        .args(["import", "loud"])
        .env_remove("NO_COLOR")
        .env("TOOLGATE_LOG", "info")
        .output();
    let output = match output {
        Ok(output) if output.status.success() => output,
        Ok(output) => panic!("import failed: {}", String::from_utf8_lossy(&output.stderr)),
        Err(error) => panic!("{error}"),
    };
    assert_plain("import (stdout)", &output.stdout);
    assert_plain("import (stderr)", &output.stderr);
    let log = assert_screen_is_the_text("import (stderr)", &output.stderr);
    let line = log
        .lines()
        .find(|l| l.contains("server stderr"))
        .unwrap_or_default();
    assert!(line.contains(" INFO "), "plain level, no colour: {log}");
    assert!(line.contains("server=loud"), "names the server: {log}");
    assert!(
        line.contains(r"pwned") && line.contains("boom") && line.contains(r"u{202e}!"),
        "the line is there to read, escaped: {log}"
    );

    let listed = toolgate(dir, &["server", "list"]);
    assert_plain("server list", &listed.stdout);
    let contents = assert_screen_is_the_text("server list", &listed.stdout);
    assert!(
        contents.contains(&visible("Loud \u{1b}[31mred\u{1b}[0m").into_owned()),
        "{contents}"
    );
    let shown = toolgate(dir, &["server", "show", "loud"]);
    assert_plain("server show", &shown.stdout);
    assert_screen_is_the_text("server show", &shown.stdout);
}
