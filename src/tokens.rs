//! API tokens. Each token is a tenant: the name a person gives it is also the tenant its books
//! belong to.
//!
//! A token is `bdy_` and 32 random bytes in lowercase hex. It is shown once, when created;
//! only its SHA-256 is stored. Its entropy makes a plain hash enough (a password KDF would add
//! nothing but cost), and requests are matched by looking the hash up, so comparing tokens
//! leaks no timing.
//!
//! Each token row also holds a webhook signing secret (`whsec_` and 32 random bytes in hex),
//! made with it: the tenant's own row (`tenants`) takes it over on first use, so a tenant's
//! receivers keep the secret they had before tenants had rows.

use anyhow::Context;
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::FromRow;

use crate::config::Secret;
use crate::storage::Database;

/// What every token starts with, so that a leaked one is easy to recognise (and to scan for).
const PREFIX: &str = "bdy_";
/// Random bytes in a token.
const SECRET_BYTES: usize = 32;
/// What every webhook signing secret starts with, so it is not mistaken for a token.
const WEBHOOK_SECRET_PREFIX: &str = "whsec_";
/// Longest token name.
const MAX_NAME_LEN: usize = 64;
/// `last_used_at` is refreshed at most this often, so authenticating stays a read.
const LAST_USED_RESOLUTION_MS: i64 = 60_000;

/// Who a request is from, once its token checks out.
#[derive(Debug, Clone, Serialize)]
pub struct Tenant {
    /// The token's name.
    pub name: String,
    /// The tenant its work belongs to (today always the name).
    pub tenant: String,
    pub admin: bool,
}

/// A token as listed: everything but its hash. Times are unix milliseconds.
#[derive(Debug, Clone, FromRow, Serialize)]
pub struct TokenInfo {
    pub name: String,
    pub admin: bool,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(
        "{0:?} is not a valid token name: use 1 to {MAX_NAME_LEN} ASCII letters, digits, '-', '_' or '.', beginning and ending with a letter or digit (the name is also the tenant's)"
    )]
    BadName(String),
    #[error(
        "a token named {0:?} already exists, or one that differs only in letter case (names are never reused, even once revoked); choose another name"
    )]
    Exists(String),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// The advisory lock (PostgreSQL) under which a name is checked against every other in any
/// letter case and inserted, so that two admins creating `Ann` and `ann` at once cannot both
/// succeed. SQLite's write transaction serializes them already.
const NAMES_LOCK: i64 = 0x6264_795f_6e61_6d65; // "bdy_name"

/// Creates a token named `name` for the tenant of the same name, and returns the token. This is
/// the only time it can be seen: only its hash is kept. A name already taken in any letter
/// case is refused: `Ann` and `ann` would look like one tenant and be two.
#[tracing::instrument(skip(db))]
pub async fn create(db: &Database, name: &str, admin: bool) -> Result<String, TokenError> {
    insert(db, name, None, admin).await
}

/// The person a token made on an account's page belongs to: it acts for their tenant, with an
/// admin's rights if they are one, and is revoked with their account.
pub struct Holder<'a> {
    pub account: &'a str,
    pub tenant: &'a str,
}

/// Creates a token named `name` for an account (see [`Holder`]); returns the token, shown this
/// once. Names are one namespace with the tenants' tokens: a name is never two tokens.
#[tracing::instrument(skip(db, holder))]
pub async fn create_for(
    db: &Database,
    name: &str,
    holder: &Holder<'_>,
    admin: bool,
) -> Result<String, TokenError> {
    insert(db, name, Some(holder), admin).await
}

async fn insert(
    db: &Database,
    name: &str,
    holder: Option<&Holder<'_>>,
    admin: bool,
) -> Result<String, TokenError> {
    if !valid_name(name) {
        return Err(TokenError::BadName(name.to_owned()));
    }
    let token = generate();
    let hash = hash(&token);
    let webhook_secret = generate_webhook_secret();
    let mut tx = db.begin().await.context("starting to store a new token")?;
    let inserted = on_tx!(&mut tx, |conn, d| {
        if d == crate::storage::sql::Dialect::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(NAMES_LOCK)
                .execute(&mut *conn)
                .await
                .context("waiting to check a new token's name")?;
        }
        sqlx::query(sql!(
            d,
            "INSERT INTO tokens (name, tenant, hash, admin, created_at, webhook_secret, account_id)
             SELECT $1, COALESCE($5, $1), $2, $3, {now}, $4, $6
             WHERE NOT EXISTS (SELECT 1 FROM tokens WHERE lower(name) = lower($1))
             ON CONFLICT (name) DO NOTHING"
        ))
        .bind(name)
        .bind(&hash)
        .bind(admin)
        .bind(webhook_secret.expose())
        .bind(holder.map(|h| h.tenant))
        .bind(holder.map(|h| h.account))
        .execute(&mut *conn)
        .await
        .map_err(|e| anyhow::Error::new(e).context("storing a new token"))?
        .rows_affected()
    });
    tx.commit().await.context("storing a new token")?;
    if inserted == 0 {
        return Err(TokenError::Exists(name.to_owned()));
    }
    Ok(token)
}

/// The tenant a token belongs to, or `None` for a token that is malformed, unknown or revoked.
/// A malformed token never reaches the database.
#[tracing::instrument(skip_all, level = "debug")]
pub async fn authenticate(db: &Database, token: &str) -> anyhow::Result<Option<Tenant>> {
    if !well_formed(token) {
        return Ok(None);
    }
    let hash = hash(token);
    let found: Option<(String, String, bool, bool)> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT name, tenant, admin,
                    (last_used_at IS NULL OR last_used_at <= {now} - $2) AS stale
             FROM tokens WHERE hash = $1 AND revoked_at IS NULL"
        ))
        .bind(&hash)
        .bind(LAST_USED_RESOLUTION_MS)
        .fetch_optional(pool)
        .await?
    });
    let Some((name, tenant, admin, stale)) = found else {
        return Ok(None);
    };
    if stale && let Err(e) = touch(db, &name).await {
        // A valid token stays valid when its usage time cannot be written (a busy SQLite).
        tracing::warn!(token.name = %name, error = %format!("{e:#}"), "could not record a token's use");
    }
    Ok(Some(Tenant {
        name,
        tenant,
        admin,
    }))
}

/// Records that a token was used now. The condition keeps concurrent requests from writing
/// more than once a minute between them.
async fn touch(db: &Database, name: &str) -> anyhow::Result<()> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE tokens SET last_used_at = {now}
             WHERE name = $1 AND (last_used_at IS NULL OR last_used_at <= {now} - $2)"
        ))
        .bind(name)
        .bind(LAST_USED_RESOLUTION_MS)
        .execute(pool)
        .await?;
    });
    Ok(())
}

/// Every token, revoked ones included, oldest first.
#[tracing::instrument(skip(db), level = "debug")]
pub async fn list(db: &Database) -> anyhow::Result<Vec<TokenInfo>> {
    Ok(on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT name, admin, created_at, last_used_at, revoked_at
             FROM tokens ORDER BY created_at, name"
        ))
        .fetch_all(pool)
        .await?
    }))
}

/// The tokens made on account `account`'s page, revoked ones included, oldest first.
pub async fn of_account(db: &Database, account: &str) -> anyhow::Result<Vec<TokenInfo>> {
    Ok(on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT name, admin, created_at, last_used_at, revoked_at
             FROM tokens WHERE account_id = $1 ORDER BY created_at, name"
        ))
        .bind(account)
        .fetch_all(pool)
        .await?
    }))
}

/// Revokes account `account`'s token `name`; `false` when it has no such token.
pub async fn revoke_own(db: &Database, account: &str, name: &str) -> anyhow::Result<bool> {
    let changed = on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE tokens SET revoked_at = COALESCE(revoked_at, {now})
             WHERE name = $1 AND account_id = $2"
        ))
        .bind(name)
        .bind(account)
        .execute(pool)
        .await?
        .rows_affected()
    });
    Ok(changed > 0)
}

/// Revokes the token named `name`: it stops authenticating at once. Returns whether such a
/// token exists. Revoking twice is harmless and keeps the first revocation time.
#[tracing::instrument(skip(db))]
pub async fn revoke(db: &Database, name: &str) -> anyhow::Result<bool> {
    let changed = on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE tokens SET revoked_at = COALESCE(revoked_at, {now}) WHERE name = $1"
        ))
        .bind(name)
        .execute(pool)
        .await?
        .rows_affected()
    });
    Ok(changed > 0)
}

/// Which of the tokens named `names` still authenticate (not revoked), in one query: how open
/// event streams learn, every few seconds, that their token was revoked.
pub async fn live(
    db: &Database,
    names: &[String],
) -> anyhow::Result<std::collections::HashSet<String>> {
    let names = serde_json::to_string(names)?;
    let found: Vec<String> = on_pool!(db, |pool, d| {
        sqlx::query_scalar(sql!(
            d,
            "SELECT name FROM tokens WHERE name IN ({texts $1}) AND revoked_at IS NULL"
        ))
        .bind(names)
        .fetch_all(pool)
        .await?
    });
    Ok(found.into_iter().collect())
}

/// The tenant of the token named `name`, revoked or not.
pub async fn tenant_of(db: &Database, name: &str) -> anyhow::Result<Option<String>> {
    let found: Option<(String,)> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(d, "SELECT tenant FROM tokens WHERE name = $1"))
            .bind(name)
            .fetch_optional(pool)
            .await?
    });
    Ok(found.map(|(tenant,)| tenant))
}

/// The names `BINDERY_ADMIN_TOKEN`'s admin takes, in order: the first one free.
const FIRST_ADMIN_NAMES: [&str; 4] = ["admin", "admin-2", "admin-3", "admin-4"];

/// What `BINDERY_ADMIN_TOKEN` did at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FirstAdmin {
    /// No admin token was live: the value became the admin token of this name.
    Made { name: String },
    /// The value is already the live admin token of this name (a restart before it was
    /// rotated away).
    Live { name: String },
    /// Another admin token is live, so the value is not used.
    Ignored,
    /// The value is the token of this name, revoked (or never an admin's): it is never made
    /// an admin, nor brought back.
    Refused { name: String, revoked: bool },
}

/// Makes `token` (the value of `BINDERY_ADMIN_TOKEN`) the first admin token, stored hashed like
/// every token, while no admin token is live; says what it did. Safe to run from any number of
/// processes at once: the insert happens only while no live admin exists, and the unique hash
/// lets one of two concurrent starts win.
#[tracing::instrument(skip_all)]
pub async fn ensure_first_admin(
    db: &Database,
    token: &Secret<String>,
) -> anyhow::Result<FirstAdmin> {
    let hash = hash(token.expose());
    for name in FIRST_ADMIN_NAMES {
        if let Some(found) = holder_of(db, &hash).await? {
            return Ok(found);
        }
        let webhook_secret = generate_webhook_secret();
        let inserted = on_pool!(db, |pool, d| {
            sqlx::query(sql!(
                d,
                "INSERT INTO tokens (name, tenant, hash, admin, created_at, webhook_secret)
                 SELECT $1, $1, $2, $3, {now}, $4
                 WHERE NOT EXISTS (SELECT 1 FROM tokens WHERE admin AND revoked_at IS NULL)
                 ON CONFLICT DO NOTHING"
            ))
            .bind(name)
            .bind(&hash)
            .bind(true)
            .bind(webhook_secret.expose())
            .execute(pool)
            .await
            .context("storing the first admin token")?
            .rows_affected()
        });
        if inserted == 1 {
            return Ok(FirstAdmin::Made {
                name: name.to_owned(),
            });
        }
        if live_admin_exists(db).await? {
            // Made by another process starting at the same time, with this value or not.
            return Ok(holder_of(db, &hash).await?.unwrap_or(FirstAdmin::Ignored));
        }
        // The name is taken by a tenant's token: the next one.
    }
    anyhow::bail!(
        "BINDERY_ADMIN_TOKEN could not make the first admin: the names {} are all taken by other tokens",
        FIRST_ADMIN_NAMES.join(", ")
    )
}

/// What the token with this hash is, if there is one.
async fn holder_of(db: &Database, hash: &str) -> anyhow::Result<Option<FirstAdmin>> {
    let found: Option<(String, bool, bool)> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT name, admin, revoked_at IS NOT NULL FROM tokens WHERE hash = $1"
        ))
        .bind(hash)
        .fetch_optional(pool)
        .await?
    });
    Ok(found.map(|(name, admin, revoked)| match (admin, revoked) {
        (true, false) => FirstAdmin::Live { name },
        _ => FirstAdmin::Refused { name, revoked },
    }))
}

async fn live_admin_exists(db: &Database) -> anyhow::Result<bool> {
    let (live,): (i64,) = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT COUNT(*) FROM tokens WHERE admin AND revoked_at IS NULL"
        ))
        .fetch_one(pool)
        .await?
    });
    Ok(live > 0)
}

/// Runs [`ensure_first_admin`] when `BINDERY_ADMIN_TOKEN` is set, and logs what it did and
/// what to do next (never the token). A failure is logged, not returned: the service runs on
/// without a first admin rather than not at all.
pub async fn first_admin_at_start(db: &Database, config: &crate::config::Config) {
    let Some(token) = &config.admin_token else {
        return;
    };
    let outcome = match ensure_first_admin(db, token).await {
        Ok(outcome) => outcome,
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "BINDERY_ADMIN_TOKEN could not make the first admin");
            return;
        }
    };
    match outcome {
        FirstAdmin::Made { name } => tracing::warn!(
            token.name = %name,
            "BINDERY_ADMIN_TOKEN is now the admin token {name:?}: sign in with it, make an admin token of your own on the Tokens page, revoke {name:?} and unset BINDERY_ADMIN_TOKEN"
        ),
        FirstAdmin::Live { name } => tracing::warn!(
            token.name = %name,
            "BINDERY_ADMIN_TOKEN is still the live admin token {name:?}; once you have an admin token of your own, revoke {name:?} and unset BINDERY_ADMIN_TOKEN"
        ),
        FirstAdmin::Ignored => {
            tracing::warn!("BINDERY_ADMIN_TOKEN is ignored: admin tokens exist already; unset it")
        }
        FirstAdmin::Refused {
            name,
            revoked: true,
        } => tracing::warn!(
            token.name = %name,
            "BINDERY_ADMIN_TOKEN is the revoked token {name:?}, which is never brought back; unset it (or, with no admin token left, set a new value to make a new first admin)"
        ),
        FirstAdmin::Refused {
            name,
            revoked: false,
        } => tracing::warn!(
            token.name = %name,
            "BINDERY_ADMIN_TOKEN is the token of {name:?}, which is not an admin's, and is left as it is; unset it"
        ),
    }
}

/// Why an admin could not revoke a token through the API.
#[derive(Debug, thiserror::Error)]
pub enum RevokeError {
    #[error("there is no token named {0:?}")]
    NotFound(String),
    #[error(
        "{0:?} is the last live admin token: create another admin token first, or nobody could reach the admin pages again"
    )]
    LastAdmin(String),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Revokes the token named `name`, unless it is the last live admin token (which would leave a
/// host without a shell with no way back in). Revoking a revoked token changes nothing. Two
/// admins revoking each other's tokens at the same moment on PostgreSQL could both pass the
/// check; `BINDERY_ADMIN_TOKEN` with a new value is the way back then.
#[tracing::instrument(skip(db))]
pub async fn revoke_unless_last_admin(db: &Database, name: &str) -> Result<TokenInfo, RevokeError> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE tokens SET revoked_at = COALESCE(revoked_at, {now})
             WHERE name = $1
               AND (NOT admin OR revoked_at IS NOT NULL OR EXISTS (
                    SELECT 1 FROM tokens other
                    WHERE other.admin AND other.revoked_at IS NULL AND other.name <> $1))"
        ))
        .bind(name)
        .execute(pool)
        .await
        .context("revoking a token")?;
    });
    let Some(info) = info(db, name).await? else {
        return Err(RevokeError::NotFound(name.to_owned()));
    };
    if info.revoked_at.is_none() {
        return Err(RevokeError::LastAdmin(name.to_owned()));
    }
    Ok(info)
}

/// One token as listed, revoked or not.
pub async fn info(db: &Database, name: &str) -> anyhow::Result<Option<TokenInfo>> {
    Ok(on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT name, admin, created_at, last_used_at, revoked_at
             FROM tokens WHERE name = $1"
        ))
        .bind(name)
        .fetch_optional(pool)
        .await?
    }))
}

/// A new webhook signing secret, made like a token. A token row still gets one, which its
/// tenant's row takes over on first use (`tenants`), as the previous release read it there.
pub(crate) fn generate_webhook_secret() -> Secret<String> {
    Secret::new(new_secret(WEBHOOK_SECRET_PREFIX))
}

/// A new token.
fn generate() -> String {
    new_secret(PREFIX)
}

/// A new secret of the kind `prefix` names (a token, a webhook secret, an invitation's or an
/// advance-reader link's): the prefix and [`SECRET_BYTES`] from the operating system's
/// CSPRNG-seeded thread generator, in lowercase hex. Only its [`hash`] is ever stored, but for
/// webhook secrets, which Bindery signs with.
pub(crate) fn new_secret(prefix: &str) -> String {
    let mut secret = [0u8; SECRET_BYTES];
    rand::fill(&mut secret);
    format!("{prefix}{}", hex::encode(secret))
}

/// Whether `value` has the shape [`new_secret`] gives secrets of the kind `prefix` names, so
/// that anything else is refused before it reaches the database.
pub(crate) fn secret_shaped(value: &str, prefix: &str) -> bool {
    value.strip_prefix(prefix).is_some_and(|secret| {
        secret.len() == SECRET_BYTES * 2
            && secret
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// What is stored: the token's SHA-256 in lowercase hex.
pub(crate) fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Whether `token` has the shape of one this module makes, or of a first admin's chosen in
/// `BINDERY_ADMIN_TOKEN`.
fn well_formed(token: &str) -> bool {
    made_here(token) || crate::config::variables::chosen_token_shape(token)
}

/// Whether `token` has the shape of one this module makes.
fn made_here(token: &str) -> bool {
    secret_shaped(token, PREFIX)
}

/// A new token's name (also its tenant's): 1 to 64 ASCII letters, digits, `-`, `_` or `.`,
/// beginning and ending with a letter or digit. Not `.`, `..` or `-rf`: a tenant's name
/// appears in paths, commands and folders.
pub fn valid_name(name: &str) -> bool {
    stored_name(name)
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric())
}

/// A name as a token may have been stored under any rule Bindery has had: 1 to 64 ASCII
/// letters, digits, `-`, `_` or `.`. Tenants made before names had to begin and end with a
/// letter or digit keep their books.
pub fn stored_name(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_well_formed_and_distinct() {
        let a = generate();
        let b = generate();
        assert_eq!(a.len(), PREFIX.len() + 64);
        assert!(a.starts_with("bdy_"), "{a}");
        assert!(made_here(&a), "{a}");
        assert!(made_here(&b), "{b}");
        assert_ne!(a, b);
    }

    #[test]
    fn webhook_secrets_are_distinct_and_not_tokens() {
        let a = generate_webhook_secret();
        let b = generate_webhook_secret();
        assert_eq!(a.expose().len(), WEBHOOK_SECRET_PREFIX.len() + 64);
        assert!(a.expose().starts_with("whsec_"));
        assert!(!made_here(a.expose()));
        assert_ne!(a.expose(), b.expose());
        assert_eq!(format!("{a:?}"), "[redacted]");
    }

    #[test]
    fn malformed_tokens_are_refused() {
        let good = format!("bdy_{}", "0123456789abcdef".repeat(4));
        assert!(made_here(&good));
        for bad in [
            String::new(),
            "bdy_".to_owned(),
            good.replacen("bdy_", "bdx_", 1),
            good.replacen("bdy_", "BDY_", 1),
            good.to_uppercase(),
            good[..good.len() - 1].to_owned(),
            format!("{good}0"),
            format!("{}g", &good[..good.len() - 1]),
            format!(" {}", &good[..good.len() - 1]),
            format!("Bearer {good}"),
            // A multi-byte character where a hex digit should be, with the same byte length.
            format!("{}é", &good[..good.len() - 2]),
        ] {
            assert!(!made_here(&bad), "{bad:?} passed");
        }
    }

    #[test]
    fn a_chosen_admin_token_reaches_the_lookup_and_junk_does_not() {
        // BINDERY_ADMIN_TOKEN's value is looked up as it is, whatever its alphabet.
        assert!(well_formed(&"0123456789abcdef".repeat(4)));
        assert!(well_formed("q3Zx8+Rk2mP/0vT6yHc1nW4bJ9eL5sA7dF2gK8uQ1oE="));
        let made = generate();
        for junk in [
            "",
            "short",
            &format!("Bearer {}", "a".repeat(40)),
            &"a".repeat(257),
            // A token Bindery made, mangled: never a chosen one.
            &made.to_uppercase(),
            &made[..made.len() - 1],
            &format!("{made}0"),
        ] {
            assert!(!well_formed(junk), "{junk:?} passed");
        }
    }

    #[test]
    fn the_hash_is_lowercase_hex_sha256() {
        // SHA-256 of "abc", from FIPS 180-2.
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn names_are_short_and_plain() {
        for good in ["alice", "a", "Team-7_x.y", &"n".repeat(64)] {
            assert!(valid_name(good), "{good:?} refused");
        }
        for bad in [
            "",
            &"n".repeat(65),
            "has space",
            "slash/name",
            "émile",
            "tab\t",
            "semi;colon",
            ".",
            "..",
            "-rf",
            "_hidden",
            "trailing.",
        ] {
            assert!(!valid_name(bad), "{bad:?} accepted");
        }
        // A tenant named under the old rule keeps its books.
        for old in [".", "..", "-rf", "trailing."] {
            assert!(stored_name(old), "{old:?}");
        }
    }

    #[test]
    fn errors_say_what_to_do() {
        let bad = TokenError::BadName("a b".into()).to_string();
        assert!(
            bad.contains("\"a b\"") && bad.contains("letters, digits"),
            "{bad}"
        );
        let exists = TokenError::Exists("alice".into()).to_string();
        assert!(exists.contains("choose another name"), "{exists}");
    }
}
