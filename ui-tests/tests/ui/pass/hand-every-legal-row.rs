// Every legal row of SPEC §2, written by hand without the derive.
use toolgate::{gate::ruling, gate, IdempotentWrite, Local, NonIdempotentWrite, OperatorDeclaration, ReadOnly, Remote, RemoteApproval, RemoteTool, RequiresApproval, RequiresInput, Tool, gate::{Cause, Effect, Pause}};

macro_rules! tool {
    ($ty:ident, $origin:ty, $effect:ty, $gate:ty) => {
        struct $ty;
        impl Tool for $ty {
            type Origin = $origin;
            type Effect = $effect;
            type Gate = $gate;
            fn name(&self) -> &str { stringify!($ty) }
            fn description(&self) -> &str { "A tool." }
        }
    };
}

tool!(ReadFile, Local, ReadOnly, gate::Runs);
tool!(ShowSecret, Local, ReadOnly, gate::ApprovalByMarker);
impl RequiresApproval for ShowSecret {}
tool!(WriteFile, Local, IdempotentWrite, gate::ApprovalByEffect);
tool!(SendEmail, Local, NonIdempotentWrite, gate::ApprovalByEffect);
tool!(SendEmailMarked, Local, NonIdempotentWrite, gate::ApprovalByMarker);
impl RequiresApproval for SendEmailMarked {}
tool!(AskSearch, Local, ReadOnly, gate::WaitsForInput);
impl RequiresInput for AskSearch {
    type Input = String;
}
tool!(CreateIssue, Remote, NonIdempotentWrite, gate::ApprovalByOperator);
impl RemoteTool for CreateIssue {
    fn server(&self) -> &str { "gh" }
}
impl RemoteApproval for CreateIssue {
    fn operator_declaration(&self) -> OperatorDeclaration { OperatorDeclaration::NoApproval }
}
tool!(DeleteRepo, Remote, NonIdempotentWrite, gate::ApprovalByMarker);
impl RemoteTool for DeleteRepo {
    fn server(&self) -> &str { "gh" }
}
impl RequiresApproval for DeleteRepo {}
tool!(ReadAudit, Remote, ReadOnly, gate::ApprovalByMarker);
impl RemoteTool for ReadAudit {
    fn server(&self) -> &str { "gh" }
}
impl RequiresApproval for ReadAudit {}
impl RemoteApproval for ReadAudit {
    fn operator_declaration(&self) -> OperatorDeclaration { OperatorDeclaration::NoApproval }
}

fn main() {
    assert_eq!(ruling(&ReadFile).cause, Cause::LocalReadOnly);
    assert_eq!(ruling(&ShowSecret).cause, Cause::Marker);
    assert_eq!(ruling(&WriteFile).cause, Cause::DeclaredWrite(Effect::IdempotentWrite));
    assert!(ruling(&SendEmail).requires_approval());
    assert!(ruling(&SendEmailMarked).requires_approval());
    assert_eq!(ruling(&AskSearch).pause, Pause::Input);
    assert_eq!(ruling(&CreateIssue).pause, Pause::None);
    assert_eq!(ruling(&CreateIssue).cause, Cause::Operator(OperatorDeclaration::NoApproval));
    assert!(ruling(&DeleteRepo).requires_approval());
    assert_eq!(ruling(&ReadAudit).cause, Cause::Marker, "the marker wins over the operator's \"no approval\"");
}
