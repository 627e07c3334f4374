//! Where a store is kept, read from what an operator types, and shown with
//! any password hidden.

use std::path::{Path, PathBuf};

use crate::Backend;

/// Where a store is kept: an SQLite file (the embedded default) or a
/// PostgreSQL database.
///
/// Parsed from what an operator types: `postgres://…` or `postgresql://…`
/// is a server; `sqlite:PATH` or `sqlite://PATH`, or a plain path, is an
/// SQLite file. A URL of any other scheme (`mysql://…`) is no location:
/// [`Location::try_parse`] refuses it, and [`Store::open`](crate::Store::open)
/// refuses an SQLite path that holds `://`.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file, created on first use.
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL (the database must exist).
    Postgres(String),
}

impl Location {
    /// Reads a path or a database URL. Surrounding white space is ignored;
    /// anything that begins with `postgres:` or `postgresql:` (any case) is
    /// a PostgreSQL location, well formed or not — a mistyped URL is refused
    /// when opened, never taken for the name of an SQLite file.
    pub fn parse(text: &str) -> Location {
        let text = text.trim();
        let lower = text.get(..11).unwrap_or(text).to_ascii_lowercase();
        if lower.starts_with("postgres:") || lower.starts_with("postgresql:") {
            Location::Postgres(text.to_owned())
        } else if lower.starts_with("sqlite://") {
            Location::Sqlite(PathBuf::from(text.get(9..).unwrap_or_default()))
        } else if lower.starts_with("sqlite:") {
            Location::Sqlite(PathBuf::from(text.get(7..).unwrap_or_default()))
        } else {
            Location::Sqlite(PathBuf::from(text))
        }
    }

    /// Reads a path or a database URL, refusing what would otherwise be
    /// taken for a file name: only `postgres://…`, `postgresql://…`,
    /// `sqlite:PATH` (or `sqlite://PATH`) and plain paths without `://`
    /// are accepted. `mysql://…`, or a misspelt `postgress://…`, is a
    /// [`LocationError`] naming the accepted forms, never an SQLite file
    /// named like the URL.
    pub fn try_parse(text: &str) -> Result<Location, LocationError> {
        let location = Location::parse(text);
        match &location {
            Location::Sqlite(path) if names_a_url(path) => Err(LocationError::NotAStore {
                scheme: text
                    .trim()
                    .split_once("://")
                    .map(|(scheme, _)| toolgate::visible::visible(scheme).into_owned())
                    .unwrap_or_default(),
            }),
            Location::Sqlite(path) => match sqlite_path_problem(path) {
                Some(problem) => Err(LocationError::NotAFile {
                    path: toolgate::visible::visible(&path.to_string_lossy()).into_owned(),
                    problem,
                }),
                None => Ok(location),
            },
            Location::Postgres(_) => Ok(location),
        }
    }

    /// The backend this location names.
    pub fn backend(&self) -> Backend {
        match self {
            Location::Sqlite(_) => Backend::Sqlite,
            Location::Postgres(_) => Backend::Postgres,
        }
    }

    /// The location as an operator reads it: a path, or a URL with its
    /// password left out.
    pub fn display(&self) -> String {
        match self {
            Location::Sqlite(path) => path.display().to_string(),
            Location::Postgres(url) => redact_password(url),
        }
    }
}

/// A database location that names no store toolgate keeps.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocationError {
    /// A URL of a scheme that is neither PostgreSQL nor SQLite.
    #[error(
        "`{scheme}://` is not a database toolgate keeps its store in: give `postgres://…` or `postgresql://…` (PostgreSQL), `sqlite:PATH`, or a file path without `://` (SQLite)"
    )]
    NotAStore {
        /// The scheme as typed, escaped for a terminal.
        scheme: String,
    },
    /// An SQLite location that names no file the store can be kept in.
    #[error("`{path}` is no SQLite file for the store: {problem}")]
    NotAFile {
        /// The path as typed, escaped for a terminal.
        path: String,
        /// What is wrong.
        problem: &'static str,
    },
}

/// Why an SQLite location names no file the store can be kept in; `None`
/// when it does.
fn sqlite_path_problem(path: &Path) -> Option<&'static str> {
    let text = path.to_string_lossy();
    if text.trim().is_empty() {
        Some("it names no file (give `sqlite:PATH` or a path)")
    } else if text.contains('?') {
        Some("query options (`?mode=…`) are not taken: name the file alone")
    } else if text == ":memory:" || text.starts_with("file:") {
        Some("the store is a file on disk: `:memory:` and `file:` URIs are not taken")
    } else {
        None
    }
}

/// True when an SQLite path holds `://`: a URL of some other scheme, never
/// a file a person meant.
pub(crate) fn names_a_url(path: &Path) -> bool {
    path.to_str().is_some_and(|text| text.contains("://"))
}

/// Debug output never shows a password either.
impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Location::Postgres(url) => f
                .debug_tuple("Postgres")
                .field(&redact_password(url))
                .finish(),
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display())
    }
}

impl From<&str> for Location {
    fn from(text: &str) -> Self {
        Location::parse(text)
    }
}

impl From<String> for Location {
    fn from(text: String) -> Self {
        Location::parse(&text)
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Self {
        match path.to_str() {
            Some(text) => Location::parse(text),
            None => Location::Sqlite(path.to_owned()),
        }
    }
}

impl From<PathBuf> for Location {
    fn from(path: PathBuf) -> Self {
        Location::from(path.as_path())
    }
}

impl From<&PathBuf> for Location {
    fn from(path: &PathBuf) -> Self {
        Location::from(path.as_path())
    }
}

impl From<&Location> for Location {
    fn from(location: &Location) -> Self {
        location.clone()
    }
}

/// A URL with every password in it — in its user information, or as a
/// `password` parameter — replaced by `***`.
pub(crate) fn redact_password(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let mut out = match base.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.find('/') {
                Some(at) => rest.split_at(at),
                None => (rest, ""),
            };
            match authority.rsplit_once('@') {
                Some((userinfo, host)) => match userinfo.split_once(':') {
                    Some((user, _password)) => format!("{scheme}://{user}:***@{host}{path}"),
                    None => base.to_owned(),
                },
                None => base.to_owned(),
            }
        }
        // No authority to read: keep the scheme only.
        None => match base.split_once(':') {
            Some((scheme, rest)) if !rest.is_empty() => format!("{scheme}:***"),
            _ => base.to_owned(),
        },
    };
    if let Some(query) = query {
        out.push('?');
        let parameters: Vec<String> = query
            .split('&')
            .map(|parameter| match parameter.split_once('=') {
                Some((name, _)) if name.eq_ignore_ascii_case("password") => format!("{name}=***"),
                _ => parameter.to_owned(),
            })
            .collect();
        out.push_str(&parameters.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_read_from_what_an_operator_types() {
        assert_eq!(
            Location::parse("postgres://u:p@db/toolgate"),
            Location::Postgres("postgres://u:p@db/toolgate".into())
        );
        assert_eq!(
            Location::parse("PostgreSQL://db/toolgate").backend(),
            Backend::Postgres
        );
        assert_eq!(
            Location::parse("sqlite:///var/lib/toolgate.db"),
            Location::Sqlite("/var/lib/toolgate.db".into())
        );
        assert_eq!(
            Location::parse("sqlite:data/toolgate.db"),
            Location::Sqlite("data/toolgate.db".into())
        );
        assert_eq!(
            Location::parse("toolgate.db"),
            Location::Sqlite("toolgate.db".into())
        );
        assert_eq!(Location::parse("é").backend(), Backend::Sqlite);
        // Mistyped URLs are PostgreSQL locations, refused when opened, never
        // files named after a password.
        assert_eq!(
            Location::parse(" postgres://u:pw@db/x").backend(),
            Backend::Postgres
        );
        assert_eq!(
            Location::parse("postgres:u:pw@db/x").backend(),
            Backend::Postgres
        );
    }

    #[test]
    fn a_url_of_another_scheme_is_no_file_name() {
        for url in [
            "postgress://u@db/x",
            "mysql://u@db/x",
            " MySQL://db",
            "http://db/x",
            "file:///tmp/x.db",
        ] {
            let refused = Location::try_parse(url).expect_err(url);
            assert!(refused.to_string().contains("postgres://"), "{refused}");
        }
        for accepted in [
            "postgres://u@db/x",
            "postgresql://u@db/x",
            "sqlite:///var/lib/toolgate.db",
            "sqlite:toolgate.db",
            "data/toolgate.db",
        ] {
            assert!(Location::try_parse(accepted).is_ok(), "{accepted}");
        }
        assert_eq!(
            Location::try_parse("mysql://u@db/x"),
            Err(LocationError::NotAStore {
                scheme: "mysql".into()
            })
        );
    }

    #[test]
    fn a_password_is_never_displayed() {
        for (url, shown) in [
            (
                "postgres://tg:s3cret@db:5432/toolgate",
                "postgres://tg:***@db:5432/toolgate",
            ),
            (
                "postgres://tg:p@ss@word@db/toolgate?sslmode=require",
                "postgres://tg:***@db/toolgate?sslmode=require",
            ),
            ("postgres://tg@db/toolgate", "postgres://tg@db/toolgate"),
            (
                "postgres://db/toolgate?host=/run/pg",
                "postgres://db/toolgate?host=/run/pg",
            ),
            (
                "postgres://tg@db/toolgate?host=/run/pg&password=s3cret&sslmode=require",
                "postgres://tg@db/toolgate?host=/run/pg&password=***&sslmode=require",
            ),
            (
                "postgres://tg@db/toolgate?PASSWORD=s3cret",
                "postgres://tg@db/toolgate?PASSWORD=***",
            ),
            ("postgres:tg:s3cret@db/toolgate", "postgres:***"),
            (
                "  postgres://tg:s3cret@db/toolgate ",
                "postgres://tg:***@db/toolgate",
            ),
        ] {
            assert_eq!(Location::parse(url).display(), shown, "{url}");
            assert!(
                !format!("{:?}", Location::parse(url)).contains("s3cret"),
                "{url}"
            );
        }
    }
}
