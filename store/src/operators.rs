//! The people who sign in to decide: operators, their one-time sign-in
//! links and the sessions those open.
//!
//! A link's secret and a session's secret are random (two version-4 UUIDs
//! of the operating system's generator: 244 random bits) and stored only as
//! their SHA-256: the database holds nothing that signs anyone in. A link is
//! used once, before it expires; a session lasts until it expires, its
//! operator signs out, or the operator is revoked — which ends every link
//! and session of theirs at once. Each session carries its own token against
//! cross-site requests, which a page sends back with every change.

use std::time::Duration;

use sha2::{Digest as _, Sha256};
use toolgate::identity::{IdentitySource, Operator};

use crate::db::Query;
use crate::{Store, StoreError, now_ms};

/// A one-time sign-in link's secret, for its operator alone: shown once,
/// never stored.
#[derive(Clone, PartialEq, Eq)]
pub struct SignInLink {
    /// The operator it signs in, as their name was first written.
    pub operator: String,
    /// The secret the link carries.
    pub secret: String,
    /// When it stops working, in milliseconds since the Unix epoch.
    pub expires_at: i64,
}

impl std::fmt::Debug for SignInLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignInLink")
            .field("operator", &self.operator)
            .field("secret", &"[redacted]")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// A session opened by a sign-in: its secret (the cookie's value) and its
/// token against cross-site requests.
#[derive(Clone, PartialEq, Eq)]
pub struct NewSession {
    /// The session's secret: shown once, never stored.
    pub secret: String,
    /// The session as it is read back.
    pub session: Session,
}

impl std::fmt::Debug for NewSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewSession")
            .field("secret", &"[redacted]")
            .field("session", &self.session)
            .finish()
    }
}

/// A live session.
#[derive(Clone, PartialEq, Eq)]
pub struct Session {
    /// Who signed in.
    pub operator: String,
    /// The token every change made through this session carries.
    pub csrf_token: String,
    /// When it ends, in milliseconds since the Unix epoch.
    pub expires_at: i64,
    /// Whether its operator may approve a call "and from now on"
    /// ([`Store::set_may_declare`]), as stored when the session was read.
    pub may_declare: bool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("operator", &self.operator)
            .field("csrf_token", &"[redacted]")
            .field("expires_at", &self.expires_at)
            .field("may_declare", &self.may_declare)
            .finish()
    }
}

/// One operator, for a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorRecord {
    /// The name.
    pub name: String,
    /// When the operator was added, in milliseconds since the Unix epoch.
    pub created_at: i64,
    /// When the operator was revoked, if they were.
    pub revoked_at: Option<i64>,
    /// How many sessions of theirs are live.
    pub live_sessions: i64,
    /// Whether they may approve a call "and from now on" from the inbox.
    pub may_declare: bool,
}

/// Whether a stored `may_declare` gives the power: only the integer 1 does
/// — anything else, a failed read included, does not.
fn may_declare_of(row: &crate::db::Row) -> bool {
    matches!(row.value("may_declare"), Some(crate::db::Val::Int(1)))
}

/// A random secret: 64 hex digits, 244 of their bits random.
pub(crate) fn secret() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// How a secret is stored: its SHA-256, in hex.
pub(crate) fn hashed(secret: &str) -> String {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(64);
    for byte in Sha256::digest(secret.as_bytes()) {
        let _ = write!(text, "{byte:02x}");
    }
    text
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

impl Store {
    /// The operator `name` stands for — by the key the identity rules
    /// compare names by, so that `Bob` and `bob` are one operator — or why
    /// it cannot stand for a person.
    fn operator_named(name: &str) -> Result<Operator, StoreError> {
        Operator::new(name, IdentitySource::Given).map_err(|error| {
            StoreError::InvalidOperatorName {
                name: toolgate::visible::visible(name).into_owned(),
                reason: error.to_string(),
            }
        })
    }

    /// Adds the operator `name` — or, for one already added, makes a new
    /// link; a revoked operator is let back in — and makes a one-time
    /// sign-in link for them, valid for `valid_for`.
    pub async fn add_operator(
        &self,
        name: &str,
        valid_for: Duration,
    ) -> Result<SignInLink, StoreError> {
        let operator = Self::operator_named(name)?;
        let now = now_ms();
        let link_secret = secret();
        let expires_at = now.saturating_add(millis(valid_for));
        let (_writer, mut tx) = self.write().await?;
        Query::new(
            "INSERT INTO operator (name, shown, created_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO UPDATE SET revoked_at = NULL",
        )
        .bind(operator.key())
        .bind(operator.name())
        .bind(now)
        .execute(&mut tx)
        .await?;
        let shown: String = Query::new("SELECT shown FROM operator WHERE name = $1")
            .bind(operator.key())
            .scalar(&mut tx)
            .await?;
        let link = SignInLink {
            operator: shown,
            secret: link_secret,
            expires_at,
        };
        Query::new(
            "INSERT INTO operator_link (secret_hash, operator, created_at, expires_at)
             VALUES ($1, $2, $3, $4)",
        )
        .bind(hashed(&link.secret))
        .bind(operator.key())
        .bind(now)
        .bind(link.expires_at)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        tracing::info!(operator = %link.operator, "operator added; a one-time sign-in link was made");
        Ok(link)
    }

    /// Signs in with a link's secret: the link is used up — of two uses at
    /// once, one wins — and a session opened, valid for `valid_for`.
    /// Refused, the same way whatever the cause so that a guess learns
    /// nothing, when the link is unknown, used, expired or its operator
    /// revoked.
    pub async fn sign_in(
        &self,
        link_secret: &str,
        valid_for: Duration,
    ) -> Result<NewSession, StoreError> {
        let now = now_ms();
        let (_writer, mut tx) = self.write().await?;
        let used = Query::new(
            "UPDATE operator_link SET used_at = $1
             WHERE secret_hash = $2 AND used_at IS NULL AND expires_at > $3
               AND operator IN (SELECT name FROM operator WHERE revoked_at IS NULL)",
        )
        .bind(now)
        .bind(hashed(link_secret))
        .bind(now)
        .execute(&mut tx)
        .await?;
        if used != 1 {
            return Err(StoreError::SignInRefused);
        }
        let key: String = Query::new("SELECT operator FROM operator_link WHERE secret_hash = $1")
            .bind(hashed(link_secret))
            .scalar(&mut tx)
            .await?;
        let operator_row = Query::new("SELECT shown, may_declare FROM operator WHERE name = $1")
            .bind(&key)
            .fetch_one(&mut tx)
            .await?;
        let shown: String = operator_row.try_get("shown")?;
        let session_secret = secret();
        let session = Session {
            operator: shown,
            csrf_token: secret(),
            expires_at: now.saturating_add(millis(valid_for)),
            may_declare: may_declare_of(&operator_row),
        };
        Query::new(
            "INSERT INTO operator_session (secret_hash, operator, csrf_token, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(hashed(&session_secret))
        .bind(&key)
        .bind(&session.csrf_token)
        .bind(now)
        .bind(session.expires_at)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        tracing::info!(operator = %session.operator, "operator signed in");
        Ok(NewSession {
            secret: session_secret,
            session,
        })
    }

    /// Opens a session for the operator `name` without a link, valid for
    /// `valid_for`: for a front end that vouches for who they are itself
    /// (the inbox behind an authenticating proxy, which names them).
    /// Refused, [`StoreError::NoSuchOperator`], unless `name` is an
    /// operator who was added and is not revoked: whoever the front end
    /// signs in, only operators decide.
    pub async fn open_session(
        &self,
        name: &str,
        valid_for: Duration,
    ) -> Result<NewSession, StoreError> {
        let operator = Self::operator_named(name)?;
        let key = operator.key();
        let now = now_ms();
        let (_writer, mut tx) = self.write().await?;
        let Some(operator_row) = Query::new(
            "SELECT shown, may_declare FROM operator WHERE name = $1 AND revoked_at IS NULL",
        )
        .bind(key)
        .fetch_optional(&mut tx)
        .await?
        else {
            return Err(StoreError::NoSuchOperator(operator.name().to_owned()));
        };
        let shown: String = operator_row.try_get("shown")?;
        let session_secret = secret();
        let session = Session {
            operator: shown,
            csrf_token: secret(),
            expires_at: now.saturating_add(millis(valid_for)),
            may_declare: may_declare_of(&operator_row),
        };
        Query::new(
            "INSERT INTO operator_session (secret_hash, operator, csrf_token, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(hashed(&session_secret))
        .bind(key)
        .bind(&session.csrf_token)
        .bind(now)
        .bind(session.expires_at)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        tracing::info!(operator = %session.operator, "a session was opened for an operator a front end vouched for");
        Ok(NewSession {
            secret: session_secret,
            session,
        })
    }

    /// The live session whose secret is `session_secret`: `None` when there
    /// is none — unknown, expired, signed out, or its operator revoked.
    pub async fn session(&self, session_secret: &str) -> Result<Option<Session>, StoreError> {
        let row = Query::new(
            "SELECT o.shown, o.may_declare, s.csrf_token, s.expires_at FROM operator_session s
             JOIN operator o ON o.name = s.operator
             WHERE s.secret_hash = $1 AND s.ended_at IS NULL AND s.expires_at > $2
               AND o.revoked_at IS NULL",
        )
        .bind(hashed(session_secret))
        .bind(now_ms())
        .fetch_optional(&self.pool)
        .await?;
        row.map(|row| {
            Ok(Session {
                operator: row.try_get("shown")?,
                csrf_token: row.try_get("csrf_token")?,
                expires_at: row.try_get("expires_at")?,
                may_declare: may_declare_of(&row),
            })
        })
        .transpose()
    }

    /// Ends the session whose secret is `session_secret` (signing out);
    /// true when a live one ended.
    pub async fn end_session(&self, session_secret: &str) -> Result<bool, StoreError> {
        let ended = Query::new(
            "UPDATE operator_session SET ended_at = $1 WHERE secret_hash = $2 AND ended_at IS NULL",
        )
        .bind(now_ms())
        .bind(hashed(session_secret))
        .execute(&self.pool)
        .await?;
        Ok(ended == 1)
    }

    /// Revokes the operator `name`: every session of theirs ends and every
    /// unused link stops working, at once. Returns how many live sessions
    /// ended.
    pub async fn revoke_operator(&self, name: &str) -> Result<u64, StoreError> {
        let operator = Self::operator_named(name)?;
        let name = operator.key();
        let now = now_ms();
        let (_writer, mut tx) = self.write().await?;
        let revoked = Query::new("UPDATE operator SET revoked_at = $1 WHERE name = $2")
            .bind(now)
            .bind(name)
            .execute(&mut tx)
            .await?;
        if revoked == 0 {
            return Err(StoreError::NoSuchOperator(operator.name().to_owned()));
        }
        let ended = Query::new(
            "UPDATE operator_session SET ended_at = $1
             WHERE operator = $2 AND ended_at IS NULL AND expires_at > $3",
        )
        .bind(now)
        .bind(name)
        .bind(now)
        .execute(&mut tx)
        .await?;
        Query::new("UPDATE operator_link SET used_at = $1 WHERE operator = $2 AND used_at IS NULL")
            .bind(now)
            .bind(name)
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        tracing::warn!(operator = %operator.name(), sessions = ended, "operator revoked; their sessions ended");
        Ok(ended)
    }

    /// Gives or takes the operator `name`'s power to approve a call "and
    /// from now on" from the inbox — declaring its tool "no approval" in the
    /// same act. Their sessions read it at their next request.
    pub async fn set_may_declare(&self, name: &str, may: bool) -> Result<(), StoreError> {
        let operator = Self::operator_named(name)?;
        let changed = Query::new("UPDATE operator SET may_declare = $1 WHERE name = $2")
            .bind(i64::from(may))
            .bind(operator.key())
            .execute(&self.pool)
            .await?;
        if changed == 0 {
            return Err(StoreError::InvalidOperatorName {
                name: toolgate::visible::visible(name).into_owned(),
                reason: "no such operator: add them first (`toolgate operator add NAME`)"
                    .to_owned(),
            });
        }
        tracing::info!(operator = %operator.name(), may, "an operator's power to declare tools from the inbox changed");
        Ok(())
    }

    /// Every operator, by the key of their name.
    pub async fn operators(&self) -> Result<Vec<OperatorRecord>, StoreError> {
        let rows = Query::new(
            "SELECT o.shown, o.created_at, o.revoked_at, o.may_declare,
                    (SELECT COUNT(*) FROM operator_session s
                      WHERE s.operator = o.name AND s.ended_at IS NULL AND s.expires_at > $1) AS live
             FROM operator o ORDER BY o.name",
        )
        .bind(now_ms())
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(OperatorRecord {
                    name: row.try_get("shown")?,
                    created_at: row.try_get("created_at")?,
                    revoked_at: row.try_get("revoked_at")?,
                    live_sessions: row.try_get("live")?,
                    may_declare: may_declare_of(row),
                })
            })
            .collect()
    }
}
