//! Output for operators (aligned tables, colour only on a terminal) and for
//! scripts (`--json`).
//!
//! Everything a person reads passes one sanitiser, [`toolgate::visible`],
//! and it passes here, at the output layer, not where each value is
//! fetched:
//!
//! - every value interpolated into a printed line goes through [`say!`] (or
//!   [`say_err!`], [`ask!`]), which wraps each argument in [`Shown`]; the
//!   format string itself is the program's own text, and may not capture a
//!   variable inline (`{name}`), which would bypass the wrapper — that is
//!   refused at compile time;
//! - every table cell goes through [`Grid::row`]: text is escaped with
//!   [`visible`], JSON with [`visible_json`], and the table is laid out from
//!   the escaped text, so its columns line up;
//! - every log line's fields go through [`log_fields`].
//!
//! `--json` output is serde_json's, with hidden characters inside its strings
//! written as `\u` escapes ([`toolgate::visible::visible_json_text`]): the
//! same JSON value, safe on a terminal.

use std::borrow::Cow;
use std::fmt;
use std::io::IsTerminal;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, Color, ContentArrangement, Table};
use serde::Serialize;
use serde_json::Value;
use toolgate::visible::{visible, visible_json};

/// Where output goes and how it looks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Out {
    pub(crate) json: bool,
    pub(crate) colour: bool,
}

impl Out {
    pub(crate) fn new(json: bool) -> Self {
        Self {
            json,
            colour: !json
                && std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    /// A table with a header row, fitted to [`Out::width`] when there is
    /// one: long cells wrap at spaces, and the columns marked with
    /// [`Grid::whole`] (ids, names) are never split.
    pub(crate) fn table(self, header: &[&str]) -> Grid {
        let mut table = Table::new();
        table
            .load_style(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic);
        if !self.colour {
            table.force_no_tty();
        }
        if let Some(width) = self.width() {
            table.set_width(width);
        }
        table.set_header(header.iter().map(|h| Cell::new(visible(h))));
        Grid { table, out: self }
    }

    /// The width tables fit: `COLUMNS` when it holds a number (at least
    /// 20), else the terminal's — 120 for a terminal that reports no
    /// usable width (a pseudo-terminal nobody sized) — and none on a pipe,
    /// where rows stay whole for the programs that read them.
    #[allow(
        clippy::unused_self,
        reason = "called as `out.width()` beside the table printers"
    )]
    pub(crate) fn width(self) -> Option<u16> {
        if let Some(columns) = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<u16>().ok())
            .filter(|c| *c >= 20)
        {
            return Some(columns);
        }
        if !std::io::stdout().is_terminal() {
            return None;
        }
        Some(Table::new().width().filter(|w| *w >= 40).unwrap_or(120))
    }

    /// Prints a value as JSON.
    #[allow(
        clippy::unused_self,
        reason = "called as `out.json(..)` beside the table printers"
    )]
    pub(crate) fn json<T: Serialize>(self, value: &T) -> Result<(), crate::Failure> {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| crate::Failure::Error(e.to_string()))?;
        // The same JSON value, with every hidden character inside its strings
        // written as a `\u` escape: a script reads the value, a person the text.
        out_line!("{}", toolgate::visible::visible_json_text(&text));
        Ok(())
    }
}

/// One cell of a [`Grid`] row, before it is escaped.
pub(crate) enum Col<'a> {
    /// Text, shown with [`visible`].
    Text(Cow<'a, str>),
    /// A JSON value, shown as compact JSON with [`visible_json`].
    Json(&'a Value),
    /// A gate word, coloured on a terminal.
    Gate(&'a str),
    /// Text and JSON in one cell, each piece escaped as its kind.
    Mixed(Mixed),
}

/// A cell's text built of pieces — words, and JSON values — each escaped
/// as its kind when the row is added: JSON inside a sentence is written
/// once (`{"a":"x\ny"}`), never escaped a second time as text.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Mixed(Vec<Piece>);

/// One piece of a [`Mixed`] cell.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Json(Value),
}

impl Mixed {
    /// Appends text.
    pub(crate) fn text(mut self, text: impl Into<String>) -> Self {
        self.0.push(Piece::Text(text.into()));
        self
    }

    /// Appends a JSON value.
    pub(crate) fn json(mut self, value: &Value) -> Self {
        self.0.push(Piece::Json(value.clone()));
        self
    }

    /// The pieces as one plain string (JSON as compact text), for `--json`
    /// output, which escapes its own strings.
    pub(crate) fn plain(&self) -> String {
        self.0
            .iter()
            .map(|piece| match piece {
                Piece::Text(text) => text.clone(),
                Piece::Json(value) => value.to_string(),
            })
            .collect()
    }

    /// The pieces escaped for a person: text with [`visible`], JSON with
    /// [`visible_json`].
    fn shown(&self) -> String {
        self.0
            .iter()
            .map(|piece| match piece {
                Piece::Text(text) => visible(text).into_owned(),
                Piece::Json(value) => visible_json(value),
            })
            .collect()
    }
}

impl From<Mixed> for Col<'_> {
    fn from(mixed: Mixed) -> Self {
        Col::Mixed(mixed)
    }
}

impl<'a> From<&'a str> for Col<'a> {
    fn from(text: &'a str) -> Self {
        Col::Text(Cow::Borrowed(text))
    }
}

impl<'a> From<&'a String> for Col<'a> {
    fn from(text: &'a String) -> Self {
        Col::Text(Cow::Borrowed(text))
    }
}

impl From<String> for Col<'_> {
    fn from(text: String) -> Self {
        Col::Text(Cow::Owned(text))
    }
}

impl<'a> From<&'a Value> for Col<'a> {
    fn from(value: &'a Value) -> Self {
        Col::Json(value)
    }
}

/// A cell for stored JSON text (a server's annotations): the parsed value
/// when it parses (shown as JSON), the text when it does not (shown as
/// text).
pub(crate) fn stored_json(text: &str) -> Owned {
    match serde_json::from_str::<Value>(text) {
        Ok(value) => Owned::Json(value),
        Err(_) => Owned::Text(text.to_owned()),
    }
}

/// A cell value the row owns (see [`stored_json`]).
pub(crate) enum Owned {
    Text(String),
    Json(Value),
}

impl<'a> From<&'a Owned> for Col<'a> {
    fn from(owned: &'a Owned) -> Self {
        match owned {
            Owned::Text(text) => Col::from(text),
            Owned::Json(value) => Col::Json(value),
        }
    }
}

/// A table whose every cell is escaped before it is laid out.
pub(crate) struct Grid {
    table: Table,
    out: Out,
}

impl Grid {
    /// Adds a row; every cell passes the sanitiser here.
    pub(crate) fn row<'a>(&mut self, cells: impl IntoIterator<Item = Col<'a>>) {
        let out = self.out;
        self.table.add_row(cells.into_iter().map(|col| match col {
            Col::Text(text) => Cell::new(visible(&text)),
            Col::Json(value) => Cell::new(visible_json(value)),
            Col::Gate(word) => out.gate(word),
            Col::Mixed(mixed) => Cell::new(mixed.shown()),
        }));
    }

    /// Marks columns (by index) that hold ids and names: they keep their
    /// content's width, so a narrow terminal wraps the other columns
    /// rather than split an id or a name.
    pub(crate) fn whole(&mut self, columns: &[usize]) {
        for index in columns {
            if let Some(column) = self.table.column_mut(*index) {
                column.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
            }
        }
    }

    /// Without a terminal there is no width to fit: a table whose cells hold
    /// long lists wraps them at a width that reads well in logs.
    pub(crate) fn wrap(&mut self) {
        if !std::io::stdout().is_terminal() {
            self.table.set_width(120);
        }
    }

    /// Prints the table. Its cells were escaped when they were added; the
    /// borders and the header are the program's own.
    pub(crate) fn print(&self) {
        out_line!("{}", self.table);
    }
}

impl Out {
    /// A cell coloured by the gate word it holds.
    fn gate(self, word: &str) -> Cell {
        let cell = Cell::new(visible(word));
        if !self.colour {
            return cell;
        }
        match word {
            "approval" => cell.fg(Color::Yellow),
            "input" => cell.fg(Color::Cyan),
            "runs" => cell.fg(Color::Green),
            "inert" | "failed" => cell.fg(Color::Red),
            _ => cell,
        }
    }
}

/// How a value is shown in a printed line: text with [`visible`], JSON with
/// [`visible_json`]. Implemented for the kinds of value the commands print and
/// nothing else, so a new kind is a decision, not an accident.
pub(crate) trait Show {
    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

impl Show for str {
    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&visible(self))
    }
}

impl Show for String {
    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_str().show(f)
    }
}

impl Show for Cow<'_, str> {
    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_ref().show(f)
    }
}

impl Show for Value {
    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&visible_json(self))
    }
}

macro_rules! show_number {
    ($($t:ty),*) => {$(
        impl Show for $t {
            fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        }
    )*};
}
show_number!(usize, u32, u64, i64);

impl<T: Show + ?Sized> Show for &T {
    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).show(f)
    }
}

/// A value interpolated into a printed line, shown through [`Show`]. Only
/// [`say!`] and its siblings build it.
pub(crate) struct Shown<'a, T: ?Sized>(pub(crate) &'a T);

impl<T: Show + ?Sized> fmt::Display for Shown<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.show(f)
    }
}

/// True when a format string takes its arguments only from the argument list
/// (`{}`, `{:>8}`), never by capturing a variable (`{name}`) or by position
/// (`{0}`), which would let a value bypass [`Shown`]. Checked at compile time
/// by [`say!`].
pub(crate) const fn arguments_only(format: &str) -> bool {
    let bytes = format.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' {
            if i + 1 < bytes.len() && bytes[i + 1] == b'{' {
                i += 2;
                continue;
            }
            if i + 1 >= bytes.len() || !matches!(bytes[i + 1], b'}' | b':') {
                return false;
            }
        }
        i += 1;
    }
    true
}

/// `$print!` a line whose every argument passes the sanitiser.
macro_rules! shown {
    ($print:ident, $format:literal $(, $arg:expr)* $(,)?) => {{
        const {
            assert!(
                $crate::output::arguments_only($format),
                "say!: pass every value as an argument (`{{}}`), so it is escaped"
            );
        };
        $crate::output::$print!($format $(, $crate::output::Shown(&$arg))*)
    }};
}

/// A line on standard output. A reader that went away (`| head`) ends the
/// program quietly, as it ends a Unix tool: nothing more can be shown, and
/// what was done is done.
macro_rules! out_line {
    () => { $crate::output::emit(format_args!("\n")) };
    ($($arg:tt)+) => { $crate::output::emit(format_args!("{}\n", format_args!($($arg)+))) };
}

/// Standard output without a line break, as [`out_line!`].
macro_rules! out_text {
    ($($arg:tt)+) => { $crate::output::emit(format_args!($($arg)+)) };
}

/// Writes to standard output; a closed pipe ends the program with status 0,
/// any other failure to write is dropped (there is nowhere to say it).
pub(crate) fn emit(text: fmt::Arguments<'_>) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout.write_fmt(text).and_then(|()| stdout.flush())
        && error.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// [`out_line!`], with every argument escaped for a person to read.
macro_rules! say {
    () => { $crate::output::out_line!() };
    ($($rest:tt)+) => { $crate::output::shown!(out_line, $($rest)+) };
}

/// `eprintln!`, with every argument escaped for a person to read.
macro_rules! say_err {
    ($($rest:tt)+) => { $crate::output::shown!(err_line, $($rest)+) };
}

/// A line on standard error.
macro_rules! err_line {
    ($($arg:tt)+) => { eprintln!($($arg)+) };
}

/// A prompt, no line break, with every argument escaped.
macro_rules! ask {
    ($($rest:tt)+) => { $crate::output::shown!(out_text, $($rest)+) };
}

pub(crate) use {ask, err_line, out_line, out_text, say, say_err, shown};

/// The field formatter of the log: every field's value (the message
/// included) is escaped with [`visible`], so a log line is one line and
/// nothing in it acts on a terminal, whatever the libraries log.
pub(crate) fn log_fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> + 'static {
    use tracing_subscriber::field::MakeExt;
    tracing_subscriber::fmt::format::debug_fn(|writer, field, value| {
        let text = format!("{value:?}");
        if field.name() == "message" {
            write!(writer, "{}", visible(&text))
        } else {
            write!(writer, "{}={}", visible(field.name()), visible(&text))
        }
    })
    .delimited(" ")
}

/// Milliseconds since the epoch as a UTC date and time to the minute, as
/// tables show it (`2026-12-03 07:41`).
pub(crate) fn date_utc(ms: i64) -> String {
    let stamp = timestamp(ms);
    stamp.get(..16).map_or(stamp.clone(), str::to_owned)
}

/// Milliseconds since the epoch as a UTC timestamp.
pub(crate) fn timestamp(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {h:02}:{m:02}:{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc() {
        assert_eq!(timestamp(0), "1970-01-01 00:00:00Z");
        assert_eq!(timestamp(1_700_000_000_000), "2023-11-14 22:13:20Z");
        assert_eq!(timestamp(951_782_400_000), "2000-02-29 00:00:00Z");
        assert_eq!(date_utc(1_700_000_000_000), "2023-11-14 22:13");
    }

    #[test]
    fn format_strings_take_values_only_as_arguments() {
        assert!(arguments_only("run {} finished: {}"));
        assert!(arguments_only("{:>8} {{literal}} {}"));
        assert!(!arguments_only("server `{id}`"));
        assert!(!arguments_only("{0} {0}"));
        assert!(!arguments_only("dangling {"));
    }

    #[test]
    fn shown_values_and_cells_are_escaped() {
        let id = "\u{1b}[2K\u{1b}[1A\r│ call_3";
        assert_eq!(Shown(&id).to_string(), "\\u{1b}[2K\\u{1b}[1A\\u{d}│ call_3");
        assert_eq!(Shown(r"C:\temp").to_string(), r"C:\\temp");
        let args = serde_json::json!({"path": "a\u{202e}b\\c"});
        assert_eq!(Shown(&args).to_string(), r#"{"path":"a\u202eb\\c"}"#);
        assert_eq!(Shown(&7usize).to_string(), "7");
        let mut grid = Out {
            json: false,
            colour: false,
        }
        .table(&["CALL", "ARGUMENTS"]);
        grid.row([Col::from(id), Col::from(&args)]);
        let text = grid.table.to_string();
        assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text}");
        assert!(text.contains(r#"{"path":"a\u202eb\\c"}"#), "{text}");
    }
}
