//! Each queue's depth, oldest waiting job and jobs by state: what `/api/v1/admin/queues`
//! answers and the admin pages show.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde::Serialize;
use utoipa::ToSchema;

use crate::jobs::{JobState, QueueStats};
use crate::web::AppState;
use crate::web::error::ApiError;

/// The states a queue's counts cover: everything unfinished, and dead jobs waiting for a
/// person. Finished jobs are not counted (that would read the whole history every time).
const COUNTED: [JobState; 5] = [
    JobState::Available,
    JobState::Scheduled,
    JobState::Waiting,
    JobState::Running,
    JobState::Dead,
];

/// Queues the worker's job types use, so that an empty queue is listed (and can be paused).
static REGISTERED: LazyLock<Vec<String>> = LazyLock::new(|| crate::worker::registry().queues());

/// A queue: how much waits in it, and whether workers take from it.
#[derive(Serialize, ToSchema)]
#[schema(as = Queue)]
pub(crate) struct QueueView {
    pub(crate) name: String,
    /// Workers claim nothing from a paused queue.
    pub(crate) paused: bool,
    /// Jobs due and waiting for a worker.
    pub(crate) depth: i64,
    /// How long the oldest of those has waited.
    pub(crate) oldest_available_age_ms: Option<i64>,
    /// Jobs by state: `available`, `scheduled`, `waiting`, `running` and `dead`, each always
    /// present (finished jobs are not counted).
    #[schema(value_type = BTreeMap<String, i64>)]
    pub(crate) counts: BTreeMap<&'static str, i64>,
}

pub(crate) fn views(stats: &QueueStats) -> Vec<QueueView> {
    let names: BTreeSet<&str> = REGISTERED
        .iter()
        .map(String::as_str)
        .chain(stats.rows.iter().map(|r| r.queue.as_str()))
        .chain(stats.paused.iter().map(String::as_str))
        .collect();
    names
        .into_iter()
        .map(|name| {
            let rows = || stats.rows.iter().filter(move |r| r.queue == name);
            let counts = COUNTED
                .iter()
                .map(|&state| {
                    let count = rows().filter(|r| r.state == state).map(|r| r.count).sum();
                    (state.as_str(), count)
                })
                .collect::<BTreeMap<_, _>>();
            QueueView {
                name: name.to_owned(),
                paused: stats.paused.iter().any(|p| p == name),
                depth: counts
                    .get(JobState::Available.as_str())
                    .copied()
                    .unwrap_or(0),
                oldest_available_age_ms: rows().filter_map(|r| r.oldest_due_ms).max(),
                counts,
            }
        })
        .collect()
}

/// Every queue, as the API lists them (and the admin pages show them).
pub(crate) async fn all(state: &AppState) -> Result<Vec<QueueView>, ApiError> {
    Ok(views(&state.queue.stats().await?))
}
