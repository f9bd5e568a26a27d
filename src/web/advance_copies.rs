//! What an advance-reader link's visitor reaches, with no account: the link's page (the book's
//! title, whom the copy is for, the formats offered), and through it the book's EPUB and PDF as
//! downloads and its web reader, each stamped for the reader (`advance_copies::stamp`) as it is
//! served. The stamp changes only what it must and gives the same bytes for the same link, so
//! nothing is stored per link.
//!
//! A revoked or expired link answers 410 saying which, at once (the link is read on every
//! request); an unknown one 404. Neither names the book.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, ResponseError, get, web};
use maud::html;

use super::AppState;
use super::downloads::{self, Download};
use super::frame::{PageError, html_response, layout};
use super::reader_site;
use crate::advance_copies::links::{self, Format, Link, Refusal};
use crate::advance_copies::stamp::{self, Stamp};
use crate::books::{self, BookId, BookRow, BookStatus, Tenant, keys};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(landing)
        .service(epub)
        .service(pdf)
        .service(reader_root)
        .service(reader_file);
}

/// A link that gives nothing, and why: a page for a browser, the same sentence for anything
/// else.
fn refused(refusal: Refusal) -> HttpResponse {
    let status = match refusal {
        Refusal::Unknown | Refusal::NotOffered => StatusCode::NOT_FOUND,
        Refusal::Revoked | Refusal::Expired | Refusal::DownloadsUsed => StatusCode::GONE,
    };
    let body = html! {
        h1 { "This advance copy is not available" }
        p.error role="alert" #link-refused data-code=(refusal.code()) { (refusal) }
    };
    html_response(status, layout("Advance copy", None, &[], body))
}

/// The link's ready book, or the answer to give: a book gone or not ready is "not available".
async fn book_of(state: &AppState, link: &Link) -> Result<BookRow, HttpResponse> {
    let unavailable = || {
        let body = html! {
            h1 { "This advance copy is not available" }
            p.error role="alert" #link-refused data-code="book_unavailable" {
                "The book is not available just now. Try again later, or ask the author."
            }
        };
        html_response(
            StatusCode::NOT_FOUND,
            layout("Advance copy", None, &[], body),
        )
    };
    let (Some(tenant), Some(id)) = (Tenant::parse(&link.tenant), BookId::parse(&link.book_id))
    else {
        return Err(unavailable());
    };
    match books::of_tenant(&state.db, &tenant, &id).await {
        Ok(Some(book)) if book.status == BookStatus::Ready => Ok(book),
        Ok(_) => Err(unavailable()),
        Err(e) => Err(failed(e)),
    }
}

/// A failure on the server's side, as the app's error page (logged there).
fn failed(e: anyhow::Error) -> HttpResponse {
    PageError::from(e).error_response()
}

/// A copy that could not be stamped: a book made before its editions marked the copyright page
/// is the author's to remake (said plainly, 409); anything else is a fault of the server's.
fn stamp_failed(link: &Link, what: &str, e: &stamp::StampError) -> HttpResponse {
    use stamp::StampError;
    if matches!(
        e,
        StampError::NoCopyrightSection(_) | StampError::NoCopyrightPage(_)
    ) {
        tracing::warn!(link = %link.id, book.id = %link.book_id, what, "an advance copy of a book made before copies could be stamped");
        let body = html! {
            h1 { "This advance copy is not ready" }
            p.error role="alert" #link-refused data-code="book_needs_remaking" {
                "The book was made before Bindery could make personal copies of it. "
                "Ask the author to make it again (a new revision or style), then use this link again."
            }
        };
        return html_response(
            StatusCode::CONFLICT,
            layout("Advance copy", None, &[], body),
        );
    }
    failed(anyhow::anyhow!("stamping link {}'s {what}: {e}", link.id))
}

/// The stamp for the link's reader, in the book's language.
fn stamp_for(link: &Link, book: &BookRow) -> anyhow::Result<Stamp> {
    let report: Option<crate::report::Report> = book
        .report
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok());
    let language = report
        .iter()
        .flat_map(|r| &r.metadata)
        .find(|m| m.field == "language")
        .map_or("en", |m| m.value.as_str())
        .to_owned();
    Stamp::new(&link.reader, &link.identifier(), &language)
        .map_err(|e| anyhow::anyhow!("stamping for link {}: {e}", link.id))
}

#[get("/arc/{secret}")]
async fn landing(state: web::Data<AppState>, secret: web::Path<String>) -> HttpResponse {
    let link = match links::visit(&state.db, &secret).await {
        Ok(Ok(link)) => link,
        Ok(Err(refusal)) => return refused(refusal),
        Err(e) => return failed(e),
    };
    let book = match book_of(&state, &link).await {
        Ok(book) => book,
        Err(answer) => return answer,
    };
    let title = book.title.clone().unwrap_or_else(|| "Untitled".into());
    let offered = link.formats();
    let left = link.max_downloads - link.downloads;
    let body = html! {
        h1 { (title) }
        @if !book.authors.is_empty() { p.lede { (book.authors.join(", ")) } }
        p { "An advance reader copy for " strong #reader { (link.reader) } ", not for sale. "
            "Each copy carries your name." }
        ul.offered #formats {
            @for format in &offered {
                li {
                    @match format {
                        Format::Reader => a.button href=(format!("/arc/{secret}/reader/")) { "Read online" },
                        Format::Epub => a.button href=(format!("/arc/{secret}/epub")) download { "Download the EPUB" },
                        Format::Pdf => a.button href=(format!("/arc/{secret}/pdf")) download { "Download the PDF" },
                    }
                }
            }
        }
        p.hint { "This link works until "
            (chrono::DateTime::from_timestamp_millis(link.expires_at).map(|t| t.format("%Y-%m-%d").to_string()).unwrap_or_default())
            @if offered.iter().any(|f| *f != Format::Reader) { ", for " (left) " more download" @if left != 1 { "s" } }
            "." }
    };
    let mut response = html_response(StatusCode::OK, layout(&title, None, &[], body));
    response.headers_mut().insert(
        header::REFERRER_POLICY,
        header::HeaderValue::from_static("no-referrer"),
    );
    response
}

/// A stamped download of `format`, counted against the link.
async fn download(
    state: &AppState,
    secret: &str,
    format: Format,
    file: &Download,
    stamped: fn(&[u8], &Stamp) -> Result<Vec<u8>, stamp::StampError>,
) -> HttpResponse {
    let link = match links::usable(&state.db, secret, format).await {
        Ok(Ok(link)) => link,
        Ok(Err(refusal)) => return refused(refusal),
        Err(e) => return failed(e),
    };
    let book = match book_of(state, &link).await {
        Ok(book) => book,
        Err(answer) => return answer,
    };
    let stamp = match stamp_for(&link, &book) {
        Ok(stamp) => stamp,
        Err(e) => return failed(e),
    };
    let original = match downloads::fetch(state, &book, file, None).await {
        Ok(bytes) => bytes,
        Err(e) => return PageError::from(e).error_response(),
    };
    let copy = match stamped(&original, &stamp) {
        Ok(copy) => copy,
        Err(e) => return stamp_failed(&link, file.what, &e),
    };
    // Counted once the copy is made, so a failure spends nothing.
    match links::download(&state.db, &link).await {
        Ok(Ok(())) => {}
        Ok(Err(refusal)) => return refused(refusal),
        Err(e) => return failed(e),
    }
    tracing::info!(link = %link.id, book.id = %link.book_id, format = format.as_str(), "an advance copy was downloaded");
    HttpResponse::Ok()
        .content_type(file.media_type)
        .insert_header((header::CONTENT_DISPOSITION, file.disposition(&book, None)))
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .body(copy)
}

#[get("/arc/{secret}/epub")]
async fn epub(state: web::Data<AppState>, secret: web::Path<String>) -> HttpResponse {
    download(&state, &secret, Format::Epub, &Download::EPUB, stamp::epub).await
}

#[get("/arc/{secret}/pdf")]
async fn pdf(state: web::Data<AppState>, secret: web::Path<String>) -> HttpResponse {
    download(&state, &secret, Format::Pdf, &Download::PDF, stamp::pdf).await
}

#[get("/arc/{secret}/reader")]
async fn reader_root(secret: web::Path<String>) -> HttpResponse {
    HttpResponse::PermanentRedirect()
        .insert_header((header::LOCATION, format!("/arc/{secret}/reader/")))
        .finish()
}

/// The web reader's files; its contents page stamped. Reading is not counted as a download.
#[get("/arc/{secret}/reader/{path:.*}")]
async fn reader_file(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> HttpResponse {
    let (secret, file) = path.into_inner();
    let link = match links::usable(&state.db, &secret, Format::Reader).await {
        Ok(Ok(link)) => link,
        Ok(Err(refusal)) => return refused(refusal),
        Err(e) => return failed(e),
    };
    let Some(file) = reader_site::file_name(&file) else {
        return refused(Refusal::Unknown);
    };
    let book = match book_of(&state, &link).await {
        Ok(book) => book,
        Err(answer) => return answer,
    };
    let bytes = match state
        .blobs
        .get_opt(&keys::reader(&book.current(), &file))
        .await
    {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return refused(Refusal::Unknown),
        Err(e) => return failed(e),
    };
    if file != stamp::READER_PAGE {
        return reader_site::answer(&req, &file, bytes);
    }
    let stamp = match stamp_for(&link, &book) {
        Ok(stamp) => stamp,
        Err(e) => return failed(e),
    };
    match stamp::reader_page(&bytes, &stamp) {
        Ok(page) => reader_site::answer(&req, &file, page.into()),
        Err(e) => stamp_failed(&link, "reader", &e),
    }
}
