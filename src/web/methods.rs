//! Which HTTP methods the server answers, before anything is routed. A method is any token a
//! client likes (a request line may carry 30 KB of letters as its method), so a method the
//! server does not know is refused here with 405, and is counted in `/metrics` as `other`
//! ([`label`]): each one used to become a label value of its own, and memory grew without end.
//!
//! On the API (`/api/v1/…`), a known method that the path does not take, `OPTIONS` included,
//! is a 405 whose `Allow` names the methods it does take, read from the API's OpenAPI document,
//! which is generated from the handlers. Bindery sends no CORS headers: the API is for tools
//! and its own pages, which need no preflight.

use std::sync::Arc;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{Method, StatusCode, header};
use actix_web::middleware::Next;
use actix_web::{Error, HttpResponse, ResponseError};

use super::error::ApiError;

/// The methods some route of the server takes (`HEAD` wherever `GET`; see `head`), plus
/// `OPTIONS`, which is refused with `Allow`.
static KNOWN: [Method; 7] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::OPTIONS,
];

/// Where the API's routes begin.
const API: &str = "/api/v1/";

/// The method as a label value: one of [`KNOWN`], or `other`.
pub fn label(method: &Method) -> &'static str {
    KNOWN
        .iter()
        .find(|known| *known == method)
        .map_or("other", Method::as_str)
}

/// The API's routes and the methods each takes.
#[derive(Debug, Default)]
pub struct Allowed {
    routes: Vec<Route>,
}

#[derive(Debug)]
struct Route {
    /// The template's segments; `None` is a parameter (`{id}`), which matches any one segment.
    segments: Vec<Option<String>>,
    methods: Vec<Method>,
}

impl Allowed {
    /// The routes the API's OpenAPI document lists.
    pub fn of(doc: &utoipa::openapi::OpenApi) -> Self {
        let routes = doc
            .paths
            .paths
            .iter()
            .map(|(template, item)| {
                let segments = template
                    .trim_matches('/')
                    .split('/')
                    .map(|s| (!(s.starts_with('{') && s.ends_with('}'))).then(|| s.to_owned()))
                    .collect();
                let operations = [
                    (Method::GET, item.get.is_some()),
                    (Method::POST, item.post.is_some()),
                    (Method::PUT, item.put.is_some()),
                    (Method::PATCH, item.patch.is_some()),
                    (Method::DELETE, item.delete.is_some()),
                ];
                let methods = operations
                    .into_iter()
                    .filter_map(|(method, offered)| offered.then_some(method))
                    .collect();
                Route { segments, methods }
            })
            .collect();
        Allowed { routes }
    }

    /// The methods `path` takes, in `Allow`'s order, or `None` when no route has the path.
    fn methods(&self, path: &str) -> Option<Vec<Method>> {
        let given: Vec<&str> = path.trim_matches('/').split('/').collect();
        let mut found: Option<Vec<Method>> = None;
        for route in &self.routes {
            let matches = route.segments.len() == given.len()
                && route
                    .segments
                    .iter()
                    .zip(&given)
                    .all(|(segment, given)| segment.as_deref().is_none_or(|s| s == *given));
            if matches {
                found
                    .get_or_insert_with(Vec::new)
                    .extend(route.methods.iter().cloned());
            }
        }
        let mut methods = found?;
        if methods.contains(&Method::GET) {
            methods.push(Method::HEAD);
        }
        methods.sort_by_key(|m| KNOWN.iter().position(|k| k == m));
        methods.dedup();
        Some(methods)
    }
}

/// The middleware: answers 405 for an unknown method anywhere, and for a method an API path
/// does not take; everything else goes on to the routes.
pub async fn check(
    allowed: Arc<Allowed>,
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, Error> {
    let method = req.method();
    let known = KNOWN.contains(method);
    let api = req.path().starts_with(API);
    let refusal = match (api.then(|| allowed.methods(req.path())).flatten(), known) {
        (Some(methods), _) if !known || *method == Method::OPTIONS || !methods.contains(method) => {
            Some(not_allowed_on_api(method, req.path(), &methods))
        }
        (_, false) => Some(not_allowed_anywhere()),
        _ => None,
    };
    match refusal {
        Some(response) => Ok(req.into_response(response).map_into_right_body()),
        None => Ok(next.call(req).await?.map_into_left_body()),
    }
}

fn allow(methods: &[Method]) -> String {
    methods
        .iter()
        .map(Method::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

fn not_allowed_anywhere() -> HttpResponse {
    HttpResponse::MethodNotAllowed()
        .insert_header((header::ALLOW, "GET, HEAD, POST, DELETE"))
        .content_type("text/plain; charset=utf-8")
        .body("405 Method Not Allowed: Bindery answers GET, HEAD, POST and DELETE.\n")
}

fn not_allowed_on_api(method: &Method, path: &str, methods: &[Method]) -> HttpResponse {
    let allow = allow(methods);
    // The method is only named when it is one of ours: an unknown one can be any length.
    let said = if KNOWN.contains(method) {
        method.as_str()
    } else {
        "This method"
    };
    let mut response = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{said} is not allowed on {path}: use {allow}."),
    )
    .error_response();
    if let Ok(value) = header::HeaderValue::from_str(&allow) {
        response.headers_mut().insert(header::ALLOW, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed() -> Allowed {
        let route = |template: &str, methods: &[Method]| Route {
            segments: template
                .trim_matches('/')
                .split('/')
                .map(|s| (!s.starts_with('{')).then(|| s.to_owned()))
                .collect(),
            methods: methods.to_vec(),
        };
        Allowed {
            routes: vec![
                route("/api/v1/books", &[Method::GET, Method::POST]),
                route("/api/v1/books/{id}", &[Method::GET, Method::DELETE]),
                route("/api/v1/books/{id}/retry", &[Method::POST]),
            ],
        }
    }

    #[test]
    fn a_path_takes_the_methods_of_every_route_it_matches_and_head_with_get() {
        let allowed = allowed();
        assert_eq!(
            allowed.methods("/api/v1/books"),
            Some(vec![Method::GET, Method::HEAD, Method::POST])
        );
        assert_eq!(
            allowed.methods("/api/v1/books/b-1"),
            Some(vec![Method::GET, Method::HEAD, Method::DELETE])
        );
        assert_eq!(
            allowed.methods("/api/v1/books/b-1/retry"),
            Some(vec![Method::POST])
        );
        assert_eq!(allowed.methods("/api/v1/books/b-1/nothing"), None);
        assert_eq!(allowed.methods("/api/v1/nothing"), None);
    }

    #[test]
    fn an_unknown_method_is_labelled_other() {
        assert_eq!(label(&Method::GET), "GET");
        assert_eq!(label(&Method::OPTIONS), "OPTIONS");
        let odd = Method::from_bytes(b"FROBNICATE").expect("a token");
        assert_eq!(label(&odd), "other");
        assert_eq!(label(&Method::TRACE), "other");
    }
}
