//! Applying the migrations on either backend, under the migration lock
//! ([`super::migration_lock`]). A run logs what it applied, and warns of migrations a later
//! release applied, which this one runs beside rather than refuses (see `beside_newer`).

use std::collections::HashSet;
use std::sync::LazyLock;
use std::time::Instant;

use sqlx::migrate::Migrator;
use sqlx::{PgPool, SqlitePool};

use super::migration_lock::{self, lock_file, sqlite_migration_lock_path};

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

pub(super) async fn migrate_sqlite(pool: &SqlitePool) -> anyhow::Result<()> {
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

pub(super) async fn migrate_postgres(pool: &PgPool) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    migration_lock::lock_postgres(&mut conn).await?;
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
        migration_lock::unlock_postgres(&mut conn).await?;
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
