//! The worker side of the queue: a [`Runner`] starts the engine's tasks, and its handle
//! stops them.
//!
//! Its pieces cooperate only through the database and in-process channels ([`Shared`]):
//! - the **producer**'s pump (`producer`) commits finished jobs and claims new ones, in one
//!   statement where it can (`claim`): claims go in (priority, fair tag, id) order, so tenants
//!   take turns, and only for executors that will be free by the time the answer arrives;
//! - **executors** (`executor`) run each claimed job on a task of its own, and hand how it
//!   ended to the pump, which has the **completer** (`completer`) commit it;
//! - the **waker** turns "something changed" into an immediate claim: LISTEN/NOTIFY on
//!   PostgreSQL, an inotify watch confirmed by `PRAGMA data_version` on SQLite (`wake`);
//! - the **rescuer** (`rescuer`) returns jobs whose lease ran out (their worker died) to the
//!   queue; the pump promotes due jobs (`maintenance`);
//! - the **heartbeat thread** extends our leases and reports the ones we hold, and the lease
//!   watcher here keeps this worker's runs in step with that report.
//!
//! [`Shared`]: super::shared::Shared

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinHandle;

use super::admission::Admission;
use super::breaker::StorageBreaker;
use super::claim;
use super::heartbeat::{self, CommitHealth, Heartbeat, HeldLeases};
use super::registry::Registry;
use super::shared::Shared;
use super::wake::{self, CHANNEL_JOBS, listen};
use super::{backoff, producer, rescuer};
use crate::config::{DatabaseUrl, Failpoint};
use crate::storage::budget::PUMP_CONNECTIONS;
use crate::storage::workers::{self, WorkerIdentity};
use crate::storage::{Checkout, Database, Durability, KeptConnection, Plans};

/// How long a stopping worker tries to commit what finished before it gives up on it.
const COMMIT_WITHIN: Duration = Duration::from_secs(2);

/// How a runner runs.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    pub worker_id: String,
    pub concurrency: usize,
    /// How long a claim holds a job without a heartbeat extending it.
    pub lease: Duration,
    /// The heartbeat must be fresher than this for the worker to count as alive.
    pub stall_timeout: Duration,
    /// Fallback poll when no wake-up arrives (notifications can be lost; jobs become due).
    pub poll_interval: Duration,
    /// First retry delay; later ones double (with jitter) up to an hour.
    pub retry_base: Duration,
    /// For the heartbeat thread's own connection.
    pub database_url: DatabaseUrl,
    /// Crash injection for recovery tests (`BINDERY_FAILPOINT`).
    pub failpoint: Option<Failpoint>,
    /// On PostgreSQL, the engine pool's size (progress, rescue, release and the LISTEN
    /// connection), from the process's connection budget; `None` sizes it by concurrency.
    pub engine_connections: Option<u32>,
    /// On PostgreSQL, the pump's connections, from the process's connection budget: with two,
    /// one claims while the other commits what finished; with one, a statement does both.
    /// `None` gives it [`PUMP_CONNECTIONS`].
    pub pump_connections: Option<u32>,
    /// Memory the running jobs may hold together, by their declared costs (see `admission`);
    /// `None` admits by executors alone.
    pub memory_budget: Option<u64>,
    /// On PostgreSQL, how many jobs this worker claims between two vacuums of the jobs table
    /// that it runs itself ([`maintenance::VACUUM_EVERY`](super::VACUUM_EVERY)).
    pub vacuum_every: u64,
}

impl RunnerConfig {
    pub fn new(database_url: DatabaseUrl) -> Self {
        Self {
            worker_id: uuid::Uuid::new_v4().to_string(),
            concurrency: 16,
            lease: Duration::from_secs(30),
            stall_timeout: Duration::from_secs(60),
            poll_interval: Duration::from_secs(1),
            retry_base: backoff::BASE,
            database_url,
            failpoint: None,
            memory_budget: None,
            engine_connections: None,
            pump_connections: None,
            vacuum_every: super::VACUUM_EVERY,
        }
    }
}

/// A configured, not yet started, job runner.
pub struct Runner<C> {
    db: Database,
    registry: Arc<Registry<C>>,
    app: Arc<C>,
    config: RunnerConfig,
}

impl<C: Send + Sync + 'static> Runner<C> {
    pub fn new(db: Database, registry: Registry<C>, app: C, config: RunnerConfig) -> Self {
        Self {
            db,
            registry: Arc::new(registry),
            app: Arc::new(app),
            config,
        }
    }

    /// Registers the worker (first heartbeat) and starts claiming.
    pub async fn start(self) -> anyhow::Result<RunnerHandle> {
        let config = self.config;
        let identity = WorkerIdentity {
            id: config.worker_id.clone(),
            hostname: nix::unistd::gethostname()
                .ok()
                .and_then(|h| h.into_string().ok())
                .unwrap_or_else(|| "unknown".to_owned()),
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION"),
        };
        let (held_tx, held_rx) = watch::channel(None);
        let commits = Arc::new(CommitHealth::default());
        let heartbeat = Heartbeat::start(
            &config.database_url,
            identity,
            heartbeat::interval_for(config.stall_timeout, config.lease),
            config.lease,
            held_tx,
            commits.clone(),
            config.stall_timeout,
        )?;
        // Claims and completions on PostgreSQL go through a pool of their own that does not wait
        // for the WAL flush (losing one to a database crash only means the job runs again) and
        // plans each statement once (see `Plans::Generic`).
        let engine_db = match &self.db {
            Database::Postgres(_) => {
                let size = config.engine_connections.unwrap_or_else(|| {
                    u32::try_from(config.concurrency.min(32))
                        .unwrap_or(8)
                        .max(4)
                });
                Database::connect_with(
                    &config.database_url,
                    size,
                    Durability::Relaxed,
                    Plans::Generic,
                    Checkout::Tested,
                )
                .await?
            }
            Database::Sqlite(_) => self.db.clone(),
        };
        // The pump's statements go through connections of their own. Through the shared pool,
        // which hands out its idle connections in turn, each claim woke a different server
        // process with cold caches; on the no-op drain one connection went from 23–27k to
        // 30–38k jobs/s, in alternating runs on a loaded machine. The pump keeps each
        // connection from one statement to the next (`KeptConnection`), and the pool does not
        // ping them before use (`Checkout::Trusted`): the pump retries a failed statement
        // anyway, and each ping, like sqlx's on taking a connection back, was a round trip per
        // claim with the server idle. With a second connection, the completions commit on it
        // while the claim runs on the first (see `producer::exchange`).
        let pump_connections = config.pump_connections.unwrap_or(PUMP_CONNECTIONS).max(1);
        let pump_db = match &self.db {
            Database::Postgres(_) => {
                Database::connect_with(
                    &config.database_url,
                    pump_connections,
                    Durability::Relaxed,
                    Plans::Generic,
                    Checkout::Trusted,
                )
                .await?
            }
            Database::Sqlite(_) => self.db.clone(),
        };
        let completions = (pump_connections > 1 && matches!(pump_db, Database::Postgres(_)))
            .then(|| KeptConnection::new(pump_db.clone()));
        let shared = Arc::new(Shared {
            db: engine_db,
            registry: self.registry,
            app: self.app,
            worker: Arc::from(config.worker_id.as_str()),
            lease_ms: i64::try_from(config.lease.as_millis()).unwrap_or(i64::MAX),
            retry_base: config.retry_base,
            vacuum_every: config.vacuum_every,
            sqlite_path: match &config.database_url {
                DatabaseUrl::Sqlite { path } => Some(path.clone()),
                DatabaseUrl::Postgres { .. } => None,
            },
            wake: Notify::new(),
            running: Mutex::new(HashMap::new()),
            idle: Notify::new(),
            failpoint: config.failpoint.clone(),
            commits,
            admission: Mutex::new(Admission::new(config.memory_budget)),
            storage: StorageBreaker::default(),
        });
        let (stop_tx, stop_rx) = watch::channel(false);
        let permits = Arc::new(Semaphore::new(config.concurrency.max(1)));
        let background = vec![
            tokio::spawn(wake_loop(shared.clone())),
            tokio::spawn(rescuer::run(
                shared.db.clone(),
                shared.worker.clone(),
                config.lease,
                {
                    let shared = shared.clone();
                    move || shared.wake.notify_one()
                },
            )),
            tokio::spawn(watch_leases(shared.clone(), held_rx)),
        ];
        // One pump: measured on PostgreSQL, a second one in parallel only adds lock contention
        // on the claim index (SKIP LOCKED scans over each other's rows).
        let pump = tokio::spawn(producer::pump(
            shared.clone(),
            KeptConnection::new(pump_db),
            completions,
            permits,
            config.concurrency.max(1),
            config.poll_interval,
            stop_rx,
        ));
        Ok(RunnerHandle {
            shared,
            stop: stop_tx,
            pump,
            background,
            heartbeat,
            worker_id: config.worker_id,
        })
    }
}

/// A running runner. Call [`RunnerHandle::shutdown`] to stop it.
pub struct RunnerHandle {
    shared: Arc<dyn RunnerState>,
    stop: watch::Sender<bool>,
    pump: JoinHandle<()>,
    background: Vec<JoinHandle<()>>,
    heartbeat: Heartbeat,
    worker_id: String,
}

/// The part of the shared state shutdown needs, without the context type.
trait RunnerState: Send + Sync {
    fn running_ids(&self) -> Vec<i64>;
    fn abort_all(&self) -> Vec<i64>;
    fn idle(&self) -> &Notify;
    fn db(&self) -> &Database;
}

impl<C: Send + Sync + 'static> RunnerState for Shared<C> {
    fn running_ids(&self) -> Vec<i64> {
        self.running().keys().copied().collect()
    }

    fn abort_all(&self) -> Vec<i64> {
        let mut running = self.running();
        let ids: Vec<i64> = running.keys().copied().collect();
        for job in running.values() {
            job.abort.abort();
        }
        running.clear();
        ids
    }

    fn idle(&self) -> &Notify {
        &self.idle
    }

    fn db(&self) -> &Database {
        &self.db
    }
}

/// What a shutdown did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Jobs that finished during the grace period.
    pub drained: usize,
    /// Jobs still running at the deadline, stopped and given back to the queue unspent.
    pub released: usize,
}

impl RunnerHandle {
    pub fn worker_id(&self) -> &str {
        &self.worker_id
    }

    /// Stops claiming, lets running jobs finish for up to `grace`, gives back the rest (without
    /// spending their attempt), commits what finished, and deregisters the worker.
    pub async fn shutdown(self, grace: Duration) -> ShutdownReport {
        let _ = self.stop.send(true);
        let at_start = self.shared.running_ids().len();
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let idle = self.shared.idle().notified();
            if self.shared.running_ids().is_empty() {
                break;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                break;
            }
        }
        let leftover = self.shared.abort_all();
        let released = if leftover.is_empty() {
            0
        } else {
            match claim::release(self.shared.db(), &self.worker_id, &leftover).await {
                Ok(n) => {
                    tracing::info!(released = n, "gave unfinished jobs back to the queue");
                    usize::try_from(n).unwrap_or(0)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not release jobs; their leases will expire");
                    0
                }
            }
        };
        // Every job task is gone now, so the pump commits what they reported and ends; but while
        // storage refuses the commits it would try for ever, and a stopping worker must end (an
        // orphan, its web process gone, has nobody left to stop it). What it could not commit
        // in time runs again once its leases run out.
        let mut pump = self.pump;
        if tokio::time::timeout(COMMIT_WITHIN, &mut pump)
            .await
            .is_err()
        {
            pump.abort();
            tracing::warn!(
                "could not commit the jobs that finished before stopping; they run again once their leases run out"
            );
        }
        for task in &self.background {
            task.abort();
        }
        self.heartbeat.stop().await;
        if let Err(e) = workers::remove_worker(self.shared.db(), &self.worker_id).await {
            tracing::warn!(error = %e, "could not remove this worker's heartbeat row");
        }
        ShutdownReport {
            drained: at_start.saturating_sub(leftover.len()),
            released,
        }
    }
}

async fn wake_loop<C: Send + Sync + 'static>(shared: Arc<Shared<C>>) {
    match &shared.db {
        Database::Postgres(pool) => {
            let wake_shared = shared.clone();
            listen(pool.clone(), CHANNEL_JOBS, move || {
                wake_shared.wake.notify_one()
            })
            .await;
        }
        Database::Sqlite(pool) => {
            let Some(path) = shared.sqlite_path.clone() else {
                return;
            };
            let wake_shared = shared.clone();
            wake::sqlite_commits(pool.clone(), &path, move || wake_shared.wake.notify_one()).await;
        }
    }
}

/// Keeps this worker's runs and its leases in step, from each heartbeat's report of the leases
/// it holds:
/// - stops local runs of jobs this worker no longer holds (cancelled by an operator, or
///   rescued after our lease lapsed): their results would be dropped anyway, and their effects
///   must not race the new owner's;
/// - gives back leases it holds but has not used for a whole lease: claims whose answer never
///   arrived, because the connection was cut after the claim committed (a database restart at
///   that moment). Nothing runs them, and the heartbeat would extend their leases for as long
///   as this worker lives. A claimed job is running, waiting in the local queue (at most
///   `LOCAL_QUEUE_TTL`) or, finished, waiting for its commit, which takes far less than a lease
///   while the engine commits at all; so none is given back while it does not.
async fn watch_leases<C: Send + Sync + 'static>(
    shared: Arc<Shared<C>>,
    mut held: watch::Receiver<Option<HeldLeases>>,
) {
    let lease = Duration::from_millis(u64::try_from(shared.lease_ms).unwrap_or(u64::MAX));
    // Held leases that no local run uses, and since when.
    let mut unused: HashMap<i64, Instant> = HashMap::new();
    while held.changed().await.is_ok() {
        let Some(beat) = held.borrow_and_update().clone() else {
            continue;
        };
        let mut stopped = Vec::new();
        let orphans: Vec<i64> = {
            let mut running = shared.running();
            let lost: Vec<i64> = running
                .iter()
                .filter(|(id, job)| job.claimed_at < beat.at && !beat.ids.contains(id))
                .map(|(id, _)| *id)
                .collect();
            for id in lost {
                if let Some(job) = running.remove(&id) {
                    job.abort.abort();
                    tracing::warn!(
                        job.id = id,
                        "stopped a job this worker no longer holds (cancelled, or rescued after its lease lapsed)"
                    );
                    stopped.push((id, job.attempt));
                }
            }
            if running.is_empty() {
                shared.idle.notify_waiters();
            }
            unused.retain(|id, _| beat.ids.contains(id) && !running.contains_key(id));
            for id in beat.ids.iter().filter(|id| !running.contains_key(id)) {
                unused.entry(*id).or_insert(beat.at);
            }
            if shared.commits.failing_for().is_some() {
                Vec::new()
            } else {
                unused
                    .iter()
                    .filter(|(_, since)| beat.at.duration_since(**since) > lease)
                    .map(|(id, _)| *id)
                    .collect()
            }
        };
        for (id, attempt) in stopped {
            match rescuer::take_back(&shared.db, &shared.worker, id, attempt).await {
                Ok(true) => tracing::info!(
                    job.id = id,
                    "this worker came back after its job was rescued: the job did not lose it, so its lost-worker charge is taken back"
                ),
                Ok(false) => {}
                Err(e) => tracing::warn!(
                    job.id = id,
                    error = %e,
                    "could not take back the lost-worker charge of a job rescued from this worker while it stood still"
                ),
            }
        }
        if !orphans.is_empty() {
            for id in &orphans {
                unused.remove(id);
            }
            tracing::warn!(
                jobs = ?orphans,
                "giving back leases this worker held without running their jobs (a claim whose answer was lost)"
            );
            shared.give_back(orphans).await;
        }
    }
}
