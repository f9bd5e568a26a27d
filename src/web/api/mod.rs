//! The JSON API under `/api/v1`, for publishing tools, scripts and the app's pages. Every
//! request carries an API token (`Authorization: Bearer bdy_…`), or the pages' session cookie;
//! each token is a tenant, and a tenant only ever sees its own books: anything else is 404,
//! never 403, so ids cannot be probed.
//!
//! The API describes itself in OpenAPI 3.1 at `/api/v1/openapi.json`, generated from the
//! handlers (see `openapi`), and `tests/openapi.rs` calls every route it documents.
//!
//! # Adding a route
//!
//! 1. Annotate the handler with `#[utoipa::path(...)]` above its actix macro (`#[get("/…")]`):
//!    a unique `operation_id` (`list_jobs`), a `tag` (add new ones to `openapi::ApiDoc`), its
//!    `params(...)` and `request_body`, and *every* status it can answer, with the
//!    shared error responses from `openapi` (`response = Unauthorized`, `NotFound`,
//!    `RateLimited`, `Unavailable`, `BadRequest`; `CsrfFailed` for any write, since the pages
//!    make them with the session cookie; `NotAdmin` for an admin route) or `body = ErrorBody`
//!    for its own errors. Types it reads or answers with derive `utoipa::ToSchema` (or
//!    `IntoParams` for a query). A route without a token says `security(())`; an admin route
//!    says `security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"]))`.
//! 2. Register it in `routes` below with `.service(module::handler)`, or an admin route in
//!    `admin::scope`. Registration goes through `utoipa_actix_web`'s scope, which only accepts
//!    annotated handlers, so a route cannot be served without being documented (never use
//!    `.route(...)` or `.map(...)` to get around it).
//!
//! `tests/openapi.rs` then calls the new route on its own. It only needs a fixture for a path
//! parameter or a request body it has not seen before, and says which one is missing.

pub(crate) mod admin;
pub(crate) mod books;
pub mod limits;
pub(super) mod openapi;
mod upload;
mod webhooks;

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, HttpResponse, ResponseError, web};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_actix_web::scope;

use super::AppState;
use crate::tokens::{self, Tenant};

pub fn routes(cfg: &mut web::ServiceConfig) {
    let api = scope("/api/v1")
        .service(openapi::openapi_json)
        .service(books::create)
        .service(books::list)
        .service(books::show)
        .service(books::epub)
        .service(books::events)
        .service(books::delete)
        .service(books::retry)
        .service(super::catalog::json_catalog)
        .service(webhooks::show_secret)
        .service(webhooks::rotate_secret)
        .service(admin::scope());
    let document = openapi::Document::new(&openapi::document(&api));
    cfg.service(
        api.app_data(web::Data::new(document))
            .app_data(web::QueryConfig::default().error_handler(|e, _| {
                ApiError::bad_request(
                    "invalid_parameter",
                    format!("The query string is invalid: {e}."),
                )
                .into()
            }))
            .default_service(web::to(not_found)),
    );
}

async fn not_found() -> HttpResponse {
    ApiError::not_found("route", "There is no such API route.").error_response()
}

/// An API failure: JSON with a stable `code`, a `message` for a person, and the `field` at
/// fault when there is one. Never a bare 500 with a stack trace.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    field: Option<String>,
    retry_after: Option<u64>,
}

/// Every error the API answers.
#[derive(Serialize, ToSchema)]
#[schema(as = Error)]
struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize, ToSchema)]
struct ErrorDetail<'a> {
    /// Stable, for programs to branch on (`book_not_found`, `too_large`, `rate_limited`, …).
    code: &'a str,
    /// For a person: what went wrong and what to do about it.
    message: &'a str,
    /// The parameter, header or form field at fault, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
}

/// The `before` cursor of a paged list, the one rule for every route that takes it: absent (or
/// empty) means the first page; otherwise it must be the `next` of an earlier page, which
/// `cursor` recognises (`what` names its form for the message), or the request is a 400
/// `invalid_parameter` naming `before` rather than a silently empty page.
pub(crate) fn before<T>(
    value: Option<&str>,
    what: &str,
    cursor: impl FnOnce(&str) -> Option<T>,
) -> Result<Option<T>, ApiError> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match cursor(value) {
        Some(cursor) => Ok(Some(cursor)),
        None => Err(ApiError::bad_request(
            "invalid_parameter",
            format!("before must be the `next` of an earlier page ({what}); got {value:?}."),
        )
        .field("before")),
    }
}

/// A book list's cursor: a book id.
pub(crate) fn book_cursor(value: &str) -> Option<String> {
    uuid::Uuid::parse_str(value).ok().map(|_| value.to_owned())
}

/// A job list's cursor: a job id.
pub(crate) fn job_cursor(value: &str) -> Option<i64> {
    value.parse::<i64>().ok().filter(|id| *id >= 1)
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            field: None,
            retry_after: None,
        }
    }

    /// Seconds until the client may try again (`Retry-After`).
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// What the error says to a person.
    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn not_found(what: &str, message: impl Into<String>) -> Self {
        let code = if what == "book" {
            "book_not_found"
        } else {
            "not_found"
        };
        Self::new(StatusCode::NOT_FOUND, code, message)
    }

    /// Something on our side failed: logged in full, answered in general terms, except that a
    /// full disk is named (507), since only the operator can mend it and retrying will not.
    pub fn internal(error: &anyhow::Error) -> Self {
        if out_of_space(error) {
            tracing::error!(error = %format!("{error:#}"), "API request failed: storage is out of space");
            return Self::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "insufficient_storage",
                "The server is out of storage space, so it could not store this. Nothing was kept; try again once the operator has freed space.",
            );
        }
        tracing::error!(error = %format!("{error:#}"), "API request failed");
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "Bindery could not complete the request (storage is unavailable or failed). Try again shortly.",
        )
    }
}

/// Whether an error comes from a full disk (or quota): `ENOSPC`/`EDQUOT` from the file system
/// (the blob store's writes), SQLite's `SQLITE_FULL`, or PostgreSQL's `disk_full` (53100).
pub(crate) fn out_of_space(error: &anyhow::Error) -> bool {
    const SQLITE_FULL: &str = "13";
    let io_full = |e: &std::io::Error| {
        e.kind() == std::io::ErrorKind::StorageFull
            || matches!(e.raw_os_error(), Some(code) if code == libc_enospc() || code == libc_edquot())
    };
    error.chain().any(|cause| {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(cause);
        while let Some(e) = source {
            if let Some(io) = e.downcast_ref::<std::io::Error>()
                && io_full(io)
            {
                return true;
            }
            if let Some(sqlx::Error::Database(db)) = e.downcast_ref::<sqlx::Error>()
                && matches!(db.code().as_deref(), Some(SQLITE_FULL | "53100"))
            {
                return true;
            }
            source = e.source();
        }
        false
    })
}

fn libc_enospc() -> i32 {
    nix::errno::Errno::ENOSPC as i32
}

fn libc_edquot() -> i32 {
    nix::errno::Errno::EDQUOT as i32
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        if self.status == StatusCode::UNAUTHORIZED {
            response.insert_header((header::WWW_AUTHENTICATE, "Bearer realm=\"bindery\""));
        }
        if let Some(seconds) = self.retry_after {
            response.insert_header((header::RETRY_AFTER, seconds.to_string()));
        }
        response.json(ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: &self.message,
                field: self.field.as_deref(),
            },
        })
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        ApiError::internal(&e)
    }
}

/// The tenant a request acts for. Tools send `Authorization: Bearer TOKEN`; e-book apps that
/// only know HTTP Basic (OPDS readers) send the token as the password, with any user name; the
/// app's pages send the session cookie, and with any write its CSRF token.
pub struct Caller(pub Tenant);

/// A caller holding an admin token. Anyone else gets 404, as for anything they may not see.
pub struct Admin(pub Tenant);

/// How a request says who it is from.
enum Credentials {
    Token(String),
    Session {
        id: String,
        csrf: Option<String>,
        write: bool,
    },
    Missing,
}

fn credentials(req: &HttpRequest) -> Credentials {
    if let Some(token) = request_token(req) {
        return Credentials::Token(token);
    }
    match req.cookie(crate::web::session::COOKIE) {
        Some(cookie) => Credentials::Session {
            id: cookie.value().to_owned(),
            csrf: req
                .headers()
                .get(crate::web::session::CSRF_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            write: !req.method().is_safe(),
        },
        None => Credentials::Missing,
    }
}

/// The token a request carries, from `Bearer` or `Basic` authorization.
fn request_token(req: &HttpRequest) -> Option<String> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = value.split_once(' ')?;
    if scheme.eq_ignore_ascii_case("bearer") {
        return Some(rest.trim().to_owned());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        use base64::Engine as _;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest.trim())
            .ok()?;
        let decoded = String::from_utf8(decoded).ok()?;
        let (_, password) = decoded.split_once(':')?;
        return Some(password.to_owned());
    }
    None
}

async fn authenticate(
    state: Option<web::Data<AppState>>,
    credentials: Credentials,
) -> Result<Tenant, ApiError> {
    let unauthorized = |message: &str| {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message).field("Authorization")
    };
    let Some(state) = state else {
        return Err(ApiError::internal(&anyhow::anyhow!("no application state")));
    };
    match credentials {
        Credentials::Missing => Err(unauthorized(
            "Send an API token: `Authorization: Bearer bdy_…` (create one with `bindery token create NAME`).",
        )),
        Credentials::Token(token) => match tokens::authenticate(&state.db, &token).await? {
            Some(tenant) => Ok(tenant),
            None => Err(unauthorized(
                "The API token is not valid (mistyped, or revoked). Check it, or create a new one.",
            )),
        },
        Credentials::Session { id, csrf, write } => {
            let Some(session) = crate::sessions::lookup(&state.db, &id).await? else {
                return Err(unauthorized(
                    "Your session has ended (signed out, expired, or its token was revoked). Sign in again.",
                ));
            };
            let csrf_ok = csrf
                .as_deref()
                .is_some_and(|given| crate::sessions::csrf_matches(&session.csrf, given));
            if write && !csrf_ok {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "csrf_failed",
                    "This change came with your session cookie but without the page's CSRF token, so it was refused. Reload the page and try again.",
                )
                .field(crate::web::session::CSRF_HEADER));
            }
            Ok(session.tenant)
        }
    }
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Caller, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let credentials = credentials(req);
        Box::pin(async move { authenticate(state, credentials).await.map(Caller) })
    }
}

impl FromRequest for Admin {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Admin, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let credentials = credentials(req);
        Box::pin(async move {
            let tenant = authenticate(state, credentials).await?;
            if tenant.admin {
                Ok(Admin(tenant))
            } else {
                Err(ApiError::not_found("route", "There is no such API route."))
            }
        })
    }
}
