//! The passkey ceremonies the pages' script (`static/passkeys.js`) runs: signing in, making an
//! account from an invitation with a passkey, and adding a passkey to one's account. Each is two
//! requests: the options (whose state waits in `accounts::ceremonies`, named by a cookie), then
//! the browser's answer. They answer JSON, errors as the API's error body.
//!
//! Before sign-in there is no session to hold a CSRF token, so the sign-in and invitation pages
//! carry their sign-in cookie's value, which the script sends back in `X-CSRF-Token` (double
//! submit); on the account page it is the session's own CSRF token, as for any write.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, post, web};
use serde::{Deserialize, Serialize};
use serde_json::json;
use url::Url;
use webauthn_rs::Webauthn;
use webauthn_rs::prelude::{
    DiscoverableAuthentication, PasskeyRegistration, PublicKeyCredential,
    RegisterPublicKeyCredential,
};

use crate::accounts::ceremonies::{self, Kind};
use crate::accounts::invitations::{self, FirstCredential};
use crate::accounts::passkeys::{self, PasskeyError};
use crate::accounts::{self, Details};
use crate::sessions::{self, SignedInWith};
use crate::web::AppState;
use crate::web::error::ApiError;
use crate::web::frame::{local_path, origin};
use crate::web::session::{self, CSRF_HEADER, SIGNIN_COOKIE};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(sign_in_options)
        .service(sign_in)
        .service(invitation_options)
        .service(invitation_finish)
        .service(account_options)
        .service(account_finish);
}

/// The cookie naming a passkey ceremony in progress.
const CEREMONY_COOKIE: &str = "bindery_passkey";

/// The relying party for this request: the site's origin (`frame::origin`).
fn relying_party(req: &HttpRequest, state: &AppState) -> Result<Webauthn, ApiError> {
    let origin = origin(req, state);
    let url = Url::parse(&origin).map_err(|_| refused(&PasskeyError::Origin(origin.clone())))?;
    passkeys::relying_party(&url).map_err(|e| refused(&e))
}

fn refused(e: &PasskeyError) -> ApiError {
    match e {
        PasskeyError::Unexpected(e) => ApiError::internal(e),
        PasskeyError::Origin(_) => {
            ApiError::new(StatusCode::CONFLICT, "passkey_origin", e.to_string())
        }
        PasskeyError::Name => ApiError::new(StatusCode::BAD_REQUEST, "passkey_name", e.to_string())
            .field("passkey_name"),
        PasskeyError::Unknown => {
            ApiError::new(StatusCode::UNAUTHORIZED, "passkey_unknown", e.to_string())
        }
        PasskeyError::Refused(_) => {
            ApiError::new(StatusCode::BAD_REQUEST, "passkey_refused", e.to_string())
        }
    }
}

fn form_expired() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "csrf_failed",
        "This page had expired (or your browser blocks cookies). Reload it and try again.",
    )
}

/// An answer carrying `body` and the ceremony's cookie.
fn with_ceremony(
    req: &HttpRequest,
    id: String,
    body: serde_json::Value,
) -> Result<HttpResponse, ApiError> {
    let mut response = HttpResponse::Ok().json(body);
    response
        .add_cookie(&session::ceremony_cookie(req, CEREMONY_COOKIE, id))
        .map_err(|e| ApiError::internal(&anyhow::anyhow!("setting a cookie: {e}")))?;
    Ok(response)
}

/// The state the ceremony cookie names, taken once.
async fn take_ceremony<T: serde::de::DeserializeOwned>(
    req: &HttpRequest,
    state: &AppState,
    kind: Kind,
) -> Result<T, ApiError> {
    let expired = || {
        ApiError::new(
            StatusCode::CONFLICT,
            "passkey_expired",
            "That took too long, or was done already. Try again.",
        )
    };
    let cookie = req.cookie(CEREMONY_COOKIE).ok_or_else(expired)?;
    ceremonies::take(&state.db, kind, cookie.value())
        .await?
        .ok_or_else(expired)
}

/// An answer that made session `id`: its cookie, and where the script goes next.
fn signed_in(req: &HttpRequest, id: String, next: &str) -> Result<HttpResponse, ApiError> {
    let mut response = HttpResponse::Ok().json(json!({ "next": next }));
    for cookie in [
        session::session_cookie(req, id),
        session::removal(req, SIGNIN_COOKIE),
        session::removal(req, CEREMONY_COOKIE),
    ] {
        response
            .add_cookie(&cookie)
            .map_err(|e| ApiError::internal(&anyhow::anyhow!("setting a cookie: {e}")))?;
    }
    Ok(response)
}

#[post("/signin/passkey/options")]
async fn sign_in_options(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    if !session::signin_csrf_ok(&req, None) {
        return Err(form_expired());
    }
    let rp = relying_party(&req, &state)?;
    let (options, ceremony) = passkeys::start_sign_in(&rp).map_err(|e| refused(&e))?;
    let id = ceremonies::begin(&state.db, Kind::PasskeySignIn, &ceremony).await?;
    with_ceremony(
        &req,
        id,
        serde_json::to_value(options).map_err(anyhow::Error::from)?,
    )
}

#[derive(Deserialize)]
struct SignIn {
    credential: PublicKeyCredential,
    next: Option<String>,
}

#[post("/signin/passkey")]
async fn sign_in(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Json<SignIn>,
) -> Result<HttpResponse, ApiError> {
    if !session::signin_csrf_ok(&req, None) {
        return Err(form_expired());
    }
    let rp = relying_party(&req, &state)?;
    let ceremony: DiscoverableAuthentication =
        take_ceremony(&req, &state, Kind::PasskeySignIn).await?;
    let (account, passkey) = passkeys::finish_sign_in(&state.db, &rp, &body.credential, ceremony)
        .await
        .map_err(|e| {
            tracing::info!(error = %e, "a passkey sign-in failed");
            refused(&e)
        })?;
    let Some((id, _)) =
        sessions::create_for_account(&state.db, &account, &SignedInWith::Passkey(passkey)).await?
    else {
        return Err(refused(&PasskeyError::Unknown));
    };
    tracing::info!(account.id = %account, "signed in with a passkey");
    let next = body.next.clone().filter(|n| local_path(n));
    signed_in(&req, id, next.as_deref().unwrap_or("/books"))
}

/// What an invitation's passkey registration remembers until the browser answers.
#[derive(Serialize, Deserialize)]
struct NewAccount {
    account: String,
    name: String,
    email: String,
    passkey_name: String,
    registration: PasskeyRegistration,
}

#[derive(Deserialize)]
struct NewAccountForm {
    name: String,
    email: String,
    passkey_name: String,
}

fn details_refused(e: &accounts::DetailsError) -> ApiError {
    let field = match e {
        accounts::DetailsError::Name => "name",
        _ => "email",
    };
    ApiError::new(StatusCode::BAD_REQUEST, "account_details", e.to_string()).field(field)
}

fn invitation_refused(refusal: invitations::Refusal) -> ApiError {
    let status = match refusal {
        invitations::Refusal::Unknown => StatusCode::NOT_FOUND,
        _ => StatusCode::GONE,
    };
    ApiError::new(status, refusal.code(), refusal.to_string())
}

#[post("/invitations/{secret}/passkey/options")]
async fn invitation_options(
    req: HttpRequest,
    state: web::Data<AppState>,
    secret: web::Path<String>,
    form: web::Json<NewAccountForm>,
) -> Result<HttpResponse, ApiError> {
    if !session::signin_csrf_ok(&req, None) {
        return Err(form_expired());
    }
    invitations::usable(&state.db, &secret)
        .await?
        .map_err(invitation_refused)?;
    let details = Details::new(&form.name, &form.email).map_err(|e| details_refused(&e))?;
    if accounts::by_email_any(&state.db, &details.email)
        .await?
        .is_some()
    {
        return Err(details_refused(&accounts::DetailsError::EmailTaken));
    }
    let passkey_name = passkeys::valid_name(&form.passkey_name).map_err(|e| refused(&e))?;
    let rp = relying_party(&req, &state)?;
    let account = accounts::new_id();
    let (options, registration) =
        passkeys::start_registration(&rp, &account, &details.email, &details.name, &[])
            .map_err(|e| refused(&e))?;
    let waiting = NewAccount {
        account,
        name: details.name,
        email: details.email,
        passkey_name,
        registration,
    };
    let id = ceremonies::begin(&state.db, Kind::PasskeyRegistration, &waiting).await?;
    with_ceremony(&req, id, options)
}

#[derive(Deserialize)]
struct Registered {
    credential: RegisterPublicKeyCredential,
}

#[post("/invitations/{secret}/passkey")]
async fn invitation_finish(
    req: HttpRequest,
    state: web::Data<AppState>,
    secret: web::Path<String>,
    body: web::Json<Registered>,
) -> Result<HttpResponse, ApiError> {
    if !session::signin_csrf_ok(&req, None) {
        return Err(form_expired());
    }
    let rp = relying_party(&req, &state)?;
    let waiting: NewAccount = take_ceremony(&req, &state, Kind::PasskeyRegistration).await?;
    let passkey = passkeys::finish_registration(&rp, &body.credential, &waiting.registration)
        .map_err(|e| refused(&e))?;
    let details = Details::new(&waiting.name, &waiting.email).map_err(|e| details_refused(&e))?;
    let credential = FirstCredential::Passkey {
        name: &waiting.passkey_name,
        passkey: &passkey,
    };
    let invitation =
        match invitations::accept(&state.db, &secret, &waiting.account, &details, credential).await
        {
            Ok(invitation) => invitation,
            Err(invitations::AcceptError::Refused(r)) => return Err(invitation_refused(r)),
            Err(invitations::AcceptError::Details(e)) => return Err(details_refused(&e)),
            Err(invitations::AcceptError::Unexpected(e)) => return Err(e.into()),
        };
    tracing::info!(
        account.id = %waiting.account,
        tenant = %invitation.tenant,
        role = %invitation.role,
        invitation = %invitation.id,
        "an account was made with an invitation and a passkey"
    );
    let Some((id, _)) = sessions::create_for_account(
        &state.db,
        &waiting.account,
        &SignedInWith::Passkey(passkeys::id_of(&passkey)),
    )
    .await?
    else {
        return Err(refused(&PasskeyError::Unknown));
    };
    signed_in(&req, id, "/books")
}

/// What adding a passkey to one's account remembers until the browser answers.
#[derive(Serialize, Deserialize)]
struct NewPasskey {
    account: String,
    name: String,
    registration: PasskeyRegistration,
}

#[derive(Deserialize)]
struct NewPasskeyForm {
    passkey_name: String,
}

/// The account a request's session acts for, with its CSRF token checked: only a person signed
/// in to an account (not with a token) has passkeys.
async fn person(req: &HttpRequest, state: &AppState) -> Result<sessions::Person, ApiError> {
    let session = session::current(req, &state.db).await?.ok_or_else(|| {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "Your session has ended. Sign in again.",
        )
    })?;
    let given = req.headers().get(CSRF_HEADER).and_then(|v| v.to_str().ok());
    if !session::form_csrf_ok(&session.csrf, given) {
        return Err(form_expired());
    }
    session.person.ok_or_else(|| {
        ApiError::new(
            StatusCode::CONFLICT,
            "no_account",
            "You signed in with an API token, which has no account to add a passkey to. Make your account with an invitation first.",
        )
    })
}

#[post("/account/passkeys/options")]
async fn account_options(
    req: HttpRequest,
    state: web::Data<AppState>,
    form: web::Json<NewPasskeyForm>,
) -> Result<HttpResponse, ApiError> {
    let person = person(&req, &state).await?;
    let name = passkeys::valid_name(&form.passkey_name).map_err(|e| refused(&e))?;
    let rp = relying_party(&req, &state)?;
    let existing = passkeys::credentials(&state.db, &person.id).await?;
    let (options, registration) =
        passkeys::start_registration(&rp, &person.id, &person.email, &person.name, &existing)
            .map_err(|e| refused(&e))?;
    let waiting = NewPasskey {
        account: person.id,
        name,
        registration,
    };
    let id = ceremonies::begin(&state.db, Kind::PasskeyRegistration, &waiting).await?;
    with_ceremony(&req, id, options)
}

#[post("/account/passkeys")]
async fn account_finish(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Json<Registered>,
) -> Result<HttpResponse, ApiError> {
    let person = person(&req, &state).await?;
    let rp = relying_party(&req, &state)?;
    let waiting: NewPasskey = take_ceremony(&req, &state, Kind::PasskeyRegistration).await?;
    if waiting.account != person.id {
        return Err(refused(&PasskeyError::Unknown));
    }
    let passkey = passkeys::finish_registration(&rp, &body.credential, &waiting.registration)
        .map_err(|e| refused(&e))?;
    passkeys::add(&state.db, &person.id, &waiting.name, &passkey).await?;
    tracing::info!(account.id = %person.id, "a passkey was added");
    let mut response = HttpResponse::Ok().json(json!({ "next": "/account" }));
    response
        .add_cookie(&session::removal(&req, CEREMONY_COOKIE))
        .map_err(|e| ApiError::internal(&anyhow::anyhow!("clearing a cookie: {e}")))?;
    Ok(response)
}
