//! The migration lock, which makes migrating safe from several processes at once (a release
//! phase beside the previous release's processes, or `web` and `worker` starting together): the
//! second waits, then finds nothing left to do. On SQLite, whose sqlx migrator takes no lock at
//! all, it is an exclusive `flock` on a file beside the database; on PostgreSQL, an advisory
//! lock.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use sqlx::PgConnection;

/// The lock file beside a SQLite database, `bindery.db.migrate-lock` for `bindery.db`. It is
/// created once and never removed: removing a lock file lets two processes lock two files.
pub(super) fn sqlite_migration_lock_path(database: &Path) -> PathBuf {
    let mut name = database.file_name().unwrap_or_default().to_os_string();
    name.push(".migrate-lock");
    database.with_file_name(name)
}

/// Takes an exclusive `flock` on `path` (creating the file), waiting as long as another process
/// holds it. Released when the returned value is dropped, or by the kernel when the process
/// dies, so a killed migration never leaves it held.
pub(super) async fn lock_file(path: PathBuf) -> anyhow::Result<Flock<File>> {
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

/// Takes [`POSTGRES_MIGRATION_LOCK`] for `conn`'s session, waiting as long as another process
/// holds it. It lasts until [`unlock_postgres`] or the end of the session.
pub(super) async fn lock_postgres(conn: &mut PgConnection) -> sqlx::Result<()> {
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
    Ok(())
}

/// Releases [`lock_postgres`]'s lock, so that the connection can go back to the pool.
pub(super) async fn unlock_postgres(conn: &mut PgConnection) -> sqlx::Result<()> {
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(POSTGRES_MIGRATION_LOCK)
        .execute(&mut *conn)
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
