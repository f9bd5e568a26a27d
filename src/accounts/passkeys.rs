//! Passkeys: WebAuthn credentials, through `webauthn-rs`. A person may have several, each with
//! a name they chose ("MacBook", "YubiKey"), added and removed on their own page.
//!
//! Passkeys are made discoverable (a resident key, as every platform's passkey is), so signing
//! in asks for no address first: the browser offers the person's passkeys for this site, and the
//! one chosen names its account. No answer can then tell whether an address has an account.
//!
//! The relying party is the site's own address: `APP_URL` when set, else the address the
//! browser used. A passkey is bound to that host name, so moving the service to another name
//! means signing in there with a password, single sign-on or a token, and adding passkeys anew.

use anyhow::Context as _;
use base64::Engine as _;
use url::Url;
use webauthn_rs::prelude::{
    AuthenticationResult, CreationChallengeResponse, DiscoverableAuthentication, Passkey,
    PasskeyRegistration, PublicKeyCredential, RegisterPublicKeyCredential,
    RequestChallengeResponse, Uuid,
};
use webauthn_rs::{Webauthn, WebauthnBuilder};

use crate::storage::Database;

/// Longest name of a passkey.
pub const MAX_NAME_CHARS: usize = 60;

/// A passkey as listed on its owner's page.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PasskeyInfo {
    pub id: String,
    pub name: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

/// Why a passkey ceremony failed, as the person is told.
#[derive(Debug, thiserror::Error)]
pub enum PasskeyError {
    #[error(
        "This site's address ({0}) cannot hold passkeys: browsers allow them on https, or on http://localhost. Open Bindery at its https address."
    )]
    Origin(String),
    #[error("The passkey was not accepted ({0}). Try again, or use another passkey.")]
    Refused(String),
    #[error(
        "That passkey is not known here: it may have been removed, or made for another site. Sign in another way, or use another passkey."
    )]
    Unknown,
    #[error(
        "Give the passkey a name of 1 to {MAX_NAME_CHARS} characters, so you can tell it apart."
    )]
    Name,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// The relying party for a site at `origin` (scheme, host and port).
pub fn relying_party(origin: &Url) -> Result<Webauthn, PasskeyError> {
    let host = origin
        .host_str()
        .filter(|h| h.parse::<std::net::IpAddr>().is_err() && !h.starts_with('['))
        .ok_or_else(|| PasskeyError::Origin(origin.to_string()))?;
    let secure = origin.scheme() == "https" || host == "localhost";
    if !secure {
        return Err(PasskeyError::Origin(origin.to_string()));
    }
    WebauthnBuilder::new(host, origin)
        .and_then(|b| b.rp_name("Bindery").build())
        .map_err(|e| PasskeyError::Origin(format!("{origin} ({e})")))
}

/// Checks a passkey's name.
pub fn valid_name(name: &str) -> Result<String, PasskeyError> {
    let name = name.trim();
    if name.is_empty()
        || name.chars().count() > MAX_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(PasskeyError::Name);
    }
    Ok(name.to_owned())
}

/// Starts registering a passkey for account `account` (which may not exist yet: an invitation
/// makes it when the passkey is done), leaving out the passkeys it has.
pub fn start_registration(
    rp: &Webauthn,
    account: &str,
    email: &str,
    name: &str,
    existing: &[Passkey],
) -> Result<(serde_json::Value, PasskeyRegistration), PasskeyError> {
    let user = Uuid::parse_str(account).context("an account id that is not a UUID")?;
    let exclude =
        (!existing.is_empty()).then(|| existing.iter().map(|p| p.cred_id().clone()).collect());
    let (challenge, state) = rp
        .start_passkey_registration(user, email, name, exclude)
        .map_err(|e| PasskeyError::Refused(e.to_string()))?;
    Ok((discoverable(&challenge)?, state))
}

/// The options the browser gets, asking for a discoverable credential, so that signing in needs
/// no address (the module's comment). The library asks for none, and does not export the type
/// that says so; the verification of the answer does not depend on it.
fn discoverable(challenge: &CreationChallengeResponse) -> anyhow::Result<serde_json::Value> {
    let mut options = serde_json::to_value(challenge)?;
    let selection = options
        .pointer_mut("/publicKey/authenticatorSelection")
        .and_then(serde_json::Value::as_object_mut)
        .context("registration options without an authenticator selection")?;
    selection.insert("residentKey".into(), "required".into());
    selection.insert("requireResidentKey".into(), true.into());
    Ok(options)
}

/// Checks the browser's answer to a registration.
pub fn finish_registration(
    rp: &Webauthn,
    answer: &RegisterPublicKeyCredential,
    state: &PasskeyRegistration,
) -> Result<Passkey, PasskeyError> {
    rp.finish_passkey_registration(answer, state)
        .map_err(|e| PasskeyError::Refused(e.to_string()))
}

/// Starts a sign-in with any of this site's passkeys.
pub fn start_sign_in(
    rp: &Webauthn,
) -> Result<(RequestChallengeResponse, DiscoverableAuthentication), PasskeyError> {
    let (mut challenge, state) = rp
        .start_discoverable_authentication()
        .map_err(|e| PasskeyError::Refused(e.to_string()))?;
    // A button starts it, not the address field's autofill.
    challenge.mediation = None;
    Ok((challenge, state))
}

/// Checks the browser's answer to a sign-in: the passkey it names, its account, and its
/// signature. Returns the account's id and the passkey's. The passkey's counter is stored.
pub async fn finish_sign_in(
    db: &Database,
    rp: &Webauthn,
    answer: &PublicKeyCredential,
    state: DiscoverableAuthentication,
) -> Result<(String, String), PasskeyError> {
    let (user, credential) = rp
        .identify_discoverable_authentication(answer)
        .map_err(|_| PasskeyError::Unknown)?;
    let id = encode_id(credential);
    let Some((account, mut passkey)) = find(db, &id).await? else {
        return Err(PasskeyError::Unknown);
    };
    if account != user.to_string() {
        return Err(PasskeyError::Unknown);
    }
    let result = rp
        .finish_discoverable_authentication_v2(answer, state, &passkey)
        .map_err(|e| PasskeyError::Refused(e.to_string()))?;
    record_use(db, &id, &mut passkey, &result).await?;
    Ok((account, id))
}

fn encode_id(id: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id)
}

/// A passkey's stored id.
pub fn id_of(passkey: &Passkey) -> String {
    encode_id(passkey.cred_id().as_ref())
}

/// Stores `passkey` for `account` inside `tx`.
pub(crate) async fn insert(
    tx: &mut crate::storage::Tx,
    account: &str,
    name: &str,
    passkey: &Passkey,
) -> anyhow::Result<()> {
    let json = serde_json::to_string(passkey)?;
    on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "INSERT INTO passkeys (id, account_id, name, passkey, created_at)
             VALUES ($1, $2, $3, $4, {now})"
        ))
        .bind(id_of(passkey))
        .bind(account)
        .bind(name)
        .bind(json)
        .execute(&mut *conn)
        .await
        .context("storing a passkey")?;
    });
    Ok(())
}

/// Adds a passkey to an existing, live account.
pub async fn add(
    db: &Database,
    account: &str,
    name: &str,
    passkey: &Passkey,
) -> anyhow::Result<()> {
    let mut tx = db.begin().await.context("adding a passkey")?;
    insert(&mut tx, account, name, passkey).await?;
    tx.commit().await.context("adding a passkey")?;
    Ok(())
}

/// An account's passkeys as listed, oldest first.
pub async fn list(db: &Database, account: &str) -> anyhow::Result<Vec<PasskeyInfo>> {
    Ok(on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT id, name, created_at, last_used_at FROM passkeys
             WHERE account_id = $1 ORDER BY created_at, id"
        ))
        .bind(account)
        .fetch_all(pool)
        .await?
    }))
}

/// An account's passkeys as the library needs them (to leave out when registering another).
pub async fn credentials(db: &Database, account: &str) -> anyhow::Result<Vec<Passkey>> {
    let rows: Vec<String> = on_pool!(db, |pool, d| {
        sqlx::query_scalar(sql!(
            d,
            "SELECT passkey FROM passkeys WHERE account_id = $1"
        ))
        .bind(account)
        .fetch_all(pool)
        .await?
    });
    rows.iter()
        .map(|json| serde_json::from_str(json).context("reading a stored passkey"))
        .collect()
}

/// The passkey stored under `id`, and its live account's id.
async fn find(db: &Database, id: &str) -> anyhow::Result<Option<(String, Passkey)>> {
    let found: Option<(String, String)> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT p.account_id, p.passkey FROM passkeys p
             JOIN accounts a ON a.id = p.account_id
             WHERE p.id = $1 AND a.disabled_at IS NULL"
        ))
        .bind(id)
        .fetch_optional(pool)
        .await?
    });
    found
        .map(|(account, json)| {
            serde_json::from_str(&json)
                .map(|p| (account, p))
                .context("reading a stored passkey")
        })
        .transpose()
}

/// Stores what a sign-in changed (the signature counter, the backup state) and when.
async fn record_use(
    db: &Database,
    id: &str,
    passkey: &mut Passkey,
    result: &AuthenticationResult,
) -> anyhow::Result<()> {
    passkey.update_credential(result);
    let json = serde_json::to_string(passkey)?;
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE passkeys SET passkey = $2, last_used_at = {now} WHERE id = $1"
        ))
        .bind(id)
        .bind(json)
        .execute(pool)
        .await?;
    });
    Ok(())
}

/// Why a passkey could not be removed.
#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    #[error("There is no such passkey on your account.")]
    NotFound,
    #[error(
        "That is your only way to sign in: add another passkey or a password first, then remove this one."
    )]
    LastWayIn,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Removes one of `account`'s passkeys, and ends the sessions it signed in, unless it is the
/// account's last way in.
pub async fn remove(db: &Database, account: &str, id: &str) -> Result<(), RemoveError> {
    let mut tx = db.begin().await.context("removing a passkey")?;
    let removed = on_tx!(&mut tx, |conn, d| {
        let removed = sqlx::query(sql!(
            d,
            "DELETE FROM passkeys WHERE id = $1 AND account_id = $2
               AND (EXISTS (SELECT 1 FROM passkeys other WHERE other.account_id = $2 AND other.id <> $1)
                    OR EXISTS (SELECT 1 FROM accounts a WHERE a.id = $2 AND a.password_hash IS NOT NULL))"
        ))
        .bind(id)
        .bind(account)
        .execute(&mut *conn)
        .await
        .context("removing a passkey")?
        .rows_affected();
        if removed == 1 {
            sqlx::query(sql!(
                d,
                "DELETE FROM sessions WHERE account_id = $1 AND credential = $2"
            ))
            .bind(account)
            .bind(format!("passkey:{id}"))
            .execute(&mut *conn)
            .await
            .context("ending the passkey's sessions")?;
        }
        removed
    });
    tx.commit().await.context("removing a passkey")?;
    if removed == 1 {
        return Ok(());
    }
    let exists = list(db, account).await?.iter().any(|p| p.id == id);
    Err(if exists {
        RemoveError::LastWayIn
    } else {
        RemoveError::NotFound
    })
}
