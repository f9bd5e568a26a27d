//! `/api/v1/admin/jobs`: every tenant's jobs, filtered and paged; one job in full, with its
//! error history; and the engine's operations on it (retry, cancel, discard).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, post, web};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{given, integer, rfc3339};
use crate::jobs::{JobFilter, JobRecord, JobState};
use crate::web::AppState;
use crate::web::api::{Admin, ApiError};

const PAGE_DEFAULT: i64 = 50;
const PAGE_MAX: i64 = 200;

#[derive(Deserialize)]
pub struct ListQuery {
    state: Option<String>,
    queue: Option<String>,
    tenant: Option<String>,
    kind: Option<String>,
    before: Option<String>,
    limit: Option<String>,
}

#[derive(Serialize)]
struct Page {
    jobs: Vec<JobSummary>,
    /// Pass as `before` for the next (older) page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<String>,
}

/// A job as listed: what it is, where it stands, and its latest error.
#[derive(Serialize)]
struct JobSummary {
    id: i64,
    kind: String,
    queue: String,
    tenant: String,
    state: String,
    priority: i16,
    attempt: i32,
    max_attempts: i32,
    /// When it is (or was) due.
    run_at: String,
    created_at: String,
    started_at: Option<String>,
    finished_at: Option<String>,
    progress: Option<i32>,
    progress_message: Option<String>,
    unique_key: Option<String>,
    workflow: Option<String>,
    /// The newest entry of its error history, unless it completed.
    last_error: Option<String>,
    url: String,
}

impl From<&JobRecord> for JobSummary {
    fn from(job: &JobRecord) -> Self {
        JobSummary {
            id: job.id,
            kind: job.kind.clone(),
            queue: job.queue.clone(),
            tenant: job.tenant.clone(),
            state: job.state.clone(),
            priority: job.priority,
            attempt: job.attempt,
            max_attempts: job.max_attempts,
            run_at: rfc3339(job.run_at),
            created_at: rfc3339(job.created_at),
            started_at: job.started_at.map(rfc3339),
            finished_at: job.finished_at.map(rfc3339),
            progress: job.progress,
            progress_message: job.progress_message.clone(),
            unique_key: job.unique_key.clone(),
            workflow: job.workflow.clone(),
            last_error: (job.state() != Some(JobState::Completed))
                .then(|| job.last_error())
                .flatten(),
            url: format!("/api/v1/admin/jobs/{}", job.id),
        }
    }
}

/// A job in full.
#[derive(Serialize)]
struct JobDetail {
    #[serde(flatten)]
    summary: JobSummary,
    /// As enqueued: JSON when it parses as JSON, else the stored text.
    payload: Value,
    result: Option<Value>,
    serial_key: Option<String>,
    join_id: Option<i64>,
    pending_children: i32,
    locked_by: Option<String>,
    locked_until: Option<String>,
    /// Every failure, oldest first: one per failed attempt, plus cancels and discards.
    errors: Vec<ErrorEntry>,
}

#[derive(Serialize)]
struct ErrorEntry {
    attempt: Option<i64>,
    at: Option<String>,
    message: String,
    /// The error's causes, outermost first.
    causes: Vec<String>,
}

impl From<&JobRecord> for JobDetail {
    fn from(job: &JobRecord) -> Self {
        let errors = job
            .error_history()
            .iter()
            .map(|e| ErrorEntry {
                attempt: e["attempt"].as_i64(),
                at: e["at"].as_i64().map(rfc3339),
                message: e["error"].as_str().unwrap_or_default().to_owned(),
                causes: e["causes"]
                    .as_array()
                    .map(|c| {
                        c.iter()
                            .filter_map(|c| c.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect();
        JobDetail {
            summary: JobSummary::from(job),
            payload: serde_json::from_str(&job.payload)
                .unwrap_or_else(|_| Value::String(job.payload.clone())),
            result: job
                .result
                .as_ref()
                .map(|r| serde_json::from_str(r).unwrap_or_else(|_| Value::String(r.clone()))),
            serial_key: job.serial_key.clone(),
            join_id: job.join_id,
            pending_children: job.pending_children,
            locked_by: job.locked_by.clone(),
            locked_until: job.locked_until.map(rfc3339),
            errors,
        }
    }
}

/// Jobs of every tenant, newest first, filtered by `state`, `queue`, `tenant` and `kind`;
/// `limit` per page (default 50, at most 200), `before` = the previous page's `next`. Dead jobs
/// are `state=dead`.
#[get("/jobs")]
pub async fn list(
    _admin: Admin,
    state: web::Data<AppState>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let job_state = match given(&query.state) {
        None => None,
        Some(s) => Some(JobState::parse(s).ok_or_else(|| {
            let known: Vec<&str> = JobState::ALL.iter().map(|s| s.as_str()).collect();
            ApiError::bad_request(
                "invalid_parameter",
                format!("Unknown job state {s:?}: use one of {}.", known.join(", ")),
            )
            .field("state")
        })?),
    };
    let limit = integer("limit", &query.limit, 1..=PAGE_MAX)?.unwrap_or(PAGE_DEFAULT);
    let before_id = integer("before", &query.before, 1..=i64::MAX)?;
    let filter = JobFilter {
        state: job_state,
        queue: given(&query.queue).map(str::to_owned),
        tenant: given(&query.tenant).map(str::to_owned),
        kind: given(&query.kind).map(str::to_owned),
        before_id,
        limit,
    };
    let jobs = state.queue.list(&filter).await?;
    let next = (jobs.len() as i64 == limit)
        .then(|| jobs.last().map(|j| j.id.to_string()))
        .flatten();
    Ok(HttpResponse::Ok().json(Page {
        jobs: jobs.iter().map(JobSummary::from).collect(),
        next,
    }))
}

/// One job: payload, progress, result, and its whole error history.
#[get("/jobs/{id}")]
pub async fn show(
    _admin: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let job = find(&state, &id).await?;
    Ok(HttpResponse::Ok().json(JobDetail::from(&job)))
}

#[derive(Deserialize, Default)]
pub struct ActionBody {
    /// Why, for the job's history (cancel and discard).
    reason: Option<String>,
}

/// Runs a dead, discarded or cancelled job again, with fresh attempts (its history stays).
#[post("/jobs/{id}/retry")]
pub async fn retry(
    admin: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let job = find(&state, &id).await?;
    if !state.queue.retry(job.id).await? {
        return Err(conflict(
            &state,
            job.id,
            "only a dead, discarded or cancelled job can be retried",
        )
        .await);
    }
    tracing::info!(job.id = job.id, job.kind = %job.kind, admin = %admin.0.name, "job retried by an admin");
    answer(&state, job.id).await
}

/// Cancels a job that has not finished; a running one stops within a heartbeat. Optional JSON
/// body `{"reason": "…"}`.
#[post("/jobs/{id}/cancel")]
pub async fn cancel(
    admin: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: Option<web::Json<ActionBody>>,
) -> Result<HttpResponse, ApiError> {
    let job = find(&state, &id).await?;
    let reason = reason(&admin, body, "cancelled");
    if !state.queue.cancel(job.id, &reason).await? {
        return Err(conflict(
            &state,
            job.id,
            "only a job that has not finished can be cancelled",
        )
        .await);
    }
    tracing::info!(job.id = job.id, job.kind = %job.kind, admin = %admin.0.name, "job cancelled by an admin");
    answer(&state, job.id).await
}

/// Fails a job that has not finished, without retries. Optional JSON body `{"reason": "…"}`.
#[post("/jobs/{id}/discard")]
pub async fn discard(
    admin: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: Option<web::Json<ActionBody>>,
) -> Result<HttpResponse, ApiError> {
    let job = find(&state, &id).await?;
    let reason = reason(&admin, body, "discarded");
    if !state.queue.discard(job.id, &reason).await? {
        return Err(conflict(
            &state,
            job.id,
            "only a job that has not finished can be discarded",
        )
        .await);
    }
    tracing::info!(job.id = job.id, job.kind = %job.kind, admin = %admin.0.name, "job discarded by an admin");
    answer(&state, job.id).await
}

fn reason(admin: &Admin, body: Option<web::Json<ActionBody>>, did: &str) -> String {
    body.and_then(|b| b.into_inner().reason)
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| format!("{did} by {} (admin API)", admin.0.name))
}

async fn find(state: &AppState, id: &str) -> Result<JobRecord, ApiError> {
    let missing = || ApiError::not_found("job", format!("There is no job {id}."));
    let id: i64 = id.parse().map_err(|_| missing())?;
    state.queue.job(id).await?.ok_or_else(missing)
}

async fn answer(state: &AppState, id: i64) -> Result<HttpResponse, ApiError> {
    let job =
        state.queue.job(id).await?.ok_or_else(|| {
            ApiError::not_found("job", format!("Job {id} was deleted meanwhile."))
        })?;
    Ok(HttpResponse::Ok().json(JobDetail::from(&job)))
}

/// 409 for an operation that does not apply to the job's state (read again: it may have moved
/// on since the request started).
async fn conflict(state: &AppState, id: i64, rule: &str) -> ApiError {
    let now = match state.queue.job(id).await {
        Ok(Some(job)) => job.state,
        Ok(None) => "deleted".to_owned(),
        Err(e) => return ApiError::internal(&e),
    };
    ApiError::new(
        StatusCode::CONFLICT,
        "invalid_job_state",
        format!("Job {id} is {now}: {rule}."),
    )
}
