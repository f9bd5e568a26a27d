//! `/api/v1/admin/queues`: each queue's depth, oldest waiting job and jobs by state, and
//! pausing and resuming it.

use actix_web::{HttpResponse, get, post, web};
use serde::Serialize;
use utoipa::ToSchema;

use crate::web::AppState;
use crate::web::admin::queues::{QueueView, all, views};
use crate::web::caller::Admin;
use crate::web::error::{ApiError, ErrorBody};
use crate::web::error_responses::{CsrfFailed, Internal, NotAdmin, Unauthorized, Unavailable};

#[derive(Serialize, ToSchema)]
#[schema(as = Queues)]
struct QueueList {
    queues: Vec<QueueView>,
}

/// List queues
///
/// Every queue: registered ones, ones holding jobs, and paused ones.
#[utoipa::path(
    operation_id = "list_queues",
    tag = "admin",
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 200, description = "The queues, by name.", body = QueueList),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotAdmin),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/queues")]
pub async fn list(_admin: Admin, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(QueueList {
        queues: all(&state).await?,
    }))
}

/// Pause a queue
///
/// Stops workers claiming from the queue (within 100 ms); running jobs finish. Pausing a paused
/// queue changes nothing.
#[utoipa::path(
    operation_id = "pause_queue",
    tag = "admin",
    params(("name" = String, Path, description = "The queue's name.")),
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 200, description = "The queue, paused.", body = QueueView),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, description = "There is no such queue (`not_found`; the message lists \
            them), or the token is not an admin's.", body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[post("/queues/{name}/pause")]
pub async fn pause(
    admin: Admin,
    state: web::Data<AppState>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    set_paused(&admin, &state, &name, true).await
}

/// Resume a queue
///
/// Lets workers claim from the queue again. Resuming a running queue changes nothing.
#[utoipa::path(
    operation_id = "resume_queue",
    tag = "admin",
    params(("name" = String, Path, description = "The queue's name.")),
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 200, description = "The queue, running.", body = QueueView),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, description = "There is no such queue (`not_found`; the message lists \
            them), or the token is not an admin's.", body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[post("/queues/{name}/resume")]
pub async fn resume(
    admin: Admin,
    state: web::Data<AppState>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    set_paused(&admin, &state, &name, false).await
}

async fn set_paused(
    admin: &Admin,
    state: &AppState,
    name: &str,
    paused: bool,
) -> Result<HttpResponse, ApiError> {
    // A typo must not pause a queue nobody uses while the real one keeps running.
    let known = views(&state.queue.stats().await?);
    if !known.iter().any(|q| q.name == name) {
        let names: Vec<&str> = known.iter().map(|q| q.name.as_str()).collect();
        return Err(ApiError::not_found(
            "queue",
            format!(
                "There is no queue named {name:?}; the queues are: {}.",
                names.join(", ")
            ),
        ));
    }
    if paused {
        state.queue.pause(name).await?;
        tracing::info!(queue = name, admin = %admin.0.name, "queue paused by an admin");
    } else {
        state.queue.resume(name).await?;
        tracing::info!(queue = name, admin = %admin.0.name, "queue resumed by an admin");
    }
    let stats = state.queue.stats().await?;
    let view = views(&stats).into_iter().find(|q| q.name == name);
    Ok(HttpResponse::Ok().json(view))
}
