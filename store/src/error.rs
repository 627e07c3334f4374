//! What can go wrong in the store.

use sqlx::migrate::MigrateError;

use crate::Backend;

/// A store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Runs in this store were saved under an integrity key, and this handle
    /// has none.
    #[error(
        "this store authenticates its runs and decisions: open it with its integrity key (`--integrity-key-file` or TOOLGATE_INTEGRITY_KEY_FILE); read without it, a run could have been rewritten by anyone who can write the database"
    )]
    KeyRequired,
    /// The database could not be opened or created.
    #[error("cannot open the database at {location}: {source}")]
    Open {
        /// The file or URL (a password left out).
        location: String,
        /// Why.
        source: sqlx::Error,
    },
    /// The location names a backend this build leaves out.
    #[error(
        "{location} is a {backend} database, and this build of toolgate-store has no {backend} backend (enable the crate's `{backend}` feature)"
    )]
    BackendNotBuilt {
        /// The URL (a password left out).
        location: String,
        /// The backend.
        backend: Backend,
    },
    /// The database has a migration this build does not know.
    #[error(
        "the database was written by a newer toolgate: it has schema version {version}, which this build (up to version {known}) does not know; refusing to open it"
    )]
    NewerSchema {
        /// The unknown version found in the database.
        version: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// An applied migration's text differs from this build's.
    #[error(
        "schema version {version} was changed after it was applied to this database (its checksum differs); refusing to open it"
    )]
    EditedMigration {
        /// The migration.
        version: i64,
    },
    /// Migrating failed otherwise.
    #[error("migrating the database failed: {0}")]
    Migrate(MigrateError),
    /// A query failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// A statement's placeholders do not match the arguments bound to it —
    /// a fault of the statement, not of the database. It was not run.
    #[error("statement not run: {mismatch}: {statement}")]
    Arity {
        /// The statement.
        statement: String,
        /// How its placeholders and its arguments differ.
        mismatch: ArityMismatch,
    },
    /// No operator of that name.
    #[error("no operator `{0}`: add them with `toolgate operator add`")]
    NoSuchOperator(String),
    /// An operator's name that cannot stand for a person.
    #[error("unusable operator name `{name}`: {reason}")]
    InvalidOperatorName {
        /// The name, escaped.
        name: String,
        /// Why.
        reason: String,
    },
    /// A sign-in link that signs no one in: unknown, used, expired, or its
    /// operator revoked — one answer for all, so a guess learns nothing.
    #[error(
        "this sign-in link signs no one in: it was used, it expired, or it never was one; an operator gets a new one from `toolgate operator add NAME`"
    )]
    SignInRefused,
    /// A client's or a tool's name a hook's declaration cannot hold.
    #[error("the {what} name `{name}` is refused: {problem}")]
    InvalidClientTool {
        /// What was named: `client` or `tool`.
        what: &'static str,
        /// The name, escaped.
        name: String,
        /// Why.
        problem: &'static str,
    },
    /// A command rule that cannot be stored.
    #[error("the command rule is refused: {0}")]
    InvalidCommandRule(String),
    /// No gateway token has that id, and no person of that name has one.
    #[error("no gateway token `{0}`: `toolgate gateway token list` shows each one's id and person")]
    NoSuchGatewayToken(String),
    /// No server has that identifier.
    #[error("no server `{0}`")]
    NoSuchServer(String),
    /// An import would leave a server's stored catalogue — the tools it
    /// lists now and those it listed before, kept as orphaned — past its
    /// bounds; nothing was written.
    #[error(
        "server `{server}`'s stored catalogue would hold {tools} tools ({orphaned} of them no longer listed, kept as orphaned) and {bytes} bytes, past the bounds of {max_tools} tools and {max_bytes} bytes; the import was refused and the stored catalogue kept"
    )]
    CatalogueOverBounds {
        /// The server.
        server: String,
        /// Rows the catalogue would hold.
        tools: u64,
        /// How many of them are orphaned.
        orphaned: u64,
        /// Their bytes as stored.
        bytes: u64,
        /// The bound on rows.
        max_tools: usize,
        /// The bound on bytes.
        max_bytes: usize,
    },
    /// An import's staged pages were deleted before it finished: it stood
    /// untouched past [`crate::CatalogueStage::KEPT_FOR_MS`] and a later import cleared
    /// it. Nothing was replaced; the stored catalogue is kept.
    #[error(
        "the pages staged by this import of server `{server}` were cleared before it finished (a stage untouched for a day is taken for a killed import's); the stored catalogue is kept: import again"
    )]
    StageCleared {
        /// The server.
        server: String,
    },
    /// The server's tools are not the ones whose digest the operator was
    /// shown: its catalogue changed in between. Nothing was changed.
    #[error(
        "the digest given is not that of the tools of server `{server}` as they are now — they changed since they were shown, or the digest is another's: nothing was accepted; review them again and act with the digest shown then"
    )]
    CatalogueChanged {
        /// The server.
        server: String,
    },
    /// Turning a server's approval off makes its tools run without a human:
    /// it carries the digest of the tools the operator was shown.
    #[error(
        "turning approval off for server `{server}` makes its tools run unattended, so it needs the digest of the tools you reviewed"
    )]
    ReviewRequired {
        /// The server.
        server: String,
    },
    /// Declaring a tool "no approval" makes its calls run unattended: it
    /// carries the digest of the definition the operator was shown.
    #[error(
        "declaring no approval for tool `{tool}` of server `{server}` makes its calls run unattended, so it needs the digest of the definition you reviewed"
    )]
    ToolReviewRequired {
        /// The server.
        server: String,
        /// The tool's local name, with hidden characters made visible.
        tool: String,
    },
    /// Accepting a tool's definition anew under its own "no approval"
    /// finds another declaration: it was declared again since it was shown.
    #[error(
        "tool `{tool}` of server `{server}` is declared `{now}` now, not `off`: nothing was accepted"
    )]
    ToolDeclaredSince {
        /// The server.
        server: String,
        /// The tool's local name, with hidden characters made visible.
        tool: String,
        /// Its declaration now ([`crate::ToolDeclaration::word`]).
        now: &'static str,
    },
    /// The server has no live tool of that name.
    #[error("server `{server}` has no tool `{tool}`")]
    NoSuchTool {
        /// The server.
        server: String,
        /// The tool's local name, with hidden characters made visible.
        tool: String,
    },
    /// A notification sink of that name exists.
    #[error("a notification sink `{0}` exists already")]
    SinkExists(String),
    /// No notification sink has that name.
    #[error("no notification sink is named `{0}` (`toolgate notify list` shows them)")]
    NoSuchSink(String),
    /// The sink's name is unusable.
    #[error("unusable sink name `{name}`: {problem}")]
    InvalidSinkName {
        /// The name, with hidden characters made visible.
        name: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// A server with that identifier exists.
    #[error("a server `{0}` exists already")]
    ServerExists(String),
    /// The identifier is unusable.
    #[error("unusable server identifier `{id}`: {problem}")]
    InvalidServerId {
        /// The identifier.
        id: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// The run does not wait for a choice on a call whose outcome is unknown.
    #[error("run `{0}` has no call whose outcome is unknown: nothing to rerun or skip")]
    NotUnknown(String),
    /// A run of one call was to be saved under the name of a host that is
    /// not a host of runs of one call: only the [`crate::CallHost`] of the
    /// process that holds the call saves and resumes it.
    #[error(
        "run `{run_id}` is a run of one call: it is saved by the gateway's host of the process that holds the call (`CallHost`), never by a host that resumes runs with a model"
    )]
    OneCallRun {
        /// The run.
        run_id: String,
    },
    /// A run with a model was to be saved under a name kept for hosts of
    /// runs of one call.
    #[error(
        "run `{run_id}` is not a run of one call: a host of runs of one call saves only those (`Agent::call`)"
    )]
    NotOneCall {
        /// The run, with hidden characters made visible.
        run_id: String,
    },
    /// A run that was claimed by its id could not be read for resuming (no
    /// key, the wrong key, a record changed outside the store); it is given
    /// back, still decided.
    #[error("run `{run_id}` cannot be resumed by this host: {reason}")]
    Unresumable {
        /// The run, with hidden characters made visible.
        run_id: String,
        /// Why.
        reason: String,
    },
    /// A host name is unusable.
    #[error("unusable host name `{name}`: {problem}")]
    InvalidHostName {
        /// The name, with hidden characters made visible.
        name: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// A value could not be encoded.
    #[error("cannot encode {what}: {source}")]
    Encode {
        /// What.
        what: &'static str,
        /// Why.
        source: serde_json::Error,
    },
    /// A suspended run could not be encoded.
    #[error(transparent)]
    EncodeRun(#[from] toolgate::suspend::EncodeError),
    /// A transport that was read as unreadable cannot be written back.
    #[error("cannot store an unreadable transport: {0}")]
    UnreadableTransport(String),
    /// A stored row does not read back; nothing is guessed in its place.
    #[error("stored {what} is unreadable: {reason}")]
    Unreadable {
        /// What.
        what: &'static str,
        /// Why.
        reason: String,
    },
}

/// How a statement's placeholders, `$1`, `$2`, …, differ from the arguments
/// bound to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArityMismatch {
    /// A placeholder has no argument: `$0`, or one past the last bound.
    #[error("it uses ${placeholder} but binds {bound} argument(s)")]
    Unbound {
        /// The placeholder's number.
        placeholder: usize,
        /// How many arguments were bound.
        bound: usize,
    },
    /// An argument is bound to a placeholder the statement never uses.
    #[error("it binds {bound} argument(s) but never uses ${placeholder}")]
    Unused {
        /// The placeholder's number.
        placeholder: usize,
        /// How many arguments were bound.
        bound: usize,
    },
    /// More arguments than any backend takes in one statement.
    #[error("it binds {bound} arguments, more than the {max} a statement can take")]
    TooMany {
        /// How many arguments were bound.
        bound: usize,
        /// The most a statement takes.
        max: usize,
    },
}
