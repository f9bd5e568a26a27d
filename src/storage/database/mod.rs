//! The database: SQLite (embedded default) or PostgreSQL (scale-out), behind one type.
//!
//! One build serves both, so SQL runs through `sqlx` at run time. Backend differences stay in
//! the small SQL functions of `storage/` and `jobs/`, each one `match` on [`Database`].
//!
//! Here are the type and the choices a pool is opened with. What its methods lean on is a file
//! each, so that one can be read without the others: `connecting.rs` (the options, and waiting
//! out a server that is not there yet), `migrating.rs` and `migration_lock.rs`,
//! `transaction.rs` (why Bindery ends its transactions itself), and `write_lock.rs` (whether a
//! process holds a SQLite database's write lock, for the supervisor).

mod connecting;
mod migrating;
mod migration_lock;
mod transaction;
mod write_lock;

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use sqlx::postgres::PgPoolOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, SqlitePool};

use crate::config::DatabaseUrl;
pub(crate) use connecting::patiently;
use connecting::{
    ACQUIRE_PATIENCE, connect_again, explain_connect_error, postgres_options, sqlite_locked,
    url_host,
};
pub use transaction::{Tx, TxConn};

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
            Database::Sqlite(pool) => migrating::migrate_sqlite(pool).await,
            Database::Postgres(pool) => migrating::migrate_postgres(pool).await,
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
        inode(file).is_some_and(|db| write_lock::write_lock_in(&table, pid, db, None))
            || inode(Path::new(&shm))
                .is_some_and(|shm| write_lock::write_lock_in(&table, pid, shm, Some(120)))
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
