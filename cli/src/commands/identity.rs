//! Who decides, and the key that authenticates what the store keeps.

use std::path::Path;

use toolgate::identity::{IdentitySource, Operator};
use toolgate::integrity::IntegrityKey;

use crate::Failure;

/// The integrity key, from `--integrity-key-file` (or
/// `TOOLGATE_INTEGRITY_KEY_FILE`) or `TOOLGATE_INTEGRITY_KEY`; none when
/// neither is set. A key that cannot be read or is too short stops the
/// command: running unauthenticated by accident would be silent.
pub(super) fn integrity_key(file: Option<&Path>) -> Result<Option<IntegrityKey>, Failure> {
    let secret = match file {
        Some(path) => std::fs::read(path).map_err(|e| {
            Failure::Error(format!(
                "cannot read the integrity key file {}: {e}",
                path.display()
            ))
        })?,
        None => match std::env::var("TOOLGATE_INTEGRITY_KEY") {
            Ok(secret) => secret.into_bytes(),
            Err(_) => return Ok(None),
        },
    };
    let secret = secret.trim_ascii();
    IntegrityKey::new(secret)
        .map(Some)
        .map_err(|e| Failure::Error(e.to_string()))
}

/// Who decides, and where the name came from: `--as`, else
/// `TOOLGATE_OPERATOR`, else the operating system's user (`USER`, then
/// `LOGNAME`). A name that does not normalise to a printable, non-empty name
/// is refused; with none of the three, the decision is refused.
pub(super) fn operator_identity(flag: Option<&str>) -> Result<Operator, Failure> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let (name, source) = if let Some(flag) = flag {
        (flag.to_owned(), IdentitySource::Flag)
    } else if let Some(name) = env("TOOLGATE_OPERATOR") {
        (name, IdentitySource::Environment)
    } else if let Some(name) = env("USER").or_else(|| env("LOGNAME")) {
        (name, IdentitySource::OsUser)
    } else {
        return Err(Failure::Refused(
            "no operator identity: pass `--as NAME` or set TOOLGATE_OPERATOR".into(),
        ));
    };
    Operator::new(&name, source)
        .map(|operator| operator.via(toolgate::identity::Channel::Console))
        .map_err(|e| Failure::Refused(format!("{e} (from {source})")))
}
