//! The worker process: `bindery worker`, alone or as the child of `bindery serve`.
//!
//! It runs the job engine's [`Runner`] over the one registry of job types, and the schedules
//! that enqueue recurring jobs. It never talks to the web process except through storage.

pub mod builtin;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::config::{Config, DatabaseUrl};
use crate::jobs::schedule::{self, Schedule};
use crate::jobs::{JobQueue, NewJob, Registry, Runner, RunnerConfig};
use crate::services::Services;
use crate::signals::StopSignals;
use crate::storage::{BlobStore, Database, budget, installation};

/// Signals that arrive within this window of the first are the same request from two senders
/// (a platform that signals every process, and our supervisor forwarding it), not a second,
/// impatient one.
const DUPLICATE_SIGNAL_WINDOW: Duration = Duration::from_secs(1);

/// Every job type Bindery runs: the one list.
pub fn registry() -> Registry<Services> {
    let registry = Registry::new()
        .register::<builtin::Noop>()
        .register::<builtin::Sleep>()
        .register::<builtin::PruneJobs>()
        .register::<builtin::PruneLogs>()
        .register::<crate::webhooks::Deliver>()
        .register::<crate::books::RefreshCatalog>()
        .register::<crate::catalog::RefreshAll>();
    crate::pipeline::register(registry)
}

/// A recurring job: the variable that sets its cron expression (and declares its default and
/// documentation), and the job each firing enqueues.
pub struct Recurring {
    /// Also the prefix of the unique key of each firing's job, so it must not change.
    pub name: &'static str,
    pub variable: &'static crate::config::Var<Option<String>>,
    pub job: fn() -> NewJob,
}

impl Recurring {
    /// Its cron expression as configured; `None` when switched off.
    pub fn cron(&self, config: &Config) -> Option<String> {
        self.variable.value(config).cloned().flatten()
    }
}

/// Every recurring job, switched on or off: the one list, which the admin API shows too.
pub const SCHEDULES: &[Recurring] = &[
    Recurring {
        name: "prune_jobs",
        variable: &crate::config::variables::SCHEDULE_PRUNE_JOBS,
        job: || NewJob::of(&builtin::PruneJobs {}),
    },
    Recurring {
        name: "prune_logs",
        variable: &crate::config::variables::SCHEDULE_PRUNE_LOGS,
        job: || NewJob::of(&builtin::PruneLogs {}),
    },
    Recurring {
        name: "catalog_refresh",
        variable: &crate::config::variables::SCHEDULE_CATALOG_REFRESH,
        job: || NewJob::of(&crate::catalog::RefreshAll {}),
    },
    Recurring {
        name: "sweep_blobs",
        variable: &crate::config::variables::SCHEDULE_SWEEP_BLOBS,
        job: || NewJob::of(&crate::pipeline::SweepBlobs::default()),
    },
];

/// The recurring jobs that are switched on, with any `SCHEDULE_*` overrides applied.
pub fn schedules(config: &Config) -> Vec<Schedule> {
    SCHEDULES
        .iter()
        .filter_map(|s| {
            Some(Schedule {
                name: s.name,
                cron: s.cron(config)?,
                job: (s.job)(),
            })
        })
        .collect()
}

/// How the worker was started.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The `bindery serve` process that spawned us, if any.
    pub supervisor: Option<Pid>,
    /// The id the supervisor will look for in the heartbeat table.
    pub worker_id: String,
}

/// Ties this process's life to its supervisor's. Call before anything else in the child, from
/// the main thread: the parent-death signal covers the parent dying from now on, and the
/// parent-pid check covers it having died before we got here.
pub fn bind_to_supervisor(supervisor: Pid) -> Result<(), String> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGTERM)
        .map_err(|e| format!("could not set the parent-death signal: {e}"))?;
    let parent = nix::unistd::getppid();
    if parent != supervisor {
        return Err(format!(
            "the web process {supervisor} that started this worker is gone (parent is now {parent})"
        ));
    }
    Ok(())
}

fn supervisor_gone(options: &WorkerOptions) -> bool {
    options
        .supervisor
        .is_some_and(|pid| nix::unistd::getppid() != pid)
}

pub async fn run(config: &Config, options: WorkerOptions) -> anyhow::Result<ExitCode> {
    let mut signals = StopSignals::install()?;
    let process = if options.supervisor.is_some() {
        budget::Process::ServeWorker
    } else {
        budget::Process::Worker
    };
    let (pool, share, concurrency) = connection_plan(config, process)?;
    let db = Database::connect(&config.database, pool).await?;
    let blobs = BlobStore::open(&config.blob, &config.azure)?;
    // Under `serve`, the web process migrated before spawning us; the installation check is
    // cheap once it has passed there, and a worker of its own checks it as the web does.
    installation::at_start(&db, &blobs, options.supervisor.is_none()).await?;
    let logbook = crate::logbook::Writer::start(db.clone());
    let queue = JobQueue::new(db.clone());
    let context = Services {
        db: db.clone(),
        blobs,
        queue: queue.clone(),
        config: Arc::new(config.clone()),
        models: crate::services::ModelCache::default(),
    };
    crate::webhooks::Sender::shared(config.webhook_allow_private)?;
    let runner_config = RunnerConfig {
        worker_id: options.worker_id.clone(),
        concurrency,
        lease: config.job_lease,
        stall_timeout: config.worker_stall_timeout,
        poll_interval: Duration::from_secs(1),
        retry_base: Duration::from_secs(1),
        database_url: config.database.clone(),
        failpoint: config.failpoint.clone(),
        engine_connections: share.map(|s| s.engine),
        pump_connections: share.map(|s| s.pump),
        memory_budget: Some(config.worker_memory_budget),
        vacuum_every: crate::jobs::VACUUM_EVERY,
    };
    let runner = Runner::new(db.clone(), registry(), context, runner_config)
        .start()
        .await?;
    let schedules = schedule::start(queue, schedules(config)).await?;
    tracing::info!(
        worker.id = %options.worker_id,
        concurrency,
        database = db.backend(),
        "worker ready"
    );
    if config.print_edition {
        let config = config.clone();
        tokio::task::spawn_blocking(move || crate::print::announce_operator_fonts(&config));
    }

    // The parent-death signal is the primary guard; this check catches whatever slips past it
    // (a supervisor thread that exited, a signal lost in a race).
    let orphan_check = async {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if supervisor_gone(&options) {
                return;
            }
        }
    };
    let signal = tokio::select! {
        signal = signals.recv() => Some(signal),
        () = orphan_check => None,
    };
    let first_signal_at = Instant::now();
    schedules.shutdown().await;
    if supervisor_gone(&options) {
        match signal {
            Some(signal) => {
                tracing::warn!(%signal, "the web process is gone; giving work back and stopping now")
            }
            None => tracing::warn!("the web process is gone; giving work back and stopping now"),
        }
        runner.shutdown(Duration::ZERO).await;
        finish(logbook).await;
        return Ok(ExitCode::FAILURE);
    }
    let signal = signal.unwrap_or(Signal::SIGTERM);
    tracing::info!(%signal, "stopping: no new work will be claimed");

    // Leave the supervisor time to see us exit inside its own SHUTDOWN_TIMEOUT.
    let grace = config
        .shutdown_timeout
        .saturating_sub(Duration::from_secs(2))
        .max(Duration::from_millis(500));
    let shutdown = runner.shutdown(grace);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            report = &mut shutdown => {
                tracing::info!(drained = report.drained, released = report.released, "worker stopped");
                finish(logbook).await;
                db.close().await;
                return Ok(ExitCode::SUCCESS);
            }
            again = signals.recv() => {
                if first_signal_at.elapsed() < DUPLICATE_SIGNAL_WINDOW {
                    continue;
                }
                tracing::warn!(signal = %again, "second stop signal; exiting now");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
}

/// The jobs' pool size, the worker's share of connections (PostgreSQL), and how many executors
/// to run. On PostgreSQL they come from `DATABASE_MAX_CONNECTIONS` (see `storage::budget`), and a
/// concurrency the budget cannot serve is lowered, with a warning, rather than left to queue
/// for connections.
fn connection_plan(
    config: &Config,
    process: budget::Process,
) -> anyhow::Result<(u32, Option<budget::WorkerShare>, usize)> {
    let wanted = config.worker_concurrency.get();
    if !matches!(config.database, DatabaseUrl::Postgres { .. }) {
        let pool = u32::try_from(wanted)
            .unwrap_or(u32::MAX)
            .saturating_add(4)
            .min(64);
        return Ok((pool, None, wanted));
    }
    let share = budget::worker_pools(config.database_max_connections, process)?;
    let most = usize::try_from(share.max_executors()).unwrap_or(usize::MAX);
    if wanted > most {
        tracing::warn!(
            concurrency = most,
            configured = wanted,
            budget = config.database_max_connections,
            "WORKER_CONCURRENCY={wanted} is more than this worker's share of DATABASE_MAX_CONNECTIONS={} can serve; running {most} jobs at once (raise the budget to run more)",
            config.database_max_connections
        );
    }
    tracing::debug!(
        jobs = share.app,
        engine = share.engine,
        pump = share.pump,
        "PostgreSQL connections"
    );
    Ok((share.app, Some(share), wanted.min(most)))
}

/// Stores the log lines this process still holds.
async fn finish(logbook: Option<crate::logbook::Writer>) {
    if let Some(logbook) = logbook {
        logbook.finish().await;
    }
}
