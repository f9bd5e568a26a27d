//! `bindery serve` and `bindery web`: the web process, and for `serve` the worker child it
//! watches.
//!
//! The promises (ARCHITECTURE.md, "The process model"):
//! - the worker child exits for any reason → log why, stop serving, exit non-zero; the platform
//!   restarts both. No restart loop of our own.
//! - the worker stops heartbeating for `WORKER_STALL_TIMEOUT` → it is stuck: kill it, same as above.
//! - SIGTERM/SIGINT → forward to the child, drain requests, both exit 0 within
//!   `SHUTDOWN_TIMEOUT`; a second signal means exit now.
//! - the web process dies → the child gets its parent-death signal (see `worker`).
//!
//! The only thing passed to the child is its command line; everything after that goes through
//! the database.

use std::process::{ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sys::signal::{self, Signal};
use nix::unistd::Pid;
use tokio::process::Child;
use tokio::task::JoinHandle;

use crate::config::{Config, DatabaseUrl};
use crate::jobs::heartbeat;
use crate::keepalive;
use crate::signals::StopSignals;
use crate::storage::{BlobStore, Database};
use crate::storage::{budget, installation, workers};
use crate::web::{AppHandle, AppState, Application};

/// After the worker dies, in-flight requests get this long before the web exits too; the
/// platform expects the pair back within seconds.
const CRASH_DRAIN: Duration = Duration::from_secs(2);

/// `bindery serve` (`with_worker`) or `bindery web`.
pub async fn run(config: &Config, with_worker: bool) -> anyhow::Result<ExitCode> {
    let mut signals = StopSignals::install()?;
    let pool = match config.database {
        DatabaseUrl::Postgres { .. } => budget::web_pool(
            config.database_max_connections,
            if with_worker {
                budget::Process::ServeWeb
            } else {
                budget::Process::Web
            },
        )?,
        DatabaseUrl::Sqlite { .. } => 8,
    };
    let db = Database::connect(&config.database, pool).await?;
    let blobs = BlobStore::open(&config.blob, &config.azure)?;
    // Migrates, and refuses a database and a blob store of two different installations.
    installation::at_start(&db, &blobs, true).await?;
    crate::tokens::first_admin_at_start(&db, config).await;
    let logbook = crate::logbook::Writer::start(db.clone());
    let app = Application::build(
        config,
        AppState {
            db: db.clone(),
            blobs,
            queue: crate::jobs::JobQueue::new(db.clone()),
            limits: config.limits,
            writes: config
                .rate_limit_writes
                .map(|rate| std::sync::Arc::new(crate::web::api::limits::WriteLimiter::new(rate))),
            worker_stall_timeout: config.worker_stall_timeout,
            ready_needs_worker: with_worker,
            config: std::sync::Arc::new(config.clone()),
            book_watch: crate::web::book_watch::BookWatch::new(
                db.clone(),
                tokio::runtime::Handle::current(),
            ),
            streams: crate::web::streams::Streams::new(
                db.clone(),
                tokio::runtime::Handle::current(),
                config.max_streams_per_token,
            ),
            sign_on: crate::accounts::single_sign_on::Provider::from_config(config)?
                .map(std::sync::Arc::new),
            mailer: crate::accounts::mail::Mailer::from_config(config)?.map(std::sync::Arc::new),
        },
    )?;
    tracing::info!(
        addr = %app.addr(),
        database = db.backend(),
        "listening"
    );
    let server_handle = app.handle();
    let mut server = tokio::spawn(app.run_until_stopped());

    // Spawned here, in the main future, on purpose: Linux sends the parent-death signal when the
    // *thread* that forked the child exits, and this is the one thread that lives as long as
    // the process.
    let mut worker = if with_worker {
        Some(WorkerChild::spawn()?)
    } else {
        None
    };
    let keepalive = keepalive::spawn(config.keepalive_url.clone(), config.keepalive_interval);

    let watched = worker.as_ref().map(|w| (w.id.clone(), w.pid));
    let stop = tokio::select! {
        signal = signals.recv() => Stop::Signal(signal),
        status = wait_child(worker.as_mut()) => Stop::WorkerExited(status),
        reason = watch_heartbeat(&db, watched.as_ref().map(|(id, pid)| (id.as_str(), *pid)), config.worker_stall_timeout, config.job_lease) => {
            Stop::WorkerStalled(reason)
        }
        ended = &mut server => Stop::ServerEnded(ended.map_err(anyhow::Error::from).and_then(|r| r.map_err(anyhow::Error::from))),
    };
    if let Some(task) = keepalive {
        task.abort();
    }

    let code = match stop {
        Stop::Signal(signal) => {
            graceful_stop(
                config,
                signal,
                &mut signals,
                &server_handle,
                &mut server,
                worker.as_mut(),
            )
            .await
        }
        Stop::WorkerExited(status) => {
            let pid = worker.as_ref().map_or(0, |w| w.pid);
            log_worker_exit(pid, &status);
            drain(&server_handle, &mut server, CRASH_DRAIN).await;
            ExitCode::FAILURE
        }
        Stop::WorkerStalled(reason) => {
            if let Some(child) = worker.as_mut() {
                tracing::error!(
                    worker.pid = child.pid,
                    timeout = %humantime::format_duration(config.worker_stall_timeout),
                    "worker is stuck ({reason}); killing it and exiting so the platform restarts both"
                );
                child.kill_now().await;
            }
            drain(&server_handle, &mut server, CRASH_DRAIN).await;
            ExitCode::FAILURE
        }
        Stop::ServerEnded(result) => {
            match result {
                Ok(()) => tracing::error!("the HTTP server stopped on its own; exiting"),
                Err(e) => {
                    tracing::error!(error = %format!("{e:#}"), "the HTTP server failed; exiting")
                }
            }
            if let Some(child) = worker.as_mut() {
                child.signal(Signal::SIGTERM);
                if tokio::time::timeout(CRASH_DRAIN, child.child.wait())
                    .await
                    .is_err()
                {
                    child.kill_now().await;
                }
            }
            ExitCode::FAILURE
        }
    };
    if let Some(logbook) = logbook {
        logbook.finish().await;
    }
    db.close().await;
    Ok(code)
}

enum Stop {
    Signal(Signal),
    WorkerExited(std::io::Result<ExitStatus>),
    WorkerStalled(String),
    ServerEnded(anyhow::Result<()>),
}

/// The `bindery worker` child process.
struct WorkerChild {
    child: Child,
    pid: i32,
    id: String,
}

impl WorkerChild {
    fn spawn() -> anyhow::Result<Self> {
        let id = uuid::Uuid::new_v4().to_string();
        let child = crate::executable::command()
            .context("finding this executable to start the worker")?
            .arg("worker")
            .arg("--supervised-by")
            .arg(std::process::id().to_string())
            .arg("--worker-id")
            .arg(&id)
            // stdout and stderr are inherited: one stream for the platform. stdin is not ours
            // to share. A process group of its own keeps a terminal's Ctrl-C from reaching the
            // child directly; we forward it, once.
            .stdin(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .context("starting the worker process")?;
        let pid = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .context("the worker process has no pid")?;
        tracing::info!(worker.pid = pid, worker.id = %id, "worker process started");
        Ok(Self { child, pid, id })
    }

    fn signal(&self, sig: Signal) {
        if let Err(e) = signal::kill(Pid::from_raw(self.pid), sig) {
            tracing::warn!(worker.pid = self.pid, %sig, error = %e, "could not signal the worker");
        }
    }

    async fn kill_now(&mut self) {
        self.signal(Signal::SIGKILL);
        let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
    }
}

async fn wait_child(worker: Option<&mut WorkerChild>) -> std::io::Result<ExitStatus> {
    match worker {
        Some(w) => w.child.wait().await,
        None => std::future::pending().await,
    }
}

/// Resolves when the worker's heartbeat is older than `stall_timeout` (or it never wrote one
/// within that time). Reads the database only: storage is the one channel.
///
/// The stall is judged only over time the database took writes: through an outage (a server
/// that went away, a SQLite file locked by someone else) the worker cannot beat either, and the
/// first read after it would otherwise find every heartbeat stale and restart a worker that is
/// about to beat again. So each look first writes (`/readyz`'s probe), and a heartbeat counts
/// as stale once the database has taken writes for a whole `stall_timeout` and the worker has
/// still not written one.
///
/// Except when the writer the database waits for is the worker itself: a worker stopped or
/// hung in the middle of a SQLite write holds the lock, and would otherwise never be judged.
async fn watch_heartbeat(
    db: &Database,
    worker: Option<(&str, i32)>,
    stall_timeout: Duration,
    lease: Duration,
) -> String {
    let Some((worker_id, worker_pid)) = worker else {
        return std::future::pending().await;
    };
    let worker_pid = u32::try_from(worker_pid).unwrap_or(0);
    let mut answering_since = Instant::now();
    let look = heartbeat::interval_for(stall_timeout, lease);
    let mut tick = tokio::time::interval(look);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut unreadable = false;
    loop {
        tick.tick().await;
        let read = async {
            if !db.write_locked_by(worker_pid) {
                // A look takes at most a tick: a probe that began just before the worker was
                // stopped holding the lock would wait out SQLite's busy timeout (10 s) and then
                // count as an outage, putting off the judgment of the worker it waited for.
                match tokio::time::timeout(look, db.probe_write()).await {
                    Ok(probed) => probed?,
                    Err(_) if db.write_locked_by(worker_pid) => {}
                    Err(_) => anyhow::bail!("the database took no write within {look:?}"),
                }
            }
            anyhow::Ok(workers::fetch_worker(db, worker_id).await?)
        }
        .await;
        if read.is_ok() && std::mem::take(&mut unreadable) {
            tracing::info!(
                "the database takes writes again; judging the worker's heartbeat from now"
            );
            answering_since = Instant::now();
        }
        let judged_over = answering_since.elapsed();
        match read {
            Ok(Some(beat)) if beat.age() > stall_timeout && judged_over > stall_timeout => {
                return format!("last heartbeat {} ms ago", beat.age_ms);
            }
            Ok(Some(_)) => {}
            Ok(None) if judged_over > stall_timeout => {
                return format!(
                    "no heartbeat in the {} ms the database has answered since it started",
                    judged_over.as_millis()
                );
            }
            Ok(None) => {}
            Err(e) => {
                if !std::mem::replace(&mut unreadable, true) {
                    tracing::warn!(error = %format!("{e:#}"), "the database does not take writes; the worker's heartbeat is not judged until it does again");
                }
            }
        }
    }
}

fn log_worker_exit(pid: i32, status: &std::io::Result<ExitStatus>) {
    use std::os::unix::process::ExitStatusExt;
    let message =
        "worker process exited; the web process is stopping so the platform restarts both";
    match status {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => tracing::error!(worker.pid = pid, exit_code = code, "{message}"),
            (None, Some(sig)) => {
                let name =
                    Signal::try_from(sig).map_or_else(|_| sig.to_string(), |s| s.to_string());
                tracing::error!(worker.pid = pid, signal = %name, "{message}");
            }
            (None, None) => tracing::error!(worker.pid = pid, %status, "{message}"),
        },
        Err(e) => {
            tracing::error!(worker.pid = pid, error = %e, "lost track of the worker process; stopping")
        }
    }
}

/// Stops accepting connections and gives in-flight requests up to `limit`.
async fn drain(handle: &AppHandle, server: &mut JoinHandle<std::io::Result<()>>, limit: Duration) {
    let stop = handle.stop(true);
    if tokio::time::timeout(limit, async {
        stop.await;
        let _ = server.await;
    })
    .await
    .is_err()
    {
        tracing::warn!("in-flight requests did not finish in {limit:?}; dropping them");
    }
}

/// SIGTERM/SIGINT: forward, drain, wait for the child; a second signal or the deadline forces.
async fn graceful_stop(
    config: &Config,
    signal: Signal,
    signals: &mut StopSignals,
    handle: &AppHandle,
    server: &mut JoinHandle<std::io::Result<()>>,
    mut worker: Option<&mut WorkerChild>,
) -> ExitCode {
    tracing::info!(%signal, timeout = %humantime::format_duration(config.shutdown_timeout), "stopping gracefully");
    if let Some(child) = worker.as_deref() {
        child.signal(signal);
    }
    let web_done = async {
        handle.stop(true).await;
        let _ = server.await;
        tracing::info!("web server stopped");
    };
    let worker_done = async {
        match worker.as_deref_mut() {
            Some(child) => Some(child.child.wait().await),
            None => None,
        }
    };
    let both = async { futures_util::future::join(web_done, worker_done).await.1 };
    let outcome = tokio::select! {
        status = both => Ok(status),
        () = tokio::time::sleep(config.shutdown_timeout) => Err("shutdown timed out"),
        again = signals.recv() => {
            tracing::warn!(signal = %again, "second stop signal; exiting now");
            Err("second signal")
        }
    };
    match outcome {
        Ok(None) => ExitCode::SUCCESS,
        Ok(Some(Ok(status))) if status.success() => ExitCode::SUCCESS,
        Ok(Some(status)) => {
            let pid = worker.as_deref().map_or(0, |w| w.pid);
            log_worker_exit(pid, &status);
            ExitCode::FAILURE
        }
        Err(reason) => {
            if let Some(child) = worker {
                tracing::warn!(worker.pid = child.pid, "{reason}: killing the worker");
                child.kill_now().await;
            }
            ExitCode::FAILURE
        }
    }
}
