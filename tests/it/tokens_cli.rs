//! `bindery token …` as an operator uses it, and the tokens it makes as the library checks them,
//! on SQLite and on PostgreSQL.

use crate::common;

use std::process::Output;
use std::str::FromStr;

use bindery::config::{DatabaseUrl, Secret};
use bindery::storage::Database;
use bindery::tokens;

/// A data directory and database for `bindery token` commands, and a way in for the library.
struct Tokens {
    data: tempfile::TempDir,
    /// `DATABASE_URL` for PostgreSQL; SQLite is the default under `DATA_DIR`.
    postgres: Option<String>,
}

impl Tokens {
    fn sqlite() -> Self {
        Self {
            data: tempfile::tempdir().expect("tempdir"),
            postgres: None,
        }
    }

    fn postgres() -> Self {
        Self {
            data: tempfile::tempdir().expect("tempdir"),
            postgres: Some(common::postgres_database()),
        }
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = common::command(self.data.path());
        if let Some(url) = &self.postgres {
            cmd.env("DATABASE_URL", url);
        }
        cmd.arg("token").args(args);
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run bindery token")
    }

    async fn run_async(&self, args: &[&str]) -> Output {
        tokio::process::Command::from(self.command(args))
            .output()
            .await
            .expect("run bindery token")
    }

    /// The same database the commands use, opened through the library.
    async fn database(&self) -> Database {
        let url = match &self.postgres {
            Some(url) => DatabaseUrl::Postgres {
                url: Secret::new(url::Url::from_str(url).expect("url")),
            },
            None => DatabaseUrl::Sqlite {
                path: self.data.path().join("bindery.db"),
            },
        };
        Database::connect(&url, 2).await.expect("connect")
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        stdout(out),
        stderr(out)
    );
}

/// The token from `bindery token create`, checking that stdout holds it and nothing else.
fn printed_token(out: &Output) -> String {
    assert_success(out);
    let printed = stdout(out);
    let token = printed
        .strip_suffix('\n')
        .unwrap_or_else(|| panic!("stdout is not one line: {printed:?}"));
    assert!(!token.contains('\n'), "stdout is not one line: {printed:?}");
    assert_eq!(token.len(), 4 + 64, "{token:?}");
    let secret = token
        .strip_prefix("bdy_")
        .unwrap_or_else(|| panic!("no bdy_ prefix: {token:?}"));
    assert!(
        secret
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "not lowercase hex: {token:?}"
    );
    assert!(
        stderr(out).contains("shown only this once"),
        "{}",
        stderr(out)
    );
    token.to_owned()
}

/// The listed row of a token, split on whitespace.
fn listed<'a>(listing: &'a str, name: &str) -> Vec<&'a str> {
    listing
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|fields| fields.first() == Some(&name))
        .unwrap_or_else(|| panic!("{name} not listed:\n{listing}"))
}

fn an_operator_creates_lists_and_revokes_tokens(t: &Tokens) {
    let alice = printed_token(&t.run(&["create", "alice"]));
    let root = printed_token(&t.run(&["create", "root", "--admin"]));
    assert_ne!(alice, root);

    let out = t.run(&["list"]);
    assert_success(&out);
    let listing = stdout(&out);
    assert!(
        listing.starts_with("NAME") && listing.contains("LAST USED"),
        "{listing}"
    );
    assert!(!listing.contains(&alice) && !listing.contains(&root));
    assert!(!listing.contains("bdy_"), "{listing}");
    let row = listed(&listing, "alice");
    assert_eq!(row[1], "no", "{listing}");
    assert!(row[2].ends_with('Z'), "created at, UTC: {listing}");
    assert_eq!(&row[3..], ["-", "-"], "never used, not revoked: {listing}");
    assert_eq!(listed(&listing, "root")[1], "yes", "{listing}");

    // A name is taken for good, and a bad one is refused before anything is stored.
    let out = t.run(&["create", "alice"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("a token named \"alice\" already exists"),
        "{}",
        stderr(&out)
    );
    let out = t.run(&["create", "no spaces"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("not a valid token name"),
        "{}",
        stderr(&out)
    );
    // A tenant's name is a path segment and a word in commands: never `.`, `..` or an option.
    for odd in [".", "..", "-rf", "_x", "x."] {
        let out = t.run(&["create", "--", odd]);
        assert_ne!(out.status.code(), Some(0), "{odd:?} was accepted");
        assert!(
            stderr(&out).contains("beginning and ending with a letter or digit"),
            "{odd:?}: {}",
            stderr(&out)
        );
    }
    // Names are compared without letter case: `Alice` would look like `alice` and be another.
    let out = t.run(&["create", "Alice"]);
    assert_ne!(
        out.status.code(),
        Some(0),
        "Alice beside alice was accepted"
    );
    assert!(
        stderr(&out).contains("differs only in letter case"),
        "{}",
        stderr(&out)
    );

    let out = t.run(&["revoke", "alice"]);
    assert_success(&out);
    assert_eq!(stdout(&out), "token alice revoked\n");
    let listing = stdout(&t.run(&["list"]));
    assert!(listed(&listing, "alice")[4].ends_with('Z'), "{listing}");
    assert_eq!(listed(&listing, "root")[4], "-", "{listing}");

    let out = t.run(&["create", "alice"]);
    assert_ne!(out.status.code(), Some(0), "a revoked name is still taken");

    let out = t.run(&["revoke", "nobody"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no token named \"nobody\""),
        "{}",
        stderr(&out)
    );
}

async fn a_token_authenticates_until_it_is_revoked(t: &Tokens) {
    let alice = printed_token(&t.run_async(&["create", "alice"]).await);
    let root = printed_token(&t.run_async(&["create", "root", "--admin"]).await);
    let db = t.database().await;

    let tenant = tokens::authenticate(&db, &alice)
        .await
        .expect("authenticate")
        .expect("alice's token is accepted");
    assert_eq!(
        (tenant.name.as_str(), tenant.tenant.as_str(), tenant.admin),
        ("alice", "alice", false)
    );
    let tenant = tokens::authenticate(&db, &root)
        .await
        .expect("authenticate")
        .expect("root's token is accepted");
    assert!(tenant.admin);

    // Use is recorded, but at most once a minute.
    let used = last_used(&db, "alice").await.expect("last use recorded");
    tokens::authenticate(&db, &alice)
        .await
        .expect("authenticate")
        .expect("still accepted");
    assert_eq!(last_used(&db, "alice").await, Some(used));

    // A well-formed token nobody was given, and one of alice's digits changed.
    let unknown = format!("bdy_{}", "0".repeat(64));
    let last = alice.chars().last().expect("non-empty");
    let altered = format!(
        "{}{}",
        &alice[..alice.len() - 1],
        if last == '0' { '1' } else { '0' }
    );
    for wrong in [unknown, altered] {
        assert!(
            tokens::authenticate(&db, &wrong)
                .await
                .expect("authenticate")
                .is_none(),
            "{wrong} accepted"
        );
    }

    assert_success(&t.run_async(&["revoke", "alice"]).await);
    assert!(
        tokens::authenticate(&db, &alice)
            .await
            .expect("authenticate")
            .is_none(),
        "a revoked token is still accepted"
    );
    assert!(
        tokens::authenticate(&db, &root)
            .await
            .expect("authenticate")
            .is_some()
    );

    // Malformed tokens are refused without a query: this pool is closed.
    db.close().await;
    for malformed in [
        "",
        "alice",
        "bdy_",
        &alice.to_uppercase(),
        &alice[..alice.len() - 1],
        &format!("Bearer {alice}"),
    ] {
        assert!(
            tokens::authenticate(&db, malformed)
                .await
                .expect("no database error: the database was never asked")
                .is_none(),
            "{malformed:?} accepted"
        );
    }
}

async fn last_used(db: &Database, name: &str) -> Option<i64> {
    tokens::list(db)
        .await
        .expect("list")
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no token {name}"))
        .last_used_at
}

#[test]
fn an_operator_creates_lists_and_revokes_tokens_on_sqlite() {
    an_operator_creates_lists_and_revokes_tokens(&Tokens::sqlite());
}

#[test]
fn an_operator_creates_lists_and_revokes_tokens_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    an_operator_creates_lists_and_revokes_tokens(&Tokens::postgres());
}

#[tokio::test]
async fn a_token_authenticates_until_it_is_revoked_on_sqlite() {
    a_token_authenticates_until_it_is_revoked(&Tokens::sqlite()).await;
}

#[tokio::test]
async fn a_token_authenticates_until_it_is_revoked_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    a_token_authenticates_until_it_is_revoked(&Tokens::postgres()).await;
}
