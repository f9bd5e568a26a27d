//! The worker side of the queue: claim, run, commit.
//!
//! Three tasks and a thread cooperate, and only through the database and in-process channels:
//! - the **pump** commits finished jobs and claims new ones, in one statement where it can
//!   (see [`pump`]): claims go in (priority, fair tag, id) order, so tenants take turns, and
//!   only for executors that will be free by the time the answer arrives, so a tenant's backlog
//!   delays another tenant's job by at most one job per executor (plus, for jobs that take
//!   less than a round trip, about one round trip);
//! - the **waker** turns "something changed" into an immediate claim: LISTEN/NOTIFY on
//!   PostgreSQL, an inotify watch confirmed by `PRAGMA data_version` on SQLite (`wake`);
//! - the **rescuer** returns jobs whose lease ran out (their worker died) to the queue;
//! - the **heartbeat thread** extends our leases and reports the ones we lost.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use serde_json::json;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::task::{AbortHandle, JoinHandle};
use tracing::Instrument;

use super::admission::Admission;
use super::breaker::StorageBreaker;
use super::heartbeat::{self, CommitHealth, Heartbeat, HeldLeases};
use super::store::{self, ClaimedRow, Finish, Finished, Successors};
use super::wake::{self, CHANNEL_JOBS, listen};
use super::{JobContext, Outcome, Registry, backoff, failpoint};
use crate::config::{DatabaseUrl, Failpoint, Moment};
use crate::storage::backoff::Backoff;
use crate::storage::fault::{self, Fault};
use crate::storage::workers::{self, WorkerIdentity};
use crate::storage::{Database, Durability, Plans};

/// The local queue holds at most this many jobs per executor. It only fills that far with jobs
/// short enough for the executors to get through that many in one round trip; measured on the
/// no-op PostgreSQL drain with 32 executors (jobs/s, medians of alternating runs): at most 1×
/// 25–37k, 2× 40–43k, 4× 44–47k, 8× 47–54k, 16× 42–57k, noisier. Four keeps the claims short.
const LOCAL_QUEUE_FACTOR: usize = 4;

/// A claimed job that has not started after this long goes back to the queue, for another
/// worker to take. Only when the mix changes (long jobs right behind a run of short ones) can
/// a job wait here that long.
const LOCAL_QUEUE_TTL: Duration = Duration::from_millis(500);

/// How soon a paused queue stops being claimed from.
pub const PAUSE_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// How long a stopping worker tries to commit what finished before it gives up on it.
const COMMIT_WITHIN: Duration = Duration::from_secs(2);

/// How long a job that found storage full or out of reach waits before it may be claimed again
/// (with the usual jitter).
const STORAGE_WAIT: Duration = Duration::from_millis(250);

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
    /// Memory the running jobs may hold together, by their declared costs (see `admission`);
    /// `None` admits by executors alone.
    pub memory_budget: Option<u64>,
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

struct RunningJob {
    abort: AbortHandle,
    claimed_at: Instant,
    suspect: bool,
}

struct Shared<C> {
    db: Database,
    /// The pump's own connection on PostgreSQL (the shared pool on SQLite): see `Runner::start`.
    pump_db: Database,
    registry: Arc<Registry<C>>,
    app: Arc<C>,
    worker: Arc<str>,
    lease_ms: i64,
    retry_base: Duration,
    sqlite_path: Option<std::path::PathBuf>,
    wake: Notify,
    running: Mutex<HashMap<i64, RunningJob>>,
    idle: Notify,
    failpoint: Option<Failpoint>,
    /// The pump's commits, for the heartbeat to withhold beats while none go through.
    commits: Arc<CommitHealth>,
    admission: Mutex<Admission>,
    /// Claims stop while storage is out of reach (see `breaker`).
    storage: StorageBreaker,
}

impl<C> Shared<C> {
    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<i64, RunningJob>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn admission(&self) -> std::sync::MutexGuard<'_, Admission> {
        self.admission.lock().unwrap_or_else(|e| e.into_inner())
    }
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
                )
                .await?
            }
            Database::Sqlite(_) => self.db.clone(),
        };
        // The pump's statements go through one connection of their own. Through the shared pool,
        // which hands out its idle connections in turn, each claim woke a different server
        // process with cold caches; on the no-op drain one connection went from 23–27k to
        // 30–38k jobs/s, in alternating runs on a loaded machine.
        let pump_db = match &self.db {
            Database::Postgres(_) => {
                Database::connect_with(&config.database_url, 1, Durability::Relaxed, Plans::Generic)
                    .await?
            }
            Database::Sqlite(_) => self.db.clone(),
        };
        let shared = Arc::new(Shared {
            db: engine_db,
            pump_db,
            registry: self.registry,
            app: self.app,
            worker: Arc::from(config.worker_id.as_str()),
            lease_ms: i64::try_from(config.lease.as_millis()).unwrap_or(i64::MAX),
            retry_base: config.retry_base,
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
            tokio::spawn(rescue_loop(shared.clone())),
            tokio::spawn(watch_leases(shared.clone(), held_rx)),
        ];
        // One pump: measured on PostgreSQL, a second one in parallel only adds lock contention
        // on the claim index (SKIP LOCKED scans over each other's rows).
        let pump = tokio::spawn(pump(
            shared.clone(),
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
            match store::release(self.shared.db(), &self.worker_id, &leftover).await {
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

/// The claim/commit loop. Each turn it commits what has finished and claims for the executors
/// that will be free when the answer arrives, in a single statement where it can (plain
/// completions on PostgreSQL): a round trip and a commit serve both.
///
/// While a statement is in flight, the jobs the previous one claimed start as executors free
/// up, so the database and the executors work at the same time instead of taking turns. For
/// that, a claim may take more jobs than there are free executors: as many as finished during
/// the previous round trip (at most `LOCAL_QUEUE_FACTOR` per executor). Short jobs so keep a
/// local queue and each statement carries several times the work; long jobs rarely finish
/// within a round trip, so they are claimed one free executor at a time and never wait here
/// while another worker is idle. Whatever waits here starts within about one round trip, so
/// it delays another tenant's job by no more than that. The local queue is kept in claim
/// order: a job claimed later that sorts earlier starts first.
async fn pump<C: Send + Sync + 'static>(
    shared: Arc<Shared<C>>,
    permits: Arc<Semaphore>,
    concurrency: usize,
    poll_interval: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let (finished_tx, mut finished) = mpsc::unbounded_channel::<Finished>();
    let mut finished_tx = Some(finished_tx);
    let all_queues = shared.registry.queues();
    let mut queues = all_queues.clone();
    let mut paused_checked: Option<Instant> = None;
    let mut promoted: Option<Instant> = None;
    // While storage fails the pump, each of its statements waits (and logs) by the one rule:
    // a full disk once had it promote, fail and log every 20 ms.
    let mut exchanges = Backoff::new("committing or claiming jobs");
    let mut promotions = Backoff::new("promoting due jobs");
    let mut pause_reads = Backoff::new("reading paused queues");
    // Finished jobs for the next statement, and those that finish while it is in flight.
    let mut batch: Vec<Finished> = Vec::new();
    let mut later: Vec<Finished> = Vec::new();
    // Free executors this loop has reserved, and claimed jobs waiting for one.
    let mut held: Vec<OwnedSemaphorePermit> = Vec::new();
    let mut local = LocalQueue::default();
    let mut prefetch = 0usize;
    let mut idle = false;
    // Suspects were claimed beyond the one a worker runs at a time, and given back.
    let mut held_back_suspects = false;
    loop {
        let stopping = *stop.borrow();
        if stopping && finished_tx.is_some() {
            // No new claims or starts; keep committing until every running job has reported.
            finished_tx = None;
            held.clear();
            give_back(&shared, local.take_ids()).await;
        }
        // Gather without waiting.
        while batch.len() < 2048 {
            match finished.try_recv() {
                Ok(item) => batch.push(item),
                Err(_) => break,
            }
        }
        if let Some(tx) = &finished_tx {
            while !local.is_empty() {
                let permit = match held.pop() {
                    Some(p) => p,
                    None => match permits.clone().try_acquire_owned() {
                        Ok(p) => p,
                        Err(_) => break,
                    },
                };
                if let Some((row, waited)) = local.pop() {
                    spawn_job(&shared, row, waited, permit, tx.clone());
                }
            }
            if !idle {
                while held.len() < concurrency {
                    match permits.clone().try_acquire_owned() {
                        Ok(p) => held.push(p),
                        Err(_) => break,
                    }
                }
            }
            let stale = local.take_expired(LOCAL_QUEUE_TTL);
            if !stale.is_empty() {
                tracing::debug!(
                    jobs = stale.len(),
                    "claimed jobs waited too long for an executor"
                );
                give_back(&shared, stale).await;
                // These jobs are not short: claim for free executors only until they are again.
                prefetch = 0;
            }
        }
        // The suspect this worker ran has ended: another may be claimed now.
        if held_back_suspects && batch.iter().any(|f| f.suspect) {
            held_back_suspects = false;
            idle = false;
        }
        let wanted = if stopping || idle {
            0
        } else {
            let free = (held.len() + prefetch).saturating_sub(local.len());
            // While the pump's own statements fail, they are the probe: the first that goes
            // through claims as usual, and the heartbeat (which waits for a commit) resumes.
            if shared.commits.failing_for().is_some() {
                free
            } else {
                shared.storage.allow(free)
            }
        };
        // Nothing to do: wait for a finished job, a free executor, a wake-up or a stop.
        if batch.is_empty() && wanted == 0 {
            if stopping {
                match finished.recv().await {
                    Some(item) => batch.push(item),
                    None => break,
                }
                continue;
            }
            let nap = if idle {
                // A job that is due but could not be promoted is not due before promotion may
                // be tried again.
                next_nap(&shared, poll_interval)
                    .await
                    .max(promotions.wait())
            } else {
                poll_interval
            };
            tokio::select! {
                item = finished.recv() => {
                    if let Some(item) = item {
                        batch.push(item);
                    }
                }
                permit = permits.clone().acquire_owned(), if !idle || !local.is_empty() => {
                    if let Ok(p) = permit {
                        held.push(p);
                    }
                }
                () = shared.wake.notified(), if idle => idle = false,
                () = tokio::time::sleep(nap), if idle => idle = false,
                () = tokio::time::sleep_until(local.expires(LOCAL_QUEUE_TTL)), if !local.is_empty() => {}
                () = sleep_until_probe(&shared.storage), if shared.storage.next_probe().is_some() => {}
                _ = stop.changed() => {}
            }
            continue;
        }

        if wanted > 0 {
            // Paused queues are read at most every 100 ms (a pause takes effect within that):
            // checking them inside every claim statement costs PostgreSQL several percent.
            if paused_checked.is_none_or(|t| t.elapsed() >= PAUSE_CHECK_INTERVAL)
                && pause_reads.ready()
            {
                paused_checked = Some(Instant::now());
                match store::paused_queues(&shared.pump_db).await {
                    Ok(paused) => {
                        pause_reads.succeeded();
                        queues = all_queues
                            .iter()
                            .filter(|q| !paused.contains(q))
                            .cloned()
                            .collect();
                    }
                    Err(e) => {
                        pause_reads.failed(&e.into());
                    }
                }
            }
            // Scheduled jobs whose time has come join the claimable set; at most every 20 ms,
            // so a busy loop does not pay for it on every claim.
            if promoted.is_none_or(|t| t.elapsed() >= Duration::from_millis(20))
                && promotions.ready()
            {
                promoted = Some(Instant::now());
                match store::promote_due(&shared.pump_db).await {
                    Ok(_) => promotions.succeeded(),
                    Err(e) => {
                        promotions.failed(&e.into());
                    }
                }
            }
        }

        let mut finished_in_flight = 0usize;
        // A suspect may be claimed only while this worker holds none (see
        // `store::claim_and_complete`).
        let suspects = !local.has_suspect() && !shared.running().values().any(|j| j.suspect);
        let exchanged = {
            let statement = exchange(&shared, &queues, &batch, wanted, suspects);
            tokio::pin!(statement);
            loop {
                tokio::select! {
                    biased;
                    exchanged = &mut statement => break exchanged,
                    Some(item) = finished.recv() => {
                        later.push(item);
                        finished_in_flight += 1;
                    }
                    permit = permits.clone().acquire_owned(), if !local.is_empty() && finished_tx.is_some() => {
                        if let (Ok(permit), Some(tx), Some((row, waited))) = (permit, &finished_tx, local.pop()) {
                            spawn_job(&shared, row, waited, permit, tx.clone());
                        }
                    }
                }
            }
        };
        if exchanged.committed {
            batch.clear();
        }
        batch.append(&mut later);
        match exchanged.claimed {
            Ok(rows) => {
                exchanges.succeeded();
                shared.commits.succeeded();
                let (rows, over) = shared.admission().admit(rows);
                give_back(&shared, over.iter().map(|r| r.id).collect()).await;
                let (rows, extra_suspects) = one_suspect(rows, suspects);
                let got = rows.len();
                local.extend(rows);
                // Fewer than asked for: nothing more is due, so wait for a wake-up before
                // claiming again, and claim only for free executors then: the next jobs may
                // not be as short as the last. Suspects given back are still due, but wait for
                // the one kept: its end wakes the pump (below).
                idle = wanted > 0 && got < wanted;
                held_back_suspects |= !extra_suspects.is_empty();
                give_back(&shared, extra_suspects).await;
                prefetch = if idle {
                    0
                } else {
                    finished_in_flight.min(concurrency * LOCAL_QUEUE_FACTOR)
                };
            }
            Err(e) => {
                // Finished jobs keep their leases while we retry; if the database stays away
                // longer than a lease, they are rescued and run again (at least once).
                shared.commits.failed();
                let pause = exchanges.failed(&e.into());
                held.clear();
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    _ = stop.changed() => {}
                }
                continue;
            }
        }
        // Let the jobs just spawned start (short ones finish) before counting free executors
        // again: bigger claims, fewer round trips.
        tokio::task::yield_now().await;
    }
}

/// Until the storage breaker lets the next probe be claimed.
async fn sleep_until_probe(breaker: &StorageBreaker) {
    if let Some(next) = breaker.next_probe() {
        tokio::time::sleep_until(next.into()).await;
    }
}

/// What one statement (or, with successors and failures, one transaction and a claim) did.
struct Exchanged {
    /// The batch of finished jobs is committed; it is not sent again.
    committed: bool,
    claimed: sqlx::Result<Vec<ClaimedRow>>,
}

/// Commits `batch` and claims up to `wanted` jobs.
async fn exchange<C>(
    shared: &Shared<C>,
    queues: &[String],
    batch: &[Finished],
    wanted: usize,
    suspects: bool,
) -> Exchanged {
    let room = shared.admission().room();
    if !batch.is_empty() && !batch.iter().all(Finished::is_plain) {
        // Successors, joins, failures: their own transaction, then claim.
        match store::finish_batch(&shared.pump_db, &shared.worker, batch).await {
            Ok(accepted) => {
                report_dropped(batch, accepted.len());
                after_commit(shared, batch);
                // Successors may be due now.
                shared.wake.notify_one();
            }
            Err(e) => {
                return Exchanged {
                    committed: false,
                    claimed: Err(e),
                };
            }
        }
        let claimed = if wanted > 0 {
            store::claim_and_complete(
                &shared.pump_db,
                &shared.worker,
                queues,
                &[],
                &[],
                wanted,
                shared.lease_ms,
                &room,
                suspects,
            )
            .await
            .map(|(rows, _)| rows)
        } else {
            Ok(Vec::new())
        };
        return Exchanged {
            committed: true,
            claimed,
        };
    }
    let ids: Vec<i64> = batch.iter().map(|f| f.id).collect();
    let waited_ms: Vec<i64> = batch.iter().map(|f| f.waited_ms).collect();
    match store::claim_and_complete(
        &shared.pump_db,
        &shared.worker,
        queues,
        &ids,
        &waited_ms,
        wanted,
        shared.lease_ms,
        &room,
        suspects,
    )
    .await
    {
        Ok((rows, completed)) => {
            report_dropped(batch, completed);
            after_commit(shared, batch);
            Exchanged {
                committed: true,
                claimed: Ok(rows),
            }
        }
        Err(e) => Exchanged {
            committed: false,
            claimed: Err(e),
        },
    }
}

/// The claimed rows, with at most one suspect (the first in claim order) and none unless
/// `allowed`; and the ids of the suspects left out, to give back.
fn one_suspect(rows: Vec<ClaimedRow>, allowed: bool) -> (Vec<ClaimedRow>, Vec<i64>) {
    let mut room = usize::from(allowed);
    let mut extra = Vec::new();
    let mut kept = Vec::with_capacity(rows.len());
    // Rows come in claim order (see `claim_and_complete`).
    for row in rows {
        if !row.suspect() {
            kept.push(row);
        } else if room > 0 {
            room -= 1;
            kept.push(row);
        } else {
            extra.push(row.id);
        }
    }
    (kept, extra)
}

/// Claimed jobs waiting for an executor, smallest (priority, fair_tag, id) first.
#[derive(Default)]
struct LocalQueue(Vec<(ClaimedRow, Instant)>);

impl LocalQueue {
    fn extend(&mut self, rows: Vec<ClaimedRow>) {
        let now = Instant::now();
        self.0.extend(rows.into_iter().map(|r| (r, now)));
        // Largest first, so `pop` takes the smallest.
        self.0
            .sort_unstable_by_key(|(r, _)| std::cmp::Reverse((r.priority, r.fair_tag, r.id)));
    }

    /// The next job, and how long it waited here.
    fn pop(&mut self) -> Option<(ClaimedRow, Duration)> {
        self.0.pop().map(|(r, at)| (r, at.elapsed()))
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn has_suspect(&self) -> bool {
        self.0.iter().any(|(r, _)| r.suspect())
    }

    fn take_ids(&mut self) -> Vec<i64> {
        self.0.drain(..).map(|(r, _)| r.id).collect()
    }

    /// When the oldest job here has waited `ttl`.
    fn expires(&self, ttl: Duration) -> tokio::time::Instant {
        let oldest = self
            .0
            .iter()
            .map(|(_, at)| *at)
            .min()
            .unwrap_or_else(Instant::now);
        tokio::time::Instant::from_std(oldest + ttl)
    }

    /// Removes the jobs that have waited `ttl` or longer.
    fn take_expired(&mut self, ttl: Duration) -> Vec<i64> {
        let mut expired = Vec::new();
        self.0.retain(|(r, at)| {
            let keep = at.elapsed() < ttl;
            if !keep {
                expired.push(r.id);
            }
            keep
        });
        expired
    }
}

/// Returns claimed jobs that never started to the queue, without spending their attempt.
async fn give_back<C>(shared: &Shared<C>, ids: Vec<i64>) {
    if ids.is_empty() {
        return;
    }
    {
        let mut admission = shared.admission();
        for id in &ids {
            admission.release(*id);
        }
    }
    match store::release(&shared.db, &shared.worker, &ids).await {
        Ok(n) => tracing::debug!(
            released = n,
            "gave claimed jobs that had not started back to the queue"
        ),
        Err(e) => {
            tracing::warn!(error = %e, "could not give claimed jobs back; their leases will expire")
        }
    }
}

fn after_commit<C>(shared: &Shared<C>, batch: &[Finished]) {
    if let Some(failpoint) = &shared.failpoint {
        for finished in batch {
            failpoint::check(failpoint, Moment::AfterCommit, &finished.kind);
        }
    }
}

fn report_dropped(batch: &[Finished], accepted: usize) {
    if accepted < batch.len() {
        tracing::warn!(
            dropped = batch.len() - accepted,
            "some jobs were cancelled or taken from this worker before they finished; their results are dropped"
        );
    }
}

/// Until the next scheduled job is due, within the fallback poll interval.
async fn next_nap<C>(shared: &Shared<C>, poll_interval: Duration) -> Duration {
    match store::next_due_in_ms(&shared.pump_db).await {
        Ok(Some(ms)) => Duration::from_millis(u64::try_from(ms).unwrap_or(0))
            .clamp(Duration::from_millis(5), poll_interval),
        _ => poll_interval,
    }
}

fn spawn_job<C: Send + Sync + 'static>(
    shared: &Arc<Shared<C>>,
    row: ClaimedRow,
    waited: Duration,
    permit: OwnedSemaphorePermit,
    finished: mpsc::UnboundedSender<Finished>,
) {
    let successors = Arc::new(Mutex::new(Successors::default()));
    let cx = JobContext::new(
        shared.app.clone(),
        shared.db.clone(),
        shared.worker.clone(),
        row.id,
        row.attempt,
        row.max_attempts,
        row.tenant.clone(),
        row.workflow.clone(),
        successors.clone(),
    );
    let span = tracing::info_span!(
        "job",
        job.id = row.id,
        job.kind = %row.kind,
        job.queue = %row.queue,
        job.attempt = row.attempt,
        workflow = row.workflow.as_deref().unwrap_or(""),
        tenant = tracing::field::Empty,
        book.id = tracing::field::Empty,
    );
    if !row.tenant.is_empty() {
        span.record("tenant", row.tenant.as_str());
    }
    let run = shared.registry.start(&row.kind, &row.payload, cx);
    let id = row.id;
    let suspect = row.suspect();
    let waited_ms = i64::try_from(waited.as_millis()).unwrap_or(i64::MAX);
    let task_shared = shared.clone();
    // Hold the map's lock across the spawn, so the task cannot remove its entry before it exists.
    let mut running = shared.running();
    let task = tokio::spawn(
        async move {
            let started = Instant::now();
            let outcome = match run {
                None => Ok(Outcome::Discard(format!(
                    "unknown job type `{}`: no worker registers it (was it renamed, or is this worker older than the code that enqueued it?)",
                    row.kind
                ))),
                Some(run) => AssertUnwindSafe(run)
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|panic| Err(anyhow::anyhow!("the job panicked: {}", panic_message(&panic)))),
            };
            if let Some(failpoint) = &task_shared.failpoint {
                failpoint::check(failpoint, Moment::BeforeCommit, &row.kind);
            }
            let storage_trouble = matches!(&outcome, Err(e) if fault::of_storage(e).is_some());
            let finish = to_finish(outcome, &row, started.elapsed(), task_shared.retry_base);
            if storage_trouble {
                task_shared.storage.trip();
            } else if matches!(finish, Finish::Complete { .. }) {
                task_shared.storage.close();
            }
            let successors = std::mem::take(&mut *successors.lock().unwrap_or_else(|e| e.into_inner()));
            let _ = finished.send(Finished {
                id: row.id,
                waited_ms,
                kind: row.kind,
                join_id: row.join_id,
                workflow: row.workflow,
                unblocks: row.serial_key.is_some(),
                suspect,
                finish,
                successors,
            });
            // Budget freed: jobs it held back may be claimed now.
            if task_shared.admission().release(row.id) {
                task_shared.wake.notify_one();
            }
            let mut running = task_shared.running();
            running.remove(&row.id);
            if running.is_empty() {
                task_shared.idle.notify_waiters();
            }
            drop(permit);
        }
        .instrument(span),
    );
    running.insert(
        id,
        RunningJob {
            abort: task.abort_handle(),
            claimed_at: Instant::now(),
            suspect,
        },
    );
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

fn error_entry(attempt: i32, message: &str, causes: Vec<String>) -> serde_json::Value {
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    json!({ "attempt": attempt, "at": at, "error": message, "causes": causes })
}

fn to_finish(
    outcome: anyhow::Result<Outcome>,
    row: &ClaimedRow,
    took: Duration,
    retry_base: Duration,
) -> Finish {
    let duration_ms = crate::telemetry::millis(took);
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
                error: error_entry(row.attempt, &message, Vec::new()),
            }
        }
        Ok(Outcome::Cancel(message)) => {
            tracing::info!(duration_ms, reason = %message, "job cancelled itself");
            Finish::Cancel {
                error: error_entry(row.attempt, &format!("cancelled: {message}"), Vec::new()),
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
            let entry = error_entry(row.attempt, &error.to_string(), causes);
            if row.attempt >= row.max_attempts {
                tracing::error!(for_author = true, duration_ms, error = %format!("{error:#}"), attempts = row.attempt, "job failed for the last time; it is dead");
                Finish::Dead { error: entry }
            } else {
                let delay = backoff::retry_delay(row.attempt, retry_base);
                tracing::warn!(for_author = true, duration_ms, error = %format!("{error:#}"), retry_in = ?delay, "job failed; will retry");
                Finish::Retry {
                    delay_ms: i64::try_from(delay.as_millis()).unwrap_or(i64::MAX),
                    error: entry,
                }
            }
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
async fn rescue_loop<C: Send + Sync + 'static>(shared: Arc<Shared<C>>) {
    let lease = Duration::from_millis(u64::try_from(shared.lease_ms).unwrap_or(u64::MAX));
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
            match shared.db.probe_write().await {
                Ok(()) => answering_since = Some(Instant::now()),
                Err(e) => {
                    rescues.failed(&e);
                }
            }
            continue;
        };
        if since.elapsed() < grace {
            if let Err(e) = shared.db.probe_write().await {
                rescues.failed(&e);
                answering_since = None;
            }
            continue;
        }
        match store::rescue_expired(&shared.db, &shared.worker).await {
            Ok(n) => {
                rescues.succeeded();
                if n > 0 {
                    tracing::warn!(jobs = n, "rescued jobs whose worker stopped heartbeating");
                    shared.wake.notify_one();
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
        if !orphans.is_empty() {
            for id in &orphans {
                unused.remove(id);
            }
            tracing::warn!(
                jobs = ?orphans,
                "giving back leases this worker held without running their jobs (a claim whose answer was lost)"
            );
            give_back(&shared, orphans).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(attempt: i32, max_attempts: i32) -> ClaimedRow {
        ClaimedRow {
            id: 1,
            kind: "k".into(),
            payload: "{}".into(),
            queue: "default".into(),
            tenant: String::new(),
            attempt,
            max_attempts,
            workflow: None,
            join_id: None,
            serial_key: None,
            priority: 0,
            fair_tag: 0,
            cost: 0,
            lost_workers: 0,
        }
    }

    #[test]
    fn a_claim_keeps_at_most_one_suspect_and_none_when_one_runs() {
        let job = |id: i64, lost_workers: i32| ClaimedRow {
            id,
            lost_workers,
            ..row(1, 3)
        };
        let last = store::SUSPECT_LOST_WORKERS;
        let claimed = || vec![job(1, 0), job(2, last), job(3, last - 1), job(4, last + 1)];
        let ids = |rows: &[ClaimedRow]| rows.iter().map(|r| r.id).collect::<Vec<_>>();
        let (kept, back) = one_suspect(claimed(), true);
        assert_eq!((ids(&kept), back), (vec![1, 2, 3], vec![4]));
        let (kept, back) = one_suspect(claimed(), false);
        assert_eq!((ids(&kept), back), (vec![1, 3], vec![2, 4]));
    }

    #[test]
    fn a_job_claimed_later_that_sorts_earlier_starts_first() {
        let tagged = |id: i64, tenant: &str, fair_tag: i64| ClaimedRow {
            id,
            tenant: tenant.into(),
            fair_tag,
            ..row(1, 3)
        };
        let mut local = LocalQueue::default();
        local.extend(vec![
            tagged(10, "big", 5),
            tagged(11, "big", 6),
            tagged(12, "big", 7),
        ]);
        assert_eq!(local.pop().map(|(r, _)| r.id), Some(10));
        // Another tenant's job, tagged at the queue's front when it was enqueued.
        local.extend(vec![tagged(40, "small", 6)]);
        let order: Vec<i64> = std::iter::from_fn(|| local.pop())
            .map(|(r, _)| r.id)
            .collect();
        assert_eq!(order, vec![11, 40, 12]);
    }

    #[test]
    fn errors_retry_until_the_last_attempt_then_die() {
        let err = || Err(anyhow::anyhow!("disk on fire").context("writing chapter 3"));
        assert!(matches!(
            to_finish(err(), &row(1, 3), Duration::ZERO, backoff::BASE),
            Finish::Retry { .. }
        ));
        let Finish::Dead { error } = to_finish(err(), &row(3, 3), Duration::ZERO, backoff::BASE)
        else {
            panic!("expected dead");
        };
        assert_eq!(error["error"], "writing chapter 3");
        assert_eq!(error["causes"][0], "disk on fire");
        assert_eq!(error["attempt"], 3);
        // What readers of the history (a failed book's message) get back.
        let history = serde_json::Value::Array(vec![error]).to_string();
        assert_eq!(
            store::last_error(&history).as_deref(),
            Some("writing chapter 3")
        );
    }
}
