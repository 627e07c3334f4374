//! Command rules: when a shell command is nothing but plain words that
//! begin with an operator's rule.
//!
//! Fail-closed by construction: a command matches a rule only when it
//! splits, on single spaces, into words of characters that no shell gives
//! a meaning to — ASCII letters, digits and `_ - . / , : + @ %`, and `=`
//! anywhere but in the first word. Everything else — `;`, `&`, `|`, `$`,
//! backticks, quotes, `\`, `<`, `>`, `(`, `)`, `{`, `}`, `[`, `]`, `*`,
//! `?`, `~`, `!`, `#`, `^`, tabs, newlines, a leading, trailing or doubled
//! space, any character outside ASCII (a look-alike among them), an
//! environment assignment before the command — makes the command match no
//! rule, and its call waits for approval like any other. No shell grammar
//! is parsed: a command is either plain, or it is asked.

/// Why `command` cannot match any rule, or its words.
pub fn plain_words(command: &str) -> Result<Vec<&str>, &'static str> {
    if command.is_empty() {
        return Err("it is empty");
    }
    if let Some(bad) = command.chars().find(|c| !c.is_ascii()) {
        return Err(if bad.is_whitespace() || bad.is_control() {
            "it holds a space or control character outside ASCII"
        } else {
            "it holds a character outside ASCII (a look-alike reads as the letter it imitates)"
        });
    }
    if command.starts_with(' ') || command.ends_with(' ') || command.contains("  ") {
        return Err("it has a leading, trailing or doubled space");
    }
    let words: Vec<&str> = command.split(' ').collect();
    for (index, word) in words.iter().enumerate() {
        for byte in word.bytes() {
            let plain = byte.is_ascii_alphanumeric()
                || matches!(
                    byte,
                    b'_' | b'-' | b'.' | b'/' | b',' | b':' | b'+' | b'@' | b'%'
                )
                || (byte == b'=' && index > 0);
            if !plain {
                return Err(match byte {
                    b'=' => "it begins with an environment assignment",
                    b';' | b'&' | b'|' | b'\n' | b'\r' => {
                        "it holds shell control (`;`, `&`, `|` or a line break)"
                    }
                    b'$' | b'`' => "it holds an expansion or a command substitution",
                    b'<' | b'>' => "it holds a redirection",
                    b'\'' | b'"' | b'\\' => "it holds quoting or an escape",
                    _ => "it holds a character a shell gives a meaning to",
                });
            }
        }
    }
    Ok(words)
}

/// The first of `rules` — each the words a command must begin with — that
/// `command` matches: the command is plain ([`plain_words`]) and its words
/// begin with the rule's, exactly.
pub fn matching<'r>(rules: &'r [Vec<String>], command: &str) -> Option<&'r [String]> {
    let words = plain_words(command).ok()?;
    rules
        .iter()
        .find(|rule| {
            !rule.is_empty()
                && rule.len() <= words.len()
                && rule.iter().zip(&words).all(|(r, w)| r == w)
        })
        .map(Vec::as_slice)
}

/// A rule's words from what an operator typed: plain words, as a command
/// must be to match one.
pub fn rule_words(typed: &str) -> Result<Vec<String>, String> {
    let trimmed = typed.trim();
    plain_words(trimmed)
        .map(|words| words.into_iter().map(str::to_owned).collect())
        .map_err(|why| {
            format!(
                "the rule `{}` cannot be matched: {why}; a rule is plain words, as a command must be to match it (`git status`)",
                toolgate::visible::visible(typed)
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Vec<Vec<String>> {
        vec![
            vec!["git".to_owned(), "status".to_owned()],
            vec!["cargo".to_owned(), "test".to_owned()],
        ]
    }

    #[test]
    fn plain_commands_match_their_rule() {
        let rules = rules();
        assert_eq!(matching(&rules, "git status"), Some(rules[0].as_slice()));
        assert_eq!(
            matching(&rules, "cargo test --workspace -p toolgate"),
            Some(rules[1].as_slice())
        );
        assert_eq!(matching(&rules, "git statusx"), None);
        assert_eq!(matching(&rules, "git"), None);
        assert_eq!(matching(&rules, "git push"), None);
    }

    #[test]
    fn every_shell_control_matches_nothing() {
        let rules = rules();
        for sneaky in [
            "git status; rm -rf /",
            "git status && rm -rf /",
            "git status || rm -rf /",
            "git status | sh",
            "git status $(rm -rf /)",
            "git status `rm -rf /`",
            "git status > /etc/passwd",
            "git status < /dev/zero",
            "git status\nrm -rf /",
            "git status\rrm -rf /",
            "git status <<EOF",
            "X=1 git status",
            "env X=1 git status",
            " git status",
            "git status ",
            "git  status",
            "git\tstatus",
            "git status &",
            "git status 'x'",
            "git status \"x\"",
            "git status \\",
            "git status *",
            "git status ~",
            "git status {a,b}",
            "git status #x",
            "git status !!",
            "gіt status",
            "git ѕtatus",
            "git\u{a0}status",
            "git status\u{200b}",
            "git status${IFS}x",
            "(git status)",
        ] {
            assert_eq!(matching(&rules, sneaky), None, "{sneaky:?} matched a rule");
        }
    }

    #[test]
    fn a_rule_must_be_plain_words() {
        assert_eq!(
            rule_words("  git status ").ok(),
            Some(vec!["git".to_owned(), "status".to_owned()])
        );
        let refused = rule_words("git status; ls").err().unwrap_or_default();
        assert!(refused.contains("shell control"), "{refused}");
    }
}
