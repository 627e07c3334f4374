//! An operator's declaration for one tool (SPEC §14): the only write path
//! of a tool's `approval` column.

use toolgate::identity::Operator;

use crate::db::Query;
use crate::flag::{ToolDeclaration, stored_for_tool};
use crate::{Store, StoreError, now_ms};

use super::{CatalogueRow, pin_in};

/// # Tool declarations
///
/// What an operator declares for one imported tool, overriding its
/// server's flag for that tool alone ([`ToolDeclaration`]).
impl Store {
    /// Declares what one live tool of a server needs, as `operator` (their
    /// name, its source and the channel are recorded with it). Returns the
    /// tool's row before and after.
    ///
    /// "No approval" makes the tool's calls run without a human, so it is
    /// bound to what the operator was shown: `reviewed` is the digest of
    /// that tool's definition as [`Store::acceptance`] gives it for the
    /// tool alone, and the definition is pinned as it is then, in the same
    /// transaction — a definition that changes afterwards is quarantined,
    /// and the declaration does not cover it until an operator accepts it.
    /// Without the digest, or with a definition changed since, nothing
    /// changes ([`StoreError::ToolReviewRequired`],
    /// [`StoreError::CatalogueChanged`]). "Approval required", "blocked"
    /// and "inherit" need no digest. (Inherit can lower what a tool needs —
    /// back to a server flag that is off — but then the tool is judged as
    /// the server's: pinned by the server's acceptance, quarantined when it
    /// changed.)
    pub async fn declare_tool(
        &self,
        server_id: &str,
        local_name: &str,
        declaration: ToolDeclaration,
        reviewed: Option<&str>,
        operator: &Operator,
    ) -> Result<(CatalogueRow, CatalogueRow), StoreError> {
        self.declare(
            server_id,
            local_name,
            declaration,
            reviewed,
            operator,
            false,
        )
        .await
    }

    /// Accepts the definition of a tool declared "no approval" as it is now
    /// — `reviewed` is its digest as [`Store::acceptance`] gives it for the
    /// tool alone — declaring it "no approval" again, as `operator`, for
    /// that definition: what a quarantined tool's own declaration needs to
    /// cover it again. Only while the tool is declared "no approval": one
    /// declared otherwise since it was shown is refused
    /// ([`StoreError::ToolDeclaredSince`]), checked in the same transaction
    /// as the write, and nothing changes; so is a definition changed since
    /// ([`StoreError::CatalogueChanged`]).
    pub async fn accept_declared_tool(
        &self,
        server_id: &str,
        local_name: &str,
        reviewed: &str,
        operator: &Operator,
    ) -> Result<(CatalogueRow, CatalogueRow), StoreError> {
        self.declare(
            server_id,
            local_name,
            ToolDeclaration::NoApproval,
            Some(reviewed),
            operator,
            true,
        )
        .await
    }

    /// [`Store::declare_tool`]; with `only_if_off`, only while the tool is
    /// declared "no approval".
    async fn declare(
        &self,
        server_id: &str,
        local_name: &str,
        declaration: ToolDeclaration,
        reviewed: Option<&str>,
        operator: &Operator,
        only_if_off: bool,
    ) -> Result<(CatalogueRow, CatalogueRow), StoreError> {
        let no_such_tool = || StoreError::NoSuchTool {
            server: server_id.to_owned(),
            tool: toolgate::visible::visible(local_name).into_owned(),
        };
        if declaration.lowers() && reviewed.is_none() {
            return Err(StoreError::ToolReviewRequired {
                server: server_id.to_owned(),
                tool: toolgate::visible::visible(local_name).into_owned(),
            });
        }
        let (_writer, mut tx) = self.write().await?;
        tx.lock_server(server_id).await?;
        let select =
            "SELECT * FROM mcp_tool WHERE server_id = $1 AND local_name = $2 AND orphaned = 0";
        let before = Query::new(select)
            .bind(server_id)
            .bind(local_name)
            .fetch_optional(&mut tx)
            .await?
            .ok_or_else(no_such_tool)?;
        let before = CatalogueRow::from_row(&before)?;
        if only_if_off && before.declaration != ToolDeclaration::NoApproval {
            return Err(StoreError::ToolDeclaredSince {
                server: server_id.to_owned(),
                tool: toolgate::visible::visible(local_name).into_owned(),
                now: before.declaration.word(),
            });
        }
        if let (true, Some(reviewed)) = (declaration.lowers(), reviewed) {
            // The tool alone, exactly as shown; a definition changed since
            // is refused and nothing is written.
            pin_in(&mut tx, server_id, Some(&[local_name.to_owned()]), reviewed).await?;
        }
        let (label, write) = stored_for_tool(tx.backend(), declaration);
        Query::new(format!(
            "UPDATE mcp_tool SET approval = {write}, approval_declared_by = $2,
                    approval_declared_source = $3, approval_declared_channel = $4,
                    approval_declared_digest = $5, approval_declared_at = $6
             WHERE server_id = $7 AND remote_name = $8"
        ))
        .bind(label)
        .bind(operator.name())
        .bind(operator.source().as_str())
        .bind(operator.channel().as_str())
        .bind(
            reviewed
                .filter(|_| declaration.lowers())
                .map(|d| d.trim().to_owned()),
        )
        .bind(now_ms())
        .bind(server_id)
        .bind(before.remote_name.as_str())
        .execute(&mut tx)
        .await?;
        let after = Query::new(select)
            .bind(server_id)
            .bind(local_name)
            .fetch_optional(&mut tx)
            .await?
            .ok_or_else(no_such_tool)?;
        let after = CatalogueRow::from_row(&after)?;
        tx.commit().await?;
        tracing::info!(
            server = %server_id,
            tool = %local_name,
            before = before.declaration.word(),
            after = after.declaration.word(),
            by = %operator.name(),
            channel = operator.channel().as_str(),
            "operator changed a tool's declaration"
        );
        Ok((before, after))
    }
}
