//! Signing in with an API token, and out again.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use maud::{Markup, html};
use serde::Deserialize;

use crate::sessions;
use crate::web::AppState;
use crate::web::frame::{PageError, html_response, layout, local_path};
use crate::web::session::{self, CSRF_FIELD, SIGNIN_COOKIE};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(home)
        .service(signin_form)
        .service(sign_in)
        .service(signout);
}

#[get("/")]
async fn home(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, PageError> {
    let target = match session::current(&req, &state.db).await? {
        Some(_) => "/books",
        None => "/signin",
    };
    Ok(HttpResponse::SeeOther()
        .insert_header((header::LOCATION, target))
        .finish())
}

#[derive(Deserialize)]
struct Next {
    next: Option<String>,
}

#[get("/signin")]
async fn signin_form(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<Next>,
) -> Result<HttpResponse, PageError> {
    let next = query.next.clone().filter(|n| local_path(n));
    if session::current(&req, &state.db).await?.is_some() {
        return Ok(HttpResponse::SeeOther()
            .insert_header((header::LOCATION, next.unwrap_or_else(|| "/books".into())))
            .finish());
    }
    Ok(signin_page(&req, StatusCode::OK, next.as_deref(), None))
}

/// The sign-in form, with a fresh double-submit CSRF value in the form and in a cookie.
fn signin_page(
    req: &HttpRequest,
    status: StatusCode,
    next: Option<&str>,
    problem: Option<&str>,
) -> HttpResponse {
    let csrf = sessions::random_hex();
    let body: Markup = html! {
        h1 { "Sign in" }
        p.lede { "Sign in with your API token: it starts with " code { "bdy_" } ". If you have none, ask the operator of this Bindery for one. "
            "(The operator's first one is the server's " code { "BINDERY_ADMIN_TOKEN" } ".)" }
        @if let Some(problem) = problem {
            p.error role="alert" #signin-error { (problem) }
        }
        form.stack method="post" action="/signin" {
            input type="hidden" name=(CSRF_FIELD) value=(csrf);
            @if let Some(next) = next {
                input type="hidden" name="next" value=(next);
            }
            label for="token" { "API token" }
            input #token type="password" name="token" required autocomplete="current-password"
                spellcheck="false" autofocus aria-describedby=[problem.map(|_| "signin-error")];
            button type="submit" { "Sign in" }
        }
    };
    let mut response = html_response(status, layout("Sign in", None, &[], body));
    if let Err(e) = response.add_cookie(&session::signin_cookie(req, csrf)) {
        tracing::warn!(error = %e, "could not set the sign-in cookie");
    }
    response
}

#[derive(Deserialize)]
struct SignIn {
    token: String,
    #[serde(rename = "_csrf")]
    csrf: Option<String>,
    next: Option<String>,
}

#[post("/signin")]
async fn sign_in(
    req: HttpRequest,
    state: web::Data<AppState>,
    form: web::Form<SignIn>,
) -> Result<HttpResponse, PageError> {
    let next = form.next.clone().filter(|n| local_path(n));
    let expected = req.cookie(SIGNIN_COOKIE).map(|c| c.value().to_owned());
    if !expected.is_some_and(|e| session::form_csrf_ok(&e, form.csrf.as_deref())) {
        return Ok(signin_page(
            &req,
            StatusCode::FORBIDDEN,
            next.as_deref(),
            Some(
                "The sign-in form had expired (or your browser blocks cookies). Please enter the token again.",
            ),
        ));
    }
    let Some((id, session)) = sessions::create(&state.db, form.token.trim()).await? else {
        // 200, not 401: the browser shows the form again, and logs no failed load for it.
        return Ok(signin_page(
            &req,
            StatusCode::OK,
            next.as_deref(),
            Some(
                "That token is not valid: it may be mistyped or revoked. Check it, or ask the operator for a new one.",
            ),
        ));
    };
    tracing::info!(token.name = %session.tenant.name, "signed in");
    let mut response = HttpResponse::SeeOther()
        .insert_header((header::LOCATION, next.unwrap_or_else(|| "/books".into())))
        .finish();
    let cookies = [
        session::session_cookie(&req, id),
        session::removal(&req, SIGNIN_COOKIE),
    ];
    for cookie in &cookies {
        response
            .add_cookie(cookie)
            .map_err(|e| PageError::from(anyhow::anyhow!("setting a cookie: {e}")))?;
    }
    Ok(response)
}

#[derive(Deserialize)]
struct SignOut {
    #[serde(rename = "_csrf")]
    csrf: Option<String>,
}

#[post("/signout")]
async fn signout(
    req: HttpRequest,
    state: web::Data<AppState>,
    form: web::Form<SignOut>,
) -> Result<HttpResponse, PageError> {
    if let Some(session) = session::current(&req, &state.db).await? {
        // Without the token another site could sign people out; harmless, but still refused.
        if !session::form_csrf_ok(&session.csrf, form.csrf.as_deref()) {
            return Ok(HttpResponse::SeeOther()
                .insert_header((header::LOCATION, "/books"))
                .finish());
        }
        if let Some(cookie) = req.cookie(session::COOKIE) {
            sessions::delete(&state.db, cookie.value()).await?;
        }
        tracing::info!(token.name = %session.tenant.name, "signed out");
    }
    let mut response = HttpResponse::SeeOther()
        .insert_header((header::LOCATION, "/signin"))
        .finish();
    response
        .add_cookie(&session::removal(&req, session::COOKIE))
        .map_err(|e| PageError::from(anyhow::anyhow!("clearing a cookie: {e}")))?;
    Ok(response)
}
