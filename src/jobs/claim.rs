//! The claim: the statements the producer (`producer`) runs to take jobs, in (priority, fair
//! tag, id) order and within the worker's memory budget, leasing them to the worker; on
//! PostgreSQL in the same statement as the completions it commits, unless the pump commits
//! them on a connection of their own. And the release, which gives claimed jobs back unspent.

use sqlx::FromRow;

use super::completer::{Completing, completion, counted_completions, json_ids, ms_by_id};
use super::rescuer::MAX_LOST_WORKERS;
use super::wake::{self, CHANNEL_JOBS};
use crate::storage::sql::Dialect;
use crate::storage::{Database, KeptConnection, Tx};

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
pub(super) const NO_SUSPECTS: &str = "AND c.lost_workers < 2";
const _: () = assert!(SUSPECT_LOST_WORKERS == 2, "NO_SUSPECTS names the bound");

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
pub(super) fn claim_sqlite_text(suspects: &str) -> String {
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
pub(super) fn claim_and_complete_text(suspects: &str) -> String {
    format!(
        "WITH {completions},
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
                   jobs.lost_workers)
     SELECT claimed.*, counts.completed
     FROM counts LEFT JOIN claimed ON true",
        completions = counted_completions(),
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
/// earlier unfinished job. On PostgreSQL this is one statement, so one round trip and one
/// commit serve both (`complete` is empty when the pump commits them on its second connection,
/// `completer::complete_batch`); on SQLite, two autocommit statements. Returns the claimed jobs
/// and how many completions were applied.
///
/// Suspects (jobs whose workers died under them twice, see [`SUSPECT_LOST_WORKERS`]) are
/// claimed only when `suspects` is true: when the worker runs none. A job that kills its
/// worker takes with it whatever runs beside it; run together again, they would all die
/// again, and innocent jobs would run out of lost workers with the guilty one. One suspect at
/// a time, the guilty one dies alone.
// One parameter per part of the statement it runs.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn claim_and_complete(
    db: &mut KeptConnection,
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
    if let Database::Sqlite(pool) = db.database() {
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
        return Ok((claimed, completed));
    }
    if complete.is_empty() && limit == 0 {
        return Ok((Vec::new(), 0));
    }
    let text = if suspects {
        sql!(Dialect::Postgres, &claim_and_complete_text(""))
    } else {
        sql!(Dialect::Postgres, &claim_and_complete_text(NO_SUSPECTS))
    };
    let query = sqlx::query_as::<_, ClaimCompleteRow>(text)
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
        .bind(room.tenants.iter().map(|(_, r)| *r).collect::<Vec<i64>>());
    let rows = db
        .on_postgres(async |conn| query.fetch_all(conn).await)
        .await
        .expect("a PostgreSQL pool: SQLite returned above")?;
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
