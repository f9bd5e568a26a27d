//! `/api/v1/books/{id}/revisions`: a book's revisions. A new manuscript for a book (with new
//! metadata or cover, or not) is its next revision; it builds in the background while the book
//! keeps serving the revision it has, and the book switches to it, whole, once it is built.

use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use serde::Serialize;
use utoipa::ToSchema;

use super::books::{
    CreateQuery, IdempotencyHeader, check_write, discard_uploads, held_answer, hold,
    idempotency_key, parse_wait, receive, refusal,
};
use super::upload::{Upload, UploadForm};
use crate::books::{self, BookRow, Reserved, RevisionId, RevisionRow, RevisionView, keys};
use crate::document::keys::{Field, Named};
use crate::pipeline::{progress, steps};
use crate::web::book_view::{own_book, own_revision};
use crate::web::caller::Caller;
use crate::web::downloads::{self, Download};
use crate::web::error::{ApiError, ErrorBody};
use crate::web::error_responses::{
    BadRequest, CsrfFailed, Internal, NotFound, RateLimited, Unauthorized, Unavailable,
};
use crate::web::query::Query;
use crate::web::{AppState, Stopping};

/// Upload a new version of a book
///
/// The book's next revision: a new manuscript, as `multipart/form-data` like an upload, with
/// any metadata fields or cover to change. A field it does not give carries over from the
/// revision the book shows, and so does its cover. It builds in the background; until it is
/// ready the book keeps serving what it has (EPUB, reader, print edition, covers, catalog),
/// and then switches to it at once. A revision that fails leaves the book as it was, and says
/// why (here, and in a `book.revision_failed` webhook). A newer revision supersedes one still
/// building: that one is cancelled, and its files removed. The EPUB keeps its identifier.
#[utoipa::path(
    operation_id = "upload_revision",
    tag = "books",
    params(
        ("id" = String, Path, description = "The book's id."),
        CreateQuery,
        IdempotencyHeader
    ),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "The revision is ready or failed (with `?wait=`), or the \
            `Idempotency-Key` names a finished revision.", body = RevisionView, headers(
            ("Location" = String, description = "The revision's status URL."),
            ("Idempotent-Replayed" = String, description = "`true` when the \
                `Idempotency-Key` was seen before and no revision was made.")
        )),
        (status = 202, description = "Accepted: the revision is building.",
            body = RevisionView, headers(
            ("Location" = String, description = "The revision's status URL."),
            ("Idempotent-Replayed" = String, description = "`true` when the \
                `Idempotency-Key` was seen before and no revision was made.")
        )),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, response = NotFound),
        (status = 408, description = "The body sent nothing for `BODY_IDLE_TIMEOUT` \
            (`body_stalled`); nothing of the upload was kept.", body = ErrorBody),
        (status = 413, description = "The manuscript, cover or a field is over its limit \
            (`too_large`, `field_too_large`).", body = ErrorBody),
        (status = 422, description = "A metadata value is invalid (`invalid_metadata`, \
            `field` names it), or the form sets what only the book's first upload sets \
            (`callback_url`).", body = ErrorBody),
        (status = 429, response = RateLimited),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
        (status = 507, description = "The server is out of storage space \
            (`insufficient_storage`); nothing of the upload was kept.", body = ErrorBody),
    )
)]
#[post("/books/{id}/revisions")]
pub async fn create(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    query: Query<CreateQuery>,
    body: web::Payload,
    stopping: web::Data<Stopping>,
) -> Result<HttpResponse, ApiError> {
    let stopping = stopping.get_ref().clone();
    let tenant = caller.tenant();
    let wait = parse_wait(query.parsed()?.wait.as_deref(), state.config.max_wait)?;
    let key = idempotency_key(&req)?;
    let book = own_book(&state, &tenant, &id).await?;
    if let Some(key) = &key
        && let Some(existing) = books::revision_by_idempotency_key(&state.db, &book.id, key).await?
    {
        return respond(&state, existing, wait, true, stopping).await;
    }
    check_write(&state, &tenant)?;
    let revision = match books::reserve_revision(&state.db, &book.id, key.as_deref()).await? {
        Reserved::New(revision) => revision,
        Reserved::Existing(existing) => {
            return respond(&state, *existing, wait, true, stopping).await;
        }
    };
    let started = match receive(&req, &state, body, &revision, stopping.clone()).await {
        Ok(upload) => start(&state, &book, &revision, upload, key.as_deref()).await,
        Err(e) => Err(e),
    };
    if let Err(e) = started {
        abandon(&state, &revision).await;
        return Err(e);
    }
    let row = books::revision(&state.db, &revision)
        .await?
        .ok_or_else(|| ApiError::not_found("book", "The book was deleted meanwhile."))?;
    respond(&state, row, wait, false, stopping).await
}

/// Checks what the form said against the revision the book shows, carries over what it did
/// not say, and starts the revision.
async fn start(
    state: &AppState,
    book: &BookRow,
    revision: &RevisionId,
    upload: Upload,
    idempotency_key: Option<&str>,
) -> Result<(), ApiError> {
    let Upload {
        file_name,
        cover_name,
        metadata,
        format,
        callback_url,
    } = upload;
    if callback_url.is_some() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "not_for_a_revision",
            "callback_url belongs to the book, and is set by its first upload; leave it out \
             of a new version.",
        )
        .field("callback_url"));
    }
    let current = book.current();
    let shown = book.options()?;
    let styles = crate::house_styles::names(&state.db, &book.tenant).await?;
    let options = books::revision_options(&shown, metadata, format, cover_name.clone(), &styles)
        .map_err(refusal)?;
    let mut options = options;
    if cover_name.is_none() && shown.cover_name.is_some() {
        // The cover carries over: the new revision's files are its own.
        let bytes = state.blobs.get(&keys::cover_upload(&current)).await?;
        state
            .blobs
            .put_if_absent(&keys::cover_upload(revision), bytes)
            .await?;
    }
    if options.convert.identifier.is_none() {
        options.convert.identifier = identifier_of(state, &current).await?;
    }
    books::revise(
        &state.db,
        &state.queue,
        book,
        revision,
        &file_name,
        options,
        idempotency_key,
        steps::first_step(revision),
    )
    .await?;
    Ok(())
}

/// The `urn:uuid` identifier the book's EPUB has, which its later revisions keep: read from
/// what the shown revision published (an ISBN identifier is the metadata's, which carries over
/// by itself). `None` for a book never published.
async fn identifier_of(state: &AppState, shown: &RevisionId) -> Result<Option<String>, ApiError> {
    let Some(bytes) = state.blobs.get_opt(&keys::catalog_entry(shown)).await? else {
        return Ok(None);
    };
    let entry: books::entry::Entry = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow::anyhow!("reading the catalog entry of book {shown}: {e}"))?;
    Ok(entry
        .identifier
        .starts_with("urn:uuid:")
        .then_some(entry.identifier))
}

/// Answers with the revision: at once, or after waiting (up to `wait`) for it to finish.
async fn respond(
    state: &AppState,
    mut revision: RevisionRow,
    wait: Option<Duration>,
    replayed: bool,
    mut stopping: Stopping,
) -> Result<HttpResponse, ApiError> {
    if let Some(wait) = wait
        && revision.status == books::RevisionStatus::Processing
    {
        hold(state, revision.id.workflow(), wait, &mut stopping).await?;
        revision = books::revision(&state.db, &revision.id)
            .await?
            .ok_or_else(|| ApiError::not_found("book", "The book was deleted while waiting."))?;
    }
    let view = revision_view(state, &revision, true).await?;
    let processing = view.status == books::RevisionStatus::Processing;
    Ok(held_answer(processing, &view.links.self_, replayed, &view))
}

/// A reserved revision whose upload or start failed: its files and its row go.
async fn abandon(state: &AppState, revision: &RevisionId) {
    discard_uploads(state, revision).await;
    if let Err(e) = books::abandon_revision(&state.db, revision).await {
        tracing::warn!(book.id = %revision.book, revision = revision.number, error = %format!("{e:#}"), "could not remove a refused revision");
    }
}

/// The revision's view; `detailed` adds its steps' progress.
async fn revision_view(
    state: &AppState,
    revision: &RevisionRow,
    detailed: bool,
) -> Result<RevisionView, ApiError> {
    let now = progress::of_revision(&state.queue, revision, detailed).await?;
    // Read after the revision: a switch between the two reads shows it current a moment early.
    let current = books::get(&state.db, &revision.id.book)
        .await?
        .is_some_and(|book| book.revision == revision.id.number);
    Ok(RevisionView::of(revision, now, current))
}

/// A book's revisions, newest first.
#[derive(Serialize, ToSchema)]
struct Revisions {
    revisions: Vec<RevisionView>,
}

/// List a book's revisions
///
/// Every revision of the book, newest first (without progress).
#[utoipa::path(
    operation_id = "list_revisions",
    tag = "books",
    params(("id" = String, Path, description = "The book's id.")),
    responses(
        (status = 200, description = "The book's revisions.", body = Revisions),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/books/{id}/revisions")]
pub async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let book = own_book(&state, &caller.tenant(), &id).await?;
    let rows = books::revisions(&state.db, &book.id).await?;
    let mut revisions = Vec::with_capacity(rows.len());
    for row in &rows {
        let now = progress::of_revision(&state.queue, row, false).await?;
        revisions.push(RevisionView::of(row, now, row.id.number == book.revision));
    }
    Ok(HttpResponse::Ok().json(Revisions { revisions }))
}

/// Show a revision
///
/// One revision of the book, with its steps' progress.
#[utoipa::path(
    operation_id = "show_revision",
    tag = "books",
    params(
        ("id" = String, Path, description = "The book's id."),
        ("n" = u32, Path, description = "The revision's number, from 1."),
    ),
    responses(
        (status = 200, description = "The revision.", body = RevisionView),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/books/{id}/revisions/{n}")]
pub async fn show(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, n) = path.into_inner();
    let book = own_book(&state, &caller.tenant(), &id).await?;
    let revision = own_revision(&state, &book, &n).await?;
    Ok(HttpResponse::Ok().json(revision_view(&state, &revision, true).await?))
}

/// Download a revision's EPUB
///
/// The EPUB of one built revision of the book: the current one, or an earlier version to
/// compare or keep.
#[utoipa::path(
    operation_id = "download_revision_epub",
    tag = "books",
    params(
        ("id" = String, Path, description = "The book's id."),
        ("n" = u32, Path, description = "The revision's number, from 1."),
    ),
    responses(
        (status = 200, description = "The EPUB 3 file, as an attachment (`….vN.epub`).",
            content_type = "application/epub+zip", headers(
            ("Content-Disposition" = String, description = "`attachment; filename=\"…-vN.epub\"`")
        )),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 409, description = "The revision is not built: building, failed or \
            superseded (`not_ready`).", body = ErrorBody),
        (status = 410, description = "The revision no longer keeps its files \
            (`revision_files_removed`).", body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/books/{id}/revisions/{n}/epub")]
pub async fn epub(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, n) = path.into_inner();
    let book = own_book(&state, &caller.tenant(), &id).await?;
    let revision = own_revision(&state, &book, &n).await?;
    let bytes = downloads::fetch_revision(&state, &revision, &Download::EPUB).await?;
    Ok(downloads::revision_attachment(
        &book,
        revision.id.number,
        &Download::EPUB,
        bytes,
    ))
}

/// Restore a revision
///
/// Makes a new revision of the book from an earlier one's manuscript, cover and metadata:
/// history only grows. It builds like any new version, and the book switches to it once it is
/// ready.
#[utoipa::path(
    operation_id = "restore_revision",
    tag = "books",
    params(
        ("id" = String, Path, description = "The book's id."),
        ("n" = u32, Path, description = "The number of the revision to restore."),
        CreateQuery,
    ),
    responses(
        (status = 200, description = "The new revision is ready or failed (with `?wait=`).",
            body = RevisionView),
        (status = 202, description = "Accepted: the new revision is building.",
            body = RevisionView, headers(
            ("Location" = String, description = "The new revision's status URL.")
        )),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, response = NotFound),
        (status = 410, description = "The revision no longer keeps its files \
            (`revision_files_removed`).", body = ErrorBody),
        (status = 429, response = RateLimited),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[post("/books/{id}/revisions/{n}/restore")]
pub async fn restore(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    query: Query<CreateQuery>,
    stopping: web::Data<Stopping>,
) -> Result<HttpResponse, ApiError> {
    let (id, n) = path.into_inner();
    let tenant = caller.tenant();
    let wait = parse_wait(query.parsed()?.wait.as_deref(), state.config.max_wait)?;
    let book = own_book(&state, &tenant, &id).await?;
    let old = own_revision(&state, &book, &n).await?;
    let manuscript = match old.files_removed_at {
        Some(_) => None,
        None => state.blobs.get_opt(&keys::upload(&old.id)).await?,
    };
    let Some(manuscript) = manuscript else {
        return Err(downloads::files_removed(&old));
    };
    check_write(&state, &tenant)?;
    let Reserved::New(revision) = books::reserve_revision(&state.db, &book.id, None).await? else {
        unreachable!("a reservation without an idempotency key is always new")
    };
    let restored = async {
        state
            .blobs
            .put_if_absent(&keys::upload(&revision), manuscript)
            .await?;
        let mut options = old.options()?;
        if options.cover_name.is_some()
            && let Some(cover) = state.blobs.get_opt(&keys::cover_upload(&old.id)).await?
        {
            state
                .blobs
                .put_if_absent(&keys::cover_upload(&revision), cover)
                .await?;
        } else {
            options.cover_name = None;
        }
        // Its own time, and the identifier the book has.
        options.convert.modified = None;
        if options.convert.identifier.is_none() {
            options.convert.identifier = identifier_of(&state, &book.current()).await?;
        }
        books::revise(
            &state.db,
            &state.queue,
            &book,
            &revision,
            &old.file_name,
            options,
            None,
            steps::first_step(&revision),
        )
        .await?;
        Ok::<(), ApiError>(())
    }
    .await;
    if let Err(e) = restored {
        abandon(&state, &revision).await;
        return Err(e);
    }
    tracing::info!(for_author = true, book.id = %book.id, revision = revision.number, restored = old.id.number, "revision restored as a new one");
    let row = books::revision(&state.db, &revision)
        .await?
        .ok_or_else(|| ApiError::not_found("book", "The book was deleted meanwhile."))?;
    respond(&state, row, wait, false, stopping.get_ref().clone()).await
}

/// The style to give a book.
#[derive(Debug, serde::Deserialize, ToSchema)]
pub struct StyleChoice {
    /// A built-in style's name (`classic`, `large-print`…).
    #[schema(example = "classic")]
    style: String,
}

/// Give a book another style
///
/// The book's next revision, in the style named: made from what the revision the book shows
/// has read already, so no manuscript is read again (its workflow has no `ingest` or `parse`
/// step, only `restyle`). The print edition, the EPUB and the web reader are made again in the
/// new style, in the background like any revision; the book keeps serving what it has until
/// then. JSON (`{"style": "classic"}`) or a form field `style`.
#[utoipa::path(
    operation_id = "restyle_book",
    tag = "books",
    params(("id" = String, Path, description = "The book's id."), CreateQuery),
    request_body(
        content = StyleChoice,
        content_type = "application/json",
        example = json!({"style": "classic"})
    ),
    responses(
        (status = 200, description = "The revision is ready or failed (with `?wait=`).",
            body = RevisionView, headers(
            ("Location" = String, description = "The new revision's status URL.")
        )),
        (status = 202, description = "Accepted: the book builds in its new style.",
            body = RevisionView, headers(
            ("Location" = String, description = "The new revision's status URL.")
        )),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, response = NotFound),
        (status = 409, description = "The book has no built version yet (`not_ready`), or is \
            in that style already (`same_style`).", body = ErrorBody),
        (status = 410, description = "The revision the book shows no longer keeps its files \
            (`revision_files_removed`).", body = ErrorBody),
        (status = 422, description = "No style of that name (`invalid_metadata`, `field` is \
            `style`); the message lists the styles.", body = ErrorBody),
        (status = 429, response = RateLimited),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[post("/books/{id}/style")]
pub async fn restyle(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    query: Query<CreateQuery>,
    body: web::Either<web::Json<StyleChoice>, web::Form<StyleChoice>>,
    stopping: web::Data<Stopping>,
) -> Result<HttpResponse, ApiError> {
    let tenant = caller.tenant();
    let wait = parse_wait(query.parsed()?.wait.as_deref(), state.config.max_wait)?;
    let book = own_book(&state, &tenant, &id).await?;
    let asked = match body {
        web::Either::Left(json) => json.into_inner().style,
        web::Either::Right(form) => form.into_inner().style,
    };
    let (style, house) = crate::house_styles::choose(&state.db, &tenant, &asked)
        .await?
        .map_err(|why| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_metadata",
                format!("style: {why}"),
            )
            .field("style")
        })?;
    let shown = books::revision(&state.db, &book.current())
        .await?
        .filter(|row| row.status == books::RevisionStatus::Ready)
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::CONFLICT,
                "not_ready",
                "The book has no built version to give another style yet: wait until it is \
                 ready, or upload the manuscript again with the style you want.",
            )
        })?;
    if shown.files_removed_at.is_some() {
        return Err(downloads::files_removed(&shown));
    }
    let mut options = shown.options()?;
    // A house style may have been replaced since: giving it again takes its new look.
    if house.is_none() && books::style_of(&state.blobs, &shown.id).await? == style.as_str() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "same_style",
            format!("The book is in the style {style} already."),
        ));
    }
    check_write(&state, &tenant)?;
    let Reserved::New(revision) = books::reserve_revision(&state.db, &book.id, None).await? else {
        unreachable!("a reservation without an idempotency key is always new")
    };
    let started = async {
        options
            .convert
            .metadata
            .retain(|key, _| Named::parse(key) != Ok(Named::Field(Field::Style)));
        options
            .convert
            .metadata
            .insert(Field::Style.name().to_owned(), style.to_string());
        options.convert.modified = None;
        if options.convert.identifier.is_none() {
            options.convert.identifier = identifier_of(&state, &shown.id).await?;
        }
        books::revise(
            &state.db,
            &state.queue,
            &book,
            &revision,
            &shown.file_name,
            options,
            None,
            steps::restyle_step(&revision, shown.id.number),
        )
        .await?;
        Ok::<(), ApiError>(())
    }
    .await;
    if let Err(e) = started {
        abandon(&state, &revision).await;
        return Err(e);
    }
    tracing::info!(for_author = true, book.id = %book.id, revision = revision.number, style = %style, "the book is given another style");
    let row = books::revision(&state.db, &revision)
        .await?
        .ok_or_else(|| ApiError::not_found("book", "The book was deleted meanwhile."))?;
    respond(&state, row, wait, false, stopping.get_ref().clone()).await
}

/// `?from=`: the revision to compare with.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChangesQuery {
    /// The older revision's number; by default the built revision before this one (whose
    /// report was stored as this one was published), else the newest built one before it
    /// that keeps its files.
    #[param(value_type = Option<u32>, minimum = 1, example = 1)]
    from: Option<String>,
}

/// What changed between two revisions (`ebook::changes::Changes`).
#[derive(ToSchema)]
#[schema(value_type = Object)]
#[allow(dead_code)] // a schema for the document, never built
struct ChangeReport(serde_json::Value);

/// What changed
///
/// What changed from an earlier revision to this one: the chapters added, removed, renamed,
/// moved and changed, each changed chapter's words added and removed with a word-level diff
/// (`diff`: runs of `equal`, `insert` and `delete` text, unchanged text folded, `folded` words
/// left out), the print edition's `pages_before` and `pages_after`, the folio of the
/// `first_page_that_differs` and the `chapters_moved` to other pages, and the warnings that
/// are `new` and `gone`. A revision's report against the one before it is stored as it is
/// published, and stays when their files are removed; another pair is compared while both
/// keep their files.
#[utoipa::path(
    operation_id = "revision_changes",
    tag = "books",
    params(
        ("id" = String, Path, description = "The book's id."),
        ("n" = u32, Path, description = "The newer revision's number."),
        ChangesQuery,
    ),
    responses(
        (status = 200, description = "The change report.", body = inline(ChangeReport)),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 409, description = "A revision is not built (`not_ready`), or there is no \
            earlier built revision to compare with (`nothing_to_compare`).", body = ErrorBody),
        (status = 410, description = "A revision no longer keeps its files \
            (`revision_files_removed`).", body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/books/{id}/revisions/{n}/changes")]
pub async fn changes(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    query: Query<ChangesQuery>,
) -> Result<HttpResponse, ApiError> {
    let (id, n) = path.into_inner();
    let query = query.parsed()?;
    let book = own_book(&state, &caller.tenant(), &id).await?;
    let to = own_revision(&state, &book, &n).await?;
    let from = match query.from.as_deref() {
        Some(m) => Some(m.parse::<u32>().map_err(|_| {
            ApiError::bad_request("invalid_parameter", "from must be a revision number")
                .field("from")
        })?),
        None => None,
    };
    let changes = crate::web::changes::between(&state, &book, &to, from).await?;
    Ok(HttpResponse::Ok().json(changes))
}
