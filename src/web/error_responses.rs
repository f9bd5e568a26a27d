//! The error responses routes share, for the OpenAPI document. A route lists the ones it can
//! give with `(status = 401, response = Unauthorized)`; the body is always the one error
//! schema, [`ErrorBody`].

use utoipa::ToResponse;

use super::error::ErrorBody;

/// The request is malformed: a parameter, header or form field is invalid (`field` names it).
#[derive(ToResponse)]
#[allow(dead_code)] // a schema for the document, never built
pub struct BadRequest(ErrorBody<'static>);

/// No API token, or one that is mistyped or revoked, or a session that has ended (`code` is
/// `unauthorized`).
#[derive(ToResponse)]
#[response(headers(("WWW-Authenticate" = String, description = "`Bearer realm=\"bindery\"`")))]
#[allow(dead_code)]
pub struct Unauthorized(ErrorBody<'static>);

/// The request came with the session cookie but without the session's CSRF token in
/// `X-CSRF-Token` (`code` is `csrf_failed`, `field` names the header): nothing was changed.
/// Requests with an API token never get it.
#[derive(ToResponse)]
#[allow(dead_code)]
pub struct CsrfFailed(ErrorBody<'static>);

/// There is no such book for this token (`code` is `book_not_found`), whether it never existed,
/// was deleted, or belongs to another tenant.
#[derive(ToResponse)]
#[allow(dead_code)]
pub struct NotFound(ErrorBody<'static>);

/// The token is not an admin token (`code` is `not_found`): admin routes answer anyone else
/// as if they did not exist.
#[derive(ToResponse)]
#[allow(dead_code)]
pub struct NotAdmin(ErrorBody<'static>);

/// This token made too many writes (uploads, deletes, retries) recently (`code` is
/// `rate_limited`); `Retry-After` says when the next one is allowed.
#[derive(ToResponse)]
#[response(headers(("Retry-After" = u64, description = "Seconds until the next write is allowed.")))]
#[allow(dead_code)]
pub struct RateLimited(ErrorBody<'static>);

/// Bindery failed through a fault of its own (`code` is `internal`), which retrying will not
/// mend; `request_id` names the request in the operator's log.
#[derive(ToResponse)]
#[allow(dead_code)]
pub struct Internal(ErrorBody<'static>);

/// Storage (the database or the blob store) could not be reached or did not answer in time
/// (`code` is `unavailable`); try again shortly.
#[derive(ToResponse)]
#[allow(dead_code)]
pub struct Unavailable(ErrorBody<'static>);
