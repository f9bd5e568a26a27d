//! Opening an invitation link: the person chooses their name and address and a passkey (the
//! page's script, through `passkeys.rs`) or a password (this form), and is signed in to their
//! new account. A link that no longer lets anyone in says why, and nothing else: not the
//! imprint, nor who made it.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use maud::html;
use serde::Deserialize;

use super::signin::signed_in;
use crate::accounts::invitations::{self, AcceptError, FirstCredential, Invitation, Refusal};
use crate::accounts::{self, Details, passwords};
use crate::sessions::{self, SignedInWith};
use crate::web::AppState;
use crate::web::frame::{PageError, html_response, layout};
use crate::web::session::{self, CSRF_FIELD};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(invitation_page).service(accept_with_password);
}

#[get("/invitations/{secret}")]
async fn invitation_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    secret: web::Path<String>,
) -> Result<HttpResponse, PageError> {
    Ok(match invitations::usable(&state.db, &secret).await? {
        Err(refusal) => refused_page(refusal),
        Ok(invitation) => form_page(&req, &state, &invitation, &Typed::default(), None),
    })
}

/// What the person typed, shown again with a problem.
#[derive(Default)]
struct Typed {
    name: String,
    email: String,
}

fn refused_page(refusal: Refusal) -> HttpResponse {
    let status = match refusal {
        Refusal::Unknown => StatusCode::NOT_FOUND,
        _ => StatusCode::GONE,
    };
    let body = html! {
        h1 { "This invitation cannot be used" }
        p.error role="alert" #invitation-refused data-code=(refusal.code()) { (refusal) }
        p { "Already have an account? " a href="/signin" { "Sign in" } "." }
    };
    html_response(status, layout("Invitation", None, &[], body))
}

fn form_page(
    req: &HttpRequest,
    state: &AppState,
    invitation: &Invitation,
    typed: &Typed,
    problem: Option<(&str, &str)>,
) -> HttpResponse {
    let csrf = sessions::random_hex();
    let email = if typed.email.is_empty() {
        invitation.email.clone().unwrap_or_default()
    } else {
        typed.email.clone()
    };
    let described = |field: &str| {
        problem
            .filter(|(f, _)| *f == field)
            .map(|_| "invitation-error")
    };
    let body = html! {
        h1 { "Join " (invitation.tenant) " on Bindery" }
        p.lede { "You are invited as " strong { (invitation.role) } ": " (invitation.role.describe().split_once(": ").map_or("", |(_, what)| what)) "." }
        @if let Some((_, problem)) = problem {
            p.error role="alert" #invitation-error { (problem) }
        }
        form #new-account.stack method="post" action=(format!("/invitations/{}", req.match_info().query("secret")))
            data-csrf=(csrf) {
            input type="hidden" name=(CSRF_FIELD) value=(csrf);
            label for="name" { "Your name" }
            input #name type="text" name="name" required maxlength=(accounts::MAX_NAME_CHARS) autocomplete="name"
                value=(typed.name) aria-describedby=[described("name")];
            label for="email" { "Email" }
            input #email type="email" name="email" required maxlength=(accounts::MAX_EMAIL_LEN) autocomplete="email"
                spellcheck="false" value=(email) aria-describedby=[described("email")];
            fieldset {
                legend { "Sign in with a passkey" }
                p.hint { "A passkey is kept by your device, password manager or security key: nothing to remember or type." }
                label for="passkey_name" { "Name this passkey" }
                input #passkey_name type="text" name="passkey_name" maxlength=(accounts::passkeys::MAX_NAME_CHARS)
                    value="My passkey" autocomplete="off";
                button #new-account-passkey type="button" { "Make my account with a passkey" }
                p.error #passkey-error role="alert" hidden {}
            }
            @if state.sign_on.is_some() {
                fieldset {
                    legend { "Or with single sign-on" }
                    p.hint { "Your name and address then come from your organisation's account." }
                    a.button #new-account-sso href=(format!("/invitations/{}/sso", req.match_info().query("secret"))) { "Make my account with single sign-on" }
                }
            }
            @if state.config.account_passwords {
                fieldset {
                    legend { "Or with a password" }
                    label for="password" { "Password" }
                    input #password type="password" name="password" autocomplete="new-password"
                        minlength=(passwords::MIN_CHARS) maxlength=(passwords::MAX_BYTES)
                        aria-describedby=(if described("password").is_some() { "invitation-error password-hint" } else { "password-hint" });
                    p.hint #password-hint { "At least " (passwords::MIN_CHARS) " characters, hard to guess: a few unrelated words will do." }
                    button type="submit" { "Make my account with a password" }
                }
            }
        }
    };
    let status = if problem.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let mut response = html_response(
        status,
        layout("Invitation", None, &["/static/passkeys.js"], body),
    );
    if let Err(e) = response.add_cookie(&session::signin_cookie(req, csrf)) {
        tracing::warn!(error = %e, "could not set the sign-in cookie");
    }
    response
}

#[derive(Deserialize)]
struct PasswordAccount {
    name: String,
    email: String,
    #[serde(default)]
    password: String,
    #[serde(rename = "_csrf")]
    csrf: Option<String>,
}

#[post("/invitations/{secret}")]
async fn accept_with_password(
    req: HttpRequest,
    state: web::Data<AppState>,
    secret: web::Path<String>,
    form: web::Form<PasswordAccount>,
) -> Result<HttpResponse, PageError> {
    let invitation = match invitations::usable(&state.db, &secret).await? {
        Err(refusal) => return Ok(refused_page(refusal)),
        Ok(invitation) => invitation,
    };
    let typed = Typed {
        name: form.name.clone(),
        email: form.email.clone(),
    };
    let again = |field, problem: &str| {
        Ok(form_page(
            &req,
            &state,
            &invitation,
            &typed,
            Some((field, problem)),
        ))
    };
    if !session::signin_csrf_ok(&req, form.csrf.as_deref()) {
        return again(
            "form",
            "This page had expired (or your browser blocks cookies). Please try again.",
        );
    }
    if !state.config.account_passwords {
        return again(
            "password",
            "Passwords are turned off on this server: make your account with a passkey.",
        );
    }
    let details = match Details::new(&form.name, &form.email) {
        Ok(details) => details,
        Err(e @ accounts::DetailsError::Name) => return again("name", &e.to_string()),
        Err(e) => return again("email", &e.to_string()),
    };
    if let Err(e) = passwords::check_new(&form.password, &[&details.name, &details.email]) {
        return again("password", &e.to_string());
    }
    let hash = passwords::hash(&form.password).await?;
    let account = accounts::new_id();
    let invitation = match invitations::accept(
        &state.db,
        &secret,
        &account,
        &details,
        FirstCredential::Password(&hash),
    )
    .await
    {
        Ok(invitation) => invitation,
        Err(AcceptError::Refused(refusal)) => return Ok(refused_page(refusal)),
        Err(AcceptError::Details(e)) => return again("email", &e.to_string()),
        Err(AcceptError::Unexpected(e)) => return Err(e.into()),
    };
    tracing::info!(
        account.id = %account,
        tenant = %invitation.tenant,
        role = %invitation.role,
        invitation = %invitation.id,
        "an account was made with an invitation and a password"
    );
    let Some((id, _)) =
        sessions::create_for_account(&state.db, &account, &SignedInWith::Password).await?
    else {
        return Err(anyhow::anyhow!("an account vanished as it was made").into());
    };
    signed_in(&req, id, None)
}
