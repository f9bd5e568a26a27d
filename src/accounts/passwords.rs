//! Passwords: argon2id with the library's defaults (OWASP's 19 MiB, two passes, one lane),
//! stored as PHC strings so that stronger parameters later still verify the old hashes.
//!
//! Hashing costs 19 MiB and tens of milliseconds by design, so it runs on the blocking pool
//! and at most [`CONCURRENT`] at a time in a process: a flood of sign-ins waits its turn rather
//! than taking the web process's memory. A sign-in for an address with no account (or none with
//! a password) verifies against a fixed hash of the same cost, so the answer takes as long.

use std::sync::LazyLock;

use argon2::Argon2;
use argon2::password_hash::{PasswordHasher as _, PasswordVerifier as _};
use tokio::sync::Semaphore;

/// Shortest password accepted.
pub const MIN_CHARS: usize = 10;
/// Longest password accepted, in bytes: past it hashing would only cost.
pub const MAX_BYTES: usize = 1024;
/// Hashes computed at once in one process.
const CONCURRENT: usize = 2;
/// zxcvbn's score a new password must reach (0 to 4): 3 is "safely unguessable: moderate
/// protection from offline slow-hash scenario".
const MIN_SCORE: zxcvbn::Score = zxcvbn::Score::Three;

static PERMITS: Semaphore = Semaphore::const_new(CONCURRENT);

/// A hash of a password nobody knows, checked against when there is no real one to check, so
/// that the time taken says nothing about the account.
static DECOY: LazyLock<String> = LazyLock::new(|| {
    let mut secret = [0u8; 32];
    rand::fill(&mut secret);
    hash_now(&hex::encode(secret)).unwrap_or_default()
});

/// Why a new password was refused, said so that the person can choose another.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PasswordError {
    #[error("Choose a password of at least {MIN_CHARS} characters.")]
    TooShort,
    #[error("That password is too long: use at most {MAX_BYTES} bytes.")]
    TooLong,
    #[error("That password is too easy to guess{0}. Add words, or use a password manager's.")]
    Weak(String),
}

/// Checks a new password: its length, and how guessable it is with what else we know of the
/// person (their name and address, which guessers try first).
pub fn check_new(password: &str, about: &[&str]) -> Result<(), PasswordError> {
    if password.chars().count() < MIN_CHARS {
        return Err(PasswordError::TooShort);
    }
    if password.len() > MAX_BYTES {
        return Err(PasswordError::TooLong);
    }
    // zxcvbn matches each input whole: "Ann Lee" alone would not catch "lee.ann".
    let words: Vec<String> = about
        .iter()
        .flat_map(|a| a.split(|c: char| !c.is_alphanumeric()))
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let estimate = zxcvbn::zxcvbn(password, &words);
    if estimate.score() < MIN_SCORE {
        let why = estimate
            .feedback()
            .and_then(|f| f.warning())
            .map(|w| format!(" ({})", w.to_string().trim_end_matches('.')))
            .unwrap_or_default();
        return Err(PasswordError::Weak(why));
    }
    Ok(())
}

fn hash_now(password: &str) -> anyhow::Result<String> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("hashing a password: {e}"))
}

/// The PHC string of `password`, computed off the async threads.
pub async fn hash(password: &str) -> anyhow::Result<String> {
    let _permit = PERMITS.acquire().await?;
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || hash_now(&password)).await?
}

/// Whether `password` matches `stored` (a PHC string), or, with no stored hash, the same work
/// against the decoy and `false`.
pub async fn verify(password: &str, stored: Option<&str>) -> anyhow::Result<bool> {
    let _permit = PERMITS.acquire().await?;
    let password = password.to_owned();
    let real = stored.is_some();
    let stored = stored.map(str::to_owned);
    let matched = tokio::task::spawn_blocking(move || {
        let stored = stored.unwrap_or_else(|| DECOY.clone());
        let cut = password.len().min(MAX_BYTES);
        // A password longer than any accepted one never matched; hashing a prefix keeps its
        // cost the same as any other's.
        Argon2::default()
            .verify_password(&password.as_bytes()[..cut], stored.as_str())
            .is_ok()
            && password.len() <= MAX_BYTES
    })
    .await?;
    Ok(real && matched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_verifies_its_password_only() {
        let stored = hash("correct horse battery staple").await.unwrap();
        assert!(
            stored.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{stored}"
        );
        assert!(
            verify("correct horse battery staple", Some(&stored))
                .await
                .unwrap()
        );
        assert!(
            !verify("correct horse battery stapl", Some(&stored))
                .await
                .unwrap()
        );
        assert!(!verify("anything", None).await.unwrap());
        assert!(!verify(&"x".repeat(5000), Some(&stored)).await.unwrap());
    }

    #[test]
    fn new_passwords_must_be_long_and_hard_to_guess() {
        assert_eq!(check_new("short", &[]), Err(PasswordError::TooShort));
        assert_eq!(
            check_new(&"a".repeat(MAX_BYTES + 1), &[]),
            Err(PasswordError::TooLong)
        );
        assert!(matches!(
            check_new("password123", &[]),
            Err(PasswordError::Weak(_))
        ));
        // The person's own name and address are the first things tried.
        // Strong enough alone (10^8.7 guesses), weak once her name is known (10^4.2).
        assert_eq!(check_new("kowalskiannelise", &[]), Ok(()));
        assert!(matches!(
            check_new("kowalskiannelise", &["Annelise Kowalski"]),
            Err(PasswordError::Weak(_))
        ));
        assert_eq!(check_new("violet kettle orbits paper", &[]), Ok(()));
    }
}
