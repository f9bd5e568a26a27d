//! Invitations: a link that makes an account of a role in a tenant, for whoever opens it, once
//! or a set number of times, until a date, unless revoked. No mail server is needed: the person
//! who made it sends the link however they like (and Bindery mails it when SMTP is set).
//!
//! The link's secret is shown once, when the invitation is made; only its SHA-256 is kept, as
//! for tokens. An invitation also has a short public id to be listed and revoked by.

use std::time::Duration;

use anyhow::Context as _;
use sqlx::FromRow;

use super::{Details, DetailsError, Role};
use crate::storage::Database;

/// What every invitation link's secret starts with.
const PREFIX: &str = "inv_";
/// Longest an invitation may last.
pub const MAX_LIFETIME: Duration = Duration::from_secs(90 * 24 * 3600);
/// Most accounts one invitation may make.
pub const MAX_USES: i64 = 1000;
/// Longest note (who it is for).
pub const MAX_NOTE_CHARS: usize = 200;

/// An invitation as listed. Times are unix milliseconds.
#[derive(Debug, Clone, FromRow)]
pub struct Invitation {
    pub id: String,
    pub tenant: String,
    #[sqlx(try_from = "String")]
    pub role: Role,
    pub email: Option<String>,
    pub note: String,
    pub created_by: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub max_uses: i64,
    pub uses: i64,
    pub revoked_at: Option<i64>,
}

macro_rules! invitation_columns {
    () => {
        "id, tenant, role, email, note, created_by, created_at, expires_at, max_uses, uses, revoked_at"
    };
}

/// Why an invitation does not let anyone in, as the person who opened it is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "This invitation link is not known here: check that the whole link was copied, or ask for a new one."
    )]
    Unknown,
    #[error("This invitation was revoked by the person who made it. Ask them for a new one.")]
    Revoked,
    #[error("This invitation has expired. Ask the person who sent it for a new one.")]
    Expired,
    #[error(
        "This invitation has already been used as many times as it allows. If you made your account with it, sign in; otherwise ask for a new one."
    )]
    UsedUp,
}

impl Refusal {
    /// The code the API and the tests read.
    pub fn code(self) -> &'static str {
        match self {
            Refusal::Unknown => "invitation_unknown",
            Refusal::Revoked => "invitation_revoked",
            Refusal::Expired => "invitation_expired",
            Refusal::UsedUp => "invitation_used",
        }
    }
}

impl Invitation {
    /// Whether it still lets someone in at `now` (unix milliseconds), and if not why.
    pub fn usable(&self, now: i64) -> Result<(), Refusal> {
        if self.revoked_at.is_some() {
            Err(Refusal::Revoked)
        } else if self.expires_at <= now {
            Err(Refusal::Expired)
        } else if self.uses >= self.max_uses {
            Err(Refusal::UsedUp)
        } else {
            Ok(())
        }
    }
}

/// What makes a new invitation, as asked.
#[derive(Debug, Clone)]
pub struct NewInvitation {
    pub tenant: String,
    pub role: Role,
    pub email: Option<String>,
    pub note: String,
    pub lifetime: Duration,
    pub max_uses: i64,
}

/// Why an invitation could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("{0}")]
    Tenant(String),
    #[error("Choose how long the invitation lasts: from an hour to 90 days.")]
    Lifetime,
    #[error("Choose how many accounts it may make: 1 to {MAX_USES}.")]
    Uses,
    #[error("Keep the note under {MAX_NOTE_CHARS} characters.")]
    Note,
    #[error("Enter the invitee's email address as ann@example.com, or leave it empty.")]
    Email,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Makes an invitation and returns it with its link's secret, which is never shown again.
/// `by` records who made it (an account id, or `token:NAME`).
pub async fn create(
    db: &Database,
    by: &str,
    new: &NewInvitation,
) -> Result<(Invitation, String), CreateError> {
    if !crate::tokens::valid_name(&new.tenant) {
        return Err(CreateError::Tenant(format!(
            "{:?} is not a valid imprint name: use 1 to 64 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit.",
            new.tenant
        )));
    }
    if new.lifetime < Duration::from_secs(3600) || new.lifetime > MAX_LIFETIME {
        return Err(CreateError::Lifetime);
    }
    if !(1..=MAX_USES).contains(&new.max_uses) {
        return Err(CreateError::Uses);
    }
    if new.note.chars().count() > MAX_NOTE_CHARS || new.note.chars().any(char::is_control) {
        return Err(CreateError::Note);
    }
    let email = match new
        .email
        .as_deref()
        .map(str::trim)
        .filter(|e| !e.is_empty())
    {
        Some(email) => Some(
            Details::new("invitee", email)
                .map_err(|_| CreateError::Email)?
                .email,
        ),
        None => None,
    };
    let secret = crate::tokens::new_secret(PREFIX);
    let mut public = [0u8; 6];
    rand::fill(&mut public);
    let id = hex::encode(public);
    let lifetime = i64::try_from(new.lifetime.as_millis()).unwrap_or(i64::MAX);
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "INSERT INTO invitations
                (id, hash, tenant, role, email, note, created_by, created_at, expires_at, max_uses)
             VALUES ($1, $2, $3, $4, $5, $6, $7, {now}, {now} + $8, $9)"
        ))
        .bind(&id)
        .bind(crate::tokens::hash(&secret))
        .bind(&new.tenant)
        .bind(new.role.as_str())
        .bind(&email)
        .bind(new.note.trim())
        .bind(by)
        .bind(lifetime)
        .bind(new.max_uses)
        .execute(pool)
        .await
        .context("storing an invitation")?;
    });
    let invitation = by_id(db, &id)
        .await?
        .context("an invitation vanished once made")?;
    Ok((invitation, secret))
}

/// The invitation a link's secret names, usable or not, with the database's time now.
pub async fn by_secret(db: &Database, secret: &str) -> anyhow::Result<Option<(Invitation, i64)>> {
    if !well_formed(secret) {
        return Ok(None);
    }
    #[derive(FromRow)]
    struct Row {
        #[sqlx(flatten)]
        invitation: Invitation,
        now: i64,
    }
    let found: Option<Row> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            concat!(
                "SELECT ",
                invitation_columns!(),
                ", {now} AS now FROM invitations WHERE hash = $1"
            )
        ))
        .bind(crate::tokens::hash(secret))
        .fetch_optional(pool)
        .await?
    });
    Ok(found.map(|row| (row.invitation, row.now)))
}

/// The invitation a link's secret names, if it still lets someone in; else why not.
pub async fn usable(db: &Database, secret: &str) -> anyhow::Result<Result<Invitation, Refusal>> {
    Ok(match by_secret(db, secret).await? {
        None => Err(Refusal::Unknown),
        Some((invitation, now)) => invitation.usable(now).map(|()| invitation),
    })
}

async fn by_id(db: &Database, id: &str) -> anyhow::Result<Option<Invitation>> {
    Ok(on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            concat!(
                "SELECT ",
                invitation_columns!(),
                " FROM invitations WHERE id = $1"
            )
        ))
        .bind(id)
        .fetch_optional(pool)
        .await?
    }))
}

/// The first credential of the account an invitation makes.
pub enum FirstCredential<'a> {
    /// A password, already hashed.
    Password(&'a str),
    /// A passkey, registered under the account id chosen for it.
    Passkey {
        name: &'a str,
        passkey: &'a webauthn_rs::prelude::Passkey,
    },
    /// A single sign-on identity (`ISSUER SUBJECT`).
    SignOn(&'a str),
}

/// Why accepting an invitation made no account.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Details(#[from] DetailsError),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Makes account `id` with an invitation: its use is counted and the account made in one
/// transaction, so an invitation for one person makes one account however many tabs race.
/// Returns the account's tenant and role.
pub async fn accept(
    db: &Database,
    secret: &str,
    id: &str,
    details: &Details,
    credential: FirstCredential<'_>,
) -> Result<Invitation, AcceptError> {
    let invitation = usable(db, secret).await??;
    let mut tx = db.begin().await.context("accepting an invitation")?;
    let counted = on_tx!(&mut tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "UPDATE invitations SET uses = uses + 1
             WHERE hash = $1 AND revoked_at IS NULL AND expires_at > {now} AND uses < max_uses"
        ))
        .bind(crate::tokens::hash(secret))
        .execute(&mut *conn)
        .await
        .context("counting an invitation's use")?
        .rows_affected()
    });
    if counted == 0 {
        drop(tx);
        // Used up, revoked or expired between the read and now: say which.
        return Err(match usable(db, secret).await? {
            Err(refusal) => refusal.into(),
            Ok(_) => Refusal::UsedUp.into(),
        });
    }
    let (password, sign_on) = match credential {
        FirstCredential::Password(hash) => (Some(hash), None),
        FirstCredential::Passkey { .. } => (None, None),
        FirstCredential::SignOn(key) => (None, Some(key)),
    };
    super::insert(
        &mut tx,
        id,
        &invitation.tenant,
        invitation.role,
        details,
        password,
        sign_on,
    )
    .await??;
    if let FirstCredential::Passkey { name, passkey } = credential {
        super::passkeys::insert(&mut tx, id, name, passkey).await?;
    }
    tx.commit().await.context("accepting an invitation")?;
    Ok(invitation)
}

/// Invitations of `tenant`, or of every tenant for `None`, newest first.
pub async fn list(db: &Database, tenant: Option<&str>) -> anyhow::Result<Vec<Invitation>> {
    Ok(on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            concat!(
                "SELECT ",
                invitation_columns!(),
                " FROM invitations WHERE ($1 IS NULL OR tenant = $1)
                 ORDER BY created_at DESC, id"
            )
        ))
        .bind(tenant)
        .fetch_all(pool)
        .await?
    }))
}

/// Revokes invitation `id` if it belongs to `tenant` (any tenant for `None`). Returns it, or
/// `None` if there is no such invitation there. Revoking twice keeps the first time.
pub async fn revoke(
    db: &Database,
    id: &str,
    tenant: Option<&str>,
) -> anyhow::Result<Option<Invitation>> {
    let changed = on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE invitations SET revoked_at = COALESCE(revoked_at, {now})
             WHERE id = $1 AND ($2 IS NULL OR tenant = $2)"
        ))
        .bind(id)
        .bind(tenant)
        .execute(pool)
        .await?
        .rows_affected()
    });
    if changed == 0 {
        return Ok(None);
    }
    by_id(db, id).await
}

fn well_formed(secret: &str) -> bool {
    crate::tokens::secret_shaped(secret, PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invitation(uses: i64, max_uses: i64, expires_at: i64, revoked: bool) -> Invitation {
        Invitation {
            id: "abc".into(),
            tenant: "press".into(),
            role: Role::Author,
            email: None,
            note: String::new(),
            created_by: "token:admin".into(),
            created_at: 0,
            expires_at,
            max_uses,
            uses,
            revoked_at: revoked.then_some(5),
        }
    }

    #[test]
    fn an_invitation_says_why_it_cannot_be_used() {
        assert_eq!(invitation(0, 1, 100, false).usable(50), Ok(()));
        assert_eq!(
            invitation(1, 1, 100, false).usable(50),
            Err(Refusal::UsedUp)
        );
        assert_eq!(
            invitation(0, 1, 100, false).usable(100),
            Err(Refusal::Expired)
        );
        // Revoked says so, even once expired or used.
        assert_eq!(invitation(1, 1, 10, true).usable(50), Err(Refusal::Revoked));
    }

    #[test]
    fn only_secrets_of_the_right_shape_reach_the_database() {
        let good = format!("inv_{}", "0a".repeat(32));
        assert!(well_formed(&good));
        assert!(!well_formed(&good.to_uppercase()));
        assert!(!well_formed(&good[..good.len() - 1]));
        assert!(!well_formed("bdy_0000"));
    }
}
