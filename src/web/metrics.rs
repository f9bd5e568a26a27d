//! `GET /metrics`: Prometheus text. This process's HTTP and keep-alive counters, plus what
//! every process shares, read from the database at scrape time: workers alive and stale and
//! the freshest heartbeat's age, jobs by queue and state, the
//! oldest available job's age (for autoscalers), and per job kind (each pipeline step is one)
//! the jobs, attempts and summed run time of the jobs still retained.

use actix_web::{HttpRequest, HttpResponse, get, http::header, web};
use prometheus::{Encoder, GaugeVec, IntGaugeVec, Opts, Registry, TextEncoder};
use sha2::{Digest, Sha256};

use super::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(metrics);
}

#[get("/metrics")]
async fn metrics(request: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(token) = &state.config.metrics_token
        && !presents(&request, token.expose())
    {
        return HttpResponse::Unauthorized()
            .insert_header((header::WWW_AUTHENTICATE, r#"Bearer realm="metrics""#))
            .content_type("text/plain; charset=utf-8")
            .body("/metrics needs `Authorization: Bearer` with this service's METRICS_TOKEN\n");
    }
    match render(&state).await {
        Ok(text) => HttpResponse::Ok()
            .content_type("text/plain; version=0.0.4; charset=utf-8")
            .body(text),
        Err(e) => {
            tracing::warn!(error = %format!("{e:#}"), "metrics scrape failed");
            HttpResponse::ServiceUnavailable()
                .content_type("text/plain; charset=utf-8")
                .body("the database did not answer; metrics are unavailable")
        }
    }
}

/// Whether the request carries `Authorization: Bearer <token>`. Digests are compared, so the
/// comparison's timing says nothing about the token.
pub(super) fn presents(request: &HttpRequest, token: &str) -> bool {
    let Some(given) = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    Sha256::digest(given.trim().as_bytes()) == Sha256::digest(token.as_bytes())
}

async fn render(state: &AppState) -> anyhow::Result<String> {
    let shared = Registry::new();
    let jobs = IntGaugeVec::new(
        Opts::new("bindery_jobs", "Jobs by queue and state (retained ones)."),
        &["queue", "state"],
    )?;
    let oldest = GaugeVec::new(
        Opts::new(
            "bindery_queue_oldest_available_seconds",
            "Age of the oldest job that is due and waiting, per queue.",
        ),
        &["queue"],
    )?;
    let by_kind = IntGaugeVec::new(
        Opts::new(
            "bindery_job_kind_jobs",
            "Jobs by kind and state (retained ones).",
        ),
        &["kind", "state"],
    )?;
    let attempts = IntGaugeVec::new(
        Opts::new(
            "bindery_job_kind_attempts",
            "Attempts spent, by kind and state.",
        ),
        &["kind", "state"],
    )?;
    let run_seconds = GaugeVec::new(
        Opts::new(
            "bindery_job_kind_run_seconds",
            "Summed run time of finished jobs by kind and state; divide by bindery_job_kind_jobs for a mean.",
        ),
        &["kind", "state"],
    )?;
    let workers = IntGaugeVec::new(
        Opts::new(
            "bindery_workers",
            "Workers with a heartbeat row, by whether it is fresher than WORKER_STALL_TIMEOUT (alive) or not (stale).",
        ),
        &["state"],
    )?;
    let freshest = prometheus::Gauge::new(
        "bindery_worker_heartbeat_age_seconds",
        "Age of the freshest worker heartbeat (absent when no worker has ever reported).",
    )?;
    let rows = crate::storage::workers::list_workers(&state.db).await?;
    let alive = rows
        .iter()
        .filter(|w| w.age() <= state.worker_stall_timeout)
        .count();
    workers
        .with_label_values(&["alive"])
        .set(i64::try_from(alive).unwrap_or(i64::MAX));
    workers
        .with_label_values(&["stale"])
        .set(i64::try_from(rows.len() - alive).unwrap_or(i64::MAX));
    let freshest = rows.first().map(|w| {
        freshest.set(w.age_ms.max(0) as f64 / 1000.0);
        freshest
    });
    let stats = state.queue.stats().await?;
    for row in &stats.rows {
        jobs.with_label_values(&[row.queue.as_str(), row.state.as_str()])
            .set(row.count);
        if let Some(ms) = row.oldest_due_ms {
            oldest
                .with_label_values(&[row.queue.as_str()])
                .set(ms.max(0) as f64 / 1000.0);
        }
    }
    for row in state.queue.kind_stats().await? {
        let labels = [row.kind.as_str(), row.state.as_str()];
        by_kind.with_label_values(&labels).set(row.jobs);
        attempts.with_label_values(&labels).set(row.attempts);
        run_seconds
            .with_label_values(&labels)
            .set(row.run_ms.max(0) as f64 / 1000.0);
    }
    if let Some(freshest) = freshest {
        shared.register(Box::new(freshest))?;
    }
    let dropped = prometheus::IntCounter::new(
        "bindery_log_events_dropped_total",
        "Log events this web process could not store in the database (bindery logs) because they came faster than it took them, or it was unreachable; stdout and the files still have them.",
    )?;
    dropped.inc_by(crate::logbook::dropped());
    shared.register(Box::new(dropped))?;
    for collector in [
        Box::new(workers) as Box<dyn prometheus::core::Collector>,
        Box::new(jobs),
        Box::new(oldest),
        Box::new(by_kind),
        Box::new(attempts),
        Box::new(run_seconds),
    ] {
        shared.register(collector)?;
    }
    // Touch the process metrics so they are listed even before their first event.
    let _ = (&*crate::metrics::HTTP_REQUESTS, &*crate::metrics::KEEPALIVE);
    let mut families = crate::metrics::REGISTRY.gather();
    families.extend(shared.gather());
    let mut out = Vec::new();
    TextEncoder::new().encode(&families, &mut out)?;
    Ok(String::from_utf8(out)?)
}
