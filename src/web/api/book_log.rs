//! `/api/v1/books/{id}/logs`: a book's own log lines, for its tenant (`books::log` says which
//! lines it may see); another tenant's book is 404, like every other book route.

use actix_web::{HttpResponse, get, web};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::books::log::{self, BookLogLine, LINES_DEFAULT};
use crate::web::AppState;
use crate::web::book_view::own_book;
use crate::web::caller::Caller;
use crate::web::error::ApiError;
use crate::web::error_responses::{BadRequest, Internal, NotFound, Unauthorized, Unavailable};
use crate::web::query::Query;

const LINES_MAX: i64 = 1000;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogQuery {
    /// How many of the book's last lines to answer with, from 1 to 1000.
    #[param(minimum = 1, maximum = 1000, default = 200, example = 50)]
    lines: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct BookLog {
    /// Oldest first.
    lines: Vec<BookLogLine>,
}

/// Read a book's log
///
/// The book's last log lines, oldest first: its upload, each conversion step's run, failures
/// and retries, webhook deliveries, from every web and worker process. Lines reach the log a
/// moment (under a second) after they are logged.
#[utoipa::path(
    operation_id = "book_log",
    tag = "books",
    params(("id" = String, Path, description = "The book's id."), LogQuery),
    responses(
        (status = 200, description = "The book's log.", body = BookLog),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/books/{id}/logs")]
pub async fn show(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    query: Query<LogQuery>,
) -> Result<HttpResponse, ApiError> {
    let n = query.parsed()?.lines.unwrap_or(LINES_DEFAULT);
    if !(1..=LINES_MAX).contains(&n) {
        return Err(ApiError::bad_request(
            "invalid_parameter",
            format!("lines must be between 1 and {LINES_MAX} (got {n})."),
        )
        .field("lines"));
    }
    let book = own_book(&state, &caller.tenant(), &id).await?;
    Ok(HttpResponse::Ok().json(BookLog {
        lines: log::lines(&state.db, &book.id, n).await?,
    }))
}
