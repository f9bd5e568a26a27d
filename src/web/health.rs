//! `/healthz` (the process is alive) and `/readyz` (it can do its work).
//!
//! `/readyz` needs no token (platforms probe it), so what it tells anyone is only which check
//! failed. A failure's details can name the storage endpoint, the account and container, and
//! quote the upstream's error: they go to the log, and to `/readyz` only for a caller with the
//! metrics token or an admin's credentials.

use std::future::Future;
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, get, web};
use serde::Serialize;

use super::AppState;
use super::caller::Admin;
use crate::storage::workers;

/// Each readiness check gets this long; a hung dependency is a failed check, not a hung probe.
const CHECK_TIMEOUT: Duration = Duration::from_secs(3);

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(healthz).service(readyz);
}

#[get("/healthz")]
async fn healthz() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(serde_json::json!({ "status": "ok" }))
}

#[derive(Serialize)]
struct Check {
    ok: bool,
    /// False for a check that is reported but does not decide readiness (the worker, for a
    /// `web` process).
    #[serde(skip_serializing_if = "is_true")]
    required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    heartbeat_age_ms: Option<i64>,
}

impl Check {
    fn from_result(result: anyhow::Result<()>) -> Self {
        Check {
            ok: result.is_ok(),
            required: true,
            error: result.err().map(|e| format!("{e:#}")),
            heartbeat_age_ms: None,
        }
    }
}

#[derive(Serialize)]
struct Readiness {
    status: &'static str,
    database: Check,
    blob_store: Check,
    worker: Check,
}

#[get("/readyz")]
#[tracing::instrument(skip_all)]
async fn readyz(
    request: HttpRequest,
    state: web::Data<AppState>,
    admin: Option<Admin>,
) -> HttpResponse {
    let (db, blobs) = (state.db.clone(), state.blobs.clone());
    let (database, blob_store, worker) = futures_util::future::join3(
        bounded(async move { db.probe_write().await }),
        bounded(async move { blobs.probe().await }),
        check_worker(&state),
    )
    .await;
    let database = Check::from_result(database);
    let blob_store = Check::from_result(blob_store);
    let worker = Check {
        required: state.ready_needs_worker,
        ..worker
    };
    let ready = [&database, &blob_store, &worker]
        .iter()
        .all(|check| check.ok || !check.required);
    for (name, check) in [
        ("database", &database),
        ("blob_store", &blob_store),
        ("worker", &worker),
    ] {
        if let Some(error) = check.error.as_ref().filter(|_| check.required) {
            tracing::warn!(check = name, error = %error, "readiness check failed");
        }
    }
    let operator = admin.is_some()
        || state
            .config
            .metrics_token
            .as_ref()
            .is_some_and(|token| super::metrics::presents(&request, token.expose()));
    let (mut database, mut blob_store, mut worker) = (database, blob_store, worker);
    if !operator {
        for check in [&mut database, &mut blob_store, &mut worker] {
            check.error = None;
            check.heartbeat_age_ms = None;
        }
    }
    let body = Readiness {
        status: if ready { "ready" } else { "unavailable" },
        database,
        blob_store,
        worker,
    };
    let mut response = if ready {
        HttpResponse::Ok()
    } else {
        HttpResponse::ServiceUnavailable()
    };
    response
        .insert_header(("Cache-Control", "no-store"))
        .json(body)
}

fn is_true(b: &bool) -> bool {
    *b
}

/// Runs a check on a task of its own, and waits for it at most `CHECK_TIMEOUT`. Its own task:
/// a probe given up on (or whose client hung up) still ends its transaction. Dropped halfway,
/// its connection would be closed and the pool would open another while the first one's
/// server process was still exiting: one over `DATABASE_MAX_CONNECTIONS` for a moment, seen
/// under load.
async fn bounded<T: Send + 'static>(
    check: impl Future<Output = anyhow::Result<T>> + Send + 'static,
) -> anyhow::Result<T> {
    match tokio::time::timeout(CHECK_TIMEOUT, tokio::spawn(check)).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => Err(anyhow::anyhow!("the check stopped: {e}")),
        Err(_) => Err(anyhow::anyhow!("no answer within {CHECK_TIMEOUT:?}")),
    }
}

/// Alive when at least one worker's heartbeat is fresher than `WORKER_STALL_TIMEOUT`: with
/// `bindery serve` that is our own child; with split processes, any worker will do the work.
async fn check_worker(state: &AppState) -> Check {
    // Bounded like the other checks, and for the same reason: a read cut off by the timeout
    // (or by the client hanging up) would close its connection mid-query, and the pool would
    // open another while the first one's server process was still exiting.
    let db = state.db.clone();
    let freshest = bounded(async move { Ok(workers::list_workers(&db).await?) }).await;
    let limit = state.worker_stall_timeout;
    match freshest {
        Err(e) => Check {
            ok: false,
            required: true,
            error: Some(format!("reading worker heartbeats: {e:#}")),
            heartbeat_age_ms: None,
        },
        Ok(rows) => match rows.first() {
            None => Check {
                ok: false,
                required: true,
                error: Some("no worker has reported a heartbeat yet".to_owned()),
                heartbeat_age_ms: None,
            },
            Some(w) if w.age() > limit => Check {
                ok: false,
                required: true,
                error: Some(format!(
                    "the freshest worker heartbeat is {} ms old, over WORKER_STALL_TIMEOUT ({} ms)",
                    w.age_ms,
                    limit.as_millis()
                )),
                heartbeat_age_ms: Some(w.age_ms),
            },
            Some(w) => Check {
                ok: true,
                required: true,
                error: None,
                heartbeat_age_ms: Some(w.age_ms),
            },
        },
    }
}
