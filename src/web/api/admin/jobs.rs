//! `/api/v1/admin/jobs`: every tenant's jobs, filtered and paged; one job in full, with its
//! error history; and the engine's operations on it (retry, cancel, discard).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, post, web};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::web::AppState;
use crate::web::admin::jobs::{JobDetail, ListQuery, Page, detail, find, page};
use crate::web::caller::Admin;
use crate::web::error::{ApiError, ErrorBody};
use crate::web::error_responses::{
    BadRequest, CsrfFailed, Internal, NotAdmin, Unauthorized, Unavailable,
};
use crate::web::query::Query;

/// List jobs
///
/// Jobs of every tenant, newest first, filtered by `state`, `queue`, `tenant` and `kind`;
/// `limit` per page (default 50, at most 200), `before` = the previous page's `next`. Dead jobs
/// are `state=dead`.
#[utoipa::path(
    operation_id = "list_jobs",
    tag = "admin",
    params(ListQuery),
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 200, description = "A page of jobs.", body = Page),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotAdmin),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/jobs")]
pub async fn list(
    _admin: Admin,
    state: web::Data<AppState>,
    query: Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(page(&state, &query.parsed()?).await?))
}

/// Show a job
///
/// One job: payload, progress, result, and its whole error history.
#[utoipa::path(
    operation_id = "show_job",
    tag = "admin",
    params(("id" = i64, Path, description = "The job's id.")),
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 200, description = "The job.", body = JobDetail),
        (status = 401, response = Unauthorized),
        (status = 404, description = "There is no such job (`not_found`; finished jobs are \
            pruned after `JOB_RETENTION`), or the token is not an admin's.", body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/jobs/{id}")]
pub async fn show(
    _admin: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(detail(&state, &id).await?))
}

/// Why a job was cancelled or discarded.
#[derive(Deserialize, Default, ToSchema)]
#[schema(as = JobAction)]
pub struct ActionBody {
    /// Why, for the job's history (cancel and discard).
    reason: Option<String>,
}

/// Retry a job
///
/// Runs a dead, discarded or cancelled job again, with fresh attempts (its history stays).
#[utoipa::path(
    operation_id = "retry_job",
    tag = "admin",
    params(("id" = i64, Path, description = "The job's id.")),
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 200, description = "The job, available again.", body = JobDetail),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, description = "There is no such job (`not_found`), or the token is not \
            an admin's.", body = ErrorBody),
        (status = 409, description = "The job is not dead, discarded or cancelled \
            (`invalid_job_state`; the message says its state).", body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
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

/// Cancel a job
///
/// Cancels a job that has not finished; a running one stops within a heartbeat. The reason, if
/// given, goes into its error history.
#[utoipa::path(
    operation_id = "cancel_job",
    tag = "admin",
    params(("id" = i64, Path, description = "The job's id.")),
    request_body(content = Option<ActionBody>, content_type = "application/json",
        description = "Optional. A body that is not this JSON object is ignored.",
        example = json!({"reason": "the manuscript is being replaced"})),
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 200, description = "The job, cancelled.", body = JobDetail),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, description = "There is no such job (`not_found`), or the token is not \
            an admin's.", body = ErrorBody),
        (status = 409, description = "The job has finished (`invalid_job_state`; the message \
            says its state).", body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[post("/jobs/{id}/cancel")]
pub async fn cancel(
    admin: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: Option<web::Json<ActionBody>>,
) -> Result<HttpResponse, ApiError> {
    end(admin, &state, &id, body, Ending::Cancel).await
}

/// Discard a job
///
/// Fails a job that has not finished, without retries. The reason, if given, goes into its
/// error history.
#[utoipa::path(
    operation_id = "discard_job",
    tag = "admin",
    params(("id" = i64, Path, description = "The job's id.")),
    request_body(content = Option<ActionBody>, content_type = "application/json",
        description = "Optional. A body that is not this JSON object is ignored.",
        example = json!({"reason": "the manuscript is being replaced"})),
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 200, description = "The job, discarded.", body = JobDetail),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, description = "There is no such job (`not_found`), or the token is not \
            an admin's.", body = ErrorBody),
        (status = 409, description = "The job has finished (`invalid_job_state`; the message \
            says its state).", body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[post("/jobs/{id}/discard")]
pub async fn discard(
    admin: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: Option<web::Json<ActionBody>>,
) -> Result<HttpResponse, ApiError> {
    end(admin, &state, &id, body, Ending::Discard).await
}

/// The two ways an admin ends an unfinished job.
#[derive(Clone, Copy)]
enum Ending {
    Cancel,
    Discard,
}

async fn end(
    admin: Admin,
    state: &AppState,
    id: &str,
    body: Option<web::Json<ActionBody>>,
    how: Ending,
) -> Result<HttpResponse, ApiError> {
    let job = find(state, id).await?;
    let did = match how {
        Ending::Cancel => "cancelled",
        Ending::Discard => "discarded",
    };
    let reason = reason(&admin, body, did);
    let ended = match how {
        Ending::Cancel => state.queue.cancel(job.id, &reason).await?,
        Ending::Discard => state.queue.discard(job.id, &reason).await?,
    };
    if !ended {
        let rule = match how {
            Ending::Cancel => "only a job that has not finished can be cancelled",
            Ending::Discard => "only a job that has not finished can be discarded",
        };
        return Err(conflict(state, job.id, rule).await);
    }
    tracing::info!(job.id = job.id, job.kind = %job.kind, admin = %admin.0.name, "job {did} by an admin");
    answer(state, job.id).await
}

fn reason(admin: &Admin, body: Option<web::Json<ActionBody>>, did: &str) -> String {
    body.and_then(|b| b.into_inner().reason)
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| format!("{did} by {} (admin API)", admin.0.name))
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
        Ok(Some(job)) => job.state.as_str(),
        Ok(None) => "deleted",
        Err(e) => return ApiError::internal(&e),
    };
    ApiError::new(
        StatusCode::CONFLICT,
        "invalid_job_state",
        format!("Job {id} is {now}: {rule}."),
    )
}
