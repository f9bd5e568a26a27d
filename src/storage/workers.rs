//! Worker heartbeats: how the web process (and `/readyz`) knows a worker is alive and not stuck,
//! through storage alone.

use std::time::Duration;

use serde::Serialize;
use sqlx::FromRow;

use super::Database;

/// What a worker says about itself when it registers.
#[derive(Debug, Clone)]
pub struct WorkerIdentity {
    pub id: String,
    pub hostname: String,
    pub pid: u32,
    pub version: &'static str,
}

/// A worker row as read back, with its heartbeat age measured by the database's clock.
#[derive(Debug, Clone, FromRow, Serialize)]
pub struct WorkerHeartbeat {
    pub id: String,
    pub hostname: String,
    pub pid: i64,
    pub version: String,
    pub started_at: i64,
    pub heartbeat_at: i64,
    pub age_ms: i64,
}

impl WorkerHeartbeat {
    pub fn age(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.age_ms).unwrap_or(0))
    }
}

/// Inserts or refreshes this worker's row.
#[tracing::instrument(skip_all, fields(worker.id = %worker.id))]
pub async fn record_heartbeat(db: &Database, worker: &WorkerIdentity) -> sqlx::Result<()> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "INSERT INTO workers (id, hostname, pid, version, started_at, heartbeat_at)
             VALUES ($1, $2, $3, $4, {now}, {now})
             ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at"
        ))
        .bind(&worker.id)
        .bind(&worker.hostname)
        .bind(i64::from(worker.pid))
        .bind(worker.version)
        .execute(pool)
        .await?;
    });
    Ok(())
}

/// Removes a worker's row when it stops cleanly.
#[tracing::instrument(skip(db))]
pub async fn remove_worker(db: &Database, id: &str) -> sqlx::Result<()> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(d, "DELETE FROM workers WHERE id = $1"))
            .bind(id)
            .execute(pool)
            .await?;
    });
    Ok(())
}

/// One worker's heartbeat, if it has written one.
#[tracing::instrument(skip(db), level = "debug")]
pub async fn fetch_worker(db: &Database, id: &str) -> sqlx::Result<Option<WorkerHeartbeat>> {
    on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT id, hostname, pid, version, started_at, heartbeat_at,
                    {now} - heartbeat_at AS age_ms
             FROM workers WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(pool)
        .await
    })
}

/// All workers, freshest first.
#[tracing::instrument(skip(db), level = "debug")]
pub async fn list_workers(db: &Database) -> sqlx::Result<Vec<WorkerHeartbeat>> {
    on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT id, hostname, pid, version, started_at, heartbeat_at,
                    {now} - heartbeat_at AS age_ms
             FROM workers ORDER BY heartbeat_at DESC"
        ))
        .fetch_all(pool)
        .await
    })
}
