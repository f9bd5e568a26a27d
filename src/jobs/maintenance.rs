//! Keeping the queue in shape: scheduled jobs (delayed, retrying, snoozed) made available when
//! their time comes, which the pump does between claims, and finished jobs pruned after their
//! retention (`JobQueue::prune`, on a schedule). Jobs whose worker died are the rescuer's.

use crate::storage::Database;

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
