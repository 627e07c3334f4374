//! Addresses that outlive a session: a run's stable address
//! (`/runs/ID`, [`run_link`]) for notifications, and the root page that
//! says how to get back in.
//!
//! Neither answer depends on the request's cookie, so neither can reveal
//! a session's address (`/s/KEY`) to whoever holds the cookie alone. The
//! address is kept by the browser instead: the signed-in pages store it in
//! the inbox origin's own storage through the inbox's one script
//! (`/inbox.js`), and a run's stable address reads it there and opens the
//! run in that session. Without a kept address — another browser, a
//! signed-out one, no JavaScript — the page says how to sign in.

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

use crate::{Inbox, pages};

/// The inbox's one script, served from `/inbox.js`.
const SCRIPT: &str = include_str!("inbox.js");

/// The longest run id a stable address takes.
const RUN_ID_MAX: usize = 128;

/// The stable address of run `run_id` in the inbox reached at
/// `public_url` (its origin: `scheme://host[:port]`, any path dropped, as
/// [`Inbox::new`](crate::Inbox::new) takes it) — the link a notification
/// carries.
///
/// A browser signed in to the inbox opens it on the run, in its session;
/// any other is told how to sign in. The link carries no secret and opens
/// nothing by itself. Characters other than ASCII letters, digits, `-`
/// and `_` are percent-encoded (a run id holds none).
///
/// ```
/// assert_eq!(
///     toolgate_inbox::run_link("http://127.0.0.1:8640/", "3f2a-9c"),
///     "http://127.0.0.1:8640/runs/3f2a-9c"
/// );
/// ```
pub fn run_link(public_url: &str, run_id: &str) -> String {
    format!(
        "{}/runs/{}",
        crate::guard::origin_of(public_url),
        pages::path_segment(run_id)
    )
}

/// Whether `run` has the shape of a run id: 1 to [`RUN_ID_MAX`] ASCII
/// letters, digits, `-` and `_`.
fn is_run_id(run: &str) -> bool {
    (1..=RUN_ID_MAX).contains(&run.len())
        && run
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

pub(crate) async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
        .into_response()
}

/// A run's stable address: the same page for every request, cookie or
/// none; the browser's kept session address, if any, takes it on to the
/// run.
pub(crate) async fn run_address(State(inbox): State<Inbox>, Path(run): Path<String>) -> Response {
    if !is_run_id(&run) {
        return (
            StatusCode::NOT_FOUND,
            pages::refused(
                None,
                "this is not the address of a run: a run's address is /runs/ followed by its id",
                Some("/"),
            ),
        )
            .into_response();
    }
    pages::page_with(
        "Run",
        None,
        Some(&run),
        &html! {
            h1 { "Run " code { (run) } }
            p #opening hidden { "Opening it in your session…" }
            div #sign-in-hint {
                p {
                    "This browser is not signed in to the inbox (or runs no JavaScript), "
                    "so the run cannot be opened here yet."
                }
                (how_to_get_in(inbox.origin()))
                p { "Signed in, open this link again: it opens the run." }
            }
        },
    )
    .into_response()
}

/// The root page: how to get in, or back in.
pub(crate) async fn root(State(inbox): State<Inbox>) -> Response {
    pages::page(
        "Inbox",
        None,
        &html! {
            h1 { "toolgate inbox" }
            p #back hidden {
                "This browser is signed in: " a href="/" { "back to your inbox" } "."
            }
            p { "Operators decide here the runs that wait for them." }
            (how_to_get_in(inbox.origin()))
        },
    )
    .into_response()
}

/// Where a session that is not (or no longer) this browser's leads.
pub(crate) async fn signed_out(State(inbox): State<Inbox>) -> Response {
    pages::page(
        "Signed out",
        None,
        &html! {
            h1 { "Not signed in here" }
            p {
                "Your pages are at the address signing in took you to; "
                "that session ended, or this is not its address."
            }
            (how_to_get_in(inbox.origin()))
        },
    )
    .into_response()
}

/// How an operator gets in: a fresh one-time link, asked of whoever runs
/// the inbox — the command that prints it, for this inbox's address.
fn how_to_get_in(origin: &str) -> Markup {
    html! {
        h2 { "Getting in" }
        p {
            "The inbox opens with a one-time sign-in link, which works once and "
            "expires (after 15 minutes, unless told otherwise). Lost your session's address, signed out, or in "
            "another browser? Ask for a fresh link; whoever administers the "
            "inbox prints one for you (your decisions so far stay yours):"
        }
        pre.command { "toolgate operator add YOUR-NAME --public-url " (origin) }
        p { "Open it and press \"Sign in\"." }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_link_is_the_origin_and_the_escaped_id() {
        assert_eq!(
            run_link("HTTPS://Inbox.Example.com/some/path?x=1", "a_b-9"),
            "https://inbox.example.com/runs/a_b-9"
        );
        assert_eq!(
            run_link("http://127.0.0.1:8640", "<a>/../x y"),
            "http://127.0.0.1:8640/runs/%3Ca%3E%2F%2E%2E%2Fx%20y"
        );
    }

    #[test]
    fn only_a_run_id_shape_is_taken() {
        assert!(is_run_id("0b9c5d43-6c1e-4d1f-9a5e-2f0c1b7e8a11"));
        assert!(is_run_id("run-1"));
        for no in ["", "a/b", "a b", "<script>", "a.b", "é", &"a".repeat(129)] {
            assert!(!is_run_id(no), "{no}");
        }
    }
}
