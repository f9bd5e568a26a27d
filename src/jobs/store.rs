//! Every SQL statement of the job engine, for both backends.
//!
//! Most statements are written once (see `storage::sql`); the few that differ (array
//! parameters, row locking, JSON) are written twice, side by side. Completing a job, which
//! three paths do, is one builder ([`completion`]) that each of them calls.
//!
//! This module is below `queue` (the client API), which calls it; it reads nothing from there.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Serialize;
use sqlx::FromRow;

use super::burial;
use super::wake::{self, CHANNEL_DONE, CHANNEL_JOBS};
use super::{Enqueued, JobState, NewJob};
use crate::storage::sql::Dialect;
use crate::storage::{Database, Tx};

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

/// A claimed job, as the runner needs it.
#[derive(Debug, Clone, FromRow)]
pub(crate) struct ClaimedRow {
    pub id: i64,
    pub kind: String,
    pub payload: String,
    pub queue: String,
    pub tenant: String,
    pub attempt: i32,
    pub max_attempts: i32,
    pub workflow: Option<String>,
    pub join_id: Option<i64>,
    pub serial_key: Option<String>,
    pub priority: i16,
    pub fair_tag: i64,
    pub cost: i64,
    /// Workers that died or froze while running it (or while it waited in their local queue).
    pub lost_workers: i32,
}

/// A job whose next lost worker would be its last is a suspect: a worker runs it only while
/// it runs no other (see [`claim_and_complete`]). One lost worker is most often a deploy or a
/// kill that took every job it held; a job that has lost two is likely the one killing them.
pub const SUSPECT_LOST_WORKERS: i32 = MAX_LOST_WORKERS - 1;

impl ClaimedRow {
    pub fn suspect(&self) -> bool {
        self.lost_workers >= SUSPECT_LOST_WORKERS
    }
}

/// The claim's condition that leaves suspects out, added only while the worker holds one: a
/// parameter (`lost_workers < $n`) in every claim made PostgreSQL's generic plan guess a third
/// of the rows gone, and sort the whole queue instead of walking the claim index (7x slower
/// drains). A constant it estimates from the column's statistics: nearly all rows pass.
const NO_SUSPECTS: &str = "AND c.lost_workers < 2";
const _: () = assert!(SUSPECT_LOST_WORKERS == 2, "NO_SUSPECTS names the bound");

// ---------------------------------------------------------------------------------------------
// Enqueue

/// Where inserted jobs hang: under a join, in a state other than available.
#[derive(Debug, Clone, Default)]
pub(crate) struct Placement {
    pub join_id: Option<i64>,
    pub workflow: Option<String>,
    /// A join waiting for this many children (state `waiting`); 0 means available.
    pub pending_children: i32,
}

/// The fair tag for the next job of `tenant` at `priority`: after the tenant's own queued jobs,
/// and no earlier than the oldest job that is due now (the queue's "virtual time").
async fn next_fair_tag(tx: &mut Tx, tenant: &str, priority: i16) -> sqlx::Result<i64> {
    let (front, own): (Option<i64>, Option<i64>) = on_tx!(tx, |conn, d| {
        let front: Option<i64> = sqlx::query_scalar(sql!(
            d,
            "SELECT min(fair_tag) FROM jobs
             WHERE state = 'available' AND priority = $1"
        ))
        .bind(priority)
        .fetch_one(&mut *conn)
        .await?;
        let own: Option<i64> = sqlx::query_scalar(sql!(
            d,
            "SELECT max(fair_tag) FROM jobs
             WHERE state = 'available' AND tenant = $1 AND priority = $2"
        ))
        .bind(tenant)
        .bind(priority)
        .fetch_one(&mut *conn)
        .await?;
        (front, own)
    });
    Ok(match (front, own) {
        (Some(front), Some(own)) => front.max(own + 1),
        (Some(front), None) => front,
        (None, Some(own)) => own + 1,
        (None, None) => 0,
    })
}

/// Fair tags for new jobs: per (tenant, priority), consecutive, continuing from what is queued.
async fn assign_fair_tags(tx: &mut Tx, jobs: &[NewJob]) -> sqlx::Result<Vec<i64>> {
    let mut last: BTreeMap<(&str, i16), i64> = BTreeMap::new();
    let mut tags = Vec::with_capacity(jobs.len());
    for job in jobs {
        let group = (job.tenant.as_str(), job.priority);
        let tag = match last.get(&group) {
            Some(t) => t + 1,
            None => next_fair_tag(tx, &job.tenant, job.priority).await?,
        };
        last.insert(group, tag);
        tags.push(tag);
    }
    Ok(tags)
}

/// Inserts jobs one statement each, returning their ids in order (the existing job's id for a
/// unique key that is taken). For enqueue, successors and fan-out.
pub(crate) async fn insert_jobs(
    tx: &mut Tx,
    jobs: &[NewJob],
    placement: &Placement,
) -> sqlx::Result<Vec<Enqueued>> {
    let tags = assign_fair_tags(tx, jobs).await?;
    let mut out = Vec::with_capacity(jobs.len());
    for (job, tag) in jobs.iter().zip(tags) {
        let state = if placement.pending_children > 0 {
            JobState::Waiting
        } else if job.delay_ms > 0 {
            JobState::Scheduled
        } else {
            JobState::Available
        };
        let workflow = job.workflow.as_ref().or(placement.workflow.as_ref());
        // The holder of a taken key may let go of it (a finished job pruned, a running job
        // releasing it) between our insert and our look-up: then the insert is tried again.
        let mut tries = 0;
        let enqueued = loop {
            tries += 1;
            let inserted: Option<i64> = on_tx!(tx, |conn, d| {
                sqlx::query_scalar(sql!(
                d,
                "INSERT INTO jobs (kind, queue, tenant, payload, state, priority, fair_tag, run_at,
                                   max_attempts, unique_key, serial_key, workflow, join_id,
                                   pending_children, cost, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, {now} + $8, $9, $10, $11, $12, $13, $14, $15,
                         {now})
                 ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING
                 RETURNING id"
            ))
                .bind(&job.kind)
                .bind(&job.queue)
                .bind(&job.tenant)
                .bind(&job.payload)
                .bind(state)
                .bind(job.priority)
                .bind(tag)
                .bind(job.delay_ms)
                .bind(job.max_attempts)
                .bind(&job.unique_key)
                .bind(&job.serial_key)
                .bind(workflow)
                .bind(placement.join_id)
                .bind(placement.pending_children)
                .bind(job.cost)
                .fetch_optional(&mut *conn)
                .await?
            });
            if let Some(id) = inserted {
                break Enqueued { id, inserted: true };
            }
            let holder: Option<i64> = on_tx!(tx, |conn, d| {
                sqlx::query_scalar(sql!(d, "SELECT id FROM jobs WHERE unique_key = $1"))
                    .bind(&job.unique_key)
                    .fetch_optional(&mut *conn)
                    .await?
            });
            match holder {
                Some(id) => {
                    break Enqueued {
                        id,
                        inserted: false,
                    };
                }
                None if tries < 3 => continue,
                None => return Err(sqlx::Error::RowNotFound),
            }
        };
        out.push(enqueued);
    }
    Ok(out)
}

/// Inserts many jobs in few statements. Jobs whose unique key is taken are skipped. Returns how
/// many were inserted.
pub(crate) async fn insert_bulk(tx: &mut Tx, jobs: &[NewJob]) -> sqlx::Result<u64> {
    let fair = assign_fair_tags(tx, jobs).await?;
    let mut inserted = 0;
    match tx {
        Tx::Postgres(t) => {
            for (chunk, tags) in jobs.chunks(10_000).zip(fair.chunks(10_000)) {
                let col = |f: fn(&NewJob) -> String| chunk.iter().map(f).collect::<Vec<String>>();
                let result = sqlx::query(sql!(
                    Dialect::Postgres,
                    "WITH now AS (SELECT {now} AS ms)
                     INSERT INTO jobs (kind, queue, tenant, payload, state, priority, fair_tag,
                                       run_at, max_attempts, unique_key, serial_key, workflow,
                                       created_at)
                     SELECT k, q, t, p, CASE WHEN d > 0 THEN 'scheduled' ELSE 'available' END, pr, ft,
                            (SELECT ms FROM now) + d, ma, uk, sk,
                            wf, (SELECT ms FROM now)
                     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::smallint[],
                                 $6::bigint[], $7::bigint[], $8::int[], $9::text[], $10::text[],
                                 $11::text[])
                          AS u(k, q, t, p, pr, ft, d, ma, uk, sk, wf)
                     ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING"
                ))
                .bind(col(|j| j.kind.clone()))
                .bind(col(|j| j.queue.clone()))
                .bind(col(|j| j.tenant.clone()))
                .bind(col(|j| j.payload.clone()))
                .bind(chunk.iter().map(|j| j.priority).collect::<Vec<i16>>())
                .bind(tags.to_vec())
                .bind(chunk.iter().map(|j| j.delay_ms).collect::<Vec<i64>>())
                .bind(chunk.iter().map(|j| j.max_attempts).collect::<Vec<i32>>())
                .bind(
                    chunk
                        .iter()
                        .map(|j| j.unique_key.clone())
                        .collect::<Vec<Option<String>>>(),
                )
                .bind(
                    chunk
                        .iter()
                        .map(|j| j.serial_key.clone())
                        .collect::<Vec<Option<String>>>(),
                )
                .bind(
                    chunk
                        .iter()
                        .map(|j| j.workflow.clone())
                        .collect::<Vec<Option<String>>>(),
                )
                .execute(&mut **t)
                .await?;
                inserted += result.rows_affected();
            }
        }
        Tx::Sqlite(t) => {
            // SQLite caps bound parameters at 32766; 11 per row.
            for (chunk, tags) in jobs.chunks(2_000).zip(fair.chunks(2_000)) {
                let mut builder = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                    "INSERT INTO jobs (kind, queue, tenant, payload, state, priority, fair_tag, \
                     run_at, max_attempts, unique_key, serial_key, workflow, created_at) ",
                );
                builder.push_values(chunk.iter().zip(tags), |mut row, (job, tag)| {
                    row.push_bind(job.kind.clone())
                        .push_bind(job.queue.clone())
                        .push_bind(job.tenant.clone())
                        .push_bind(job.payload.clone())
                        .push(if job.delay_ms > 0 {
                            "'scheduled'"
                        } else {
                            "'available'"
                        })
                        .push_bind(job.priority)
                        .push_bind(*tag)
                        .push(concat!(sqlite_now!(), " + "))
                        .push_bind_unseparated(job.delay_ms)
                        .push_bind(job.max_attempts)
                        .push_bind(job.unique_key.clone())
                        .push_bind(job.serial_key.clone())
                        .push_bind(job.workflow.clone())
                        .push(sqlite_now!());
                });
                builder.push(" ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING");
                let result = builder.build().execute(&mut **t).await?;
                inserted += result.rows_affected();
            }
        }
    }
    Ok(inserted)
}

// ---------------------------------------------------------------------------------------------
// Claim, lease, finish

/// The room a worker's memory budget has for more jobs (see `admission`): a job of cost `c`
/// is claimed when `min(c, cap)` fits both in `free` and in its tenant's room (`cap` for a
/// tenant not listed). Jobs of cost 0 are always claimable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Room {
    pub cap: i64,
    pub free: i64,
    pub tenants: Vec<(String, i64)>,
}

impl Room {
    /// No budget: everything fits.
    pub const UNLIMITED: Room = Room {
        cap: i64::MAX,
        free: i64::MAX,
        tenants: Vec::new(),
    };

    fn tenants_json(&self) -> String {
        let map: serde_json::Map<String, serde_json::Value> = self
            .tenants
            .iter()
            .map(|(t, r)| (t.clone(), serde_json::Value::from(*r)))
            .collect();
        serde_json::Value::Object(map).to_string()
    }
}

/// The SQLite claim (see [`claim_sqlite`]), with `suspects` among its conditions.
fn claim_sqlite_text(suspects: &str) -> String {
    format!(
        "UPDATE jobs SET state = 'running', attempt = attempt + 1, locked_by = $3,
                        locked_until = {{now}} + $4, started_at = {{now}}
                 WHERE id IN (
                     SELECT c.id FROM jobs c INDEXED BY jobs_claim
                     WHERE c.state = 'available'
                       AND c.queue IN (SELECT value FROM json_each($1))
                       AND (c.serial_key IS NULL OR NOT EXISTS (
                            SELECT 1 FROM jobs b
                            WHERE b.serial_key = c.serial_key AND b.id < c.id
                              AND b.state IN ('available', 'scheduled', 'waiting', 'running')))
                       AND CASE WHEN c.cost = 0 THEN 1
                                ELSE min(c.cost, $5) <= min($6, COALESCE(
                                    (SELECT r.value FROM json_each($7) r WHERE r.key = c.tenant),
                                    $5)) END
                       {suspects}
                     ORDER BY c.priority, c.fair_tag, c.id
                     LIMIT $2)
                 RETURNING id, kind, payload, queue, tenant, attempt, max_attempts, workflow,
                           join_id, serial_key, priority, fair_tag, cost, lost_workers",
    )
}

/// Claims up to `limit` due jobs on SQLite, in (priority, fair_tag, id) order, skipping any
/// whose serialization key has an earlier unfinished job, and leases them to `worker`.
async fn claim_sqlite(
    pool: &sqlx::SqlitePool,
    worker: &str,
    queues: &[String],
    limit: i64,
    lease_ms: i64,
    room: &Room,
    suspects: bool,
) -> sqlx::Result<Vec<ClaimedRow>> {
    let queues = serde_json::to_string(queues).unwrap_or_else(|_| "[]".to_owned());
    let text = if suspects {
        sql!(Dialect::Sqlite, &claim_sqlite_text(""))
    } else {
        sql!(Dialect::Sqlite, &claim_sqlite_text(NO_SUSPECTS))
    };
    let mut rows: Vec<ClaimedRow> = sqlx::query_as(text)
        .bind(queues)
        .bind(limit)
        .bind(worker)
        .bind(lease_ms)
        .bind(room.cap)
        .bind(room.free)
        .bind(room.tenants_json())
        .fetch_all(pool)
        .await?;
    // RETURNING order is unspecified; start them in claim order.
    rows.sort_by_key(|r| (r.priority, r.fair_tag, r.id));
    Ok(rows)
}

/// PostgreSQL's claim-and-complete (see [`claim_and_complete`]), with `suspects` among the
/// claim's conditions.
fn claim_and_complete_text(suspects: &str) -> String {
    format!(
        "WITH done AS ({completion}),
     now AS (SELECT {{now}} AS ms),
     picked AS (
         SELECT c.id FROM jobs c
         WHERE c.state = 'available' AND c.queue = ANY($4)
           AND (c.serial_key IS NULL OR NOT EXISTS (
                SELECT 1 FROM jobs b
                WHERE b.serial_key = c.serial_key AND b.id < c.id
                  AND b.state IN ('available', 'scheduled', 'waiting', 'running')))
           AND CASE WHEN c.cost = 0 THEN true
                    ELSE LEAST(c.cost, $7) <= LEAST($8, COALESCE(
                        ($10::bigint[])[array_position($9::text[], c.tenant)], $7))
               END
           {suspects}
         ORDER BY c.priority, c.fair_tag, c.id
         LIMIT $5
         FOR UPDATE SKIP LOCKED),
     claimed AS (
         UPDATE jobs SET state = 'running', attempt = jobs.attempt + 1,
                locked_by = $2, locked_until = (SELECT ms FROM now) + $6,
                started_at = (SELECT ms FROM now)
         -- An id array, not a join: a generic plan guesses LIMIT $5 at
         -- thousands of rows and would hash-join against the whole table.
         WHERE jobs.id = ANY(ARRAY(SELECT id FROM picked))
         RETURNING jobs.id, jobs.kind, jobs.payload, jobs.queue, jobs.tenant,
                   jobs.attempt, jobs.max_attempts, jobs.workflow, jobs.join_id,
                   jobs.serial_key, jobs.priority, jobs.fair_tag, jobs.cost,
                   jobs.lost_workers),
     counts AS (
         SELECT (SELECT count(*) FROM done) AS completed,
                -- count(expression), not count(*): the call must be evaluated.
                (SELECT count(pg_notify('{CHANNEL_DONE}', ''))
                 FROM (SELECT 1 FROM done LIMIT 1) one) AS notified)
     SELECT claimed.*, counts.completed
     FROM counts LEFT JOIN claimed ON true",
        completion = completion(Dialect::Postgres, Completing::Batch),
    )
}

/// One row of `claim_and_complete` on PostgreSQL: a claimed job (or none), and how many of the
/// completions were applied.
#[derive(Debug, FromRow)]
struct ClaimCompleteRow {
    id: Option<i64>,
    kind: Option<String>,
    payload: Option<String>,
    queue: Option<String>,
    tenant: Option<String>,
    attempt: Option<i32>,
    max_attempts: Option<i32>,
    workflow: Option<String>,
    join_id: Option<i64>,
    serial_key: Option<String>,
    priority: Option<i16>,
    fair_tag: Option<i64>,
    cost: Option<i64>,
    lost_workers: Option<i32>,
    completed: i64,
}

/// Completes `complete` (plain completions still leased to `worker`) and claims up to `limit`
/// due jobs in (priority, fair_tag, id) order, skipping any whose serialization key has an
/// earlier unfinished job. On PostgreSQL this is one statement, so one round trip and one commit serve both;
/// on SQLite, two autocommit statements. Returns the claimed jobs and how many completions
/// were applied.
///
/// Suspects (jobs whose workers died under them twice, see [`SUSPECT_LOST_WORKERS`]) are
/// claimed only when `suspects` is true: when the worker runs none. A job that kills its
/// worker takes with it whatever runs beside it; run together again, they would all die
/// again, and innocent jobs would run out of lost workers with the guilty one. One suspect at
/// a time, the guilty one dies alone.
// One parameter per part of the statement it runs.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn claim_and_complete(
    db: &Database,
    worker: &str,
    queues: &[String],
    complete: &[i64],
    waited_ms: &[i64],
    limit: usize,
    lease_ms: i64,
    room: &Room,
    suspects: bool,
) -> sqlx::Result<(Vec<ClaimedRow>, usize)> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    match db {
        Database::Postgres(pool) => {
            if complete.is_empty() && limit == 0 {
                return Ok((Vec::new(), 0));
            }
            let text = if suspects {
                sql!(Dialect::Postgres, &claim_and_complete_text(""))
            } else {
                sql!(Dialect::Postgres, &claim_and_complete_text(NO_SUSPECTS))
            };
            let rows: Vec<ClaimCompleteRow> = sqlx::query_as(text)
                // Completion's parameters first ($1–$3), as `completion` numbers them.
                .bind(complete)
                .bind(worker)
                .bind(waited_ms)
                .bind(queues)
                .bind(limit)
                .bind(lease_ms)
                .bind(room.cap)
                .bind(room.free)
                .bind(
                    room.tenants
                        .iter()
                        .map(|(t, _)| t.clone())
                        .collect::<Vec<String>>(),
                )
                .bind(room.tenants.iter().map(|(_, r)| *r).collect::<Vec<i64>>())
                .fetch_all(pool)
                .await?;
            let completed = rows
                .first()
                .map_or(0, |r| usize::try_from(r.completed).unwrap_or(0));
            let mut claimed: Vec<ClaimedRow> = rows
                .into_iter()
                .filter_map(|r| {
                    Some(ClaimedRow {
                        id: r.id?,
                        kind: r.kind?,
                        payload: r.payload?,
                        queue: r.queue?,
                        tenant: r.tenant?,
                        attempt: r.attempt?,
                        max_attempts: r.max_attempts?,
                        workflow: r.workflow,
                        join_id: r.join_id,
                        serial_key: r.serial_key,
                        priority: r.priority?,
                        fair_tag: r.fair_tag?,
                        cost: r.cost?,
                        lost_workers: r.lost_workers?,
                    })
                })
                .collect();
            claimed.sort_by_key(|r| (r.priority, r.fair_tag, r.id));
            Ok((claimed, completed))
        }
        Database::Sqlite(pool) => {
            let completed = if complete.is_empty() {
                0
            } else {
                sqlx::query(completion(Dialect::Sqlite, Completing::Batch))
                    .bind(json_ids(complete))
                    .bind(worker)
                    .bind(ms_by_id(complete, waited_ms))
                    .execute(pool)
                    .await?
                    .rows_affected() as usize
            };
            let claimed = if limit > 0 {
                claim_sqlite(pool, worker, queues, limit, lease_ms, room, suspects).await?
            } else {
                Vec::new()
            };
            Ok((claimed, completed))
        }
    }
}

/// Extends the leases of every job `worker` is running, and returns the ids it still holds.
/// A job missing from the answer was cancelled or rescued from under us.
pub(crate) async fn extend_leases(
    db: &Database,
    worker: &str,
    lease_ms: i64,
) -> sqlx::Result<Vec<i64>> {
    on_pool!(db, |pool, d| {
        sqlx::query_scalar(sql!(
            d,
            "UPDATE jobs SET locked_until = {now} + $2
             WHERE state = 'running' AND locked_by = $1
             RETURNING id"
        ))
        .bind(worker)
        .bind(lease_ms)
        .fetch_all(pool)
        .await
    })
}

/// Attempts that may end with the worker gone before a job is stopped: one lost worker can be
/// a deploy or a host's restart; a job that takes its worker down again and again would
/// otherwise restart the whole service once per attempt.
pub const MAX_LOST_WORKERS: i32 = 3;

/// Jobs whose lease ran out (their worker died or froze) go back to the queue, spending the
/// attempt they were on: a job that kills its worker every time must end up dead, not loop,
/// and after [`MAX_LOST_WORKERS`] such attempts it is dead whatever attempts it has left.
/// A job made dead gets a burial in the same transaction, for its type's `on_dead` (see
/// `burial`). `rescuer`'s own jobs are left alone: a worker that rescues is alive, and its
/// heartbeat renews them (after it froze past its lease, say).
pub(crate) async fn rescue_expired(db: &Database, rescuer: &str) -> sqlx::Result<u64> {
    let mut tx = db.begin().await?;
    let rescued: Vec<Rescued> = on_tx!(&mut tx, |conn, d| {
        let lost = "lease expired: the worker running this job stopped heartbeating";
        let stopped = format!(
            "stopped: the worker running this job died or froze in {MAX_LOST_WORKERS} of its \
             attempts (out of memory, or killed), so it is not tried again; the operator's logs \
             say what the worker was doing"
        );
        match d {
            Dialect::Sqlite => sqlx::query_as(sql!(
                d,
                "UPDATE jobs SET
                    state = CASE WHEN attempt >= max_attempts OR lost_workers + 1 >= $3
                                 THEN 'dead' ELSE 'available' END,
                    run_at = {now},
                    finished_at = CASE WHEN attempt >= max_attempts OR lost_workers + 1 >= $3
                                       THEN {now} ELSE NULL END,
                    errors = json_insert(errors, '$[#]', json_object(
                        'attempt', attempt, 'at', {now},
                        'error', CASE WHEN lost_workers + 1 >= $3 THEN $2 ELSE $1 END,
                        'worker', locked_by)),
                    lost_workers = lost_workers + 1,
                    locked_by = NULL, locked_until = NULL
                 WHERE state = 'running' AND locked_until < {now} AND locked_by <> $4
                 RETURNING id, join_id, state, queue, tenant, workflow"
            )),
            Dialect::Postgres => sqlx::query_as(sql!(
                d,
                "UPDATE jobs SET
                    state = CASE WHEN attempt >= max_attempts OR lost_workers + 1 >= $3
                                 THEN 'dead' ELSE 'available' END,
                    run_at = {now},
                    finished_at = CASE WHEN attempt >= max_attempts OR lost_workers + 1 >= $3
                                       THEN {now} ELSE NULL END,
                    errors = (errors::jsonb || jsonb_build_array(jsonb_build_object(
                        'attempt', attempt, 'at', {now},
                        'error', CASE WHEN lost_workers + 1 >= $3 THEN $2::text
                                      ELSE $1::text END,
                        'worker', locked_by)))::text,
                    lost_workers = lost_workers + 1,
                    locked_by = NULL, locked_until = NULL
                 WHERE state = 'running' AND locked_until < {now} AND locked_by <> $4
                 RETURNING id, join_id, state, queue, tenant, workflow"
            )),
        }
        .bind(lost)
        .bind(stopped)
        .bind(MAX_LOST_WORKERS)
        .bind(rescuer)
        .fetch_all(&mut *conn)
        .await?
    });
    let dead: Vec<&Rescued> = rescued
        .iter()
        .filter(|r| r.state == JobState::Dead)
        .collect();
    let finished_children: Vec<i64> = dead.iter().filter_map(|r| r.join_id).collect();
    release_joins(&mut tx, &finished_children).await?;
    if !dead.is_empty() {
        let burials: Vec<NewJob> = dead
            .iter()
            .map(|r| burial::of(r.id, &r.queue, &r.tenant, r.workflow.as_deref()))
            .collect();
        insert_jobs(&mut tx, &burials, &Placement::default()).await?;
    }
    tx.commit().await?;
    Ok(rescued.len() as u64)
}

/// A job the rescue gave back or made dead.
#[derive(Debug, FromRow)]
struct Rescued {
    id: i64,
    join_id: Option<i64>,
    state: JobState,
    queue: String,
    tenant: String,
    workflow: Option<String>,
}

/// Gives jobs back without spending their attempt (a worker stopping, or claimed jobs that
/// waited too long for an executor), and wakes idle workers to take them.
pub(crate) async fn release(db: &Database, worker: &str, ids: &[i64]) -> sqlx::Result<u64> {
    let mut tx = db.begin().await?;
    let released = match &mut tx {
        Tx::Postgres(t) => sqlx::query(sql!(
            Dialect::Postgres,
            "UPDATE jobs SET state = 'available', attempt = attempt - 1, run_at = {now},
                    locked_by = NULL, locked_until = NULL
             WHERE id = ANY($1) AND state = 'running' AND locked_by = $2"
        ))
        .bind(ids)
        .bind(worker)
        .execute(&mut **t)
        .await?
        .rows_affected(),
        Tx::Sqlite(t) => sqlx::query(sql!(
            Dialect::Sqlite,
            "UPDATE jobs SET state = 'available', attempt = attempt - 1, run_at = {now},
                    locked_by = NULL, locked_until = NULL
             WHERE id IN (SELECT value FROM json_each($1)) AND state = 'running'
               AND locked_by = $2"
        ))
        .bind(json_ids(ids))
        .bind(worker)
        .execute(&mut **t)
        .await?
        .rows_affected(),
    };
    if released > 0 {
        wake::notify(&mut tx, CHANNEL_JOBS).await?;
    }
    tx.commit().await?;
    Ok(released)
}

/// What one completion statement covers (see [`completion`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Completing {
    /// One job, with its result: `$1` its id, `$2` the worker, `$3` its wait in ms, `$4` its
    /// result.
    One,
    /// Jobs without a result, answering `id, join_id` for each one completed: `$1` their ids,
    /// `$2` the worker, `$3` their waits in ms. PostgreSQL takes two arrays in the same order;
    /// SQLite a JSON array and a JSON object by id ([`json_ids`], [`ms_by_id`]).
    Batch,
}

/// The statement that completes jobs still leased to a worker, used by every path that
/// completes (one job, a batch, and the batch inside the claim), so that what completion
/// writes is stated once: the state, the result, full progress, the finish time, the run
/// time without the wait in the worker (`Finished::waited_ms`), and the released lease.
/// Rendered once per dialect and shape; the text is stable, as sqlx's statement cache needs.
pub(crate) fn completion(dialect: Dialect, shape: Completing) -> &'static str {
    static RENDERED: LazyLock<[[String; 2]; 2]> = LazyLock::new(|| {
        [Completing::One, Completing::Batch].map(|shape| {
            [Dialect::Sqlite, Dialect::Postgres]
                .map(|dialect| dialect.render(&completion_text(dialect, shape)))
        })
    });
    let by_dialect = match shape {
        Completing::One => &RENDERED[0],
        Completing::Batch => &RENDERED[1],
    };
    match dialect {
        Dialect::Sqlite => &by_dialect[0],
        Dialect::Postgres => &by_dialect[1],
    }
}

fn completion_text(dialect: Dialect, shape: Completing) -> String {
    let (jobs, waited_ms, result, returning) = match (shape, dialect) {
        (Completing::One, _) => ("id = $1", "$3", "$4", ""),
        (Completing::Batch, Dialect::Postgres) => (
            "id = ANY($1)",
            "COALESCE(($3::bigint[])[array_position($1::bigint[], id)], 0)",
            "NULL",
            " RETURNING id, join_id",
        ),
        (Completing::Batch, Dialect::Sqlite) => (
            "id IN (SELECT value FROM json_each($1))",
            "COALESCE(json_extract($3, '$.\"' || id || '\"'), 0)",
            "NULL",
            " RETURNING id, join_id",
        ),
    };
    format!(
        "UPDATE jobs SET state = '{completed}', result = {result}, progress = 100,
                finished_at = {{now}}, started_at = started_at + {waited_ms},
                locked_by = NULL, locked_until = NULL
         WHERE {jobs} AND state = '{running}' AND locked_by = $2{returning}",
        completed = JobState::Completed.as_str(),
        running = JobState::Running.as_str(),
    )
}

/// Ids as a JSON array, for SQLite statements to read with `json_each`.
fn json_ids(ids: &[i64]) -> String {
    serde_json::to_string(ids).unwrap_or_else(|_| "[]".to_owned())
}

/// How a claimed job ended, as the completer commits it.
#[derive(Debug, Clone)]
pub(crate) enum Finish {
    Complete {
        result: Option<String>,
    },
    Retry {
        delay_ms: i64,
        error: serde_json::Value,
    },
    Dead {
        error: serde_json::Value,
    },
    Discard {
        error: serde_json::Value,
    },
    Snooze {
        delay_ms: i64,
    },
    Cancel {
        error: serde_json::Value,
    },
}

impl Finish {
    /// Whether this ends the job (so a waiting join counts it as done).
    fn is_terminal(&self) -> bool {
        !matches!(self, Finish::Retry { .. } | Finish::Snooze { .. })
    }
}

/// Successor jobs to insert when a job's completion commits.
#[derive(Debug, Clone, Default)]
pub(crate) struct Successors {
    pub then: Vec<NewJob>,
    /// Fan-out: children, and the join that runs once after all of them.
    pub fan_out: Vec<(Vec<NewJob>, NewJob)>,
}

impl Successors {
    pub fn is_empty(&self) -> bool {
        self.then.is_empty() && self.fan_out.is_empty()
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Finished {
    pub id: i64,
    /// How long it waited in the worker between its claim and its start (a job claimed ahead
    /// waits for an executor): added to its row's `started_at`, which the claim set, so that
    /// run times (a book's report, `/metrics`) leave the wait out.
    pub waited_ms: i64,
    pub kind: String,
    pub join_id: Option<i64>,
    pub workflow: Option<String>,
    /// It had a serialization key, so the next job with that key may now run.
    pub unblocks: bool,
    /// It was a suspect (see [`ClaimedRow::suspect`]): another may now be claimed.
    pub suspect: bool,
    pub finish: Finish,
    pub successors: Successors,
}

/// Commits a batch of finished jobs in one transaction: each job's new state, its successors
/// (only if its lease was still ours) and the joins it releases. Returns the ids accepted; a
/// job missing from it had been cancelled or rescued, and its run is dropped.
pub(crate) async fn finish_batch(
    db: &Database,
    worker: &str,
    batch: &[Finished],
) -> sqlx::Result<Vec<i64>> {
    let mut tx = db.begin().await?;
    let mut accepted = Vec::with_capacity(batch.len());
    let mut joins_released = Vec::new();

    // The common case in one statement: plain completions with no result and no successors.
    let plain: Vec<&Finished> = batch
        .iter()
        .filter(|f| {
            matches!(f.finish, Finish::Complete { result: None }) && f.successors.is_empty()
        })
        .collect();
    if !plain.is_empty() {
        let ids: Vec<i64> = plain.iter().map(|f| f.id).collect();
        let waited_ms: Vec<i64> = plain.iter().map(|f| f.waited_ms).collect();
        let done: Vec<(i64, Option<i64>)> = match &mut tx {
            Tx::Postgres(t) => {
                sqlx::query_as(completion(Dialect::Postgres, Completing::Batch))
                    .bind(&ids)
                    .bind(worker)
                    .bind(&waited_ms)
                    .fetch_all(&mut **t)
                    .await?
            }
            Tx::Sqlite(t) => {
                sqlx::query_as(completion(Dialect::Sqlite, Completing::Batch))
                    .bind(json_ids(&ids))
                    .bind(worker)
                    .bind(ms_by_id(&ids, &waited_ms))
                    .fetch_all(&mut **t)
                    .await?
            }
        };
        for (id, join) in done {
            accepted.push(id);
            joins_released.extend(join);
        }
    }

    for item in batch {
        if matches!(item.finish, Finish::Complete { result: None }) && item.successors.is_empty() {
            continue;
        }
        if !finish_one(&mut tx, worker, item).await? {
            continue;
        }
        accepted.push(item.id);
        if item.finish.is_terminal() {
            joins_released.extend(item.join_id);
        }
        if matches!(item.finish, Finish::Complete { .. }) {
            let inherit = Placement {
                workflow: item.workflow.clone(),
                ..Placement::default()
            };
            insert_jobs(&mut tx, &item.successors.then, &inherit).await?;
            for (children, join) in &item.successors.fan_out {
                let pending = i32::try_from(children.len()).unwrap_or(i32::MAX);
                let join_placement = Placement {
                    workflow: item.workflow.clone(),
                    pending_children: pending,
                    join_id: None,
                };
                let join_id =
                    insert_jobs(&mut tx, std::slice::from_ref(join), &join_placement).await?[0].id;
                let child_placement = Placement {
                    workflow: item.workflow.clone(),
                    join_id: Some(join_id),
                    pending_children: 0,
                };
                insert_jobs(&mut tx, children, &child_placement).await?;
            }
        }
    }
    release_joins(&mut tx, &joins_released).await?;
    // Wake other workers when something new may be claimable, and waiters when jobs finished.
    let claimable =
        !joins_released.is_empty() || batch.iter().any(|f| f.unblocks || !f.successors.is_empty());
    if claimable {
        wake::notify(&mut tx, CHANNEL_JOBS).await?;
    }
    if batch.iter().any(|f| f.finish.is_terminal()) {
        wake::notify(&mut tx, CHANNEL_DONE).await?;
    }
    tx.commit().await?;
    Ok(accepted)
}

impl Finished {
    /// Completed with no result, no successors, no join to release and no key to unblock: the
    /// bulk of all jobs, which the claim statement itself can finish.
    pub(crate) fn is_plain(&self) -> bool {
        matches!(self.finish, Finish::Complete { result: None })
            && self.successors.is_empty()
            && self.join_id.is_none()
            && !self.unblocks
    }
}

/// Applies one non-trivial finish. Returns false when the lease was no longer ours.
async fn finish_one(tx: &mut Tx, worker: &str, item: &Finished) -> sqlx::Result<bool> {
    let affected = on_tx!(tx, |conn, d| {
        let sql = match (&item.finish, d) {
            (Finish::Complete { .. }, _) => completion(d, Completing::One),
            (Finish::Snooze { .. }, _) => sql!(
                d,
                "UPDATE jobs SET state = 'scheduled', run_at = {now} + $3, attempt = attempt - 1,
                        locked_by = NULL, locked_until = NULL
                 WHERE id = $1 AND state = 'running' AND locked_by = $2"
            ),
            (Finish::Retry { .. }, Dialect::Sqlite) => sql!(
                d,
                "UPDATE jobs SET state = 'scheduled', run_at = {now} + $3,
                        errors = json_insert(errors, '$[#]', json($4)),
                        locked_by = NULL, locked_until = NULL
                 WHERE id = $1 AND state = 'running' AND locked_by = $2"
            ),
            (Finish::Retry { .. }, Dialect::Postgres) => sql!(
                d,
                "UPDATE jobs SET state = 'scheduled', run_at = {now} + $3,
                        errors = (errors::jsonb || jsonb_build_array($4::jsonb))::text,
                        locked_by = NULL, locked_until = NULL
                 WHERE id = $1 AND state = 'running' AND locked_by = $2"
            ),
            (_, Dialect::Sqlite) => sql!(
                d,
                "UPDATE jobs SET state = $3, finished_at = {now},
                        errors = json_insert(errors, '$[#]', json($4)),
                        locked_by = NULL, locked_until = NULL
                 WHERE id = $1 AND state = 'running' AND locked_by = $2"
            ),
            (_, Dialect::Postgres) => sql!(
                d,
                "UPDATE jobs SET state = $3, finished_at = {now},
                        errors = (errors::jsonb || jsonb_build_array($4::jsonb))::text,
                        locked_by = NULL, locked_until = NULL
                 WHERE id = $1 AND state = 'running' AND locked_by = $2"
            ),
        };
        // Arguments bind by position: $1 and $2 first, then each form's own.
        let query = sqlx::query(sql).bind(item.id).bind(worker);
        let query = match &item.finish {
            Finish::Complete { result } => query.bind(item.waited_ms).bind(result.clone()),
            Finish::Snooze { delay_ms } => query.bind(*delay_ms),
            Finish::Retry { delay_ms, error } => query.bind(*delay_ms).bind(error.to_string()),
            Finish::Dead { error } => query.bind(JobState::Dead).bind(error.to_string()),
            Finish::Discard { error } => query.bind(JobState::Discarded).bind(error.to_string()),
            Finish::Cancel { error } => query.bind(JobState::Cancelled).bind(error.to_string()),
        };
        query.execute(&mut *conn).await?.rows_affected()
    });
    Ok(affected == 1)
}

/// `{"<id>": ms, …}`, for SQLite statements to look a number up by job id.
fn ms_by_id(ids: &[i64], ms: &[i64]) -> String {
    let map: serde_json::Map<String, serde_json::Value> = ids
        .iter()
        .zip(ms)
        .map(|(id, ms)| (id.to_string(), (*ms).into()))
        .collect();
    serde_json::Value::Object(map).to_string()
}

/// One child of each listed join has finished: count it, and make the join available once its
/// last child is done. One statement per join row, so concurrent finishers serialise on the row
/// and exactly one of them sees the count reach zero.
async fn release_joins(tx: &mut Tx, joins: &[i64]) -> sqlx::Result<()> {
    let mut counts: BTreeMap<i64, i32> = BTreeMap::new();
    for join in joins {
        *counts.entry(*join).or_default() += 1;
    }
    for (join, done) in counts {
        on_tx!(tx, |conn, d| {
            sqlx::query(sql!(
                d,
                "UPDATE jobs SET pending_children = pending_children - $2,
                        state = CASE WHEN pending_children - $2 <= 0 THEN 'available'
                                     ELSE state END,
                        run_at = CASE WHEN pending_children - $2 <= 0 THEN {now}
                                      ELSE run_at END
                 WHERE id = $1 AND state = 'waiting'"
            ))
            .bind(join)
            .bind(done)
            .execute(&mut *conn)
            .await?;
        });
    }
    Ok(())
}

/// Records progress of a running job (only while `worker` holds it).
pub(crate) async fn set_progress(
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
pub(crate) async fn release_unique_key(db: &Database, id: i64, worker: &str) -> sqlx::Result<bool> {
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

// ---------------------------------------------------------------------------------------------
// Reading

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

// ---------------------------------------------------------------------------------------------
// Operations

pub(crate) async fn set_paused(db: &Database, queue: &str, paused: bool) -> sqlx::Result<()> {
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
pub(crate) async fn retry_job(db: &Database, id: i64) -> sqlx::Result<bool> {
    let affected = on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE jobs SET state = 'available', attempt = 0, run_at = {now},
                    finished_at = NULL, locked_by = NULL, locked_until = NULL
             WHERE id = $1 AND state IN ('dead', 'discarded', 'cancelled')"
        ))
        .bind(id)
        .execute(pool)
        .await?
        .rows_affected()
    });
    Ok(affected == 1)
}

/// Ends a job that has not finished: `cancelled` or `discarded`, with a reason in its history.
/// A running job is taken from its worker, which notices at its next heartbeat and stops it.
pub(crate) async fn end_job(
    db: &Database,
    id: i64,
    state: JobState,
    reason: &str,
) -> sqlx::Result<bool> {
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

/// Makes scheduled jobs (delayed, retrying, snoozed) whose time has come available. Kept apart
/// so that the claim index holds only runnable jobs: a million jobs scheduled for tomorrow
/// cost a claim nothing. The clock is read once, in a subquery: compared directly, PostgreSQL
/// cannot search `jobs_scheduled` by a volatile expression and scanned the whole table (2 ms
/// with 10,000 jobs scheduled, every 20 ms of a busy worker).
pub(crate) async fn promote_due(db: &Database) -> sqlx::Result<u64> {
    on_pool!(db, |pool, d| {
        Ok(sqlx::query(sql!(
            d,
            "UPDATE jobs SET state = 'available'
             WHERE state = 'scheduled' AND run_at <= (SELECT {now})"
        ))
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
