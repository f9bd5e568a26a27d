//! The frame every page of the app is drawn in (the header, its navigation, the page's
//! scripts), the pages' errors as pages, and who is visiting. Below the pages and the file
//! handlers alike: a book's file that cannot be shown to a person is this frame's Not found.

use std::future::Future;
use std::pin::Pin;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{StatusCode, header};
use actix_web::middleware::Next;
use actix_web::{FromRequest, HttpRequest, HttpResponse, ResponseError, web};
use maud::{DOCTYPE, Markup, html};

use super::AppState;
use super::error::ApiError;
use super::fault::Fault;
use super::request_id::RequestId;
use crate::sessions::Session;

/// Where a page sits in the main navigation, which marks it (`aria-current`): the page itself
/// (`page`), or a page within the section (`true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    None,
    Books,
    Book,
    Upload,
    Styles,
    Admin,
    People,
    /// A page under `/admin`.
    AdminPart,
}

impl Nav {
    /// The `aria-current` of the link to `href`, if this page is it or is within it.
    fn current(self, href: &str) -> Option<&'static str> {
        match (self, href) {
            (Nav::Books, "/books")
            | (Nav::Upload, "/books/new")
            | (Nav::Styles, "/styles")
            | (Nav::Admin, "/admin")
            | (Nav::People, "/people") => Some("page"),
            (Nav::Book, "/books") | (Nav::AdminPart, "/admin") => Some("true"),
            _ => None,
        }
    }
}

/// A page's frame: the header with navigation, and the page's own scripts.
pub(super) fn layout(
    title: &str,
    session: Option<&Session>,
    scripts: &[&str],
    body: Markup,
) -> Markup {
    layout_in(Nav::None, title, session, scripts, body)
}

/// [`layout`] for a page of the main navigation, which marks where it is.
pub(super) fn layout_in(
    nav: Nav,
    title: &str,
    session: Option<&Session>,
    scripts: &[&str],
    body: Markup,
) -> Markup {
    let link = |href: &'static str, label: &'static str| {
        html! { a href=(href) aria-current=[nav.current(href)] { (label) } }
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Bindery" }
                link rel="stylesheet" href="/static/bindery.css";
                link rel="icon" href="/static/favicon.svg" type="image/svg+xml";
                @if let Some(session) = session {
                    meta name="csrf-token" content=(session.csrf);
                }
                script src="/static/app.js" defer {}
                @for script in scripts {
                    script src=(script) defer {}
                }
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.bar {
                    a.brand href="/" { "Bindery" }
                    @if let Some(session) = session {
                        nav aria-label="Main" {
                            (link("/books", "Books"))
                            (link("/books/new", "Upload"))
                            (link("/styles", "Styles"))
                            @if session.tenant.admin || session.person.as_ref().is_some_and(|p| p.role.manages_people()) {
                                (link("/people", "People"))
                            }
                            @if session.tenant.admin {
                                (link("/admin", "Admin"))
                            }
                        }
                        form.signout method="post" action="/signout" {
                            input type="hidden" name=(super::session::CSRF_FIELD) value=(session.csrf);
                            a.who href="/account" { (session.person.as_ref().map_or(session.tenant.name.as_str(), |p| p.name.as_str())) }
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main #main { (body) }
            }
        }
    }
}

pub(super) fn html_response(status: StatusCode, markup: Markup) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(markup.into_string())
}

/// Where this site's addresses start, for links it gives out (an invitation's, an advance
/// copy's) and what a provider must see (a passkey's origin, single sign-on's callback):
/// `APP_URL` when set, else the scheme and host the browser used, through the platform's proxy.
pub(crate) fn origin(req: &HttpRequest, state: &AppState) -> String {
    match &state.config.public_url {
        Some(url) => url.as_str().trim_end_matches('/').to_owned(),
        None => {
            let info = req.connection_info();
            format!("{}://{}", info.scheme(), info.host())
        }
    }
}

/// Whether `next` is a path on this site, so a sign-in link cannot send anyone elsewhere.
pub(super) fn local_path(next: &str) -> bool {
    next.starts_with('/') && !next.starts_with("//") && !next.starts_with("/\\")
}

/// Why a page could not be shown, rendered as a page (never a stack trace).
#[derive(Debug)]
pub enum PageError {
    /// Not signed in: go to the sign-in page, then come back.
    SignIn {
        next: String,
    },
    NotFound,
    /// A query parameter the page cannot use (a `before` that is no page's `next`): 400.
    BadRequest(String),
    /// A failure on the server's side, already logged with the request's id.
    Failed {
        fault: Fault,
        request_id: Option<RequestId>,
    },
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageError::SignIn { .. } => f.write_str("sign in required"),
            PageError::NotFound => f.write_str("not found"),
            PageError::BadRequest(message) => write!(f, "bad request: {message}"),
            PageError::Failed { fault, .. } => write!(f, "failed: {fault:?}"),
        }
    }
}

impl From<anyhow::Error> for PageError {
    fn from(e: anyhow::Error) -> Self {
        let (fault, request_id) = Fault::report(&e, "page");
        PageError::Failed { fault, request_id }
    }
}

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        match e.status_code() {
            StatusCode::NOT_FOUND => PageError::NotFound,
            StatusCode::BAD_REQUEST => PageError::BadRequest(e.message().to_owned()),
            _ => match e.fault() {
                // Logged where it was made.
                Some(fault) => PageError::Failed {
                    fault,
                    request_id: RequestId::current(),
                },
                // An answer meant for the API that a page cannot give: the page's fault.
                None => PageError::from(anyhow::anyhow!("a page got an API answer: {e}")),
            },
        }
    }
}

impl ResponseError for PageError {
    fn status_code(&self) -> StatusCode {
        match self {
            PageError::SignIn { .. } => StatusCode::SEE_OTHER,
            PageError::NotFound => StatusCode::NOT_FOUND,
            PageError::BadRequest(_) => StatusCode::BAD_REQUEST,
            PageError::Failed { fault, .. } => fault.status(),
        }
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            PageError::SignIn { next } => {
                let target = format!(
                    "/signin?next={}",
                    url::form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
                );
                HttpResponse::SeeOther()
                    .insert_header((header::LOCATION, target))
                    .finish()
            }
            PageError::NotFound => error_page(
                StatusCode::NOT_FOUND,
                "Not found",
                html! {
                    h1 { "Not found" }
                    p { "There is nothing here, or it belongs to someone else. " a href="/books" { "Back to your books" } "." }
                },
            ),
            PageError::BadRequest(message) => error_page(
                StatusCode::BAD_REQUEST,
                "Bad request",
                html! {
                    h1 { "Bindery cannot show this page" }
                    p { (message) " " a href="/books" { "Back to your books" } "." }
                },
            ),
            PageError::Failed { fault, request_id } => {
                let (title, why) = match fault {
                    Fault::Unavailable => (
                        "Unavailable",
                        "Its storage is unavailable. Try again in a moment; if it persists, the operator's logs say why.",
                    ),
                    Fault::OutOfSpace => (
                        "Out of space",
                        "Its storage is full. Try again once the operator has freed space.",
                    ),
                    Fault::Bug => (
                        "Server error",
                        "It failed through a fault of its own, which trying again will not mend. The operator's logs say why.",
                    ),
                };
                let mut response = html_response(
                    fault.status(),
                    layout(
                        title,
                        None,
                        &[],
                        html! {
                            h1 { "Bindery could not show this page" }
                            p { (why) }
                            @if let Some(id) = request_id {
                                p { "Request id: " code { (id.as_str()) } }
                            }
                        },
                    ),
                );
                if let Some(seconds) = fault.retry_after() {
                    response
                        .headers_mut()
                        .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
                }
                response
            }
        }
    }
}

/// An error page as rendered for anyone: [`with_navigation`] renders it again, with the
/// navigation, for a person who is signed in, since an error has no session to hand.
#[derive(Clone)]
struct ErrorPage {
    title: &'static str,
    body: Markup,
}

fn error_page(status: StatusCode, title: &'static str, body: Markup) -> HttpResponse {
    let mut response = html_response(status, layout(title, None, &[], body.clone()));
    response.extensions_mut().insert(ErrorPage { title, body });
    response
}

/// Middleware: an error page (a 404, a 400) shown to a signed-in person keeps the app's
/// navigation. Pages that failed for want of storage are left as they are: looking the session
/// up would wait on the same storage.
pub async fn with_navigation(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let response = next.call(req).await?;
    let Some(page) = response.response().extensions().get::<ErrorPage>().cloned() else {
        return Ok(response.map_into_boxed_body());
    };
    let Some(state) = response.request().app_data::<web::Data<AppState>>() else {
        return Ok(response.map_into_boxed_body());
    };
    // No session (or none to be read) is the page as it was: for anyone.
    let Ok(Some(session)) = super::session::current(response.request(), &state.db).await else {
        return Ok(response.map_into_boxed_body());
    };
    let html = layout(page.title, Some(&session), &[], page.body).into_string();
    Ok(response.map_body(|_, _| BoxBody::new(html)))
}

/// What answers a path no route takes: the API's JSON error under `/api` (what a client of the
/// API parses), the app's Not found page anywhere else.
pub async fn unmatched(req: HttpRequest) -> HttpResponse {
    let path = req.path();
    if path == "/api" || path.starts_with("/api/") {
        return ApiError::not_found("route", "There is no such API route.").error_response();
    }
    PageError::NotFound.error_response()
}

/// A signed-in person, for pages. Without a live session the page redirects to sign in.
pub struct Visitor(pub Session);

impl FromRequest for Visitor {
    type Error = PageError;
    type Future = Pin<Box<dyn Future<Output = Result<Visitor, PageError>>>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let Some(state) = req.app_data::<web::Data<AppState>>() else {
                return Err(anyhow::anyhow!("no application state").into());
            };
            match super::session::current(&req, &state.db).await? {
                Some(session) => Ok(Visitor(session)),
                None => {
                    let next = match req.uri().path_and_query() {
                        Some(pq) => pq.as_str().to_owned(),
                        None => req.path().to_owned(),
                    };
                    Err(PageError::SignIn { next })
                }
            }
        })
    }
}

/// A signed-in admin. Anyone else is told there is nothing here, as for any page they may
/// not see.
pub struct AdminVisitor(pub Session);

impl FromRequest for AdminVisitor {
    type Error = PageError;
    type Future = Pin<Box<dyn Future<Output = Result<AdminVisitor, PageError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut actix_web::dev::Payload) -> Self::Future {
        let visitor = Visitor::from_request(req, payload);
        Box::pin(async move {
            let Visitor(session) = visitor.await?;
            if session.tenant.admin {
                Ok(AdminVisitor(session))
            } else {
                Err(PageError::NotFound)
            }
        })
    }
}
