//! The backend a test binary runs on, and a fresh database on it per test.
//!
//! Every test opens its store through [`TestDb`]. A binary runs on SQLite;
//! its `on_postgres` test ([`rerun_on_postgres`]) runs the same binary again
//! with `TOOLGATE_TEST_BACKEND=postgres`, where every [`TestDb`] is a new
//! database on the server named by `TOOLGATE_TEST_POSTGRES` (an admin URL,
//! such as `.ci/postgres start` prints). One suite, two backends.
#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test binary uses part of it"
)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause"
)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use toolgate_store::{Backend, Location};

/// The admin URL of the PostgreSQL server the suite also runs on.
pub const POSTGRES_ENV: &str = "TOOLGATE_TEST_POSTGRES";
/// Set by [`rerun_on_postgres`] in the binary it runs again.
pub const BACKEND_ENV: &str = "TOOLGATE_TEST_BACKEND";

/// The backend this test process runs on.
pub fn backend() -> Backend {
    match std::env::var(BACKEND_ENV).as_deref() {
        Ok("postgres") => Backend::Postgres,
        _ => Backend::Sqlite,
    }
}

/// True when this process runs the suite on PostgreSQL.
pub fn on_postgres() -> bool {
    backend() == Backend::Postgres
}

/// A fresh, empty database for one test, and a scratch directory beside it.
pub struct TestDb {
    location: Location,
    dir: tempfile::TempDir,
}

impl TestDb {
    /// A new database on this process's backend.
    pub async fn new() -> TestDb {
        TestDb::on(backend()).await
    }

    /// A new database on `backend` (PostgreSQL needs `TOOLGATE_TEST_POSTGRES`).
    pub async fn on(backend: Backend) -> TestDb {
        let dir = tempfile::tempdir().unwrap();
        let location = match backend {
            Backend::Sqlite => Location::Sqlite(dir.path().join("toolgate.db")),
            _ => Location::Postgres(create_database().await),
        };
        TestDb { location, dir }
    }

    /// True when a PostgreSQL server is configured for the tests.
    pub fn postgres_configured() -> bool {
        std::env::var_os(POSTGRES_ENV).is_some()
    }

    /// [`TestDb::new`] from synchronous code.
    pub fn blocking() -> TestDb {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(TestDb::new())
    }

    /// Where the store is.
    pub fn location(&self) -> Location {
        self.location.clone()
    }

    /// The location as a command line takes it (`--database-url`).
    pub fn url(&self) -> String {
        match &self.location {
            Location::Sqlite(path) => path.display().to_string(),
            Location::Postgres(url) => url.clone(),
        }
    }

    /// A scratch directory that lives as long as the database.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The SQLite file, on SQLite.
    pub fn sqlite_path(&self) -> Option<PathBuf> {
        match &self.location {
            Location::Sqlite(path) => Some(path.clone()),
            Location::Postgres(_) => None,
        }
    }
}

/// Creates a database named after this process and a counter on the
/// server, and gives its URL.
async fn create_database() -> String {
    use sqlx::Connection as _;
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let admin = std::env::var(POSTGRES_ENV)
        .unwrap_or_else(|_| panic!("{BACKEND_ENV}=postgres needs {POSTGRES_ENV}"));
    let name = format!(
        "tg_{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let mut connection = sqlx::postgres::PgConnection::connect(&admin)
        .await
        .unwrap_or_else(|e| panic!("cannot reach the test server at {admin}: {e}"));
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut connection)
        .await
        .unwrap();
    connection.close().await.unwrap();
    with_database(&admin, &name)
}

/// The admin URL with its database replaced by `name`.
fn with_database(admin: &str, name: &str) -> String {
    let (base, query) = match admin.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (admin, None),
    };
    let rest = base.split_once("://").unwrap();
    let host = rest.1.split('/').next().unwrap_or_default();
    let mut url = format!("{}://{host}/{name}", rest.0);
    if let Some(query) = query {
        url.push('?');
        url.push_str(query);
    }
    url
}

/// The body of each binary's `on_postgres` test: runs this test binary
/// again, every test but this one, on PostgreSQL, and fails with the run's
/// output when any test fails there. Without a server configured
/// (`TOOLGATE_TEST_POSTGRES` unset) it says so and runs nothing; `.ci/run`
/// always configures one.
pub fn rerun_on_postgres() {
    if on_postgres() {
        return;
    }
    let Ok(admin) = std::env::var(POSTGRES_ENV) else {
        eprintln!(
            "{POSTGRES_ENV} is not set: this binary's tests ran on SQLite only (`.ci/postgres start DIR` starts a throwaway server and prints its URL)"
        );
        return;
    };
    let exe = std::env::current_exe().unwrap();
    let output = std::process::Command::new(&exe)
        .args(["--skip", "on_postgres", "--test-threads", "2"])
        .env(BACKEND_ENV, "postgres")
        .env(POSTGRES_ENV, admin)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the suite failed on PostgreSQL:\n{stdout}\n{stderr}"
    );
    let summary = stdout
        .lines()
        .filter(|l| l.starts_with("test result:"))
        .collect::<Vec<_>>()
        .join("; ");
    assert!(
        summary.contains(" passed;") && !summary.contains(" 0 passed;"),
        "no test ran on PostgreSQL: {stdout}"
    );
    eprintln!("on PostgreSQL: {summary}");
}
