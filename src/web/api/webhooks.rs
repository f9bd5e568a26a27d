//! `/api/v1/webhook-secret`: the secret a tenant's webhooks are signed with, so its receiver
//! can check `Bindery-Signature`.

use actix_web::http::header;
use actix_web::{HttpResponse, get, web};
use serde::Serialize;

use super::{ApiError, Caller};
use crate::tokens;
use crate::web::AppState;

#[derive(Serialize)]
struct SecretView<'a> {
    secret: &'a str,
    /// How to use it, for whoever reads the JSON.
    signature_header: &'static str,
    scheme: &'static str,
}

#[get("/webhook-secret")]
pub async fn show_secret(
    state: web::Data<AppState>,
    caller: Caller,
) -> Result<HttpResponse, ApiError> {
    let secret = tokens::webhook_secret(&state.db, &caller.0.tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("webhook_secret", "This tenant has no token row."))?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(SecretView {
            secret: secret.expose(),
            signature_header: "Bindery-Signature",
            scheme: "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, \"<t>.<body>\")>",
        }))
}
