//! A published book's files: the EPUB and print edition downloads (by `downloads`' rule), its
//! cover, and the web reader's static site, served from the blob store to the book's tenant
//! only — by session cookie (the pages, the reader and its service worker), bearer token
//! (tools) or HTTP Basic (e-reader apps following the OPDS feed). Anyone else's book is 404, as
//! if it did not exist.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, ResponseError, get, web};

use super::AppState;
use super::caller::Caller;
use super::conditional::{self, Answer};
use super::downloads::{self, Download, EditionQuery};
use super::error::ApiError;
use super::fault::Fault;
use super::query::Query;
use super::reader_site::{self, content_type};
use crate::books::{self, BookId, keys};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(epub)
        .service(pdf)
        .service(print_cover)
        .service(store_cover)
        .service(cover)
        .service(reader_root)
        .service(reader_file)
        .service(preview_file);
}

/// What a style's preview of the reader's passages may do, framed by the book's styles page:
/// show its own style, fonts and images, run nothing, be framed by the app alone.
const PREVIEW_CSP: &str = "default-src 'self'; script-src 'none'; style-src 'self'; \
     img-src 'self' data:; font-src 'self'; frame-ancestors 'self'; base-uri 'none'; \
     form-action 'none'";

/// A file of the book's preview in a style (`pipeline::preview`): its pages as PNG, the
/// reader's passages and their stylesheet, and the style's bundled fonts the stylesheet names.
#[get("/books/{id}/preview/{style}/{file:.*}")]
async fn preview_file(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Result<Caller, ApiError>,
    path: web::Path<(String, String, String)>,
) -> HttpResponse {
    let (id, look, file) = path.into_inner();
    let Some(look) = crate::style::preview::Look::parse(&look) else {
        return not_found(&req);
    };
    let book = match ready_book(&req, &state, caller, &id).await {
        Ok(book) => book,
        Err(response) => return response,
    };
    let bundled = file
        .strip_prefix("fonts/")
        .and_then(|font| crate::style::fonts::Families::bundled().by_file(font));
    let (bytes, kind) = if let Some(face) = bundled {
        (face.bytes.clone(), face.media_type())
    } else {
        // The preview's own files, and a house style's fonts and ornament it stored.
        let own = |prefix: &str| {
            file.strip_prefix(prefix)
                .is_some_and(|name| !name.is_empty() && !name.contains('/'))
        };
        let kind = match file.as_str() {
            "title.png" | "opening.png" | "scene.png" | "reader.html" | "reader.css" => {
                content_type(&file)
            }
            _ if own("fonts/") || own(crate::style::css::ORNAMENTS) => {
                crate::style::house::media_type(&file)
            }
            _ => return not_found(&req),
        };
        match state
            .blobs
            .get_opt(&keys::preview(&book.current(), &look, &file))
            .await
        {
            Ok(Some(bytes)) => (bytes, kind),
            Ok(None) => return not_found(&req),
            Err(e) => return storage_error(&e),
        }
    };
    Answer::new(&req, conditional::etag(&bytes))
        .header((header::CACHE_CONTROL, "private, no-cache"))
        .header((header::CONTENT_SECURITY_POLICY, PREVIEW_CSP))
        .header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .header((header::REFERRER_POLICY, "no-referrer"))
        .body(kind, bytes)
}

/// Where a cover is when a book has no thumbnail (published before thumbnails were made):
/// the reader's copy, under the names `ebook::cover` gives it.
const READER_COVERS: [&str; 3] = ["cover.jpg", "cover.png", "cover.svg"];

/// The book's cover, small, for the pages (and anyone listing the tenant's books).
#[get("/books/{id}/cover")]
async fn cover(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Result<Caller, ApiError>,
    id: web::Path<String>,
) -> HttpResponse {
    let book = match ready_book(&req, &state, caller, &id).await {
        Ok(book) => book,
        Err(response) => return response,
    };
    let candidates = std::iter::once(keys::thumbnail(&book.current())).chain(
        READER_COVERS
            .iter()
            .map(|name| keys::reader(&book.current(), name)),
    );
    for key in candidates {
        match state.blobs.get_opt(&key).await {
            Ok(Some(bytes)) => {
                let media_type = crate::ebook::cover::thumbnail_media_type(&bytes);
                // A ready book's cover never changes: browsers keep it, revalidating daily.
                return Answer::new(&req, conditional::etag(&bytes))
                    .header((header::CACHE_CONTROL, "private, max-age=86400"))
                    .header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
                    .body(media_type, bytes);
            }
            Ok(None) => {}
            Err(e) => return storage_error(&e),
        }
    }
    not_found(&req)
}

#[get("/books/{id}/epub")]
async fn epub(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Result<Caller, ApiError>,
    id: web::Path<String>,
) -> HttpResponse {
    download(&req, &state, caller, &id, &Download::EPUB, Query::none()).await
}

#[get("/books/{id}/pdf")]
async fn pdf(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Result<Caller, ApiError>,
    id: web::Path<String>,
    query: Query<EditionQuery>,
) -> HttpResponse {
    download(&req, &state, caller, &id, &Download::PDF, query).await
}

#[get("/books/{id}/print-cover.pdf")]
async fn print_cover(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Result<Caller, ApiError>,
    id: web::Path<String>,
    query: Query<EditionQuery>,
) -> HttpResponse {
    download(&req, &state, caller, &id, &Download::PRINT_COVER, query).await
}

#[get("/books/{id}/store-cover.jpg")]
async fn store_cover(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Result<Caller, ApiError>,
    id: web::Path<String>,
) -> HttpResponse {
    download(
        &req,
        &state,
        caller,
        &id,
        &Download::STORE_COVER,
        Query::none(),
    )
    .await
}

/// `file` of the caller's book `id`, as [`downloads`] rules for the API too; a browser reads
/// why there is none as a line of text. Storage that failed is answered as the API answers it
/// (its status, `Retry-After` and the request id of the operator's log line).
async fn download(
    req: &HttpRequest,
    state: &AppState,
    caller: Result<Caller, ApiError>,
    id: &str,
    file: &Download,
    query: Query<EditionQuery>,
) -> HttpResponse {
    let book = match own_book(req, state, caller, id).await {
        Ok(book) => book,
        Err(response) => return response,
    };
    let fetched = match query.parsed() {
        Ok(EditionQuery { edition }) => downloads::fetch(state, &book, file, edition)
            .await
            .map(|bytes| (bytes, edition)),
        Err(e) => Err(e),
    };
    match fetched {
        Ok((bytes, edition)) => downloads::attachment(&book, file, edition, bytes),
        Err(e) if e.fault().is_some() => e.error_response(),
        Err(e) => HttpResponse::build(e.status_code())
            .content_type("text/plain; charset=utf-8")
            .body(e.message().to_owned()),
    }
}

#[get("/books/{id}/reader")]
async fn reader_root(id: web::Path<String>) -> HttpResponse {
    HttpResponse::PermanentRedirect()
        .insert_header((header::LOCATION, format!("/books/{id}/reader/")))
        .finish()
}

#[get("/books/{id}/reader/{path:.*}")]
async fn reader_file(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Result<Caller, ApiError>,
    path: web::Path<(String, String)>,
) -> HttpResponse {
    let (id, file) = path.into_inner();
    let Some(file) = reader_site::file_name(&file) else {
        return not_found(&req);
    };
    let book = match ready_book(&req, &state, caller, &id).await {
        Ok(book) => book,
        Err(response) => return response,
    };
    let bytes = match state
        .blobs
        .get_opt(&keys::reader(&book.current(), &file))
        .await
    {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return not_found(&req),
        Err(e) => return storage_error(&e),
    };
    reader_site::answer(&req, &file, bytes)
}

/// The caller's ready book `id`, or the answer to give instead: sign in (a browser), an
/// authentication challenge (a tool or an e-reader app), or 404.
async fn ready_book(
    req: &HttpRequest,
    state: &AppState,
    caller: Result<Caller, ApiError>,
    id: &str,
) -> Result<books::BookRow, HttpResponse> {
    match own_book(req, state, caller, id).await? {
        book if book.status == books::BookStatus::Ready => Ok(book),
        _ => Err(not_found(req)),
    }
}

/// The caller's book `id`, whatever its status, or the answer to give instead (see
/// [`ready_book`]).
async fn own_book(
    req: &HttpRequest,
    state: &AppState,
    caller: Result<Caller, ApiError>,
    id: &str,
) -> Result<books::BookRow, HttpResponse> {
    let caller = match caller {
        Ok(caller) => caller,
        Err(e) if e.status_code() == actix_web::http::StatusCode::UNAUTHORIZED => {
            return Err(challenge(req));
        }
        Err(e) => return Err(e.error_response()),
    };
    // Only well-formed ids reach storage: a path like `../x` never becomes a blob key.
    let Some(id) = BookId::parse(id) else {
        return Err(not_found(req));
    };
    match books::of_tenant(&state.db, &caller.tenant(), &id).await {
        Ok(Some(book)) => Ok(book),
        Ok(None) => Err(not_found(req)),
        Err(e) => Err(storage_error(&e)),
    }
}

/// No (valid) credentials: a person in a browser is sent to sign in and brought back; anything
/// else is asked for a token, over Basic so that e-reader apps prompt for it.
fn challenge(req: &HttpRequest) -> HttpResponse {
    if wants_html(req) {
        let next: String = url::form_urlencoded::byte_serialize(req.path().as_bytes()).collect();
        return HttpResponse::SeeOther()
            .insert_header((header::LOCATION, format!("/signin?next={next}")))
            .finish();
    }
    HttpResponse::Unauthorized()
        .insert_header((
            header::WWW_AUTHENTICATE,
            "Basic realm=\"Bindery\", charset=\"UTF-8\"",
        ))
        .content_type("text/plain; charset=utf-8")
        .body(
            "Sign in, or send an API token (Authorization: Bearer, or as the HTTP Basic password).",
        )
}

/// 404: the app's Not found page for a person in a browser, a line of text for anything else.
fn not_found(req: &HttpRequest) -> HttpResponse {
    if wants_html(req) {
        return super::frame::PageError::NotFound.error_response();
    }
    HttpResponse::NotFound()
        .content_type("text/plain; charset=utf-8")
        .body("not found")
}

fn wants_html(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"))
}

/// A failure to read the book: logged, and answered in plain text by what it means for the
/// client (see [`Fault`]).
fn storage_error(e: &anyhow::Error) -> HttpResponse {
    let (fault, request_id) = Fault::report(e, "reading a book's file");
    let mut message = match fault {
        Fault::Unavailable => "storage is unavailable; try again shortly".to_owned(),
        Fault::OutOfSpace => "storage is full; try again once the operator has freed space".into(),
        Fault::Bug => "the server failed to read this file; retrying will not help".into(),
    };
    if let Some(id) = request_id {
        message.push_str(&format!(" (request id {id})"));
    }
    let mut response = HttpResponse::build(fault.status());
    if let Some(seconds) = fault.retry_after() {
        response.insert_header((actix_web::http::header::RETRY_AFTER, seconds.to_string()));
    }
    response
        .content_type("text/plain; charset=utf-8")
        .body(message)
}
