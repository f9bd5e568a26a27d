//! The browser side of sessions: cookies, and the CSRF checks that go with them. What a
//! session *is* lives in [`crate::sessions`].

use actix_web::HttpRequest;
use actix_web::cookie::{Cookie, SameSite, time};

use crate::sessions::{self, LIFETIME, Session};

/// The session cookie: HttpOnly (scripts never see it), SameSite=Lax (other sites' forms
/// cannot send it), Secure whenever the request came over https.
pub const COOKIE: &str = "bindery_session";
/// Before sign-in there is no session to hold a CSRF token, so the sign-in form carries a
/// random value that must equal this cookie's (double submit): another site cannot read it.
pub const SIGNIN_COOKIE: &str = "bindery_signin";
/// The header the pages' scripts send the session's CSRF token in.
pub const CSRF_HEADER: &str = "X-CSRF-Token";
/// The form field that carries it in a plain form post.
pub const CSRF_FIELD: &str = "_csrf";

/// The live session the request's cookie names, if any.
pub async fn current(
    req: &HttpRequest,
    db: &crate::storage::Database,
) -> anyhow::Result<Option<Session>> {
    match req.cookie(COOKIE) {
        Some(cookie) => sessions::lookup(db, cookie.value()).await,
        None => Ok(None),
    }
}

/// Whether the request reached us over https, directly or through the platform's proxy.
fn secure(req: &HttpRequest) -> bool {
    req.connection_info().scheme() == "https"
}

fn cookie(
    req: &HttpRequest,
    name: &'static str,
    value: String,
    max_age: time::Duration,
) -> Cookie<'static> {
    Cookie::build(name, value)
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(secure(req))
        .max_age(max_age)
        .finish()
}

pub fn session_cookie(req: &HttpRequest, id: String) -> Cookie<'static> {
    let lifetime = i64::try_from(LIFETIME.as_secs()).unwrap_or(i64::MAX);
    cookie(req, COOKIE, id, time::Duration::seconds(lifetime))
}

pub fn signin_cookie(req: &HttpRequest, value: String) -> Cookie<'static> {
    cookie(req, SIGNIN_COOKIE, value, time::Duration::hours(1))
}

/// A cookie naming a ceremony in progress (`accounts::ceremonies`), for as long as it lasts.
pub fn ceremony_cookie(req: &HttpRequest, name: &'static str, value: String) -> Cookie<'static> {
    let lifetime = i64::try_from(crate::accounts::ceremonies::LIFETIME.as_secs()).unwrap_or(600);
    cookie(req, name, value, time::Duration::seconds(lifetime))
}

/// A cookie that tells the browser to forget `name`.
pub fn removal(req: &HttpRequest, name: &'static str) -> Cookie<'static> {
    cookie(req, name, String::new(), time::Duration::ZERO)
}

/// Whether a form's CSRF value matches the one the session (or sign-in cookie) expects.
pub fn form_csrf_ok(expected: &str, given: Option<&str>) -> bool {
    given.is_some_and(|given| sessions::csrf_matches(expected, given))
}

/// A form whose only field is its CSRF token (a button that revokes, disables, signs out).
#[derive(serde::Deserialize)]
pub struct CsrfForm {
    #[serde(rename = "_csrf")]
    pub csrf: Option<String>,
}

/// Whether a request made before sign-in carries its sign-in cookie's value: in the form's
/// `_csrf` field (`given`), or, from a script, in the `X-CSRF-Token` header.
pub fn signin_csrf_ok(req: &HttpRequest, given: Option<&str>) -> bool {
    let given = given.or_else(|| req.headers().get(CSRF_HEADER).and_then(|v| v.to_str().ok()));
    req.cookie(SIGNIN_COOKIE)
        .is_some_and(|expected| form_csrf_ok(expected.value(), given))
}
