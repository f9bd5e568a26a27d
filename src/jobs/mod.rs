//! The durable job engine: a queue in the database, shared by the web (enqueue, read status)
//! and workers (claim, run, commit).
//!
//! Guarantees (ARCHITECTURE.md, "The job engine"):
//! - **At-least-once execution, exactly-once effects.** A claim takes a lease (`locked_until`)
//!   that the worker's heartbeat thread extends while the job runs; a worker that dies loses its
//!   leases and the job is rescued and run again. Completion, its result and its successor jobs
//!   commit in one transaction, and only while the lease is still held.
//! - **Outcomes**: complete (with a small JSON result), retry (an `Err`: exponential backoff with
//!   jitter up to `max_attempts`, then *dead* with the whole error history), discard (bad input:
//!   fail now), snooze (later, without spending an attempt), cancel. Panics are caught.
//! - **Order and fairness**: priorities, `run_at`, serialization keys (never two at once, in
//!   enqueue order, enforced by the claim itself), round-robin between tenants.
//! - **Workflows**: successors and fan-out/fan-in joins commit with their parent's completion;
//!   a join runs once, after every child has finished, and can read how each one ended.
//!
//! A job type is declared once: a serde struct, an `impl Job`, and one `register` line.

mod admission;
mod backoff;
mod breaker;
mod burial;
mod claim;
mod completer;
mod context;
mod enqueue;
mod executor;
mod failpoint;
pub mod heartbeat;
mod maintenance;
#[cfg(test)]
mod plans;
mod producer;
mod queue;
mod records;
mod registry;
mod rescuer;
mod runner;
pub mod schedule;
mod shared;
mod state;
mod wake;
mod workflow;

use std::time::Duration;

use serde::{Serialize, de::DeserializeOwned};

pub use context::JobContext;
pub use maintenance::VACUUM_EVERY;
pub use queue::{JobQueue, QueueStats, WaitTarget};
pub use records::{
    ChildOutcome, JobFilter, JobRecord, KindStats, QueueRow, StepCount, WorkflowState,
};
pub use registry::Registry;
pub use rescuer::MAX_LOST_WORKERS;
pub use runner::{Runner, RunnerConfig, RunnerHandle, ShutdownReport};
pub use state::JobState;

/// Queue used when a job type does not name one.
pub const DEFAULT_QUEUE: &str = "default";

/// A kind of background work. Implement it on a serde struct (the payload) and register the
/// type once in the worker's [`Registry`].
pub trait Job: Serialize + DeserializeOwned + Send + 'static {
    /// Stable name stored in the database. Renaming it orphans queued jobs.
    const NAME: &'static str;
    const QUEUE: &'static str = DEFAULT_QUEUE;
    /// Lower runs first.
    const PRIORITY: i16 = 0;
    const MAX_ATTEMPTS: i32 = 10;
    /// What every run gets: database, blob store, configuration...
    type Context: Send + Sync + 'static;

    /// Does the work. `Err` means "try again later"; return [`Outcome::Discard`] for input that
    /// will never work.
    fn run(
        self,
        cx: &JobContext<Self::Context>,
    ) -> impl std::future::Future<Output = anyhow::Result<Outcome>> + Send;

    /// The book this job works on, if it works on one. Its run's log lines then carry it as
    /// `book.id`, so that the book's own log (`GET /api/v1/books/{id}/logs`) shows them,
    /// including the engine's lines about the run (a failure, a retry).
    fn book(&self) -> Option<&str> {
        None
    }

    /// Called with a fresh copy of the payload when `run` returned an error on the last
    /// attempt, just before the job is committed as dead: for an effect a person must see
    /// (a book marked failed). Its own error is logged, and the job dies all the same. For a
    /// job that died with its worker (on its last attempt, or in `MAX_LOST_WORKERS` of them),
    /// a burial job calls it soon after, on any worker, with the rescue's error (see
    /// `burial`).
    fn on_dead(
        self,
        cx: &JobContext<Self::Context>,
        error: &anyhow::Error,
    ) -> impl std::future::Future<Output = anyhow::Result<()>> + Send {
        let _ = (cx, error);
        async { Ok(()) }
    }
}

/// How a run ended, other than by an error (which means retry).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Done, with an optional small JSON result that the web can read.
    Complete(Option<serde_json::Value>),
    /// The input cannot work: fail now, without retrying, with a message for a person.
    Discard(String),
    /// Not now: run again after this long without spending an attempt.
    Snooze(Duration),
    /// Stop this job for good; not a failure.
    Cancel(String),
}

impl Outcome {
    pub fn done() -> Self {
        Outcome::Complete(None)
    }

    pub fn done_with(result: impl Serialize) -> Self {
        Outcome::Complete(serde_json::to_value(result).ok())
    }
}

/// A job ready to be enqueued: what to run, and how.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub kind: String,
    pub payload: String,
    pub queue: String,
    pub priority: i16,
    pub max_attempts: i32,
    /// Not before this many milliseconds from now (by the database's clock).
    pub delay_ms: i64,
    /// A second enqueue with the same key returns the first job instead.
    pub unique_key: Option<String>,
    /// Jobs sharing a key never run at the same time, and start in enqueue order.
    pub serial_key: Option<String>,
    /// Claims are fair between tenants.
    pub tenant: String,
    /// Groups the jobs of one piece of work (a book), so its state reads in one query.
    /// Successors inherit their parent's.
    pub workflow: Option<String>,
    /// Expected memory, in bytes, for admission within a worker's budget; 0 for jobs too
    /// small to count (see `admission`).
    pub cost: i64,
}

impl NewJob {
    /// A job of type `J` with `J`'s queue, priority and attempts.
    pub fn of<J: Job>(job: &J) -> Self {
        Self {
            kind: J::NAME.to_owned(),
            // A derive(Serialize) struct always serialises; the fallback keeps this infallible.
            payload: serde_json::to_string(job).unwrap_or_else(|_| "null".to_owned()),
            queue: J::QUEUE.to_owned(),
            priority: J::PRIORITY,
            max_attempts: J::MAX_ATTEMPTS,
            delay_ms: 0,
            unique_key: None,
            serial_key: None,
            tenant: String::new(),
            workflow: None,
            cost: 0,
        }
    }

    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay_ms = i64::try_from(delay.as_millis()).unwrap_or(i64::MAX);
        self
    }

    pub fn unique_key(mut self, key: impl Into<String>) -> Self {
        self.unique_key = Some(key.into());
        self
    }

    pub fn serial_key(mut self, key: impl Into<String>) -> Self {
        self.serial_key = Some(key.into());
        self
    }

    pub fn tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
    }

    pub fn workflow(mut self, workflow: impl Into<String>) -> Self {
        self.workflow = Some(workflow.into());
        self
    }

    pub fn priority(mut self, priority: i16) -> Self {
        self.priority = priority;
        self
    }

    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = queue.into();
        self
    }

    pub fn max_attempts(mut self, attempts: i32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Expected memory, in bytes: the job waits until its worker's budget has room for it.
    pub fn cost(mut self, bytes: u64) -> Self {
        self.cost = i64::try_from(bytes).unwrap_or(i64::MAX);
        self
    }
}

/// What `enqueue` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Enqueued {
    pub id: i64,
    /// False when a job with the same unique key already existed and is returned instead.
    pub inserted: bool,
}
