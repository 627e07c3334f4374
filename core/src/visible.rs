//! The one sanitiser for everything a human reads from an untrusted source:
//! call ids, tool names and arguments from a model, names of people
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
///
/// The set is the C0 and C1 controls and DEL; every Unicode
/// `Default_Ignorable_Code_Point` (characters a renderer draws as nothing:
/// zero-width characters and joiners, bidi marks, embeddings, overrides and
/// isolates, variation selectors, fillers, tag characters and the whole
/// ignorable plane-14 block, reserved ones included); the remaining format
/// characters (general category Cf, such as the Arabic number signs and the
/// Egyptian hieroglyph format controls); the line and paragraph
/// separators; the Braille pattern blank, a blank that is no space; the
/// private-use characters, which have no glyph a reader can rely on; and the
/// noncharacters. A character assigned later inside these ranges is covered
/// already.
pub fn is_hidden(c: char) -> bool {
    // Most text is ASCII: of it, exactly the C0 controls and DEL are hidden.
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    matches!(c,
        // C0 controls, DEL, C1 controls.
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        // Default_Ignorable_Code_Point (DerivedCoreProperties.txt).
        | '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}'
        | '\u{17b4}' | '\u{17b5}' | '\u{180b}'..='\u{180f}'
        | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}'
        | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}'
        | '\u{fff0}'..='\u{fff8}' | '\u{1bca0}'..='\u{1bca3}' | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0000}'..='\u{e0fff}'
        // Other format characters (Cf): Arabic and Syriac number signs and
        // marks, Kaithi number signs, interlinear annotation, Egyptian
        // hieroglyph format controls.
        | '\u{600}'..='\u{605}' | '\u{6dd}' | '\u{70f}' | '\u{890}' | '\u{891}' | '\u{8e2}'
        | '\u{110bd}' | '\u{110cd}' | '\u{fff9}'..='\u{fffb}' | '\u{13430}'..='\u{1343f}'
        // Line and paragraph separators.
        | '\u{2028}' | '\u{2029}'
        // A blank that is not a space (Braille pattern blank).
        | '\u{2800}'
        // Private use: no glyph a reader can rely on.
        | '\u{e000}'..='\u{f8ff}' | '\u{f0000}'..='\u{ffffd}' | '\u{100000}'..='\u{10fffd}'
        // Noncharacters.
        | '\u{fdd0}'..='\u{fdef}'
    ) || u32::from(c) & 0xfffe == 0xfffe
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
    visible_json_text(&value.to_string()).into_owned()
}

/// JSON text as serde_json wrote it (compact or pretty), with every hidden
/// character inside its strings written as a `\u` escape: the same JSON value,
/// safe to print on a terminal. Line breaks are kept, since serde_json writes
/// raw ones only between tokens (inside strings it escapes them). For `--json`
/// output a script parses and a person may read.
pub fn visible_json_text(text: &str) -> Cow<'_, str> {
    let hidden = |c: char| c != '\n' && is_hidden(c);
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The first `chars` characters of `text`, escaped for reading
/// ([`visible`]), marked with `…` when cut: what an error repeats of text a
/// model or a server wrote.
pub(crate) fn excerpt(text: &str, chars: usize) -> String {
    let mut cut: String = text.chars().take(chars).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    visible(&cut).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn of_ascii_exactly_the_controls_and_del_are_hidden() {
        for b in 0u8..=0x7f {
            let c = char::from(b);
            assert_eq!(is_hidden(c), b < 0x20 || b == 0x7f, "{b:#04x}");
        }
        for c in [
            '\u{80}',
            '\u{9f}',
            '\u{ad}',
            '\u{200b}',
            '\u{202e}',
            '\u{e0041}',
        ] {
            assert!(is_hidden(c), "{c:?}");
        }
        for c in ['\u{a0}', 'é', 'а', '中'] {
            assert!(!is_hidden(c), "{c:?}");
        }
    }

    #[test]
    fn every_escape_family_is_shown_not_interpreted() {
        let hostile = "\u{1b}]0;pwned\u{7}\u{1b}[2K\r\u{9b}31m\u{202e}\u{2066}\u{200b}\u{feff}\u{e0041}\u{2028}x";
        for invisible in [
            '\u{180b}',
            '\u{17b4}',
            '\u{e0080}',
            '\u{fff0}',
            '\u{13430}',
            '\u{600}',
        ] {
            assert!(is_hidden(invisible), "{invisible:?}");
        }
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
        let back: Value = serde_json::from_str(&text).expect("the escaped text is JSON");
        assert_eq!(back, value);
        let pretty = serde_json::to_string_pretty(&value).expect("a value prints");
        let shown = visible_json_text(&pretty);
        assert!(!shown.chars().any(|c| c != '\n' && is_hidden(c)), "{shown}");
        let again: Value = serde_json::from_str(&shown).expect("the escaped pretty text is JSON");
        assert_eq!(again, value);
    }
}
