// Every legal row of SPEC §2, declared through the derive, and the decision
// each one gets.
use toolgate::{gate::ruling, OperatorDeclaration, RemoteApproval, RemoteTool, Tool, gate::{Cause, Effect, Pause}};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    text: String,
}

/// Reads a file.
#[derive(Tool)]
#[tool(effect = read_only)]
struct ReadFile;

/// Shows a secret: read-only, but asks anyway.
#[derive(Tool)]
#[tool(effect = read_only, requires_approval)]
struct ShowSecret;

/// Writes a file.
#[derive(Tool)]
#[tool(effect = idempotent_write)]
struct WriteFile;

/// Sends an email.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct SendEmail;

/// Sends an email, with the marker as well.
#[derive(Tool)]
#[tool(effect = non_idempotent_write, requires_approval)]
struct SendEmailMarked;

/// Searches with a query the user types.
#[derive(Tool)]
#[tool(effect = read_only, input = Query)]
struct AskSearch;

#[derive(Tool)]
#[tool(remote, operator_approval, effect = non_idempotent_write, name = "gh.create_issue")]
#[tool(description = "via the external MCP server `gh`: creates an issue")]
struct CreateIssue {
    declaration: OperatorDeclaration,
}
impl RemoteTool for CreateIssue {
    fn server(&self) -> &str { "gh" }
}
impl RemoteApproval for CreateIssue {
    fn operator_declaration(&self) -> OperatorDeclaration { self.declaration }
}

#[derive(Tool)]
#[tool(remote, requires_approval, effect = non_idempotent_write, name = "gh.delete_repo")]
/// via the external MCP server `gh`: deletes a repository
struct DeleteRepo;
impl RemoteTool for DeleteRepo {
    fn server(&self) -> &str { "gh" }
}

#[derive(Tool)]
#[tool(remote, operator_approval, requires_approval, effect = read_only, name = "gh.audit")]
/// via the external MCP server `gh`: reads the audit log; always asks, whatever the operator says
struct ReadAudit {
    declaration: OperatorDeclaration,
}
impl RemoteTool for ReadAudit {
    fn server(&self) -> &str { "gh" }
}
impl RemoteApproval for ReadAudit {
    fn operator_declaration(&self) -> OperatorDeclaration { self.declaration }
}

fn main() {
    assert_eq!(ruling(&ReadFile).pause, Pause::None);
    assert_eq!(ruling(&ReadFile).cause, Cause::LocalReadOnly);
    assert_eq!(ReadFile.name(), "read_file");
    assert_eq!(ReadFile.description(), "Reads a file.");
    assert_eq!(ruling(&ShowSecret).cause, Cause::Marker);
    assert!(ruling(&ShowSecret).requires_approval());
    assert_eq!(ruling(&WriteFile).cause, Cause::DeclaredWrite(Effect::IdempotentWrite));
    assert_eq!(ruling(&SendEmail).cause, Cause::DeclaredWrite(Effect::NonIdempotentWrite));
    assert!(ruling(&SendEmailMarked).requires_approval());
    assert_eq!(ruling(&AskSearch).pause, Pause::Input);
    let required = CreateIssue { declaration: OperatorDeclaration::ApprovalRequired };
    let off = CreateIssue { declaration: OperatorDeclaration::NoApproval };
    assert!(ruling(&required).requires_approval());
    assert_eq!(ruling(&off).pause, Pause::None);
    assert_eq!(required.name(), "gh.create_issue");
    assert!(ruling(&DeleteRepo).requires_approval());
    let audit = ReadAudit { declaration: OperatorDeclaration::NoApproval };
    assert_eq!(ruling(&audit).cause, Cause::Marker);
    assert!(ruling(&audit).requires_approval(), "the marker wins over the operator's \"no approval\"");
}
