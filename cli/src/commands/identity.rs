//! Who decides, and the key that authenticates what the store keeps.

use std::path::Path;

use toolgate::identity::{IdentitySource, Operator};
use toolgate::integrity::IntegrityKey;

use crate::Failure;
use crate::output::say_err;

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
/// `TOOLGATE_OPERATOR`, else the operating system's account of the
/// process's user id ([`os_account`]) — never `$USER`, which any process
/// may set. A name that does not normalise to a printable, non-empty name
/// is refused.
pub(super) fn operator_identity(flag: Option<&str>) -> Result<Operator, Failure> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let (name, source) = if let Some(flag) = flag {
        (flag.to_owned(), IdentitySource::Flag)
    } else if let Some(name) = env("TOOLGATE_OPERATOR") {
        (name, IdentitySource::Environment)
    } else {
        let account = os_account();
        if let OsAccount::NoEntry { uid, ref name } = account {
            say_err!(
                "note: user id {} has no account entry (common in containers): acting as `{}`; pass `--as NAME` or set TOOLGATE_OPERATOR to name yourself",
                u64::from(uid),
                name
            );
        }
        (account.name().to_owned(), IdentitySource::OsUser)
    };
    Operator::new(&name, source)
        .map(|operator| operator.via(toolgate::identity::Channel::Console))
        .map_err(|e| Failure::Refused(format!("{e} (from {source})")))
}

/// The operating system's account of the process's real user id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum OsAccount {
    /// The account's login name, from the user database.
    Named(String),
    /// The user id has no entry in the user database (or its name is not
    /// UTF-8): named `uid-N`, said so where it is used.
    NoEntry {
        /// The user id.
        uid: u32,
        /// `uid-N`.
        name: String,
    },
}

impl OsAccount {
    /// The name a decision records.
    pub(super) fn name(&self) -> &str {
        match self {
            OsAccount::Named(name) | OsAccount::NoEntry { name, .. } => name,
        }
    }
}

/// Looks up the process's real user id in the user database (`getpwuid_r`,
/// through `nix`): the account name, or `uid-N` where there is none.
pub(super) fn os_account() -> OsAccount {
    let uid = nix::unistd::Uid::current();
    match nix::unistd::User::from_uid(uid) {
        Ok(Some(user)) if !user.name.trim().is_empty() => OsAccount::Named(user.name),
        Ok(_) => no_entry(uid.as_raw()),
        Err(error) => {
            tracing::warn!(uid = uid.as_raw(), %error, "cannot read the user database");
            no_entry(uid.as_raw())
        }
    }
}

fn no_entry(uid: u32) -> OsAccount {
    OsAccount::NoEntry {
        uid,
        name: format!("uid-{uid}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_without_an_entry_is_named_by_its_uid() {
        assert_eq!(no_entry(1000).name(), "uid-1000");
        assert!(!os_account().name().is_empty());
    }
}
