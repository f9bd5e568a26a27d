//! Inserting jobs: one at a time (enqueue, successors, fan-out), or many in few statements.
//! Each new job gets its fair tag here, which the claim orders by so tenants take turns.

use std::collections::BTreeMap;

use super::state::JobState;
use super::{Enqueued, NewJob};
use crate::storage::Tx;
use crate::storage::sql::Dialect;

/// Where inserted jobs hang: under a join, in a state other than available.
#[derive(Debug, Clone, Default)]
pub(crate) struct Placement {
    pub join_id: Option<i64>,
    pub workflow: Option<String>,
    /// A join waiting for this many children (state `waiting`); 0 means available.
    pub pending_children: i32,
}

// Both tags are read as the first row in index order, not as min() and max(): on a table
// without statistics (a burst of enqueues before autovacuum's analyze) PostgreSQL planned the
// aggregate over every queued job of the tenant, 1,346 buffers for one enqueue, instead of
// reading one end of the index.

/// The queue's front at priority `$1`: the oldest fair tag due now.
pub(super) const FRONT_TAG: &str = "SELECT fair_tag FROM jobs
                                    WHERE state = 'available' AND priority = $1
                                    ORDER BY fair_tag LIMIT 1";

/// Tenant `$1`'s last queued fair tag at priority `$2`.
pub(super) const OWN_TAG: &str = "SELECT fair_tag FROM jobs
                                  WHERE state = 'available' AND tenant = $1 AND priority = $2
                                  ORDER BY fair_tag DESC LIMIT 1";

/// The fair tag for the next job of `tenant` at `priority`: after the tenant's own queued jobs,
/// and no earlier than the oldest job that is due now (the queue's "virtual time").
async fn next_fair_tag(tx: &mut Tx, tenant: &str, priority: i16) -> sqlx::Result<i64> {
    let (front, own): (Option<i64>, Option<i64>) = on_tx!(tx, |conn, d| {
        let front: Option<i64> = sqlx::query_scalar(sql!(d, FRONT_TAG))
            .bind(priority)
            .fetch_optional(&mut *conn)
            .await?;
        let own: Option<i64> = sqlx::query_scalar(sql!(d, OWN_TAG))
            .bind(tenant)
            .bind(priority)
            .fetch_optional(&mut *conn)
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
