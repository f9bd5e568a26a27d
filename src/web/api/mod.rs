//! The JSON API under `/api/v1`, for publishing tools, scripts and the app's pages. Every
//! request carries an API token (`Authorization: Bearer bdy_…`), or the pages' session cookie;
//! each token is a tenant, and a tenant only ever sees its own books: anything else is 404,
//! never 403, so ids cannot be probed.
//!
//! The API describes itself in OpenAPI 3.1 at `/api/v1/openapi.json`, generated from the
//! handlers (see `openapi`), and `tests/it/openapi.rs` calls every route it documents.
//!
//! # Adding a route
//!
//! 1. Annotate the handler with `#[utoipa::path(...)]` above its actix macro (`#[get("/…")]`):
//!    a unique `operation_id` (`list_jobs`), a `tag` (add new ones to `openapi::ApiDoc`), its
//!    `params(...)` and `request_body`, and *every* status it can answer, with the
//!    shared error responses from `web::error_responses` (`response = Unauthorized`,
//!    `NotFound`, `RateLimited`, `BadRequest`, `Internal` and `Unavailable` for anything that
//!    reaches storage; `CsrfFailed` for any write, since the pages make them with the session
//!    cookie; `NotAdmin` for an admin route) or `body = ErrorBody` (`web::error`) for its own
//!    errors. Types it reads or answers with derive `utoipa::ToSchema` (or
//!    `IntoParams` for a query). A route without a token says `security(())`; an admin route
//!    says `security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"]))`.
//! 2. Register it in `routes` below with `.service(module::handler)`, or an admin route in
//!    `admin::scope`. Registration goes through `utoipa_actix_web`'s scope, which only accepts
//!    annotated handlers, so a route cannot be served without being documented (never use
//!    `.route(...)` or `.map(...)` to get around it).
//!
//! `tests/it/openapi.rs` then calls the new route on its own. It only needs a fixture for a path
//! parameter or a request body it has not seen before, and says which one is missing.

pub(crate) mod admin;
pub(crate) mod book_log;
pub(crate) mod books;
pub mod limits;
pub(super) mod openapi;
mod previews;
mod revisions;
mod styles;
mod upload;
mod webhooks;

use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::{HttpResponse, ResponseError, web};

use super::error::ApiError;

/// The `/api/v1` scope with every route registered (see "Adding a route").
fn scope() -> utoipa_actix_web::scope::Scope<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    utoipa_actix_web::scope::scope("/api/v1")
        .service(openapi::openapi_json)
        .service(books::create)
        .service(books::list)
        .service(books::show)
        .service(books::epub)
        .service(books::pdf)
        .service(books::print_cover)
        .service(books::store_cover)
        .service(books::events)
        .service(books::delete)
        .service(books::retry)
        .service(revisions::create)
        .service(revisions::list)
        .service(revisions::show)
        .service(revisions::epub)
        .service(revisions::restore)
        .service(revisions::restyle)
        .service(previews::preview)
        .service(styles::list)
        .service(styles::show)
        .service(styles::add)
        .service(styles::remove)
        .service(revisions::changes)
        .service(book_log::show)
        .service(super::catalog::json_catalog)
        .service(webhooks::show_secret)
        .service(webhooks::rotate_secret)
        .service(admin::scope())
}

/// The API's routes and the methods each takes, from the same registration as the routes.
pub fn allowed_methods() -> super::methods::Allowed {
    super::methods::Allowed::of(&openapi::document(&scope()))
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    let api = scope();
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
