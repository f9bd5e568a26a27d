//! People. An account is a person in a tenant (an imprint), with a role and the credentials
//! they sign in with: passkeys (`passkeys`), a password (`passwords`, if the operator allows
//! them) with an optional TOTP second factor (`totp`). People join by invitation
//! (`invitations`); the first admin still comes from `BINDERY_ADMIN_TOKEN`, and makes their
//! account by inviting themselves.
//!
//! Roles, written down once here:
//! - `admin`: the whole installation (the admin pages, every tenant's people and invitations),
//!   and the books of their own tenant, as an admin token does;
//! - `owner`: their tenant: its books, its people (invite, disable) and its invitations;
//! - `author`: their tenant's books (upload, revise, style, advance-reader links), and their own
//!   account.
//!
//! An account is never deleted: disabling it ends its sessions and tokens at once and keeps its
//! address taken, so nobody else signs up as that person by mistake.

pub mod ceremonies;
pub mod invitations;
pub mod mail;
pub mod passkeys;
pub mod passwords;
pub mod role;
pub mod single_sign_on;
pub mod throttle;
pub mod totp;

use anyhow::Context as _;
use sqlx::FromRow;

pub use role::Role;

use crate::storage::Database;

/// Longest display name.
pub const MAX_NAME_CHARS: usize = 100;
/// Longest email address (RFC 5321's path limit).
pub const MAX_EMAIL_LEN: usize = 254;

/// An account as stored, without its secrets.
#[derive(Debug, Clone, FromRow)]
pub struct Account {
    pub id: String,
    pub tenant: String,
    pub name: String,
    pub email: String,
    #[sqlx(try_from = "String")]
    pub role: Role,
    pub created_at: i64,
    pub disabled_at: Option<i64>,
    /// Whether a password is set (the hash itself is only read to check one).
    pub has_password: bool,
    /// Whether a TOTP second factor is set.
    pub has_totp: bool,
}

/// The columns [`Account`] reads, in one place.
macro_rules! account_columns {
    () => {
        "id, tenant, name, email, role, created_at, disabled_at,
         (password_hash IS NOT NULL) AS has_password, (totp_secret IS NOT NULL) AS has_totp"
    };
}

/// What a person typed as their details, checked.
#[derive(Debug, Clone)]
pub struct Details {
    pub name: String,
    pub email: String,
}

/// Why details were refused: each names the field and what to do.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DetailsError {
    #[error("Enter your name (up to {MAX_NAME_CHARS} characters).")]
    Name,
    #[error(
        "Enter an email address such as ann@example.com (up to {MAX_EMAIL_LEN} characters, no spaces)."
    )]
    Email,
    #[error(
        "That email address already belongs to an account here. Sign in with it instead, or use another address."
    )]
    EmailTaken,
}

impl Details {
    /// Checks and tidies what was typed: surrounding spaces go, and the address must look like
    /// one (something, an `@`, a domain with a dot); only the mail that reaches it proves more.
    pub fn new(name: &str, email: &str) -> Result<Details, DetailsError> {
        let name = name.trim();
        if name.is_empty()
            || name.chars().count() > MAX_NAME_CHARS
            || name.chars().any(char::is_control)
        {
            return Err(DetailsError::Name);
        }
        let email = email.trim();
        if !plausible_email(email) {
            return Err(DetailsError::Email);
        }
        Ok(Details {
            name: name.to_owned(),
            email: email.to_owned(),
        })
    }
}

fn plausible_email(email: &str) -> bool {
    let Some((local, domain)) = email.rsplit_once('@') else {
        return false;
    };
    email.len() <= MAX_EMAIL_LEN
        && !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !email
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | ',' | ';'))
}

/// The key an address is found by: one person whatever letter case they type.
pub fn email_key(email: &str) -> String {
    email.trim().to_lowercase()
}

/// The account with this id, disabled or not.
pub async fn by_id(db: &Database, id: &str) -> anyhow::Result<Option<Account>> {
    Ok(on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            concat!(
                "SELECT ",
                account_columns!(),
                " FROM accounts WHERE id = $1"
            )
        ))
        .bind(id)
        .fetch_optional(pool)
        .await?
    }))
}

/// The account with this address, disabled or not: an address is one person's for good.
pub async fn by_email_any(db: &Database, email: &str) -> anyhow::Result<Option<Account>> {
    Ok(on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            concat!(
                "SELECT ",
                account_columns!(),
                " FROM accounts WHERE email_key = $1"
            )
        ))
        .bind(email_key(email))
        .fetch_optional(pool)
        .await?
    }))
}

/// The live account that signs in with single sign-on identity `key` (`ISSUER SUBJECT`).
pub async fn by_sign_on(db: &Database, key: &str) -> anyhow::Result<Option<Account>> {
    Ok(on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            concat!(
                "SELECT ",
                account_columns!(),
                " FROM accounts WHERE oidc_subject = $1 AND disabled_at IS NULL"
            )
        ))
        .bind(key)
        .fetch_optional(pool)
        .await?
    }))
}

/// Lets account `id` sign in with single sign-on identity `key` from now on, unless it has one
/// already (an account keeps the identity it first signed in with). Returns whether it is now
/// that account's.
pub async fn link_sign_on(db: &Database, id: &str, key: &str) -> anyhow::Result<bool> {
    let changed = on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE accounts SET oidc_subject = $2
             WHERE id = $1 AND oidc_subject IS NULL
               AND NOT EXISTS (SELECT 1 FROM accounts other WHERE other.oidc_subject = $2)"
        ))
        .bind(id)
        .bind(key)
        .execute(pool)
        .await?
        .rows_affected()
    });
    Ok(changed == 1)
}

/// The accounts of `tenant`, or of every tenant for `None`, oldest first.
pub async fn list(db: &Database, tenant: Option<&str>) -> anyhow::Result<Vec<Account>> {
    Ok(on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            concat!(
                "SELECT ",
                account_columns!(),
                " FROM accounts WHERE ($1 IS NULL OR tenant = $1) ORDER BY created_at, id"
            )
        ))
        .bind(tenant)
        .fetch_all(pool)
        .await?
    }))
}

/// A new account's id: a random UUID, which is also its WebAuthn user handle (chosen before the
/// account exists when its first credential is a passkey).
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Makes account `id` inside `tx` (an invitation's acceptance, which must count its use in the
/// same transaction), or says the address is taken.
pub(crate) async fn insert(
    tx: &mut crate::storage::Tx,
    id: &str,
    tenant: &str,
    role: Role,
    details: &Details,
    password_hash: Option<&str>,
    sign_on: Option<&str>,
) -> anyhow::Result<Result<(), DetailsError>> {
    let inserted = on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "INSERT INTO accounts
                (id, tenant, name, email, email_key, role, password_hash, oidc_subject, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, {now})
             ON CONFLICT (email_key) DO NOTHING"
        ))
        .bind(id)
        .bind(tenant)
        .bind(&details.name)
        .bind(&details.email)
        .bind(email_key(&details.email))
        .bind(role.as_str())
        .bind(password_hash)
        .bind(sign_on)
        .execute(&mut *conn)
        .await
        .context("storing a new account")?
        .rows_affected()
    });
    Ok(if inserted == 1 {
        Ok(())
    } else {
        Err(DetailsError::EmailTaken)
    })
}

/// The live account with this address and its password hash, in one query: a sign-in for an
/// address nobody has does the same work as one for an address somebody has.
pub async fn for_password(
    db: &Database,
    email: &str,
) -> anyhow::Result<Option<(Account, Option<String>)>> {
    #[derive(FromRow)]
    struct Row {
        #[sqlx(flatten)]
        account: Account,
        password_hash: Option<String>,
    }
    let found: Option<Row> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            concat!(
                "SELECT ",
                account_columns!(),
                ", password_hash FROM accounts WHERE email_key = $1 AND disabled_at IS NULL"
            )
        ))
        .bind(email_key(email))
        .fetch_optional(pool)
        .await?
    });
    Ok(found.map(|row| (row.account, row.password_hash)))
}

/// Sets (or changes) an account's password, already hashed, and ends the other sessions it
/// signed in: whoever knew the old one is out. `keep` is the session (its cookie value's hash)
/// of the person changing it, which stays.
pub async fn set_password(db: &Database, id: &str, hash: &str, keep: &str) -> anyhow::Result<()> {
    let mut tx = db.begin().await.context("setting a password")?;
    on_tx!(&mut tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "UPDATE accounts SET password_hash = $2 WHERE id = $1"
        ))
        .bind(id)
        .bind(hash)
        .execute(&mut *conn)
        .await?;
        sqlx::query(sql!(
            d,
            "DELETE FROM sessions WHERE account_id = $1 AND credential = 'password' AND hash <> $2"
        ))
        .bind(id)
        .bind(keep)
        .execute(&mut *conn)
        .await?;
    });
    tx.commit().await.context("setting a password")?;
    Ok(())
}

/// Disables an account: its sessions end and its tokens are revoked in the same transaction,
/// so nothing it held goes on working. Returns whether a live account was disabled.
pub async fn disable(db: &Database, id: &str) -> anyhow::Result<bool> {
    let mut tx = db.begin().await.context("disabling an account")?;
    let changed = on_tx!(&mut tx, |conn, d| {
        let changed = sqlx::query(sql!(
            d,
            "UPDATE accounts SET disabled_at = {now} WHERE id = $1 AND disabled_at IS NULL"
        ))
        .bind(id)
        .execute(&mut *conn)
        .await?
        .rows_affected();
        sqlx::query(sql!(d, "DELETE FROM sessions WHERE account_id = $1"))
            .bind(id)
            .execute(&mut *conn)
            .await?;
        sqlx::query(sql!(
            d,
            "UPDATE tokens SET revoked_at = COALESCE(revoked_at, {now}) WHERE account_id = $1"
        ))
        .bind(id)
        .execute(&mut *conn)
        .await?;
        changed
    });
    tx.commit().await.context("disabling an account")?;
    Ok(changed == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_are_tidied_and_checked() {
        let d = Details::new("  Ann Lee ", " Ann@Example.com ").unwrap();
        assert_eq!(d.name, "Ann Lee");
        assert_eq!(d.email, "Ann@Example.com");
        assert_eq!(email_key(&d.email), "ann@example.com");
        assert_eq!(Details::new("", "a@b.c").unwrap_err(), DetailsError::Name);
        assert_eq!(
            Details::new("x\u{7}", "a@b.c").unwrap_err(),
            DetailsError::Name
        );
        for bad in [
            "",
            "ann",
            "ann@",
            "@example.com",
            "ann@example",
            "ann@.com",
            "ann @example.com",
            "a<b>@example.com",
            &format!("{}@example.com", "a".repeat(250)),
        ] {
            assert_eq!(
                Details::new("Ann", bad).unwrap_err(),
                DetailsError::Email,
                "{bad:?}"
            );
        }
    }
}
