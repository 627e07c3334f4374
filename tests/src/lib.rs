//! Fixtures shared by the integration tests: one typed tool for every legal
//! row of the approval table, a hand-erased tool that answers whatever it is
//! told, and providers that count, fail or collide.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::{JsonSchema, Schema};
use serde::Deserialize;
use serde_json::{Map, Value};
use toolgate::{
    Execute, OperatorDeclaration, RemoteApproval, RemoteTool, Tool, ToolOutput,
    erased::{BoxFuture, DynTool, ErasedTool},
    gate::{Effect, Facts, Origin, Quarantine},
    registry::{ProviderError, Revision, ToolProvider},
};

/// Arguments naming a path.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PathArgs {
    /// A path below the workspace root.
    pub path: String,
}

/// What a user types for [`PickBranch`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Choice {
    /// The branch the user picks.
    pub branch: String,
}

macro_rules! echo_execute {
    ($ty:ty, $args:ty, $verb:literal) => {
        impl Execute for $ty {
            type Args = $args;
            async fn execute(&self, args: $args) -> ToolOutput {
                ToolOutput::text(format!(concat!($verb, " {:?}"), args))
            }
        }
    };
}

/// Reads a file.
#[derive(Tool)]
#[tool(effect = read_only)]
pub struct ReadFile;
echo_execute!(ReadFile, PathArgs, "read");

/// Shows secrets; asks anyway.
#[derive(Tool)]
#[tool(effect = read_only, requires_approval)]
pub struct ShowSecrets;
echo_execute!(ShowSecrets, PathArgs, "showed");

/// Writes a file, replacing it.
#[derive(Tool)]
#[tool(effect = idempotent_write)]
pub struct WriteFile;
echo_execute!(WriteFile, PathArgs, "wrote");

/// Appends to a file.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
pub struct AppendFile;
echo_execute!(AppendFile, PathArgs, "appended");

/// Appends to a file, with the marker as well as the write.
#[derive(Tool)]
#[tool(effect = non_idempotent_write, requires_approval)]
pub struct AppendFileMarked;
echo_execute!(AppendFileMarked, PathArgs, "appended");

/// Checks out the branch the user picks.
#[derive(Tool)]
#[tool(effect = read_only, input = Choice)]
pub struct PickBranch;
echo_execute!(PickBranch, Choice, "picked");

/// A remote tool as a provider builds it: name, server and declaration come
/// from a stored record.
pub struct OperatorTool {
    /// The server's identifier.
    pub server: String,
    /// The local name.
    pub name: String,
    /// The operator's declaration, carried from the record.
    pub declaration: OperatorDeclaration,
}

impl Tool for OperatorTool {
    type Origin = toolgate::Remote;
    type Effect = toolgate::NonIdempotentWrite;
    type Gate = toolgate::gate::ApprovalByOperator;
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "via an external MCP server"
    }
}
impl RemoteTool for OperatorTool {
    fn server(&self) -> &str {
        &self.server
    }
}
impl RemoteApproval for OperatorTool {
    fn operator_declaration(&self) -> OperatorDeclaration {
        self.declaration
    }
}
impl Execute for OperatorTool {
    type Args = Map<String, Value>;
    async fn execute(&self, args: Self::Args) -> ToolOutput {
        ToolOutput::text(format!("{} ran with {}", self.name, Value::Object(args)))
    }
}

/// Deletes a repository on a server; always asks.
#[derive(Tool)]
#[tool(remote, requires_approval, effect = non_idempotent_write, name = "gh.delete_repo")]
pub struct DeleteRepo;
impl RemoteTool for DeleteRepo {
    fn server(&self) -> &str {
        "gh"
    }
}
echo_execute!(DeleteRepo, Map<String, Value>, "deleted");

/// Every legal row of the approval table as an erased typed tool, named
/// uniquely. The operator row appears once per declaration.
pub fn every_legal_tool() -> Vec<ErasedTool> {
    vec![
        ErasedTool::new(ReadFile),
        ErasedTool::new(ShowSecrets),
        ErasedTool::new(WriteFile),
        ErasedTool::new(AppendFile),
        ErasedTool::new(AppendFileMarked),
        ErasedTool::new(PickBranch),
        ErasedTool::new(OperatorTool {
            server: "gh".into(),
            name: "gh.create_issue".into(),
            declaration: OperatorDeclaration::ApprovalRequired,
        }),
        ErasedTool::new(OperatorTool {
            server: "wiki".into(),
            name: "wiki.search".into(),
            declaration: OperatorDeclaration::NoApproval,
        }),
        ErasedTool::new(DeleteRepo),
    ]
}

/// A tool erased by hand: it declares whatever facts it was built with.
pub struct HandErased {
    /// Its name.
    pub name: String,
    /// The facts it declares; an input schema is declared when
    /// `facts.requires_input` is set.
    pub facts: Facts,
    /// The input schema it declares, if any.
    pub input: Option<Schema>,
    /// Its parameter schema.
    pub parameters: Schema,
    /// The server it names: `bridge` for a remote tool.
    pub server: Option<String>,
    /// Calls made.
    pub calls: AtomicUsize,
}

impl HandErased {
    /// A hand-erased tool declaring `facts`.
    pub fn new(name: &str, facts: Facts) -> Arc<Self> {
        Arc::new(Self::build(name, facts))
    }

    /// The same, naming no server even when it claims a remote origin.
    pub fn without_server(name: &str, facts: Facts) -> Arc<Self> {
        Arc::new(Self {
            server: None,
            ..Self::build(name, facts)
        })
    }

    fn build(name: &str, facts: Facts) -> Self {
        Self {
            name: name.to_owned(),
            server: (facts.origin == Origin::Remote).then(|| "bridge".to_owned()),
            facts,
            input: facts.requires_input.then(|| schemars::schema_for!(Choice)),
            // A tool that waits for input takes the input's fields: any.
            parameters: if facts.requires_input {
                schemars::schema_for!(Map<String, Value>)
            } else {
                schemars::schema_for!(PathArgs)
            },
            calls: AtomicUsize::new(0),
        }
    }
}

impl DynTool for HandErased {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "A tool erased by hand."
    }
    fn parameters(&self) -> &Schema {
        &self.parameters
    }
    fn origin(&self) -> Origin {
        self.facts.origin
    }
    fn effect(&self) -> Effect {
        self.facts.effect
    }
    fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }
    fn approval_marker(&self) -> bool {
        self.facts.approval_marker
    }
    fn operator_declaration(&self) -> Option<OperatorDeclaration> {
        self.facts.operator
    }
    fn quarantine(&self) -> Option<Quarantine> {
        self.facts.quarantine
    }
    fn input_schema(&self) -> Option<&Schema> {
        self.input.as_ref()
    }
    fn execute(&self, _: Value) -> BoxFuture<'_, ToolOutput> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { ToolOutput::text("ran") })
    }
}

/// Every combination of facts a tool could declare: origin × effect × marker ×
/// operator declaration × input × quarantine (216).
pub fn every_combination_of_facts() -> Vec<Facts> {
    let mut all = Vec::new();
    for origin in [Origin::Local, Origin::Remote] {
        for effect in Effect::ALL {
            for approval_marker in [false, true] {
                for operator in [
                    None,
                    Some(OperatorDeclaration::ApprovalRequired),
                    Some(OperatorDeclaration::NoApproval),
                ] {
                    for requires_input in [false, true] {
                        for quarantine in [None, Some(Quarantine::New), Some(Quarantine::Changed)] {
                            all.push(Facts {
                                origin,
                                effect,
                                approval_marker,
                                operator,
                                requires_input,
                                quarantine,
                            });
                        }
                    }
                }
            }
        }
    }
    all
}

/// A provider that counts how often it is asked and hands out what it holds,
/// or fails with `error`.
pub struct CountingProvider {
    /// Its name.
    pub name: String,
    /// How often `provide` ran.
    pub asked: Arc<AtomicUsize>,
    /// The tools it supplies.
    pub tools: Vec<ErasedTool>,
    /// Fail instead, with this message.
    pub error: Option<String>,
}

impl CountingProvider {
    /// A provider supplying `tools`.
    pub fn new(name: &str, tools: Vec<ErasedTool>) -> (Self, Arc<AtomicUsize>) {
        let asked = Arc::new(AtomicUsize::new(0));
        let provider = Self {
            name: name.to_owned(),
            asked: Arc::clone(&asked),
            tools,
            error: None,
        };
        (provider, asked)
    }

    /// A provider that fails.
    pub fn failing(name: &str, error: &str) -> Self {
        Self {
            name: name.to_owned(),
            asked: Arc::new(AtomicUsize::new(0)),
            tools: Vec::new(),
            error: Some(error.to_owned()),
        }
    }
}

impl ToolProvider for CountingProvider {
    fn name(&self) -> &str {
        &self.name
    }
    fn provide(&self) -> BoxFuture<'_, Result<Vec<ErasedTool>, ProviderError>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            match &self.error {
                Some(error) => Err(ProviderError::new(error.clone())),
                None => Ok(self.tools.clone()),
            }
        })
    }
    fn revision(&self) -> BoxFuture<'_, Result<Revision, ProviderError>> {
        Box::pin(async { Ok(Revision::Fixed) })
    }
}

/// A shared, ordered list of what happened, for tests that check order.
#[derive(Clone, Default, Debug)]
pub struct Journal(Arc<std::sync::Mutex<Vec<String>>>);

impl Journal {
    /// Appends an entry.
    pub fn push(&self, entry: impl Into<String>) {
        if let Ok(mut entries) = self.0.lock() {
            entries.push(entry.into());
        }
    }

    /// Every entry so far.
    pub fn entries(&self) -> Vec<String> {
        self.0.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

macro_rules! journaled {
    ($ty:ident, $args:ty) => {
        impl Execute for $ty {
            type Args = $args;
            async fn execute(&self, args: $args) -> ToolOutput {
                let args = serde_json::to_value(&args).unwrap_or_default();
                self.journal.push(format!("{} {args}", self.name()));
                ToolOutput::text(format!("{} ran with {args}", self.name()))
            }
        }
    };
}

/// Reads a note.
#[derive(Tool)]
#[tool(effect = read_only)]
pub struct ReadNote {
    /// Where calls are recorded.
    pub journal: Journal,
}
journaled!(ReadNote, Map<String, Value>);

/// Writes a note.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
pub struct WriteNote {
    /// Where calls are recorded.
    pub journal: Journal,
}
journaled!(WriteNote, Map<String, Value>);

/// What a user types for [`Greet`].
#[derive(Debug, serde::Serialize, Deserialize, JsonSchema)]
pub struct NameInput {
    /// The user's name.
    #[schemars(length(min = 1))]
    pub name: String,
    /// How formal to be, 1 to 3.
    #[schemars(range(min = 1, max = 3))]
    pub formality: Option<u8>,
}

/// The arguments of [`Greet`]: the model's guess, overlaid by the user.
#[derive(Debug, serde::Serialize, Deserialize, JsonSchema)]
pub struct GreetArgs {
    /// Whom to greet.
    pub name: Option<String>,
    /// How formal to be.
    pub formality: Option<u8>,
    /// The language.
    pub language: Option<String>,
}

/// Greets a person by the name the user gives.
#[derive(Tool)]
#[tool(effect = read_only, input = NameInput)]
pub struct Greet {
    /// Where calls are recorded.
    pub journal: Journal,
}
journaled!(Greet, GreetArgs);

/// Picks a colour the user names.
#[derive(Tool)]
#[tool(effect = read_only, input = Choice)]
pub struct PickColour {
    /// Where calls are recorded.
    pub journal: Journal,
}
journaled!(PickColour, Map<String, Value>);

/// A decision log that journals each record, or fails when told to.
pub struct JournalLog {
    /// Where records are noted.
    pub journal: Journal,
    /// Every record received.
    pub records: std::sync::Mutex<Vec<toolgate::audit::DecisionRecord>>,
    /// Fail every write.
    pub fail: std::sync::atomic::AtomicBool,
}

impl JournalLog {
    /// A working log over `journal`.
    pub fn new(journal: &Journal) -> Self {
        Self {
            journal: journal.clone(),
            records: std::sync::Mutex::new(Vec::new()),
            fail: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Every record received.
    pub fn records(&self) -> Vec<toolgate::audit::DecisionRecord> {
        self.records.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl toolgate::audit::DecisionLog for JournalLog {
    fn record<'a>(
        &'a self,
        record: &'a toolgate::audit::DecisionRecord,
    ) -> BoxFuture<'a, Result<(), toolgate::audit::LogError>> {
        Box::pin(async move {
            if self.fail.load(Ordering::SeqCst) {
                self.journal.push("log failed");
                return Err(toolgate::audit::LogError::new("disk full"));
            }
            self.journal.push(format!(
                "record {} by {}",
                record.verdict.as_str(),
                record.decided_by
            ));
            if let Ok(mut records) = self.records.lock() {
                records.push(record.clone());
            }
            Ok(())
        })
    }
}

/// A tool call with arguments.
pub fn call(id: &str, name: &str, arguments: Value) -> toolgate::run::ToolCall {
    toolgate::run::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

/// A model reply with one turn of calls.
pub fn turn(calls: Vec<toolgate::run::ToolCall>) -> toolgate::run::Reply {
    toolgate::run::Reply::Calls {
        content: None,
        calls,
    }
}
