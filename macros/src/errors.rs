//! The error collector: every check records its errors here, and one exit,
//! [`Errors::finish`], combines them, so a user with three mistakes sees three
//! errors in one build. Dropping a collector that was not finished is a bug in
//! this crate, and panics (serde's `Ctxt` does the same).
//!
//! Messages are written like rustc's: a short headline (the rule, at the
//! user's token), then the reason as a `= note:` line and the fix as a
//! `= help:` line. A proc macro on stable cannot attach real notes, so
//! [`Message`] writes them into the message, where rustc prints them below the
//! headline.

use std::fmt::{self, Display, Write as _};

use proc_macro2::Span;
use quote::ToTokens;

/// Records errors; [`Errors::finish`] is the only way to get them out.
pub(crate) struct Errors {
    /// `None` once finished.
    list: Option<Vec<syn::Error>>,
}

impl Errors {
    pub(crate) fn new() -> Self {
        Self {
            list: Some(Vec::new()),
        }
    }

    fn list(&mut self) -> &mut Vec<syn::Error> {
        self.list.get_or_insert_with(Vec::new)
    }

    /// Records an error that `syn` produced.
    pub(crate) fn push(&mut self, error: syn::Error) {
        self.list().push(error);
    }

    /// Records an error under the tokens the user wrote.
    pub(crate) fn spanned(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.list().push(syn::Error::new_spanned(tokens, message));
    }

    /// Records an error at one span.
    pub(crate) fn at(&mut self, span: Span, message: impl Display) {
        self.list().push(syn::Error::new(span, message));
    }

    /// The one exit: every recorded error, combined, or `Ok` if there were none.
    pub(crate) fn finish(mut self) -> syn::Result<()> {
        let mut list = self.list.take().unwrap_or_default().into_iter();
        let Some(mut combined) = list.next() else {
            return Ok(());
        };
        for error in list {
            combined.combine(error);
        }
        Err(combined)
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        assert!(
            self.list.is_none() || std::thread::panicking(),
            "toolgate-macros bug: an error collector was dropped without `finish()`"
        );
    }
}

/// A message in rustc's shape: a headline, then `= note:` and `= help:` lines.
pub(crate) struct Message(String);

impl Message {
    /// The headline: the rule that was broken, in one short line.
    pub(crate) fn new(headline: impl Display) -> Self {
        Self(headline.to_string())
    }

    /// Why the rule exists.
    pub(crate) fn note(self, note: impl Display) -> Self {
        self.line("note", note)
    }

    /// What to do instead.
    pub(crate) fn help(self, help: impl Display) -> Self {
        self.line("help", help)
    }

    fn line(mut self, kind: &str, text: impl Display) -> Self {
        let _ = write!(self.0, "\n= {kind}: {text}");
        self
    }
}

impl Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::{Errors, Message};
    use proc_macro2::Span;

    #[test]
    fn finish_combines_every_error() {
        let mut errors = Errors::new();
        errors.at(Span::call_site(), "first");
        errors.at(
            Span::call_site(),
            Message::new("second").note("why").help("fix"),
        );
        let combined = errors.finish().expect_err("two errors were recorded");
        let messages: Vec<String> = combined.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(messages, ["first", "second\n= note: why\n= help: fix"]);
    }

    #[test]
    fn finish_without_errors_is_ok() {
        Errors::new().finish().expect("nothing was recorded");
    }

    #[test]
    #[should_panic(expected = "dropped without `finish()`")]
    fn dropping_unfinished_errors_is_a_bug() {
        let mut errors = Errors::new();
        errors.at(Span::call_site(), "lost");
        drop(errors);
    }
}
