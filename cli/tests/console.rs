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
    common::command(dir)
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
