//! The completer: how a run ended ([`Finish`]), and the statements that commit it while the
//! lease is still the worker's: the new state, the result or the error history, the successors
//! and the joins it releases. One builder ([`completion`]) writes every completing statement,
//! for every outcome and both databases.

use std::sync::LazyLock;
use std::time::Duration;

use serde_json::json;

use super::state::JobState;
use super::wake::{self, CHANNEL_DONE, CHANNEL_JOBS};
use super::workflow::{Successors, insert_successors, release_joins};
use super::{Outcome, backoff};
use crate::logging;
use crate::storage::fault::{self, Fault};
use crate::storage::sql::Dialect;
use crate::storage::{Database, KeptConnection, Tx};

/// How long a job that found storage full or out of reach waits before it may be claimed again
/// (with the usual jitter).
const STORAGE_WAIT: Duration = Duration::from_millis(250);

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
    /// The statement that commits it (see [`completion`]).
    fn completing(&self) -> Completing {
        match self {
            Finish::Complete { .. } => Completing::One,
            Finish::Snooze { .. } => Completing::Snooze,
            Finish::Retry { .. } => Completing::Retry,
            Finish::Dead { .. } | Finish::Discard { .. } | Finish::Cancel { .. } => Completing::End,
        }
    }

    /// Whether this ends the job (so a waiting join counts it as done).
    fn is_terminal(&self) -> bool {
        !matches!(self, Finish::Retry { .. } | Finish::Snooze { .. })
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
    /// It was a suspect (see `ClaimedRow::suspect` in `claim`): another may now be claimed.
    pub suspect: bool,
    pub finish: Finish,
    pub successors: Successors,
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

fn error_entry(attempt: i32, message: &str, causes: Vec<String>) -> serde_json::Value {
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    json!({ "attempt": attempt, "at": at, "error": message, "causes": causes })
}

/// How a run that ended with `outcome` after `took` is committed: `attempt` of
/// `max_attempts`, and a retry's delay grows from `retry_base`.
pub(crate) fn to_finish(
    outcome: anyhow::Result<Outcome>,
    attempt: i32,
    max_attempts: i32,
    took: Duration,
    retry_base: Duration,
) -> Finish {
    let duration_ms = logging::millis(took);
    match outcome {
        Ok(Outcome::Complete(result)) => {
            tracing::debug!(duration_ms, "job completed");
            Finish::Complete {
                result: result.map(|r| r.to_string()),
            }
        }
        Ok(Outcome::Snooze(delay)) => {
            tracing::debug!(duration_ms, ?delay, "job snoozed");
            Finish::Snooze {
                delay_ms: i64::try_from(delay.as_millis()).unwrap_or(i64::MAX),
            }
        }
        Ok(Outcome::Discard(message)) => {
            tracing::warn!(duration_ms, error = %message, "job discarded: it cannot succeed");
            Finish::Discard {
                error: error_entry(attempt, &message, Vec::new()),
            }
        }
        Ok(Outcome::Cancel(message)) => {
            tracing::info!(duration_ms, reason = %message, "job cancelled itself");
            Finish::Cancel {
                error: error_entry(attempt, &format!("cancelled: {message}"), Vec::new()),
            }
        }
        Err(error) if fault::of_storage(&error).is_some() => {
            // Storage out of reach or full is the service's trouble, not the job's: the job
            // waits and tries again without spending an attempt, so an outage or a full disk of
            // any length kills no book. Its wait is short, a quarter of a second: the breaker
            // (tripped by this failure) paces this worker's claims meanwhile, and the job must
            // run again moments after storage returns. (The pump backs off by itself if the
            // database is what fails it.)
            let delay = backoff::retry_delay(1, STORAGE_WAIT);
            let full = fault::of_storage(&error) == Some(Fault::OutOfSpace);
            let error = format!("{error:#}");
            if full {
                tracing::warn!(for_author = true, duration_ms, error, retry_in = ?delay, "job found storage full; will try again without spending an attempt");
            } else {
                tracing::warn!(for_author = true, duration_ms, error, retry_in = ?delay, "job could not reach storage; will try again without spending an attempt");
            }
            Finish::Snooze {
                delay_ms: i64::try_from(delay.as_millis()).unwrap_or(i64::MAX),
            }
        }
        Err(error) => {
            let causes = error.chain().skip(1).map(ToString::to_string).collect();
            let entry = error_entry(attempt, &error.to_string(), causes);
            if attempt >= max_attempts {
                tracing::error!(for_author = true, duration_ms, error = %format!("{error:#}"), attempts = attempt, "job failed for the last time; it is dead");
                Finish::Dead { error: entry }
            } else {
                let delay = backoff::retry_delay(attempt, retry_base);
                tracing::warn!(for_author = true, duration_ms, error = %format!("{error:#}"), retry_in = ?delay, "job failed; will retry");
                Finish::Retry {
                    delay_ms: i64::try_from(delay.as_millis()).unwrap_or(i64::MAX),
                    error: entry,
                }
            }
        }
    }
}

/// What one completing statement commits (see [`completion`]). Each releases the lease, and
/// only while the worker still holds it: `$1` the job (or jobs), `$2` the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Completing {
    /// One job completed, with its result: `$3` its wait in ms, `$4` its result.
    One,
    /// Jobs completed without a result, answering `id, join_id` for each one completed: `$1`
    /// their ids, `$3` their waits in ms. PostgreSQL takes two arrays in the same order;
    /// SQLite a JSON array and a JSON object by id ([`json_ids`], [`ms_by_id`]).
    Batch,
    /// To run again in `$3` ms, without spending the attempt it was on.
    Snooze,
    /// To run again in `$3` ms, with `$4` (an error entry, as JSON) added to its history.
    Retry,
    /// Ended in state `$3` (dead, discarded or cancelled), with `$4` added to its history.
    End,
}

impl Completing {
    /// Every shape, in the order of the variants.
    const ALL: [Completing; 5] = [
        Completing::One,
        Completing::Batch,
        Completing::Snooze,
        Completing::Retry,
        Completing::End,
    ];
}

/// The statement that commits how jobs still leased to a worker ended, used by every path that
/// completes (one job, a batch, and the batch inside the claim) and by every other outcome, so
/// that what each writes is stated once. A completion writes the state, the result, full
/// progress, the finish time and the run time without the wait in the worker
/// (`Finished::waited_ms`); a retry or a snooze the time it runs again; an end its finish time;
/// a failure its history; and each the released lease. Rendered once per dialect and shape;
/// the text is stable, as sqlx's statement cache needs.
pub(crate) fn completion(dialect: Dialect, shape: Completing) -> &'static str {
    static RENDERED: LazyLock<[[String; 2]; 5]> = LazyLock::new(|| {
        Completing::ALL.map(|shape| {
            [Dialect::Sqlite, Dialect::Postgres]
                .map(|dialect| dialect.render(&completion_text(dialect, shape)))
        })
    });
    let by_dialect = &RENDERED[shape as usize];
    match dialect {
        Dialect::Sqlite => &by_dialect[0],
        Dialect::Postgres => &by_dialect[1],
    }
}

fn completion_text(dialect: Dialect, shape: Completing) -> String {
    // The error history is a JSON array kept as text; `$4` is its new entry.
    let appended = match dialect {
        Dialect::Sqlite => "json_insert(errors, '$[#]', json($4))",
        Dialect::Postgres => "(errors::jsonb || jsonb_build_array($4::jsonb))::text",
    };
    let completed = |result: &str, waited_ms: &str| {
        format!(
            "state = '{completed}', result = {result}, progress = 100,
                finished_at = {{now}}, started_at = started_at + {waited_ms}",
            completed = JobState::Completed.as_str(),
        )
    };
    let scheduled = JobState::Scheduled.as_str();
    let (set, jobs, returning) = match (shape, dialect) {
        (Completing::One, _) => (completed("$4", "$3"), "id = $1", ""),
        (Completing::Batch, Dialect::Postgres) => (
            completed(
                "NULL",
                "COALESCE(($3::bigint[])[array_position($1::bigint[], id)], 0)",
            ),
            "id = ANY($1)",
            " RETURNING id, join_id",
        ),
        (Completing::Batch, Dialect::Sqlite) => (
            completed(
                "NULL",
                "COALESCE(json_extract($3, '$.\"' || id || '\"'), 0)",
            ),
            "id IN (SELECT value FROM json_each($1))",
            " RETURNING id, join_id",
        ),
        (Completing::Snooze, _) => (
            format!("state = '{scheduled}', run_at = {{now}} + $3, attempt = attempt - 1"),
            "id = $1",
            "",
        ),
        (Completing::Retry, _) => (
            format!(
                "state = '{scheduled}', run_at = {{now}} + $3,
                errors = {appended}"
            ),
            "id = $1",
            "",
        ),
        (Completing::End, _) => (
            format!(
                "state = $3, finished_at = {{now}},
                errors = {appended}"
            ),
            "id = $1",
            "",
        ),
    };
    format!(
        "UPDATE jobs SET {set},
                locked_by = NULL, locked_until = NULL
         WHERE {jobs} AND state = '{running}' AND locked_by = $2{returning}",
        running = JobState::Running.as_str(),
    )
}

/// Ids as a JSON array, for SQLite statements to read with `json_each`.
pub(crate) fn json_ids(ids: &[i64]) -> String {
    serde_json::to_string(ids).unwrap_or_else(|_| "[]".to_owned())
}

/// `{"<id>": ms, …}`, for SQLite statements to look a number up by job id.
pub(crate) fn ms_by_id(ids: &[i64], ms: &[i64]) -> String {
    let map: serde_json::Map<String, serde_json::Value> = ids
        .iter()
        .zip(ms)
        .map(|(id, ms)| (id.to_string(), (*ms).into()))
        .collect();
    serde_json::Value::Object(map).to_string()
}

/// A batch's plain completions as two CTEs for a PostgreSQL statement to begin with (after
/// `WITH`): `done`, the jobs completed, and `counts`, how many (`completed`), with a
/// notification to waiters when there were any (`notified`). `$1` the ids, `$2` the worker, `$3`
/// their waits in ms. The pump commits them in the claim's own statement on one connection
/// (`claim::claim_and_complete`), and in a statement of their own on a second
/// ([`complete_batch`]).
pub(crate) fn counted_completions() -> String {
    format!(
        "done AS ({completion}),
     counts AS (
         SELECT (SELECT count(*) FROM done) AS completed,
                -- count(expression), not count(*): the call must be evaluated.
                (SELECT count(pg_notify('{CHANNEL_DONE}', ''))
                 FROM (SELECT 1 FROM done LIMIT 1) one) AS notified)",
        completion = completion(Dialect::Postgres, Completing::Batch),
    )
}

/// [`complete_batch`]'s statement.
pub(crate) fn complete_batch_text() -> String {
    format!(
        "WITH {} SELECT completed, notified FROM counts",
        counted_completions()
    )
}

/// Commits plain completions (see [`Finished::is_plain`]) in a statement of their own, on the
/// pump's second PostgreSQL connection while its first claims. Returns how many were applied;
/// the others had been cancelled or taken from this worker.
pub(crate) async fn complete_batch(
    connection: &mut KeptConnection,
    worker: &str,
    ids: &[i64],
    waited_ms: &[i64],
) -> sqlx::Result<usize> {
    let text = sql!(Dialect::Postgres, &complete_batch_text());
    let (completed, _notified): (i64, i64) = connection
        .on_postgres(async |conn| {
            sqlx::query_as(text)
                .bind(ids)
                .bind(worker)
                .bind(waited_ms)
                .fetch_one(conn)
                .await
        })
        .await
        .expect("the pump has a second connection on PostgreSQL only")?;
    Ok(usize::try_from(completed).unwrap_or(0))
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
            insert_successors(&mut tx, item.workflow.as_deref(), &item.successors).await?;
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

/// Applies one non-trivial finish. Returns false when the lease was no longer ours.
async fn finish_one(tx: &mut Tx, worker: &str, item: &Finished) -> sqlx::Result<bool> {
    let affected = on_tx!(tx, |conn, d| {
        let sql = completion(d, item.finish.completing());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::records::last_error;

    #[test]
    fn errors_retry_until_the_last_attempt_then_die() {
        let err = || Err(anyhow::anyhow!("disk on fire").context("writing chapter 3"));
        assert!(matches!(
            to_finish(err(), 1, 3, Duration::ZERO, backoff::BASE),
            Finish::Retry { .. }
        ));
        let Finish::Dead { error } = to_finish(err(), 3, 3, Duration::ZERO, backoff::BASE) else {
            panic!("expected dead");
        };
        assert_eq!(error["error"], "writing chapter 3");
        assert_eq!(error["causes"][0], "disk on fire");
        assert_eq!(error["attempt"], 3);
        // What readers of the history (a failed book's message) get back.
        let history = serde_json::Value::Array(vec![error]).to_string();
        assert_eq!(last_error(&history).as_deref(), Some("writing chapter 3"));
    }

    #[test]
    fn every_outcome_commits_through_the_builder_only_while_the_lease_is_held() {
        for (i, shape) in Completing::ALL.into_iter().enumerate() {
            assert_eq!(shape as usize, i, "ALL lists the shapes in order");
            for dialect in [Dialect::Sqlite, Dialect::Postgres] {
                let sql = completion(dialect, shape);
                assert!(sql.starts_with("UPDATE jobs SET "), "{sql}");
                assert!(
                    sql.contains("locked_by = NULL, locked_until = NULL"),
                    "{shape:?} releases the lease: {sql}"
                );
                assert!(
                    sql.contains("AND state = 'running' AND locked_by = $2"),
                    "{shape:?} commits only while the lease is held: {sql}"
                );
                assert!(!sql.contains("{now}"), "rendered: {sql}");
            }
        }
        let finish = |finish| Finished {
            id: 1,
            waited_ms: 0,
            kind: "k".into(),
            join_id: None,
            workflow: None,
            unblocks: false,
            suspect: false,
            finish,
            successors: Successors::default(),
        };
        let error = serde_json::json!({"error": "no"});
        let shapes: Vec<Completing> = [
            Finish::Complete { result: None },
            Finish::Snooze { delay_ms: 1 },
            Finish::Retry {
                delay_ms: 1,
                error: error.clone(),
            },
            Finish::Dead {
                error: error.clone(),
            },
            Finish::Discard {
                error: error.clone(),
            },
            Finish::Cancel { error },
        ]
        .into_iter()
        .map(|f| finish(f).finish.completing())
        .collect();
        use Completing::*;
        assert_eq!(shapes, vec![One, Snooze, Retry, End, End, End]);
    }
}
