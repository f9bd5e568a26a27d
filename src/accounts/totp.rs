//! A second factor for passwords: time-based one-time codes (RFC 6238: SHA-1, six digits, 30-second
//! steps, the one setting every authenticator app reads), one step of clock drift either way.
//! A code is accepted once: its step is stored, and a code of that step or an earlier one is
//! refused, so a code seen over someone's shoulder is already spent.
//!
//! Turning it on takes a code from the app, so a person cannot lock themselves out with a
//! secret their app never read.

use anyhow::Context as _;
use totp_rs::{Algorithm, Builder, Secret, Totp};

use crate::storage::Database;

const ISSUER: &str = "Bindery";

fn totp(secret: &str, email: &str) -> anyhow::Result<Totp> {
    let secret = Secret::try_from_base32(secret).map_err(|e| anyhow::anyhow!("{e}"))?;
    Builder::new()
        .with_algorithm(Algorithm::SHA1)
        .with_digits(6)
        .with_step_duration(30)
        .with_skew(1)
        .with_secret(secret)
        .with_account_name(email.to_owned())
        .with_issuer(Some(ISSUER))
        .build()
        .map_err(|e| anyhow::anyhow!("setting up a second factor: {e}"))
}

/// A new secret, in base32 as apps take it typed.
pub fn new_secret() -> String {
    Secret::generate().to_base32()
}

/// The `otpauth://` address an app reads (from a QR code or pasted).
pub fn app_url(secret: &str, email: &str) -> anyhow::Result<String> {
    totp(secret, email)?
        .to_url()
        .map_err(|e| anyhow::anyhow!("writing the second factor's address: {e}"))
}

/// The step `code` is valid for now, if it is one.
fn step_of(secret: &str, email: &str, code: &str) -> anyhow::Result<Option<u64>> {
    let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    Ok(totp(secret, email)?.check_current(&code))
}

/// Whether `code` is the current code of a secret not yet stored (turning the factor on).
pub fn confirms(secret: &str, email: &str, code: &str) -> anyhow::Result<bool> {
    Ok(step_of(secret, email, code)?.is_some())
}

/// Turns the second factor on for `account` with `secret`, once the app showed it has it.
pub async fn enable(db: &Database, account: &str, secret: &str) -> anyhow::Result<()> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE accounts SET totp_secret = $2, totp_step = NULL WHERE id = $1"
        ))
        .bind(account)
        .bind(secret)
        .execute(pool)
        .await
        .context("turning on a second factor")?;
    });
    Ok(())
}

/// Turns it off.
pub async fn disable(db: &Database, account: &str) -> anyhow::Result<()> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE accounts SET totp_secret = NULL, totp_step = NULL WHERE id = $1"
        ))
        .bind(account)
        .execute(pool)
        .await
        .context("turning off a second factor")?;
    });
    Ok(())
}

/// Checks a code for `account` and spends it: `true` once for each step's code.
pub async fn accept(db: &Database, account: &str, email: &str, code: &str) -> anyhow::Result<bool> {
    let secret: Option<String> = on_pool!(db, |pool, d| {
        sqlx::query_scalar(sql!(d, "SELECT totp_secret FROM accounts WHERE id = $1"))
            .bind(account)
            .fetch_optional(pool)
            .await?
            .flatten()
    });
    let Some(secret) = secret else {
        return Ok(false);
    };
    let Some(step) = step_of(&secret, email, code)? else {
        return Ok(false);
    };
    let step = i64::try_from(step).context("a time step past 2^63")?;
    // The condition spends the code: two requests with it, one wins.
    let spent = on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE accounts SET totp_step = $2
             WHERE id = $1 AND (totp_step IS NULL OR totp_step < $2)"
        ))
        .bind(account)
        .bind(step)
        .execute(pool)
        .await?
        .rows_affected()
    });
    Ok(spent == 1)
}

/// The current code of `secret`, for tests that play the app.
pub fn current_code(secret: &str) -> anyhow::Result<String> {
    Ok(totp(secret, "test@example.com")?
        .generate_current()
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_gives_codes_an_app_would_and_its_address() {
        let secret = new_secret();
        let code = current_code(&secret).unwrap();
        assert_eq!(code.len(), 6, "{code}");
        assert!(confirms(&secret, "ann@example.com", &code).unwrap());
        assert!(
            confirms(
                &secret,
                "ann@example.com",
                &format!("{} {}", &code[..3], &code[3..])
            )
            .unwrap()
        );
        assert!(!confirms(&secret, "ann@example.com", "12345").unwrap());
        let url = app_url(&secret, "ann@example.com").unwrap();
        assert!(
            url.starts_with("otpauth://totp/Bindery:ann%40example.com?"),
            "{url}"
        );
        assert!(url.contains(&format!("secret={secret}")), "{url}");
    }
}
