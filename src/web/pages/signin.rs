//! Signing in and out: with a passkey (`passkeys.rs` runs its ceremony), with an email address
//! and password (then a TOTP code, if the account has one), or with an API token, as before
//! accounts.
//!
//! Nothing here tells whether an address has an account: a wrong address and a wrong password
//! get the same answer, after the same work (`accounts::passwords`), and the limit on wrong tries
//! is kept per address typed whether or not it is anyone's (`accounts::throttle`).

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use maud::{Markup, html};
use serde::{Deserialize, Serialize};

use crate::accounts::ceremonies::{self, Kind};
use crate::accounts::{self, passwords, throttle, totp};
use crate::sessions::{self, SignedInWith};
use crate::web::AppState;
use crate::web::frame::{PageError, html_response, layout, local_path};
use crate::web::session::{self, CSRF_FIELD, SIGNIN_COOKIE};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(home)
        .service(signin_form)
        .service(sign_in)
        .service(sign_in_with_password)
        .service(code_form)
        .service(sign_in_with_code)
        .service(signout);
}

/// The cookie that carries a sign-in waiting for its second factor.
const SECOND_FACTOR_COOKIE: &str = "bindery_second_factor";

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
    Ok(signin_page(
        &req,
        &state,
        StatusCode::OK,
        next.as_deref(),
        Problem::None,
    ))
}

/// What went wrong with the last try, shown by the form it concerns.
enum Problem<'a> {
    None,
    Account(&'a str),
    Token(&'a str),
}

/// The sign-in page, with a fresh double-submit CSRF value in its forms and in a cookie.
fn signin_page(
    req: &HttpRequest,
    state: &AppState,
    status: StatusCode,
    next: Option<&str>,
    problem: Problem<'_>,
) -> HttpResponse {
    let csrf = sessions::random_hex();
    let passwords = state.config.account_passwords;
    let (account_problem, token_problem) = match problem {
        Problem::None => (None, None),
        Problem::Account(p) => (Some(p), None),
        Problem::Token(p) => (None, Some(p)),
    };
    let hidden = html! {
        input type="hidden" name=(CSRF_FIELD) value=(csrf);
        @if let Some(next) = next {
            input type="hidden" name="next" value=(next);
        }
    };
    let body: Markup = html! {
        h1 { "Sign in" }
        p.lede {
            @if passwords { "With a passkey, with your email and password, or with an API token. " }
            @else { "With a passkey or with an API token. " }
            "No account yet? Ask the person who runs your imprint for an invitation link."
        }
        @if let Some(problem) = account_problem {
            p.error role="alert" #signin-error { (problem) }
        }
        section aria-labelledby="passkey-title" {
            h2 #passkey-title { "With a passkey" }
            p.hint { "Your device or security key shows the passkeys you made for this site." }
            form #passkey-signin data-csrf=(csrf) data-next=[next] {
                button type="submit" { "Sign in with a passkey" }
            }
            p.error #passkey-error role="alert" hidden {}
        }
        @if state.sign_on.is_some() {
            section aria-labelledby="sso-title" {
                h2 #sso-title { "With single sign-on" }
                p { a.button #sso-signin href=(match next {
                    Some(next) => format!("/signin/sso?next={}", url::form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()),
                    None => "/signin/sso".to_owned(),
                }) { "Sign in with your organisation's account" } }
            }
        }
        @if passwords {
            section aria-labelledby="password-title" {
                h2 #password-title { "With your email and password" }
                form.stack method="post" action="/signin/password" {
                    (hidden)
                    label for="email" { "Email" }
                    input #email type="email" name="email" required autocomplete="username"
                        maxlength=(accounts::MAX_EMAIL_LEN) spellcheck="false" autofocus[token_problem.is_none()]
                        aria-describedby=[account_problem.map(|_| "signin-error")];
                    label for="password" { "Password" }
                    input #password type="password" name="password" required autocomplete="current-password"
                        maxlength=(passwords::MAX_BYTES);
                    button type="submit" { "Sign in" }
                }
            }
        }
        details #token-signin open[token_problem.is_some()] {
            summary { "Sign in with an API token" }
            p.hint { "A token starts with " code { "bdy_" } ". The operator's first one is the server's "
                code { "BINDERY_ADMIN_TOKEN" } "." }
            @if let Some(problem) = token_problem {
                p.error role="alert" #token-error { (problem) }
            }
            form.stack method="post" action="/signin" {
                (hidden)
                label for="token" { "API token" }
                input #token type="password" name="token" required autocomplete="off"
                    spellcheck="false" autofocus[token_problem.is_some()]
                    aria-describedby=[token_problem.map(|_| "token-error")];
                button type="submit" { "Sign in with the token" }
            }
        }
    };
    let mut response = html_response(
        status,
        layout("Sign in", None, &["/static/passkeys.js"], body),
    );
    if let Err(e) = response.add_cookie(&session::signin_cookie(req, csrf)) {
        tracing::warn!(error = %e, "could not set the sign-in cookie");
    }
    response
}

const FORM_EXPIRED: &str =
    "The sign-in form had expired (or your browser blocks cookies). Please try again.";

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
    if !session::signin_csrf_ok(&req, form.csrf.as_deref()) {
        return Ok(signin_page(
            &req,
            &state,
            StatusCode::FORBIDDEN,
            next.as_deref(),
            Problem::Token(FORM_EXPIRED),
        ));
    }
    let Some((id, session)) = sessions::create(&state.db, form.token.trim()).await? else {
        // 200, not 401: the browser shows the form again, and logs no failed load for it.
        return Ok(signin_page(
            &req,
            &state,
            StatusCode::OK,
            next.as_deref(),
            Problem::Token(
                "That token is not valid: it may be mistyped or revoked. Check it, or ask the operator for a new one.",
            ),
        ));
    };
    tracing::info!(token.name = %session.tenant.name, "signed in with a token");
    signed_in(&req, id, next)
}

/// The answer to a sign-in that made session `id`: its cookie, and on to `next`.
pub(super) fn signed_in(
    req: &HttpRequest,
    id: String,
    next: Option<String>,
) -> Result<HttpResponse, PageError> {
    let mut response = HttpResponse::SeeOther()
        .insert_header((header::LOCATION, next.unwrap_or_else(|| "/books".into())))
        .finish();
    let cookies = [
        session::session_cookie(req, id),
        session::removal(req, SIGNIN_COOKIE),
        session::removal(req, SECOND_FACTOR_COOKIE),
    ];
    for cookie in &cookies {
        response
            .add_cookie(cookie)
            .map_err(|e| PageError::from(anyhow::anyhow!("setting a cookie: {e}")))?;
    }
    Ok(response)
}

/// Where a request comes from, for the limit on wrong tries from one network address: the last
/// address the platform's proxy added to `X-Forwarded-For` (the ones before it are the client's
/// own say), or the peer.
pub(super) fn client_address(req: &HttpRequest) -> String {
    let forwarded = req
        .headers()
        .get_all("x-forwarded-for")
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .rfind(|a| !a.is_empty())
        .map(str::to_owned);
    forwarded
        .or_else(|| req.peer_addr().map(|a| a.ip().to_string()))
        .unwrap_or_default()
}

#[derive(Deserialize)]
struct PasswordSignIn {
    email: String,
    password: String,
    #[serde(rename = "_csrf")]
    csrf: Option<String>,
    next: Option<String>,
}

/// The same answer for an unknown address and a wrong password.
const WRONG_PASSWORD: &str = "That email address and password do not match an account here. Check them and try again, or sign in with a passkey.";

#[post("/signin/password")]
async fn sign_in_with_password(
    req: HttpRequest,
    state: web::Data<AppState>,
    form: web::Form<PasswordSignIn>,
) -> Result<HttpResponse, PageError> {
    let next = form.next.clone().filter(|n| local_path(n));
    let refuse = |status, problem| {
        Ok(signin_page(
            &req,
            &state,
            status,
            next.as_deref(),
            Problem::Account(problem),
        ))
    };
    if !session::signin_csrf_ok(&req, form.csrf.as_deref()) {
        return refuse(StatusCode::FORBIDDEN, FORM_EXPIRED);
    }
    if !state.config.account_passwords {
        return refuse(
            StatusCode::FORBIDDEN,
            "Passwords are turned off on this server: sign in with a passkey or single sign-on.",
        );
    }
    let keys = throttle::Keys::new(&form.email, &client_address(&req));
    if let Some(wait) = throttle::wait(&state.db, &keys).await? {
        let minutes = wait.as_secs().div_ceil(60);
        tracing::warn!(
            address = %client_address(&req),
            "a password sign-in refused: too many wrong tries"
        );
        let message = format!(
            "Too many wrong tries for this address or from your network. Wait {minutes} minute{} and try again, or sign in with a passkey.",
            if minutes == 1 { "" } else { "s" }
        );
        return Ok(signin_page(
            &req,
            &state,
            StatusCode::TOO_MANY_REQUESTS,
            next.as_deref(),
            Problem::Account(&message),
        ));
    }
    let found = accounts::for_password(&state.db, &form.email).await?;
    let stored = found.as_ref().and_then(|(_, hash)| hash.as_deref());
    let matched = passwords::verify(&form.password, stored).await?;
    let Some((account, _)) = found.filter(|_| matched) else {
        throttle::failed(&state.db, &keys).await?;
        tracing::info!("a password sign-in failed");
        return refuse(StatusCode::OK, WRONG_PASSWORD);
    };
    throttle::succeeded(&state.db, &keys).await?;
    if account.has_totp {
        let waiting = SecondFactor {
            account: account.id.clone(),
            next,
        };
        let id = ceremonies::begin(&state.db, Kind::SecondFactor, &waiting).await?;
        let mut response = HttpResponse::SeeOther()
            .insert_header((header::LOCATION, "/signin/code"))
            .finish();
        response
            .add_cookie(&session::ceremony_cookie(&req, SECOND_FACTOR_COOKIE, id))
            .map_err(|e| PageError::from(anyhow::anyhow!("setting a cookie: {e}")))?;
        return Ok(response);
    }
    let Some((id, _)) =
        sessions::create_for_account(&state.db, &account.id, &SignedInWith::Password).await?
    else {
        return refuse(StatusCode::OK, WRONG_PASSWORD);
    };
    tracing::info!(account.id = %account.id, "signed in with a password");
    signed_in(&req, id, next)
}

/// A password accepted, waiting for its code.
#[derive(Serialize, Deserialize)]
struct SecondFactor {
    account: String,
    next: Option<String>,
}

#[get("/signin/code")]
async fn code_form(req: HttpRequest) -> HttpResponse {
    code_page(&req, StatusCode::OK, None)
}

fn code_page(req: &HttpRequest, status: StatusCode, problem: Option<&str>) -> HttpResponse {
    if req.cookie(SECOND_FACTOR_COOKIE).is_none() {
        return HttpResponse::SeeOther()
            .insert_header((header::LOCATION, "/signin"))
            .finish();
    }
    let csrf = sessions::random_hex();
    let body = html! {
        h1 { "Your sign-in code" }
        p.lede { "Enter the six-digit code your authenticator app shows for Bindery." }
        @if let Some(problem) = problem {
            p.error role="alert" #code-error { (problem) }
        }
        form.stack method="post" action="/signin/code" {
            input type="hidden" name=(CSRF_FIELD) value=(csrf);
            label for="code" { "Code" }
            input #code type="text" name="code" required inputmode="numeric" autocomplete="one-time-code"
                pattern="[0-9 ]{6,7}" maxlength="7" autofocus aria-describedby=[problem.map(|_| "code-error")];
            button type="submit" { "Sign in" }
        }
        p { a href="/signin" { "Start again" } }
    };
    let mut response = html_response(status, layout("Sign-in code", None, &[], body));
    if let Err(e) = response.add_cookie(&session::signin_cookie(req, csrf)) {
        tracing::warn!(error = %e, "could not set the sign-in cookie");
    }
    response
}

#[derive(Deserialize)]
struct Code {
    code: String,
    #[serde(rename = "_csrf")]
    csrf: Option<String>,
}

#[post("/signin/code")]
async fn sign_in_with_code(
    req: HttpRequest,
    state: web::Data<AppState>,
    form: web::Form<Code>,
) -> Result<HttpResponse, PageError> {
    if !session::signin_csrf_ok(&req, form.csrf.as_deref()) {
        return Ok(code_page(&req, StatusCode::FORBIDDEN, Some(FORM_EXPIRED)));
    }
    let Some(cookie) = req.cookie(SECOND_FACTOR_COOKIE) else {
        return Ok(code_page(&req, StatusCode::OK, None));
    };
    let Some(waiting) =
        ceremonies::take::<SecondFactor>(&state.db, Kind::SecondFactor, cookie.value()).await?
    else {
        return Ok(signin_page(
            &req,
            &state,
            StatusCode::OK,
            None,
            Problem::Account(
                "That sign-in took too long, or was finished already. Please sign in again.",
            ),
        ));
    };
    let Some(account) = accounts::by_id(&state.db, &waiting.account)
        .await?
        .filter(|a| a.disabled_at.is_none())
    else {
        return Ok(signin_page(
            &req,
            &state,
            StatusCode::OK,
            None,
            Problem::Account(WRONG_PASSWORD),
        ));
    };
    let keys = throttle::Keys::new(&account.email, &client_address(&req));
    let limited = throttle::wait(&state.db, &keys).await?.is_some();
    if limited || !totp::accept(&state.db, &account.id, &account.email, &form.code).await? {
        throttle::failed(&state.db, &keys).await?;
        // The password was right: another code may be tried, under the same limit, without it.
        let id = ceremonies::begin(&state.db, Kind::SecondFactor, &waiting).await?;
        let problem = if limited {
            "Too many wrong codes. Wait a few minutes, then sign in again."
        } else {
            "That code is not right, or was used already. Enter the code your app shows now."
        };
        let mut response = code_page(&req, StatusCode::OK, Some(problem));
        response
            .add_cookie(&session::ceremony_cookie(&req, SECOND_FACTOR_COOKIE, id))
            .map_err(|e| PageError::from(anyhow::anyhow!("setting a cookie: {e}")))?;
        return Ok(response);
    }
    let Some((id, _)) =
        sessions::create_for_account(&state.db, &account.id, &SignedInWith::Password).await?
    else {
        return Ok(signin_page(
            &req,
            &state,
            StatusCode::OK,
            None,
            Problem::Account(WRONG_PASSWORD),
        ));
    };
    tracing::info!(account.id = %account.id, "signed in with a password and a code");
    signed_in(&req, id, waiting.next)
}

#[post("/signout")]
async fn signout(
    req: HttpRequest,
    state: web::Data<AppState>,
    form: web::Form<session::CsrfForm>,
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
