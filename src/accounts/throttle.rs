//! How many wrong passwords (and second-factor codes) a sign-in may try: per address typed and
//! per network address, counted in the database so that every web process shares the count.
//!
//! The count for an address typed is kept whether or not an account has it, and a refusal
//! reads the same either way: the limit tells nobody which addresses are people's. Passkeys
//! and single sign-on are not counted, so someone who guesses at a person's password cannot
//! lock them out of those.

use std::time::Duration;

use crate::storage::Database;

/// Wrong tries allowed for one address typed, per window.
pub const PER_EMAIL: i64 = 5;
/// Wrong tries allowed from one network address, per window (an office shares one).
pub const PER_ADDRESS: i64 = 50;
/// The window: after it, the counts start again.
pub const WINDOW: Duration = Duration::from_secs(15 * 60);

/// What a failure is counted against.
#[derive(Debug, Clone)]
pub struct Keys {
    email: String,
    address: String,
}

impl Keys {
    pub fn new(email: &str, address: &str) -> Keys {
        Keys {
            email: format!("email:{}", super::email_key(email)),
            address: format!("address:{address}"),
        }
    }
}

fn window_ms() -> i64 {
    i64::try_from(WINDOW.as_millis()).unwrap_or(i64::MAX)
}

/// How long until another try is allowed, or `None` if one is allowed now.
pub async fn wait(db: &Database, keys: &Keys) -> anyhow::Result<Option<Duration>> {
    let rows: Vec<(String, i64, i64)> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT key, failures, window_start + $3 - {now}
             FROM sign_in_failures
             WHERE key IN ($1, $2) AND window_start > {now} - $3"
        ))
        .bind(&keys.email)
        .bind(&keys.address)
        .bind(window_ms())
        .fetch_all(pool)
        .await?
    });
    let wait = rows
        .into_iter()
        .filter(|(key, failures, _)| {
            let limit = if *key == keys.email {
                PER_EMAIL
            } else {
                PER_ADDRESS
            };
            *failures >= limit
        })
        .map(|(_, _, left)| Duration::from_millis(u64::try_from(left.max(1000)).unwrap_or(1000)))
        .max();
    Ok(wait)
}

/// Counts a wrong try against both keys: a window that has passed starts again at one.
pub async fn failed(db: &Database, keys: &Keys) -> anyhow::Result<()> {
    forget_old(db).await?;
    for key in [&keys.email, &keys.address] {
        on_pool!(db, |pool, d| {
            sqlx::query(sql!(
                d,
                "INSERT INTO sign_in_failures (key, window_start, failures) VALUES ($1, {now}, 1)
                 ON CONFLICT (key) DO UPDATE SET
                    failures = CASE WHEN sign_in_failures.window_start > {now} - $2
                                    THEN sign_in_failures.failures + 1 ELSE 1 END,
                    window_start = CASE WHEN sign_in_failures.window_start > {now} - $2
                                        THEN sign_in_failures.window_start ELSE {now} END"
            ))
            .bind(key)
            .bind(window_ms())
            .execute(pool)
            .await?;
        });
    }
    Ok(())
}

/// Forgets the failures of the address typed, once its account signed in: the person who knows
/// the password starts afresh. The network address's count stays.
pub async fn succeeded(db: &Database, keys: &Keys) -> anyhow::Result<()> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(d, "DELETE FROM sign_in_failures WHERE key = $1"))
            .bind(&keys.email)
            .execute(pool)
            .await?;
    });
    Ok(())
}

/// Drops counts whose window has passed: done with each failure, which keeps the table as small
/// as the failures of the last window without a schedule of its own.
async fn forget_old(db: &Database) -> anyhow::Result<()> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "DELETE FROM sign_in_failures WHERE window_start <= {now} - $1"
        ))
        .bind(window_ms())
        .execute(pool)
        .await?;
    });
    Ok(())
}
