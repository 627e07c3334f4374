//! Remote tools for toolgate from MCP servers.
//!
//! - [`import`] is an explicit operator action: it connects to a stored
//!   server (a stdio child process or streamable HTTP), lists its whole
//!   catalogue page by page, and stores it — annotations verbatim, vanished
//!   tools marked orphaned.
//! - [`McpProvider`] supplies the stored tools of every usable server to a
//!   [`toolgate::Registry`], building each from the server record that
//!   carries the operator's approval declaration. It does no network I/O.
//! - An [`McpTool`] call goes to the server with a deadline; an `isError`
//!   answer, a transport failure and a missed deadline all become an error
//!   result for the model.
//!
//! What a server says about its tools (`readOnlyHint` and the rest) is kept
//! for display and read by no decision.
//!
//! A server's answers handed to the model pass [`sanitize`] (hidden
//! characters, as [`toolgate::visible::is_hidden`] defines them, removed;
//! length bounded). What a server writes about its tools — a description,
//! the titles and descriptions of an input schema — reaches the model written
//! as a person is shown it, every hidden character a visible `\u{..}`
//! escape, so the reviewer of a turn reads what the model read; names and
//! values the server matches on are never rewritten, and a tool that hides a
//! character in them is skipped at import. A
//! stdio server's stderr is never inherited: each line is logged at `info`
//! with the server's identifier as the `server` field, escaped with
//! [`toolgate::visible::visible`].

mod client;
mod import;
mod names;
mod output;
mod provider;
mod schema;
mod tool;

pub use client::{ClientError, Connection, Deadlines};
pub use import::{
    ImportError, ImportLimits, ImportProgress, ImportReport, MAX_PAGES, SkippedTool, import,
    import_within,
};
pub use names::{SEPARATOR, SkipReason, local_name};
pub use output::{MAX_OUTPUT_CHARS, MAX_RICH_BYTES, rich, sanitize};
pub use provider::{McpProvider, SkippedRow};
pub use tool::McpTool;
