//! What the tests that run `toolgate` beside a host of their own share.

use std::path::Path;
use std::process::Command;

/// The command line under test.
pub(crate) const TOOLGATE: &str = env!("CARGO_BIN_EXE_toolgate");

/// Runs `toolgate` over `dir`, which must succeed; its standard output.
pub(crate) fn toolgate(dir: &Path, args: &[&str]) -> String {
    let output = Command::new(TOOLGATE)
        .arg("--data-dir")
        .arg(dir)
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
