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
