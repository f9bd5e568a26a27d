//! The worker's heartbeat, written from its own OS thread with its own runtime and database
//! connection, so that jobs that hog the main runtime (CPU-bound conversion, a blocking call
//! someone forgot to move off the executor) cannot stop it. Each beat does two things:
//! - refreshes the worker's row, which the supervising web process and `/readyz` read;
//! - extends the leases of the jobs this worker runs, and reports which it still holds, so the
//!   runner can stop a job that was cancelled or rescued from under it.
//!
//! A worker that stops heartbeating is stuck, not merely busy, and its jobs are rescued.
//!
//! The thread alone cannot tell whether the worker does its work: it has its own connection, so
//! it beats on while the job engine fails every commit (a full disk let small heartbeat writes
//! through while the engine's commits failed, and `/readyz` said all was well). So the engine
//! reports its commits in [`CommitHealth`], and a beat is withheld (row and leases alike) once
//! the engine has failed every commit for longer than the stall timeout. Supervision then sees
//! a stale heartbeat and restarts the worker after `WORKER_STALL_TIMEOUT` more, and other
//! workers rescue its jobs; a worker that only waits for work, or that fails for a shorter
//! while and then commits again, keeps beating.

use std::sync::Mutex;

use std::collections::HashSet;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::{oneshot, watch};

use crate::config::DatabaseUrl;
use crate::storage::Database;
use crate::storage::backoff::Backoff;
use crate::storage::workers::{self, WorkerIdentity};

/// How often to beat: four beats per stall timeout and three per lease, so one slow write never
/// looks like a stall or loses a lease; never more than every 5 s nor less than every 100 ms.
pub fn interval_for(stall_timeout: Duration, lease: Duration) -> Duration {
    (stall_timeout / 4)
        .min(lease / 3)
        .clamp(Duration::from_millis(100), Duration::from_secs(5))
}

/// How often a withheld heartbeat looks whether the engine commits again: a reading of a
/// mutex, so often, since readiness returns only with the next beat.
const WITHHELD_CHECK: Duration = Duration::from_millis(100);

/// Whether the job engine can commit: when its statements started failing, if they are failing.
#[derive(Debug, Default)]
pub struct CommitHealth {
    failing_since: Mutex<Option<Instant>>,
}

impl CommitHealth {
    /// A commit (or claim) failed; the first of a run of failures starts the clock.
    pub fn failed(&self) {
        self.failing_since
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(Instant::now);
    }

    /// A commit (or claim) went through: the engine works.
    pub fn succeeded(&self) {
        *self.failing_since.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// How long every commit has failed, if the last one failed.
    pub fn failing_for(&self) -> Option<Duration> {
        self.failing_since
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map(|since| since.elapsed())
    }
}

/// The leases a beat found this worker holding, and when that beat started.
#[derive(Debug, Clone)]
pub struct HeldLeases {
    pub at: Instant,
    pub ids: HashSet<i64>,
}

pub struct Heartbeat {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Heartbeat {
    /// Starts beating; the first beat is written before this returns, so readiness does not
    /// wait a whole interval.
    pub fn start(
        url: &DatabaseUrl,
        identity: WorkerIdentity,
        interval: Duration,
        lease: Duration,
        held: watch::Sender<Option<HeldLeases>>,
        engine: Arc<CommitHealth>,
        stuck_after: Duration,
    ) -> anyhow::Result<Self> {
        let (first_tx, first_rx) = std::sync::mpsc::channel::<anyhow::Result<()>>();
        let (stop_tx, mut stop_rx) = oneshot::channel::<()>();
        let url = url.clone();
        let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
        let thread = std::thread::Builder::new()
            .name("heartbeat".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = first_tx.send(Err(e.into()));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let db = match Database::connect(&url, 1).await {
                        Ok(db) => db,
                        Err(e) => {
                            let _ = first_tx.send(Err(e));
                            return;
                        }
                    };
                    let first = workers::record_heartbeat(&db, &identity)
                        .await
                        .context("writing the first worker heartbeat");
                    let failed = first.is_err();
                    let _ = first_tx.send(first);
                    if failed {
                        return;
                    }
                    let mut withheld = false;
                    // After a failed write, the next may come sooner (by the one rule for
                    // failing storage, at most a second later): when the database is back, the
                    // worker is seen alive (and its leases held) within a second, not a whole
                    // interval later.
                    let mut beats = Backoff::new("writing the worker's heartbeat");
                    let mut next = interval;
                    loop {
                        tokio::select! {
                            _ = &mut stop_rx => break,
                            () = tokio::time::sleep(next) => {}
                        }
                        next = interval;
                        match engine.failing_for() {
                            Some(failing) if failing > stuck_after => {
                                if !withheld {
                                    withheld = true;
                                    tracing::error!(
                                        worker.id = %identity.id,
                                        failing_s = failing.as_secs(),
                                        limit_s = stuck_after.as_secs(),
                                        "the job engine has not been able to commit for longer than WORKER_STALL_TIMEOUT; \
                                         withholding this worker's heartbeat so that it is restarted and its jobs rescued"
                                    );
                                }
                                next = interval.min(WITHHELD_CHECK);
                                continue;
                            }
                            _ if withheld => {
                                withheld = false;
                                tracing::info!(worker.id = %identity.id, "the job engine commits again; heartbeating again");
                            }
                            _ => {}
                        }
                        if let Err(e) = workers::record_heartbeat(&db, &identity).await {
                            // The supervisor notices a missing heartbeat; keep trying meanwhile.
                            let e = anyhow::Error::new(e).context("recording the heartbeat");
                            next = interval.min(beats.failed(&e));
                            continue;
                        }
                        let at = Instant::now();
                        match extend_leases(&db, &identity.id, lease_ms).await {
                            Ok(ids) => {
                                beats.succeeded();
                                let _ = held.send(Some(HeldLeases {
                                    at,
                                    ids: ids.into_iter().collect(),
                                }));
                            }
                            Err(e) => {
                                let e = anyhow::Error::new(e).context("extending job leases");
                                next = interval.min(beats.failed(&e));
                            }
                        }
                    }
                    db.close().await;
                });
            })
            .context("starting the heartbeat thread")?;
        first_rx
            .recv()
            .context("the heartbeat thread ended before its first beat")??;
        Ok(Self {
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// Stops beating and waits for the thread to close its connection.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

/// Extends the leases of every job `worker` is running, and returns the ids it still holds.
/// A job missing from the answer was cancelled or rescued from under us.
async fn extend_leases(db: &Database, worker: &str, lease_ms: i64) -> sqlx::Result<Vec<i64>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits (up to 10 s) until the worker's heartbeat age satisfies `ok`.
    async fn wait_for_age(db: &Database, what: &str, ok: impl Fn(i64) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let rows = workers::list_workers(db).await.expect("list workers");
            let age = rows.first().map(|w| w.age_ms).expect("a worker row");
            if ok(age) {
                return;
            }
            assert!(Instant::now() < deadline, "{what}: heartbeat age {age} ms");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn beats_stop_while_the_engine_cannot_commit_and_resume_when_it_can() {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = DatabaseUrl::Sqlite {
            path: dir.path().join("bindery.db"),
        };
        let db = Database::connect(&url, 2).await.expect("connect");
        db.migrate().await.expect("migrate");
        let engine = Arc::new(CommitHealth::default());
        let (held, _held_rx) = watch::channel(None);
        let identity = WorkerIdentity {
            id: "w1".into(),
            hostname: "test".into(),
            pid: std::process::id(),
            version: "test",
        };
        let interval = Duration::from_millis(100);
        let heartbeat = Heartbeat::start(
            &url,
            identity,
            interval,
            Duration::from_secs(30),
            held,
            engine.clone(),
            Duration::from_secs(1),
        )
        .expect("start");
        // A short run of failures is not a stall: the beats go on.
        engine.failed();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(engine.failing_for() < Some(Duration::from_secs(1)));
        wait_for_age(&db, "beating through a short failure", |age| age < 200).await;
        // Past the bound, the beats stop and the row goes stale.
        wait_for_age(&db, "a withheld heartbeat", |age| age > 1500).await;
        // A commit that goes through brings them back.
        engine.succeeded();
        wait_for_age(&db, "beating again", |age| age < 200).await;
        heartbeat.stop().await;
    }

    #[test]
    fn commit_health_times_a_run_of_failures_and_forgets_it_on_success() {
        let health = CommitHealth::default();
        assert_eq!(health.failing_for(), None);
        health.failed();
        std::thread::sleep(Duration::from_millis(20));
        health.failed();
        // The clock runs from the first failure of the run, not the last.
        assert!(
            health
                .failing_for()
                .is_some_and(|d| d >= Duration::from_millis(20))
        );
        health.succeeded();
        assert_eq!(health.failing_for(), None);
    }

    #[test]
    fn interval_scales_with_the_stall_timeout_and_lease() {
        let lease = Duration::from_secs(30);
        assert_eq!(
            interval_for(Duration::from_secs(60), lease),
            Duration::from_secs(5)
        );
        assert_eq!(
            interval_for(Duration::from_secs(2), lease),
            Duration::from_millis(500)
        );
        assert_eq!(
            interval_for(Duration::from_secs(60), Duration::from_secs(3)),
            Duration::from_secs(1)
        );
        assert_eq!(
            interval_for(Duration::from_millis(100), lease),
            Duration::from_millis(100)
        );
    }
}
