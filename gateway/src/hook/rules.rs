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

/// Commands that run another command named in their arguments, or a
/// file's content as commands: a rule may not begin with one — `env`,
/// `sudo`, `xargs`, `.`… would let whatever follows run unasked. Compared
/// without case, and a name that begins with an interpreter's (`python3.11`,
/// `perl5.36`) counts as it. A guard against the plain mistakes, not a list
/// of every program that can run another: a rule is the operator's
/// declaration, and the README says what to keep asked.
const RUNNERS: &[&str] = &[
    ".",
    "source",
    "eval",
    "exec",
    "env",
    "command",
    "builtin",
    "trap",
    "alias",
    "export",
    "coproc",
    "sh",
    "bash",
    "rbash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "csh",
    "tcsh",
    "fish",
    "busybox",
    "toybox",
    "sudo",
    "su",
    "doas",
    "pkexec",
    "run0",
    "runuser",
    "fakeroot",
    "xargs",
    "nohup",
    "nice",
    "ionice",
    "taskset",
    "chrt",
    "timeout",
    "time",
    "watch",
    "setsid",
    "stdbuf",
    "chroot",
    "unshare",
    "nsenter",
    "bwrap",
    "flock",
    "systemd-run",
    "script",
    "expect",
    "tmux",
    "screen",
    "at",
    "batch",
    "ssh",
    "strace",
    "ltrace",
    "gdb",
    "valgrind",
    "find",
    "sed",
    "awk",
    "gawk",
    "mawk",
    "npx",
    "make",
];

/// Interpreters, by the start of their names.
const INTERPRETERS: &[&str] = &[
    "python",
    "perl",
    "ruby",
    "node",
    "deno",
    "bun",
    "php",
    "lua",
    "tclsh",
    "wish",
    "pwsh",
    "powershell",
    "osascript",
    "java",
    "jshell",
    "rscript",
    "julia",
    "guile",
    "racket",
];

/// Whether `first`, a rule's first word, names a command that runs others.
fn runs_others(first: &str) -> bool {
    // A path is refused whole when relative (`./x` runs whatever is there),
    // and judged by its last part when absolute.
    if first.contains('/') && !first.starts_with('/') {
        return true;
    }
    let name = first
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    RUNNERS.contains(&name.as_str())
        || INTERPRETERS
            .iter()
            .any(|i| name.starts_with(&i.to_ascii_lowercase()))
}

/// A rule's words from the words an operator typed: each one plain, as a
/// command's must be to match it — no word with a space, quoting or shell
/// control in it, none empty — and the first not a command that runs
/// another (`env`, `sudo`, `sh`, `xargs`, `.`…).
pub fn rule_words(typed: &[String]) -> Result<Vec<String>, String> {
    if typed.is_empty() {
        return Err("a rule has at least one word (`git status`)".to_owned());
    }
    for word in typed {
        match plain_words(word) {
            Ok(words) if words.len() == 1 => {}
            Ok(_) => {
                return Err(format!(
                    "the word `{}` holds a space: give each word of the rule as its own argument",
                    toolgate::visible::visible(word)
                ));
            }
            Err(why) => {
                return Err(format!(
                    "the word `{}` cannot be matched: {why}; a rule is plain words, as a command must be to match it (`git status`)",
                    toolgate::visible::visible(word)
                ));
            }
        }
    }
    if runs_others(&typed[0]) {
        return Err(format!(
            "a rule may not begin with `{}`, which runs whatever follows it: a rule for it would let any command run unasked",
            toolgate::visible::visible(&typed[0])
        ));
    }
    Ok(typed.to_vec())
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

    fn typed(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn a_rule_must_be_plain_words() {
        assert_eq!(
            rule_words(&typed(&["git", "status"])).ok(),
            Some(typed(&["git", "status"]))
        );
        for (words, said) in [
            (&["git", "status;"][..], "shell control"),
            (&["git", "status "][..], "space"),
            (&["git status"][..], "space"),
            (&["git", ""][..], "empty"),
            (&[][..], "at least one word"),
            (&[".", "/tmp/x.sh"][..], "runs whatever follows"),
            (&["/usr/bin/env", "git"][..], "runs whatever follows"),
            (&["sudo", "ls"][..], "runs whatever follows"),
            (&["ENV", "ls"][..], "runs whatever follows"),
            (&["/usr/bin/Env"][..], "runs whatever follows"),
            (&["python3.11", "x.py"][..], "runs whatever follows"),
            (&["perl5.36"][..], "runs whatever follows"),
            (&["./x"][..], "runs whatever follows"),
            (&["bin/tool"][..], "runs whatever follows"),
            (&["busybox", "sh"][..], "runs whatever follows"),
            (&["ionice"][..], "runs whatever follows"),
        ] {
            let refused = rule_words(&typed(words)).err().unwrap_or_default();
            assert!(refused.contains(said), "{words:?}: {refused}");
        }
        for plain in [
            &["rg", "TODO"][..],
            &["ls"][..],
            &["cargo", "test"][..],
            &["/usr/bin/ls"][..],
        ] {
            assert!(rule_words(&typed(plain)).is_ok(), "{plain:?}");
        }
    }
}
