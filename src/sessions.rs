//! Browser sessions. A person signs in to the pages with an API token; Bindery answers with a
//! cookie holding a new random session id, and keeps only that id's SHA-256. The session acts
//! as its token (same tenant, same admin rights), so revoking the token signs out every browser
//! that used it. Sessions live in the database, so any web process can read them: no shared
//! signing key to configure.
//!
//! Each session has its own CSRF token. A write made with the cookie must carry it back (in the
//! `X-CSRF-Token` header from a script, or the `_csrf` field of a form); a cookie alone, which a
//! browser attaches to another site's request, is never enough to change anything.

use std::time::Duration;

use rand::Rng as _;

use crate::storage::Database;
use crate::tokens::{self, Tenant};

/// How long a sign-in lasts. Fixed, not sliding: a stolen cookie stops working on its own.
pub const LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);
const ID_BYTES: usize = 32;

/// A signed-in browser.
#[derive(Debug, Clone)]
pub struct Session {
    pub tenant: Tenant,
    pub csrf: String,
}

/// A new session for `token`, or `None` when the token is not valid. Returns the cookie value
/// (shown to no one but the browser) and the session.
pub async fn create(db: &Database, token: &str) -> anyhow::Result<Option<(String, Session)>> {
    let Some(tenant) = tokens::authenticate(db, token).await? else {
        return Ok(None);
    };
    let id = random_hex();
    let csrf = random_hex();
    let lifetime = i64::try_from(LIFETIME.as_millis()).unwrap_or(i64::MAX);
    on_pool!(db, |pool, d| {
        // Expired sessions go when new ones come; there are few, and this keeps the table small
        // without a schedule of its own.
        sqlx::query(sql!(d, "DELETE FROM sessions WHERE expires_at <= {now}"))
            .execute(pool)
            .await?;
        sqlx::query(sql!(
            d,
            "INSERT INTO sessions (hash, token_name, csrf, created_at, expires_at)
             VALUES ($1, $2, $3, {now}, {now} + $4)"
        ))
        .bind(tokens::hash(&id))
        .bind(&tenant.name)
        .bind(&csrf)
        .bind(lifetime)
        .execute(pool)
        .await?;
    });
    Ok(Some((id, Session { tenant, csrf })))
}

/// The live session a cookie value names: not expired, and its token not revoked.
pub async fn lookup(db: &Database, id: &str) -> anyhow::Result<Option<Session>> {
    if !well_formed(id) {
        return Ok(None);
    }
    let found: Option<(String, String, bool, String)> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT t.name, t.tenant, t.admin, s.csrf
             FROM sessions s JOIN tokens t ON t.name = s.token_name
             WHERE s.hash = $1 AND s.expires_at > {now} AND t.revoked_at IS NULL"
        ))
        .bind(tokens::hash(id))
        .fetch_optional(pool)
        .await?
    });
    Ok(found.map(|(name, tenant, admin, csrf)| Session {
        tenant: Tenant {
            name,
            tenant,
            admin,
        },
        csrf,
    }))
}

/// Which of the sessions whose ids hash to `hashes` (`tokens::hash`) are still live: not
/// signed out or expired, their token not revoked. One query, for open event streams.
pub async fn live(
    db: &Database,
    hashes: &[String],
) -> anyhow::Result<std::collections::HashSet<String>> {
    let hashes = serde_json::to_string(hashes)?;
    let found: Vec<String> = on_pool!(db, |pool, d| {
        sqlx::query_scalar(sql!(
            d,
            "SELECT s.hash FROM sessions s JOIN tokens t ON t.name = s.token_name
             WHERE s.hash IN ({texts $1}) AND s.expires_at > {now} AND t.revoked_at IS NULL"
        ))
        .bind(hashes)
        .fetch_all(pool)
        .await?
    });
    Ok(found.into_iter().collect())
}

/// Ends the session a cookie value names (signing out). Unknown ids are fine.
pub async fn delete(db: &Database, id: &str) -> anyhow::Result<()> {
    if !well_formed(id) {
        return Ok(());
    }
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(d, "DELETE FROM sessions WHERE hash = $1"))
            .bind(tokens::hash(id))
            .execute(pool)
            .await?;
    });
    Ok(())
}

/// Compares a CSRF token without leaking, through timing, how much of it matched.
pub fn csrf_matches(expected: &str, given: &str) -> bool {
    let (a, b) = (expected.as_bytes(), given.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh random value in lowercase hex, for session ids and CSRF tokens.
pub fn random_hex() -> String {
    let mut bytes = [0u8; ID_BYTES];
    rand::rng().fill(&mut bytes);
    hex::encode(bytes)
}

fn well_formed(id: &str) -> bool {
    id.len() == ID_BYTES * 2 && id.bytes().all(|b| b.is_ascii_hexdigit())
}
