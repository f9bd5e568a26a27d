//! The `tracing` layer that hands every event to the logbook's writer, never waiting for it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::{Notify, mpsc};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber, span};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use super::{Level, Line};

/// Events held for the writer. At a thousand lines a batch, enough for a writer that waits
/// several batches on a slow database; a flood beyond it is dropped and counted.
const CAPACITY: usize = 16_384;

/// The writer's own events (a failed insert, a drop report) are not captured: writing them
/// would feed the logbook with its own trouble. They still reach stdout and the files.
pub(super) const OWN_TARGET: &str = "bindery::logbook::writer";

static DROPPED: AtomicU64 = AtomicU64::new(0);

/// The receiving end, until this process's writer takes it.
static RECEIVER: Mutex<Option<(mpsc::Receiver<Line>, Origin)>> = Mutex::new(None);

/// How far a layer's lines have gone: handed to the channel, and dealt with by the writer
/// (stored, or dropped when the database refused them). [`Backlog::flush`] waits for the
/// second to reach the first.
pub(super) struct Backlog {
    writing: AtomicBool,
    sent: AtomicU64,
    handled: AtomicU64,
    changed: Notify,
}

/// The installed layer's.
static BACKLOG: Backlog = Backlog::new();

impl Backlog {
    pub(super) const fn new() -> Backlog {
        Backlog {
            writing: AtomicBool::new(false),
            sent: AtomicU64::new(0),
            handled: AtomicU64::new(0),
            changed: Notify::const_new(),
        }
    }

    /// The installed layer's, which [`flush`] reads.
    pub(super) fn installed() -> &'static Backlog {
        &BACKLOG
    }

    /// See [`flush`].
    pub(super) async fn flush(&self, within: Duration) -> bool {
        let target = self.sent.load(Ordering::Acquire);
        let dealt_with = async {
            loop {
                let changed = self.changed.notified();
                tokio::pin!(changed);
                // Registered before the check, so a change between the two still wakes it.
                changed.as_mut().enable();
                if !self.writing.load(Ordering::Acquire)
                    || self.handled.load(Ordering::Acquire) >= target
                {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(within, dealt_with).await.is_ok()
    }

    /// A writer takes these lines (`true`), or stopped taking them.
    pub(super) fn set_writing(&self, writing: bool) {
        self.writing.store(writing, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// The writer dealt with `n` more of the lines the channel held.
    pub(super) fn count_handled(&self, n: usize) {
        self.handled
            .fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Release);
        self.changed.notify_waiters();
    }
}

/// Waits, at most `within`, until the writer has dealt with every line this process logged
/// before the call (stored it, or given up on a database that refused it), and says whether
/// it has. A process without a writer has nothing to wait for.
///
/// Lines reach the logbook a moment after they are logged, so a reader that sees what was
/// committed next can miss the line that explains it: a book's page that shows the book failed
/// and a log without the reason. What must be read in that order flushes before it commits.
pub async fn flush(within: Duration) -> bool {
    BACKLOG.flush(within).await
}

/// Log events this process dropped because the writer could not keep up (or could not write).
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

pub(super) fn count_dropped(n: usize) {
    DROPPED.fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// The receiving end of this process's capture layer, once.
pub(super) fn take_receiver() -> Option<(mpsc::Receiver<Line>, Origin)> {
    RECEIVER.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// Which process logs.
#[derive(Clone, Debug)]
pub(super) struct Origin {
    pub role: &'static str,
    pub host: String,
    pub pid: i64,
}

impl Origin {
    pub(super) fn of_this_process(role: &'static str) -> Origin {
        Origin {
            role,
            host: nix::unistd::gethostname()
                .ok()
                .and_then(|h| h.into_string().ok())
                .unwrap_or_else(|| "unknown".to_owned()),
            pid: i64::from(std::process::id()),
        }
    }

    /// A line of this process's own, with no ids.
    pub fn line(
        &self,
        level: Level,
        target: &str,
        message: String,
        fields: Map<String, Value>,
    ) -> Line {
        Line {
            id: 0,
            at: chrono::Utc::now().timestamp_micros(),
            level,
            role: self.role.to_owned(),
            host: self.host.clone(),
            pid: self.pid,
            target: target.to_owned(),
            message,
            fields,
            request_id: None,
            book_id: None,
            job_id: None,
            tenant: None,
        }
    }
}

/// The layer. Which process logs is fixed when it is made.
pub struct Capture {
    sender: mpsc::Sender<Line>,
    origin: Origin,
    rate: RateLimit,
    /// Where its lines are counted, for [`flush`].
    backlog: &'static Backlog,
}

/// At most so many events a second go to the logbook; the rest are dropped and counted before
/// any work is spent on them. A flood of 100,000 events a second, all stored, took 40 % off
/// the no-op drain of the same database on two cores; a process that logs normally stays far
/// below the limit.
struct RateLimit {
    per_second: u64,
    /// The second (unix) being counted, and how many events it has had.
    second: AtomicU64,
    count: AtomicU64,
}

impl RateLimit {
    fn new(per_second: u64) -> Self {
        RateLimit {
            per_second,
            second: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    /// Whether an event at unix second `second` may go. Racy at the turn of a second by a few
    /// events, which a limit of this kind does not mind.
    fn admit(&self, second: u64) -> bool {
        // Read first: most events fall in the second already counted, and a plain load keeps
        // the threads that log from writing one shared word each time.
        if self.second.load(Ordering::Relaxed) != second
            && self.second.swap(second, Ordering::Relaxed) != second
        {
            self.count.store(0, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed) < self.per_second
    }
}

impl Capture {
    /// The layer for this process, storing at most `max_per_second` events a second; its
    /// writer (`Writer::start`) takes the other end.
    pub fn install(role: &'static str, max_per_second: u64) -> Capture {
        let (mut capture, receiver) = Capture::with_channel(role, CAPACITY, Backlog::installed());
        capture.rate = RateLimit::new(max_per_second);
        *RECEIVER.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((receiver, capture.origin.clone()));
        capture
    }

    pub(super) fn with_channel(
        role: &'static str,
        capacity: usize,
        backlog: &'static Backlog,
    ) -> (Capture, mpsc::Receiver<Line>) {
        let (sender, receiver) = mpsc::channel(capacity);
        let capture = Capture {
            sender,
            origin: Origin::of_this_process(role),
            rate: RateLimit::new(u64::MAX),
            backlog,
        };
        (capture, receiver)
    }
}

/// The ids a span carries, kept in its extensions for the events inside it.
#[derive(Default, Clone, Debug)]
struct Ids {
    request_id: Option<String>,
    book_id: Option<String>,
    job_id: Option<i64>,
    tenant: Option<String>,
}

impl Ids {
    fn is_empty(&self) -> bool {
        self.request_id.is_none()
            && self.book_id.is_none()
            && self.job_id.is_none()
            && self.tenant.is_none()
    }

    /// Takes what `other` has and this lacks: an event's own fields win over its spans', and
    /// an inner span's over an outer one's.
    fn fill_from(&mut self, other: &Ids) {
        if self.request_id.is_none() {
            self.request_id.clone_from(&other.request_id);
        }
        if self.book_id.is_none() {
            self.book_id.clone_from(&other.book_id);
        }
        if self.job_id.is_none() {
            self.job_id = other.job_id;
        }
        if self.tenant.is_none() {
            self.tenant.clone_from(&other.tenant);
        }
    }

    /// Whether `name` is one of the ids; if so, it is kept.
    fn take(&mut self, name: &str, value: &Value) -> bool {
        let text = || match value {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        };
        match name {
            "request_id" => self.request_id = text(),
            "book.id" | "book_id" => self.book_id = text(),
            "job.id" | "job_id" => {
                self.job_id = value
                    .as_i64()
                    .or_else(|| value.as_str().and_then(|s| s.parse().ok()));
            }
            "tenant" => self.tenant = text(),
            _ => return false,
        }
        true
    }
}

/// Collects an event's or a span's fields.
#[derive(Default)]
struct Fields {
    message: Option<String>,
    ids: Ids,
    rest: Map<String, Value>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: Value) {
        let name = field.name();
        // URLs lose their secrets here as in the text and JSON lines (`config::secret`).
        let value = match value {
            Value::String(text) => {
                let redacted = match crate::config::redact_urls(&text) {
                    std::borrow::Cow::Owned(redacted) => Some(redacted),
                    std::borrow::Cow::Borrowed(_) => None,
                };
                Value::String(redacted.unwrap_or(text))
            }
            other => other,
        };
        if name == "message" {
            self.message = Some(match value {
                Value::String(s) => s,
                other => other.to_string(),
            });
        } else if !self.ids.take(name, &value) {
            self.rest.insert(name.to_owned(), value);
        }
    }
}

impl Visit for Fields {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::from(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::from(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, Value::from(value.to_string()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::from(format!("{value:?}")));
    }
}

impl<S> Layer<S> for Capture
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if !fields.ids.is_empty()
            && let Some(span) = ctx.span(id)
        {
            span.extensions_mut().insert(fields.ids);
        }
    }

    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        values.record(&mut fields);
        if fields.ids.is_empty() {
            return;
        }
        if let Some(span) = ctx.span(id) {
            let mut extensions = span.extensions_mut();
            match extensions.get_mut::<Ids>() {
                Some(ids) => {
                    let mut newer = fields.ids;
                    newer.fill_from(ids);
                    *ids = newer;
                }
                None => extensions.insert(fields.ids),
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let metadata = event.metadata();
        if metadata.target() == OWN_TARGET {
            return;
        }
        let now = chrono::Utc::now();
        if !self.rate.admit(u64::try_from(now.timestamp()).unwrap_or(0)) {
            count_dropped(1);
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope {
                if let Some(ids) = span.extensions().get::<Ids>() {
                    fields.ids.fill_from(ids);
                }
            }
        }
        let line = Line {
            at: now.timestamp_micros(),
            request_id: fields.ids.request_id,
            book_id: fields.ids.book_id,
            job_id: fields.ids.job_id,
            tenant: fields.ids.tenant,
            ..self.origin.line(
                Level::from(metadata.level()),
                metadata.target(),
                fields.message.unwrap_or_default(),
                fields.rest,
            )
        };
        if self.sender.try_send(line).is_err() {
            count_dropped(1);
        } else {
            self.backlog.sent.fetch_add(1, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    static UNCOUNTED: Backlog = Backlog::new();

    fn captured(capacity: usize, log: impl FnOnce()) -> (Vec<Line>, u64) {
        let (capture, mut receiver) = Capture::with_channel("web", capacity, &UNCOUNTED);
        let before = dropped();
        let subscriber = tracing_subscriber::registry().with(capture);
        tracing::subscriber::with_default(subscriber, log);
        let mut lines = Vec::new();
        while let Ok(line) = receiver.try_recv() {
            lines.push(line);
        }
        (lines, dropped() - before)
    }

    #[test]
    fn an_event_carries_its_fields_and_the_ids_of_its_spans() {
        let (lines, _) = captured(16, || {
            let request = tracing::error_span!("request", request_id = "r-1");
            let _request = request.enter();
            let job = tracing::info_span!("job", job.id = 42_i64, tenant = "alice");
            let _job = job.enter();
            tracing::info!(book.id = "b-1", pages = 3, done = true, "book published");
            tracing::warn!(error = %"disk full", "could not write");
        });
        assert_eq!(lines.len(), 2, "{lines:?}");
        let published = &lines[0];
        assert_eq!(published.message, "book published");
        assert_eq!(published.level, Level::Info);
        assert_eq!(published.role, "web");
        assert_eq!(published.pid, i64::from(std::process::id()));
        assert_eq!(published.request_id.as_deref(), Some("r-1"));
        assert_eq!(published.job_id, Some(42));
        assert_eq!(published.tenant.as_deref(), Some("alice"));
        assert_eq!(published.book_id.as_deref(), Some("b-1"));
        assert_eq!(published.fields.get("pages"), Some(&Value::from(3)));
        assert_eq!(published.fields.get("done"), Some(&Value::from(true)));
        assert!(!published.fields.contains_key("book.id"), "ids are columns");
        let warned = &lines[1];
        assert_eq!(warned.level, Level::Warn);
        assert_eq!(warned.book_id, None, "another event's field");
        assert_eq!(warned.fields.get("error"), Some(&Value::from("disk full")));
    }

    #[test]
    fn a_full_channel_drops_and_counts_and_never_waits() {
        let (lines, dropped) = captured(4, || {
            for n in 0..10 {
                tracing::info!(n, "flood");
            }
        });
        assert_eq!(lines.len(), 4);
        assert!(dropped >= 6, "dropped {dropped}");
    }

    #[test]
    fn beyond_the_rate_events_are_dropped_and_counted() {
        let (mut capture, mut receiver) = Capture::with_channel("worker", 100, &UNCOUNTED);
        capture.rate = RateLimit::new(5);
        let before = dropped();
        let subscriber = tracing_subscriber::registry().with(capture);
        tracing::subscriber::with_default(subscriber, || {
            for n in 0..20 {
                tracing::info!(n, "flood");
            }
        });
        let mut kept = 0;
        while receiver.try_recv().is_ok() {
            kept += 1;
        }
        // Within one second, or across the turn of one: 5, or at most twice that.
        assert!((5..=10).contains(&kept), "kept {kept}");
        assert!(dropped() - before >= 10);
        let limit = RateLimit::new(2);
        assert!(limit.admit(7) && limit.admit(7) && !limit.admit(7));
        assert!(limit.admit(8), "a new second");
    }

    #[test]
    fn the_writers_own_events_are_not_captured() {
        let (lines, _) = captured(16, || {
            tracing::warn!(target: "bindery::logbook::writer", "writing log lines failed");
            tracing::info!("kept");
        });
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].message, "kept");
    }
}
