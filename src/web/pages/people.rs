//! The People page, for owners (their imprint) and admins (every imprint): the accounts, with a
//! button that disables one, and the invitations, with a form that makes one and shows its link
//! once, and a button that revokes one. An admin signed in with a token (the first admin, from
//! `BINDERY_ADMIN_TOKEN`) makes their own account here by inviting themselves.

use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use maud::html;
use serde::Deserialize;

use super::admin::readable_ms as readable;
use crate::accounts::invitations::{self, CreateError, NewInvitation};
use crate::accounts::{self, Role};
use crate::sessions::Session;
use crate::web::AppState;
use crate::web::frame::{Nav, PageError, Visitor, html_response, layout_in, origin};
use crate::web::session::{self, CSRF_FIELD, CsrfForm};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(people_page)
        .service(invite)
        .service(revoke_invitation)
        .service(disable_account);
}

/// Who may use this page, and over which tenants: an admin over all (`None`), an owner over
/// theirs.
struct Manager {
    role: Role,
    scope: Option<String>,
    /// How the invitations they make record them.
    by: String,
}

fn manager(session: &Session) -> Option<Manager> {
    match &session.person {
        Some(person) if person.role.manages_people() => Some(Manager {
            role: person.role,
            scope: (person.role != Role::Admin).then(|| session.tenant.tenant.clone()),
            by: person.id.clone(),
        }),
        Some(_) => None,
        None if session.tenant.admin => Some(Manager {
            role: Role::Admin,
            scope: None,
            by: format!("token:{}", session.tenant.name),
        }),
        None => None,
    }
}

enum Notice {
    None,
    Done(String),
    Problem(String),
    /// A new invitation's link, shown this once, and what became of its mail, if one was
    /// asked for: `Ok(address)` mailed, `Err(why)` not.
    Link(String, Option<Result<String, String>>),
}

#[get("/people")]
async fn people_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    Visitor(session): Visitor,
) -> Result<HttpResponse, PageError> {
    page(&req, &state, &session, Notice::None).await
}

async fn page(
    req: &HttpRequest,
    state: &AppState,
    session: &Session,
    notice: Notice,
) -> Result<HttpResponse, PageError> {
    let Some(manager) = manager(session) else {
        return Err(PageError::NotFound);
    };
    let scope = manager.scope.as_deref();
    let people = accounts::list(&state.db, scope).await?;
    let invitations = invitations::list(&state.db, scope).await?;
    let now = chrono::Utc::now().timestamp_millis();
    let csrf = html! { input type="hidden" name=(CSRF_FIELD) value=(session.csrf); };
    let status = match notice {
        Notice::Problem(_) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    };
    let origin = origin(req, state);
    let body = html! {
        h1 { "People" }
        @match &notice {
            Notice::None => {}
            Notice::Done(what) => { p.notice role="status" #people-notice { (what) } }
            Notice::Problem(problem) => { p.error role="alert" #people-error { (problem) } }
            Notice::Link(secret, mailed) => {
                div.notice role="status" #invitation-made {
                    @match mailed {
                        Some(Ok(to)) => { p #invitation-mailed { "The link was mailed to " strong { (to) } ". Here it is too, shown only this once:" } }
                        Some(Err(why)) => { p.error #invitation-not-mailed { "The invitation was made, but its mail did not go: " (why) ". Send the link yourself; it is shown only this once:" } }
                        None => { p { "The invitation's link, shown only this once. Send it to the person you invite:" } }
                    }
                    p { input #invitation-link type="text" readonly size="80" aria-label="The invitation's link"
                        value=(format!("{origin}/invitations/{secret}")); }
                }
            }
        }
        section aria-labelledby="invite-title" {
            h2 #invite-title { "Invite someone" }
            form #new-invitation.filters method="post" action="/people/invitations" {
                (csrf)
                @if manager.scope.is_none() {
                    label { "Imprint" input type="text" name="tenant" required maxlength="64"
                        pattern="[A-Za-z0-9._\\-]{1,64}" value=(session.tenant.tenant) autocomplete="off"; }
                }
                label { "Role"
                    select name="role" {
                        @for role in Role::ALL {
                            @if manager.role.may_invite(role) {
                                option value=(role.as_str()) selected[role == Role::Author] { (role.describe()) }
                            }
                        }
                    }
                }
                label { "Email (optional)" input type="email" name="email" maxlength=(accounts::MAX_EMAIL_LEN) autocomplete="off"; }
                label { "Note (who it is for)" input type="text" name="note" maxlength=(invitations::MAX_NOTE_CHARS) autocomplete="off"; }
                @if state.mailer.is_some() {
                    label { input type="checkbox" name="mail" checked; " Mail the link to the address" }
                }
                label { "Valid for"
                    select name="days" {
                        option value="1" { "1 day" }
                        option value="7" selected { "7 days" }
                        option value="30" { "30 days" }
                        option value="90" { "90 days" }
                    }
                }
                label { "Accounts it may make" input type="number" name="uses" min="1" max=(invitations::MAX_USES) value="1" required; }
                button type="submit" { "Make the invitation" }
            }
        }
        section aria-labelledby="invitations-title" {
            h2 #invitations-title { "Invitations" }
            @if invitations.is_empty() {
                p { "No invitations yet." }
            } @else {
                div.table-wrap tabindex="0" role="region" aria-label="Invitations, scrollable" {
                    table #invitations {
                        thead { tr {
                            th scope="col" { "For" } th scope="col" { "Imprint" } th scope="col" { "Role" }
                            th scope="col" { "Used" } th scope="col" { "State" } th scope="col" { span.visually-hidden { "Actions" } }
                        } }
                        tbody {
                            @for invitation in &invitations {
                                @let usable = invitation.usable(now);
                                tr data-id=(invitation.id) {
                                    td { (invitation.email.as_deref().unwrap_or(if invitation.note.is_empty() { "anyone with the link" } else { &invitation.note })) }
                                    td { (invitation.tenant) }
                                    td { (invitation.role) }
                                    td { (invitation.uses) " of " (invitation.max_uses) }
                                    td { @match usable {
                                        Ok(()) => { "open until " (readable(invitation.expires_at)) }
                                        Err(invitations::Refusal::Revoked) => { "revoked" }
                                        Err(invitations::Refusal::Expired) => { "expired" }
                                        Err(_) => { "used" }
                                    } }
                                    td {
                                        @if usable.is_ok() {
                                            form method="post" action=(format!("/people/invitations/{}/revoke", invitation.id)) {
                                                (csrf)
                                                button type="submit" aria-label=(format!("Revoke the invitation for {}", invitation.email.as_deref().unwrap_or(&invitation.id))) { "Revoke" }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        section aria-labelledby="accounts-title" {
            h2 #accounts-title { "Accounts" }
            @if people.is_empty() {
                p { "No accounts yet." }
            } @else {
                div.table-wrap tabindex="0" role="region" aria-label="Accounts, scrollable" {
                    table #accounts {
                        thead { tr {
                            th scope="col" { "Name" } th scope="col" { "Email" } th scope="col" { "Imprint" }
                            th scope="col" { "Role" } th scope="col" { "Since" } th scope="col" { span.visually-hidden { "Actions" } }
                        } }
                        tbody {
                            @for account in &people {
                                tr {
                                    td { (account.name) }
                                    td { (account.email) }
                                    td { (account.tenant) }
                                    td { (account.role) }
                                    td { (readable(account.created_at)) }
                                    td {
                                        @if account.disabled_at.is_some() {
                                            "disabled"
                                        } @else if manager.role.may_invite(account.role) && Some(&account.id) != session.person.as_ref().map(|p| &p.id) {
                                            form method="post" action=(format!("/people/accounts/{}/disable", account.id)) {
                                                (csrf)
                                                button type="submit" aria-label=(format!("Disable the account of {}", account.name)) { "Disable" }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(html_response(
        status,
        layout_in(Nav::People, "People", Some(session), &[], body),
    ))
}

#[derive(Deserialize)]
struct Invite {
    tenant: Option<String>,
    role: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    note: String,
    days: u64,
    uses: i64,
    /// Mail the link to `email` (when SMTP is set).
    mail: Option<String>,
    #[serde(rename = "_csrf")]
    csrf: Option<String>,
}

#[post("/people/invitations")]
async fn invite(
    req: HttpRequest,
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    form: web::Form<Invite>,
) -> Result<HttpResponse, PageError> {
    let Some(manager) = manager(&session) else {
        return Err(PageError::NotFound);
    };
    if !session::form_csrf_ok(&session.csrf, form.csrf.as_deref()) {
        return page(&req, &state, &session, Notice::Problem(EXPIRED.into())).await;
    }
    let role: Role = match form.role.parse() {
        Ok(role) if manager.role.may_invite(role) => role,
        _ => {
            let problem = "Choose one of the roles offered.".to_owned();
            return page(&req, &state, &session, Notice::Problem(problem)).await;
        }
    };
    let tenant = match &manager.scope {
        Some(own) => own.clone(),
        None => form
            .tenant
            .clone()
            .unwrap_or_else(|| session.tenant.tenant.clone())
            .trim()
            .to_owned(),
    };
    let new = NewInvitation {
        tenant,
        role,
        email: Some(form.email.clone()),
        note: form.note.clone(),
        lifetime: Duration::from_secs(form.days.saturating_mul(24 * 3600)),
        max_uses: form.uses,
    };
    match invitations::create(&state.db, &manager.by, &new).await {
        Ok((invitation, secret)) => {
            tracing::info!(
                invitation = %invitation.id,
                tenant = %invitation.tenant,
                role = %invitation.role,
                "an invitation was made"
            );
            let mailed = match (&state.mailer, &invitation.email, &form.mail) {
                (Some(mailer), Some(to), Some(_)) => {
                    let link = format!("{}/invitations/{secret}", origin(&req, &state));
                    let by = session
                        .person
                        .as_ref()
                        .map_or("The operator", |p| p.name.as_str());
                    let sent = mailer
                        .invite(&crate::accounts::mail::Invitation {
                            to,
                            link: &link,
                            tenant: &invitation.tenant,
                            role: invitation.role,
                            by,
                        })
                        .await;
                    if sent.is_ok() {
                        tracing::info!(invitation = %invitation.id, "an invitation was mailed");
                    }
                    Some(sent.map(|()| to.clone()))
                }
                _ => None,
            };
            page(&req, &state, &session, Notice::Link(secret, mailed)).await
        }
        Err(CreateError::Unexpected(e)) => Err(e.into()),
        Err(e) => page(&req, &state, &session, Notice::Problem(e.to_string())).await,
    }
}

const EXPIRED: &str = "This page had expired. Please try again.";

#[post("/people/invitations/{id}/revoke")]
async fn revoke_invitation(
    req: HttpRequest,
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    id: web::Path<String>,
    form: web::Form<CsrfForm>,
) -> Result<HttpResponse, PageError> {
    let Some(manager) = manager(&session) else {
        return Err(PageError::NotFound);
    };
    if !session::form_csrf_ok(&session.csrf, form.csrf.as_deref()) {
        return page(&req, &state, &session, Notice::Problem(EXPIRED.into())).await;
    }
    let Some(invitation) = invitations::revoke(&state.db, &id, manager.scope.as_deref()).await?
    else {
        return Err(PageError::NotFound);
    };
    tracing::info!(invitation = %invitation.id, "an invitation was revoked");
    let done = "The invitation was revoked: its link no longer works.".to_owned();
    page(&req, &state, &session, Notice::Done(done)).await
}

#[post("/people/accounts/{id}/disable")]
async fn disable_account(
    req: HttpRequest,
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    id: web::Path<String>,
    form: web::Form<CsrfForm>,
) -> Result<HttpResponse, PageError> {
    let Some(manager) = manager(&session) else {
        return Err(PageError::NotFound);
    };
    if !session::form_csrf_ok(&session.csrf, form.csrf.as_deref()) {
        return page(&req, &state, &session, Notice::Problem(EXPIRED.into())).await;
    }
    let Some(account) = accounts::by_id(&state.db, &id)
        .await?
        .filter(|a| manager.scope.as_ref().is_none_or(|t| *t == a.tenant))
    else {
        return Err(PageError::NotFound);
    };
    if !manager.role.may_invite(account.role)
        || session.person.as_ref().is_some_and(|p| p.id == account.id)
    {
        let problem = "You cannot disable that account.".to_owned();
        return page(&req, &state, &session, Notice::Problem(problem)).await;
    }
    accounts::disable(&state.db, &account.id).await?;
    tracing::info!(account.id = %account.id, "an account was disabled");
    let done = format!(
        "{}'s account was disabled: they are signed out everywhere.",
        account.name
    );
    page(&req, &state, &session, Notice::Done(done)).await
}
