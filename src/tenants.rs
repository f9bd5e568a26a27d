//! Tenants (imprints): what belongs to a tenant rather than to one of its tokens or accounts,
//! which today is its webhook signing secrets (kept in clear, because Bindery signs with them;
//! readable again by the tenant through the API, by an operator with `bindery token secret`,
//! and never logged).
//!
//! A tenant's row is made on first use, for any tenant that has a token or an account: an
//! imprint made by an invitation alone has one as surely as a token's. A tenant from before
//! this table carries over the secrets its oldest token held, so its receivers notice nothing.

use crate::config::Secret;
use crate::storage::Database;

/// What a tenant's webhooks are signed with: the current secret and, for a while after a
/// rotation, the one before it.
pub struct SigningSecrets {
    pub current: Secret<String>,
    /// The previous secret and until when (unix milliseconds) it signs too.
    pub previous: Option<(Secret<String>, i64)>,
}

impl SigningSecrets {
    /// Every secret a delivery is signed with, current first.
    pub fn all(&self) -> Vec<&str> {
        std::iter::once(self.current.expose().as_str())
            .chain(self.previous.iter().map(|(s, _)| s.expose().as_str()))
            .collect()
    }
}

/// The secret `tenant`'s webhooks are signed with, or `None` for a tenant with neither a token
/// nor an account.
pub async fn webhook_secret(db: &Database, tenant: &str) -> anyhow::Result<Option<Secret<String>>> {
    Ok(webhook_secrets(db, tenant).await?.map(|s| s.current))
}

/// `tenant`'s signing secrets, or `None` for a tenant with neither a token nor an account.
#[tracing::instrument(skip(db), level = "debug")]
pub async fn webhook_secrets(
    db: &Database,
    tenant: &str,
) -> anyhow::Result<Option<SigningSecrets>> {
    if let Some(found) = stored(db, tenant).await? {
        return Ok(Some(found));
    }
    let fresh = crate::tokens::generate_webhook_secret();
    // The oldest token's secrets when it has them (a tenant from before this table), else a
    // new one; concurrent first uses agree on whichever row is made first.
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "INSERT INTO tenants (name, created_at, webhook_secret,
                                  previous_webhook_secret, previous_webhook_secret_until)
             SELECT $1, {now},
                    COALESCE((SELECT webhook_secret FROM tokens WHERE tenant = $1
                              ORDER BY created_at, name LIMIT 1), $2),
                    (SELECT previous_webhook_secret FROM tokens WHERE tenant = $1
                     ORDER BY created_at, name LIMIT 1),
                    (SELECT previous_webhook_secret_until FROM tokens WHERE tenant = $1
                     ORDER BY created_at, name LIMIT 1)
             WHERE EXISTS (SELECT 1 FROM tokens WHERE tenant = $1)
                OR EXISTS (SELECT 1 FROM accounts WHERE tenant = $1)
             ON CONFLICT (name) DO NOTHING"
        ))
        .bind(tenant)
        .bind(fresh.expose())
        .execute(pool)
        .await?;
    });
    stored(db, tenant).await
}

/// The tenant's secrets as its row holds them, the previous one only while it still signs.
async fn stored(db: &Database, tenant: &str) -> anyhow::Result<Option<SigningSecrets>> {
    type Row = (String, Option<String>, Option<i64>);
    let found: Option<Row> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT webhook_secret,
                    CASE WHEN previous_webhook_secret_until > {now}
                         THEN previous_webhook_secret END,
                    CASE WHEN previous_webhook_secret_until > {now}
                         THEN previous_webhook_secret_until END
             FROM tenants WHERE name = $1"
        ))
        .bind(tenant)
        .fetch_optional(pool)
        .await?
    });
    Ok(found.map(|(current, previous, until)| SigningSecrets {
        current: Secret::new(current),
        previous: previous
            .zip(until)
            .map(|(s, until)| (Secret::new(s), until)),
    }))
}

/// Gives `tenant` a new webhook secret. The old one keeps signing alongside it for `overlap`
/// (none when zero), so receivers can move to the new one without refusing an event. `None`
/// for a tenant with neither a token nor an account.
pub async fn rotate_webhook_secret(
    db: &Database,
    tenant: &str,
    overlap: std::time::Duration,
) -> anyhow::Result<Option<SigningSecrets>> {
    // A tenant without its row yet gets it first, and its secret becomes the previous one.
    if webhook_secrets(db, tenant).await?.is_none() {
        return Ok(None);
    }
    let fresh = crate::tokens::generate_webhook_secret();
    let overlap_ms = i64::try_from(overlap.as_millis()).unwrap_or(i64::MAX / 2);
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE tenants SET previous_webhook_secret = webhook_secret,
                    previous_webhook_secret_until = {now} + $3, webhook_secret = $2
             WHERE name = $1"
        ))
        .bind(tenant)
        .bind(fresh.expose())
        .bind(overlap_ms)
        .execute(pool)
        .await?;
    });
    tracing::info!(
        tenant,
        overlap_s = overlap.as_secs(),
        "webhook secret rotated"
    );
    stored(db, tenant).await
}
