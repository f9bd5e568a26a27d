//! Recurring jobs. `tokio-cron-scheduler` runs in every worker and *enqueues* each due job with
//! a unique key for its slot (`schedule:NAME:UNIX_SECONDS`), so however many workers run the
//! same schedule, each slot becomes exactly one job, run once by whichever worker claims it.

use std::sync::{Arc, Mutex};

use anyhow::Context;
use chrono::Utc;
use croner::Cron;
use tokio_cron_scheduler::{Job as CronJob, JobScheduler};

use super::NewJob;
use super::queue::JobQueue;
use crate::config::cron::parse_cron;
use crate::storage::backoff::Backoff;

/// A recurring job: its name, its cron expression, and the job to enqueue each slot.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub name: &'static str,
    pub cron: String,
    pub job: NewJob,
}

/// The slot a firing belongs to: the latest scheduled time not after now (plus a little, since
/// the scheduler may fire a hair early). Every worker computes the same slot for one firing.
pub fn slot_of(cron: &Cron, now: chrono::DateTime<Utc>) -> Option<i64> {
    let probe = now + chrono::Duration::milliseconds(500);
    cron.find_previous_occurrence(&probe, true)
        .ok()
        .map(|t| t.timestamp())
}

/// The unique key that makes one slot one job.
pub fn slot_key(name: &str, slot: i64) -> String {
    format!("schedule:{name}:{slot}")
}

/// Running schedules; `shutdown` stops them.
pub struct Schedules {
    scheduler: Option<JobScheduler>,
}

impl Schedules {
    pub async fn shutdown(mut self) {
        if let Some(mut scheduler) = self.scheduler.take()
            && let Err(e) = scheduler.shutdown().await
        {
            tracing::warn!(error = %e, "stopping the schedules failed");
        }
    }
}

/// Starts the scheduler with these schedules (none: nothing is started).
pub async fn start(queue: JobQueue, schedules: Vec<Schedule>) -> anyhow::Result<Schedules> {
    if schedules.is_empty() {
        return Ok(Schedules { scheduler: None });
    }
    let scheduler = JobScheduler::new()
        .await
        .context("creating the scheduler")?;
    for schedule in schedules {
        let cron = parse_cron(&schedule.cron)
            .map_err(|e| anyhow::anyhow!("schedule {}: {e}", schedule.name))?;
        // tokio-cron-scheduler wants six fields.
        let six_fields = if schedule.cron.split_whitespace().count() == 5 {
            format!("0 {}", schedule.cron)
        } else {
            schedule.cron.clone()
        };
        let queue = queue.clone();
        let name = schedule.name;
        let template = schedule.job.clone();
        // The cron expression paces the tries; this says so once per run of failures, not
        // at every firing (a firing every second is allowed).
        let failures = Arc::new(Mutex::new(Backoff::new("enqueueing a scheduled job")));
        let job = CronJob::new_async(six_fields.as_str(), move |_id, _scheduler| {
            let queue = queue.clone();
            let template = template.clone();
            let cron = cron.clone();
            let failures = failures.clone();
            Box::pin(async move {
                let Some(slot) = slot_of(&cron, Utc::now()) else {
                    return;
                };
                let job = template.unique_key(slot_key(name, slot));
                let enqueued = queue.enqueue(job).await;
                let mut failures = failures.lock().unwrap_or_else(|e| e.into_inner());
                match enqueued {
                    Ok(e) if e.inserted => {
                        failures.succeeded();
                        tracing::info!(
                            schedule = name,
                            slot,
                            job.id = e.id,
                            "scheduled job enqueued"
                        );
                    }
                    Ok(_) => {
                        failures.succeeded();
                        tracing::debug!(
                            schedule = name,
                            slot,
                            "slot already enqueued by another worker"
                        );
                    }
                    Err(e) => {
                        let _span =
                            tracing::info_span!("schedule", schedule = name, slot).entered();
                        failures.failed(&e);
                    }
                }
            })
        })
        .map_err(|e| anyhow::anyhow!("schedule {name}: {e}"))?;
        scheduler
            .add(job)
            .await
            .map_err(|e| anyhow::anyhow!("adding schedule {name}: {e}"))?;
        tracing::info!(schedule = name, cron = %schedule.cron, "schedule on");
    }
    scheduler.start().await.context("starting the scheduler")?;
    Ok(Schedules {
        scheduler: Some(scheduler),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn every_worker_computes_the_same_slot_for_one_firing() {
        let cron = parse_cron("0 */15 * * * *").expect("cron");
        let fired = Utc
            .with_ymd_and_hms(2026, 11, 21, 10, 15, 0)
            .single()
            .expect("time");
        let early = fired - chrono::Duration::milliseconds(200);
        let late = fired + chrono::Duration::milliseconds(900);
        let expected = fired.timestamp();
        assert_eq!(slot_of(&cron, early), Some(expected));
        assert_eq!(slot_of(&cron, fired), Some(expected));
        assert_eq!(slot_of(&cron, late), Some(expected));
        assert_eq!(
            slot_key("prune", expected),
            format!("schedule:prune:{expected}")
        );
    }
}
