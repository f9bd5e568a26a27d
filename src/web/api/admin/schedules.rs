//! `/api/v1/admin/schedules`: the recurring jobs, as configured (`SCHEDULE_*`), with when each
//! last ran and when it runs next.

use actix_web::{HttpResponse, get, web};
use serde::Serialize;
use utoipa::ToSchema;

use crate::web::AppState;
use crate::web::admin::schedules::{ScheduleView, all};
use crate::web::caller::Admin;
use crate::web::error::ApiError;
use crate::web::error_responses::{Internal, NotAdmin, Unauthorized, Unavailable};

#[derive(Serialize, ToSchema)]
#[schema(as = Schedules)]
struct ScheduleList {
    schedules: Vec<ScheduleView>,
}

/// List schedules
///
/// Every schedule, including those switched off (`enabled: false`).
#[utoipa::path(
    operation_id = "list_schedules",
    tag = "admin",
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 200, description = "The schedules.", body = ScheduleList),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotAdmin),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/schedules")]
pub async fn list(_admin: Admin, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(ScheduleList {
        schedules: all(&state).await?,
    }))
}
