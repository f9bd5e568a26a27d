//! `/api/v1/admin/logs`: the live log, as Server-Sent Events. The merged tail of the web and
//! worker log files in `LOG_DIR` (of this machine), then every new line as it is written.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use actix_web::http::header;
use actix_web::{HttpResponse, get, web};
use serde::Deserialize;
use utoipa::IntoParams;

use super::integer;
use crate::logs::{LogLine, Tail};
use crate::telemetry::Role;
use crate::web::caller::Admin;
use crate::web::error::{ApiError, ErrorBody};
use crate::web::error_responses::{BadRequest, NotAdmin, Unauthorized};
use crate::web::{AppState, Stopping};

const LINES_DEFAULT: i64 = 200;
const LINES_MAX: i64 = 2000;
/// How often the files are checked for new lines.
const POLL: Duration = Duration::from_millis(250);
/// A comment line this often keeps proxies from closing a quiet stream, and finds out that the
/// client has gone (a write is how the server learns it), so a stream left behind by a closed
/// tab stops polling the files soon.
const KEEPALIVE: Duration = Duration::from_secs(5);
/// Most events written in one chunk.
const BATCH: usize = 500;

const ROLES: [&str; 2] = [Role::Web.as_str(), Role::Worker.as_str()];

// Read as a string and parsed in the handler (see the module doc of `admin`).
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogsQuery {
    /// How many past lines to send first; more than 2000 sends 2000.
    #[param(value_type = Option<i64>, minimum = 0, default = 200, example = 50)]
    lines: Option<String>,
}

/// Follow the logs
///
/// The live log of this machine's web and worker processes (the files in `LOG_DIR`), as
/// Server-Sent Events. First the last `lines` lines of both in time order, then new lines as
/// they are completed. Ends when the client disconnects, or when the server stops.
#[utoipa::path(
    operation_id = "follow_logs",
    tag = "admin",
    params(LogsQuery),
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 200, description = "An event stream, opened with a comment line at once. One \
            event per log line, `data: {\"role\", \"line\", \"timestamp\"?, \"fields\"?}`: \
            `role` is `web` or `worker`, `line` the line as written, and `fields` the line \
            parsed when it is JSON. A comment line every 5 s keeps the connection open.",
            body = String, content_type = "text/event-stream"),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotAdmin),
        (status = 503, description = "The log files could not be read (`unavailable`).",
            body = ErrorBody),
    )
)]
#[get("/logs")]
pub async fn stream(
    admin: Admin,
    state: web::Data<AppState>,
    stopping: web::Data<Stopping>,
    query: web::Query<LogsQuery>,
) -> Result<HttpResponse, ApiError> {
    let lines = integer("lines", &query.lines, 0..=i64::MAX)?
        .unwrap_or(LINES_DEFAULT)
        .min(LINES_MAX);
    let n = usize::try_from(lines).unwrap_or(0);
    let dir = state.config.log_dir.clone();
    let shown = dir.clone();
    let (tail, backlog) = web::block(move || Tail::open(&dir, &ROLES, n))
        .await
        .map_err(|e| anyhow::anyhow!("the log reader stopped: {e}"))?
        .map_err(|e| {
            anyhow::Error::new(e).context(format!("reading the log files in {}", shown.display()))
        })?;
    tracing::info!(admin = %admin.0.name, lines = backlog.len(), "log stream opened");
    let follow = Follow {
        tail: Some(tail),
        pending: backlog.into(),
        opened: false,
        last_write: Instant::now(),
        stopping: stopping.get_ref().clone(),
        _closed: Closed,
    };
    let stream = futures_util::stream::unfold(follow, |mut f| async move {
        let chunk = f.next_chunk().await?;
        Some((Ok::<_, actix_web::Error>(chunk), f))
    });
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(stream))
}

/// The state of one stream. Dropped (ending everything it owns) when the client disconnects.
struct Follow {
    /// `None` only while a poll runs on the blocking pool.
    tail: Option<Tail>,
    pending: VecDeque<LogLine>,
    opened: bool,
    last_write: Instant,
    stopping: Stopping,
    _closed: Closed,
}

impl Follow {
    /// The next bytes to send: waiting lines, or a keep-alive. `None` ends the stream.
    async fn next_chunk(&mut self) -> Option<web::Bytes> {
        if !self.opened {
            self.opened = true;
            // Sent at once, so the client sees the stream open even with no backlog.
            let mut chunk = String::from(": bindery log stream\n\n");
            self.drain_into(&mut chunk);
            return Some(self.written(chunk));
        }
        loop {
            if !self.pending.is_empty() {
                let mut chunk = String::new();
                self.drain_into(&mut chunk);
                return Some(self.written(chunk));
            }
            if self.last_write.elapsed() >= KEEPALIVE {
                return Some(self.written(": keep-alive\n\n".to_owned()));
            }
            let behind = self.tail.as_ref().is_some_and(Tail::behind);
            if !behind {
                tokio::select! {
                    () = tokio::time::sleep(POLL) => {}
                    // The server waits for open responses before it exits: end this one.
                    () = self.stopping.wait() => return None,
                }
            }
            let mut tail = self.tail.take()?;
            let (tail, polled) = web::block(move || {
                let polled = tail.poll();
                (tail, polled)
            })
            .await
            .ok()?;
            self.tail = Some(tail);
            match polled {
                Ok(lines) => self.pending.extend(lines),
                Err(e) => {
                    tracing::warn!(error = %e, "reading the log files failed; trying again");
                    tokio::time::sleep(POLL * 4).await;
                }
            }
        }
    }

    fn drain_into(&mut self, chunk: &mut String) {
        let take = self.pending.len().min(BATCH);
        for line in self.pending.drain(..take) {
            chunk.push_str("data: ");
            // A String never fails to serialise; its newlines are escaped, so one event each.
            chunk.push_str(&serde_json::to_string(&line).unwrap_or_default());
            chunk.push_str("\n\n");
        }
    }

    fn written(&mut self, chunk: String) -> web::Bytes {
        self.last_write = Instant::now();
        web::Bytes::from(chunk)
    }
}

/// Logs the end of a stream, however it ends.
struct Closed;

impl Drop for Closed {
    fn drop(&mut self) {
        tracing::info!("log stream closed");
    }
}
