//! The job as stored, and the statements that read it: one job, a workflow, a join's
//! children, listings, counts for progress displays and `/metrics`, the queues' depth.
//!
//! What reads here changes nothing; the client API (`queue`) and the engine call it.

use std::sync::LazyLock;

use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::FromRow;

use super::state::JobState;
use crate::storage::Database;

const JOB_COLUMNS: &str = "id, kind, queue, tenant, payload, state, priority, attempt, max_attempts, \
     run_at, unique_key, serial_key, workflow, join_id, pending_children, locked_by, locked_until, \
     progress, progress_message, result, errors, created_at, started_at, finished_at";

/// A job as stored, for status pages and the API.
#[derive(Debug, Clone, FromRow, Serialize)]
pub struct JobRecord {
    pub id: i64,
    pub kind: String,
    pub queue: String,
    pub tenant: String,
    pub payload: String,
    pub state: JobState,
    pub priority: i16,
    pub attempt: i32,
    pub max_attempts: i32,
    pub run_at: i64,
    pub unique_key: Option<String>,
    pub serial_key: Option<String>,
    pub workflow: Option<String>,
    pub join_id: Option<i64>,
    pub pending_children: i32,
    pub locked_by: Option<String>,
    pub locked_until: Option<i64>,
    pub progress: Option<i32>,
    pub progress_message: Option<String>,
    pub result: Option<String>,
    pub errors: String,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}

impl JobRecord {
    /// The newest error message of the job's history, if it has failed at all.
    pub fn last_error(&self) -> Option<String> {
        last_error(&self.errors)
    }

    /// The error history: one entry per failed attempt, oldest first.
    pub fn error_history(&self) -> Vec<serde_json::Value> {
        serde_json::from_str(&self.errors).unwrap_or_default()
    }

    pub fn result_json(&self) -> Option<serde_json::Value> {
        self.result
            .as_deref()
            .and_then(|r| serde_json::from_str(r).ok())
    }

    /// The job's result as the type its job stored it as (`Outcome::done_with`), or `None`
    /// when it has none or it is not one.
    pub fn result_as<T: DeserializeOwned>(&self) -> Option<T> {
        self.result
            .as_deref()
            .and_then(|r| serde_json::from_str(r).ok())
    }

    /// The job's payload as its job type, or `None` when it is not one.
    pub fn payload_as<T: DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_str(&self.payload).ok()
    }
}

/// How one child of a join ended, as the join reads it.
#[derive(Debug, Clone, FromRow, Serialize)]
pub struct ChildOutcome {
    pub id: i64,
    pub kind: String,
    pub state: JobState,
    pub result: Option<String>,
    pub errors: String,
}

impl ChildOutcome {
    pub fn succeeded(&self) -> bool {
        self.state == JobState::Completed
    }

    pub fn last_error(&self) -> Option<String> {
        last_error(&self.errors)
    }
}

/// The message of the newest entry of an error history (the `errors` column, written by the
/// runner as `[{"attempt", "at", "error", "causes"}, …]`).
pub fn last_error(errors: &str) -> Option<String> {
    let history: Vec<serde_json::Value> = serde_json::from_str(errors).ok()?;
    history
        .last()
        .and_then(|e| e.get("error"))
        .and_then(|e| e.as_str())
        .map(str::to_owned)
}

/// All the jobs of one workflow, read in one query.
#[derive(Debug, Clone, Serialize)]
pub struct WorkflowState {
    pub jobs: Vec<JobRecord>,
}

impl WorkflowState {
    /// No job of the workflow can still run.
    pub fn finished(&self) -> bool {
        !self.jobs.is_empty() && self.jobs.iter().all(|j| j.state.is_terminal())
    }

    pub fn failed(&self) -> bool {
        self.jobs
            .iter()
            .any(|j| matches!(j.state, JobState::Dead | JobState::Discarded))
    }
}

pub(crate) async fn fetch_job(db: &Database, id: i64) -> sqlx::Result<Option<JobRecord>> {
    static SQL: LazyLock<String> =
        LazyLock::new(|| format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1"));
    on_pool!(db, |pool, _d| {
        sqlx::query_as(SQL.as_str())
            .bind(id)
            .fetch_optional(pool)
            .await
    })
}

pub(crate) async fn fetch_workflow(db: &Database, workflow: &str) -> sqlx::Result<WorkflowState> {
    static SQL: LazyLock<String> =
        LazyLock::new(|| format!("SELECT {JOB_COLUMNS} FROM jobs WHERE workflow = $1 ORDER BY id"));
    let jobs = on_pool!(db, |pool, _d| {
        sqlx::query_as(SQL.as_str())
            .bind(workflow)
            .fetch_all(pool)
            .await?
    });
    Ok(WorkflowState { jobs })
}

/// Jobs of a workflow counted by kind and state: what a progress display needs, without the
/// payloads, results and error histories of every job.
#[derive(Debug, Clone, FromRow, Serialize)]
pub struct StepCount {
    pub kind: String,
    pub state: JobState,
    pub jobs: i64,
    /// Sum of the progress (0–100) the counted jobs reported.
    pub progress: i64,
    /// One of their progress messages.
    pub message: Option<String>,
}

pub(crate) async fn count_workflow(db: &Database, workflow: &str) -> sqlx::Result<Vec<StepCount>> {
    on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT kind, state, count(*) AS jobs,
                    CAST(COALESCE(sum(progress), 0) AS BIGINT) AS progress,
                    max(progress_message) AS message
             FROM jobs WHERE workflow = $1
             GROUP BY kind, state"
        ))
        .bind(workflow)
        .fetch_all(pool)
        .await
    })
}

/// Jobs of one kind in one state, with their attempts and run time, for `/metrics`.
#[derive(Debug, Clone, FromRow, Serialize)]
pub struct KindStats {
    pub kind: String,
    pub state: JobState,
    pub jobs: i64,
    pub attempts: i64,
    /// Summed run time (started to finished) of the finished ones, in ms.
    pub run_ms: i64,
}

pub(crate) async fn kind_stats(db: &Database) -> sqlx::Result<Vec<KindStats>> {
    on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT kind, state, count(*) AS jobs,
                    CAST(COALESCE(sum(attempt), 0) AS BIGINT) AS attempts,
                    CAST(COALESCE(sum(finished_at - started_at), 0) AS BIGINT) AS run_ms
             FROM jobs GROUP BY kind, state"
        ))
        .fetch_all(pool)
        .await
    })
}

pub(crate) async fn fetch_children(db: &Database, join_id: i64) -> sqlx::Result<Vec<ChildOutcome>> {
    on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT id, kind, state, result, errors FROM jobs WHERE join_id = $1 ORDER BY id"
        ))
        .bind(join_id)
        .fetch_all(pool)
        .await
    })
}

/// Filters for listing jobs; all optional.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    pub state: Option<JobState>,
    pub queue: Option<String>,
    pub tenant: Option<String>,
    pub kind: Option<String>,
    /// The jobs of one workflow (a book's steps, by the book's id).
    pub workflow: Option<String>,
    pub before_id: Option<i64>,
    pub limit: i64,
}

/// Jobs filtered by state, queue, tenant, kind and workflow, newest first, `limit` at most, before
/// `before_id`. Only the filters given become conditions, and the state (a closed set) is
/// written into the statement rather than bound, so that the partial indexes on state (dead
/// jobs above all, which wait for a person among millions of finished ones) can serve it.
pub(crate) async fn list_jobs(
    db: &Database,
    filter: &JobFilter,
    limit: i64,
) -> sqlx::Result<Vec<JobRecord>> {
    let mut sql = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE 1 = 1");
    if let Some(state) = filter.state {
        sql.push_str(&format!(" AND state = '{}'", state.as_str()));
    }
    let mut n = 0;
    let mut condition = |column: &str, op: &str, given: bool| {
        if given {
            n += 1;
            sql.push_str(&format!(" AND {column} {op} ${n}"));
        }
    };
    condition("queue", "=", filter.queue.is_some());
    condition("tenant", "=", filter.tenant.is_some());
    condition("kind", "=", filter.kind.is_some());
    condition("workflow", "=", filter.workflow.is_some());
    condition("id", "<", filter.before_id.is_some());
    sql.push_str(&format!(" ORDER BY id DESC LIMIT ${}", n + 1));
    on_pool!(db, |pool, _d| {
        let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
        for value in [
            &filter.queue,
            &filter.tenant,
            &filter.kind,
            &filter.workflow,
        ]
        .into_iter()
        .flatten()
        {
            query = query.bind(value.as_str());
        }
        if let Some(before) = filter.before_id {
            query = query.bind(before);
        }
        query.bind(limit).fetch_all(pool).await
    })
}

/// The newest job a schedule enqueued (its unique keys are `schedule:NAME:SLOT`). The key
/// range reads the unique-key index, whatever the database's collation: digits sort after the
/// prefix and before `99999999999` in every collation, and the exact prefix is checked after.
pub(crate) async fn last_scheduled(db: &Database, name: &str) -> sqlx::Result<Option<JobRecord>> {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {JOB_COLUMNS} FROM jobs
             WHERE unique_key >= $1 AND unique_key <= $2
               AND substr(unique_key, 1, length($1)) = $1
             ORDER BY id DESC LIMIT 1"
        )
    });
    let prefix = format!("schedule:{name}:");
    let upper = format!("{prefix}99999999999");
    on_pool!(db, |pool, _d| {
        sqlx::query_as(SQL.as_str())
            .bind(&prefix)
            .bind(&upper)
            .fetch_optional(pool)
            .await
    })
}

/// Per queue: how many jobs wait in each state, and how long the oldest due one has waited.
#[derive(Debug, Clone, FromRow, Serialize)]
pub struct QueueRow {
    pub queue: String,
    pub state: JobState,
    pub count: i64,
    pub oldest_due_ms: Option<i64>,
}

pub(crate) async fn queue_rows(db: &Database) -> sqlx::Result<Vec<QueueRow>> {
    on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT queue, state, count(*) AS count,
                    CASE WHEN state = 'available' THEN {now} - min(run_at) END AS oldest_due_ms
             FROM jobs WHERE state IN ('available', 'scheduled', 'waiting', 'running', 'dead')
             GROUP BY queue, state ORDER BY queue, state"
        ))
        .fetch_all(pool)
        .await
    })
}

/// Finished jobs (completed, discarded, cancelled) per queue and state: a read of the whole
/// retained history, so only for an operator who asks.
pub(crate) async fn finished_rows(db: &Database) -> sqlx::Result<Vec<QueueRow>> {
    on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT queue, state, count(*) AS count, CAST(NULL AS BIGINT) AS oldest_due_ms
             FROM jobs WHERE state IN ('completed', 'discarded', 'cancelled')
             GROUP BY queue, state ORDER BY queue, state"
        ))
        .fetch_all(pool)
        .await
    })
}

pub(crate) async fn paused_queues(db: &Database) -> sqlx::Result<Vec<String>> {
    on_pool!(db, |pool, d| {
        sqlx::query_scalar(sql!(
            d,
            "SELECT name FROM job_queues WHERE paused ORDER BY name"
        ))
        .fetch_all(pool)
        .await
    })
}
