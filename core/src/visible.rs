//! The one sanitiser for everything a human reads from an untrusted source
//! (SPEC §7): call ids, tool names and arguments from a model, names of people
//! and servers, tool output, a server's errors and its stderr.
//!
//! Nothing is removed and nothing is interpreted: every character a terminal
//! would act on or hide is rendered as visible text, so that what a reviewer
//! sees is exactly what runs. That covers the C0 and C1 controls and DEL
//! (which start ANSI/OSC escape sequences, move the cursor, erase lines or
//! retitle the window), bidirectional overrides and isolates (which reorder
//! what follows), zero-width and other invisible format characters, line and
//! paragraph separators, Unicode tag characters and invisible fillers.
//!
//! ```
//! use toolgate::visible::{visible, visible_json};
//!
//! // An id that would erase the line above on a terminal.
//! assert_eq!(visible("\u{1b}[2K\u{1b}[1Acall_3"), "\\u{1b}[2K\\u{1b}[1Acall_3");
//! // A name that would read backwards.
//! assert_eq!(visible("alice\u{202e}nimda"), "alice\\u{202e}nimda");
//! // Text that only looks like an escape is told apart from one.
//! assert_eq!(visible("C:\\temp"), "C:\\\\temp");
//! // JSON stays JSON: invisible characters become `\u` escapes.
//! let arguments = serde_json::json!({"path": "a\u{202e}b\u{7f}"});
//! assert_eq!(visible_json(&arguments), r#"{"path":"a\u202eb\u007f"}"#);
//! ```

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::Value;

/// True for a character a terminal would interpret, or that a reader could
/// not see: it is shown escaped.
pub fn is_hidden(c: char) -> bool {
    matches!(c,
        // C0 controls, DEL, C1 controls.
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        // Soft hyphen, combining grapheme joiner, Arabic letter mark,
        // Hangul fillers, Mongolian vowel separator.
        | '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{180e}'
        // Zero-width space, joiners, left-to-right and right-to-left marks.
        | '\u{200b}'..='\u{200f}'
        // Line and paragraph separators, bidi embeddings and overrides.
        | '\u{2028}'..='\u{202e}'
        // Word joiner, invisible operators, bidi isolates, deprecated format
        // characters.
        | '\u{2060}'..='\u{206f}'
        // Hangul filler, variation selectors, byte order mark, halfwidth
        // Hangul filler, interlinear annotation, object replacement.
        | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}' | '\u{fff9}'..='\u{fffb}'
        // Shorthand format controls, musical symbol format controls.
        | '\u{1bca0}'..='\u{1bca3}' | '\u{1d173}'..='\u{1d17a}'
        // Tag characters and supplementary variation selectors.
        | '\u{e0000}'..='\u{e007f}' | '\u{e0100}'..='\u{e01ef}'
    )
}

/// `text` with every hidden character (see [`is_hidden`]) written as
/// `\u{..}` and every backslash doubled, so an escape shown can always be
/// told from text that only looks like one. Borrowed when nothing changes.
pub fn visible(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

/// Like [`visible`], but line breaks and tabs are kept: for multi-line text
/// such as a tool's output or a server's error, shown as a block. A carriage
/// return, which would let a line overwrite itself, is still escaped.
pub fn visible_lines(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || c == '\t')
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let shown = |c: char| keep(c) || (c != '\\' && !is_hidden(c));
    if text.chars().all(shown) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if shown(c) {
            out.push(c);
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
    Cow::Owned(out)
}

/// A JSON value as compact JSON text that is still valid JSON and shows every
/// hidden character as a `\u` escape (serde_json already escapes C0 controls,
/// quotes and backslashes; DEL, C1, bidi and invisible characters it writes
/// raw).
pub fn visible_json(value: &Value) -> String {
    let text = value.to_string();
    if !text.chars().any(is_hidden) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_escape_family_is_shown_not_interpreted() {
        let hostile = "\u{1b}]0;pwned\u{7}\u{1b}[2K\r\u{9b}31m\u{202e}\u{2066}\u{200b}\u{feff}\u{e0041}\u{2028}x";
        let shown = visible(hostile);
        assert!(!shown.chars().any(is_hidden), "{shown}");
        assert_eq!(
            shown,
            "\\u{1b}]0;pwned\\u{7}\\u{1b}[2K\\u{d}\\u{9b}31m\\u{202e}\\u{2066}\\u{200b}\\u{feff}\\u{e0041}\\u{2028}x"
        );
        assert!(matches!(
            visible("plain text, ünïcödé 名前"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn lines_keep_breaks_and_tabs_but_not_carriage_returns() {
        assert_eq!(visible_lines("a\n\tb\rc\u{1b}"), "a\n\tb\\u{d}c\\u{1b}");
        assert_eq!(visible_lines("\nx\n"), "\nx\n");
        assert!(matches!(visible_lines("a\nb"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_stays_json_and_round_trips() {
        let value = serde_json::json!({"k\u{202e}": ["\u{7f}\u{85}", "\u{e0041}", "\u{1b}"]});
        let text = visible_json(&value);
        assert!(!text.chars().any(is_hidden), "{text}");
        let back: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(back, value);
    }
}
