//! Who a request is from, for the API, the catalog and a book's files: an API token
//! (`Authorization: Bearer`, or the HTTP Basic password for e-book apps), or the pages' session
//! cookie, with its CSRF token on a write. As extractors: [`Caller`] for any tenant, [`Admin`]
//! for one with the admin role.

use std::future::Future;
use std::pin::Pin;

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, web};

use super::AppState;
use super::error::ApiError;
use crate::tokens::{self, Tenant};

/// The tenant a request acts for, and what it showed to prove it. Tools send
/// `Authorization: Bearer TOKEN`; e-book apps that only know HTTP Basic (OPDS readers) send the
/// token as the password, with any user name; the app's pages send the session cookie, and
/// with any write its CSRF token.
pub struct Caller(pub Tenant, pub Credential);

impl Caller {
    /// The tenant the request acts for, as the book layer names it.
    pub fn tenant(&self) -> crate::books::Tenant {
        crate::books::Tenant::of(&self.0)
    }
}

/// A caller holding an admin token. Anyone else gets 404, as for anything they may not see.
pub struct Admin(pub Tenant, pub Credential);

/// What a request authenticated with, for what outlives the request's own check (an event
/// stream, which must end when this does).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Credential {
    /// An API token, by its name (names are unique and never reused).
    Token { name: String },
    /// A session cookie, by its id's hash (what the database keeps), and its token's name.
    Session { hash: String, token: String },
}

impl Credential {
    /// The token behind it.
    pub fn token(&self) -> &str {
        match self {
            Credential::Token { name } => name,
            Credential::Session { token, .. } => token,
        }
    }
}

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
) -> Result<(Tenant, Credential), ApiError> {
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
            Some(tenant) => {
                let credential = Credential::Token {
                    name: tenant.name.clone(),
                };
                Ok((tenant, credential))
            }
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
            let credential = Credential::Session {
                hash: tokens::hash(&id),
                token: session.tenant.name.clone(),
            };
            Ok((session.tenant, credential))
        }
    }
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Caller, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let credentials = credentials(req);
        Box::pin(async move {
            let (tenant, credential) = authenticate(state, credentials).await?;
            Ok(Caller(tenant, credential))
        })
    }
}

impl FromRequest for Admin {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Admin, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let credentials = credentials(req);
        Box::pin(async move {
            let (tenant, credential) = authenticate(state, credentials).await?;
            if tenant.admin {
                Ok(Admin(tenant, credential))
            } else {
                Err(ApiError::not_found("route", "There is no such API route."))
            }
        })
    }
}
