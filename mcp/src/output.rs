//! What a remote server answers, made safe to hand to a model: bounded in
//! length, hidden characters removed.
//!
//! Which characters are hidden is decided in one place,
//! [`toolgate::visible::is_hidden`]; text shown to a *person* is escaped with
//! [`toolgate::visible::visible`] instead, so nothing is lost from what they
//! review.

use toolgate::visible::is_hidden;

/// The most characters of a remote answer handed to the model.
pub const MAX_OUTPUT_CHARS: usize = 16 * 1024;

/// Removes every hidden character ([`is_hidden`]: controls, ANSI/OSC
/// starters, bidi overrides and isolates, zero-width and other invisible
/// characters), keeping line breaks and tabs, and cuts the text to
/// [`MAX_OUTPUT_CHARS`], saying so when it does.
pub fn sanitize(text: &str) -> String {
    // Printable ASCII with line breaks and tabs, within the limit, is kept
    // as it is: no character to look at one by one.
    if text.len() <= MAX_OUTPUT_CHARS
        && text
            .bytes()
            .all(|b| matches!(b, b' '..=b'~' | b'\n' | b'\t'))
    {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len().min(MAX_OUTPUT_CHARS));
    let mut kept = 0;
    let mut dropped = 0usize;
    for c in text.chars() {
        if is_hidden(c) && c != '\n' && c != '\t' {
            continue;
        }
        if kept == MAX_OUTPUT_CHARS {
            dropped += 1;
            continue;
        }
        out.push(c);
        kept += 1;
    }
    if dropped > 0 {
        out.push_str("\n[… ");
        out.push_str(&dropped.to_string());
        out.push_str(" more characters cut]");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_characters_go_and_long_text_is_cut() {
        assert_eq!(sanitize("a\u{7}b\u{1b}[31mc\nd\te\r"), "ab[31mc\nd\te");
        assert_eq!(
            sanitize("\u{202e}txt.exe\u{2066}|\u{200b}x\u{feff}\u{e0041}\u{2028}\u{9b}\u{7f}y"),
            "txt.exe|xy"
        );
        assert_eq!(sanitize("plain ünïcödé 名前"), "plain ünïcödé 名前");
        let long = "y".repeat(MAX_OUTPUT_CHARS + 10);
        let cut = sanitize(&long);
        assert!(cut.starts_with(&"y".repeat(MAX_OUTPUT_CHARS)));
        assert!(cut.ends_with("[… 10 more characters cut]"));
    }
}
