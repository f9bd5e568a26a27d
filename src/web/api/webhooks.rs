//! `/api/v1/webhook-secret`: the secret a tenant's webhooks are signed with, so its receiver
//! can check `Bindery-Signature`.

use actix_web::http::header;
use actix_web::{HttpResponse, get, web};
use serde::Serialize;
use utoipa::ToSchema;

use super::openapi::{Unauthorized, Unavailable};
use super::{ApiError, Caller, ErrorBody};
use crate::tokens;
use crate::web::AppState;

/// The tenant's webhook signing secret, and how a receiver checks a signature with it.
#[derive(Serialize, ToSchema)]
#[schema(as = WebhookSecret)]
struct SecretView<'a> {
    /// `whsec_…`: made on first use, the same for every event of the tenant.
    #[schema(pattern = "^whsec_")]
    secret: &'a str,
    /// How to use it, for whoever reads the JSON: the header each delivery carries…
    #[schema(example = "Bindery-Signature")]
    signature_header: &'static str,
    /// …and what it holds.
    scheme: &'static str,
}

/// Show the webhook secret
///
/// The secret this tenant's webhook deliveries are signed with, so that its receiver can check
/// `Bindery-Signature`: HMAC-SHA256 of `<t>.<body>` with this secret, where `t` is the
/// header's Unix time.
#[utoipa::path(
    operation_id = "show_webhook_secret",
    tag = "webhooks",
    responses(
        (status = 200, description = "The secret (never cached).", body = SecretView,
            headers(("Cache-Control" = String, description = "`no-store`"))),
        (status = 401, response = Unauthorized),
        (status = 404, description = "The tenant has no token row left to keep the secret in \
            (`not_found`): its tokens were removed while the request ran.", body = ErrorBody),
        (status = 503, response = Unavailable),
    )
)]
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
