//! What the benches of `toolgate` over its own processes share: the
//! release binary, built by the cargo that runs the bench; a command of it
//! that must succeed; and the notes test server set up as an operator sets
//! it up, its approval turned off with the digest shown.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use serde_json::Value;

/// A runtime of two workers, as the machine has two cores.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => panic!("{error}"),
    }
}

/// The value, or a panic saying why there is none.
pub(crate) fn ok<T, E: std::fmt::Display>(result: Result<T, E>) -> T {
    match result {
        Ok(value) => value,
        Err(error) => panic!("{error}"),
    }
}

/// The release `toolgate`, built now by the cargo that runs this bench:
/// nothing to do when it is fresh, and the bench stops, saying why, when it
/// cannot be built.
pub(crate) fn toolgate() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build)
}

fn build() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    eprintln!("building the release `toolgate` (cargo build --release -p toolgate-cli)…");
    let built = ok(std::process::Command::new(cargo)
        .arg("build")
        .arg("--release")
        .arg("--manifest-path")
        .arg(&manifest)
        .args(["-p", "toolgate-cli", "--bin", "toolgate"])
        .arg("--message-format=json-render-diagnostics")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output());
    assert!(
        built.status.success(),
        "the bench runs the release `toolgate`, which did not build: run `cargo build --release -p toolgate-cli` and read why"
    );
    String::from_utf8_lossy(&built.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| {
            message["reason"] == "compiler-artifact" && message["target"]["name"] == "toolgate"
        })
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("cargo built no `toolgate` executable"))
}

/// `toolgate --data-dir DIR ARGS…`, which must succeed; its standard output.
pub(crate) fn run(toolgate: &Path, dir: &Path, args: &[&str]) -> String {
    let output = ok(std::process::Command::new(toolgate)
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env_remove("TOOLGATE_DATABASE_URL")
        .env("NO_COLOR", "1")
        .output());
    assert!(
        output.status.success(),
        "toolgate {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The notes test server in the store of `data`, as an operator sets it
/// up: added and imported, shown, and its approval turned off with the
/// digest shown — so `read_note` is a call the gate lets run.
pub(crate) fn notes_without_approval(toolgate: &Path, data: &Path) {
    let exe = toolgate.to_string_lossy().into_owned();
    run(
        toolgate,
        data,
        &[
            "server",
            "add",
            "notes",
            "--name",
            "Notes",
            "--data-class",
            "editor_content",
            "--",
            &exe,
            "mcp-test-server",
        ],
    );
    run(toolgate, data, &["import", "notes"]);
    let shown: Value = ok(serde_json::from_str(&run(
        toolgate,
        data,
        &["--json", "server", "show", "notes"],
    )));
    let Some(digest) = shown["digest"].as_str() else {
        panic!("`server show` gives no digest: {shown}");
    };
    run(
        toolgate,
        data,
        &["server", "set-approval", "notes", "off", "--digest", digest],
    );
}
