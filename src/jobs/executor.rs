//! Running one claimed job: on a task of its own, within a permit of the worker's
//! concurrency, in a span naming the job; a panic is caught and becomes a failure. What it ends
//! with goes to the pump, to commit.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tracing::Instrument;

use super::Outcome;
use super::claim::ClaimedRow;
use super::completer::{Finish, Finished, to_finish};
use super::context::JobContext;
use super::failpoint;
use super::shared::{RunningJob, Shared};
use super::workflow::Successors;
use crate::config::Moment;
use crate::storage::fault;

/// Starts `row`'s run, which waited `waited` in the local queue, on the executor `permit`
/// stands for; it sends how it ended to `finished`.
pub(crate) fn spawn_job<C: Send + Sync + 'static>(
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
    let attempt = row.attempt;
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
            let finish = to_finish(outcome, row.attempt, row.max_attempts, started.elapsed(), task_shared.retry_base);
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
            attempt,
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
