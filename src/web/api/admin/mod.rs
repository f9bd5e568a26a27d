//! `/api/v1/admin`: the job engine and the processes, for operators and the admin pages. Every
//! route needs an admin token; anyone else gets 404, as for a route that does not exist.
//!
//! Handlers take the [`Admin`](crate::web::caller::Admin) extractor first and read their query strings as
//! plain strings, parsed in the handler: actix runs extractors side by side, so a typed query
//! that fails to parse would answer 400 before the token is checked, telling a non-admin that
//! the route exists.

mod jobs;
mod logs;
mod queues;
mod schedules;
mod tokens;
mod workers;

use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::web;
use utoipa_actix_web::scope::Scope;

/// The admin routes, registered and documented like the rest of the API (see "Adding a route"
/// there). Each operation names the role `admin` in its security requirements (OpenAPI 3.1 lets
/// a requirement list roles) and documents the 404 anyone else gets (`NotAdmin`).
pub fn scope() -> Scope<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    utoipa_actix_web::scope::scope("/admin")
        .service(jobs::list)
        .service(jobs::show)
        .service(jobs::retry)
        .service(jobs::cancel)
        .service(jobs::discard)
        .service(queues::list)
        .service(queues::pause)
        .service(queues::resume)
        .service(workers::list)
        .service(schedules::list)
        .service(logs::stream)
        .service(tokens::list)
        .service(tokens::create)
        .service(tokens::revoke)
        // A nested scope does not inherit the API's JSON 404.
        .default_service(web::to(super::not_found))
}
