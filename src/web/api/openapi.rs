//! The API's OpenAPI 3.1 document, served at `GET /api/v1/openapi.json`.
//!
//! Nothing here lists routes: the paths come from the `#[utoipa::path]` annotation of each
//! handler as `routes` registers it, and the schemas from the types the handlers really read
//! and answer with. What is left for this module is what no single handler owns: the API's
//! description and its security schemes (the error responses every route shares are
//! `web::error_responses`).

use actix_web::http::header;
use actix_web::{HttpResponse, get, web};
use utoipa::openapi::path::Paths;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{Components, RefOr, schema::Schema};
use utoipa::{Modify, OpenApi};
use utoipa_actix_web::OpenApiFactory;

use crate::web::error_responses::{
    BadRequest, CsrfFailed, Internal, NotAdmin, NotFound, RateLimited, Unauthorized, Unavailable,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Bindery API",
        version = env!("CARGO_PKG_VERSION"),
        description = "Upload manuscripts and get EPUB 3 books back. Every request but this \
            document's carries an API token (`bindery token create NAME`), either as \
            `Authorization: Bearer TOKEN` or, for e-book apps that only know HTTP Basic, as the \
            password with any user name; Bindery's own pages send their session cookie instead, \
            and with every write its CSRF token. Each token is a tenant, and a tenant only ever \
            sees its own books: anything else answers 404, never 403. Operations that need an \
            admin token (`bindery token create NAME --admin`) list the role `admin` in their \
            security requirements, and answer anyone else 404, as for a route that does not \
            exist. Errors are JSON: `{\"error\": {\"code\", \"message\", \"field\"}}` (and \
            `line` for an uploaded file's line), with a stable `code`.",
        license(name = "MIT OR Apache-2.0")
    ),
    servers((url = "/", description = "The Bindery server that serves this document")),
    tags(
        (name = "books", description = "Upload manuscripts, follow their conversion, download the EPUB."),
        (name = "styles", description = "Book styles: the built-in ones, and house styles \
            uploaded with their fonts and ornaments, which a book names by `style`."),
        (name = "catalog", description = "The tenant's ready books, as one list (the OPDS feed \
            at `/opds` has the same)."),
        (name = "webhooks", description = "Signed `book.ready` and `book.failed` events, sent \
            to the `callback_url` of an upload."),
        (name = "admin", description = "The job engine and the processes, for operators. \
            Every operation needs an admin token; anyone else gets 404."),
        (name = "meta", description = "The API's own description.")
    ),
    security(("bearer" = []), ("basic" = []), ("session" = [])),
    components(responses(
        BadRequest, Unauthorized, CsrfFailed, NotFound, NotAdmin, RateLimited, Internal,
        Unavailable
    )),
    modifiers(&SecuritySchemes)
)]
struct ApiDoc;

/// The ways to say who a request is from; which ones an operation takes is its `security`.
struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Components::new);
        let mut bearer = Http::new(HttpAuthScheme::Bearer);
        bearer.bearer_format = Some("bdy_…".into());
        bearer.description = Some("An API token: `Authorization: Bearer bdy_…`.".into());
        components.add_security_scheme("bearer", SecurityScheme::Http(bearer));
        let mut basic = Http::new(HttpAuthScheme::Basic);
        basic.description = Some(
            "An API token as the HTTP Basic password, with any user name (OPDS readers).".into(),
        );
        components.add_security_scheme("basic", SecurityScheme::Http(basic));
        let session = ApiKeyValue::with_description(
            crate::web::session::COOKIE,
            "The session cookie of Bindery's own pages, set by signing in at `/signin` with an \
             API token. A request that is not a GET, HEAD or OPTIONS and carries it must also \
             send the page's CSRF token in the `X-CSRF-Token` header, or it is refused with 403 \
             `csrf_failed`.",
        );
        components.add_security_scheme("session", SecurityScheme::ApiKey(ApiKey::Cookie(session)));
    }
}

/// The document for the routes of `api`, which must be the `/api/v1` scope, fully registered.
pub fn document(api: &impl OpenApiFactory) -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    let paths: Paths = api.paths();
    doc.paths.merge(paths);
    let mut schemas: Vec<(String, RefOr<Schema>)> = Vec::new();
    api.schemas(&mut schemas);
    doc.components
        .get_or_insert_with(Components::new)
        .schemas
        .extend(schemas);
    doc
}

/// The document, serialized once when the routes are built.
pub struct Document(web::Bytes);

impl Document {
    pub fn new(doc: &utoipa::openapi::OpenApi) -> Self {
        // Serializing plain maps and strings cannot fail; an empty object would fail the
        // validator loudly rather than hide anything.
        Document(web::Bytes::from(
            doc.to_json().unwrap_or_else(|_| "{}".into()),
        ))
    }
}

/// This document: the API described in OpenAPI 3.1.
///
/// Needs no token, so that tools can discover the API before they hold one.
#[utoipa::path(
    operation_id = "openapi_document",
    tag = "meta",
    security(()),
    responses(
        (status = 200, description = "The OpenAPI 3.1 document.", body = Object,
            content_type = "application/json")
    )
)]
#[get("/openapi.json")]
pub async fn openapi_json(doc: web::Data<Document>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(doc.0.clone())
}
