//! The API tokens as listed (never the tokens themselves): what `/api/v1/admin/tokens` answers
//! and the admin pages show.

use serde::Serialize;
use utoipa::ToSchema;

use crate::storage::rfc3339;
use crate::tokens::{self, TokenInfo};
use crate::web::AppState;
use crate::web::error::ApiError;

/// A token as listed: never the token itself, which is shown once, when it is created.
#[derive(Serialize, ToSchema)]
#[schema(as = Token)]
pub(crate) struct TokenView {
    /// The token's name, also its tenant.
    pub(crate) name: String,
    /// It may use the admin pages and `/api/v1/admin`: every tenant's jobs, queues, workers,
    /// tokens and logs. Its books are its own tenant's, as for any token.
    pub(crate) admin: bool,
    #[schema(format = DateTime)]
    pub(crate) created_at: String,
    /// Its last use, to the minute; absent if it was never used.
    #[schema(format = DateTime)]
    pub(crate) last_used_at: Option<String>,
    /// When it was revoked; absent while it works.
    #[schema(format = DateTime)]
    pub(crate) revoked_at: Option<String>,
}

impl From<&TokenInfo> for TokenView {
    fn from(t: &TokenInfo) -> Self {
        TokenView {
            name: t.name.clone(),
            admin: t.admin,
            created_at: rfc3339(t.created_at),
            last_used_at: t.last_used_at.map(rfc3339),
            revoked_at: t.revoked_at.map(rfc3339),
        }
    }
}

/// Every token, as the API lists them (and the admin pages show them).
pub(crate) async fn all(state: &AppState) -> Result<Vec<TokenView>, ApiError> {
    Ok(tokens::list(&state.db)
        .await?
        .iter()
        .map(TokenView::from)
        .collect())
}
