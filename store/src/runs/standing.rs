//! "And from now on": an approval that also declares its tool "no
//! approval" for the calls to come, as one operator's act.

use toolgate::identity::Operator;
use toolgate::suspend::{CallVerdict, SuspendedRun, TurnDigest};

use super::{Answer, ClaimError, LoadError, Recorded};
use crate::flag::ToolDeclaration;
use crate::{CatalogueRow, Store, StoreError};

/// An approval given "and from now on": the decision, and what became of
/// the tool's declaration.
#[derive(Debug)]
pub struct AllowedFromNowOn {
    /// The decision, as recorded.
    pub recorded: Recorded,
    /// The tool's server.
    pub server: String,
    /// The tool's row after its declaration, or why the declaration was
    /// not made: the approval stands either way.
    pub declared: Result<CatalogueRow, StoreError>,
}

impl Store {
    /// Records `answer` — an approval of every call of `tool` in the turn
    /// run `run_id` waits on — and declares `tool` "no approval" from now
    /// on, bound to `shown`: the digest of its definition
    /// ([`Store::acceptance`] for the tool alone) that the caller read
    /// before checking that the tool is still the one the turn's reviewer
    /// was shown (`Suspended::reviewed_again`: a tool changed since is not
    /// declared on an approval of the old one). The definition is pinned
    /// only if it is still the one `shown` names — one changed in between
    /// is not declared, and one that changes afterwards is quarantined —
    /// and the declaration is recorded with the decider, their channel and
    /// that digest.
    ///
    /// Refused, with nothing recorded, on a run under four eyes or needing
    /// several approvers ([`toolgate::audit::standing_declaration_problem`]),
    /// for a tool no call of the turn names or whose call the answer does
    /// not approve, and for a tool that is not an imported tool (a
    /// builtin's gate comes from its type). The approval is recorded first:
    /// a declaration that then fails (its definition changed in between)
    /// leaves the approval standing and says why in
    /// [`AllowedFromNowOn::declared`].
    pub async fn decide_and_allow_tool(
        &self,
        run_id: &str,
        digest: Option<&TurnDigest>,
        decided_by: &Operator,
        answer: Answer,
        tool: &str,
        shown: &str,
    ) -> Result<AllowedFromNowOn, ClaimError> {
        let refused = |why: String| ClaimError::NotFromNowOn {
            run_id: run_id.to_owned(),
            why,
        };
        let run = match self.load_suspended(run_id).await {
            Ok(run) => run,
            Err(LoadError::NotFound(id)) => return Err(ClaimError::NotFound(id)),
            Err(LoadError::Corrupt { run_id, error }) => {
                return Err(ClaimError::Corrupt { run_id, error });
            }
            Err(LoadError::Store(error)) => return Err(ClaimError::Store(error)),
        };
        let SuspendedRun::AwaitingApproval(waiting) = &run else {
            return Err(refused("it does not wait for approval".to_owned()));
        };
        if let Some(why) = toolgate::audit::standing_declaration_problem(&waiting.state().options) {
            return Err(refused(why.to_owned()));
        }
        let calls: Vec<_> = waiting
            .pending()
            .iter()
            .enumerate()
            .filter(|(index, call)| call.name == tool && waiting.needs_verdict(*index))
            .map(|(_, call)| call)
            .collect();
        if calls.is_empty() {
            return Err(refused(format!(
                "no call of the turn it waits on needs approval for tool `{}`",
                toolgate::visible::visible(tool)
            )));
        }
        let approved = |id: &str| match &answer {
            Answer::Approve => true,
            Answer::Calls(verdicts) => matches!(
                verdicts.get(id),
                Some(CallVerdict::Approve | CallVerdict::Edit { .. })
            ),
            Answer::Deny | Answer::Input(_) => false,
        };
        if let Some(call) = calls.iter().find(|call| !approved(&call.id)) {
            return Err(refused(format!(
                "call `{}` of tool `{}` is not approved by this decision",
                toolgate::visible::visible(&call.id),
                toolgate::visible::visible(tool)
            )));
        }
        let Some(row) = self
            .live_catalogue()
            .await?
            .into_iter()
            .find(|row| row.local_name == tool)
        else {
            return Err(refused(format!(
                "`{}` is not an imported tool; a builtin's gate comes from its type",
                toolgate::visible::visible(tool)
            )));
        };
        let recorded = self.decide(run_id, digest, decided_by, answer).await?;
        let declared = self
            .declare_tool(
                &row.server_id,
                tool,
                ToolDeclaration::NoApproval,
                Some(shown),
                decided_by,
            )
            .await
            .map(|(_, after)| after);
        Ok(AllowedFromNowOn {
            recorded,
            server: row.server_id,
            declared,
        })
    }
}
