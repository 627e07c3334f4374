//! A coding agent's own tools, reached through its pre-tool hooks (SPEC
//! §15): a source of their own per client (`claude-code`, `codex`), whose
//! tools each require approval until an operator declares otherwise.
//!
//! - A declaration per client and tool, in a tool's own labels and read by
//!   the one fail-closed reading of them
//!   ([`tool_declaration_from_stored`](crate::tool_declaration_from_stored)):
//!   no row, or a row that does not read, is "approval required".
//! - Command rules: an operator-declared exact prefix of a shell command's
//!   words (`git status`), which lowers the shell's gate only for a command
//!   that is nothing but plain words — the matching itself lives with the
//!   hook, which parses the command.
//! - What a client reported of a held call it ran (its post-tool hook).

use toolgate::identity::Operator;

use crate::db::{Query, Row};
use crate::flag::{ToolDeclaration, stored_for_tool, tool_declaration_of};
use crate::{StoreError, StoredFlag, now_ms};

/// The most words a command rule may have.
pub const MAX_RULE_WORDS: usize = 16;

/// An operator's declaration for one tool of a client.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientToolRecord {
    /// The client (`claude-code`, `codex`).
    pub client: String,
    /// The tool, as the client names it (`Bash`, `Read`).
    pub tool: String,
    /// The declaration, as read.
    pub declaration: ToolDeclaration,
    /// The value as stored.
    pub stored: StoredFlag,
    /// Who declared it.
    pub declared_by: String,
    /// When, in milliseconds since the Unix epoch.
    pub declared_at: i64,
}

/// A command rule of a client's shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRule {
    /// The client.
    pub client: String,
    /// The words a command must begin with, exactly.
    pub words: Vec<String>,
    /// Who declared it.
    pub declared_by: String,
    /// When, in milliseconds since the Unix epoch.
    pub declared_at: i64,
}

/// What a client reported of a call it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientOutcome {
    /// When it was recorded, in milliseconds since the Unix epoch.
    pub recorded_at: i64,
    /// The client's id for the call, when it gave one.
    pub tool_use_id: Option<String>,
    /// What it reported, as JSON text.
    pub outcome: String,
}

/// Why a client or tool name is refused, if it is: a name is 1 to 128
/// printable ASCII characters without spaces.
pub fn client_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name.len() > 128 {
        return Some("it is longer than 128 characters");
    }
    if !name.bytes().all(|b| b.is_ascii_graphic()) {
        return Some("it holds a character other than printable ASCII without spaces");
    }
    None
}

fn checked_name(what: &'static str, name: &str) -> Result<(), StoreError> {
    match client_name_problem(name) {
        Some(problem) => Err(StoreError::InvalidClientTool {
            what,
            name: toolgate::visible::visible(name).into_owned(),
            problem,
        }),
        None => Ok(()),
    }
}

fn tool_record(row: &Row) -> Result<ClientToolRecord, StoreError> {
    let (stored, declaration) = tool_declaration_of(row, "approval");
    Ok(ClientToolRecord {
        client: row.try_get("client")?,
        tool: row.try_get("tool")?,
        declaration,
        stored,
        declared_by: row.try_get("declared_by")?,
        declared_at: row.try_get("declared_at")?,
    })
}

fn rule_record(row: &Row) -> Result<CommandRule, StoreError> {
    let text: String = row.try_get("words")?;
    // A rule whose words do not read matches nothing: it is listed with no
    // words, which no command begins with.
    let words = serde_json::from_str::<Vec<String>>(&text).unwrap_or_default();
    Ok(CommandRule {
        client: row.try_get("client")?,
        words,
        declared_by: row.try_get("declared_by")?,
        declared_at: row.try_get("declared_at")?,
    })
}

/// # A coding agent's own tools
impl crate::Store {
    /// Declares what `client`'s tool `tool` needs, as `operator`: "approval
    /// required", "no approval" or "blocked"; "inherit" removes the
    /// declaration, back to the source's default — approval required.
    /// Returns the declaration it replaced, if any.
    pub async fn declare_client_tool(
        &self,
        client: &str,
        tool: &str,
        declaration: ToolDeclaration,
        operator: &Operator,
    ) -> Result<Option<ClientToolRecord>, StoreError> {
        checked_name("client", client)?;
        checked_name("tool", tool)?;
        let (_writer, mut tx) = self.write().await?;
        let before = Query::new(
            "SELECT client, tool, approval, declared_by, declared_at FROM client_tool
             WHERE client = $1 AND tool = $2",
        )
        .bind(client)
        .bind(tool)
        .fetch_optional(&mut tx)
        .await?
        .as_ref()
        .map(tool_record)
        .transpose()?;
        Query::new("DELETE FROM client_tool WHERE client = $1 AND tool = $2")
            .bind(client)
            .bind(tool)
            .execute(&mut tx)
            .await?;
        if declaration != ToolDeclaration::Inherit {
            let (label, expression) = stored_for_tool(self.backend(), declaration);
            let sql = format!(
                "INSERT INTO client_tool (approval, client, tool, declared_by, declared_source, declared_at)
                 VALUES ({expression}, $2, $3, $4, $5, $6)"
            );
            Query::new(sql)
                .bind(label)
                .bind(client)
                .bind(tool)
                .bind(operator.name())
                .bind(operator.source().as_str())
                .bind(now_ms())
                .execute(&mut tx)
                .await?;
        }
        tx.commit().await?;
        tracing::info!(client, tool, declaration = declaration.label(), by = %operator.name(), "a client tool was declared");
        Ok(before)
    }

    /// What `client`'s tool `tool` is declared, as read: "inherit" (the
    /// source's default, approval required) when nothing is declared; a
    /// value that does not read reads as such, which the gate takes as
    /// approval required.
    pub async fn client_tool_declaration(
        &self,
        client: &str,
        tool: &str,
    ) -> Result<ToolDeclaration, StoreError> {
        let row = Query::new(
            "SELECT client, tool, approval, declared_by, declared_at FROM client_tool
             WHERE client = $1 AND tool = $2",
        )
        .bind(client)
        .bind(tool)
        .fetch_optional(&self.pool)
        .await?;
        Ok(match row {
            Some(row) => tool_record(&row)?.declaration,
            None => ToolDeclaration::Inherit,
        })
    }

    /// Every client tool's declaration, by client and tool.
    pub async fn client_tools(&self) -> Result<Vec<ClientToolRecord>, StoreError> {
        let rows = Query::new(
            "SELECT client, tool, approval, declared_by, declared_at FROM client_tool
             ORDER BY client, tool",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(tool_record).collect()
    }

    /// Adds a command rule for `client`'s shell: `words`, each non-empty,
    /// 1 to [`MAX_RULE_WORDS`] of them. Returns false when the same rule
    /// was there already.
    pub async fn add_command_rule(
        &self,
        client: &str,
        words: &[String],
        operator: &Operator,
    ) -> Result<bool, StoreError> {
        checked_name("client", client)?;
        if words.is_empty() || words.len() > MAX_RULE_WORDS || words.iter().any(String::is_empty) {
            return Err(StoreError::InvalidCommandRule(format!(
                "a rule is 1 to {MAX_RULE_WORDS} non-empty words"
            )));
        }
        let text = serde_json::to_string(words)
            .map_err(|error| StoreError::InvalidCommandRule(error.to_string()))?;
        let (_writer, mut tx) = self.write().await?;
        let there =
            Query::new("SELECT COUNT(*) FROM command_rule WHERE client = $1 AND words = $2")
                .bind(client)
                .bind(&text)
                .scalar::<i64>(&mut tx)
                .await?;
        if there > 0 {
            return Ok(false);
        }
        Query::new(
            "INSERT INTO command_rule (client, words, declared_by, declared_source, declared_at)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(client)
        .bind(&text)
        .bind(operator.name())
        .bind(operator.source().as_str())
        .bind(now_ms())
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        tracing::info!(client, rule = %words.join(" "), by = %operator.name(), "a command rule was added");
        Ok(true)
    }

    /// Removes a command rule of `client`; false when there was none.
    pub async fn remove_command_rule(
        &self,
        client: &str,
        words: &[String],
    ) -> Result<bool, StoreError> {
        let text = serde_json::to_string(words)
            .map_err(|error| StoreError::InvalidCommandRule(error.to_string()))?;
        let (_writer, mut tx) = self.write().await?;
        let removed = Query::new("DELETE FROM command_rule WHERE client = $1 AND words = $2")
            .bind(client)
            .bind(&text)
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        Ok(removed > 0)
    }

    /// The command rules of `client`, or of every client.
    pub async fn command_rules(
        &self,
        client: Option<&str>,
    ) -> Result<Vec<CommandRule>, StoreError> {
        let rows = match client {
            Some(client) => {
                Query::new(
                    "SELECT client, words, declared_by, declared_at FROM command_rule
                     WHERE client = $1 ORDER BY words",
                )
                .bind(client)
                .fetch_all(&self.pool)
                .await?
            }
            None => {
                Query::new(
                    "SELECT client, words, declared_by, declared_at FROM command_rule
                     ORDER BY client, words",
                )
                .fetch_all(&self.pool)
                .await?
            }
        };
        rows.iter().map(rule_record).collect()
    }

    /// Records what a client reported of run `run_id`'s call, which it ran.
    pub async fn record_client_outcome(
        &self,
        run_id: &str,
        tool_use_id: Option<&str>,
        outcome: &str,
    ) -> Result<(), StoreError> {
        let (_writer, mut tx) = self.write().await?;
        Query::new(
            "INSERT INTO client_outcome (run_id, recorded_at, tool_use_id, outcome)
             VALUES ($1, $2, $3, $4)",
        )
        .bind(run_id)
        .bind(now_ms())
        .bind(tool_use_id)
        .bind(outcome)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Takes the one allow run `run_id` gives: true for the first hook
    /// that asks — whose client may run the call — and false for every
    /// other (the same call asked at once by several processes joins one
    /// run, and one approval lets one call run). `tool_use_id` is the
    /// client's own id for the call, when it gave one: what its post-tool
    /// hook reports is recorded against the run by it.
    pub async fn take_client_allow(
        &self,
        client: &str,
        tool_use_id: Option<&str>,
        run_id: &str,
    ) -> Result<bool, StoreError> {
        let (_writer, mut tx) = self.write().await?;
        let taken = Query::new(
            "INSERT INTO client_call (run_id, client, tool_use_id, allowed_at)
             VALUES ($1, $2, $3, $4) ON CONFLICT (run_id) DO NOTHING",
        )
        .bind(run_id)
        .bind(client)
        .bind(tool_use_id)
        .bind(now_ms())
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(taken == 1)
    }

    /// Whether run `run_id` let a client's call run.
    pub async fn client_allowed(&self, run_id: &str) -> Result<bool, StoreError> {
        let count = Query::new("SELECT COUNT(*) FROM client_call WHERE run_id = $1")
            .bind(run_id)
            .scalar::<i64>(&self.pool)
            .await?;
        Ok(count > 0)
    }

    /// The run `client`'s call `tool_use_id` was allowed as, if it was.
    pub async fn run_of_client_call(
        &self,
        client: &str,
        tool_use_id: &str,
    ) -> Result<Option<String>, StoreError> {
        Query::new(
            "SELECT run_id FROM client_call WHERE client = $1 AND tool_use_id = $2
             ORDER BY allowed_at DESC LIMIT 1",
        )
        .bind(client)
        .bind(tool_use_id)
        .scalar_optional(&self.pool)
        .await
    }

    /// What clients reported of run `run_id`'s call, oldest first.
    pub async fn client_outcomes(&self, run_id: &str) -> Result<Vec<ClientOutcome>, StoreError> {
        let rows = Query::new(
            "SELECT recorded_at, tool_use_id, outcome FROM client_outcome
             WHERE run_id = $1 ORDER BY recorded_at",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ClientOutcome {
                    recorded_at: row.try_get("recorded_at")?,
                    tool_use_id: row.try_get("tool_use_id")?,
                    outcome: row.try_get("outcome")?,
                })
            })
            .collect()
    }
}
