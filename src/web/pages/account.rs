//! A person's own page: their passkeys (added by the page's script through `passkeys.rs`,
//! renamed never, removed here), their password and its second factor. Every change is a form
//! post carrying the session's CSRF token.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use maud::html;
use serde::Deserialize;

use super::admin::readable_ms as readable;
use crate::accounts::passkeys::{self, RemoveError};
use crate::accounts::{self, passwords, totp};
use crate::sessions::{Person, Session};
use crate::web::AppState;
use crate::web::frame::{PageError, Visitor, html_response, layout};
use crate::web::session::{self, CSRF_FIELD, CsrfForm};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(account_page)
        .service(make_token)
        .service(revoke_token)
        .service(remove_passkey)
        .service(change_password)
        .service(start_totp)
        .service(confirm_totp)
        .service(stop_totp);
}

/// A note shown at the top after a change, or a problem.
enum Notice {
    None,
    Done(&'static str),
    Problem(String),
    /// A new API token, shown this once.
    Token {
        name: String,
        token: String,
    },
}

#[get("/account")]
async fn account_page(
    state: web::Data<AppState>,
    Visitor(session): Visitor,
) -> Result<HttpResponse, PageError> {
    page(&state, &session, Notice::None, None).await
}

async fn page(
    state: &AppState,
    session: &Session,
    notice: Notice,
    totp_setup: Option<&str>,
) -> Result<HttpResponse, PageError> {
    let Some(person) = &session.person else {
        return Ok(token_page(session));
    };
    let account = accounts::by_id(&state.db, &person.id)
        .await?
        .ok_or(PageError::NotFound)?;
    let keys = passkeys::list(&state.db, &person.id).await?;
    let tokens = crate::tokens::of_account(&state.db, &person.id).await?;
    let csrf = html! { input type="hidden" name=(CSRF_FIELD) value=(session.csrf); };
    let status = match notice {
        Notice::Problem(_) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    };
    let body = html! {
        h1 { "Your account" }
        @match &notice {
            Notice::None => {}
            Notice::Done(what) => { p.notice role="status" #account-notice { (what) } }
            Notice::Problem(problem) => { p.error role="alert" #account-error { (problem) } }
            Notice::Token { name, token } => {
                div.notice role="status" #token-made {
                    p { "The token " strong { (name) } ", shown only this once. Copy it into your tool now:" }
                    p { input #token-value type="text" readonly size="72" aria-label="The new token" value=(token); }
                }
            }
        }
        dl.facts {
            dt { "Name" } dd { (account.name) }
            dt { "Email" } dd { (account.email) }
            dt { "Imprint" } dd { (account.tenant) }
            dt { "Role" } dd { (account.role.describe()) }
        }
        section aria-labelledby="passkeys-title" {
            h2 #passkeys-title { "Passkeys" }
            @if keys.is_empty() {
                p { "You have no passkey yet." }
            } @else {
                div.table-wrap tabindex="0" role="region" aria-label="Passkeys, scrollable" {
                    table #passkeys {
                        thead { tr { th scope="col" { "Name" } th scope="col" { "Added" } th scope="col" { "Last used" } th scope="col" { span.visually-hidden { "Actions" } } } }
                        tbody {
                            @for key in &keys {
                                tr {
                                    td { (key.name) @if person.credential == format!("passkey:{}", key.id) { " " span.meta { "(this sign-in)" } } }
                                    td { (readable(key.created_at)) }
                                    td { (key.last_used_at.map(readable).unwrap_or_else(|| "never".into())) }
                                    td {
                                        form method="post" action="/account/passkeys/remove" {
                                            (csrf)
                                            input type="hidden" name="id" value=(key.id);
                                            button type="submit" aria-label=(format!("Remove the passkey {}", key.name)) { "Remove" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            form #add-passkey.filters data-csrf=(session.csrf) {
                label { "Name of the new passkey" input #new-passkey-name type="text" name="passkey_name" required maxlength=(passkeys::MAX_NAME_CHARS) value="My passkey"; }
                button type="submit" { "Add a passkey" }
            }
            p.error #passkey-error role="alert" hidden {}
        }
        section aria-labelledby="tokens-title" {
            h2 #tokens-title { "API tokens" }
            p.hint { "For tools and e-book apps: a token acts as you, for " (account.tenant) "'s books, until you revoke it. It is shown once; only its hash is kept." }
            @if !tokens.is_empty() {
                div.table-wrap tabindex="0" role="region" aria-label="API tokens, scrollable" {
                    table #tokens {
                        thead { tr { th scope="col" { "Name" } th scope="col" { "Made" } th scope="col" { "Last used" } th scope="col" { span.visually-hidden { "Actions" } } } }
                        tbody {
                            @for token in &tokens {
                                tr {
                                    td { (token.name) }
                                    td { (readable(token.created_at)) }
                                    td { (token.last_used_at.map(readable).unwrap_or_else(|| "never".into())) }
                                    td {
                                        @if token.revoked_at.is_some() { "revoked" } @else {
                                            form method="post" action=(format!("/account/tokens/{}/revoke", token.name)) {
                                                (csrf)
                                                button type="submit" aria-label=(format!("Revoke the token {}", token.name)) { "Revoke" }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            form #new-token.filters method="post" action="/account/tokens" {
                (csrf)
                label { "Name" input type="text" name="name" required pattern="[A-Za-z0-9._\\-]{1,64}" maxlength="64" autocomplete="off"; }
                button type="submit" { "Make a token" }
            }
        }
        @if state.config.account_passwords || account.has_password {
            section aria-labelledby="password-title" {
                h2 #password-title { "Password" }
                p { @if account.has_password { "You have a password." } @else { "You have no password: you sign in with a passkey." } }
                form.stack method="post" action="/account/password" {
                    (csrf)
                    label for="new-password" { @if account.has_password { "New password" } @else { "Choose a password" } }
                    input #new-password type="password" name="password" required autocomplete="new-password"
                        minlength=(passwords::MIN_CHARS) maxlength=(passwords::MAX_BYTES) aria-describedby="new-password-hint";
                    p.hint #new-password-hint { "At least " (passwords::MIN_CHARS) " characters, hard to guess. Your other password sign-ins end." }
                    button type="submit" { @if account.has_password { "Change the password" } @else { "Set the password" } }
                }
            }
            section aria-labelledby="totp-title" {
                h2 #totp-title { "Sign-in codes" }
                @if account.has_totp {
                    p { "A code from your authenticator app is asked for after your password." }
                    form method="post" action="/account/totp/off" {
                        (csrf)
                        button type="submit" { "Stop asking for codes" }
                    }
                } @else if let Some(secret) = totp_setup {
                    p { "Add Bindery to your authenticator app with this key, or open the address on the phone that has the app:" }
                    p { code #totp-secret { (secret) } }
                    p { a #totp-url href=(totp::app_url(secret, &account.email).unwrap_or_default()) { "Open in an authenticator app" } }
                    form.stack method="post" action="/account/totp/on" {
                        (csrf)
                        input type="hidden" name="secret" value=(secret);
                        label for="totp-code" { "The code the app shows" }
                        input #totp-code type="text" name="code" required inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" maxlength="7";
                        button type="submit" { "Turn on sign-in codes" }
                    }
                } @else {
                    p { "Ask for a code from an authenticator app after the password, so that a password alone is not enough." }
                    form method="post" action="/account/totp/start" {
                        (csrf)
                        button type="submit" disabled[!account.has_password] { "Set up sign-in codes" }
                    }
                }
            }
        }
    };
    Ok(html_response(
        status,
        layout(
            "Your account",
            Some(session),
            &["/static/passkeys.js"],
            body,
        ),
    ))
}

/// The account page of a session made with a token: it has no account.
fn token_page(session: &Session) -> HttpResponse {
    let body = html! {
        h1 { "Your account" }
        p { "You signed in with the API token " strong { (session.tenant.name) } ", which has no account of its own. "
            "To have one (passkeys, a password), ask for an invitation"
            @if session.tenant.admin { ", or make one for yourself on the " a href="/people" { "People" } " page" }
            "." }
    };
    html_response(
        StatusCode::OK,
        layout("Your account", Some(session), &[], body),
    )
}

fn back_to_account() -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, "/account"))
        .finish()
}

/// The person behind a form post, with its CSRF token checked; `None` when the post is to be
/// answered by going back to the account page (a token's session, or a forged post).
fn person_of<'a>(session: &'a Session, csrf: Option<&str>) -> Option<&'a Person> {
    session
        .person
        .as_ref()
        .filter(|_| session::form_csrf_ok(&session.csrf, csrf))
}

#[derive(Deserialize)]
struct RemovePasskey {
    id: String,
    #[serde(rename = "_csrf")]
    csrf: Option<String>,
}

#[post("/account/passkeys/remove")]
async fn remove_passkey(
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    form: web::Form<RemovePasskey>,
) -> Result<HttpResponse, PageError> {
    let Some(person) = person_of(&session, form.csrf.as_deref()) else {
        return Ok(back_to_account());
    };
    let notice = match passkeys::remove(&state.db, &person.id, &form.id).await {
        Ok(()) => {
            tracing::info!(account.id = %person.id, "a passkey was removed");
            Notice::Done("The passkey was removed; it no longer signs you in.")
        }
        Err(RemoveError::Unexpected(e)) => return Err(e.into()),
        Err(e) => Notice::Problem(e.to_string()),
    };
    page(&state, &session, notice, None).await
}

#[derive(Deserialize)]
struct NewPassword {
    password: String,
    #[serde(rename = "_csrf")]
    csrf: Option<String>,
}

#[post("/account/password")]
async fn change_password(
    req: HttpRequest,
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    form: web::Form<NewPassword>,
) -> Result<HttpResponse, PageError> {
    let Some(person) = person_of(&session, form.csrf.as_deref()) else {
        return Ok(back_to_account());
    };
    if !state.config.account_passwords {
        let problem = "Passwords are turned off on this server.".to_owned();
        return page(&state, &session, Notice::Problem(problem), None).await;
    }
    if let Err(e) = passwords::check_new(&form.password, &[&person.name, &person.email]) {
        return page(&state, &session, Notice::Problem(e.to_string()), None).await;
    }
    let hash = passwords::hash(&form.password).await?;
    let keep = req
        .cookie(session::COOKIE)
        .map(|c| crate::tokens::hash(c.value()))
        .unwrap_or_default();
    accounts::set_password(&state.db, &person.id, &hash, &keep).await?;
    tracing::info!(account.id = %person.id, "a password was set");
    page(
        &state,
        &session,
        Notice::Done("Your password was saved."),
        None,
    )
    .await
}

#[post("/account/totp/start")]
async fn start_totp(
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    form: web::Form<CsrfForm>,
) -> Result<HttpResponse, PageError> {
    if person_of(&session, form.csrf.as_deref()).is_none() {
        return Ok(back_to_account());
    }
    let secret = totp::new_secret();
    page(&state, &session, Notice::None, Some(&secret)).await
}

#[derive(Deserialize)]
struct ConfirmTotp {
    secret: String,
    code: String,
    #[serde(rename = "_csrf")]
    csrf: Option<String>,
}

#[post("/account/totp/on")]
async fn confirm_totp(
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    form: web::Form<ConfirmTotp>,
) -> Result<HttpResponse, PageError> {
    let Some(person) = person_of(&session, form.csrf.as_deref()) else {
        return Ok(back_to_account());
    };
    // The secret came back from the page the person was shown; a code made with it proves the
    // app has it, whoever chose it.
    if !totp::confirms(&form.secret, &person.email, &form.code).unwrap_or(false) {
        let problem =
            "That code does not match: check the app shows Bindery's code, and enter the current one."
                .to_owned();
        return page(
            &state,
            &session,
            Notice::Problem(problem),
            Some(&form.secret),
        )
        .await;
    }
    totp::enable(&state.db, &person.id, &form.secret).await?;
    tracing::info!(account.id = %person.id, "sign-in codes turned on");
    page(
        &state,
        &session,
        Notice::Done("Sign-in codes are on: your app's code is asked for after your password."),
        None,
    )
    .await
}

#[post("/account/totp/off")]
async fn stop_totp(
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    form: web::Form<CsrfForm>,
) -> Result<HttpResponse, PageError> {
    let Some(person) = person_of(&session, form.csrf.as_deref()) else {
        return Ok(back_to_account());
    };
    totp::disable(&state.db, &person.id).await?;
    tracing::info!(account.id = %person.id, "sign-in codes turned off");
    page(
        &state,
        &session,
        Notice::Done("Sign-in codes are off."),
        None,
    )
    .await
}

#[derive(Deserialize)]
struct NewToken {
    name: String,
    #[serde(rename = "_csrf")]
    csrf: Option<String>,
}

#[post("/account/tokens")]
async fn make_token(
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    form: web::Form<NewToken>,
) -> Result<HttpResponse, PageError> {
    let Some(person) = person_of(&session, form.csrf.as_deref()) else {
        return Ok(back_to_account());
    };
    let holder = crate::tokens::Holder {
        account: &person.id,
        tenant: &session.tenant.tenant,
    };
    let admin = person.role == crate::accounts::Role::Admin;
    let name = form.name.trim();
    match crate::tokens::create_for(&state.db, name, &holder, admin).await {
        Ok(token) => {
            tracing::info!(account.id = %person.id, token.name = %name, "a token was made on an account's page");
            let notice = Notice::Token {
                name: name.to_owned(),
                token,
            };
            page(&state, &session, notice, None).await
        }
        Err(crate::tokens::TokenError::Unexpected(e)) => Err(e.into()),
        Err(e) => page(&state, &session, Notice::Problem(e.to_string()), None).await,
    }
}

#[post("/account/tokens/{name}/revoke")]
async fn revoke_token(
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    name: web::Path<String>,
    form: web::Form<CsrfForm>,
) -> Result<HttpResponse, PageError> {
    let Some(person) = person_of(&session, form.csrf.as_deref()) else {
        return Ok(back_to_account());
    };
    if !crate::tokens::revoke_own(&state.db, &person.id, &name).await? {
        return Err(PageError::NotFound);
    }
    tracing::info!(account.id = %person.id, token.name = %name, "a token was revoked on an account's page");
    page(
        &state,
        &session,
        Notice::Done("The token was revoked: it no longer works."),
        None,
    )
    .await
}
