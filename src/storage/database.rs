//! The database: SQLite (embedded default) or PostgreSQL (scale-out), behind one type.
//!
//! One build serves both, so SQL runs through `sqlx` at run time. Backend differences stay in
//! the small SQL functions of `storage/` and `jobs/`, each one `match` on [`Database`].

use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgSslMode};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, SqlitePool};

use crate::config::{ConfigError, DatabaseUrl, SYSTEM_ROOTS};

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

/// How a pool's commits reach the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// A commit returns once it is durable (the default for everything a person is told about).
    Flush,
    /// PostgreSQL returns before the WAL flush (`synchronous_commit = off`): a database crash can
    /// forget the last few milliseconds of commits, atomically, but never corrupts. Only for
    /// work that is safe to redo: the job engine's claims and completions, whose loss means a
    /// job runs again, which at-least-once execution already allows. SQLite is unaffected.
    Relaxed,
}

/// How PostgreSQL plans a pool's prepared statements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plans {
    /// PostgreSQL's default: a statement is planned afresh for each call's values until a plan
    /// without them looks no dearer.
    Auto,
    /// One plan per statement and connection, whatever the values (`plan_cache_mode =
    /// force_generic_plan`). For statements whose best plan never depends on the values. The
    /// job engine's claim is one: `LIMIT $n` makes the value-free plan look a thousand times
    /// dearer than it is, so under `Auto` PostgreSQL re-plans it on every call, or on some
    /// calls and not others. Measured on the no-op drain: 17–18k jobs/s with a plan per call,
    /// 26–33k with one plan, the default in between and varying from run to run.
    Generic,
}

/// A connection pool to whichever backend `DATABASE_URL` names. Cheap to clone.
#[derive(Clone, Debug)]
pub enum Database {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl Database {
    /// Opens a pool of at most `max_connections`. Nothing else in Bindery opens a database.
    pub async fn connect(url: &DatabaseUrl, max_connections: u32) -> anyhow::Result<Self> {
        Self::connect_with(url, max_connections, Durability::Flush, Plans::Auto).await
    }

    /// Like [`Database::connect`], choosing how commits reach the disk and how PostgreSQL plans
    /// statements.
    pub async fn connect_with(
        url: &DatabaseUrl,
        max_connections: u32,
        durability: Durability,
        plans: Plans,
    ) -> anyhow::Result<Self> {
        match url {
            DatabaseUrl::Sqlite { path } => {
                let options = SqliteConnectOptions::new()
                    .filename(path)
                    .create_if_missing(true)
                    // WAL lets the web read while the worker writes. NORMAL sync is durable
                    // against a killed process (our failure model); only power loss can drop
                    // the last commits.
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
                    .busy_timeout(Duration::from_secs(10))
                    .foreign_keys(true);
                let pool = SqlitePoolOptions::new()
                    .max_connections(max_connections)
                    .min_connections(1)
                    .acquire_timeout(Duration::from_secs(15))
                    .connect_with(options)
                    .await
                    .with_context(|| format!("opening SQLite database {}", path.display()))?;
                Ok(Database::Sqlite(pool))
            }
            DatabaseUrl::Postgres { url } => {
                let mut options = postgres_options(url.expose())?.application_name("bindery");
                if durability == Durability::Relaxed {
                    options = options.options([("synchronous_commit", "off")]);
                }
                if plans == Plans::Generic {
                    options = options.options([("plan_cache_mode", "force_generic_plan")]);
                }
                let pool = PgPoolOptions::new()
                    .max_connections(max_connections)
                    .acquire_timeout(Duration::from_secs(15))
                    .connect_with(options)
                    .await
                    .map_err(|e| explain_connect_error(e, url.expose()))
                    .with_context(|| format!("connecting to {}", url_host(url.expose())))?;
                Ok(Database::Postgres(pool))
            }
        }
    }

    /// Applies pending migrations. Safe to run from several processes at once: sqlx takes an
    /// advisory lock on PostgreSQL, and SQLite serialises writers.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        match self {
            Database::Sqlite(pool) => SQLITE_MIGRATIONS.run(pool).await,
            Database::Postgres(pool) => POSTGRES_MIGRATIONS.run(pool).await,
        }
        .context("applying database migrations")
    }

    /// One round trip, for `/readyz`.
    pub async fn ping(&self) -> anyhow::Result<()> {
        match self {
            Database::Sqlite(pool) => sqlx::query("SELECT 1").execute(pool).await.map(drop),
            Database::Postgres(pool) => sqlx::query("SELECT 1").execute(pool).await.map(drop),
        }
        .context("database did not answer")
    }

    /// Starts a transaction. On SQLite it takes the write lock at once (`BEGIN IMMEDIATE`): a
    /// deferred transaction that later writes can fail with "database is locked" without
    /// waiting, where an immediate one waits its turn under the busy timeout.
    pub async fn begin(&self) -> sqlx::Result<Tx> {
        Ok(match self {
            Database::Sqlite(pool) => Tx::Sqlite(pool.begin_with("BEGIN IMMEDIATE").await?),
            Database::Postgres(pool) => Tx::Postgres(pool.begin().await?),
        })
    }

    pub fn backend(&self) -> &'static str {
        match self {
            Database::Sqlite(_) => "sqlite",
            Database::Postgres(_) => "postgres",
        }
    }

    pub async fn close(&self) {
        match self {
            Database::Sqlite(pool) => pool.close().await,
            Database::Postgres(pool) => pool.close().await,
        }
    }
}

/// `DATABASE_URL` as sqlx's connect options. libpq's `sslrootcert=system` (the system's CA
/// roots, for a managed PostgreSQL whose certificate chains to a public CA) is what sqlx does
/// when no root file is named, so it is taken out; as in libpq, it makes `verify-full` the
/// default mode.
fn postgres_options(url: &url::Url) -> anyhow::Result<PgConnectOptions> {
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
    Ok(options)
}

/// Turns the connection failures that only a change of `DATABASE_URL` can mend (TLS settings,
/// credentials, the database's name) into a [`ConfigError`] that says what to change, so the
/// process exits with the configuration code instead of being restarted into the same failure.
/// Anything else (a server that is down or unreachable) is passed on as it is.
fn explain_connect_error(e: sqlx::Error, url: &url::Url) -> anyhow::Error {
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

fn url_host(url: &url::Url) -> String {
    format!(
        "PostgreSQL at {}:{}",
        url.host_str().unwrap_or("?"),
        url.port().unwrap_or(5432)
    )
}

/// A transaction on either backend. Storage and job functions take `&mut Tx`, so that a caller
/// can commit application rows and the jobs they cause together.
#[derive(Debug)]
pub enum Tx {
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
}

impl Tx {
    pub async fn commit(self) -> sqlx::Result<()> {
        match self {
            Tx::Sqlite(tx) => tx.commit().await,
            Tx::Postgres(tx) => tx.commit().await,
        }
    }

    pub async fn rollback(self) -> sqlx::Result<()> {
        match self {
            Tx::Sqlite(tx) => tx.rollback().await,
            Tx::Postgres(tx) => tx.rollback().await,
        }
    }
}
