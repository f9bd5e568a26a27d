//! `/api/v1/admin/logs`: the live log, as Server-Sent Events. The last lines of every process
//! that shares the database (the logbook), merged by time, then every new line as it is
//! stored; or, with `source=files`, the log files of this web process's machine. `bindery logs
//! --app` follows it from anywhere.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use actix_web::http::header;
use actix_web::{HttpResponse, get, web};
use serde::Deserialize;
use serde_json::Value;
use utoipa::IntoParams;

use crate::log_files::{LogLine, Tail};
use crate::logbook::{self, Filter};
use crate::logging::Role;
use crate::storage::Database;
use crate::web::caller::Admin;
use crate::web::error::{ApiError, ErrorBody};
use crate::web::error_responses::{BadRequest, NotAdmin, Unauthorized};
use crate::web::query::Query;
use crate::web::query::{given, integer};
use crate::web::streams::ENDED_EVENT;
use crate::web::{AppState, Stopping};

const LINES_DEFAULT: i64 = 200;
const LINES_MAX: i64 = 2000;
/// How often the files or the database are checked for new lines.
const POLL: Duration = Duration::from_millis(250);
/// A comment line this often keeps proxies from closing a quiet stream, and finds out that the
/// client has gone (a write is how the server learns it), so a stream left behind by a closed
/// tab stops polling the files soon.
const KEEPALIVE: Duration = Duration::from_secs(5);
/// Most events written in one chunk.
const BATCH: usize = 500;

const ROLES: [&str; 2] = [Role::Web.as_str(), Role::Worker.as_str()];

// Read as strings and parsed in the handler (see the module doc of `admin`).
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogsQuery {
    /// How many past lines to send first; more than 2000 sends 2000.
    #[param(value_type = Option<i64>, minimum = 0, default = 200, example = 50)]
    lines: Option<String>,
    /// `false` ends the stream after the past lines.
    #[param(value_type = Option<bool>, default = true)]
    follow: Option<String>,
    /// `database` (every process sharing it) or `files` (this machine's `LOG_DIR`, which only
    /// `role` filters).
    #[param(value_type = Option<String>, default = "database", example = "database")]
    source: Option<String>,
    /// Only this role's lines: `web` or `worker`.
    #[param(value_type = Option<String>, example = "worker")]
    role: Option<String>,
    /// Only lines of this level or worse: `error`, `warn`, `info`, `debug` or `trace`.
    #[param(value_type = Option<String>, example = "warn")]
    level: Option<String>,
    /// Only this book's lines.
    #[param(value_type = Option<String>)]
    book: Option<String>,
    /// Only this job's lines.
    #[param(value_type = Option<i64>)]
    job: Option<String>,
    /// Only the lines of this tenant's requests and jobs.
    #[param(value_type = Option<String>)]
    tenant: Option<String>,
    /// Only the lines of the request with this `X-Request-Id`.
    #[param(value_type = Option<String>)]
    request: Option<String>,
    /// Only lines of the last so long (`10m`, `2h`, `1d`).
    #[param(value_type = Option<String>, example = "10m")]
    since: Option<String>,
    /// Only lines whose message or fields contain this text, ignoring case.
    #[param(value_type = Option<String>)]
    grep: Option<String>,
}

impl LogsQuery {
    fn filter(&self) -> Result<Filter, ApiError> {
        let invalid = |message: String| ApiError::bad_request("invalid_parameter", message);
        let role = match given(&self.role) {
            None => None,
            Some(role) if ROLES.contains(&role) => Some(role.to_owned()),
            Some(other) => {
                return Err(invalid(format!(
                    "role must be web or worker (got {other:?})."
                )));
            }
        };
        let level = match given(&self.level) {
            None => None,
            Some(text) => Some(logbook::Level::parse(text).ok_or_else(|| {
                invalid(format!(
                    "level must be error, warn, info, debug or trace (got {text:?})."
                ))
            })?),
        };
        let since = match given(&self.since) {
            None => None,
            Some(text) => {
                let since = humantime::parse_duration(text).map_err(|_| {
                    invalid(format!(
                        "since must be a duration such as 10m or 2h (got {text:?})."
                    ))
                })?;
                Some(Filter::since_ago(since))
            }
        };
        Ok(Filter {
            role,
            level,
            book_id: given(&self.book).map(str::to_owned),
            job_id: integer("job", &self.job, 1..=i64::MAX)?,
            tenant: given(&self.tenant).map(str::to_owned),
            request_id: given(&self.request).map(str::to_owned),
            since,
            grep: given(&self.grep).map(str::to_owned),
        })
    }
}

/// Follow the logs
///
/// The live log as Server-Sent Events: first the last `lines` lines in time order, then new
/// lines as they are stored. By default the lines of every web and worker process that shares
/// the database, on any machine; with `source=files`, the log files of this web process's
/// machine. Ends when the client disconnects, when the server stops, or after the past lines
/// with `follow=false`.
#[utoipa::path(
    operation_id = "follow_logs",
    tag = "admin",
    params(LogsQuery),
    security(("bearer" = ["admin"]), ("basic" = ["admin"]), ("session" = ["admin"])),
    responses(
        (status = 200, description = "An event stream, opened with a comment line at once. One \
            event per log line, `data: {\"role\", \"line\", \"timestamp\"?, \"fields\"?}`: \
            `role` is `web` or `worker`, `line` the line as text, and `fields` the line as an \
            object (`timestamp`, `level`, `role`, `host`, `pid`, `target`, `message`, the \
            event's fields and its `request_id`, `book.id`, `job.id` and `tenant`; from the \
            files, present when the line is JSON). A comment line every 5 s keeps the \
            connection open. If the token is revoked (or the session ends) meanwhile, an \
            `ended` event says so within a few seconds and the stream ends.",
            body = String, content_type = "text/event-stream"),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotAdmin),
        (status = 429, description = "The token already holds `MAX_STREAMS_PER_TOKEN` open \
            streams on this server (`too_many_streams`).", body = ErrorBody),
        (status = 503, description = "The log lines could not be read (`unavailable`).",
            body = ErrorBody),
    )
)]
#[get("/logs")]
pub async fn stream(
    admin: Admin,
    state: web::Data<AppState>,
    stopping: web::Data<Stopping>,
    query: Query<LogsQuery>,
) -> Result<HttpResponse, ApiError> {
    let query = query.parsed()?;
    let lines = integer("lines", &query.lines, 0..=i64::MAX)?
        .unwrap_or(LINES_DEFAULT)
        .min(LINES_MAX);
    let follow = match given(&query.follow) {
        None | Some("true") => true,
        Some("false") => false,
        Some(other) => {
            return Err(ApiError::bad_request(
                "invalid_parameter",
                format!("follow must be true or false (got {other:?})."),
            ));
        }
    };
    let filter = query.filter()?;
    let held = state.streams.open(&admin.1)?;
    let (source, backlog) = match given(&query.source) {
        None | Some("database") => {
            let db = state.db.clone();
            // Where following starts is read before the past lines: nothing falls between.
            let from = logbook::Follow::from_now(&db)
                .await
                .map_err(|e| anyhow::Error::new(e).context("reading the log lines"))?;
            let backlog = if lines > 0 {
                logbook::store::last(&db, &filter, lines)
                    .await
                    .map_err(|e| anyhow::Error::new(e).context("reading the log lines"))?
            } else {
                Vec::new()
            };
            let backlog: VecDeque<Value> = backlog.iter().map(event_of).collect();
            (Source::Logbook { db, filter, from }, backlog)
        }
        Some("files") => {
            if let Some(name) = filter.beyond_role() {
                return Err(ApiError::bad_request(
                    "invalid_parameter",
                    format!(
                        "source=files is filtered by role only; leave out {name}, or read the \
                         database's lines (source=database)."
                    ),
                ));
            }
            let roles: Vec<&'static str> = ROLES
                .into_iter()
                .filter(|r| filter.role.as_deref().is_none_or(|wanted| wanted == *r))
                .collect();
            let n = usize::try_from(lines).unwrap_or(0);
            let Some(dir) = state.config.log_dir.clone() else {
                return Err(ApiError::bad_request(
                    "invalid_parameter",
                    "source=files reads this machine's LOG_DIR, which is off (empty): there are \
                     no log files. Read the database's lines (source=database).",
                ));
            };
            let shown = dir.clone();
            let (tail, backlog) = web::block(move || Tail::open(&dir, &roles, n))
                .await
                .map_err(|e| anyhow::anyhow!("the log reader stopped: {e}"))?
                .map_err(|e| {
                    anyhow::Error::new(e)
                        .context(format!("reading the log files in {}", shown.display()))
                })?;
            let backlog = backlog.iter().map(file_event_of).collect();
            (Source::Files(Some(tail)), backlog)
        }
        Some(other) => {
            return Err(ApiError::bad_request(
                "invalid_parameter",
                format!("source must be database or files (got {other:?})."),
            ));
        }
    };
    tracing::info!(admin = %admin.0.name, lines = backlog.len(), "log stream opened");
    let follow = Follow {
        held,
        source,
        pending: backlog,
        opened: false,
        follow,
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

/// An event of a stored line.
fn event_of(line: &logbook::Line) -> Value {
    serde_json::json!({
        "role": line.role,
        "line": line.text(),
        "timestamp": line.timestamp(),
        "fields": line.json(),
    })
}

/// An event of a file's line.
fn file_event_of(line: &LogLine) -> Value {
    serde_json::to_value(line).unwrap_or(Value::Null)
}

/// Where new lines come from.
enum Source {
    Logbook {
        db: Database,
        filter: Filter,
        from: logbook::Follow,
    },
    /// `None` only while a poll runs on the blocking pool.
    Files(Option<Tail>),
}

/// The state of one stream. Dropped (ending everything it owns) when the client disconnects.
struct Follow {
    /// Ends the stream when its credential ends.
    held: crate::web::streams::Stream,
    source: Source,
    pending: VecDeque<Value>,
    opened: bool,
    /// Whether to go on after the past lines.
    follow: bool,
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
            // Checked first too: a busy log may never leave the stream waiting below.
            if self.follow && self.held.has_ended() {
                self.follow = false;
                self.pending.clear();
                return Some(self.written(ENDED_EVENT.to_owned()));
            }
            if !self.pending.is_empty() {
                let mut chunk = String::new();
                self.drain_into(&mut chunk);
                return Some(self.written(chunk));
            }
            if !self.follow {
                return None;
            }
            if self.last_write.elapsed() >= KEEPALIVE {
                return Some(self.written(": keep-alive\n\n".to_owned()));
            }
            let behind = match &self.source {
                Source::Files(tail) => tail.as_ref().is_some_and(Tail::behind),
                Source::Logbook { .. } => false,
            };
            if !behind {
                tokio::select! {
                    () = tokio::time::sleep(POLL) => {}
                    // The server waits for open responses before it exits: end this one.
                    () = self.stopping.wait() => return None,
                    () = self.held.ended() => continue,
                }
            }
            match &mut self.source {
                Source::Files(slot) => {
                    let mut tail = slot.take()?;
                    let (tail, polled) = web::block(move || {
                        let polled = tail.poll();
                        (tail, polled)
                    })
                    .await
                    .ok()?;
                    *slot = Some(tail);
                    match polled {
                        Ok(lines) => self.pending.extend(lines.iter().map(file_event_of)),
                        Err(e) => {
                            tracing::warn!(error = %e, "reading the log files failed; trying again");
                            tokio::time::sleep(POLL * 4).await;
                        }
                    }
                }
                Source::Logbook { db, filter, from } => match from.next(db, filter).await {
                    Ok(lines) => self.pending.extend(lines.iter().map(event_of)),
                    Err(e) => {
                        tracing::warn!(error = %e, "reading the log lines failed; trying again");
                        tokio::time::sleep(POLL * 4).await;
                    }
                },
            }
        }
    }

    fn drain_into(&mut self, chunk: &mut String) {
        let take = self.pending.len().min(BATCH);
        for line in self.pending.drain(..take) {
            chunk.push_str("data: ");
            // Newlines in JSON strings are escaped, so one event each.
            chunk.push_str(&line.to_string());
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
