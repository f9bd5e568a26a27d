//! The caller's catalog: `GET /opds` (the OPDS acquisition feed, for e-reader apps) and
//! `GET /api/v1/catalog` (JSON). Both serve what `catalog.refresh` stored; nothing is built
//! per request. A tenant with nothing stored yet gets an empty catalog and a refresh enqueued.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, ResponseError, get, web};

use super::AppState;
use super::caller::Caller;
use super::conditional::{self, Answer};
use super::error::ApiError;
use super::error_responses::{Internal, Unauthorized, Unavailable};
use crate::books::{self, Tenant, keys};
use crate::catalog::{Catalog, opds};

/// E-reader apps prompt for a user name and password on this challenge; the password is the
/// API token.
const BASIC_CHALLENGE: &str = "Basic realm=\"Bindery\"";

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(opds_feed);
}

#[get("/opds")]
async fn opds_feed(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Result<Caller, ApiError>,
) -> HttpResponse {
    let caller = match caller {
        Ok(caller) => caller,
        Err(e) => {
            let mut response = e.error_response();
            if e.status_code() == StatusCode::UNAUTHORIZED {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(BASIC_CHALLENGE),
                );
            }
            return response;
        }
    };
    let tenant = caller.tenant();
    match serve(
        &req,
        &state,
        &tenant,
        &keys::catalog_opds(&tenant),
        opds::MEDIA_TYPE,
    )
    .await
    {
        Ok(Some(response)) => response,
        Ok(None) => match opds::render(&Catalog::empty(&tenant)) {
            Ok(feed) => placeholder(feed, opds::MEDIA_TYPE),
            Err(e) => ApiError::internal(&e).error_response(),
        },
        Err(e) => e.error_response(),
    }
}

/// The stored document's version: send it back in `If-None-Match` (its OpenAPI description).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)] // never built: `serve` reads the header
struct IfNoneMatch {
    /// The `ETag` of a catalog fetched before: if the catalog has not changed since, the
    /// answer is 304 without a body.
    #[param(rename = "If-None-Match", required = false)]
    etag: String,
}

/// The catalog
///
/// The tenant's ready books, most recently published first: the same list as the OPDS feed
/// at `/opds`, kept up to date by a background job rather than built per request. Until the
/// first refresh has run the catalog is empty, and this request enqueues one.
#[utoipa::path(
    operation_id = "show_catalog",
    tag = "catalog",
    params(IfNoneMatch),
    responses(
        (status = 200, description = "The catalog. An empty placeholder, before the first \
            refresh, has `Cache-Control: no-store` and no `ETag`.", body = Catalog, headers(
            ("ETag" = String, description = "The catalog's version, for `If-None-Match`."),
            ("Cache-Control" = String, description = "`private, no-cache` (`no-store` for the \
                placeholder)")
        )),
        (status = 304, description = "Not modified: the catalog is still the one `If-None-Match` \
            names.", headers(
            ("ETag" = String, description = "The catalog's version.")
        )),
        (status = 401, response = Unauthorized),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/catalog")]
pub async fn json_catalog(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Caller,
) -> Result<HttpResponse, ApiError> {
    let tenant = caller.tenant();
    let media_type = "application/json";
    match serve(
        &req,
        &state,
        &tenant,
        &keys::catalog_json(&tenant),
        media_type,
    )
    .await?
    {
        Some(response) => Ok(response),
        None => Ok(placeholder(Catalog::empty(&tenant).to_json()?, media_type)),
    }
}

/// The stored document with an ETag (304 when the client has it), or `None` when there is none
/// yet, in which case a refresh is enqueued.
async fn serve(
    req: &HttpRequest,
    state: &AppState,
    tenant: &Tenant,
    key: &str,
    media_type: &'static str,
) -> Result<Option<HttpResponse>, ApiError> {
    let Some(bytes) = state.blobs.get_opt(key).await? else {
        // A burst of requests makes one job: the refresh's unique key holds while it is queued.
        if let Err(e) = state.queue.enqueue(books::refresh_catalog(tenant)).await {
            tracing::warn!(%tenant, error = %format!("{e:#}"), "could not enqueue a catalog refresh");
        }
        return Ok(None);
    };
    Ok(Some(
        Answer::new(req, conditional::etag(&bytes))
            // Per caller: shared caches must not keep it, and clients revalidate each time.
            .header((header::CACHE_CONTROL, "private, no-cache"))
            .header((header::VARY, "Authorization"))
            .body(media_type, bytes),
    ))
}

/// An empty catalog, until the first refresh stores the real one: never cached.
fn placeholder(body: Vec<u8>, media_type: &'static str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(media_type)
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::VARY, "Authorization"))
        .body(body)
}
