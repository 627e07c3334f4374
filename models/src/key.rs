//! An API key: read from the environment or a file, sent in one header,
//! never printed.

use std::fmt;
use std::path::Path;

/// The longest key a file or variable may hold, in bytes. Provider keys are
/// a few hundred bytes at most.
const MAX_KEY_BYTES: usize = 4096;

/// An API key. Its `Debug` shows only that it is there; it has no
/// `Display`, and no error of this crate holds it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

/// Why a key could not be read. Never holds the key.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// The variable is not set.
    #[error("the environment variable `{0}` that should hold the API key is not set")]
    NotSet(String),
    /// The variable is set, but not to UTF-8 text.
    #[error("the environment variable `{0}` holds bytes that are not UTF-8 text")]
    NotText(String),
    /// The file could not be read.
    #[error("the API key file `{path}` cannot be read: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// What the system said.
        reason: String,
    },
    /// The key is empty once its surrounding whitespace is removed.
    #[error("the API key from {0} is empty")]
    Empty(String),
    /// The key holds characters no HTTP header can carry, or is too long.
    #[error(
        "the API key from {0} is not a key: it holds a character other than printable ASCII, or is longer than 4096 bytes"
    )]
    Malformed(String),
}

impl ApiKey {
    /// A key given as text (from a secret store, say). Surrounding
    /// whitespace is removed.
    pub fn new(key: impl Into<String>) -> Result<Self, KeyError> {
        Self::checked(&key.into(), "the text given")
    }

    /// The key in environment variable `name` (`OPENAI_API_KEY`, say).
    pub fn from_env(name: &str) -> Result<Self, KeyError> {
        match std::env::var(name) {
            Ok(key) => Self::checked(&key, &format!("`{name}`")),
            Err(std::env::VarError::NotPresent) => Err(KeyError::NotSet(name.to_owned())),
            Err(std::env::VarError::NotUnicode(_)) => Err(KeyError::NotText(name.to_owned())),
        }
    }

    /// The key in the file at `path`: its whole content, surrounding
    /// whitespace (a final line break) removed.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, KeyError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let unreadable = |reason: String| KeyError::Unreadable {
            path: shown.clone(),
            reason,
        };
        let metadata = std::fs::metadata(path).map_err(|e| unreadable(e.to_string()))?;
        if metadata.len() > MAX_KEY_BYTES as u64 {
            return Err(KeyError::Malformed(format!("`{shown}`")));
        }
        let bytes = std::fs::read(path).map_err(|e| unreadable(e.to_string()))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| unreadable("its content is not UTF-8 text".to_owned()))?;
        Self::checked(&text, &format!("`{shown}`"))
    }

    fn checked(key: &str, from: &str) -> Result<Self, KeyError> {
        let key = key.trim();
        if key.is_empty() {
            return Err(KeyError::Empty(from.to_owned()));
        }
        if key.len() > MAX_KEY_BYTES || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(KeyError::Malformed(from.to_owned()));
        }
        Ok(Self(key.to_owned()))
    }

    /// The key, for the one header that carries it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with the key removed, for anything a server wrote that might
    /// quote it: hidden characters (which could be slipped between the
    /// key's) are dropped first, then every run of [`REDACTED_RUN`]
    /// characters of the key — as it is or percent-encoded — is replaced,
    /// so neither the key nor a piece of it long enough to matter is left,
    /// however the text was cut or wrapped.
    pub(crate) fn redact(&self, text: &str) -> String {
        let text: String = without_escapes(text)
            .chars()
            .filter(|c| !toolgate::visible::is_hidden(*c))
            .collect();
        // Every byte inside a run of the key, in any of its forms.
        let mut covered = vec![false; text.len()];
        for form in [
            self.0.clone(),
            percent_encoded(&self.0, true),
            percent_encoded(&self.0, false),
            every_byte_encoded(&self.0, true),
            every_byte_encoded(&self.0, false),
        ] {
            let run = REDACTED_RUN.min(form.len());
            for start in 0..=form.len() - run {
                // The forms are ASCII: every index is a character boundary.
                let piece = &form[start..start + run];
                for (at, _) in text.match_indices(piece) {
                    covered[at..at + run].iter_mut().for_each(|c| *c = true);
                }
            }
        }
        let mut redacted = String::with_capacity(text.len());
        let mut inside = false;
        for (at, c) in text.char_indices() {
            if covered[at] {
                if !inside {
                    redacted.push_str("[redacted key]");
                }
                inside = true;
            } else {
                inside = false;
                redacted.push(c);
            }
        }
        redacted
    }
}

/// The shortest piece of a key that is redacted where it appears.
pub(crate) const REDACTED_RUN: usize = 10;

/// The key as a URL would carry it: every byte but letters, digits and
/// `-._~` as `%XX`.
/// Every byte of the key percent-encoded, as an encoder that encodes all
/// of it writes it.
fn every_byte_encoded(key: &str, upper: bool) -> String {
    key.bytes()
        .map(|b| {
            if upper {
                format!("%{b:02X}")
            } else {
                format!("%{b:02x}")
            }
        })
        .collect()
}

/// Text with its terminal escape sequences removed whole — a control
/// sequence (`ESC [` … a final byte) or an operating-system command
/// (`ESC ]` … `BEL` or `ESC \`) — so that none slipped between the key's
/// characters hides it once the escape character alone is dropped.
fn without_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                // Parameters and intermediates, up to the final byte.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                chars.next();
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn percent_encoded(key: &str, upper: bool) -> String {
    key.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else if upper {
                format!("%{b:02X}")
            } else {
                format!("%{b:02x}")
            }
        })
        .collect()
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_key_wholly_encoded_or_laced_with_escapes_is_removed() {
        let key = ApiKey::new("sk-proj-abcdef123456").unwrap();
        let upper = every_byte_encoded(key.expose(), true);
        let lower = every_byte_encoded(key.expose(), false);
        let laced: String = key
            .expose()
            .chars()
            .flat_map(|c| [c, '\u{1b}', '[', '0', 'm'])
            .collect();
        for text in [upper, lower, laced] {
            let shown = key.redact(&format!("key: {text}."));
            assert_eq!(shown, "key: [redacted key].", "{text}");
        }
    }

    #[test]
    fn a_key_is_never_shown() {
        let key = ApiKey::new("  sk-test-1234567890\n").unwrap();
        assert_eq!(key.expose(), "sk-test-1234567890");
        assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
        assert_eq!(
            key.redact("Incorrect API key provided: sk-test-1234567890."),
            "Incorrect API key provided: [redacted key]."
        );
        let odd = ApiKey::new("sk-proj-AbC123+xYz/789=QwErTy-SeCrEt_42").unwrap();
        for quoted in [
            "sk-proj-AbC123%2BxYz%2F789%3DQwErTy-SeCrEt_42",
            "sk-proj-AbC123%2bxYz%2f789%3dQwErTy-SeCrEt_42",
            "sk-proj-AbC123+xYz/7\n89=QwErTy-SeCrEt_42",
            "s\u{200b}k\u{200b}-proj-AbC123+xYz/789=QwErTy-SeCrEt_42",
            "{\"message\": \"sk-proj-AbC123+xYz\", \"param\": \"/789=QwErTy-SeCrEt_42\"}",
        ] {
            let shown = odd.redact(quoted);
            assert!(!shown.contains("AbC123"), "{quoted} → {shown}");
            assert!(!shown.contains("QwErTy-SeCrEt"), "{quoted} → {shown}");
        }
    }

    #[test]
    fn bad_keys_are_refused_without_quoting_them() {
        assert_eq!(
            ApiKey::new(" \n"),
            Err(KeyError::Empty("the text given".into()))
        );
        let error = ApiKey::new("sk-with a space").unwrap_err();
        assert!(!error.to_string().contains("sk-with"), "{error}");
        assert_eq!(
            ApiKey::from_env("TOOLGATE_MODELS_TEST_UNSET_VARIABLE"),
            Err(KeyError::NotSet(
                "TOOLGATE_MODELS_TEST_UNSET_VARIABLE".into()
            ))
        );
    }

    #[test]
    fn a_key_file_loses_its_line_break() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "sk-from-file\n").unwrap();
        assert_eq!(ApiKey::from_file(&path).unwrap().expose(), "sk-from-file");
        std::fs::write(&path, "x".repeat(5000)).unwrap();
        assert!(matches!(
            ApiKey::from_file(&path),
            Err(KeyError::Malformed(_))
        ));
        let missing = ApiKey::from_file(dir.path().join("nothing")).unwrap_err();
        assert!(
            missing.to_string().starts_with("the API key file `"),
            "{missing}"
        );
    }
}
