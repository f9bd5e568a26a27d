//! The admin's Tokens page: every API token (each a tenant), a form that creates one and shows
//! it once, and a button that revokes one. On a host with no shell, this is how the operator
//! signed in with `BINDERY_ADMIN_TOKEN` gives authors their tokens and rotates the first admin
//! away. The page renders the admin API's views and its form and buttons call that API.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, web};
use maud::html;

use super::admin::{action, admin_nav, readable};
use crate::web::AppState;
use crate::web::admin::tokens;
use crate::web::frame::{AdminVisitor, PageError, html_response, layout};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(token_list);
}

#[get("/admin/tokens")]
async fn token_list(
    state: web::Data<AppState>,
    AdminVisitor(session): AdminVisitor,
) -> Result<HttpResponse, PageError> {
    let tokens = tokens::all(&state).await?;
    let body = html! {
        h1 { "Tokens" }
        (admin_nav("/admin/tokens"))
        @if state.config.admin_token.is_some() {
            p.hint #first-admin-hint {
                code { "BINDERY_ADMIN_TOKEN" } " is set on this server. Once you have an admin "
                "token of your own (below), sign in with it, revoke the one the variable made, "
                "and unset the variable on the host."
            }
        }
        section aria-labelledby="new-token-title" {
            h2 #new-token-title { "New token" }
            p.hint { "A token is a tenant: its books are its own. It is shown once, here; only its hash is kept." }
            form #new-token.filters {
                label { "Name" input type="text" name="name" required pattern="[A-Za-z0-9._\\-]{1,64}" maxlength="64" size="20" autocomplete="off"; }
                label { input type="checkbox" name="admin"; " Admin" }
                button type="submit" { "Create" }
            }
            p.error role="alert" hidden {}
            div #new-token-result hidden {
                p { "The token for " strong #new-token-name {} ", shown only this once. Copy it now:" }
                p { input #new-token-value type="text" readonly size="72" aria-label="The new token"; " "
                    button #new-token-copy type="button" { "Copy" } }
                p { a href="/admin/tokens" { "Done" } }
            }
        }
        section aria-labelledby="tokens-title" {
            h2 #tokens-title { "All tokens" }
            div.table-wrap { table #tokens {
                thead { tr { th { "Name" } th { "Admin" } th { "Created" } th { "Last used" } th { "State" } th { span.visually-hidden { "Action" } } } }
                tbody {
                    @for t in &tokens {
                        tr {
                            td { (t.name) @if t.name == session.tenant.name { " " span.meta { "(you)" } } }
                            td { @if t.admin { "admin" } @else { "–" } }
                            td { (readable(&t.created_at)) }
                            td { (t.last_used_at.as_deref().map(readable).unwrap_or_else(|| "never".into())) }
                            td { @match &t.revoked_at {
                                Some(at) => { span.badge data-status="failed" { "revoked" } " " (readable(at)) }
                                None => { "live" }
                            } }
                            td {
                                @if t.revoked_at.is_none() {
                                    (action("POST", &format!("/api/v1/admin/tokens/{}/revoke", t.name), "Revoke",
                                        Some(&format!("Revoke {}? It stops working at once.", t.name))))
                                }
                            }
                        }
                    }
                }
            } }
            p.error role="alert" hidden {}
        }
    };
    Ok(html_response(
        StatusCode::OK,
        layout("Tokens", Some(&session), &["/static/tokens.js"], body),
    ))
}
