//! What the tests that run `toolgate` share: the binary, run over a data
//! directory whose database is on this process's backend.
#![allow(dead_code, reason = "each test binary uses part of it")]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use toolgate_store::Location;

#[path = "../../../store/tests/backend/mod.rs"]
pub(crate) mod backend;
pub(crate) mod gateway;
pub(crate) mod tls;

/// The store of a data directory: `toolgate.db` in it on SQLite; on
/// PostgreSQL, a database of its own, created on first use.
pub(crate) fn location(dir: &Path) -> Location {
    static DATABASES: Mutex<Option<HashMap<PathBuf, Location>>> = Mutex::new(None);
    if !backend::on_postgres() {
        return Location::Sqlite(dir.join("toolgate.db"));
    }
    // A process this test started over the directory (a host) is told.
    if let Ok(url) = std::env::var(CHILD_DATABASE_ENV) {
        return Location::Postgres(url);
    }
    let mut databases = DATABASES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let databases = databases.get_or_insert_with(HashMap::new);
    if let Some(location) = databases.get(dir) {
        return location.clone();
    }
    // Created on a thread of its own: callers may be inside a runtime.
    let created = std::thread::spawn(backend::TestDb::blocking)
        .join()
        .expect("the database is created");
    let location = created.location();
    // The scratch directory goes; the database stays for the test's life.
    databases.insert(dir.to_owned(), location.clone());
    location
}

/// Tells a test process started over a directory where its store is.
const CHILD_DATABASE_ENV: &str = "TOOLGATE_TEST_DATABASE_URL";

/// The environment that points `toolgate` — or a test process of this
/// binary — at the store of `dir`.
pub(crate) fn database_env(dir: &Path) -> Vec<(&'static str, String)> {
    match location(dir) {
        Location::Postgres(url) => vec![
            ("TOOLGATE_DATABASE_URL", url.clone()),
            (CHILD_DATABASE_ENV, url),
        ],
        Location::Sqlite(_) => Vec::new(),
    }
}

/// `toolgate --data-dir DIR`, on the store of `dir`.
pub(crate) fn command(dir: &Path) -> Command {
    let mut command = Command::new(TOOLGATE);
    command
        .arg("--data-dir")
        .arg(dir)
        .env_remove("TOOLGATE_DATABASE_URL")
        .envs(database_env(dir));
    command
}

/// The command line under test.
pub(crate) const TOOLGATE: &str = env!("CARGO_BIN_EXE_toolgate");

/// Runs `toolgate` over `dir`, which must succeed; its standard output.
pub(crate) fn toolgate(dir: &Path, args: &[&str]) -> String {
    let output = command(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|error| panic!("toolgate does not run: {error}"));
    assert!(
        output.status.success(),
        "toolgate {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Turns a server's approval off as an operator does: shown the tools and
/// their digest first (`server show`), then acting with that digest.
pub(crate) fn approval_off(dir: &Path, server: &str) -> String {
    let shown: serde_json::Value =
        serde_json::from_str(&toolgate(dir, &["--json", "server", "show", server]))
            .expect("`server show` speaks JSON");
    let digest = shown["digest"]
        .as_str()
        .expect("`server show` gives the digest of the tools");
    toolgate(
        dir,
        &["server", "set-approval", server, "off", "--digest", digest],
    )
}

/// Points server `server` at the workspace's MCP test server, with `extra`
/// flags (as an operator changes a server under the gate).
pub(crate) fn set_transport(dir: &Path, server: &str, extra: &[&str]) {
    let mut args = vec![
        "server",
        "set-transport",
        server,
        "--",
        TOOLGATE,
        "mcp-test-server",
    ];
    args.extend_from_slice(extra);
    toolgate(dir, &args);
}
