//! Output for operators (aligned tables, colour only on a terminal) and for
//! scripts (`--json`).

use std::io::IsTerminal;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, Color, ContentArrangement, Table};
use serde::Serialize;

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

    /// A table with a header row.
    pub(crate) fn table(self, header: &[&str]) -> Table {
        let mut table = Table::new();
        table
            .load_style(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic);
        if !self.colour {
            table.force_no_tty();
        }

        table.set_header(header.iter().map(Cell::new));
        table
    }

    /// Without a terminal there is no width to fit: a table whose cells hold
    /// long lists wraps them at a width that reads well in logs.
    pub(crate) fn wrap(table: &mut Table) {
        if !std::io::stdout().is_terminal() {
            table.set_width(120);
        }
    }

    /// A cell coloured by the gate word it holds.
    pub(crate) fn gate(self, word: &str) -> Cell {
        let cell = Cell::new(word);
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

    /// Prints a value as JSON.
    #[allow(
        clippy::unused_self,
        reason = "called as `out.json(..)` beside the table printers"
    )]
    pub(crate) fn json<T: Serialize>(self, value: &T) -> Result<(), crate::Failure> {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| crate::Failure::Error(e.to_string()))?;
        println!("{text}");
        Ok(())
    }
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
    use super::timestamp;

    #[test]
    fn timestamps_are_utc() {
        assert_eq!(timestamp(0), "1970-01-01 00:00:00Z");
        assert_eq!(timestamp(1_700_000_000_000), "2023-11-14 22:13:20Z");
        assert_eq!(timestamp(951_782_400_000), "2000-02-29 00:00:00Z");
    }
}
