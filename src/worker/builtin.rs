//! Jobs every worker can run that are not part of the book pipeline: maintenance, and two
//! diagnostics (`noop`, `sleep`) that operators and benchmarks use to exercise a deployment.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::jobs::{Job, JobContext, Outcome};
use crate::services::Services;

/// Does nothing: measures the queue itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Noop {}

impl Job for Noop {
    const NAME: &'static str = "bindery.noop";
    type Context = Services;

    async fn run(self, _cx: &JobContext<Services>) -> anyhow::Result<Outcome> {
        Ok(Outcome::done())
    }
}

/// Sleeps, reporting progress: a long job for smoke tests of leases, crashes and shutdown.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sleep {
    pub millis: u64,
}

impl Job for Sleep {
    const NAME: &'static str = "bindery.sleep";
    type Context = Services;

    async fn run(self, cx: &JobContext<Services>) -> anyhow::Result<Outcome> {
        let total = Duration::from_millis(self.millis);
        let step = Duration::from_millis(100).min(total.max(Duration::from_millis(1)));
        let started = std::time::Instant::now();
        while started.elapsed() < total {
            tokio::time::sleep(step.min(total.saturating_sub(started.elapsed()))).await;
            let done = started.elapsed().as_millis() * 100 / total.as_millis().max(1);
            cx.progress(i32::try_from(done.min(99)).unwrap_or(99), "sleeping")
                .await?;
        }
        Ok(Outcome::done_with(serde_json::json!({
            "slept_ms": self.millis,
            "attempt": cx.attempt,
            "worker_pid": std::process::id(),
        })))
    }
}

/// Deletes finished jobs older than `JOB_RETENTION` (scheduled).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PruneJobs {}

impl Job for PruneJobs {
    const NAME: &'static str = "bindery.prune_jobs";
    const QUEUE: &'static str = "maintenance";
    type Context = Services;

    async fn run(self, cx: &JobContext<Services>) -> anyhow::Result<Outcome> {
        let retention = cx.app().config.job_retention;
        let pruned = cx.app().queue.prune(retention).await?;
        tracing::info!(pruned, retention = %humantime::format_duration(retention), "pruned finished jobs");
        Ok(Outcome::done_with(serde_json::json!({ "pruned": pruned })))
    }
}

/// Deletes the database's log lines older than `LOG_RETENTION` and beyond `LOG_MAX_LINES`
/// (scheduled).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PruneLogs {}

impl Job for PruneLogs {
    const NAME: &'static str = "bindery.prune_logs";
    const QUEUE: &'static str = "maintenance";
    type Context = Services;

    async fn run(self, cx: &JobContext<Services>) -> anyhow::Result<Outcome> {
        let config = &cx.app().config;
        let pruned =
            crate::logbook::store::prune(&cx.app().db, config.log_retention, config.log_max_lines)
                .await?;
        tracing::info!(
            pruned,
            retention = %humantime::format_duration(config.log_retention),
            max_lines = config.log_max_lines,
            "pruned log lines"
        );
        Ok(Outcome::done_with(serde_json::json!({ "pruned": pruned })))
    }
}
