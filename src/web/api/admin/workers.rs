//! `/api/v1/admin/workers`: the worker processes' heartbeats, as the database has them.

use actix_web::{HttpResponse, get, web};

use crate::web::AppState;
use crate::web::admin::workers::{Workers, all};
use crate::web::caller::Admin;
use crate::web::error::ApiError;
use crate::web::error_responses::{Internal, NotAdmin, Unauthorized, Unavailable};

/// List workers
///
/// Every worker that has registered, freshest heartbeat first. A worker that stopped cleanly
/// removed its row; one that died stays, marked stale.
#[utoipa::path(
    operation_id = "list_workers",
    tag = "admin",
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 200, description = "The workers.", body = Workers),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotAdmin),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/workers")]
pub async fn list(_admin: Admin, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(all(&state).await?))
}
