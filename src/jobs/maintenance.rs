//! Keeping the queue in shape: scheduled jobs (delayed, retrying, snoozed) made available when
//! their time comes, which the pump does between claims; the table vacuumed as the pump
//! claims; and finished jobs pruned after their retention (`JobQueue::prune`, on a schedule).
//! Jobs whose worker died are the rescuer's.

use crate::storage::Database;

/// How many jobs a worker claims between two vacuums of the jobs table that it runs itself,
/// on PostgreSQL.
///
/// A claim moves its rows out of the claim index's predicate, and the index keeps an entry for
/// each old row version until vacuum removes it: the next claim walks over all of them. On a
/// drain of a million waiting jobs autovacuum never came (by default it looks once a minute,
/// for a fifth of the table dead); the walk grew to 2,500 buffers a claim and the rate fell
/// from 23k to 10k jobs/s. Vacuumed every 50,000 claims, it stayed at 22–23k, each vacuum
/// taking 0.1–0.3 s of the server, with 5 million finished jobs kept beside the million too
/// (`plans::a_deep_drain_shows_where_the_claims_buffers_go`). Counted by each worker for
/// itself, so that however many there are, the table is vacuumed about once in that many claims.
/// The default of `RunnerConfig::vacuum_every`.
pub const VACUUM_EVERY: u64 = 50_000;

/// [`Vacuums`]' statement. `SKIP_LOCKED`: if another worker, or autovacuum, is at it already,
/// this one has nothing to add.
const VACUUM_JOBS: &str = "VACUUM (SKIP_LOCKED) jobs";

/// A worker's vacuums of the jobs table: counts the jobs it claims and, every `every` of them
/// ([`VACUUM_EVERY`] unless configured), vacuums the table on a task of its own, so that the
/// claims go on meanwhile; one at a time. Only on PostgreSQL: SQLite updates rows in place and
/// leaves nothing for a claim to walk over.
pub(crate) struct Vacuums {
    every: u64,
    claimed: u64,
    running: Option<tokio::task::JoinHandle<()>>,
}

impl Vacuums {
    pub(crate) fn every(claims: u64) -> Vacuums {
        Vacuums {
            every: claims.max(1),
            claimed: 0,
            running: None,
        }
    }

    pub(crate) fn claimed(&mut self, db: &Database, jobs: usize) {
        let Database::Postgres(pool) = db else {
            return;
        };
        self.claimed += jobs as u64;
        if self.claimed < self.every || self.running.as_ref().is_some_and(|v| !v.is_finished()) {
            return;
        }
        let claims = std::mem::take(&mut self.claimed);
        let pool = pool.clone();
        self.running = Some(tokio::spawn(async move {
            let started = std::time::Instant::now();
            match sqlx::raw_sql(VACUUM_JOBS).execute(&pool).await {
                Ok(_) => tracing::debug!(
                    claims,
                    took_ms = started.elapsed().as_millis(),
                    "vacuumed the jobs table"
                ),
                Err(e) => tracing::warn!(
                    claims,
                    error = %e,
                    "could not vacuum the jobs table; claims walk over more dead entries until autovacuum does"
                ),
            }
        }));
    }
}

/// How many finished jobs one pruning statement deletes.
pub(crate) const PRUNE_BATCH: i64 = 10_000;

/// Deletes up to [`PRUNE_BATCH`] finished jobs older than `retention_ms` with ids above
/// `after`, lowest first, except dead ones, which wait for a person; returns their ids. In id
/// order on the primary key, so each batch starts where the last one ended, and old finished
/// jobs (low ids) are found without an index of their own that every completion would write.
pub(crate) async fn prune_finished(
    db: &Database,
    retention_ms: i64,
    after: i64,
) -> sqlx::Result<Vec<i64>> {
    on_pool!(db, |pool, d| {
        sqlx::query_scalar(sql!(
            d,
            "DELETE FROM jobs WHERE id IN (
                SELECT id FROM jobs
                WHERE id > $2 AND finished_at IS NOT NULL AND finished_at < {now} - $1
                  AND state IN ('completed', 'discarded', 'cancelled')
                ORDER BY id LIMIT $3)
             RETURNING id"
        ))
        .bind(retention_ms)
        .bind(after)
        .bind(PRUNE_BATCH)
        .fetch_all(pool)
        .await
    })
}

/// [`promote_due`]'s statement.
pub(super) const PROMOTE_DUE: &str = "UPDATE jobs SET state = 'available'
                                      WHERE state = 'scheduled' AND run_at <= (SELECT {now})";

/// Makes scheduled jobs (delayed, retrying, snoozed) whose time has come available. Kept apart
/// so that the claim index holds only runnable jobs: a million jobs scheduled for tomorrow
/// cost a claim nothing. The clock is read once, in a subquery: compared directly, PostgreSQL
/// cannot search `jobs_scheduled` by a volatile expression and scanned the whole table (2 ms
/// with 10,000 jobs scheduled, every 20 ms of a busy worker).
pub(crate) async fn promote_due(db: &Database) -> sqlx::Result<u64> {
    on_pool!(db, |pool, d| {
        Ok(sqlx::query(sql!(d, PROMOTE_DUE))
            .execute(pool)
            .await?
            .rows_affected())
    })
}

/// How long until the next scheduled job is due, so an idle worker sleeps exactly until then.
pub(crate) async fn next_due_in_ms(db: &Database) -> sqlx::Result<Option<i64>> {
    on_pool!(db, |pool, d| {
        sqlx::query_scalar(sql!(
            d,
            "SELECT min(run_at) - {now} FROM jobs WHERE state = 'scheduled'"
        ))
        .fetch_one(pool)
        .await
    })
}
