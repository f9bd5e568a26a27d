//! The worker's heartbeat, written from its own OS thread with its own runtime and database
//! connection, so that jobs that hog the main runtime (CPU-bound conversion, a blocking call
//! someone forgot to move off the executor) cannot stop it. Each beat does two things:
//! - refreshes the worker's row, which the supervising web process and `/readyz` read;
//! - extends the leases of the jobs this worker runs, and reports which it still holds, so the
//!   runner can stop a job that was cancelled or rescued from under it.
//!
//! A worker that stops heartbeating is stuck, not merely busy, and its jobs are rescued.

use std::collections::HashSet;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::{oneshot, watch};

use super::store;
use crate::config::DatabaseUrl;
use crate::storage::Database;
use crate::storage::workers::{self, WorkerIdentity};

/// How often to beat: four beats per stall timeout and three per lease, so one slow write never
/// looks like a stall or loses a lease; never more than every 5 s nor less than every 100 ms.
pub fn interval_for(stall_timeout: Duration, lease: Duration) -> Duration {
    (stall_timeout / 4)
        .min(lease / 3)
        .clamp(Duration::from_millis(100), Duration::from_secs(5))
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
                    loop {
                        tokio::select! {
                            _ = &mut stop_rx => break,
                            () = tokio::time::sleep(interval) => {}
                        }
                        if let Err(e) = workers::record_heartbeat(&db, &identity).await {
                            // The supervisor notices a missing heartbeat; keep trying meanwhile.
                            tracing::warn!(error = %e, "worker heartbeat write failed");
                        }
                        let at = Instant::now();
                        match store::extend_leases(&db, &identity.id, lease_ms).await {
                            Ok(ids) => {
                                let _ = held.send(Some(HeldLeases {
                                    at,
                                    ids: ids.into_iter().collect(),
                                }));
                            }
                            Err(e) => tracing::warn!(error = %e, "extending job leases failed"),
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

#[cfg(test)]
mod tests {
    use super::*;

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
