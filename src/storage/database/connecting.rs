//! Opening a pool: `DATABASE_URL` as sqlx's options, and how long a starting process waits for
//! a database that cannot be reached yet. A failure only a change of `DATABASE_URL` can mend is
//! told apart here and said in words, so that the process exits with the configuration code
//! instead of being restarted into the same failure.

use std::str::FromStr;
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgSslMode};

use super::APPLICATION_NAME;
use crate::config::{ConfigError, SYSTEM_ROOTS};
use crate::storage::{backoff, fault};

/// How long opening a database may take while it cannot be reached; past it, a starting process
/// exits for its host to try again.
const CONNECT_PATIENCE: Duration = Duration::from_secs(15);

/// Runs `attempt` until it succeeds, fails in a way `again` does not forgive, or
/// [`CONNECT_PATIENCE`] has passed: how a starting process waits for storage that is
/// restarting. The pauses between tries are the running loops' (`storage::backoff`).
pub(crate) async fn patiently<T, E: std::fmt::Display>(
    what: &str,
    again: impl Fn(&E) -> bool,
    mut attempt: impl AsyncFnMut() -> Result<T, E>,
) -> Result<T, E> {
    let started = Instant::now();
    let mut failures = 0;
    loop {
        failures += 1;
        let pause = backoff::pause_after(failures);
        match attempt().await {
            Err(e) if again(&e) && started.elapsed() + pause < CONNECT_PATIENCE => {
                tracing::warn!(error = %format!("{e:#}"), retry_in = ?pause, "{what}; trying again");
                tokio::time::sleep(pause).await;
            }
            done => return done,
        }
    }
}

/// How long one wait for a pooled connection may take; past it, the caller gets
/// `PoolTimedOut`, an outage (a 503, or a job that waits without spending an attempt). Kept
/// short because sqlx paces its reconnects by it: while the server is away, a waiting caller
/// tries again after a pause that doubles up to a fifth of this. At 15 s that pause reached
/// 3 s, and a pool could stay shut that long after the database came back; at 5 s it stays
/// under 1 s.
pub(super) const ACQUIRE_PATIENCE: Duration = Duration::from_secs(5);

/// `DATABASE_URL` as sqlx's connect options. libpq's `sslrootcert=system` (the system's CA
/// roots, for a managed PostgreSQL whose certificate chains to a public CA) is what sqlx does
/// when no root file is named, so it is taken out; as in libpq, it makes `verify-full` the
/// default mode.
pub(super) fn postgres_options(url: &url::Url) -> anyhow::Result<PgConnectOptions> {
    let system_roots = url
        .query_pairs()
        .any(|(k, v)| k == "sslrootcert" && v == SYSTEM_ROOTS);
    let mut url = url.clone();
    if system_roots {
        let kept: Vec<(String, String)> = url
            .query_pairs()
            .filter(|(k, v)| !(k == "sslrootcert" && v == SYSTEM_ROOTS))
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        url.query_pairs_mut().clear().extend_pairs(kept);
    }
    let mut options = PgConnectOptions::from_str(url.as_str()).map_err(|e| {
        ConfigError::about(
            "DATABASE_URL",
            format!("could not be read as PostgreSQL connection options ({e})"),
        )
    })?;
    if system_roots && !url.query_pairs().any(|(k, _)| k == "sslmode") {
        options = options.ssl_mode(PgSslMode::VerifyFull);
    }
    // Connections say whose they are in `pg_stat_activity` and the server's log: `bindery`,
    // unless the user named them (`?application_name=` in the URL, or libpq's `PGAPPNAME`),
    // to tell apart deployments or roles sharing a server.
    if options.get_application_name().is_none() {
        options = options.application_name(APPLICATION_NAME);
    }
    Ok(options)
}

/// Whether opening a SQLite file is worth trying again: SQLite answered busy or locked, so
/// another process holds the file for now.
pub(super) fn sqlite_locked(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(_)) && fault::sqlx_unreachable(e)
}

/// Whether a failed connection is worth trying again: the server could not be reached, or cut
/// the connection before it said a word (a closed socket reads as a zero byte where the answer
/// to sqlx's TLS request belongs, which sqlx calls a protocol error). A server that is not
/// PostgreSQL at all is told apart only when the patience runs out, with the same error.
pub(super) fn connect_again(e: &sqlx::Error) -> bool {
    fault::sqlx_unreachable(e) || matches!(e, sqlx::Error::Protocol(_))
}

/// Turns the connection failures that only a change of `DATABASE_URL` can mend (TLS settings,
/// credentials, the database's name) into a [`ConfigError`] that says what to change, so the
/// process exits with the configuration code instead of being restarted into the same failure.
/// Anything else (a server that is down or unreachable) is passed on as it is.
pub(super) fn explain_connect_error(e: sqlx::Error, url: &url::Url) -> anyhow::Error {
    let host = url.host_str().unwrap_or("?");
    // rustls reports a refused certificate from inside the handshake's I/O.
    let certificate = match &e {
        sqlx::Error::Io(io) => io
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>()),
        _ => None,
    };
    let problem = match (&e, certificate) {
        (_, Some(rustls::Error::InvalidCertificate(refused))) => {
            use rustls::CertificateError as Refused;
            match refused {
                Refused::NotValidForName | Refused::NotValidForNameContext { .. } => format!(
                    "names the host {host:?}, which the server's certificate is not issued for \
                     ({refused}): connect by a host name the certificate lists, or use \
                     sslmode=verify-ca to check the issuer but not the name"
                ),
                Refused::Expired
                | Refused::ExpiredContext { .. }
                | Refused::NotValidYet
                | Refused::NotValidYetContext { .. } => format!(
                    "reaches a server whose certificate is out of date ({refused}): renew it on \
                     the server, or use sslmode=require to encrypt without verifying"
                ),
                _ => format!(
                    "reaches a server whose certificate could not be verified ({refused}): set \
                     sslrootcert to the PEM file of the CA that issued it (or sslrootcert=system \
                     for a public CA), or use sslmode=require to encrypt without verifying"
                ),
            }
        }
        (_, Some(other)) => {
            format!("could not set up TLS with the server ({other}): check sslmode and sslrootcert")
        }
        (sqlx::Error::Tls(inner), None) if inner.to_string().contains("does not support TLS") => {
            "asks for TLS (sslmode), but the server does not offer it: use sslmode=prefer or \
             disable for this server, or turn on ssl in its postgresql.conf"
                .to_owned()
        }
        (sqlx::Error::Tls(inner), None) => {
            format!("could not set up TLS with the server ({inner}): check sslmode and sslrootcert")
        }
        (sqlx::Error::Database(db), None) => match db.code().as_deref() {
            Some("28000") if db.message().contains("no encryption") => format!(
                "reaches a server that accepts only encrypted connections ({}): add \
                 sslmode=require, or sslmode=verify-full with sslrootcert",
                db.message()
            ),
            Some("28000" | "28P01") => format!(
                "was refused by the server ({}): check the user name and password, and that \
                 the server allows this user from this host",
                db.message()
            ),
            Some("3D000") => format!(
                "names a database that does not exist ({}): create it, or fix the name after \
                 the host",
                db.message()
            ),
            _ => return e.into(),
        },
        (sqlx::Error::Configuration(inner), None) => {
            format!("could not be used to connect ({inner}): check its options")
        }
        _ => return e.into(),
    };
    ConfigError::about("DATABASE_URL", problem).into()
}

pub(super) fn url_host(url: &url::Url) -> String {
    format!(
        "PostgreSQL at {}:{}",
        url.host_str().unwrap_or("?"),
        url.port().unwrap_or(5432)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_called_bindery_unless_the_url_names_them() {
        if std::env::var_os("PGAPPNAME").is_some() {
            // libpq's variable names them too, as the user asked.
            return;
        }
        let name = |url: &str| {
            postgres_options(&url.parse().expect("URL"))
                .expect("options")
                .get_application_name()
                .map(str::to_owned)
        };
        assert_eq!(
            name("postgres://u@db.example/books").as_deref(),
            Some(APPLICATION_NAME)
        );
        assert_eq!(
            name("postgres://u@db.example/books?application_name=books-worker&sslmode=require")
                .as_deref(),
            Some("books-worker")
        );
    }
}
