//! `bindery token …`: create, list and revoke API tokens, and print a tenant's webhook signing
//! secret. Each token is a tenant.

use std::process::ExitCode;

use clap::Subcommand;

use crate::config::Config;
use crate::storage::Database;
use crate::tokens::{self, TokenError, TokenInfo};

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token for a new tenant of the same name. Prints the token alone on stdout
    /// (`TOKEN=$(bindery token create alice)`); it is shown this once. The tenant's webhook
    /// signing secret goes to stderr (`bindery token secret` prints it again).
    Create {
        /// The token's name, also its tenant: 1 to 64 letters, digits, '-', '_' or '.'.
        name: String,
        /// Let the token use the admin pages and API: every tenant's jobs, queues, workers,
        /// tokens and logs. Its books are its own tenant's, as for any token.
        #[arg(long)]
        admin: bool,
    },
    /// List tokens (never the tokens themselves): name, admin, created, last used, revoked.
    List,
    /// Revoke a token: it stops working at once. Its name stays taken.
    Revoke { name: String },
    /// Print the secret that signs the webhooks of the token's tenant, alone on stdout.
    Secret {
        name: String,
        /// Make a new secret first (and print that one). The old one keeps signing alongside it
        /// for `--overlap-hours`, so receivers can switch without refusing an event.
        #[arg(long)]
        rotate: bool,
        /// With --rotate: hours the old secret keeps signing too (0 retires it at once).
        #[arg(long, default_value_t = 24, requires = "rotate")]
        overlap_hours: u32,
    },
}

pub async fn run(config: &Config, command: TokenCommand) -> anyhow::Result<ExitCode> {
    let db = Database::connect(&config.database, 1).await?;
    db.migrate().await?;
    let result = execute(&db, command).await;
    db.close().await;
    result
}

async fn execute(db: &Database, command: TokenCommand) -> anyhow::Result<ExitCode> {
    Ok(match command {
        TokenCommand::Create { name, admin } => match tokens::create(db, &name, admin).await {
            Ok(token) => {
                println!("{token}");
                eprintln!(
                    "bindery: token {name} created; it is shown only this once, so store it now"
                );
                // Readable again later, so it is not part of the one-line stdout contract.
                if let Some(secret) = crate::tenants::webhook_secret(db, &name).await? {
                    eprintln!(
                        "bindery: webhooks to {name} are signed with {} (`bindery token secret {name}` prints it again)",
                        secret.expose()
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e @ (TokenError::BadName(_) | TokenError::Exists(_))) => {
                eprintln!("bindery: {e}");
                ExitCode::FAILURE
            }
            Err(TokenError::Unexpected(e)) => return Err(e),
        },
        TokenCommand::List => {
            print_table(&tokens::list(db).await?);
            ExitCode::SUCCESS
        }
        TokenCommand::Secret {
            name,
            rotate,
            overlap_hours,
        } => {
            let overlap = std::time::Duration::from_secs(u64::from(overlap_hours) * 3600);
            let secrets = match tokens::tenant_of(db, &name).await? {
                Some(tenant) if rotate => {
                    crate::tenants::rotate_webhook_secret(db, &tenant, overlap).await?
                }
                Some(tenant) => crate::tenants::webhook_secrets(db, &tenant).await?,
                None => None,
            };
            match secrets {
                Some(secrets) => {
                    println!("{}", secrets.current.expose());
                    if let Some((_, until)) = secrets.previous {
                        eprintln!(
                            "bindery: the previous secret also signs {name}'s webhooks until {}",
                            crate::storage::rfc3339(until)
                        );
                    } else if rotate {
                        eprintln!("bindery: the previous secret no longer signs anything");
                    }
                    ExitCode::SUCCESS
                }
                None => {
                    eprintln!("bindery: no token named {name:?}; `bindery token list` shows them");
                    ExitCode::FAILURE
                }
            }
        }
        TokenCommand::Revoke { name } => {
            if tokens::revoke(db, &name).await? {
                println!("token {name} revoked");
                ExitCode::SUCCESS
            } else {
                eprintln!("bindery: no token named {name:?}; `bindery token list` shows them");
                ExitCode::FAILURE
            }
        }
    })
}

fn print_table(tokens: &[TokenInfo]) {
    let width = tokens
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(0)
        .max("NAME".len());
    println!(
        "{:<width$}  {:<5}  {:<20}  {:<20}  REVOKED",
        "NAME", "ADMIN", "CREATED", "LAST USED"
    );
    for t in tokens {
        println!(
            "{:<width$}  {:<5}  {:<20}  {:<20}  {}",
            t.name,
            if t.admin { "yes" } else { "no" },
            utc(Some(t.created_at)),
            utc(t.last_used_at),
            utc(t.revoked_at),
        );
    }
}

/// A unix-millisecond time as UTC, `-` when there is none.
fn utc(ms: Option<i64>) -> String {
    ms.and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| "-".to_owned())
}
