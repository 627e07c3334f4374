//! The names the store keeps for hosts.

/// Why a host name cannot be used, or `None` when it can: 1 to 64 ASCII
/// letters, digits, `-`, `_` and `.` — so no two names that read alike are
/// different hosts (a Cyrillic `е` in `dеmo` is refused, not a host nobody
/// runs).
pub fn host_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it is empty")
    } else if name.len() > 64 {
        Some("it is longer than 64 characters")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        Some("only ASCII letters, digits, `-`, `_` and `.` may name a host")
    } else {
        None
    }
}

/// Whether `name` is kept for hosts of runs of one call
/// ([`crate::CallHost`]): `gateway`, and every name that begins `gateway.`,
/// in any case. A [`crate::Host`] of such a name is refused, so no host
/// that resumes runs with a model — the demo's, say — can ever claim a
/// gateway's run and resume it with the wrong tools.
pub fn is_reserved_host_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name == "gateway" || name.starts_with("gateway.")
}
