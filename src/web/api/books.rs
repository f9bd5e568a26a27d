//! `/api/v1/books`: upload, list, read, download, delete and retry a tenant's books.

use std::time::Duration;

use actix_multipart::Multipart;
use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, delete, get, post, web};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::upload::{self, Upload, UploadForm};
use crate::books::{
    self, BookId, BookRow, BookStatus, BookView, Described, NewBook, Refused, RetryError,
    RevisionId, Submitted, Tenant, keys,
};
use crate::jobs::WaitTarget;
use crate::paperback::Edition;
use crate::pipeline::steps;
use crate::web::book_events;
use crate::web::book_view::{own_book, view};
use crate::web::caller::Caller;
use crate::web::downloads::{self, Download, EditionQuery};
use crate::web::error::{ApiError, ErrorBody};
use crate::web::error_responses::{
    BadRequest, CsrfFailed, Internal, NotFound, RateLimited, Unauthorized, Unavailable,
};
use crate::web::query::Query;
use crate::web::{AppState, Stopping};

const PAGE_DEFAULT: i64 = 50;
const PAGE_MAX: i64 = 200;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CreateQuery {
    /// Hold the request up to this many seconds (at most `MAX_WAIT`, 25 by default, under the
    /// 30 s routers allow) until the book is ready or failed, and answer 200; at the timeout
    /// answer 202 with the status URL.
    #[param(value_type = Option<f64>, minimum = 0, example = 30)]
    pub(super) wait: Option<String>,
}

/// The header `idempotency_key` reads (its OpenAPI description).
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)] // never built
pub(super) struct IdempotencyHeader {
    /// Any 1 to 255 visible ASCII characters (a UUID is ideal). A retried request with the
    /// same key answers with the same book and creates no other.
    #[param(
        rename = "Idempotency-Key",
        required = false,
        min_length = 1,
        max_length = 255,
        example = "upload-7f3a"
    )]
    key: String,
}

/// Upload a manuscript
///
/// A `multipart/form-data` upload, streamed to storage: past `MAX_MANUSCRIPT_SIZE` it answers
/// 413 at once, before the rest of the body is read. The book is converted in the background;
/// follow it at `Location` (or `/events`), or hold the request with `?wait=`.
#[utoipa::path(
    operation_id = "upload_book",
    tag = "books",
    params(
        CreateQuery,
        IdempotencyHeader
    ),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "The book is ready or failed (with `?wait=`), or the \
            `Idempotency-Key` names a finished book.", body = BookView, headers(
            ("Location" = String, description = "The book's status URL."),
            ("Idempotent-Replayed" = String, description = "`true` when the `Idempotency-Key` \
                was seen before and no book was created.")
        )),
        (status = 202, description = "Accepted: the book is being converted.", body = BookView,
            headers(
            ("Location" = String, description = "The book's status URL."),
            ("Idempotent-Replayed" = String, description = "`true` when the `Idempotency-Key` \
                was seen before and no book was created.")
        )),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 408, description = "The body sent nothing for `BODY_IDLE_TIMEOUT` \
            (`body_stalled`); nothing of the upload was kept.", body = ErrorBody),
        (status = 413, description = "The manuscript, cover or a field is over its limit, or \
            `Content-Length` is over what any upload may be (`too_large`, \
            `field_too_large`).", body = ErrorBody),
        (status = 422, description = "A metadata value is invalid (`invalid_metadata`, \
            `field` names it).", body = ErrorBody),
        (status = 429, response = RateLimited),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
        (status = 507, description = "The server is out of storage space \
            (`insufficient_storage`); nothing of the upload was kept.", body = ErrorBody),
    )
)]
#[post("/books")]
pub async fn create(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Caller,
    query: Query<CreateQuery>,
    body: web::Payload,
    stopping: web::Data<Stopping>,
) -> Result<HttpResponse, ApiError> {
    let stopping = stopping.get_ref().clone();
    let tenant = caller.tenant();
    let wait = parse_wait(query.parsed()?.wait.as_deref(), state.config.max_wait)?;
    let idempotency_key = idempotency_key(&req)?;
    if let Some(key) = &idempotency_key
        && let Some(book) = books::by_idempotency_key(&state.db, &tenant, key).await?
    {
        return respond(&state, book, wait, true, stopping).await;
    }
    // A replay creates nothing, so only new uploads spend the budget.
    check_write(&state, &tenant)?;
    let id = BookId::new();
    let upload = receive(
        &req,
        &state,
        body,
        &RevisionId::first(&id),
        stopping.clone(),
    )
    .await?;
    let id = start(&state, id, tenant.clone(), upload, idempotency_key).await?;
    let book = own_book(&state, &tenant, &id).await?;
    respond(&state, book, wait, false, stopping).await
}

/// Streams the upload of `revision` into storage. A body that says up front it is too big is
/// refused before a byte of it is read, and one that does not say (sent in chunks) is held to
/// the same limit as it streams; a server told to stop does not wait for a slow upload to
/// finish: it refuses it (503) and removes what was written, so that nothing half-written
/// outlives the process.
pub(super) async fn receive(
    req: &HttpRequest,
    state: &AppState,
    body: web::Payload,
    revision: &RevisionId,
    mut stopping: Stopping,
) -> Result<Upload, ApiError> {
    let limits = upload::FileLimits {
        manuscript: state.limits.max_manuscript_bytes,
        cover: state.config.max_cover_size,
    };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(declared) = declared.filter(|len| *len > limits.body()) {
        return Err(upload::too_large_body(Some(declared), &limits));
    }
    let (body, passed) = upload::CountedBody::new(body, limits.body());
    let form = Multipart::new(req.headers(), body);
    let read = tokio::select! {
        read = upload::read(form, &state.blobs, revision, &limits) => Some(read),
        () = stopping.wait() => None,
    };
    match read {
        Some(Ok(form)) => Ok(form),
        Some(Err(e)) => {
            discard_uploads(state, revision).await;
            if passed.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(upload::too_large_body(None, &limits));
            }
            Err(e)
        }
        None => {
            discard_uploads(state, revision).await;
            tracing::info!(book.id = %revision.book, revision = revision.number, "upload refused: the server is stopping");
            Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "The server is stopping; nothing of the upload was kept. Send it again shortly.",
            )
            .retry_after(STOPPING_RETRY_AFTER))
        }
    }
}

/// Checks what the form said and starts the book whose upload is stored under `id`; its
/// uploads are removed if it is refused, or if the same upload was retried concurrently and
/// the other request won (whose book it answers with).
async fn start(
    state: &AppState,
    id: BookId,
    tenant: Tenant,
    upload: Upload,
    idempotency_key: Option<String>,
) -> Result<BookId, ApiError> {
    let Upload {
        file_name,
        cover_name,
        metadata,
        format,
        callback_url,
    } = upload;
    let styles = crate::house_styles::names(&state.db, &tenant).await?;
    let described = Described {
        id: id.clone(),
        tenant,
        styles,
        file_name,
        cover_name,
        metadata,
        format,
        callback_url,
        idempotency_key,
    };
    let first = RevisionId::first(&id);
    let book = match NewBook::parse(described, state.config.webhook_allow_private) {
        Ok(book) => book,
        Err(refused) => {
            discard_uploads(state, &first).await;
            return Err(refusal(refused));
        }
    };
    match books::submit(&state.db, &state.queue, &book, steps::first_step(&first)).await {
        Ok(Submitted::Created(id)) => Ok(id),
        Ok(Submitted::Existing(existing)) => {
            discard_uploads(state, &first).await;
            Ok(existing)
        }
        Err(e) => {
            discard_uploads(state, &first).await;
            Err(e.into())
        }
    }
}

/// `Retry-After` of an upload refused because the server is stopping: about as long as a
/// platform takes to start it again.
const STOPPING_RETRY_AFTER: u64 = 5;

/// Answers with the book: at once, or after waiting (up to `wait`) for it to finish.
async fn respond(
    state: &AppState,
    mut book: BookRow,
    wait: Option<Duration>,
    replayed: bool,
    mut stopping: Stopping,
) -> Result<HttpResponse, ApiError> {
    if let Some(wait) = wait
        && book.status == BookStatus::Processing
    {
        hold(state, book.current().workflow(), wait, &mut stopping).await?;
        book = books::get(&state.db, &book.id)
            .await?
            .ok_or_else(|| ApiError::not_found("book", "The book was deleted while waiting."))?;
    }
    let view = view(state, &book, true).await?;
    let processing = view.status == BookStatus::Processing;
    Ok(held_answer(processing, &view.links.self_, replayed, &view))
}

/// Holds a `?wait=` request until `workflow` finishes or `wait` has passed. A stopping server
/// stops holding at once: it answers what it would answer at the end of the wait (202 with
/// `Location`), instead of holding the request until the shutdown timeout.
pub(super) async fn hold(
    state: &AppState,
    workflow: String,
    wait: Duration,
    stopping: &mut Stopping,
) -> Result<(), ApiError> {
    let target = WaitTarget::Workflow(workflow.clone());
    tokio::select! {
        waited = state.queue.wait_for(&target, wait) => {
            waited?;
        }
        () = stopping.wait() => {
            tracing::info!(workflow, "stopped waiting: the server is stopping");
        }
    }
    Ok(())
}

/// The answer to an upload (of a book or a revision), held or not: 202 while it is
/// `processing`, else 200, with its status URL in `Location`, and `Idempotent-Replayed` when
/// an `Idempotency-Key` named one made before.
pub(super) fn held_answer(
    processing: bool,
    location: &str,
    replayed: bool,
    body: &impl Serialize,
) -> HttpResponse {
    let status = if processing {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    let mut response = HttpResponse::build(status);
    response.insert_header((header::LOCATION, location));
    if replayed {
        response.insert_header(("Idempotent-Replayed", "true"));
    }
    response.json(body)
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Books per page.
    #[param(minimum = 1, maximum = 200, default = 50, example = 20)]
    limit: Option<i64>,
    /// The `next` of the previous page: books older than this one.
    before: Option<String>,
}

/// One page of a tenant's books, newest first.
#[derive(Serialize, ToSchema)]
struct Page {
    books: Vec<BookView>,
    /// Pass as `before` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<String>,
}

/// List books
///
/// The tenant's books, newest first, a page at a time.
#[utoipa::path(
    operation_id = "list_books",
    tag = "books",
    params(ListQuery),
    responses(
        (status = 200, description = "A page of books (without progress or report).", body = Page),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/books")]
pub async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    query: Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let query = query.parsed()?;
    let limit = query.limit.unwrap_or(PAGE_DEFAULT);
    if !(1..=PAGE_MAX).contains(&limit) {
        return Err(ApiError::bad_request(
            "invalid_parameter",
            format!("limit must be between 1 and {PAGE_MAX}"),
        )
        .field("limit"));
    }
    let before = crate::web::query::before(query.before.as_deref(), "a book id", BookId::parse)?;
    let rows = books::list(&state.db, &caller.tenant(), before.as_ref(), limit).await?;
    let next = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|b| b.id.to_string()))
        .flatten();
    let mut views = Vec::with_capacity(rows.len());
    for row in &rows {
        views.push(view(&state, row, false).await?);
    }
    Ok(HttpResponse::Ok().json(Page { books: views, next }))
}

/// Show a book
///
/// Its status, per-step progress, report (warnings, statistics) and links.
#[utoipa::path(
    operation_id = "show_book",
    tag = "books",
    params(("id" = String, Path, description = "The book's id.")),
    responses(
        (status = 200, description = "The book.", body = BookView),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/books/{id}")]
pub async fn show(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let book = own_book(&state, &caller.tenant(), &id).await?;
    Ok(HttpResponse::Ok().json(view(&state, &book, true).await?))
}

/// Follow a book's progress
///
/// Server-Sent Events: a `progress` event whenever the book's state changes, read from
/// storage (so any web process can serve any book), then one `done` event when it is ready or
/// failed, and the stream ends.
#[utoipa::path(
    operation_id = "follow_book",
    tag = "books",
    params(("id" = String, Path, description = "The book's id.")),
    responses(
        (status = 200, description = "An event stream. Each `progress` and `done` event's `data` \
            is the book as `GET /api/v1/books/{id}` shows it; `deleted` (`data: {}`) if the book \
            is deleted meanwhile. A comment line every 15 s keeps the connection open. If the \
            token is revoked (or the session ends) meanwhile, an `ended` event says so within a \
            few seconds and the stream ends.",
            body = String, content_type = "text/event-stream"),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 429, description = "The token already holds `MAX_STREAMS_PER_TOKEN` open \
            streams on this server (`too_many_streams`).", body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/books/{id}/events")]
pub async fn events(
    state: web::Data<AppState>,
    stopping: web::Data<Stopping>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let book = own_book(&state, &caller.tenant(), &id).await?;
    let held = state.streams.open(&caller.1)?;
    // Followed before the first read: a change after that read wakes the stream.
    let follow = state.book_watch.follow(&book.id).await;
    let stream = book_events::stream(
        state.into_inner(),
        stopping.get_ref().clone(),
        held,
        follow,
        book.id,
    );
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(stream))
}

/// Download the EPUB
#[utoipa::path(
    operation_id = "download_epub",
    tag = "books",
    params(("id" = String, Path, description = "The book's id.")),
    responses(
        (status = 200, description = "The EPUB 3 file, as an attachment.",
            body = inline(EpubFile), content_type = "application/epub+zip", headers(
            ("Content-Disposition" = String, description = "`attachment; filename=\"….epub\"`")
        )),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 409, description = "The book is not ready yet, or failed (`not_ready`).",
            body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/books/{id}/epub")]
pub async fn epub(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let book = own_book(&state, &caller.tenant(), &id).await?;
    file_of(&state, &book, &Download::EPUB, None).await
}

/// Download the print edition
///
/// The paperback's interior as a press-ready PDF, at the trim the book asked for (`trim`, 6x9
/// in unless it said otherwise). The print edition is an extra: a book whose PDF could not be
/// made is still ready, and its report's `print.failure` says why.
#[utoipa::path(
    operation_id = "download_pdf",
    tag = "books",
    params(
        ("id" = String, Path, description = "The book's id."),
        ("edition" = Option<String>, Query, description = "`paperback`, `hardcover` or \
            `large_print`: that edition's interior; without it, the book's own (the reference \
            edition, whose pages the EPUB's page list follows)."),
    ),
    responses(
        (status = 200, description = "The interior PDF, as an attachment.",
            body = inline(PdfFile), content_type = "application/pdf", headers(
            ("Content-Disposition" = String, description = "`attachment; filename=\"….pdf\"`")
        )),
        (status = 401, response = Unauthorized),
        (status = 404, description = "No such book, or it has no print edition \
            (`no_print_edition`, with the reason).", body = ErrorBody),
        (status = 409, description = "The book is not ready yet, or failed (`not_ready`).",
            body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/books/{id}/pdf")]
pub async fn pdf(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    query: Query<EditionQuery>,
) -> Result<HttpResponse, ApiError> {
    let book = own_book(&state, &caller.tenant(), &id).await?;
    let edition = query.parsed()?.edition;
    file_of(&state, &book, &Download::PDF, edition).await
}

/// Download the print cover
///
/// One PDF sheet holding the back cover, the spine and the front, with 0.125 in of bleed all
/// round, sized for the interior's page count and paper.
#[utoipa::path(
    operation_id = "download_print_cover",
    tag = "books",
    params(
        ("id" = String, Path, description = "The book's id."),
        ("edition" = Option<String>, Query, description = "`paperback`, `hardcover` or \
            `large_print`: that edition's cover; without it, the book's own (the reference \
            edition)."),
    ),
    responses(
        (status = 200, description = "The cover PDF, as an attachment.",
            body = inline(PdfFile), content_type = "application/pdf", headers(
            ("Content-Disposition" = String,
                description = "`attachment; filename=\"…-print-cover.pdf\"`")
        )),
        (status = 401, response = Unauthorized),
        (status = 404, description = "No such book, or it has no print edition \
            (`no_print_edition`, with the reason).", body = ErrorBody),
        (status = 409, description = "The book is not ready yet, or failed (`not_ready`).",
            body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/books/{id}/print-cover.pdf")]
pub async fn print_cover(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    query: Query<EditionQuery>,
) -> Result<HttpResponse, ApiError> {
    let book = own_book(&state, &caller.tenant(), &id).await?;
    let edition = query.parsed()?.edition;
    file_of(&state, &book, &Download::PRINT_COVER, edition).await
}

/// Download the store cover
///
/// The cover as ebook stores ask for it: a 1600×2560 RGB JPEG (a generated cover drawn at that
/// size; an uploaded one as prepared, re-encoded as JPEG when it was a PNG).
#[utoipa::path(
    operation_id = "download_store_cover",
    tag = "books",
    params(("id" = String, Path, description = "The book's id.")),
    responses(
        (status = 200, description = "The cover JPEG, as an attachment.",
            body = inline(JpegFile), content_type = "image/jpeg", headers(
            ("Content-Disposition" = String, description = "`attachment; filename=\"…-cover.jpg\"`")
        )),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 409, description = "The book is not ready yet, or failed (`not_ready`).",
            body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/books/{id}/store-cover.jpg")]
pub async fn store_cover(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let book = own_book(&state, &caller.tenant(), &id).await?;
    file_of(&state, &book, &Download::STORE_COVER, None).await
}

/// The caller's `file` of `book`, or why there is none ([`downloads`]).
async fn file_of(
    state: &AppState,
    book: &BookRow,
    file: &Download,
    edition: Option<Edition>,
) -> Result<HttpResponse, ApiError> {
    let bytes = downloads::fetch(state, book, file, edition).await?;
    Ok(downloads::attachment(book, file, edition, bytes))
}

/// Delete a book
///
/// The book and all its files.
#[utoipa::path(
    operation_id = "delete_book",
    tag = "books",
    params(("id" = String, Path, description = "The book's id.")),
    responses(
        (status = 204, description = "Deleted, with its files."),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, response = NotFound),
        (status = 429, response = RateLimited),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[delete("/books/{id}")]
pub async fn delete(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let tenant = caller.tenant();
    check_write(&state, &tenant)?;
    let book = own_book(&state, &tenant, &id).await?;
    books::delete(&state.db, &state.queue, &book, REMOVAL_WAIT).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// How long a deletion waits for the book's files to be gone before it answers: moments, with
/// a worker free; past it (every worker busy, the blob store refusing) it answers all the same,
/// and the job it enqueued removes them later.
const REMOVAL_WAIT: Duration = Duration::from_secs(5);

/// Retry a failed book
///
/// Runs again the steps that ran out of attempts, and the book goes on from where it stopped.
#[utoipa::path(
    operation_id = "retry_book",
    tag = "books",
    params(("id" = String, Path, description = "The book's id.")),
    responses(
        (status = 202, description = "The failed steps run again.", body = BookView),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, response = NotFound),
        (status = 409, description = "Nothing to retry: the book did not fail \
            (`nothing_to_retry`), its manuscript was refused (`input_refused`), Bindery \
            damaged it (`book_damaged`, a bug to report), or its other steps are still \
            stopping (`still_stopping`, a few seconds).",
            body = ErrorBody),
        (status = 429, response = RateLimited),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[post("/books/{id}/retry")]
pub async fn retry(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let tenant = caller.tenant();
    check_write(&state, &tenant)?;
    let book = own_book(&state, &tenant, &id).await?;
    books::retry(&state.db, &state.queue, &book).await?;
    let book = own_book(&state, &tenant, &id).await?;
    Ok(HttpResponse::Accepted().json(view(&state, &book, true).await?))
}

impl From<RetryError> for ApiError {
    fn from(e: RetryError) -> Self {
        match e {
            RetryError::Unexpected(e) => e.into(),
            refused => ApiError::new(StatusCode::CONFLICT, refused.code(), refused.to_string()),
        }
    }
}

pub(super) fn check_write(state: &AppState, tenant: &Tenant) -> Result<(), ApiError> {
    match &state.writes {
        Some(limiter) => limiter.check(tenant),
        None => Ok(()),
    }
}

pub(super) async fn discard_uploads(state: &AppState, revision: &RevisionId) {
    // Revision 1's prefix is the book's: a new book's upload is all there is under it.
    if let Err(e) = state
        .blobs
        .delete_prefix(&keys::revision_prefix(revision))
        .await
    {
        tracing::warn!(book.id = %revision.book, revision = revision.number, error = %format!("{e:#}"), "could not remove a refused upload");
    }
}

/// `?wait=SECONDS`, capped at `MAX_WAIT` (a longer wait is a shorter one, not an error: the
/// client learns the outcome from the 202 all the same).
pub(super) fn parse_wait(wait: Option<&str>, most: Duration) -> Result<Option<Duration>, ApiError> {
    let Some(wait) = wait else { return Ok(None) };
    let seconds: f64 = wait
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s >= 0.0)
        .ok_or_else(|| {
            ApiError::bad_request(
                "invalid_parameter",
                "wait is a number of seconds, like wait=30",
            )
            .field("wait")
        })?;
    // try_: 1e20 seconds is more than a Duration holds.
    Ok(Some(
        Duration::try_from_secs_f64(seconds)
            .unwrap_or(Duration::MAX)
            .min(most),
    ))
}

pub(super) fn idempotency_key(req: &HttpRequest) -> Result<Option<String>, ApiError> {
    let Some(value) = req.headers().get("Idempotency-Key") else {
        return Ok(None);
    };
    let key = value.to_str().unwrap_or_default().trim();
    if key.is_empty() || key.len() > 255 || !key.chars().all(|c| c.is_ascii_graphic()) {
        return Err(ApiError::bad_request(
            "invalid_header",
            "Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID is ideal).",
        )
        .field("Idempotency-Key"));
    }
    Ok(Some(key.to_owned()))
}

/// Why an upload is not a book, as the API answers it.
pub(super) fn refusal(refused: Refused) -> ApiError {
    match refused {
        Refused::Metadata { field, message } => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_metadata",
            message,
        )
        .field(field),
        Refused::Input { code, message } => {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
        }
        Refused::CallbackUrl(message) => {
            ApiError::bad_request("invalid_callback_url", message).field("callback_url")
        }
    }
}

/// An EPUB 3 file.
#[derive(ToSchema)]
#[schema(value_type = String, content_media_type = "application/epub+zip")]
#[allow(dead_code)] // a schema for the document, never built
struct EpubFile(Vec<u8>);

/// A JPEG image.
#[derive(ToSchema)]
#[schema(value_type = String, content_media_type = "image/jpeg")]
#[allow(dead_code)] // a schema for the document, never built
struct JpegFile(Vec<u8>);

/// A PDF file.
#[derive(ToSchema)]
#[schema(value_type = String, content_media_type = "application/pdf")]
#[allow(dead_code)] // a schema for the document, never built
struct PdfFile(Vec<u8>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_is_capped_and_never_overflows() {
        let most = Duration::from_secs(25);
        assert_eq!(parse_wait(None, most).ok(), Some(None));
        assert_eq!(
            parse_wait(Some("2.5"), most).ok(),
            Some(Some(Duration::from_millis(2500)))
        );
        for huge in ["60", "1e20", "1e308", "18446744073709551616"] {
            assert_eq!(
                parse_wait(Some(huge), most).ok(),
                Some(Some(most)),
                "{huge}"
            );
        }
        for bad in ["-1", "NaN", "inf", "soon", ""] {
            assert!(parse_wait(Some(bad), most).is_err(), "{bad}");
        }
    }
}
