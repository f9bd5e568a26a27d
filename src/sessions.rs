//! Browser sessions. A person signs in to the pages with their account (a passkey, a password,
//! single sign-on) or with an API token; Bindery answers with a cookie holding a new random
//! session id, and keeps only that id's SHA-256. A session acts as its account (its tenant and
//! role) or its token (same tenant, same admin rights), so disabling the account or revoking
//! the token signs out every browser that used it, and removing the passkey a session was made
//! with ends that session. Sessions live in the database, so any web process can read them: no
//! shared signing key to configure.
//!
//! Each session has its own CSRF token. A write made with the cookie must carry it back (in the
//! `X-CSRF-Token` header from a script, or the `_csrf` field of a form); a cookie alone, which a
//! browser attaches to another site's request, is never enough to change anything.

use std::time::Duration;

use rand::Rng as _;

use crate::accounts::role::Role;
use crate::storage::Database;
use crate::tokens::{self, Tenant};

/// How long a sign-in lasts. Fixed, not sliding: a stolen cookie stops working on its own.
pub const LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);
const ID_BYTES: usize = 32;

/// A signed-in browser.
#[derive(Debug, Clone)]
pub struct Session {
    /// The tenant it acts for, and whether with an admin's rights.
    pub tenant: Tenant,
    pub csrf: String,
    /// The person, for a session made by signing in to an account (not with a token).
    pub person: Option<Person>,
}

/// The account a session acts for.
#[derive(Debug, Clone)]
pub struct Person {
    pub id: String,
    pub name: String,
    pub email: String,
    pub role: Role,
    /// What the session was made with: `password`, `passkey:ID` or `oidc`.
    pub credential: String,
}

/// What an account's session was signed in with, stored with it so that removing that
/// credential ends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignedInWith {
    Password,
    Passkey(String),
    SingleSignOn,
}

impl SignedInWith {
    fn stored(&self) -> String {
        match self {
            SignedInWith::Password => "password".into(),
            SignedInWith::Passkey(id) => format!("passkey:{id}"),
            SignedInWith::SingleSignOn => "oidc".into(),
        }
    }
}

/// A new session for `token`, or `None` when the token is not valid. Returns the cookie value
/// (shown to no one but the browser) and the session.
pub async fn create(db: &Database, token: &str) -> anyhow::Result<Option<(String, Session)>> {
    let Some(tenant) = tokens::authenticate(db, token).await? else {
        return Ok(None);
    };
    let (id, csrf) = insert(db, Some(&tenant.name), None, "token").await?;
    Ok(Some((
        id,
        Session {
            tenant,
            csrf,
            person: None,
        },
    )))
}

/// A new session for account `account`, signed in with `with`. Returns the cookie value, or
/// `None` when the account is disabled (or gone) by now.
pub async fn create_for_account(
    db: &Database,
    account: &str,
    with: &SignedInWith,
) -> anyhow::Result<Option<(String, Session)>> {
    let (id, _) = insert(db, None, Some(account), &with.stored()).await?;
    Ok(lookup(db, &id).await?.map(|session| (id, session)))
}

/// Stores a new session for a token or an account; returns its id and CSRF token.
async fn insert(
    db: &Database,
    token: Option<&str>,
    account: Option<&str>,
    credential: &str,
) -> anyhow::Result<(String, String)> {
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
            "INSERT INTO sessions (hash, token_name, account_id, credential, csrf, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, {now}, {now} + $6)"
        ))
        .bind(tokens::hash(&id))
        .bind(token)
        .bind(account)
        .bind(credential)
        .bind(&csrf)
        .bind(lifetime)
        .execute(pool)
        .await?;
    });
    Ok((id, csrf))
}

/// Which sessions are live, in SQL, once: not expired, and its token not revoked or its account
/// not disabled. `s` is the session, `t` its token and `a` its account, both LEFT JOINed.
macro_rules! live_session {
    () => {
        "s.expires_at > {now}
         AND ((s.token_name IS NOT NULL AND t.revoked_at IS NULL)
              OR (s.account_id IS NOT NULL AND a.disabled_at IS NULL))"
    };
}

/// The live session a cookie value names: not expired, and its token not revoked.
pub async fn lookup(db: &Database, id: &str) -> anyhow::Result<Option<Session>> {
    if !well_formed(id) {
        return Ok(None);
    }
    let found: Option<Row> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            concat!(
                "SELECT s.csrf, s.credential, t.name AS token_name, t.tenant AS token_tenant,
                        t.admin, a.id, a.tenant AS account_tenant, a.name AS account_name,
                        a.email, a.role
                 FROM sessions s
                 LEFT JOIN tokens t ON t.name = s.token_name
                 LEFT JOIN accounts a ON a.id = s.account_id
                 WHERE s.hash = $1 AND ",
                live_session!()
            )
        ))
        .bind(tokens::hash(id))
        .fetch_optional(pool)
        .await?
    });
    found.map(Row::session).transpose()
}

/// A live session's row: its token's columns or its account's.
#[derive(sqlx::FromRow)]
struct Row {
    csrf: String,
    credential: String,
    token_name: Option<String>,
    token_tenant: Option<String>,
    admin: Option<bool>,
    id: Option<String>,
    account_tenant: Option<String>,
    account_name: Option<String>,
    email: Option<String>,
    role: Option<String>,
}

impl Row {
    fn session(self) -> anyhow::Result<Session> {
        if let (Some(id), Some(tenant), Some(name), Some(email), Some(role)) = (
            self.id,
            self.account_tenant,
            self.account_name,
            self.email,
            self.role,
        ) {
            let role: Role = role.parse().map_err(anyhow::Error::msg)?;
            return Ok(Session {
                tenant: Tenant {
                    // What the pages show as who is signed in, and the logs' `token.name`.
                    name: email.clone(),
                    tenant,
                    admin: role == Role::Admin,
                },
                csrf: self.csrf,
                person: Some(Person {
                    id,
                    name,
                    email,
                    role,
                    credential: self.credential,
                }),
            });
        }
        let (Some(name), Some(tenant)) = (self.token_name, self.token_tenant) else {
            anyhow::bail!("a live session with neither a token nor an account");
        };
        Ok(Session {
            tenant: Tenant {
                name,
                tenant,
                admin: self.admin.unwrap_or(false),
            },
            csrf: self.csrf,
            person: None,
        })
    }
}

/// Which of the sessions whose ids hash to `hashes` (`tokens::hash`) are still live: not
/// signed out or expired, their token not revoked or their account not disabled. One query, for open event streams.
pub async fn live(
    db: &Database,
    hashes: &[String],
) -> anyhow::Result<std::collections::HashSet<String>> {
    let hashes = serde_json::to_string(hashes)?;
    let found: Vec<String> = on_pool!(db, |pool, d| {
        sqlx::query_scalar(sql!(
            d,
            concat!(
                "SELECT s.hash FROM sessions s
                 LEFT JOIN tokens t ON t.name = s.token_name
                 LEFT JOIN accounts a ON a.id = s.account_id
                 WHERE s.hash IN ({texts $1}) AND ",
                live_session!()
            )
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
