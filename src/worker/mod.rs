//! The worker process: `bindery worker`, alone or as the child of `bindery serve`.
//!
//! It heartbeats into the database, and (once the job engine lands) claims and runs jobs. It
//! never talks to the web process except through storage.

pub mod heartbeat;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::config::Config;
use crate::signals::StopSignals;
use crate::storage::Database;
use crate::storage::workers::{self, WorkerIdentity};
use heartbeat::Heartbeat;

/// Signals that arrive within this window of the first are the same request from two senders
/// (a platform that signals every process, and our supervisor forwarding it), not a second,
/// impatient one.
const DUPLICATE_SIGNAL_WINDOW: Duration = Duration::from_secs(1);

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
    let db = Database::connect(&config.database, pool_size(config)).await?;
    if options.supervisor.is_none() {
        // Under `serve`, the web process migrated before spawning us.
        db.migrate().await?;
    }
    let identity = WorkerIdentity {
        id: options.worker_id.clone(),
        hostname: nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "unknown".to_owned()),
        pid: std::process::id(),
        version: env!("CARGO_PKG_VERSION"),
    };
    let heartbeat = Heartbeat::start(
        &config.database,
        identity,
        heartbeat::interval_for(config.worker_stall_timeout),
    )?;
    tracing::info!(
        worker.id = %options.worker_id,
        concurrency = config.worker_concurrency.get(),
        database = db.backend(),
        "worker ready"
    );

    let signal = signals.recv().await;
    let first_signal_at = Instant::now();
    if supervisor_gone(&options) {
        tracing::warn!(%signal, "the web process is gone; stopping now");
        heartbeat.stop().await;
        return Ok(ExitCode::FAILURE);
    }
    tracing::info!(%signal, "stopping: no new work will be claimed");

    let shutdown = async {
        heartbeat.stop().await;
        if let Err(e) = workers::remove_worker(&db, &options.worker_id).await {
            tracing::warn!(error = %e, "could not remove this worker's heartbeat row");
        }
        db.close().await;
    };
    tokio::pin!(shutdown);
    let deadline = tokio::time::sleep(config.shutdown_timeout);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            () = &mut shutdown => {
                tracing::info!("worker stopped");
                return Ok(ExitCode::SUCCESS);
            }
            () = &mut deadline => {
                tracing::warn!(timeout = ?config.shutdown_timeout, "shutdown timed out; exiting now");
                return Ok(ExitCode::FAILURE);
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

fn pool_size(config: &Config) -> u32 {
    u32::try_from(config.worker_concurrency.get())
        .unwrap_or(u32::MAX)
        .saturating_add(2)
        .min(64)
}
