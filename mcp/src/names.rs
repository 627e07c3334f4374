//! Local names for remote tools: `<server>.<remote name>`, or a recorded
//! reason why a remote name cannot be used.

use std::fmt;

/// Separates a server's identifier from a remote tool's name. Server
/// identifiers cannot hold it, so the split is never ambiguous.
pub const SEPARATOR: char = '.';

/// Why a remote tool was not taken into the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// The remote name is empty.
    Empty,
    /// It holds a hidden character ([`toolgate::visible::is_hidden`]: a
    /// control, a bidi override, a zero-width or other invisible character),
    /// shown escaped.
    ControlCharacter(String),
    /// It holds a character outside ASCII, which can pass for another
    /// (`а` for `a`).
    LookAlike(String),
    /// It holds a character MCP does not allow in tool names.
    Disallowed(String),
    /// The local name would exceed 64 characters.
    TooLong(usize),
    /// The server listed the name more than once.
    Duplicate,
    /// The input schema is not a JSON object of `"type": "object"`, as MCP
    /// requires.
    SchemaNotAnObject,
    /// The input schema hides a character outside its titles and
    /// descriptions — in a property name, a `required` entry, an `enum`,
    /// `const`, `default` or `examples` value, anywhere — shown escaped: it
    /// cannot be cleaned without changing what the server receives or what
    /// the model reads, nor shown to a reviewer as it is sent.
    HiddenInSchema(String),
    /// A stored local name is not the one its server and remote name map to
    /// (edited by hand).
    NameMismatch(String),
    /// Its operator blocked it (`toolgate tool set-approval … block`): it
    /// is never offered.
    Blocked,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Empty => f.write_str("the name is empty"),
            SkipReason::ControlCharacter(c) => {
                write!(f, "the name holds a control character ({c})")
            }
            SkipReason::LookAlike(c) => write!(
                f,
                "the name holds a non-ASCII character ({c}) that can pass for another"
            ),
            SkipReason::Disallowed(c) => write!(
                f,
                "the name holds `{c}`; tool names are letters, digits, `_`, `-` and `.`"
            ),
            SkipReason::TooLong(n) => write!(
                f,
                "the local name would be {n} characters long; at most 64 are allowed"
            ),
            SkipReason::Duplicate => f.write_str("the server lists this name more than once"),
            SkipReason::HiddenInSchema(at) => write!(
                f,
                "the input schema hides a character outside its titles and descriptions, in its {at}; what a server matches on and what a model reads must be visible"
            ),
            SkipReason::SchemaNotAnObject => {
                f.write_str("the input schema is not an object schema (`\"type\": \"object\"`), as MCP requires")
            }
            SkipReason::NameMismatch(expected) => write!(
                f,
                "the stored name is not `{expected}`, the name its server and remote name map to"
            ),
            SkipReason::Blocked => f.write_str("blocked by its operator: never offered"),
        }
    }
}

/// Why a remote name cannot be used, or the length of its local name.
fn local_len(server_id: &str, remote: &str) -> Result<usize, SkipReason> {
    if remote.is_empty() {
        return Err(SkipReason::Empty);
    }
    if let Some(c) = remote.chars().find(|&c| toolgate::visible::is_hidden(c)) {
        return Err(SkipReason::ControlCharacter(c.escape_default().to_string()));
    }
    if let Some(c) = remote.chars().find(|c| !c.is_ascii()) {
        let shown = format!("U+{:04X} {c}", u32::from(c));
        // A letter whose confusable skeleton is ASCII can pass for another
        // name (`а` for `a`); any other is simply not allowed (`é`).
        let skeleton: String = unicode_security::skeleton(&c.to_string()).collect();
        return Err(if skeleton.is_ascii() {
            SkipReason::LookAlike(shown)
        } else {
            SkipReason::Disallowed(shown)
        });
    }
    if let Some(c) = remote
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(SkipReason::Disallowed(c.to_string()));
    }
    let len = server_id.len() + SEPARATOR.len_utf8() + remote.len();
    if len > 64 {
        return Err(SkipReason::TooLong(len));
    }
    Ok(len)
}

/// The local name of a remote tool, or why it has none. Names are never
/// altered to fit: a name that does not fit is skipped, so two remote tools
/// can never be merged into one local name.
pub fn local_name(server_id: &str, remote: &str) -> Result<String, SkipReason> {
    local_len(server_id, remote)?;
    let local = format!("{server_id}{SEPARATOR}{remote}");
    debug_assert!(toolgate::registry::tool_name_problem(&local).is_none());
    Ok(local)
}

/// Whether `stored` is the local name [`local_name`] gives the remote tool,
/// checked without building it: why the remote name cannot be used, or
/// [`SkipReason::NameMismatch`] naming the one it maps to.
pub(crate) fn check_local_name(
    server_id: &str,
    remote: &str,
    stored: &str,
) -> Result<(), SkipReason> {
    local_len(server_id, remote)?;
    let rest = stored.strip_prefix(server_id);
    if rest.and_then(|rest| rest.strip_prefix(SEPARATOR)) == Some(remote) {
        Ok(())
    } else {
        Err(SkipReason::NameMismatch(local_name(server_id, remote)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_or_are_skipped_with_a_reason() {
        assert_eq!(
            local_name("gh", "create_issue").ok(),
            Some("gh.create_issue".into())
        );
        assert_eq!(
            local_name("gh", "v2.search-all").ok(),
            Some("gh.v2.search-all".into())
        );
        assert_eq!(local_name("gh", ""), Err(SkipReason::Empty));
        assert_eq!(
            local_name("gh", "tab\tname"),
            Err(SkipReason::ControlCharacter("\\t".into()))
        );
        assert_eq!(
            local_name("gh", "note\u{202e}txt"),
            Err(SkipReason::ControlCharacter("\\u{202e}".into()))
        );
        assert_eq!(
            local_name("gh", "zero\u{200b}width"),
            Err(SkipReason::ControlCharacter("\\u{200b}".into()))
        );
        assert_eq!(
            local_name("gh", "read\u{0430}note"),
            Err(SkipReason::LookAlike("U+0430 а".into()))
        );
        assert_eq!(
            local_name("gh", "r\u{e9}sum\u{e9}"),
            Err(SkipReason::Disallowed("U+00E9 \u{e9}".into()))
        );
        assert_eq!(
            local_name("gh", "a b"),
            Err(SkipReason::Disallowed(" ".into()))
        );
        assert_eq!(
            local_name("gh", "a/b"),
            Err(SkipReason::Disallowed("/".into()))
        );
        assert_eq!(
            local_name("gh", &"x".repeat(62)),
            Err(SkipReason::TooLong(65))
        );
        assert!(local_name("gh", &"x".repeat(61)).is_ok());
        for name in ["create_issue", "x", "a.b-c_d"] {
            let local = local_name("server", name).unwrap_or_default();
            assert_eq!(toolgate::registry::tool_name_problem(&local), None);
        }
    }
}
