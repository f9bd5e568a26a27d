//! The client side of the queue, used by the web and by anything that enqueues or inspects
//! jobs: enqueue (alone or inside the caller's transaction), read, wait, operate.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use tokio::sync::{OnceCell, watch};

use super::enqueue::{insert_bulk, insert_jobs};
use super::maintenance::{PRUNE_BATCH, prune_finished};
use super::records::{self, JobFilter, JobRecord, KindStats, QueueRow, StepCount, WorkflowState};
use super::state::JobState;
use super::wake::{CHANNEL_DONE, CHANNEL_JOBS, listen, notify};
use super::workflow::release_joins;
use super::{Enqueued, NewJob};
use crate::storage::sql::Dialect;
use crate::storage::{Database, Tx};

/// What `wait_for` waits on.
#[derive(Debug, Clone)]
pub enum WaitTarget {
    Job(i64),
    Workflow(String),
}

/// Queue depth and age, for metrics and autoscalers.
#[derive(Debug, Clone, Serialize)]
pub struct QueueStats {
    pub rows: Vec<QueueRow>,
    pub paused: Vec<String>,
}

impl QueueStats {
    /// Jobs waiting to run, across queues.
    pub fn available(&self) -> i64 {
        self.rows
            .iter()
            .filter(|r| r.state == JobState::Available)
            .map(|r| r.count)
            .sum()
    }

    /// How long the oldest due job has waited, across queues.
    pub fn oldest_due(&self) -> Option<Duration> {
        self.rows
            .iter()
            .filter_map(|r| r.oldest_due_ms)
            .max()
            .map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
    }
}

/// A handle on the job queue. Cheap to clone.
#[derive(Clone, Debug)]
pub struct JobQueue {
    db: Database,
    done: Arc<OnceCell<watch::Receiver<u64>>>,
}

impl JobQueue {
    pub fn new(db: Database) -> Self {
        Self {
            db,
            done: Arc::new(OnceCell::new()),
        }
    }

    /// Enqueues one job in its own transaction.
    #[tracing::instrument(skip_all, fields(job.kind = %job.kind))]
    pub async fn enqueue(&self, job: NewJob) -> anyhow::Result<Enqueued> {
        let mut tx = self.db.begin().await?;
        let enqueued = self.enqueue_in(&mut tx, job).await?;
        tx.commit().await.context("committing an enqueue")?;
        Ok(enqueued)
    }

    /// Enqueues inside the caller's transaction, so the job exists if and only if the
    /// application rows written beside it do.
    pub async fn enqueue_in(&self, tx: &mut Tx, job: NewJob) -> anyhow::Result<Enqueued> {
        let enqueued = insert_jobs(tx, std::slice::from_ref(&job), &Default::default())
            .await
            .context("inserting a job")?;
        notify(tx, CHANNEL_JOBS).await?;
        Ok(enqueued[0])
    }

    /// Enqueues many jobs in one transaction with few statements (jobs whose unique key is
    /// taken are skipped). Returns how many were inserted.
    #[tracing::instrument(skip_all, fields(count = jobs.len()))]
    pub async fn enqueue_bulk(&self, jobs: &[NewJob]) -> anyhow::Result<u64> {
        let mut tx = self.db.begin().await?;
        let inserted = insert_bulk(&mut tx, jobs).await.context("bulk insert")?;
        notify(&mut tx, CHANNEL_JOBS).await?;
        tx.commit().await.context("committing a bulk enqueue")?;
        Ok(inserted)
    }

    pub async fn job(&self, id: i64) -> anyhow::Result<Option<JobRecord>> {
        Ok(records::fetch_job(&self.db, id).await?)
    }

    /// Every job of a workflow, in one query.
    pub async fn workflow(&self, workflow: &str) -> anyhow::Result<WorkflowState> {
        Ok(records::fetch_workflow(&self.db, workflow).await?)
    }

    /// Every retained job counted by kind and state, with attempts and run time (for metrics).
    pub async fn kind_stats(&self) -> anyhow::Result<Vec<KindStats>> {
        Ok(records::kind_stats(&self.db).await?)
    }

    /// A workflow's jobs counted by kind and state (one small query, for progress displays).
    pub async fn workflow_counts(&self, workflow: &str) -> anyhow::Result<Vec<StepCount>> {
        Ok(records::count_workflow(&self.db, workflow).await?)
    }

    pub async fn list(&self, filter: &JobFilter) -> anyhow::Result<Vec<JobRecord>> {
        let limit = if filter.limit > 0 {
            filter.limit.min(1000)
        } else {
            100
        };
        Ok(records::list_jobs(&self.db, filter, limit).await?)
    }

    /// The newest job the schedule `name` enqueued, if one is still kept.
    pub async fn last_scheduled(&self, name: &str) -> anyhow::Result<Option<JobRecord>> {
        Ok(records::last_scheduled(&self.db, name).await?)
    }

    pub async fn stats(&self) -> anyhow::Result<QueueStats> {
        Ok(QueueStats {
            rows: records::queue_rows(&self.db).await?,
            paused: records::paused_queues(&self.db).await?,
        })
    }

    /// Finished jobs still retained, per queue and state (reads the whole history).
    pub async fn finished_counts(&self) -> anyhow::Result<Vec<QueueRow>> {
        Ok(records::finished_rows(&self.db).await?)
    }

    pub async fn pause(&self, queue: &str) -> anyhow::Result<()> {
        Ok(set_paused(&self.db, queue, true).await?)
    }

    pub async fn resume(&self, queue: &str) -> anyhow::Result<()> {
        set_paused(&self.db, queue, false).await?;
        let mut tx = self.db.begin().await?;
        notify(&mut tx, CHANNEL_JOBS).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Runs a dead, discarded or cancelled job again, with fresh attempts. False if the job is
    /// not in one of those states.
    pub async fn retry(&self, id: i64) -> anyhow::Result<bool> {
        let mut tx = self.db.begin().await?;
        let retried = self.retry_in(&mut tx, id).await?;
        tx.commit().await?;
        Ok(retried)
    }

    /// [`retry`](Self::retry) inside the caller's transaction, so the job runs again if and
    /// only if what was written beside it commits (a book marked processing again).
    pub async fn retry_in(&self, tx: &mut Tx, id: i64) -> anyhow::Result<bool> {
        let retried = retry_job(tx, id).await?;
        if retried {
            notify(tx, CHANNEL_JOBS).await?;
        }
        Ok(retried)
    }

    /// Cancels a job that has not finished. A running one is stopped by its worker within a
    /// heartbeat. False if it had already finished.
    pub async fn cancel(&self, id: i64, reason: &str) -> anyhow::Result<bool> {
        self.end(id, JobState::Cancelled, reason).await
    }

    /// Fails a job that has not finished, as bad input, without retries.
    pub async fn discard(&self, id: i64, reason: &str) -> anyhow::Result<bool> {
        self.end(id, JobState::Discarded, reason).await
    }

    async fn end(&self, id: i64, state: JobState, reason: &str) -> anyhow::Result<bool> {
        let ended = end_job(&self.db, id, state, reason).await?;
        if ended {
            let mut tx = self.db.begin().await?;
            notify(&mut tx, CHANNEL_DONE).await?;
            notify(&mut tx, CHANNEL_JOBS).await?;
            tx.commit().await?;
        }
        Ok(ended)
    }

    /// Deletes finished jobs older than `retention` (dead ones stay for a person to look at),
    /// oldest first, in batches of [`PRUNE_BATCH`], each its own short transaction: ten
    /// million finished jobs are not one statement that holds its locks (and the WAL, and a
    /// worker's lease) for minutes, and an interrupted prune keeps what it did.
    pub async fn prune(&self, retention: Duration) -> anyhow::Result<u64> {
        let ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        let (mut pruned, mut after) = (0, 0);
        loop {
            let ids = prune_finished(&self.db, ms, after).await?;
            pruned += ids.len() as u64;
            match ids.iter().max() {
                Some(&last) if ids.len() == PRUNE_BATCH as usize => after = last,
                _ => return Ok(pruned),
            }
        }
    }

    /// Waits until a job or a whole workflow has finished, or `timeout` passes. Returns whether
    /// it finished. Reads storage only: LISTEN/NOTIFY on PostgreSQL (with polling in case a
    /// notification is lost), cheap polling on SQLite.
    pub async fn wait_for(&self, target: &WaitTarget, timeout: Duration) -> anyhow::Result<bool> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut done = self.done_signal().await;
        let mut poll = Duration::from_millis(5);
        loop {
            if self.is_finished(target).await? {
                return Ok(true);
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            let nap = poll.min(deadline - now);
            match done.as_mut() {
                Some(rx) => {
                    tokio::select! {
                        _ = rx.changed() => {}
                        () = tokio::time::sleep(nap) => {}
                    }
                    // Notifications do the work here; polling is only the safety net.
                    poll = Duration::from_secs(1);
                }
                None => {
                    tokio::time::sleep(nap).await;
                    poll = (poll * 2).min(Duration::from_millis(100));
                }
            }
        }
    }

    async fn is_finished(&self, target: &WaitTarget) -> anyhow::Result<bool> {
        Ok(match target {
            WaitTarget::Job(id) => records::fetch_job(&self.db, *id)
                .await?
                .is_none_or(|j| j.state.is_terminal()),
            WaitTarget::Workflow(w) => records::fetch_workflow(&self.db, w).await?.finished(),
        })
    }

    /// On PostgreSQL, a watch that ticks whenever some job finishes, fed by one LISTEN
    /// connection per process. None on SQLite.
    async fn done_signal(&self) -> Option<watch::Receiver<u64>> {
        let Database::Postgres(pool) = &self.db else {
            return None;
        };
        let pool = pool.clone();
        let rx = self
            .done
            .get_or_init(|| async move {
                let (tx, rx) = watch::channel(0u64);
                tokio::spawn(listen(pool, CHANNEL_DONE, move || {
                    tx.send_modify(|n| *n = n.wrapping_add(1));
                }));
                rx
            })
            .await;
        Some(rx.clone())
    }
}

async fn set_paused(db: &Database, queue: &str, paused: bool) -> sqlx::Result<()> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "INSERT INTO job_queues (name, paused, updated_at) VALUES ($1, $2, {now})
             ON CONFLICT (name) DO UPDATE SET paused = excluded.paused,
                                              updated_at = excluded.updated_at"
        ))
        .bind(queue)
        .bind(paused)
        .execute(pool)
        .await?;
    });
    Ok(())
}

/// Puts a finished job back in the queue with a fresh set of attempts; its history stays.
/// A child's join is opened again to wait for it, since what the join decided came from the
/// child's failure (see [`reopen_join`]).
async fn retry_job(tx: &mut Tx, id: i64) -> sqlx::Result<bool> {
    let join: Option<Option<i64>> = on_tx!(tx, |conn, d| {
        sqlx::query_scalar(sql!(
            d,
            "UPDATE jobs SET state = 'available', attempt = 0, run_at = {now},
                    finished_at = NULL, locked_by = NULL, locked_until = NULL
             WHERE id = $1 AND state IN ('dead', 'discarded', 'cancelled')
             RETURNING join_id"
        ))
        .bind(id)
        .fetch_optional(conn)
        .await?
    });
    let Some(join) = join else { return Ok(false) };
    if let Some(join) = join {
        reopen_join(tx, join).await?;
    }
    Ok(true)
}

/// A join one of whose children runs again waits for it once more: still waiting, it counts
/// one more child; already released, or ended without success (a join fails or cancels its
/// book when a child failed), it waits for this child alone, with fresh attempts. A join that
/// completed, or is running, is left alone: its successors are already under way.
async fn reopen_join(tx: &mut Tx, join: i64) -> sqlx::Result<()> {
    on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "UPDATE jobs SET pending_children = CASE WHEN state = 'waiting'
                                                     THEN pending_children + 1 ELSE 1 END,
                    state = 'waiting', attempt = 0, finished_at = NULL,
                    locked_by = NULL, locked_until = NULL
             WHERE id = $1 AND state IN ('waiting', 'available', 'scheduled', 'dead',
                                         'discarded', 'cancelled')"
        ))
        .bind(join)
        .execute(conn)
        .await?;
    });
    Ok(())
}

/// Ends a job that has not finished: `cancelled` or `discarded`, with a reason in its history.
/// A running job is taken from its worker, which notices at its next heartbeat and stops it.
async fn end_job(db: &Database, id: i64, state: JobState, reason: &str) -> sqlx::Result<bool> {
    let mut tx = db.begin().await?;
    let join: Option<Option<i64>> = on_tx!(&mut tx, |conn, d| {
        match d {
            Dialect::Sqlite => sqlx::query_scalar(sql!(
                d,
                "UPDATE jobs SET state = $2, finished_at = {now}, locked_by = NULL,
                        locked_until = NULL,
                        errors = json_insert(errors, '$[#]', json_object(
                            'attempt', attempt, 'at', {now}, 'error', $3))
                 WHERE id = $1 AND state IN ('available', 'scheduled', 'waiting', 'running')
                 RETURNING join_id"
            )),
            Dialect::Postgres => sqlx::query_scalar(sql!(
                d,
                "UPDATE jobs SET state = $2, finished_at = {now}, locked_by = NULL,
                        locked_until = NULL,
                        errors = (errors::jsonb || jsonb_build_array(jsonb_build_object(
                            'attempt', attempt, 'at', {now}, 'error', $3::text)))::text
                 WHERE id = $1 AND state IN ('available', 'scheduled', 'waiting', 'running')
                 RETURNING join_id"
            )),
        }
        .bind(id)
        .bind(state)
        .bind(reason)
        .fetch_optional(&mut *conn)
        .await?
    });
    let Some(join) = join else {
        tx.rollback().await?;
        return Ok(false);
    };
    release_joins(&mut tx, join.as_slice()).await?;
    tx.commit().await?;
    Ok(true)
}
