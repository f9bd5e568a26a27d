//! The rescuer: jobs whose lease ran out (their worker died or froze) go back to the queue,
//! or die, with a burial for their type's `on_dead` (`burial`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::FromRow;

use super::NewJob;
use super::burial;
use super::enqueue::{Placement, insert_jobs};
use super::state::JobState;
use super::workflow::release_joins;
use crate::storage::Database;
use crate::storage::backoff::Backoff;
use crate::storage::sql::Dialect;

/// Attempts that may end with the worker gone before a job is stopped: one lost worker can be
/// a deploy or a host's restart; a job that takes its worker down again and again would
/// otherwise restart the whole service once per attempt.
pub const MAX_LOST_WORKERS: i32 = 3;

/// Every second, returns jobs whose lease ran out to the queue; after the database failed this
/// process, only once it has taken writes again for a whole lease. Through an outage no worker can
/// extend its leases, so when the database comes back every running job's lease looks expired;
/// rescued at once, jobs whose workers are alive and about to beat again would run twice, and
/// count a lost worker each time. A lease later, every live worker has beaten (a beat comes
/// three times a lease) and only the jobs of workers that really died are left to rescue. A
/// worker that starts rescues at once: what it finds expired was left by a worker before it.
///
/// The same holds after this process itself stood still (stopped with SIGSTOP, or its whole
/// machine paused): the other workers on that machine stood still too, and a lease may have
/// run out under each of them. And a worker never rescues its own jobs (`rescue_expired`):
/// while it lives its heartbeat renews them, and a worker that froze past its lease and comes
/// back keeps them, unless another worker took them meanwhile.
///
/// `worker` is this worker; `rescued` is called when jobs went back to the queue.
pub(crate) async fn run(
    db: Database,
    worker: Arc<str>,
    lease: Duration,
    rescued: impl Fn() + Send + 'static,
) {
    let every = Duration::from_secs(1);
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut answering_since = Some(Instant::now());
    let mut grace = Duration::ZERO;
    let mut rescues = Backoff::new("rescuing expired leases");
    loop {
        // Timed from the end of the last turn, so that a slow statement is not taken for it.
        let waiting = Instant::now();
        tick.tick().await;
        // Long enough for a lease to run out under a worker that stood still with this one (a
        // beat comes three times a lease); and well past what a busy runtime delays a tick.
        let stood_still = waiting.elapsed() > (every * 3).max(lease / 2);
        if stood_still && answering_since.is_some() {
            tracing::info!(
                "this process stood still for a while; rescuing no leases for a whole lease, so that live workers renew theirs first"
            );
            answering_since = Some(Instant::now());
            grace = lease;
        }
        // A write, not a read: a SQLite file locked by someone else still answers reads.
        let Some(since) = answering_since else {
            match db.probe_write().await {
                Ok(()) => answering_since = Some(Instant::now()),
                Err(e) => {
                    rescues.failed(&e);
                }
            }
            continue;
        };
        if since.elapsed() < grace {
            if let Err(e) = db.probe_write().await {
                rescues.failed(&e);
                answering_since = None;
            }
            continue;
        }
        match rescue_expired(&db, &worker).await {
            Ok(n) => {
                rescues.succeeded();
                if n > 0 {
                    tracing::warn!(jobs = n, "rescued jobs whose worker stopped heartbeating");
                    rescued();
                }
            }
            Err(e) => {
                // Not again until the database has answered for a lease.
                rescues.failed(&e.into());
                answering_since = None;
                grace = lease;
            }
        }
    }
}

/// Jobs whose lease ran out (their worker died or froze) go back to the queue, spending the
/// attempt they were on: a job that kills its worker every time must end up dead, not loop,
/// and after [`MAX_LOST_WORKERS`] such attempts it is dead whatever attempts it has left.
/// A job made dead gets a burial in the same transaction, for its type's `on_dead` (see
/// `burial`). `rescuer`'s own jobs are left alone: a worker that rescues is alive, and its
/// heartbeat renews them (after it froze past its lease, say).
pub(crate) async fn rescue_expired(db: &Database, rescuer: &str) -> sqlx::Result<u64> {
    let mut tx = db.begin().await?;
    let rescued: Vec<Rescued> = on_tx!(&mut tx, |conn, d| {
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
            Dialect::Postgres => sqlx::query_as(sql!(d, RESCUE_POSTGRES)),
        }
        .bind(LOST)
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

/// The rescue on PostgreSQL (`$1` the lost message, `$2` the stopped one, `$3`
/// [`MAX_LOST_WORKERS`], `$4` the rescuing worker), apart for the plan guard (`plans`): it runs
/// every second on every worker, and must read only the running jobs' index, never the table.
pub(super) const RESCUE_POSTGRES: &str = "UPDATE jobs SET
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
         RETURNING id, join_id, state, queue, tenant, workflow";

/// The history entry of a rescued attempt whose job may run again.
const LOST: &str = "lease expired: the worker running this job stopped heartbeating";

/// Takes back the lost-worker charge `rescue_expired` made when `worker`'s lease on `job`'s
/// `attempt` ran out, now that the worker is back: it stood still (stopped, its machine paused,
/// or its heartbeat withheld while storage failed) and did not die, so the job did not take it
/// down, and should not come nearer to being run alone or stopped for it. The entry in the
/// job's history stays: the lease did expire, and the attempt was spent. A job already made
/// dead stays dead; its burial has run. True when a charge was taken back.
pub(crate) async fn take_back(
    db: &Database,
    worker: &str,
    job: i64,
    attempt: i32,
) -> sqlx::Result<bool> {
    let taken = on_pool!(db, |pool, d| {
        let text = match d {
            Dialect::Sqlite => sql!(
                d,
                "UPDATE jobs SET lost_workers = lost_workers - 1
                 WHERE id = $1 AND lost_workers > 0 AND state <> $5
                   AND EXISTS (SELECT 1 FROM json_each(jobs.errors) e
                               WHERE json_extract(e.value, '$.worker') = $2
                                 AND json_extract(e.value, '$.attempt') = $3
                                 AND json_extract(e.value, '$.error') = $4)"
            ),
            Dialect::Postgres => sql!(
                d,
                "UPDATE jobs SET lost_workers = lost_workers - 1
                 WHERE id = $1 AND lost_workers > 0 AND state <> $5
                   AND errors::jsonb @> jsonb_build_array(jsonb_build_object(
                       'worker', $2::text, 'attempt', $3::int, 'error', $4::text))"
            ),
        };
        sqlx::query(text)
            .bind(job)
            .bind(worker)
            .bind(attempt)
            .bind(LOST)
            .bind(JobState::Dead.as_str())
            .execute(pool)
            .await?
            .rows_affected()
    });
    Ok(taken > 0)
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
