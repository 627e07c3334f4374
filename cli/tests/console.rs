//! The console's edges, as a newcomer meets them: runs named by a prefix of
//! their id, who acts without `--as`, a database URL that is no file name,
//! usage errors that say what is missing, tables that fit, and listings
//! that tell the truth about this store.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::path::Path;
use std::process::Output;

use serde_json::Value;

mod common;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres() {
    common::backend::rerun_on_postgres();
}

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().expect("a scratch directory")
}

fn toolgate(dir: &Path, args: &[&str]) -> Output {
    toolgate_in(dir, args, None)
}

/// `toolgate` with tables fitted to `columns`, or (none) not fitted, as on
/// a pipe.
fn toolgate_in(dir: &Path, args: &[&str], columns: Option<u16>) -> Output {
    let mut command = common::command(dir);
    match columns {
        Some(columns) => command.env("COLUMNS", columns.to_string()),
        None => command.env_remove("COLUMNS"),
    };
    command
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("TOOLGATE_OPERATOR")
        .output()
        .expect("toolgate runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs a command that must succeed; its standard output.
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

/// Runs a command that must fail with `code`; its standard error.
fn fails(dir: &Path, args: &[&str], code: i32) -> String {
    let output = toolgate(dir, args);
    assert_eq!(
        output.status.code(),
        Some(code),
        "toolgate {args:?}:\n{}\n{}",
        stdout(&output),
        stderr(&output)
    );
    stderr(&output)
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let text = ok(dir, &[&["--json"], args].concat());
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The demo, detached: one run that waits for approval. Its id and digest.
fn waiting_demo(dir: &Path) -> (String, String) {
    ok(dir, &["demo", "--detach", "--as", "alice"]);
    let runs = json(dir, &["runs", "list"]);
    let id = runs[0]["run"].as_str().expect("a run id").to_owned();
    let shown = json(dir, &["runs", "show", &id]);
    let digest = shown["digest"].as_str().expect("a digest").to_owned();
    (id, digest)
}

/// Stores a second suspension row under `to`, copied from run `from`'s,
/// decided — behind the store's back, as only a test does — so that two
/// runs' ids share a prefix.
fn copy_run(dir: &Path, from: &str, to: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let statements = [
            "CREATE TEMP TABLE run_copy AS SELECT * FROM suspended_run WHERE run_id = $1",
            "UPDATE run_copy SET id = id + 1000000, run_id = $1, state = 'decided'",
            "INSERT INTO suspended_run SELECT * FROM run_copy",
        ];
        match common::location(dir) {
            toolgate_store::Location::Sqlite(path) => {
                let options = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
                let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
                let mut tx = pool.begin().await.unwrap();
                for (statement, bind) in statements.into_iter().zip([Some(from), Some(to), None]) {
                    let mut query = sqlx::query(statement);
                    if let Some(bind) = bind {
                        query = query.bind(bind);
                    }
                    query.execute(&mut *tx).await.unwrap();
                }
                tx.commit().await.unwrap();
            }
            toolgate_store::Location::Postgres(url) => {
                let pool = sqlx::PgPool::connect(&url).await.unwrap();
                let mut tx = pool.begin().await.unwrap();
                for (statement, bind) in statements.into_iter().zip([Some(from), Some(to), None]) {
                    let mut query = sqlx::query(statement);
                    if let Some(bind) = bind {
                        query = query.bind(bind);
                    }
                    query.execute(&mut *tx).await.unwrap();
                }
                tx.commit().await.unwrap();
            }
        }
    });
}

#[test]
fn a_run_is_named_by_a_unique_prefix_of_its_id() {
    let dir = temp();
    let dir = dir.path();
    let (run, digest) = waiting_demo(dir);

    // Eight characters are enough for every command that takes a run.
    let shown = ok(dir, &["runs", "show", &run[..8]]);
    assert!(shown.contains(&run), "{shown}");
    let as_json = json(dir, &["runs", "show", &run[..8]]);
    assert_eq!(as_json["run"], run.as_str());

    // Fewer than six is a usage error, whatever it matches.
    let short = fails(dir, &["runs", "show", &run[..5]], 2);
    assert!(short.contains("too short to name a run"), "{short}");
    assert!(short.contains("at least 6 characters"), "{short}");
    let short = fails(dir, &["runs", "approve", &run[..3], "--digest", &digest], 2);
    assert!(short.contains("too short"), "{short}");

    // A prefix that begins no run is not found; LIKE's wildcards are
    // characters like any other.
    for nothing in ["ffffffffff", "______", "%%%%%%", &format!("{}%", &run[..6])] {
        let none = fails(dir, &["runs", "show", nothing], 4);
        assert!(none.contains("no run id begins so"), "{nothing}: {none}");
    }

    // Two runs whose ids begin alike: the shared prefix is refused, naming
    // both; one more character tells them apart.
    let twin = format!("{}x-twin", &run[..12]);
    copy_run(dir, &run, &twin);
    for command in [
        vec!["runs", "show", &run[..12]],
        vec![
            "runs",
            "approve",
            &run[..12],
            "--digest",
            &digest,
            "--as",
            "bob",
        ],
        vec!["runs", "deny", &run[..12], "--as", "bob"],
        vec!["runs", "input", &run[..12], "--data", "{}"],
        vec!["runs", "ask-again", &run[..12]],
        vec![
            "runs",
            "rerun",
            &run[..12],
            "--call",
            "c",
            "--digest",
            "d",
            "--reason",
            "r",
        ],
    ] {
        let ambiguous = fails(dir, &command, 2);
        assert!(
            ambiguous.contains("names 2 runs"),
            "{command:?}: {ambiguous}"
        );
        assert!(
            ambiguous.contains(&run) && ambiguous.contains(&twin),
            "{ambiguous}"
        );
    }
    // The twin's row was copied behind the store's back: resolved, then
    // read fail-closed.
    let twin_shown = fails(dir, &["runs", "show", &twin[..13]], 1);
    assert!(twin_shown.contains(&twin), "{twin_shown}");
    let approved = ok(
        dir,
        &[
            "runs",
            "approve",
            &run[..13],
            "--digest",
            &digest,
            "--as",
            "bob",
        ],
    );
    assert!(approved.contains("recorded: approved by bob"), "{approved}");
    // The whole id still works, and the decision was recorded on the run.
    let shown = json(dir, &["runs", "show", &run]);
    assert_eq!(shown["decisions"][0]["by"], "bob");
}

/// The account name of this process's user id, as the system tells it
/// (`id -un`); none where the id has no entry.
fn account_name() -> Option<String> {
    let output = std::process::Command::new("id").arg("-un").output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|name| !name.is_empty())
}

#[test]
fn without_as_the_decider_is_the_account_of_the_user_id_not_user() {
    let dir = temp();
    let dir = dir.path();
    let (run, digest) = waiting_demo(dir);
    let expected = account_name().expect("this test's user id has an account");
    let output = common::command(dir)
        .args(["runs", "approve", &run, "--digest", &digest])
        .env("NO_COLOR", "1")
        .env_remove("TOOLGATE_OPERATOR")
        .env("USER", "mallory")
        .env("LOGNAME", "mallory")
        .output()
        .expect("toolgate runs");
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output).trim(),
        format!("recorded: approved by {expected} (name from os_user); host `demo` will resume it")
    );
    let shown = json(dir, &["runs", "show", &run]);
    assert_eq!(shown["decisions"][0]["by"], expected.as_str());
    assert_eq!(shown["decisions"][0]["named_by"], "os_user");
}

/// A user id with no account entry (common in containers) acts as
/// `uid-N`, and is told so. Needs root to take such a user id.
#[test]
fn a_user_id_without_an_account_acts_as_uid_n_and_is_told() {
    if account_name().as_deref() != Some("root") || common::backend::on_postgres() {
        eprintln!("skipped: taking another user id needs root (and the SQLite pass)");
        return;
    }
    let dir = temp();
    let dir = dir.path();
    let (run, digest) = waiting_demo(dir);
    // The stranger may write the data directory and the database.
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        std::process::Command::new("chmod")
            .args(["-R", "a+rwX"])
            .arg(&path)
            .status()
            .unwrap();
    }
    std::process::Command::new("chmod")
        .args(["a+rwx"])
        .arg(dir)
        .status()
        .unwrap();
    let uid = "54321";
    let output = std::process::Command::new("setpriv")
        .args(["--reuid", uid, "--regid", uid, "--clear-groups", "--"])
        .arg(common::TOOLGATE)
        .arg("--data-dir")
        .arg(dir)
        .args(["runs", "approve", &run, "--digest", &digest])
        .env("NO_COLOR", "1")
        .env_remove("TOOLGATE_OPERATOR")
        .env_remove("TOOLGATE_DATABASE_URL")
        .env("USER", "root")
        .env("HOME", dir)
        .output()
        .expect("setpriv runs");
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains("user id 54321 has no account entry") && err.contains("acting as `uid-54321`"),
        "{err}"
    );
    assert!(
        stdout(&output).contains("recorded: approved by uid-54321 (name from os_user)"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn a_url_of_another_scheme_is_never_a_file_name() {
    let dir = temp();
    let dir = dir.path();
    for url in [
        "postgress://toolgate@db/toolgate",
        "mysql://toolgate:s3cret@db/toolgate",
        "http://db/toolgate",
    ] {
        for via_env in [false, true] {
            let mut command = common::command(dir);
            command.current_dir(dir).env("NO_COLOR", "1");
            if via_env {
                command.env("TOOLGATE_DATABASE_URL", url);
            } else {
                command.args(["--database-url", url]);
            }
            let output = command.args(["runs", "list"]).output().unwrap();
            let err = stderr(&output);
            assert_eq!(output.status.code(), Some(2), "{url}: {err}");
            for form in [
                "postgres://",
                "postgresql://",
                "sqlite:PATH",
                "without `://`",
            ] {
                assert!(err.contains(form), "{url}: {err}");
            }
            assert!(!err.contains("s3cret"), "{err}");
        }
    }
    // SQLite locations that name no file on disk, nor one named like them.
    for (url, why) in [
        ("sqlite:", "names no file"),
        ("sqlite:?mode=memory", "query options"),
        ("sqlite:x.db?mode=ro", "query options"),
        ("sqlite::memory:", ":memory:"),
        ("sqlite:file:odd.db", "`file:` URIs"),
    ] {
        let output = common::command(dir)
            .current_dir(dir)
            .args(["--database-url", url, "runs", "list"])
            .output()
            .unwrap();
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{url}: {err}");
        assert!(err.contains(why), "{url}: {err}");
    }
    assert_eq!(
        std::fs::read_dir(dir).unwrap().count(),
        0,
        "no file was created for a URL"
    );
    // The scheme is read in any case.
    let upper = dir.join("upper.db");
    ok(
        dir,
        &[
            "--database-url",
            &format!("SQLITE:{}", upper.display()),
            "server",
            "list",
        ],
    );
    assert!(upper.exists());
    std::fs::remove_file(&upper).unwrap();
    // The accepted forms still open the store.
    let file = dir.join("here.db");
    let sqlite = format!("sqlite:{}", file.display());
    ok(dir, &["--database-url", &sqlite, "server", "list"]);
    assert!(file.exists());
}

#[test]
fn usage_errors_exit_2_and_say_what_is_missing() {
    let dir = temp();
    let dir = dir.path();
    let (run, digest) = waiting_demo(dir);
    for command in [
        vec!["runs", "approve", &run[..8], "--as", "bob"],
        vec!["runs", "deny", &run[..8], "--as", "bob", "--reason", "no"],
        vec![
            "runs",
            "edit",
            &run[..8],
            "call_2",
            "--args",
            "{}",
            "--as",
            "bob",
        ],
    ] {
        let missing = fails(dir, &command, 2);
        assert!(
            missing.contains("missing `--digest`")
                && missing.contains(&format!("toolgate runs show {run}")),
            "{command:?}: {missing}"
        );
    }
    let bad = fails(
        dir,
        &[
            "runs",
            "edit",
            &run,
            "call_2",
            "--args",
            r#"{"path": "a", oops}"#,
            "--digest",
            &digest,
            "--as",
            "bob",
        ],
        2,
    );
    assert!(
        bad.contains("`--args` is not JSON: key must be a string at line 1, column 15")
            && bad.contains(r#"`{"path": "a", ⟨here⟩oops}`"#),
        "{bad}"
    );
    let bad = fails(
        dir,
        &[
            "runs",
            "approve",
            &run,
            "--edit",
            "call_2=[1,",
            "--digest",
            &digest,
            "--as",
            "bob",
        ],
        2,
    );
    assert!(bad.contains("`--edit` is not JSON"), "{bad}");
    // Nothing was recorded by any of them.
    assert_eq!(
        json(dir, &["runs", "show", &run])["decisions"],
        Value::Array(vec![])
    );
}

#[test]
fn a_preview_that_changes_nothing_is_no_error() {
    let dir = temp();
    let dir = dir.path();
    ok(dir, &["demo", "--detach", "--as", "alice"]);
    for command in [
        &["server", "set-approval", "notes", "off"][..],
        &[
            "tool",
            "set-approval",
            "notes.write_note",
            "off",
            "--as",
            "olga",
        ],
        &["server", "accept", "notes"],
    ] {
        let output = toolgate(dir, command);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(3), "{command:?}: {err}");
        assert!(stdout(&output).contains("digest: sha256:"), "{command:?}");
        assert!(err.starts_with("nothing "), "{command:?}: {err}");
        assert!(!err.to_lowercase().contains("error"), "{command:?}: {err}");
    }
}

#[test]
#[allow(clippy::too_many_lines, reason = "one story, step by step")]
fn tables_a_person_can_read() {
    let dir = temp();
    let dir = dir.path();
    ok(
        dir,
        &["demo", "--detach", "--approvals", "2", "--as", "alice"],
    );
    let runs = json(dir, &["runs", "list"]);
    let run = runs[0]["run"].as_str().unwrap().to_owned();
    assert_eq!(runs[0]["status"], "waiting");
    assert_eq!(runs[0]["waits_for"], "approval");
    assert_eq!(runs[0]["kind"], "awaiting_approval");
    let digest = json(dir, &["runs", "show", &run])["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let edit = r###"call_2b={"path":"CHANGELOG.md","content":"## 0.2.0\n- \"quoted\""}"###;
    for approver in ["bob", "carol"] {
        ok(
            dir,
            &[
                "runs", "approve", &run, "--digest", &digest, "--as", approver, "--edit", edit,
                "--call", "call_2",
            ],
        );
    }
    // Every approver is listed, and the run says what it waits for now.
    let runs = json(dir, &["runs", "list"]);
    assert_eq!(runs[0]["deciders"], serde_json::json!(["bob", "carol"]));
    assert_eq!(runs[0]["status"], "decided");
    assert_eq!(runs[0]["waits_for"], "host");
    let listed = ok(dir, &["runs", "list"]);
    assert!(listed.contains("bob, carol"), "{listed}");
    assert!(listed.contains(&run), "a pipe gets whole ids: {listed}");
    // Dates to the minute, in UTC.
    let since = runs[0]["since"].as_str().unwrap();
    assert!(
        listed.contains("SINCE (UTC)") && listed.contains(&since[..16]),
        "{listed}"
    );
    assert!(
        !listed.contains(&since[..17]),
        "no seconds in the table: {listed}"
    );

    // The decision log writes edited arguments as JSON, escaped once.
    let shown = ok(dir, &["runs", "show", &run]);
    assert!(
        shown.contains(r###"approved with edited arguments {"content":"## 0.2.0\n- \"quoted\"","path":"CHANGELOG.md"}"###),
        "{shown}"
    );
    assert!(
        shown.contains(
            r###"approved, edited to {"content":"## 0.2.0\n- \"quoted\"","path":"CHANGELOG.md"}"###
        ),
        "{shown}"
    );
    assert!(!shown.contains(r"\\n"), "nothing escaped twice: {shown}");

    // A narrow terminal: every line fits, ids are shortened (and name
    // their runs), names and dates are never split.
    ok(dir, &["demo", "--detach", "--as", "dora"]);
    let narrow = stdout(&toolgate_in(dir, &["runs", "list"], Some(80)));
    for line in narrow
        .lines()
        .filter(|l| l.starts_with(['│', '┌', '└', '╞']))
    {
        assert!(
            line.chars().count() <= 80,
            "wider than 80: {line}\n{narrow}"
        );
    }
    assert!(
        !narrow.contains(&run) && narrow.contains(&run[..8]),
        "{narrow}"
    );
    assert!(narrow.contains("run ids shortened to fit"), "{narrow}");
    assert!(
        narrow.contains("alice") && narrow.contains("dora"),
        "{narrow}"
    );
    assert!(narrow.contains(&since[..16]), "{narrow}");
    let shown_narrow = stdout(&toolgate_in(dir, &["runs", "show", &run[..8]], Some(80)));
    for line in shown_narrow.lines().filter(|l| l.starts_with('│')) {
        assert!(line.chars().count() <= 80, "wider than 80: {line}");
    }
    for name in ["call_2b", "write_file", "carol"] {
        assert!(shown_narrow.contains(name), "{name} whole: {shown_narrow}");
    }
}

#[test]
fn runs_list_all_shows_one_row_per_run() {
    let dir = temp();
    let dir = dir.path();
    // The demo pauses three times in one run; a second run pauses once.
    ok(dir, &["demo", "--yes", "--as", "alice"]);
    ok(dir, &["demo", "--detach", "--as", "alice"]);
    let all = json(dir, &["runs", "list", "--all"]);
    let runs = all.as_array().unwrap();
    let mut ids: Vec<&str> = runs.iter().map(|r| r["run"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2, "{all}");
    ids.dedup();
    assert_eq!(ids.len(), 2, "{all}");
    let done = runs
        .iter()
        .find(|r| r["status"] == "done")
        .expect("the finished run");
    assert_eq!(done["waits_for"], Value::Null);
    assert_eq!(done["kind"], "waiting_for_input", "its last pause: {done}");
    let table = ok(dir, &["runs", "list", "--all"]);
    for id in ids {
        assert_eq!(table.matches(id).count(), 1, "{table}");
    }
}

/// Registers the workspace's MCP test server as `id`, with `extra` flags
/// for `server add` before the `--`.
fn add_test_server(dir: &Path, id: &str, name: &str, extra: &[&str]) {
    let mut args = vec!["server", "add", id, "--name", name];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", common::TOOLGATE, "mcp-test-server"]);
    ok(dir, &args);
}

#[test]
#[allow(clippy::too_many_lines, reason = "one story, step by step")]
fn listings_tell_the_truth_about_this_store() {
    let dir = temp();
    let dir = dir.path();
    // A store that never ran the demo lists its servers' tools only.
    add_test_server(dir, "docs", "Docs", &["--data-class", "editor_content"]);
    ok(dir, &["import", "docs"]);
    let tools = json(dir, &["tools"]);
    let listed = tools["tools"].as_array().unwrap();
    assert!(!listed.is_empty(), "{tools}");
    assert!(
        listed
            .iter()
            .all(|t| t["name"].as_str().unwrap().starts_with("docs.")),
        "no builtin of the demo's: {tools}"
    );
    assert_eq!(tools["demo_builtins_listed"], false);
    let table = ok(dir, &["tools"]);
    assert!(
        !table.contains("demo builtin") && !table.contains("write_file"),
        "{table}"
    );
    assert!(table.contains("Registry::explain_all"), "{table}");

    // Times in tables are UTC dates to the minute.
    let servers = ok(dir, &["server", "list"]);
    let at = servers.split("ok at ").nth(1).expect("an import time");
    let stamp: String = at.chars().take(17).collect();
    assert!(
        stamp.as_bytes()[4] == b'-' && stamp.as_bytes()[13] == b':' && !stamp[14..].contains(':'),
        "{servers}"
    );
    assert!(servers.contains("LAST IMPORT (UTC)"), "{servers}");

    // A tool named without its server is a usage error that names it whole.
    let bare = fails(dir, &["server", "accept", "docs", "write_note"], 2);
    assert!(bare.contains("`docs.write_note`"), "{bare}");

    // The data classes are listed where a server is added.
    let help = ok(dir, &["server", "add", "--help"]);
    for class in [
        "public_content",
        "editor_content",
        "source_code",
        "internal_configuration",
        "system_diagnostics",
        "secret_adjacent",
    ] {
        assert!(help.contains(class), "{class}: {help}");
    }

    // An import of a server that offers nothing says so.
    add_test_server(dir, "bare", "Bare", &[]);
    let output = toolgate(dir, &["import", "bare"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output)
            .contains("warning: server `bare` supplies no tools: no data class declared"),
        "{}",
        stderr(&output)
    );
    let shown = json(dir, &["server", "show", "docs"]);
    let names: Vec<String> = shown["catalogue"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["orphaned"] == false)
        .map(|t| t["local_name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!names.is_empty(), "{shown}");
    for name in &names {
        ok(
            dir,
            &["tool", "set-approval", name, "block", "--as", "olga"],
        );
    }
    let output = toolgate(dir, &["import", "docs"]);
    assert!(
        stderr(&output).contains("warning: every tool of server `docs` is blocked"),
        "{}",
        stderr(&output)
    );
    let warned = json(dir, &["import", "docs"]);
    assert_eq!(
        warned["warnings"].as_array().map(Vec::len),
        Some(1),
        "{warned}"
    );

    // The demo never rewrites a server someone else registered under its
    // name.
    add_test_server(
        dir,
        "notes",
        "My notes",
        &["--data-class", "public_content"],
    );
    let before = json(dir, &["server", "show", "notes"]);
    let refused = fails(dir, &["demo", "--yes"], 3);
    assert!(
        refused.contains("registered already, and not by the demo"),
        "{refused}"
    );
    let after = json(dir, &["server", "show", "notes"]);
    assert_eq!(before, after, "the demo changed nothing of it");

    // Once the demo has run on a store, its builtins are listed too.
    let own = temp();
    ok(own.path(), &["demo", "--yes"]);
    let tools = json(own.path(), &["tools"]);
    assert_eq!(tools["demo_builtins_listed"], true);
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "write_file"),
        "{tools}"
    );
}

#[test]
fn the_host_says_how_it_learns_of_decisions() {
    use std::io::BufRead as _;
    let dir = temp();
    let dir = dir.path();
    let mut child = common::command(dir)
        .args(["host", "--poll-ms", "1000"])
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    if common::backend::on_postgres() {
        assert!(
            first.contains("listens for PostgreSQL's notifications")
                && first.contains("looks every 1000 ms as well"),
            "{first}"
        );
    } else {
        assert!(first.contains("looking every 1000 ms"), "{first}");
        assert!(!first.contains("PostgreSQL"), "{first}");
    }
}
