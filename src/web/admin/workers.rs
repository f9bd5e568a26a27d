//! The worker processes' heartbeats, as the database has them: what `/api/v1/admin/workers`
//! answers and the admin pages show.

use serde::Serialize;
use utoipa::ToSchema;

use crate::storage::rfc3339;
use crate::storage::workers;
use crate::web::AppState;
use crate::web::error::ApiError;

#[derive(Serialize, ToSchema)]
pub(crate) struct Workers {
    /// `WORKER_STALL_TIMEOUT`: a heartbeat older than this means a dead or stuck worker.
    #[schema(value_type = u64)]
    pub(crate) stall_timeout_ms: u128,
    pub(crate) workers: Vec<WorkerView>,
}

/// A worker process, as its heartbeat row has it.
#[derive(Serialize, ToSchema)]
#[schema(as = Worker)]
pub(crate) struct WorkerView {
    pub(crate) id: String,
    pub(crate) pid: i64,
    /// The machine it runs on.
    pub(crate) host: String,
    /// The Bindery version it runs.
    pub(crate) version: String,
    #[schema(format = DateTime)]
    pub(crate) started_at: String,
    #[schema(format = DateTime)]
    pub(crate) heartbeat_at: String,
    /// Age of the last heartbeat, by the database's clock.
    pub(crate) heartbeat_age_ms: i64,
    /// Its heartbeat is older than the stall timeout: dead or stuck, and its jobs are rescued.
    pub(crate) stale: bool,
}

/// The workers and their heartbeats, as the API lists them (and the admin pages show them).
pub(crate) async fn all(state: &AppState) -> Result<Workers, ApiError> {
    let rows = workers::list_workers(&state.db)
        .await
        .map_err(anyhow::Error::from)?;
    let stall = state.worker_stall_timeout;
    Ok(Workers {
        stall_timeout_ms: stall.as_millis(),
        workers: rows
            .into_iter()
            .map(|w| WorkerView {
                stale: w.age() > stall,
                id: w.id,
                pid: w.pid,
                host: w.hostname,
                version: w.version,
                started_at: rfc3339(w.started_at),
                heartbeat_at: rfc3339(w.heartbeat_at),
                heartbeat_age_ms: w.age_ms,
            })
            .collect(),
    })
}
