//! The tokens of the gateway served over HTTP: each one stands for one
//! person, the requester of every call made with it.
//!
//! A token reads `tgw_<id>_<secret>`: its public id (16 hex digits, what a
//! listing shows and `revoke` takes) and a random secret made as a sign-in
//! link's is (244 random bits). Only the secret's SHA-256 is stored, and a
//! presented token is found by its id and its secret's hash compared in
//! constant time: neither the database nor the time an answer takes tells
//! anything of a secret. A token is shown once, when it is made; revoked,
//! its next request is refused.

use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use toolgate::identity::{IdentitySource, Operator};

use crate::db::{Query, Row};
use crate::operators::{hashed, secret};
use crate::{Store, StoreError, now_ms};

/// What every token begins with, so that a scanner of secrets knows one.
const PREFIX: &str = "tgw_";

/// How many hex digits a token's id has.
const ID_DIGITS: usize = 16;

/// How stale a token's time of last use may be before a request with it
/// writes it again: a request reads, it does not write every time.
const LAST_USED_EVERY_MS: i64 = 60_000;

/// A token just made: its whole text is shown once, never stored.
#[derive(Clone, PartialEq, Eq)]
pub struct NewGatewayToken {
    /// The token's public id.
    pub id: String,
    /// Its person, as their name was first written.
    pub person: String,
    /// The token, as a client sends it (`Authorization: Bearer …`).
    pub token: String,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_at: i64,
}

impl std::fmt::Debug for NewGatewayToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewGatewayToken")
            .field("id", &self.id)
            .field("person", &self.person)
            .field("token", &"[redacted]")
            .field("created_at", &self.created_at)
            .finish()
    }
}

/// One token, for a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayTokenRecord {
    /// Its public id.
    pub id: String,
    /// Its person, as their name was first written.
    pub person: String,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_at: i64,
    /// When a request last used it — to the minute — if one did.
    pub last_used_at: Option<i64>,
    /// When it was revoked, if it was.
    pub revoked_at: Option<i64>,
}

/// Who a live token stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayTokenHolder {
    /// The token's public id.
    pub id: String,
    /// Its person, as their name was first written: the requester.
    pub person: String,
}

/// A token's id and secret, when `token` has a token's shape.
fn parts(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.strip_prefix(PREFIX)?.split_once('_')?;
    let hex = |text: &str, digits: usize| {
        text.len() == digits
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    (hex(id, ID_DIGITS) && hex(secret, 64)).then_some((id, secret))
}

fn record(row: &Row) -> Result<GatewayTokenRecord, StoreError> {
    Ok(GatewayTokenRecord {
        id: row.try_get("id")?,
        person: row.try_get("shown")?,
        created_at: row.try_get("created_at")?,
        last_used_at: row.try_get("last_used_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

impl Store {
    /// The person `name` stands for, or why it cannot stand for one: the
    /// rules of an operator's and a requester's name.
    fn person_named(name: &str) -> Result<Operator, StoreError> {
        Operator::new(name, IdentitySource::Given).map_err(|error| {
            StoreError::InvalidOperatorName {
                name: toolgate::visible::visible(name).into_owned(),
                reason: error.to_string(),
            }
        })
    }

    /// Makes a token of the gateway for `person`: the requester of every
    /// call made with it. Its text is in the answer only.
    pub async fn add_gateway_token(&self, person: &str) -> Result<NewGatewayToken, StoreError> {
        let operator = Self::person_named(person)?;
        let id = uuid::Uuid::new_v4().simple().to_string()[..ID_DIGITS].to_owned();
        let secret = secret();
        let created_at = now_ms();
        Query::new(
            "INSERT INTO gateway_token (id, secret_hash, person, shown, created_at)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&id)
        .bind(hashed(&secret))
        .bind(operator.key())
        .bind(operator.name())
        .bind(created_at)
        .execute(&self.pool)
        .await?;
        tracing::info!(id = %id, person = %operator.name(), "a gateway token was made");
        Ok(NewGatewayToken {
            token: format!("{PREFIX}{id}_{secret}"),
            id,
            person: operator.name().to_owned(),
            created_at,
        })
    }

    /// Every token, revoked ones too, by person then age.
    pub async fn gateway_tokens(&self) -> Result<Vec<GatewayTokenRecord>, StoreError> {
        let rows = Query::new(
            "SELECT id, shown, created_at, last_used_at, revoked_at FROM gateway_token
             ORDER BY person, created_at, id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(record).collect()
    }

    /// Revokes the token whose id is `id_or_person`, or else every live
    /// token of the person of that name: the next request with any of them
    /// is refused. Returns the tokens revoked now (none when they were
    /// revoked before); refused when no token has that id or person.
    pub async fn revoke_gateway_tokens(
        &self,
        id_or_person: &str,
    ) -> Result<Vec<GatewayTokenRecord>, StoreError> {
        let now = now_ms();
        let (_writer, mut tx) = self.write().await?;
        let by_id = Query::new("SELECT COUNT(*) FROM gateway_token WHERE id = $1")
            .bind(id_or_person)
            .scalar::<i64>(&mut tx)
            .await?;
        let (column, key) = if by_id > 0 {
            ("id", id_or_person.to_owned())
        } else {
            let key = Self::person_named(id_or_person)
                .map_err(|_| StoreError::NoSuchGatewayToken(id_or_person.to_owned()))?
                .key()
                .to_owned();
            let of_person = Query::new("SELECT COUNT(*) FROM gateway_token WHERE person = $1")
                .bind(&key)
                .scalar::<i64>(&mut tx)
                .await?;
            if of_person == 0 {
                return Err(StoreError::NoSuchGatewayToken(
                    toolgate::visible::visible(id_or_person).into_owned(),
                ));
            }
            ("person", key)
        };
        let live = format!(
            "SELECT id, shown, created_at, last_used_at, revoked_at FROM gateway_token
             WHERE {column} = $1 AND revoked_at IS NULL ORDER BY created_at, id"
        );
        let rows = Query::new(live).bind(&key).fetch_all(&mut tx).await?;
        let update = format!(
            "UPDATE gateway_token SET revoked_at = $1 WHERE {column} = $2 AND revoked_at IS NULL"
        );
        Query::new(update)
            .bind(now)
            .bind(&key)
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        let revoked = rows
            .iter()
            .map(|row| {
                record(row).map(|mut token| {
                    token.revoked_at = Some(now);
                    token
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        for token in &revoked {
            tracing::warn!(id = %token.id, person = %token.person, "a gateway token was revoked");
        }
        Ok(revoked)
    }

    /// Who the live token `token` stands for; `None` for anything else —
    /// not a token, unknown, or revoked — the same way whatever the cause.
    /// Its time of last use is written at most once a minute.
    pub async fn gateway_token_holder(
        &self,
        token: &str,
    ) -> Result<Option<GatewayTokenHolder>, StoreError> {
        let Some((id, secret)) = parts(token) else {
            return Ok(None);
        };
        let Some(row) = Query::new(
            "SELECT secret_hash, shown, last_used_at FROM gateway_token
             WHERE id = $1 AND revoked_at IS NULL",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        else {
            return Ok(None);
        };
        let stored: String = row.try_get("secret_hash")?;
        let presented = hashed(secret);
        // Both are 64 hex digits of a SHA-256; compared in constant time
        // all the same, and on a digest of each so that lengths never leak.
        let same: bool = Sha256::digest(stored.as_bytes())
            .ct_eq(&Sha256::digest(presented.as_bytes()))
            .into();
        if !same {
            return Ok(None);
        }
        let now = now_ms();
        let last: Option<i64> = row.try_get("last_used_at")?;
        if last.is_none_or(|last| now.saturating_sub(last) >= LAST_USED_EVERY_MS) {
            let written = Query::new("UPDATE gateway_token SET last_used_at = $1 WHERE id = $2")
                .bind(now)
                .bind(id)
                .execute(&self.pool)
                .await;
            if let Err(error) = written {
                tracing::debug!(%error, id, "a gateway token's last use was not written");
            }
        }
        Ok(Some(GatewayTokenHolder {
            id: id.to_owned(),
            person: row.try_get("shown")?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::parts;

    #[test]
    fn only_a_token_shaped_text_is_looked_up() {
        let id = "0123456789abcdef";
        let secret = "a".repeat(64);
        assert_eq!(
            parts(&format!("tgw_{id}_{secret}")),
            Some((id, secret.as_str()))
        );
        for wrong in [
            String::new(),
            format!("tgx_{id}_{secret}"),
            format!("tgw_{id}{secret}"),
            format!("tgw_{}_{secret}", &id[1..]),
            format!("tgw_{id}_{}", &secret[1..]),
            format!("tgw_{}_{secret}", id.to_uppercase()),
            format!("tgw_{id}_{secret} "),
        ] {
            assert_eq!(parts(&wrong), None, "{wrong}");
        }
    }
}
