//! `/api/v1/books/{id}/logs`: a book's own log lines, for its tenant. Every line a web or
//! worker process logged about the book (its upload, each step's run, a failure and its
//! retries, a webhook's delivery) carries its id (see `logbook`), so the book's log is those
//! lines; another tenant's book is 404, like every other book route.

use actix_web::{HttpResponse, get, web};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::books::own_book;
use crate::logbook::{self, Line};
use crate::web::AppState;
use crate::web::caller::Caller;
use crate::web::error::ApiError;
use crate::web::error_responses::{BadRequest, Internal, NotFound, Unauthorized, Unavailable};

/// Lines shown when the request does not say.
pub const LINES_DEFAULT: i64 = 200;
const LINES_MAX: i64 = 1000;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogQuery {
    /// How many of the book's last lines to answer with, from 1 to 1000.
    #[param(minimum = 1, maximum = 1000, default = 200, example = 50)]
    lines: Option<i64>,
}

/// One line of a book's log. What only the operator's log has stays out: the host, process
/// id and code target, which say nothing about the book, and an error's text (`error`,
/// `causes`), which can name the server's hosts, paths and database. The book's own
/// `error.message` says what went wrong in words meant for its author; the operator reads
/// the rest with `bindery logs --book ID`.
#[derive(Debug, Serialize, ToSchema)]
pub struct BookLogLine {
    /// When it was logged: RFC 3339 in UTC, to the microsecond.
    #[schema(example = "2026-11-24T10:15:03.123456Z")]
    pub timestamp: String,
    /// `ERROR`, `WARN`, `INFO`, `DEBUG` or `TRACE`.
    #[schema(example = "INFO")]
    pub level: &'static str,
    /// The process that logged it: `web` or `worker`.
    #[schema(example = "worker")]
    pub role: String,
    #[schema(example = "book published")]
    pub message: String,
    /// The event's other fields (`error`, `duration_ms`, `title`…).
    #[schema(value_type = Object)]
    pub fields: serde_json::Map<String, serde_json::Value>,
    /// The job (conversion step) that logged it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<i64>,
    /// The `X-Request-Id` of the request that logged it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// Fields a line's event may carry that its tenant is not shown (see [`BookLogLine`]); the
/// ids are left out because the caller knows them (the book, its own tenant).
const OPERATOR_ONLY: &[&str] = &["error", "causes", "book.id", "book_id", "tenant"];

impl From<Line> for BookLogLine {
    fn from(line: Line) -> Self {
        let timestamp = line.timestamp();
        let mut fields = line.fields;
        for key in OPERATOR_ONLY {
            fields.remove(*key);
        }
        BookLogLine {
            timestamp,
            level: line.level.as_str(),
            role: line.role,
            message: line.message,
            fields,
            job: line.job_id,
            request_id: line.request_id,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct BookLog {
    /// Oldest first.
    lines: Vec<BookLogLine>,
}

/// The last `n` lines of book `id`, which the caller has already been shown to own.
pub async fn lines(state: &AppState, id: &str, n: i64) -> Result<Vec<BookLogLine>, ApiError> {
    let lines = logbook::store::of_book(&state.db, id, n)
        .await
        .map_err(|e| anyhow::Error::new(e).context("reading the book's log lines"))?;
    Ok(lines.into_iter().map(BookLogLine::from).collect())
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
    query: web::Query<LogQuery>,
) -> Result<HttpResponse, ApiError> {
    let n = query.lines.unwrap_or(LINES_DEFAULT);
    if !(1..=LINES_MAX).contains(&n) {
        return Err(ApiError::bad_request(
            "invalid_parameter",
            format!("lines must be between 1 and {LINES_MAX} (got {n})."),
        )
        .field("lines"));
    }
    let book = own_book(&state, &caller.0.tenant, &id).await?;
    Ok(HttpResponse::Ok().json(BookLog {
        lines: lines(&state, &book.id, n).await?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logbook::Level;

    #[test]
    fn a_tenant_sees_the_line_without_what_only_the_operator_may_read() {
        let fields = serde_json::json!({
            "error": "connecting to db.internal:5432: refused",
            "causes": ["refused"],
            "tenant": "alice",
            "book.id": "b-1",
            "retry_in": "1s",
        });
        let line = Line {
            id: 3,
            at: 1_700_000_000_000_000,
            level: Level::Warn,
            role: "worker".into(),
            host: "worker-7.internal".into(),
            pid: 41,
            target: "bindery::jobs::runner".into(),
            message: "job failed; will retry".into(),
            fields: fields.as_object().cloned().unwrap_or_default(),
            request_id: None,
            book_id: Some("b-1".into()),
            job_id: Some(9),
            tenant: Some("alice".into()),
        };
        let shown = serde_json::to_value(BookLogLine::from(line)).expect("json");
        assert_eq!(
            shown,
            serde_json::json!({
                "timestamp": "2023-11-14T22:13:20.000000Z", "level": "WARN", "role": "worker",
                "message": "job failed; will retry", "fields": { "retry_in": "1s" }, "job": 9,
            })
        );
    }
}
