//! Server records: the operator's declarations per MCP server.

use serde::{Deserialize, Serialize};
use toolgate::OperatorDeclaration;

use crate::class::DataClass;
use crate::db::{Query, Row};
use crate::flag::{StoredFlag, approval_of, stored_for};
use crate::{Store, StoreError, now_ms};

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Transport {
    /// A child process speaking MCP over stdin and stdout.
    Stdio {
        /// The program and its arguments.
        command: Vec<String>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint's URL.
        url: String,
    },
    /// The stored transport could not be read; the server cannot be
    /// imported until an operator fixes it.
    Unreadable {
        /// Why.
        reason: String,
    },
}

impl Transport {
    /// A one-line description for tables.
    pub fn describe(&self) -> String {
        match self {
            Transport::Stdio { command } => format!("stdio: {}", command.join(" ")),
            Transport::Http { url } => format!("http: {url}"),
            Transport::Unreadable { reason } => format!("unreadable: {reason}"),
        }
    }
}

/// A server to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewServer {
    /// The identifier, which prefixes every imported tool's name.
    pub id: String,
    /// A name for people.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// What its tools return; `None` leaves the server inert until declared.
    pub data_class: Option<DataClass>,
}

/// The last import of a server's catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportState {
    /// `never`, `ok` or `failed`.
    pub status: String,
    /// The error of a failed import.
    pub error: Option<String>,
    /// When, in milliseconds since the Unix epoch.
    pub at: Option<i64>,
}

/// One server as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRecord {
    /// The identifier.
    pub id: String,
    /// A name for people.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// The declared class, if it is one of the six; `None` makes the server
    /// inert.
    pub data_class: Option<DataClass>,
    /// The class as stored, for an operator to see what is wrong with it.
    pub data_class_stored: Option<String>,
    /// The `requires_approval` value as stored.
    pub stored_flag: StoredFlag,
    /// What the gate acts on: the stored flag read fail-closed, on the
    /// backend it was read from (only a literal 0, or PostgreSQL's
    /// `not_required`, means no approval).
    pub approval: OperatorDeclaration,
    /// Whether the server may supply tools.
    pub enabled: bool,
    /// Whether its operator lets a requester answer its calls through their
    /// own MCP client (elicitation, [`toolgate::identity::Channel::Elicitation`]):
    /// off unless turned on, read fail-closed — only a stored 1 is on.
    pub elicitation: bool,
    /// The last import.
    pub import: ImportState,
    /// When the record was created.
    pub created_at: i64,
    /// When it last changed.
    pub updated_at: i64,
}

impl ServerRecord {
    /// True when the server may supply tools: enabled, with a known data
    /// class. The repository's listing and the code that builds tools both
    /// ask this.
    pub fn is_usable(&self) -> bool {
        self.enabled && self.data_class.is_some()
    }

    /// Why the server supplies no tools, if it does not.
    pub fn inert_reason(&self) -> Option<String> {
        if !self.enabled {
            Some("disabled by an operator".into())
        } else if self.data_class.is_none() {
            Some(match &self.data_class_stored {
                None => "no data class declared".into(),
                Some(stored) => format!("unknown data class `{stored}`"),
            })
        } else {
            None
        }
    }

    pub(crate) fn from_row(row: &Row) -> Result<Self, sqlx::Error> {
        let transport_kind: String = row.try_get("transport")?;
        let command: Option<String> = row.try_get("command")?;
        let url: Option<String> = row.try_get("url")?;
        let transport = match (transport_kind.as_str(), command, url) {
            ("stdio", Some(command), _) => match serde_json::from_str::<Vec<String>>(&command) {
                Ok(command) if !command.is_empty() => Transport::Stdio { command },
                Ok(_) => Transport::Unreadable {
                    reason: "the command is empty".into(),
                },
                Err(error) => Transport::Unreadable {
                    reason: format!("the command is not a JSON array of strings: {error}"),
                },
            },
            ("http", _, Some(url)) => Transport::Http { url },
            (other, _, _) => Transport::Unreadable {
                reason: format!("transport `{other}` without its command or URL"),
            },
        };
        let data_class_stored: Option<String> = row.try_get("data_class")?;
        let (stored_flag, approval) = approval_of(row);
        Ok(Self {
            id: row.try_get("id")?,
            name: row.try_get("name")?,
            transport,
            data_class: DataClass::from_stored(data_class_stored.as_deref()),
            data_class_stored,
            approval,
            stored_flag,
            enabled: row.try_get::<i64, _>("enabled")? == 1,
            // Read fail-closed: only a stored 1 is on — and a schema from
            // before the column has none.
            elicitation: matches!(row.value("elicitation"), Some(crate::db::Val::Int(1))),
            import: ImportState {
                status: row.try_get("import_status")?,
                error: row.try_get("import_error")?,
                at: row.try_get("imported_at")?,
            },
            created_at: row.try_get("created_at")?,
            updated_at: row.try_get("updated_at")?,
        })
    }
}

/// Why a server identifier is unusable, if it is: 1–24 characters of
/// lowercase ASCII letters, digits, `_` and `-`, starting with a letter. It
/// holds no `.`, which separates it from the remote name in a tool's local
/// name.
pub fn server_id_problem(id: &str) -> Option<&'static str> {
    if id.is_empty() || id.len() > 24 {
        Some("an identifier is 1 to 24 characters long")
    } else if !id.starts_with(|c: char| c.is_ascii_lowercase()) {
        Some("an identifier starts with a lowercase ASCII letter")
    } else if !id
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    {
        Some("an identifier holds only lowercase ASCII letters, digits, `_` and `-`")
    } else {
        None
    }
}

/// # Servers
///
/// What an operator declares for each MCP server: the console's
/// `toolgate servers`.
impl Store {
    /// Adds a server. It requires approval until an operator turns that off.
    pub async fn add_server(&self, server: NewServer) -> Result<ServerRecord, StoreError> {
        if let Some(problem) = server_id_problem(&server.id) {
            return Err(StoreError::InvalidServerId {
                id: server.id,
                problem,
            });
        }
        let (kind, command, url) = transport_columns(&server.transport)?;
        let now = now_ms();
        // A new server requires approval, written as such by the typed path
        // rather than left to the column's default, which a database
        // writer could have changed.
        let (flag, write_flag) = stored_for(self.backend(), OperatorDeclaration::ApprovalRequired);
        let inserted = Query::new(format!(
            "INSERT INTO mcp_server (id, name, transport, command, url, data_class, created_at, updated_at, requires_approval)
             VALUES ($2, $3, $4, $5, $6, $7, $8, $9, {write_flag}) ON CONFLICT (id) DO NOTHING"
        ))
        .bind(flag)
        .bind(&server.id)
        .bind(&server.name)
        .bind(kind)
        .bind(command)
        .bind(url)
        .bind(server.data_class.map(DataClass::as_str))
        .bind(now)
        .bind(now)
        .execute(&self.pool)
        .await?;
        if inserted == 0 {
            return Err(StoreError::ServerExists(server.id));
        }
        tracing::info!(server = %server.id, "server added; approval required until an operator turns it off");
        self.server(&server.id).await
    }

    /// One server.
    pub async fn server(&self, id: &str) -> Result<ServerRecord, StoreError> {
        let row = Query::new("SELECT * FROM mcp_server WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(row) => Ok(ServerRecord::from_row(&row)?),
            None => Err(StoreError::NoSuchServer(id.to_owned())),
        }
    }

    /// Every server, by identifier.
    pub async fn servers(&self) -> Result<Vec<ServerRecord>, StoreError> {
        let rows = Query::new("SELECT * FROM mcp_server ORDER BY id")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(ServerRecord::from_row)
            .collect::<Result<_, _>>()?)
    }

    /// The servers that may supply tools: enabled, with a known data class.
    pub async fn usable_servers(&self) -> Result<Vec<ServerRecord>, StoreError> {
        let rows = Query::new(
            "SELECT * FROM mcp_server WHERE enabled = 1 AND data_class IS NOT NULL ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await?;
        let mut servers = Vec::with_capacity(rows.len());
        for row in &rows {
            let server = ServerRecord::from_row(row)?;
            if server.is_usable() {
                servers.push(server);
            } else {
                tracing::warn!(server = %server.id, reason = ?server.inert_reason(), "server is inert");
            }
        }
        Ok(servers)
    }

    /// Declares whether the server's tools need approval — the only write
    /// path of the flag. Returns the record before and after.
    ///
    /// Turning approval off makes the server's tools run without a human, so
    /// it is bound to what the operator was shown: `reviewed` is the digest
    /// of the server's tools as [`Store::acceptance`] gave it (every tool),
    /// and their definitions are pinned as they are then. Without it, or with
    /// a catalogue changed since, nothing changes
    /// ([`StoreError::ReviewRequired`], [`StoreError::CatalogueChanged`]).
    /// Turning approval on needs no digest: it only tightens.
    pub async fn set_approval(
        &self,
        id: &str,
        declaration: OperatorDeclaration,
        reviewed: Option<&str>,
    ) -> Result<(ServerRecord, ServerRecord), StoreError> {
        let before = self.server(id).await?;
        if declaration == OperatorDeclaration::NoApproval && reviewed.is_none() {
            return Err(StoreError::ReviewRequired {
                server: id.to_owned(),
            });
        }
        let (_writer, mut tx) = self.write().await?;
        tx.lock_server(id).await?;
        let (flag, write_flag) = stored_for(tx.backend(), declaration);
        Query::new(format!(
            "UPDATE mcp_server SET requires_approval = {write_flag}, updated_at = $2 WHERE id = $3"
        ))
        .bind(flag)
        .bind(now_ms())
        .bind(id)
        .execute(&mut tx)
        .await?;
        // Turning approval off judges the tools the server has now: their
        // definitions are pinned in the same transaction, and a tool that is
        // new or changed later is quarantined until accepted.
        if let (OperatorDeclaration::NoApproval, Some(reviewed)) = (declaration, reviewed) {
            crate::catalogue::pin_in(&mut tx, id, None, reviewed).await?;
        }
        tx.commit().await?;
        let after = self.server(id).await?;
        tracing::info!(server = %id, before = ?before.approval, after = ?after.approval, "operator changed the approval declaration");
        Ok((before, after))
    }

    /// Declares what the server's tools return.
    pub async fn set_data_class(
        &self,
        id: &str,
        class: DataClass,
    ) -> Result<ServerRecord, StoreError> {
        let result =
            Query::new("UPDATE mcp_server SET data_class = $1, updated_at = $2 WHERE id = $3")
                .bind(class.as_str())
                .bind(now_ms())
                .bind(id)
                .execute(&self.pool)
                .await?;
        self.changed(id, result).await
    }

    /// Changes how the server is reached.
    pub async fn set_transport(
        &self,
        id: &str,
        transport: &Transport,
    ) -> Result<ServerRecord, StoreError> {
        let (kind, command, url) = transport_columns(transport)?;
        let result = Query::new(
            "UPDATE mcp_server SET transport = $1, command = $2, url = $3, updated_at = $4 WHERE id = $5",
        )
        .bind(kind)
        .bind(command)
        .bind(url)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await?;
        self.changed(id, result).await
    }

    /// Enables or disables the server.
    pub async fn set_enabled(&self, id: &str, enabled: bool) -> Result<ServerRecord, StoreError> {
        let result =
            Query::new("UPDATE mcp_server SET enabled = $1, updated_at = $2 WHERE id = $3")
                .bind(i64::from(enabled))
                .bind(now_ms())
                .bind(id)
                .execute(&self.pool)
                .await?;
        self.changed(id, result).await
    }

    /// Lets a requester answer this server's calls through their own MCP
    /// client (elicitation), or stops it. Never on by default: some clients
    /// answer an elicitation without asking anyone, so an operator turns it
    /// on for a server whose clients they know ask their user. An approval
    /// through elicitation is still the requester's own: refused under four
    /// eyes, never one of several approvers
    /// ([`toolgate::audit::elicited_answer_problem`]).
    pub async fn set_elicitation(&self, id: &str, on: bool) -> Result<ServerRecord, StoreError> {
        let result =
            Query::new("UPDATE mcp_server SET elicitation = $1, updated_at = $2 WHERE id = $3")
                .bind(i64::from(on))
                .bind(now_ms())
                .bind(id)
                .execute(&self.pool)
                .await?;
        tracing::info!(server = %id, on, "operator changed whether a requester may answer through their own client");
        self.changed(id, result).await
    }

    async fn changed(&self, id: &str, rows: u64) -> Result<ServerRecord, StoreError> {
        if rows == 0 {
            return Err(StoreError::NoSuchServer(id.to_owned()));
        }
        self.server(id).await
    }

    /// Removes the server and its catalogue.
    ///
    /// The pages of any import of it still running are deleted with it: that
    /// import then fails, and never fills the catalogue of a server
    /// registered again under the same id.
    pub async fn remove_server(&self, id: &str) -> Result<ServerRecord, StoreError> {
        let record = self.server(id).await?;
        let (_writer, mut tx) = self.write().await?;
        tx.lock_server(id).await?;
        crate::catalogue::drop_stages_of(&mut tx, id).await?;
        Query::new("DELETE FROM mcp_server WHERE id = $1")
            .bind(id)
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        Ok(record)
    }

    /// Records how an import ended.
    pub async fn record_import(&self, id: &str, error: Option<&str>) -> Result<(), StoreError> {
        let status = if error.is_some() { "failed" } else { "ok" };
        let now = now_ms();
        let result = Query::new(
            "UPDATE mcp_server SET import_status = $1, import_error = $2, imported_at = $3, updated_at = $4 WHERE id = $5",
        )
        .bind(status)
        .bind(error)
        .bind(now)
        .bind(now)
        .bind(id)
        .execute(&self.pool)
        .await?;
        self.changed(id, result).await.map(drop)
    }
}

/// The `transport`, `command` and `url` columns of a transport.
fn transport_columns(
    transport: &Transport,
) -> Result<(&'static str, Option<String>, Option<String>), StoreError> {
    match transport {
        Transport::Stdio { command } => Ok((
            "stdio",
            Some(
                serde_json::to_string(command).map_err(|source| StoreError::Encode {
                    what: "the command",
                    source,
                })?,
            ),
            None,
        )),
        Transport::Http { url } => Ok(("http", None, Some(url.clone()))),
        Transport::Unreadable { reason } => Err(StoreError::UnreadableTransport(reason.clone())),
    }
}
