//! What a running job can reach: the application context, its own identity, progress
//! reporting, and successor jobs that commit with its completion.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::NewJob;
use super::records::{self, ChildOutcome};
use super::workflow::Successors;
use crate::storage::Database;

/// Progress writes closer together than this are skipped (except 100%): a chatty job should
/// not turn into a write load.
const PROGRESS_MIN_INTERVAL: Duration = Duration::from_millis(200);

pub struct JobContext<C> {
    app: Arc<C>,
    db: Database,
    worker: Arc<str>,
    pub id: i64,
    pub attempt: i32,
    pub max_attempts: i32,
    pub tenant: String,
    pub workflow: Option<String>,
    successors: Arc<Mutex<Successors>>,
    last_progress: Mutex<Option<Instant>>,
}

impl<C> JobContext<C> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        app: Arc<C>,
        db: Database,
        worker: Arc<str>,
        id: i64,
        attempt: i32,
        max_attempts: i32,
        tenant: String,
        workflow: Option<String>,
        successors: Arc<Mutex<Successors>>,
    ) -> Self {
        Self {
            app,
            db,
            worker,
            id,
            attempt,
            max_attempts,
            tenant,
            workflow,
            successors,
            last_progress: Mutex::new(None),
        }
    }

    /// A context for another job (`burial` runs a dead job's `on_dead`), on the same worker;
    /// its successors are never committed.
    pub(crate) fn for_job(
        &self,
        id: i64,
        attempt: i32,
        max_attempts: i32,
        tenant: String,
        workflow: Option<String>,
    ) -> Self {
        Self::new(
            self.app.clone(),
            self.db.clone(),
            self.worker.clone(),
            id,
            attempt,
            max_attempts,
            tenant,
            workflow,
            Arc::new(Mutex::new(Successors::default())),
        )
    }

    pub(crate) fn db(&self) -> &Database {
        &self.db
    }

    /// The application context the worker was started with.
    pub fn app(&self) -> &C {
        &self.app
    }

    /// Reports progress (0–100) with a short message, readable by the web at once.
    pub async fn progress(&self, percent: i32, message: &str) -> anyhow::Result<()> {
        {
            let mut last = self.last_progress.lock().unwrap_or_else(|e| e.into_inner());
            if percent < 100 && last.is_some_and(|t| t.elapsed() < PROGRESS_MIN_INTERVAL) {
                return Ok(());
            }
            *last = Some(Instant::now());
        }
        set_progress(&self.db, self.id, &self.worker, percent, message).await?;
        Ok(())
    }

    /// Lets go of this job's unique key: from now on, enqueueing the same key makes a new job
    /// instead of returning this one. For keys that mean "at most one queued" (coalescing a
    /// burst of requests into one run): call it before reading any input, and every change
    /// committed before a later enqueue is seen either by this run or by the new job.
    /// False if this run no longer holds the job (cancelled, or its lease lost).
    pub async fn release_unique_key(&self) -> anyhow::Result<bool> {
        Ok(release_unique_key(&self.db, self.id, &self.worker).await?)
    }

    /// Enqueues `job` when, and only if, this job's completion commits. It inherits this job's
    /// workflow and tenant unless it names its own.
    pub fn then(&self, job: NewJob) {
        let job = self.inherit(job);
        self.lock_successors().then.push(job);
    }

    /// Fan-out/fan-in: on completion, enqueue `children` and a `join` job that runs exactly
    /// once, after every child has finished (however it finished).
    pub fn fan_out(&self, children: Vec<NewJob>, join: NewJob) {
        let children = children.into_iter().map(|c| self.inherit(c)).collect();
        let join = self.inherit(join);
        self.lock_successors().fan_out.push((children, join));
    }

    /// For a join: how each of its children ended.
    pub async fn children(&self) -> anyhow::Result<Vec<ChildOutcome>> {
        Ok(records::fetch_children(&self.db, self.id).await?)
    }

    fn inherit(&self, mut job: NewJob) -> NewJob {
        if job.tenant.is_empty() {
            job.tenant.clone_from(&self.tenant);
        }
        if job.workflow.is_none() {
            job.workflow.clone_from(&self.workflow);
        }
        job
    }

    fn lock_successors(&self) -> std::sync::MutexGuard<'_, Successors> {
        self.successors.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Records progress of a running job (only while `worker` holds it).
async fn set_progress(
    db: &Database,
    id: i64,
    worker: &str,
    percent: i32,
    message: &str,
) -> sqlx::Result<()> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE jobs SET progress = $3, progress_message = $4
             WHERE id = $1 AND locked_by = $2 AND state = 'running'"
        ))
        .bind(id)
        .bind(worker)
        .bind(percent.clamp(0, 100))
        .bind(message)
        .execute(pool)
        .await?;
    });
    Ok(())
}

/// Clears a running job's unique key (only while `worker` holds it), so the same key can be
/// enqueued again as a new job. Returns whether the job was still ours.
async fn release_unique_key(db: &Database, id: i64, worker: &str) -> sqlx::Result<bool> {
    let affected = on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE jobs SET unique_key = NULL
             WHERE id = $1 AND locked_by = $2 AND state = 'running'"
        ))
        .bind(id)
        .bind(worker)
        .execute(pool)
        .await?
        .rows_affected()
    });
    Ok(affected == 1)
}
