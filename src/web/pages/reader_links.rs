//! A ready book's advance-reader links, for its tenant: a form that makes a link for a named
//! reader (the formats offered, how long, how many downloads) and shows it once, and the links
//! made, each with its opens and downloads and a button that revokes it at once.

use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use maud::html;
use serde::Deserialize;

use super::admin::readable_ms;
use crate::advance_copies::links::{self, CreateError, Format, NewLink};
use crate::books::{BookRow, BookStatus, Tenant};
use crate::sessions::Session;
use crate::web::AppState;
use crate::web::book_view::own_book;
use crate::web::frame::{PageError, Visitor, html_response, layout, origin};
use crate::web::session::{self, CSRF_FIELD, CsrfForm};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(links_page).service(make).service(revoke);
}

enum Notice {
    None,
    Done(String),
    Problem(String),
    /// A new link's address, shown this once, and whom it is for.
    Made {
        url: String,
        reader: String,
    },
}

async fn book(state: &AppState, session: &Session, id: &str) -> Result<BookRow, PageError> {
    Ok(own_book(state, &Tenant::of(&session.tenant), id).await?)
}

#[get("/books/{id}/links")]
async fn links_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    id: web::Path<String>,
) -> Result<HttpResponse, PageError> {
    let book = book(&state, &session, &id).await?;
    page(&req, &state, &session, &book, Notice::None).await
}

async fn page(
    req: &HttpRequest,
    state: &AppState,
    session: &Session,
    book: &BookRow,
    notice: Notice,
) -> Result<HttpResponse, PageError> {
    let links = links::of_book(&state.db, book.tenant.as_str(), book.id.as_ref()).await?;
    let now = chrono::Utc::now().timestamp_millis();
    let title = book.title.clone().unwrap_or_else(|| "Untitled".into());
    let csrf = html! { input type="hidden" name=(CSRF_FIELD) value=(session.csrf); };
    let ready = book.status == BookStatus::Ready;
    let status = match notice {
        Notice::Problem(_) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    };
    let origin = origin(req, state);
    let body = html! {
        p { a href=(format!("/books/{}", book.id)) { "← " (title) } }
        h1 { "Advance readers" }
        p.lede { "A link for each reader: they read or download without an account, and every copy says "
            em { "Advance reader copy for their name, not for sale" } " on its copyright page." }
        @match &notice {
            Notice::None => {}
            Notice::Done(what) => { p.notice role="status" #links-notice { (what) } }
            Notice::Problem(problem) => { p.error role="alert" #links-error { (problem) } }
            Notice::Made { url, reader } => {
                div.notice role="status" #link-made {
                    p { "The link for " strong { (reader) } ", shown only this once. Send it to them:" }
                    p { input #link-url type="text" readonly size="80" aria-label="The reader's link"
                        value=(format!("{origin}{url}")); }
                }
            }
        }
        @if ready {
            section aria-labelledby="new-link-title" {
                h2 #new-link-title { "New link" }
                form #new-link.stack method="post" action=(format!("/books/{}/links", book.id)) {
                    (csrf)
                    label for="reader" { "The reader's name, as it goes in their copies" }
                    input #reader type="text" name="reader" required maxlength=(links::MAX_READER_CHARS) autocomplete="off";
                    fieldset {
                        legend { "Formats offered" }
                        @for format in Format::ALL {
                            @if format != Format::Pdf || book.pdf_bytes.is_some() {
                                label { input type="checkbox" name=(format!("offer_{}", format.as_str())) checked; " " (format.label()) }
                            }
                        }
                    }
                    label for="days" { "Valid for" }
                    select #days name="days" {
                        option value="7" { "7 days" }
                        option value="30" selected { "30 days" }
                        option value="90" { "90 days" }
                        option value="365" { "a year" }
                    }
                    label for="downloads" { "Downloads allowed" }
                    input #downloads type="number" name="downloads" min="1" max=(links::MAX_DOWNLOADS) value="3" required;
                    button type="submit" { "Make the link" }
                }
            }
        } @else {
            p { "Links can be made once the book is ready." }
        }
        section aria-labelledby="links-title" {
            h2 #links-title { "Links" }
            @if links.is_empty() {
                p { "No links yet." }
            } @else {
                div.table-wrap tabindex="0" role="region" aria-label="Links, scrollable" {
                    table #links {
                        thead { tr {
                            th scope="col" { "Reader" } th scope="col" { "Offers" } th scope="col" { "Opened" }
                            th scope="col" { "Downloads" } th scope="col" { "State" } th scope="col" { span.visually-hidden { "Actions" } }
                        } }
                        tbody {
                            @for link in &links {
                                @let open = link.open(now);
                                tr data-id=(link.id) {
                                    td { (link.reader) }
                                    td { (link.formats().iter().map(|f| f.label()).collect::<Vec<_>>().join(", ")) }
                                    td.opens { (link.opens) }
                                    td.downloads { (link.downloads) " of " (link.max_downloads) }
                                    td { @match open {
                                        Ok(()) => { "open until " (readable_ms(link.expires_at)) }
                                        Err(links::Refusal::Revoked) => { "revoked" }
                                        Err(_) => { "expired" }
                                    } }
                                    td {
                                        @if open.is_ok() {
                                            form method="post" action=(format!("/books/{}/links/{}/revoke", book.id, link.id)) {
                                                (csrf)
                                                button type="submit" aria-label=(format!("Revoke the link for {}", link.reader)) { "Revoke" }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(html_response(
        status,
        layout("Advance readers", Some(session), &[], body),
    ))
}

#[derive(Deserialize)]
struct MakeLink {
    reader: String,
    days: u64,
    downloads: i64,
    offer_reader: Option<String>,
    offer_epub: Option<String>,
    offer_pdf: Option<String>,
    #[serde(rename = "_csrf")]
    csrf: Option<String>,
}

const EXPIRED: &str = "This page had expired. Please try again.";

/// Who made a link, for the record: the account, or the token.
fn maker(session: &Session) -> String {
    match &session.person {
        Some(person) => person.id.clone(),
        None => format!("token:{}", session.tenant.name),
    }
}

#[post("/books/{id}/links")]
async fn make(
    req: HttpRequest,
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    id: web::Path<String>,
    form: web::Form<MakeLink>,
) -> Result<HttpResponse, PageError> {
    let book = book(&state, &session, &id).await?;
    if !session::form_csrf_ok(&session.csrf, form.csrf.as_deref()) {
        return page(
            &req,
            &state,
            &session,
            &book,
            Notice::Problem(EXPIRED.into()),
        )
        .await;
    }
    if book.status != BookStatus::Ready {
        let problem = "Links can be made once the book is ready.".to_owned();
        return page(&req, &state, &session, &book, Notice::Problem(problem)).await;
    }
    let mut formats = Vec::new();
    for (format, given) in [
        (Format::Reader, &form.offer_reader),
        (Format::Epub, &form.offer_epub),
        (Format::Pdf, &form.offer_pdf),
    ] {
        if given.is_some() && (format != Format::Pdf || book.pdf_bytes.is_some()) {
            formats.push(format);
        }
    }
    let new = NewLink {
        reader: form.reader.clone(),
        formats,
        lifetime: Duration::from_secs(form.days.saturating_mul(24 * 3600)),
        max_downloads: form.downloads,
    };
    let made = links::create(
        &state.db,
        book.tenant.as_str(),
        book.id.as_ref(),
        &maker(&session),
        &new,
    )
    .await;
    match made {
        Ok((link, secret)) => {
            tracing::info!(link = %link.id, book.id = %book.id, "an advance-reader link was made");
            let notice = Notice::Made {
                url: format!("/arc/{secret}"),
                reader: link.reader,
            };
            page(&req, &state, &session, &book, notice).await
        }
        Err(CreateError::Unexpected(e)) => Err(e.into()),
        Err(e) => {
            page(
                &req,
                &state,
                &session,
                &book,
                Notice::Problem(e.to_string()),
            )
            .await
        }
    }
}

#[post("/books/{id}/links/{link}/revoke")]
async fn revoke(
    req: HttpRequest,
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    path: web::Path<(String, String)>,
    form: web::Form<CsrfForm>,
) -> Result<HttpResponse, PageError> {
    let (id, link) = path.into_inner();
    let book = book(&state, &session, &id).await?;
    if !session::form_csrf_ok(&session.csrf, form.csrf.as_deref()) {
        return page(
            &req,
            &state,
            &session,
            &book,
            Notice::Problem(EXPIRED.into()),
        )
        .await;
    }
    let Some(link) =
        links::revoke(&state.db, book.tenant.as_str(), book.id.as_ref(), &link).await?
    else {
        return Err(PageError::NotFound);
    };
    tracing::info!(link = %link.id, book.id = %book.id, "an advance-reader link was revoked");
    let done = format!(
        "The link for {} was revoked: it no longer opens.",
        link.reader
    );
    page(&req, &state, &session, &book, Notice::Done(done)).await
}
