//! `/api/v1/webhook-secret`: the secret a tenant's webhooks are signed with, so its receiver
//! can check `Bindery-Signature`.

use actix_web::http::header;
use actix_web::{HttpResponse, get, post, web};
use serde::Serialize;
use utoipa::ToSchema;

use crate::storage::rfc3339;
use crate::tenants::{self, SigningSecrets};
use crate::web::AppState;
use crate::web::caller::Caller;
use crate::web::error::{ApiError, ErrorBody};
use crate::web::error_responses::{CsrfFailed, Internal, Unauthorized, Unavailable};
use crate::web::query::Query;

/// The tenant's webhook signing secret, and how a receiver checks a signature with it.
#[derive(Serialize, ToSchema)]
#[schema(as = WebhookSecret)]
struct SecretView<'a> {
    /// `whsec_…`: made on first use, the same for every event of the tenant until rotated.
    #[schema(pattern = "^whsec_")]
    secret: &'a str,
    /// After a rotation, until when (RFC 3339) the previous secret signs every delivery too,
    /// as a second `v1`; absent when only `secret` signs.
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_secret_valid_until: Option<String>,
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
        (status = 404, description = "The tenant has neither a token nor an account left \
            (`not_found`): they were removed while the request ran.", body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/webhook-secret")]
pub async fn show_secret(
    state: web::Data<AppState>,
    caller: Caller,
) -> Result<HttpResponse, ApiError> {
    let secrets = tenants::webhook_secrets(&state.db, &caller.0.tenant)
        .await?
        .ok_or_else(no_token_row)?;
    Ok(view(&secrets))
}

/// How long a rotated-out secret keeps signing when the request does not say.
const DEFAULT_OVERLAP_HOURS: u32 = 24;
/// The longest overlap a rotation may ask for.
const MAX_OVERLAP_HOURS: u32 = 24 * 30;

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct RotateQuery {
    /// Hours the previous secret keeps signing alongside the new one (0 to 720, default 24;
    /// 0 retires it at once).
    overlap_hours: Option<u32>,
}

/// Rotate the webhook secret
///
/// Makes a new signing secret and returns it. For `overlap_hours` the previous secret keeps
/// signing too (each delivery then carries two `v1` signatures), so a receiver can switch to
/// the new secret without refusing an event.
#[utoipa::path(
    operation_id = "rotate_webhook_secret",
    tag = "webhooks",
    params(RotateQuery),
    responses(
        (status = 200, description = "The new secret (never cached).", body = SecretView,
            headers(("Cache-Control" = String, description = "`no-store`"))),
        (status = 400, description = "`overlap_hours` is over 720 (`invalid_overlap`) or not \
            a whole number (`invalid_parameter`).", body = ErrorBody),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, description = "The tenant has neither a token nor an account left \
            (`not_found`): they were removed while the request ran.", body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[post("/webhook-secret/rotate")]
pub async fn rotate_secret(
    state: web::Data<AppState>,
    caller: Caller,
    query: Query<RotateQuery>,
) -> Result<HttpResponse, ApiError> {
    let query = query.parsed()?;
    let hours = query.overlap_hours.unwrap_or(DEFAULT_OVERLAP_HOURS);
    if hours > MAX_OVERLAP_HOURS {
        return Err(ApiError::bad_request(
            "invalid_overlap",
            format!("overlap_hours must be from 0 to {MAX_OVERLAP_HOURS}; got {hours}"),
        )
        .field("overlap_hours"));
    }
    let overlap = std::time::Duration::from_secs(u64::from(hours) * 3600);
    let secrets = tenants::rotate_webhook_secret(&state.db, &caller.0.tenant, overlap)
        .await?
        .ok_or_else(no_token_row)?;
    Ok(view(&secrets))
}

fn no_token_row() -> ApiError {
    ApiError::not_found(
        "webhook_secret",
        "This tenant has neither a token nor an account.",
    )
}

fn view(secrets: &SigningSecrets) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(SecretView {
            secret: secrets.current.expose(),
            previous_secret_valid_until: secrets.previous.as_ref().map(|(_, until)| rfc3339(*until)),
            signature_header: "Bindery-Signature",
            scheme: "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, \"<t>.<body>\")> (one v1 per signing secret)",
        })
}
