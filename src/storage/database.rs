//! The database: SQLite (embedded default) or PostgreSQL (scale-out), behind one type.
//!
//! One build serves both, so SQL runs through `sqlx` at run time. Backend differences stay in
//! the small SQL functions of `storage/` and `jobs/`, each one `match` on [`Database`].

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgSslMode};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, SqlitePool};

use super::fault;
use crate::config::{ConfigError, DatabaseUrl, SYSTEM_ROOTS};

static SQLITE_MIGRATIONS: LazyLock<Migrator> =
    LazyLock::new(|| beside_newer(sqlx::migrate!("migrations/sqlite")));
static POSTGRES_MIGRATIONS: LazyLock<Migrator> =
    LazyLock::new(|| beside_newer(sqlx::migrate!("migrations/postgres")));

/// Lets a database hold migrations this release does not carry: a later release's, applied by
/// its release phase. Migrations are additive so that the previous release runs beside them
/// (README, "Migrations while the old release still runs"), and it must also start beside them:
/// an old process restarting during a rolling deploy, or every process after a rollback. By
/// default sqlx refuses to, and the previous release could not start at all. A migration this
/// release carries is still checked against the stored one.
fn beside_newer(mut migrator: Migrator) -> Migrator {
    migrator.set_ignore_missing(true);
    migrator
}

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
        let pause = super::backoff::pause_after(failures);
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
const ACQUIRE_PATIENCE: Duration = Duration::from_secs(5);

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

/// Whether a pool makes sure of a connection before handing it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checkout {
    /// sqlx's default: a round trip (a ping) before each use, so that a connection the server
    /// dropped (a restart, a failover) is replaced unseen instead of failing a statement.
    Tested,
    /// No ping: a dropped connection fails the one statement that finds it, and the pool opens
    /// another for the next. For a caller that retries failed statements anyway and runs
    /// back-to-back short ones, where the ping is a round trip more for each: the job
    /// engine's pump, on whose one connection the server sat idle during the pings.
    Trusted,
}

/// JIT off: Bindery's statements are short, indexed lookups, and JIT only pays for long
/// analytic scans. Left to the server, a cost estimate that grows with the jobs table passes
/// `jit_above_cost`, and the claim was compiled afresh on every call: with a million jobs
/// waiting, ~120 ms a claim and 208 jobs/s instead of ~25,000. Managed services differ in
/// their default, so it is set on every connection, not left to the server.
pub const JIT_OFF: (&str, &str) = ("jit", "off");

/// The settings of a [`Plans::Generic`] pool's connections.
///
/// Bitmap scans are off too. On a table without statistics, which is what a burst of
/// enqueues leaves until autovacuum's next analyze, the generic plans of the claim's update
/// and of the completion (`id = ANY($1)`) read `jobs` by bitmap heap scans, a quarter of
/// PostgreSQL's time on a drain: 28–35k jobs/s against 35–41k without, in alternating runs
/// (`BENCH_QUEUE_ONLY=drain`). The statements these pools run find a handful of rows each by
/// an index, where a plain index scan is as good or better.
pub const GENERIC_PLANS: [(&str, &str); 2] = [
    ("plan_cache_mode", "force_generic_plan"),
    ("enable_bitmapscan", "off"),
];

/// A connection pool to whichever backend `DATABASE_URL` names. Cheap to clone.
#[derive(Clone, Debug)]
pub enum Database {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl Database {
    /// Opens a pool of at most `max_connections`. Nothing else in Bindery opens a database.
    pub async fn connect(url: &DatabaseUrl, max_connections: u32) -> anyhow::Result<Self> {
        Self::connect_with(
            url,
            max_connections,
            Durability::Flush,
            Plans::Auto,
            Checkout::Tested,
        )
        .await
    }

    /// Like [`Database::connect`], choosing how commits reach the disk, how PostgreSQL plans
    /// statements and whether a connection is tested before each use (PostgreSQL only: a
    /// SQLite file does not go away).
    pub async fn connect_with(
        url: &DatabaseUrl,
        max_connections: u32,
        durability: Durability,
        plans: Plans,
        checkout: Checkout,
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
                // Turning a new database's journal to WAL takes a lock that SQLite's busy
                // timeout does not wait for (sqlx's `journal_mode`), so a process opening the
                // file at that moment (two release phases at once, or `migrate` beside
                // `serve`) was refused with "database is locked". It waits as for a server.
                let pool = patiently("the SQLite database is locked", sqlite_locked, async || {
                    SqlitePoolOptions::new()
                        .max_connections(max_connections)
                        .min_connections(1)
                        .acquire_timeout(ACQUIRE_PATIENCE)
                        .connect_with(options.clone())
                        .await
                })
                .await
                .with_context(|| format!("opening SQLite database {}", path.display()))?;
                Ok(Database::Sqlite(pool))
            }
            DatabaseUrl::Postgres { url } => {
                let mut options = postgres_options(url.expose())?.options([JIT_OFF]);
                if durability == Durability::Relaxed {
                    options = options.options([("synchronous_commit", "off")]);
                }
                if plans == Plans::Generic {
                    options = options.options(GENERIC_PLANS);
                }
                // sqlx itself tries again only while connections are refused. A server that
                // is shutting down or restarting also accepts and then cuts them, and a process
                // that starts at that moment (a worker restarted beside a database failover)
                // must wait as a running one does, not exit.
                let pool = patiently("PostgreSQL cannot be reached", connect_again, async || {
                    PgPoolOptions::new()
                        .max_connections(max_connections)
                        .acquire_timeout(ACQUIRE_PATIENCE)
                        .test_before_acquire(checkout == Checkout::Tested)
                        .connect_with(options.clone())
                        .await
                })
                .await
                .map_err(|e| explain_connect_error(e, url.expose()))
                .with_context(|| format!("connecting to {}", url_host(url.expose())))?;
                Ok(Database::Postgres(pool))
            }
        }
    }

    /// Applies pending migrations. Safe to run from several processes at once (a release phase
    /// beside the previous release's processes, or `web` and `worker` starting together): each
    /// takes a migration lock first and holds it to the end, so the second one waits, then finds
    /// nothing left to do. On PostgreSQL the lock is an advisory lock; on SQLite, whose sqlx
    /// migrator takes no lock at all, an exclusive `flock` on a file beside the database.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        match self {
            Database::Sqlite(pool) => migrate_sqlite(pool).await,
            Database::Postgres(pool) => migrate_postgres(pool).await,
        }
        .context("applying database migrations")
    }

    /// Whether process `pid` holds a write lock on this SQLite database (its file, or the
    /// `-shm` file whose lock a WAL writer takes), from the kernel's table of locks. A process
    /// stopped or hung in the middle of a write holds it until it dies, and every other writer
    /// waits: for the supervisor, a database its own stuck worker has locked is no outage.
    /// Always `false` on PostgreSQL, and where `/proc/locks` cannot be read.
    pub fn write_locked_by(&self, pid: u32) -> bool {
        use std::os::unix::fs::MetadataExt;
        let Database::Sqlite(pool) = self else {
            return false;
        };
        let options = pool.connect_options();
        let file = options.get_filename();
        let mut shm = file.as_os_str().to_owned();
        shm.push("-shm");
        let inode = |path: &Path| std::fs::metadata(path).ok().map(|m| m.ino());
        let Ok(table) = std::fs::read_to_string("/proc/locks") else {
            return false;
        };
        // The database file's own lock (a rollback-journal writer), or in WAL mode the `-shm`
        // file's byte 120, SQLite's WAL_WRITE_LOCK: other bytes there are readers' marks and
        // the checkpointer's, which keep no writer out.
        inode(file).is_some_and(|db| write_lock_in(&table, pid, db, None))
            || inode(Path::new(&shm)).is_some_and(|shm| write_lock_in(&table, pid, shm, Some(120)))
    }

    /// One round trip that reads nothing; `/readyz` uses [`Database::probe_write`], since a full
    /// disk still answers it.
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
    ///
    /// Every transaction in Bindery starts here, and [`Tx`] ends it: see there for why a
    /// transaction whose end is not confirmed takes its connection with it.
    pub async fn begin(&self) -> sqlx::Result<Tx> {
        Ok(match self {
            Database::Sqlite(pool) => {
                Tx::Sqlite(TxConn::begin(pool.acquire().await?, "BEGIN IMMEDIATE").await?)
            }
            Database::Postgres(pool) => {
                Tx::Postgres(TxConn::begin(pool.acquire().await?, "BEGIN").await?)
            }
        })
    }

    /// A real write that reaches the disk, for `/readyz`: a full disk or a read-only database
    /// fails it, where `SELECT 1` still answers. It rewrites the one row of `readiness_probe`,
    /// which nothing else reads, and commits.
    pub async fn probe_write(&self) -> anyhow::Result<()> {
        let mut tx = self
            .begin()
            .await
            .context("database could not start a write")?;
        match &mut tx {
            Tx::Sqlite(t) => sqlx::query(concat!(
                "INSERT INTO readiness_probe (id, at) VALUES (1, ",
                sqlite_now!(),
                ") ON CONFLICT (id) DO UPDATE SET at = excluded.at"
            ))
            .execute(&mut **t)
            .await
            .map(drop),
            Tx::Postgres(t) => sqlx::query(concat!(
                "INSERT INTO readiness_probe (id, at) VALUES (1, ",
                postgres_now!(),
                ") ON CONFLICT (id) DO UPDATE SET at = excluded.at"
            ))
            .execute(&mut **t)
            .await
            .map(drop),
        }
        .context("database did not accept a write")?;
        tx.commit()
            .await
            .context("database could not commit a write")
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

/// What Bindery's PostgreSQL connections are called when `DATABASE_URL` names them nothing.
pub const APPLICATION_NAME: &str = "bindery";

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
fn sqlite_locked(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(_)) && fault::sqlx_unreachable(e)
}

/// Whether a failed connection is worth trying again: the server could not be reached, or cut
/// the connection before it said a word (a closed socket reads as a zero byte where the answer
/// to sqlx's TLS request belongs, which sqlx calls a protocol error). A server that is not
/// PostgreSQL at all is told apart only when the patience runs out, with the same error.
fn connect_again(e: &sqlx::Error) -> bool {
    fault::sqlx_unreachable(e) || matches!(e, sqlx::Error::Protocol(_))
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

/// The lock file beside a SQLite database, `bindery.db.migrate-lock` for `bindery.db`. It is
/// created once and never removed: removing a lock file lets two processes lock two files.
fn sqlite_migration_lock_path(database: &Path) -> PathBuf {
    let mut name = database.file_name().unwrap_or_default().to_os_string();
    name.push(".migrate-lock");
    database.with_file_name(name)
}

async fn migrate_sqlite(pool: &SqlitePool) -> anyhow::Result<()> {
    let database = pool.connect_options().get_filename().to_path_buf();
    // An in-memory database belongs to one process: nothing to serialise.
    let _lock = if database.as_os_str() == ":memory:" {
        None
    } else {
        Some(lock_file(sqlite_migration_lock_path(&database)).await?)
    };
    let mut conn = pool.acquire().await?;
    let before = applied_versions::<sqlx::Sqlite>(
        &mut conn,
        "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
    )
    .await?;
    let started = Instant::now();
    SQLITE_MIGRATIONS.run(&mut *conn).await?;
    log_applied(&SQLITE_MIGRATIONS, &before, started);
    Ok(())
}

/// Takes an exclusive `flock` on `path` (creating the file), waiting as long as another process
/// holds it. Released when the returned value is dropped, or by the kernel when the process
/// dies, so a killed migration never leaves it held.
async fn lock_file(path: PathBuf) -> anyhow::Result<Flock<File>> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("opening the migration lock file {}", path.display()))?;
    let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => return Ok(lock),
        Err((file, Errno::EWOULDBLOCK)) => file,
        Err((_, e)) => {
            return Err(e).with_context(|| format!("locking {}", path.display()));
        }
    };
    tracing::info!(
        lock = %path.display(),
        "another process is migrating the database; waiting for its lock"
    );
    let started = Instant::now();
    let lock = tokio::task::spawn_blocking(move || {
        let mut file = file;
        loop {
            match Flock::lock(file, FlockArg::LockExclusive) {
                Ok(lock) => return Ok(lock),
                Err((again, Errno::EINTR)) => file = again,
                Err((_, e)) => return Err(e),
            }
        }
    })
    .await
    .context("waiting for the migration lock")?
    .with_context(|| format!("locking {}", path.display()))?;
    tracing::info!(
        lock = %path.display(),
        waited_ms = started.elapsed().as_millis() as u64,
        "migration lock acquired"
    );
    Ok(lock)
}

/// The advisory lock (per database) that bindery's migrations take on PostgreSQL. sqlx's
/// migrator takes its own advisory lock inside it; this one comes first so that a process can
/// tell it is waiting and read what was applied before it migrates.
const POSTGRES_MIGRATION_LOCK: i64 = 0x0062_696e_6465_7279; // "bindery" in ASCII

async fn migrate_postgres(pool: &PgPool) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(POSTGRES_MIGRATION_LOCK)
        .fetch_one(&mut *conn)
        .await?;
    if !locked {
        tracing::info!("another process is migrating the database; waiting for its lock");
        let started = Instant::now();
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(POSTGRES_MIGRATION_LOCK)
            .execute(&mut *conn)
            .await?;
        tracing::info!(
            waited_ms = started.elapsed().as_millis() as u64,
            "migration lock acquired"
        );
    }
    let result = async {
        let before = applied_versions::<sqlx::Postgres>(
            &mut conn,
            "SELECT to_regclass('_sqlx_migrations') IS NOT NULL",
        )
        .await?;
        let started = Instant::now();
        POSTGRES_MIGRATIONS.run(&mut *conn).await?;
        log_applied(&POSTGRES_MIGRATIONS, &before, started);
        anyhow::Ok(())
    }
    .await;
    if result.is_ok() {
        sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(POSTGRES_MIGRATION_LOCK)
            .execute(&mut *conn)
            .await?;
    } else {
        // Session locks live as long as the connection: close it rather than hand a locked
        // connection back to the pool.
        conn.close_on_drop();
    }
    result
}

/// The migrations applied successfully so far, read before a run so that it can log what it
/// added; none when sqlx's bookkeeping table does not exist yet (`table_exists` asks the backend).
async fn applied_versions<DB>(
    conn: &mut DB::Connection,
    table_exists: &'static str,
) -> sqlx::Result<HashSet<i64>>
where
    DB: sqlx::Database,
    for<'e> &'e mut DB::Connection: sqlx::Executor<'e, Database = DB>,
    DB::Arguments: sqlx::IntoArguments<DB>,
    (bool,): for<'r> sqlx::FromRow<'r, DB::Row>,
    (i64,): for<'r> sqlx::FromRow<'r, DB::Row>,
{
    if !sqlx::query_scalar::<DB, bool>(table_exists)
        .fetch_one(&mut *conn)
        .await?
    {
        return Ok(HashSet::new());
    }
    Ok(
        sqlx::query_scalar::<DB, i64>("SELECT version FROM _sqlx_migrations WHERE success")
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .collect(),
    )
}

/// One line per migration this process applied, one for the whole run, and a warning naming
/// the migrations a later release applied, if the database holds any.
fn log_applied(migrator: &Migrator, before: &HashSet<i64>, started: Instant) {
    let known: HashSet<i64> = migrator.iter().map(|m| m.version).collect();
    let mut newer: Vec<i64> = before.difference(&known).copied().collect();
    if !newer.is_empty() {
        newer.sort_unstable();
        tracing::warn!(
            versions = ?newer,
            "the database holds migrations of a later release than this one; running beside them, as migrations are additive (a rollback past a release that dropped something is not safe)"
        );
    }
    let mut applied = 0;
    for migration in migrator.iter() {
        if migration.migration_type.is_down_migration() || before.contains(&migration.version) {
            continue;
        }
        applied += 1;
        tracing::info!(
            version = migration.version,
            description = %migration.description,
            "applied migration"
        );
    }
    if applied == 0 {
        tracing::info!(
            version = migrator.iter().map(|m| m.version).max(),
            "database schema is up to date"
        );
    } else {
        tracing::info!(
            applied,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "database migrated"
        );
    }
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
    Sqlite(TxConn<sqlx::Sqlite>),
    Postgres(TxConn<sqlx::Postgres>),
}

impl Tx {
    pub async fn commit(self) -> sqlx::Result<()> {
        match self {
            Tx::Sqlite(tx) => tx.finish("COMMIT").await,
            Tx::Postgres(tx) => tx.finish("COMMIT").await,
        }
    }

    pub async fn rollback(self) -> sqlx::Result<()> {
        match self {
            Tx::Sqlite(tx) => tx.finish("ROLLBACK").await,
            Tx::Postgres(tx) => tx.finish("ROLLBACK").await,
        }
    }
}

/// A pooled connection inside a transaction that Bindery began and ends itself.
///
/// Why not `sqlx::Transaction`: it counts transaction depth beside the database, and on SQLite
/// the count can disagree with it for good. A COMMIT that fails with `database or disk is full`
/// (or an I/O error) lets SQLite roll the transaction back by itself; sqlx's count stays at 1,
/// the ROLLBACK it queues on drop then fails ("no transaction is active") and is ignored, and
/// the connection goes back to the pool still counted as inside a transaction. Every later
/// `BEGIN IMMEDIATE` on it fails with "attempted to call begin_with at non-zero transaction
/// depth", so a disk full for a moment left the job engine unable to commit anything again.
///
/// Here the database is the only record: `BEGIN`/`COMMIT`/`ROLLBACK` are plain statements,
/// and a connection goes back to the pool only after one of them has been confirmed to end
/// the transaction. Any other end (a failed COMMIT or ROLLBACK, a transaction dropped
/// unfinished by an error or a cancelled future) closes the connection, which ends the
/// transaction on the server side whatever state it was in, and the pool opens a fresh one.
/// That costs a reconnection on failure paths only.
pub struct TxConn<DB: sqlx::Database> {
    conn: sqlx::pool::PoolConnection<DB>,
    /// Between a confirmed BEGIN and a confirmed COMMIT or ROLLBACK.
    open: bool,
}

impl<DB: sqlx::Database> TxConn<DB>
where
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
{
    async fn begin(
        conn: sqlx::pool::PoolConnection<DB>,
        statement: &'static str,
    ) -> sqlx::Result<Self> {
        let mut tx = TxConn { conn, open: true };
        // Open until BEGIN is confirmed: a BEGIN that failed or was cancelled closes the
        // connection on drop rather than guess whether it started a transaction.
        sqlx::raw_sql(statement).execute(&mut *tx.conn).await?;
        Ok(tx)
    }

    async fn finish(mut self, statement: &'static str) -> sqlx::Result<()> {
        match sqlx::raw_sql(statement).execute(&mut *self.conn).await {
            Ok(_) => {
                self.open = false;
                Ok(())
            }
            Err(e) => {
                // The caller hears of the failure and reports it; storage that is full or out
                // of reach is a failure its loops pace and report once (`storage::backoff`),
                // so only anything else is worth a warning of its own here.
                if fault::of_sqlx(&e) == fault::Fault::Bug {
                    tracing::warn!(
                        statement,
                        error = %e,
                        "a transaction could not be ended; closing its connection so the next one starts clean"
                    );
                } else {
                    tracing::debug!(
                        statement,
                        error = %e,
                        "a transaction could not be ended; closing its connection so the next one starts clean"
                    );
                }
                // `open` stays true: dropping `self` closes the connection.
                Err(e)
            }
        }
    }
}

impl<DB: sqlx::Database> Drop for TxConn<DB> {
    fn drop(&mut self) {
        if self.open {
            self.conn.close_on_drop();
        }
    }
}

impl<DB: sqlx::Database> std::fmt::Debug for TxConn<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxConn").field("open", &self.open).finish()
    }
}

impl<DB: sqlx::Database> std::ops::Deref for TxConn<DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &Self::Target {
        &self.conn
    }
}

impl<DB: sqlx::Database> std::ops::DerefMut for TxConn<DB> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.conn
    }
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

    #[test]
    fn the_sqlite_lock_file_sits_beside_the_database() {
        assert_eq!(
            sqlite_migration_lock_path(Path::new("data/bindery.db")),
            Path::new("data/bindery.db.migrate-lock")
        );
        assert_eq!(
            sqlite_migration_lock_path(Path::new("b.db")),
            Path::new("b.db.migrate-lock")
        );
    }

    #[tokio::test]
    async fn the_migration_lock_excludes_every_other_opener_until_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bindery.db.migrate-lock");
        let held = lock_file(path.clone()).await.expect("lock");
        // flock belongs to an open file: another open of the same file is another holder, as
        // another process's would be.
        let other = File::open(&path).expect("open");
        let other = match Flock::lock(other, FlockArg::LockExclusiveNonblock) {
            Err((file, Errno::EWOULDBLOCK)) => file,
            Ok(_) => panic!("a second exclusive lock was granted"),
            Err((_, e)) => panic!("flock: {e}"),
        };
        drop(held);
        let _second = Flock::lock(other, FlockArg::LockExclusiveNonblock)
            .map_err(|(_, e)| e)
            .expect("free once the first is dropped");
    }

    async fn sqlite_pool_of_one(dir: &tempfile::TempDir) -> Database {
        let url = DatabaseUrl::Sqlite {
            path: dir.path().join("bindery.db"),
        };
        let db = Database::connect(&url, 1).await.expect("connect");
        let Database::Sqlite(pool) = &db else {
            unreachable!()
        };
        sqlx::query("CREATE TABLE t (x INTEGER NOT NULL)")
            .execute(pool)
            .await
            .expect("create table");
        db
    }

    async fn insert_and_commit(db: &Database, x: i64) -> sqlx::Result<()> {
        let mut tx = db.begin().await?;
        on_tx!(&mut tx, |conn, _d| sqlx::query(
            "INSERT INTO t (x) VALUES ($1)"
        )
        .bind(x)
        .execute(&mut *conn)
        .await
        .map(drop)?);
        tx.commit().await
    }

    /// A COMMIT that fails after SQLite rolled the transaction back by itself, as it does on a
    /// full disk (here a commit hook refuses it: the same end state, without filling a disk).
    /// sqlx's own `Transaction` kept counting the connection as inside a transaction, and every
    /// later `BEGIN IMMEDIATE` on it failed with "non-zero transaction depth".
    #[tokio::test]
    async fn a_failed_commit_leaves_the_next_transaction_clean() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = sqlite_pool_of_one(&dir).await;
        let mut tx = db.begin().await.expect("begin");
        let Tx::Sqlite(t) = &mut tx else {
            unreachable!()
        };
        sqlx::query("INSERT INTO t (x) VALUES (1)")
            .execute(&mut **t)
            .await
            .expect("insert");
        t.lock_handle()
            .await
            .expect("handle")
            .set_commit_hook(|| false);
        let refused = tx.commit().await.expect_err("the hook refuses the commit");
        assert!(
            !refused.to_string().contains("transaction depth"),
            "{refused}"
        );
        // The pool's only connection is replaced, without the hook, and works.
        for x in 2..5 {
            insert_and_commit(&db, x)
                .await
                .expect("a transaction after the failed commit");
        }
        let Database::Sqlite(pool) = &db else {
            unreachable!()
        };
        let kept: Vec<i64> = sqlx::query_scalar("SELECT x FROM t ORDER BY x")
            .fetch_all(pool)
            .await
            .expect("select");
        assert_eq!(kept, [2, 3, 4]);
    }

    /// A transaction dropped unfinished (an error between BEGIN and COMMIT, a cancelled
    /// future) is rolled back with its connection, which is not reused.
    #[tokio::test]
    async fn a_dropped_transaction_is_rolled_back_and_its_connection_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = sqlite_pool_of_one(&dir).await;
        {
            let mut tx = db.begin().await.expect("begin");
            on_tx!(&mut tx, |conn, _d| sqlx::query(
                "INSERT INTO t (x) VALUES (1)"
            )
            .execute(&mut *conn)
            .await
            .map(drop)
            .expect("insert"));
        }
        insert_and_commit(&db, 2)
            .await
            .expect("the next transaction");
        let mut tx = db.begin().await.expect("begin");
        on_tx!(&mut tx, |conn, _d| sqlx::query(
            "INSERT INTO t (x) VALUES (3)"
        )
        .execute(&mut *conn)
        .await
        .map(drop)
        .expect("insert"));
        tx.rollback().await.expect("rollback");
        let Database::Sqlite(pool) = &db else {
            unreachable!()
        };
        let kept: Vec<i64> = sqlx::query_scalar("SELECT x FROM t")
            .fetch_all(pool)
            .await
            .expect("select");
        assert_eq!(kept, [2]);
    }
}

/// Whether `/proc/locks` text lists a write lock of `pid` on file `inode` (covering byte
/// `byte`, if given). A held lock's line reads `1: POSIX  ADVISORY  WRITE 1234 fd:01:5678 120
/// 120`; a waiter's has `->` after its number, and is not held.
fn write_lock_in(table: &str, pid: u32, inode: u64, byte: Option<u64>) -> bool {
    let pid = pid.to_string();
    table.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let covers = |byte: u64| {
            let start = fields.get(6).and_then(|s| s.parse::<u64>().ok());
            let end = fields.get(7).and_then(|e| {
                if *e == "EOF" {
                    Some(u64::MAX)
                } else {
                    e.parse().ok()
                }
            });
            start.zip(end).is_some_and(|(s, e)| s <= byte && byte <= e)
        };
        fields.get(1) != Some(&"->")
            && fields.get(3) == Some(&"WRITE")
            && fields.get(4) == Some(&pid.as_str())
            && fields
                .get(5)
                .and_then(|file| file.rsplit(':').next())
                .and_then(|i| i.parse::<u64>().ok())
                == Some(inode)
            && byte.is_none_or(covers)
    })
}

#[cfg(test)]
mod lock_tests {
    use super::*;

    #[test]
    fn a_held_write_lock_is_found_and_a_waiter_or_a_reader_is_not() {
        let table = "1: POSIX  ADVISORY  WRITE 1234 fd:01:5678 120 120\n\
                     1: -> POSIX  ADVISORY  WRITE 999 fd:01:5678 120 120\n\
                     2: POSIX  ADVISORY  READ 777 fd:01:5678 128 128\n\
                     3: FLOCK  ADVISORY  WRITE 1234 fd:01:42 0 EOF\n";
        assert!(write_lock_in(table, 1234, 5678, Some(120)));
        assert!(!write_lock_in(table, 1234, 5678, Some(121)), "another byte");
        assert!(write_lock_in(table, 1234, 42, None), "flock counts too");
        assert!(
            write_lock_in(table, 1234, 42, Some(7)),
            "to the end of the file"
        );
        assert!(
            !write_lock_in(table, 999, 5678, None),
            "only waiting for it"
        );
        assert!(!write_lock_in(table, 777, 5678, None), "a read lock");
        assert!(!write_lock_in(table, 1234, 1, None), "another file");
    }

    #[tokio::test]
    async fn a_process_writing_to_the_database_is_seen_holding_its_lock() {
        let (_dir, db) = crate::test_support::sqlite_database().await;
        let me = std::process::id();
        assert!(!db.write_locked_by(me));
        let Database::Sqlite(pool) = &db else {
            unreachable!()
        };
        let mut tx = pool.begin().await.expect("begin");
        sqlx::query("INSERT INTO workers (id, hostname, pid, version, started_at, heartbeat_at) VALUES ('w', 'h', 1, 'v', 0, 0)")
            .execute(&mut *tx)
            .await
            .expect("insert");
        assert!(db.write_locked_by(me), "inside a write transaction");
        tx.commit().await.expect("commit");
        assert!(!db.write_locked_by(me), "after it");
    }
}
