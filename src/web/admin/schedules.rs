//! The recurring jobs, as configured (`SCHEDULE_*`), with when each last ran and when it runs
//! next: what `/api/v1/admin/schedules` answers and the admin pages show.

use chrono::Utc;
use serde::Serialize;
use utoipa::ToSchema;

use crate::config::Config;
use crate::config::cron::parse_cron;
use crate::storage::rfc3339;
use crate::web::AppState;
use crate::web::error::ApiError;

/// A schedule as the configuration has it, switched on or off.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ScheduleConfig)]
pub(crate) struct Configured {
    pub(crate) name: String,
    /// The environment variable that sets it.
    pub(crate) variable: &'static str,
    pub(crate) enabled: bool,
    /// Its cron expression (UTC), unless switched off.
    pub(crate) cron: Option<String>,
    /// Its cron expression when the variable is unset (`off` for one off by default).
    pub(crate) default_cron: &'static str,
    /// The variable sets something other than the default (a cron expression, or `off`).
    pub(crate) overridden: bool,
    /// The type of the job it enqueues, unless switched off.
    pub(crate) kind: Option<String>,
    /// That job's queue, unless switched off.
    pub(crate) queue: Option<String>,
}

/// Every schedule the worker knows (`worker::SCHEDULES`), including those switched off.
fn configured(config: &Config) -> Vec<Configured> {
    crate::worker::SCHEDULES
        .iter()
        .map(|schedule| {
            let variable = &schedule.variable.variable;
            let cron = schedule.cron(config);
            let job = cron.as_ref().map(|_| (schedule.job)());
            let overridden = match &cron {
                Some(cron) => cron != variable.default,
                None => !variable.default.eq_ignore_ascii_case("off"),
            };
            Configured {
                name: schedule.name.to_owned(),
                variable: variable.name,
                enabled: cron.is_some(),
                cron,
                default_cron: variable.default,
                overridden,
                kind: job.as_ref().map(|j| j.kind.clone()),
                queue: job.map(|j| j.queue),
            }
        })
        .collect()
}

/// A recurring job: its configuration, when it runs next and how its last run went.
#[derive(Serialize, ToSchema)]
#[schema(as = Schedule)]
pub(crate) struct ScheduleView {
    #[serde(flatten)]
    pub(crate) configured: Configured,
    /// The next firing, if it is switched on.
    #[schema(format = DateTime)]
    pub(crate) next_run: Option<String>,
    /// The newest job it enqueued that is still kept (finished jobs are pruned after
    /// `JOB_RETENTION`).
    pub(crate) last_run: Option<LastRun>,
}

/// The job a schedule enqueued last.
#[derive(Serialize, ToSchema)]
#[schema(as = ScheduleRun)]
pub(crate) struct LastRun {
    pub(crate) job_id: i64,
    /// The job's state.
    #[schema(
        pattern = "^(available|scheduled|waiting|running|completed|discarded|dead|cancelled)$"
    )]
    pub(crate) state: String,
    /// The slot it was enqueued for.
    #[schema(format = DateTime)]
    pub(crate) slot: Option<String>,
    #[schema(format = DateTime)]
    pub(crate) enqueued_at: String,
    #[schema(format = DateTime)]
    pub(crate) started_at: Option<String>,
    #[schema(format = DateTime)]
    pub(crate) finished_at: Option<String>,
    /// The job in full.
    pub(crate) url: String,
}

/// Every schedule with its last and next run, as the API lists them (and the admin pages
/// show them).
pub(crate) async fn all(state: &AppState) -> Result<Vec<ScheduleView>, ApiError> {
    let now = Utc::now();
    let mut views = Vec::new();
    for configured in configured(&state.config) {
        let next_run = configured
            .cron
            .as_deref()
            .and_then(|c| parse_cron(c).ok())
            .and_then(|cron| cron.find_next_occurrence(&now, false).ok())
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
        let last_run = state
            .queue
            .last_scheduled(&configured.name)
            .await?
            .map(|job| LastRun {
                slot: job
                    .unique_key
                    .as_deref()
                    .and_then(|k| k.rsplit(':').next())
                    .and_then(|s| s.parse::<i64>().ok())
                    .map(|s| rfc3339(s.saturating_mul(1000))),
                job_id: job.id,
                state: job.state.to_string(),
                enqueued_at: rfc3339(job.created_at),
                started_at: job.started_at.map(rfc3339),
                finished_at: job.finished_at.map(rfc3339),
                url: format!("/api/v1/admin/jobs/{}", job.id),
            });
        views.push(ScheduleView {
            configured,
            next_run,
            last_run,
        });
    }
    Ok(views)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Config {
        Config::from_vars(vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())))
            .expect("config")
            .config
    }

    #[test]
    fn every_schedule_variable_is_kept_by_the_settings() {
        let config = config(&[]);
        for schedule in crate::worker::SCHEDULES {
            assert!(
                schedule.variable.value(&config).is_some(),
                "{} is not a field of config::Settings",
                schedule.variable.variable.name
            );
        }
    }

    #[test]
    fn schedules_show_their_default_an_override_or_off() {
        let default = configured(&config(&[]));
        let prune = default
            .iter()
            .find(|s| s.name == "prune_jobs")
            .expect("prune_jobs");
        assert!(prune.enabled && !prune.overridden);
        assert_eq!(prune.variable, "SCHEDULE_PRUNE_JOBS");
        assert_eq!(prune.cron.as_deref(), Some(prune.default_cron));
        assert_eq!(prune.kind.as_deref(), Some("bindery.prune_jobs"));

        let changed = configured(&config(&[("SCHEDULE_PRUNE_JOBS", "*/5 * * * *")]));
        let prune = changed
            .iter()
            .find(|s| s.name == "prune_jobs")
            .expect("prune");
        assert!(prune.enabled && prune.overridden);
        assert_eq!(prune.cron.as_deref(), Some("*/5 * * * *"));

        let off = configured(&config(&[("SCHEDULE_PRUNE_JOBS", "off")]));
        let prune = off
            .iter()
            .find(|s| s.name == "prune_jobs")
            .expect("listed when off");
        assert!(!prune.enabled && prune.overridden);
        assert_eq!(prune.cron, None);
        assert_eq!(prune.kind, None);
    }
}
