//! Burial: what a job type does when one of its jobs dies ([`Job::on_dead`], such as marking
//! a book failed) happens also for a job that died with its worker.
//!
//! A job whose run returns an error on its last attempt gets its `on_dead` from the worker that
//! ran it. A job whose worker died or froze on its last attempt, or in `MAX_LOST_WORKERS` of
//! them, is made dead by another worker's rescue, which has only SQL in hand. So the rescue
//! enqueues a burial in the same transaction: a job of its own, on the dead job's queue, that
//! reads the dead job and runs its type's `on_dead`. As a job it is durable: a worker killed
//! while it runs leaves it to be rescued and run again, as any job, so no dead step leaves its
//! book "processing" for ever.
//!
//! [`Job::on_dead`]: super::Job::on_dead

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::context::JobContext;
use super::records;
use super::state::JobState;
use super::{NewJob, Outcome};

/// The burial job's type name.
pub(crate) const KIND: &str = "bindery.bury";

type DeadFuture = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;

/// A job type's `on_dead`, called with its payload, a context for the dead job and its error.
pub(crate) type DeadFn<C> =
    Arc<dyn Fn(&str, JobContext<C>, anyhow::Error) -> DeadFuture + Send + Sync>;

/// Every registered type's `on_dead`, by type name.
pub(crate) type DeadFns<C> = Arc<BTreeMap<&'static str, DeadFn<C>>>;

#[derive(Debug, Serialize, Deserialize)]
struct Burial {
    job: i64,
}

/// The burial of dead job `id`: on its queue (so the workers that run its type take it), of
/// its tenant and workflow.
pub(crate) fn of(id: i64, queue: &str, tenant: &str, workflow: Option<&str>) -> NewJob {
    NewJob {
        kind: KIND.to_owned(),
        payload: serde_json::json!(Burial { job: id }).to_string(),
        queue: queue.to_owned(),
        priority: 0,
        max_attempts: 10,
        delay_ms: 0,
        unique_key: None,
        serial_key: None,
        tenant: tenant.to_owned(),
        workflow: workflow.map(str::to_owned),
        cost: 0,
    }
}

/// Runs a burial: reads the dead job and calls its type's `on_dead` with its last error.
pub(crate) async fn run<C: Send + Sync + 'static>(
    dead_fns: DeadFns<C>,
    payload: String,
    cx: JobContext<C>,
) -> anyhow::Result<Outcome> {
    let Ok(Burial { job }) = serde_json::from_str(&payload) else {
        return Ok(Outcome::Discard(format!(
            "a burial's payload names no job: {payload}"
        )));
    };
    let Some(dead) = records::fetch_job(cx.db(), job)
        .await
        .with_context(|| format!("reading dead job {job}"))?
    else {
        // Pruned already: nothing is left to react to.
        return Ok(Outcome::done());
    };
    if dead.state != JobState::Dead {
        // An operator retried it meanwhile: it is not dead any more.
        return Ok(Outcome::done());
    }
    let Some(on_dead) = dead_fns.get(dead.kind.as_str()) else {
        return Ok(Outcome::Discard(format!(
            "job {job} is of type `{}`, which this worker does not register",
            dead.kind
        )));
    };
    let error = anyhow::anyhow!(
        dead.last_error()
            .unwrap_or_else(|| "its worker was lost".to_owned())
    );
    // Not `job.id`: this line runs in the burial's own job span, which has that.
    tracing::warn!(
        buried.id = job,
        buried.kind = %dead.kind,
        error = %error,
        "burying a job that died with its worker"
    );
    let dead_cx = cx.for_job(
        dead.id,
        dead.attempt,
        dead.max_attempts,
        dead.tenant,
        dead.workflow,
    );
    on_dead(&dead.payload, dead_cx, error).await?;
    Ok(Outcome::done())
}
