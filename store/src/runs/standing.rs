//! "And from now on": an approval that also declares its tool "no
//! approval" for the calls to come, as one operator's act.

use toolgate::identity::Operator;
use toolgate::suspend::{CallVerdict, Review, ReviewedTool, SuspendedRun, TurnDigest};

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

/// What "and from now on" names and is bound to.
#[derive(Debug, Clone, Copy)]
pub struct FromNowOn<'a> {
    /// The tool (`SERVER.TOOL`) to declare "no approval".
    pub tool: &'a str,
    /// The digest of its definition ([`Store::acceptance`] for the tool
    /// alone), read before `now`.
    pub shown: &'a str,
    /// The turn's calls reviewed against the tools as offered now
    /// (`Suspended::reviewed_again`): the tool must be the very definition
    /// the turn's reviewer was shown.
    pub now: &'a Review,
}

impl Store {
    /// Records `answer` — an approval of every call of `tool` in the turn
    /// run `run_id` waits on — and declares `tool` "no approval" from now
    /// on ([`FromNowOn`]): the tool as offered now must be the definition
    /// the turn's reviewer was shown — a tool changed since is not declared
    /// on an approval of the old one — and it is bound to `shown`, the
    /// digest of its stored definition read before that check. The definition is pinned
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
        from_now_on: FromNowOn<'_>,
    ) -> Result<AllowedFromNowOn, ClaimError> {
        let FromNowOn { tool, shown, now } = from_now_on;
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
        // The tool as offered now is the one the reviewer was shown, call by
        // call: an approval of one definition never lowers the gate of
        // another.
        let digest_of = |tools: &[Option<ReviewedTool>], index: usize| {
            tools
                .get(index)
                .and_then(Option::as_ref)
                .map(ReviewedTool::definition_digest)
        };
        for (index, call) in waiting.pending().iter().enumerate() {
            if call.name != tool {
                continue;
            }
            let then = digest_of(&waiting.review().tools, index);
            if then.is_none() || then != digest_of(&now.tools, index) {
                return Err(refused(format!(
                    "tool `{}` is not, now, the definition the turn's reviewer was shown (it changed since, or is no longer offered): approve the call alone, review the tool, and declare it with `toolgate tool set-approval`",
                    toolgate::visible::visible(tool)
                )));
            }
        }
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
