//! `/api/v1/admin/tokens`: the API tokens (each a tenant), so that an operator on a host with
//! no shell (the first admin came from `BINDERY_ADMIN_TOKEN`) can create, list and revoke them,
//! as `bindery token …` does where there is one.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, get, post, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::tokens::{self, RevokeError, TokenError};
use crate::web::AppState;
use crate::web::admin::tokens::{TokenView, all};
use crate::web::caller::Admin;
use crate::web::error::{ApiError, ErrorBody};
use crate::web::error_responses::{CsrfFailed, Internal, NotAdmin, Unauthorized, Unavailable};

#[derive(Serialize, ToSchema)]
#[schema(as = Tokens)]
struct TokenList {
    /// Every token, revoked ones included, oldest first.
    tokens: Vec<TokenView>,
}

/// List tokens
///
/// Every token, revoked ones included, oldest first: name, admin flag, and created, last-used
/// and revoked times. Never the tokens, which are stored only as hashes.
#[utoipa::path(
    operation_id = "list_tokens",
    tag = "admin",
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 200, description = "The tokens.", body = TokenList),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotAdmin),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/tokens")]
pub async fn list(_admin: Admin, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(TokenList {
        tokens: all(&state).await?,
    }))
}

/// A token to create.
#[derive(Deserialize, ToSchema)]
#[schema(as = NewToken)]
#[serde(deny_unknown_fields)]
struct NewToken {
    /// Its name, also its tenant: 1 to 64 letters, digits, `-`, `_` or `.`; never reused, even
    /// once revoked.
    #[schema(example = "kobo-alice")]
    name: String,
    /// An operator's token, for the admin pages and API (default false).
    #[serde(default)]
    admin: bool,
}

/// A token just created: the only time it is shown.
#[derive(Serialize, ToSchema)]
#[schema(as = CreatedToken)]
struct CreatedToken {
    #[serde(flatten)]
    view: TokenView,
    /// `bdy_…`: shown this once; only its hash is kept. Store it now.
    #[schema(pattern = "^bdy_[0-9a-f]{64}$")]
    token: String,
}

/// Create a token
///
/// Creates a token and the tenant of the same name, and answers with the token, shown this
/// once (only its hash is kept).
#[utoipa::path(
    operation_id = "create_token",
    tag = "admin",
    request_body(content = NewToken, content_type = "application/json",
        example = json!({"name": "kobo-alice", "admin": false})),
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 201, description = "The token, shown this once (never cached).",
            body = CreatedToken,
            headers(("Cache-Control" = String, description = "`no-store`"))),
        (status = 400, description = "The body is not the JSON object documented \
            (`invalid_body`), or the name is not a valid one (`invalid_name`, `field: name`).",
            body = ErrorBody),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, response = NotAdmin),
        (status = 409, description = "A token of that name exists, or existed: names are never \
            reused (`token_exists`, `field: name`).", body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[post("/tokens")]
pub async fn create(
    admin: Admin,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    // Read here, after the admin check: a typed body that failed to parse would answer 400 to
    // anyone, telling a non-admin that the route exists.
    let new: NewToken = serde_json::from_slice(&body).map_err(|e| {
        ApiError::bad_request(
            "invalid_body",
            format!("The body must be a JSON object {{\"name\": \"…\", \"admin\": false}}: {e}."),
        )
    })?;
    let token = match tokens::create(&state.db, &new.name, new.admin).await {
        Ok(token) => token,
        Err(e @ TokenError::BadName(_)) => {
            return Err(ApiError::bad_request("invalid_name", format!("{e}.")).field("name"));
        }
        Err(e @ TokenError::Exists(_)) => {
            return Err(
                ApiError::new(StatusCode::CONFLICT, "token_exists", format!("{e}.")).field("name"),
            );
        }
        Err(TokenError::Unexpected(e)) => return Err(e.into()),
    };
    tracing::info!(token.name = %new.name, token.admin = new.admin, admin = %admin.0.name, "token created by an admin");
    let info = tokens::info(&state.db, &new.name)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the token {:?} vanished once created", new.name))?;
    Ok(HttpResponse::Created()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(CreatedToken {
            view: TokenView::from(&info),
            token,
        }))
}

/// Revoke a token
///
/// The token stops working at once, and every browser signed in with it is signed out. Its
/// name stays taken. The last live admin token cannot be revoked: create another first.
#[utoipa::path(
    operation_id = "revoke_token",
    tag = "admin",
    params(("name" = String, Path, description = "The token's name.")),
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 200, description = "The token, revoked (revoking twice changes nothing).",
            body = TokenView),
        (status = 401, response = Unauthorized),
        (status = 403, response = CsrfFailed),
        (status = 404, description = "There is no token of that name (`not_found`), or the \
            caller's is not an admin's.", body = ErrorBody),
        (status = 409, description = "It is the last live admin token (`last_admin`): create \
            another admin token first.", body = ErrorBody),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[post("/tokens/{name}/revoke")]
pub async fn revoke(
    admin: Admin,
    state: web::Data<AppState>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    match tokens::revoke_unless_last_admin(&state.db, &name).await {
        Ok(info) => {
            tracing::info!(token.name = %name, admin = %admin.0.name, "token revoked by an admin");
            Ok(HttpResponse::Ok().json(TokenView::from(&info)))
        }
        Err(RevokeError::NotFound(name)) => Err(ApiError::not_found(
            "token",
            format!("There is no token named {name:?}."),
        )),
        Err(e @ RevokeError::LastAdmin(_)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "last_admin",
            format!("{e}."),
        )),
        Err(RevokeError::Unexpected(e)) => Err(e.into()),
    }
}
