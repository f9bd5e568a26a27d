//! Admin pages (admin sessions only; anyone else is told there is nothing here): the queues,
//! workers and schedules at a glance; jobs filtered by state, queue and tenant, with their
//! error histories and the engine's operations; and the live, merged log of web and worker.
//!
//! They render the same views the admin API answers with, so a page and `curl` never
//! disagree, and their buttons call that API.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError, get, web};
use maud::{Markup, html};

use crate::jobs::JobState;
use crate::web::AppState;
use crate::web::admin::{jobs, queues, schedules, workers};
use crate::web::frame::{AdminVisitor, Nav, PageError, html_response, layout_in};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(overview)
        .service(workers_page)
        .service(job_list)
        .service(job_detail)
        .service(logs);
}

pub(super) fn admin_nav(current: &str) -> Markup {
    let links = [
        ("/admin", "Overview"),
        ("/admin/workers", "Workers"),
        ("/admin/jobs", "Jobs"),
        ("/admin/jobs?state=dead", "Dead jobs"),
        ("/admin/logs", "Live logs"),
        ("/admin/tokens", "Tokens"),
    ];
    html! {
        nav.subnav aria-label="Admin" {
            @for (href, label) in links {
                @if href == current {
                    a href=(href) aria-current="page" { (label) }
                } @else {
                    a href=(href) { (label) }
                }
            }
        }
    }
}

#[get("/admin")]
async fn overview(
    state: web::Data<AppState>,
    AdminVisitor(session): AdminVisitor,
) -> Result<HttpResponse, PageError> {
    let queues = queues::all(&state).await?;
    let workers = workers::all(&state).await?;
    let schedules = schedules::all(&state).await?;
    let body = html! {
        h1 { "Admin" }
        (admin_nav("/admin"))
        section aria-labelledby="queues-title" {
            h2 #queues-title { "Queues" }
            div.table-wrap { table {
                thead { tr { th { "Queue" } th { "Waiting" } th { "Oldest waiting" } th { "Running" } th { "Scheduled" } th { "Dead" } th { "State" } th { span.visually-hidden { "Action" } } } }
                tbody {
                    @for q in &queues {
                        tr {
                            td { a href={ "/admin/jobs?queue=" (q.name) } { (q.name) } }
                            td { (q.depth) }
                            td { (q.oldest_available_age_ms.map(age).unwrap_or_else(|| "–".into())) }
                            td { (q.counts.get(JobState::Running.as_str()).copied().unwrap_or(0)) }
                            td { (q.counts.get(JobState::Scheduled.as_str()).copied().unwrap_or(0)) }
                            td {
                                @let dead = q.counts.get(JobState::Dead.as_str()).copied().unwrap_or(0);
                                @if dead > 0 { a href={ "/admin/jobs?state=dead&queue=" (q.name) } { (dead) } } @else { "0" }
                            }
                            td { @if q.paused { span.badge data-status="failed" { "paused" } } @else { "running" } }
                            td {
                                @if q.paused {
                                    (action("POST", &format!("/api/v1/admin/queues/{}/resume", q.name), "Resume", None))
                                } @else {
                                    (action("POST", &format!("/api/v1/admin/queues/{}/pause", q.name), "Pause", None))
                                }
                            }
                        }
                    }
                }
            } }
            p.error role="alert" hidden {}
        }
        section aria-labelledby="workers-title" {
            h2 #workers-title { a href="/admin/workers" { "Workers" } }
            (workers_table(&workers))
        }
        section aria-labelledby="schedules-title" {
            h2 #schedules-title { "Schedules" }
            div.table-wrap { table {
                thead { tr { th { "Schedule" } th { "When (UTC)" } th { "Last run" } th { "Next run" } } }
                tbody {
                    @for s in &schedules {
                        tr {
                            td { (s.configured.name) br; span.meta { code { (s.configured.variable) } } }
                            td {
                                @match &s.configured.cron {
                                    Some(cron) => { code { (cron) } @if s.configured.overridden { " " span.meta { "(set)" } } }
                                    None => { span.badge { "off" } }
                                }
                            }
                            td {
                                @match &s.last_run {
                                    Some(run) => {
                                        a href={ "/admin/jobs/" (run.job_id) } { (run.state) }
                                        " · " (readable(run.finished_at.as_deref().unwrap_or(&run.enqueued_at)))
                                    }
                                    None => { "–" }
                                }
                            }
                            td { (s.next_run.as_deref().map(readable).unwrap_or_else(|| "–".into())) }
                        }
                    }
                }
            } }
        }
    };
    Ok(html_response(
        StatusCode::OK,
        layout_in(Nav::Admin, "Admin", Some(&session), &[], body),
    ))
}

/// The workers alone, at their own address (the overview shows the same table).
#[get("/admin/workers")]
async fn workers_page(
    state: web::Data<AppState>,
    AdminVisitor(session): AdminVisitor,
) -> Result<HttpResponse, PageError> {
    let workers = workers::all(&state).await?;
    let body = html! {
        h1 { "Workers" }
        (admin_nav("/admin/workers"))
        p.hint { "Every worker process sharing the database, by its last heartbeat; one that has not beaten within "
            code { "WORKER_STALL_TIMEOUT" } " is stale." }
        (workers_table(&workers))
    };
    Ok(html_response(
        StatusCode::OK,
        layout_in(Nav::AdminPart, "Workers", Some(&session), &[], body),
    ))
}

fn workers_table(workers: &workers::Workers) -> Markup {
    html! {
        @if workers.workers.is_empty() {
            p { "No worker has registered. Start one (" code { "bindery serve" } " or " code { "bindery worker" } ")." }
        } @else {
            div.table-wrap { table {
                thead { tr { th { "Worker" } th { "Host" } th { "PID" } th { "Version" } th { "Started" } th { "Last heartbeat" } } }
                tbody {
                    @for w in &workers.workers {
                        tr {
                            td { code { (w.id) } }
                            td { (w.host) }
                            td { (w.pid) }
                            td { (w.version) }
                            td { (readable(&w.started_at)) }
                            td {
                                (age(w.heartbeat_age_ms)) " ago "
                                @if w.stale { span.badge data-status="failed" { "stale" } }
                            }
                        }
                    }
                }
            } }
        }
    }
}

#[get("/admin/jobs")]
async fn job_list(
    state: web::Data<AppState>,
    AdminVisitor(session): AdminVisitor,
    query: web::Query<jobs::ListQuery>,
) -> Result<HttpResponse, PageError> {
    let query = query.into_inner();
    let page = match jobs::page(&state, &query).await {
        Ok(page) => Ok(page),
        Err(e) if e.status_code() == StatusCode::BAD_REQUEST => Err(e.message().to_owned()),
        Err(e) => return Err(e.into()),
    };
    let selected = |v: &Option<String>, option: &str| v.as_deref() == Some(option);
    let dead_view = query.state.as_deref().and_then(JobState::parse) == Some(JobState::Dead);
    let body = html! {
        h1 { @if dead_view { "Dead jobs" } @else { "Jobs" } }
        (admin_nav(if dead_view { "/admin/jobs?state=dead" } else { "/admin/jobs" }))
        form.filters method="get" action="/admin/jobs" {
            label { "State"
                select name="state" {
                    option value="" selected[query.state.as_deref().unwrap_or("").is_empty()] { "any" }
                    @for s in JobState::ALL {
                        option value=(s.as_str()) selected[selected(&query.state, s.as_str())] { (s.as_str()) }
                    }
                }
            }
            label { "Queue" input type="text" name="queue" value=(query.queue.clone().unwrap_or_default()) size="10"; }
            label { "Tenant" input type="text" name="tenant" value=(query.tenant.clone().unwrap_or_default()) size="10"; }
            label { "Kind" input type="text" name="kind" value=(query.kind.clone().unwrap_or_default()) size="14"; }
            @if let Some(workflow) = query.workflow.as_deref().filter(|w| !w.is_empty()) {
                label { "Book (workflow)" input type="text" name="workflow" value=(workflow) size="14"; }
            }
            button type="submit" { "Filter" }
        }
        @match &page {
            Err(problem) => { p.error role="alert" { (problem) } }
            Ok(page) => {
                @if page.jobs.is_empty() {
                    p { "No jobs match." }
                } @else {
                    div.table-wrap { table {
                        thead { tr { th { "Job" } th { "Kind" } th { "Book" } th { "Queue" } th { "Tenant" } th { "State" } th { "Attempt" } th { "Created" } th { "Last error" } th { span.visually-hidden { "Actions" } } } }
                        tbody {
                            @for job in &page.jobs {
                                tr {
                                    td { a href={ "/admin/jobs/" (job.id) } { (job.id) } }
                                    td { code { (job.kind) } }
                                    td { (book_link(job)) }
                                    td { (job.queue) }
                                    td { (job.tenant) }
                                    td { span.badge data-status=(job.state) { (job.state) } }
                                    td { (job.attempt) "/" (job.max_attempts) }
                                    td { (readable(&job.created_at)) }
                                    td.error-text { (job.last_error.as_deref().map(|e| shorten(e, 160)).unwrap_or_default()) }
                                    td { (job_actions(job.id, job.state)) }
                                }
                            }
                        }
                    } }
                    p.error role="alert" hidden {}
                    @if let Some(next) = &page.next {
                        p { a href=(next_page(&query, next)) { "Older jobs →" } }
                    }
                }
            }
        }
    };
    Ok(html_response(
        StatusCode::OK,
        layout_in(Nav::AdminPart, "Jobs", Some(&session), &[], body),
    ))
}

#[get("/admin/jobs/{id}")]
async fn job_detail(
    state: web::Data<AppState>,
    AdminVisitor(session): AdminVisitor,
    id: web::Path<String>,
) -> Result<HttpResponse, PageError> {
    let job = jobs::detail(&state, &id).await?;
    let s = &job.summary;
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
    let body = html! {
        h1 { "Job " (s.id) }
        (admin_nav(""))
        p { code { (s.kind) } " on queue " a href={ "/admin/jobs?queue=" (s.queue) } { (s.queue) }
            @if !s.tenant.is_empty() { " for " a href={ "/admin/jobs?tenant=" (s.tenant) } { (s.tenant) } }
            " " span.badge data-status=(s.state) { (s.state) } }
        @if s.book.is_some() { p { "Book: " (book_link(s)) } }
        (job_actions(s.id, s.state))
        p.error role="alert" hidden {}
        dl.stats {
            dt { "Attempt" } dd { (s.attempt) " of " (s.max_attempts) }
            dt { "Created" } dd { (readable(&s.created_at)) }
            dt { "Due" } dd { (readable(&s.run_at)) }
            @if let Some(t) = &s.started_at { dt { "Started" } dd { (readable(t)) } }
            @if let Some(t) = &s.finished_at { dt { "Finished" } dd { (readable(t)) } }
            @if let Some(p) = s.progress { dt { "Progress" } dd { (p) "%" @if let Some(m) = &s.progress_message { " · " (m) } } }
            @if let Some(w) = &s.workflow { dt { "Workflow" } dd { code { (w) } } }
            @if let Some(k) = &s.unique_key { dt { "Unique key" } dd { code { (k) } } }
            @if let Some(k) = &job.serial_key { dt { "Serial key" } dd { code { (k) } } }
            @if let Some(j) = job.join_id { dt { "Join" } dd { a href={ "/admin/jobs/" (j) } { (j) } } }
            @if let Some(w) = &job.locked_by { dt { "Leased by" } dd { code { (w) } @if let Some(t) = &job.locked_until { " until " (readable(t)) } } }
        }
        h2 { "Error history" }
        @if job.errors.is_empty() {
            p { "No errors." }
        } @else {
            ol.history-list {
                @for e in &job.errors {
                    li {
                        strong { @if let Some(a) = e.attempt { "Attempt " (a) } @else { "—" } }
                        @if let Some(at) = &e.at { " · " (readable(at)) }
                        pre.history { (e.message) @for cause in &e.causes { "\ncaused by: " (cause) } }
                    }
                }
            }
        }
        h2 { "Payload" }
        pre.history { (pretty(&job.payload)) }
        @if let Some(result) = &job.result {
            h2 { "Result" }
            pre.history { (pretty(result)) }
        }
    };
    Ok(html_response(
        StatusCode::OK,
        layout_in(
            Nav::AdminPart,
            &format!("Job {}", s.id),
            Some(&session),
            &[],
            body,
        ),
    ))
}

#[get("/admin/logs")]
async fn logs(AdminVisitor(session): AdminVisitor) -> Result<HttpResponse, PageError> {
    let body = html! {
        h1 { "Live logs" }
        (admin_nav("/admin/logs"))
        p.hint { "The web and worker log files of this machine, merged by time; new lines appear as they are written." }
        form.filters #logs-filter {
            label { "Level"
                select #logs-level name="level" {
                    option value="" { "any" }
                    option value="info" { "info and worse" }
                    option value="warn" { "warnings and errors" }
                    option value="error" { "errors" }
                }
            }
            label { "Containing" input #logs-grep type="search" name="grep" size="20" autocomplete="off"; }
            label { "Role"
                select #logs-role name="role" {
                    option value="" { "web and worker" }
                    option value="web" { "web" }
                    option value="worker" { "worker" }
                }
            }
            button type="submit" { "Filter" }
        }
        div.actions {
            button type="button" #logs-pause aria-pressed="false" { "Pause" }
            label { input type="checkbox" #logs-follow checked; " Scroll to new lines" }
            span #logs-status.meta aria-live="polite" { "Connecting…" }
        }
        div.log #logs role="log" aria-label="Log lines" tabindex="0" {}
    };
    Ok(html_response(
        StatusCode::OK,
        layout_in(
            Nav::AdminPart,
            "Live logs",
            Some(&session),
            &["/static/logs.js"],
            body,
        ),
    ))
}

/// A button that calls the admin API (with the session's CSRF token) and reloads the page.
pub(super) fn action(method: &str, url: &str, label: &str, confirm: Option<&str>) -> Markup {
    html! {
        form.inline data-api=(method) data-url=(url) data-then="reload" data-confirm=[confirm] {
            button.secondary type="submit" { (label) }
        }
    }
}

/// The job's book by its title, linked to all the jobs of its workflow (the book's steps).
fn book_link(job: &jobs::JobSummary) -> Markup {
    html! {
        @if let Some(book) = &job.book {
            a href={ "/admin/jobs?workflow=" (book) } title={ "Book " (book) } {
                (job.book_title.as_deref().unwrap_or("(deleted book)"))
            }
        }
    }
}

/// The operations that apply to a job in `state`. A discarded job said it cannot succeed (a
/// refused manuscript, a webhook told to stop): running it again would say so again, so the
/// page offers no Retry (the API and `bindery jobs retry` still can, for an operator who has
/// changed what it depends on).
fn job_actions(id: i64, state: JobState) -> Markup {
    let url = |op: &str| format!("/api/v1/admin/jobs/{id}/{op}");
    html! {
        span.actions {
            @if state.is_retryable() && state != JobState::Discarded {
                (action("POST", &url("retry"), "Retry", None))
            }
            @if !state.is_terminal() {
                (action("POST", &url("cancel"), "Cancel", Some("Cancel this job?")))
                (action("POST", &url("discard"), "Discard", Some("Discard this job? It will not be retried.")))
            }
        }
    }
}

fn next_page(query: &jobs::ListQuery, next: &str) -> String {
    let mut url = url::form_urlencoded::Serializer::new(String::new());
    for (key, value) in [
        ("state", &query.state),
        ("queue", &query.queue),
        ("tenant", &query.tenant),
        ("kind", &query.kind),
        ("workflow", &query.workflow),
    ] {
        if let Some(v) = value.as_deref().filter(|v| !v.is_empty()) {
            url.append_pair(key, v);
        }
    }
    url.append_pair("before", next);
    format!("/admin/jobs?{}", url.finish())
}

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Milliseconds as a short duration a person reads ("3 s", "5 min", "2 h").
fn age(ms: i64) -> String {
    humantime::format_duration(std::time::Duration::from_secs(
        u64::try_from(ms / 1000).unwrap_or(0),
    ))
    .to_string()
}

/// A time stored as unix milliseconds, as the pages show times.
pub(super) fn readable_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default()
}

pub(super) fn readable(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|_| rfc3339.to_owned())
}
