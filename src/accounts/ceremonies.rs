//! What a sign-in or a registration made of several requests remembers between them: a
//! WebAuthn challenge, a password accepted and awaiting its second factor, an OpenID Connect
//! request's state, nonce and PKCE verifier. Kept in the database (any web process may take the
//! next request) under the SHA-256 of a random value that only the browser holds, in a cookie;
//! taken once, and worthless once expired.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::storage::Database;

/// What a ceremony is for: a value of one kind is never read as another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    PasskeyRegistration,
    PasskeySignIn,
    SecondFactor,
    SingleSignOn,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::PasskeyRegistration => "passkey_registration",
            Kind::PasskeySignIn => "passkey_sign_in",
            Kind::SecondFactor => "second_factor",
            Kind::SingleSignOn => "single_sign_on",
        }
    }
}

/// How long a ceremony waits for its next step: enough to find a security key or a phone.
pub const LIFETIME: Duration = Duration::from_secs(10 * 60);

/// Stores `state` and returns the value for the browser's cookie.
pub async fn begin<T: Serialize>(db: &Database, kind: Kind, state: &T) -> anyhow::Result<String> {
    let mut id = [0u8; 32];
    rand::fill(&mut id);
    let id = hex::encode(id);
    let state = serde_json::to_string(state)?;
    let lifetime = i64::try_from(LIFETIME.as_millis()).unwrap_or(i64::MAX);
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(d, "DELETE FROM ceremonies WHERE expires_at <= {now}"))
            .execute(pool)
            .await?;
        sqlx::query(sql!(
            d,
            "INSERT INTO ceremonies (hash, kind, state, expires_at) VALUES ($1, $2, $3, {now} + $4)"
        ))
        .bind(crate::tokens::hash(&id))
        .bind(kind.as_str())
        .bind(state)
        .bind(lifetime)
        .execute(pool)
        .await?;
    });
    Ok(id)
}

/// Takes the state a cookie value names, once: a second request with the same value finds
/// nothing. `None` when unknown, expired, or of another kind.
pub async fn take<T: DeserializeOwned>(
    db: &Database,
    kind: Kind,
    id: &str,
) -> anyhow::Result<Option<T>> {
    let found: Option<String> = on_pool!(db, |pool, d| {
        sqlx::query_scalar(sql!(
            d,
            "DELETE FROM ceremonies WHERE hash = $1 AND kind = $2 AND expires_at > {now}
             RETURNING state"
        ))
        .bind(crate::tokens::hash(id))
        .bind(kind.as_str())
        .fetch_optional(pool)
        .await?
    });
    found
        .map(|state| serde_json::from_str(&state).map_err(anyhow::Error::from))
        .transpose()
}
