//! What a runner's tasks share: the pump, the executors' tasks and the lease watcher reach the
//! database, the registry, the jobs running here and the admission through it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::admission::Admission;
use super::breaker::StorageBreaker;
use super::claim;
use super::heartbeat::CommitHealth;
use super::registry::Registry;
use crate::config::Failpoint;
use crate::storage::Database;

/// A job running here.
pub(crate) struct RunningJob {
    pub(crate) abort: AbortHandle,
    pub(crate) claimed_at: Instant,
    pub(crate) suspect: bool,
    /// The attempt it runs, by which a rescue's entry in its history names this run.
    pub(crate) attempt: i32,
}

/// One runner's state, shared by its tasks.
pub(crate) struct Shared<C> {
    pub(crate) db: Database,
    pub(crate) registry: Arc<Registry<C>>,
    pub(crate) app: Arc<C>,
    pub(crate) worker: Arc<str>,
    pub(crate) lease_ms: i64,
    pub(crate) retry_base: Duration,
    /// Claims between two of this worker's vacuums of the jobs table (`maintenance::Vacuums`).
    pub(crate) vacuum_every: u64,
    pub(crate) sqlite_path: Option<std::path::PathBuf>,
    pub(crate) wake: Notify,
    pub(crate) running: Mutex<HashMap<i64, RunningJob>>,
    pub(crate) idle: Notify,
    pub(crate) failpoint: Option<Failpoint>,
    /// The pump's commits, for the heartbeat to withhold beats while none go through.
    pub(crate) commits: Arc<CommitHealth>,
    pub(crate) admission: Mutex<Admission>,
    /// Claims stop while storage is out of reach (see `breaker`).
    pub(crate) storage: StorageBreaker,
}

impl<C> Shared<C> {
    pub(crate) fn running(&self) -> std::sync::MutexGuard<'_, HashMap<i64, RunningJob>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn admission(&self) -> std::sync::MutexGuard<'_, Admission> {
        self.admission.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Returns claimed jobs that never started to the queue, without spending their attempt.
    pub(crate) async fn give_back(&self, ids: Vec<i64>) {
        if ids.is_empty() {
            return;
        }
        {
            let mut admission = self.admission();
            for id in &ids {
                admission.release(*id);
            }
        }
        match claim::release(&self.db, &self.worker, &ids).await {
            Ok(n) => tracing::debug!(
                released = n,
                "gave claimed jobs that had not started back to the queue"
            ),
            Err(e) => {
                tracing::warn!(error = %e, "could not give claimed jobs back; their leases will expire")
            }
        }
    }
}
