//! Single sign-on pages: the start (a redirect to the provider, from the sign-in page or from an
//! invitation) and the callback, which signs the person in, or makes their account from the
//! invitation they opened, or says why not.
//!
//! A first sign-in joins an account by the provider's verified address when `OIDC_SIGN_UP` is
//! `email`; with `invitation`, only an account made through an invitation with single sign-on
//! signs in this way. Either way, an identity once joined to an account stays with it.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, get, web};
use maud::html;
use serde::{Deserialize, Serialize};

use super::signin::signed_in;
use crate::accounts::ceremonies::{self, Kind};
use crate::accounts::invitations::{self, AcceptError, FirstCredential};
use crate::accounts::single_sign_on::{Identity, Pending, Provider, SignOnError};
use crate::accounts::{self, Details};
use crate::config::values::SignUp;
use crate::sessions::{self, SignedInWith};
use crate::web::AppState;
use crate::web::frame::{PageError, html_response, layout, local_path, origin};
use crate::web::session;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(start)
        .service(start_from_invitation)
        .service(callback);
}

/// The cookie naming a single sign-on in progress.
const COOKIE: &str = "bindery_sso";
/// Where the provider sends the browser back.
const CALLBACK: &str = "/signin/sso/callback";

/// What the callback needs besides the provider's own state.
#[derive(Serialize, Deserialize)]
struct Waiting {
    pending: Pending,
    next: Option<String>,
    /// The invitation's link secret, when the sign-on makes an account from it.
    invitation: Option<String>,
}

fn provider(state: &AppState) -> Result<&Provider, PageError> {
    state.sign_on.as_deref().ok_or(PageError::NotFound)
}

/// The callback's address, which the provider must have registered.
fn redirect_uri(req: &HttpRequest, state: &AppState) -> String {
    format!("{}{CALLBACK}", origin(req, state))
}

async fn begin(
    req: &HttpRequest,
    state: &AppState,
    next: Option<String>,
    invitation: Option<String>,
) -> Result<HttpResponse, PageError> {
    let provider = provider(state)?;
    let (url, pending) = match provider.begin(&redirect_uri(req, state)).await {
        Ok(begun) => begun,
        Err(e) => return Ok(failed(&e)),
    };
    let waiting = Waiting {
        pending,
        next,
        invitation,
    };
    let id = ceremonies::begin(&state.db, Kind::SingleSignOn, &waiting).await?;
    let mut response = HttpResponse::SeeOther()
        .insert_header((header::LOCATION, url.as_str()))
        .finish();
    response
        .add_cookie(&session::ceremony_cookie(req, COOKIE, id))
        .map_err(|e| PageError::from(anyhow::anyhow!("setting a cookie: {e}")))?;
    Ok(response)
}

#[derive(Deserialize)]
struct Next {
    next: Option<String>,
}

#[get("/signin/sso")]
async fn start(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<Next>,
) -> Result<HttpResponse, PageError> {
    let next = query.next.clone().filter(|n| local_path(n));
    begin(&req, &state, next, None).await
}

#[get("/invitations/{secret}/sso")]
async fn start_from_invitation(
    req: HttpRequest,
    state: web::Data<AppState>,
    secret: web::Path<String>,
) -> Result<HttpResponse, PageError> {
    provider(&state)?;
    if let Err(refusal) = invitations::usable(&state.db, &secret).await? {
        return Ok(refused(StatusCode::GONE, &refusal.to_string()));
    }
    begin(&req, &state, None, Some(secret.into_inner())).await
}

/// A sign-on that did not sign anyone in, and why.
fn refused(status: StatusCode, why: &str) -> HttpResponse {
    let body = html! {
        h1 { "Single sign-on did not sign you in" }
        p.error role="alert" #sso-error { (why) }
        p { a href="/signin" { "Back to the sign-in page" } }
    };
    html_response(status, layout("Single sign-on", None, &[], body))
}

fn failed(e: &SignOnError) -> HttpResponse {
    let status = match e {
        SignOnError::Provider(detail) => {
            tracing::warn!(error = %detail, "single sign-on: the provider failed");
            StatusCode::BAD_GATEWAY
        }
        other => {
            tracing::info!(error = ?other, "single sign-on refused");
            StatusCode::FORBIDDEN
        }
    };
    refused(status, &e.to_string())
}

#[get("/signin/sso/callback")]
async fn callback(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, PageError> {
    let provider = provider(&state)?;
    let parameters: Vec<(String, String)> =
        url::form_urlencoded::parse(req.query_string().as_bytes())
            .into_owned()
            .collect();
    let waiting = match req.cookie(COOKIE) {
        Some(cookie) => {
            ceremonies::take::<Waiting>(&state.db, Kind::SingleSignOn, cookie.value()).await?
        }
        None => None,
    };
    let Some(waiting) = waiting else {
        return Ok(failed(&SignOnError::State));
    };
    let identity = match provider.finish(waiting.pending, &parameters).await {
        Ok(identity) => identity,
        Err(e) => return Ok(failed(&e)),
    };
    let account = match &waiting.invitation {
        Some(secret) => match join(&state, secret, &identity).await? {
            Ok(account) => account,
            Err(answer) => return Ok(answer),
        },
        None => match account_of(&state, &identity).await? {
            Some(account) => account,
            None => {
                let why = format!(
                    "There is no account here for {} that signs in this way. Ask for an invitation, and choose single sign-on on it.",
                    identity.email
                );
                tracing::info!("single sign-on for no account");
                return Ok(refused(StatusCode::FORBIDDEN, &why));
            }
        },
    };
    let Some((id, _)) =
        sessions::create_for_account(&state.db, &account, &SignedInWith::SingleSignOn).await?
    else {
        return Ok(refused(StatusCode::FORBIDDEN, "That account is disabled."));
    };
    tracing::info!(account.id = %account, "signed in with single sign-on");
    let mut response = signed_in(&req, id, waiting.next)?;
    response
        .add_cookie(&session::removal(&req, COOKIE))
        .map_err(|e| PageError::from(anyhow::anyhow!("clearing a cookie: {e}")))?;
    Ok(response)
}

/// The account an identity signs in to: the one it was joined to, or (with `OIDC_SIGN_UP=email`)
/// the live account with its verified address, which it joins now.
async fn account_of(state: &AppState, identity: &Identity) -> anyhow::Result<Option<String>> {
    if let Some(account) = accounts::by_sign_on(&state.db, &identity.key).await? {
        return Ok(Some(account.id));
    }
    if state.config.oidc_sign_up != SignUp::Email {
        return Ok(None);
    }
    let Some(account) = accounts::by_email_any(&state.db, &identity.email)
        .await?
        .filter(|a| a.disabled_at.is_none())
    else {
        return Ok(None);
    };
    if !accounts::link_sign_on(&state.db, &account.id, &identity.key).await? {
        // It signs in with another identity already: this one is not its.
        return Ok(None);
    }
    tracing::info!(account.id = %account.id, "single sign-on joined an account by its address");
    Ok(Some(account.id))
}

/// Makes an account from an invitation with the identity: its name and verified address.
async fn join(
    state: &AppState,
    secret: &str,
    identity: &Identity,
) -> anyhow::Result<Result<String, HttpResponse>> {
    let name = identity
        .name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| {
            identity
                .email
                .split('@')
                .next()
                .unwrap_or_default()
                .to_owned()
        });
    let details = match Details::new(&name, &identity.email) {
        Ok(details) => details,
        Err(e) => return Ok(Err(refused(StatusCode::BAD_REQUEST, &e.to_string()))),
    };
    let account = accounts::new_id();
    let credential = FirstCredential::SignOn(&identity.key);
    match invitations::accept(&state.db, secret, &account, &details, credential).await {
        Ok(invitation) => {
            tracing::info!(
                account.id = %account,
                tenant = %invitation.tenant,
                role = %invitation.role,
                invitation = %invitation.id,
                "an account was made with an invitation and single sign-on"
            );
            Ok(Ok(account))
        }
        Err(AcceptError::Refused(r)) => Ok(Err(refused(StatusCode::GONE, &r.to_string()))),
        Err(AcceptError::Details(e)) => Ok(Err(refused(StatusCode::CONFLICT, &e.to_string()))),
        Err(AcceptError::Unexpected(e)) => Err(e),
    }
}
