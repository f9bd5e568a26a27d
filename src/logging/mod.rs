//! Logging for both processes: one stream on stdout (which the worker child inherits, so the
//! platform sees web and worker together), daily files per role in `LOG_DIR` capped by size
//! (`log_files::appender`; none when `LOG_DIR` is off), and the
//! database (`logbook`), where every process on every machine meets.
//! One-shot commands log to stderr only, keeping stdout for what they print.
//!
//! Every line carries the role and the pid, in text as a `web[1234]` prefix (the way app hosts
//! print their dynos) and in JSON as `role` and `pid` keys. Text lines escape every control
//! character a value holds (`text`), so text from outside cannot forge or hide a line.

use std::fmt;
use std::io::IsTerminal;

use tracing::{Event, Subscriber};
use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::fmt::format::{self, FormatEvent, FormatFields, Writer};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::config::{Config, LogFormat, redact_urls};

pub(crate) mod text;

use text::TextFields;

/// Which process is logging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Web,
    Worker,
    /// One-shot commands (`migrate`, `jobs`, `token`): stderr only, no files. Their stdout is
    /// their output (`TOKEN=$(bindery token create alice)`), so no log line may land there.
    Cli,
}

impl Role {
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Web => "web",
            Role::Worker => "worker",
            Role::Cli => "cli",
        }
    }
}

/// Keeps the background log writers alive; dropping it flushes them. `main` drops it before
/// the process exits, because `std::process::exit` runs no destructors.
pub struct TelemetryGuard {
    _guards: Vec<WorkerGuard>,
}

/// A duration as the `duration_ms` field of a log line: milliseconds to the microsecond, so
/// that a line reads `duration_ms=0.099`, not `0.09905699999999999`.
pub fn millis(duration: std::time::Duration) -> f64 {
    (duration.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

/// Installs the global subscriber for this process.
pub fn init(role: Role, config: &Config) -> anyhow::Result<TelemetryGuard> {
    let mut guards = Vec::new();
    let (stream, guard, terminal) = if role == Role::Cli {
        let (stream, guard) = writer("log-stderr").finish(std::io::stderr());
        (stream, guard, std::io::stderr().is_terminal())
    } else {
        let (stream, guard) = writer("log-stdout").finish(std::io::stdout());
        (stream, guard, std::io::stdout().is_terminal())
    };
    guards.push(guard);
    let ansi = config.log_format == LogFormat::Text && terminal;
    let stream_layer = layer::<_, Stream>(role, config.log_format, ansi, stream);

    let file_layer = match (&config.log_dir, role) {
        (None, _) | (_, Role::Cli) => None,
        (Some(dir), _) => {
            let appender = crate::log_files::appender::Appender::new(
                dir.clone(),
                role.as_str(),
                config.log_max_file_size,
                config.log_max_files,
            )?;
            let (files, guard) = writer("log-files").finish(appender);
            guards.push(guard);
            Some(layer::<_, Files>(role, config.log_format, false, files))
        }
    };

    // The web and worker processes also keep their lines in the database (`logbook`), once
    // their writer starts.
    let logbook = (role != Role::Cli)
        .then(|| crate::logbook::Capture::install(role.as_str(), config.log_max_rate));

    tracing_subscriber::registry()
        .with(EnvFilter::try_new(&config.log_filter)?)
        .with(stream_layer)
        .with(file_layer)
        .with(logbook)
        .try_init()?;
    Ok(TelemetryGuard { _guards: guards })
}

/// A background writer whose queue is small enough to stay out of the memory budget and that
/// blocks rather than drops lines when the queue is full: a lost log line is worse than a
/// briefly slower request. The queue is allocated whole at start, 32 bytes a line: the
/// default's 128k lines took several MiB per writer, and 8192 still took a quarter of every
/// idle process's heap (two writers each, 1 MiB of the idle `serve` pair's 42 MB, per
/// `scripts/bench-startup`). A thousand lines is more than a burst needs while the writer
/// thread copies them to a pipe or a file.
fn writer(thread: &str) -> NonBlockingBuilder {
    NonBlockingBuilder::default()
        .buffered_lines_limit(1024)
        .lossy(false)
        .thread_name(thread)
}

/// The layer writing stdout (or stderr), and the one writing the files: each its own type of
/// text field formatter (see [`TextFields`]).
enum Stream {}
enum Files {}

fn layer<S, W: 'static>(
    role: Role,
    format: LogFormat,
    ansi: bool,
    writer: tracing_appender::non_blocking::NonBlocking,
) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let tag = ProcessTag {
        role,
        pid: std::process::id(),
    };
    match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_ansi(ansi)
            .fmt_fields(TextFields::<W>::new())
            .with_writer(writer)
            .event_format(TaggedText {
                tag,
                inner: format::Format::default().with_ansi(ansi),
            })
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(writer)
            .event_format(TaggedJson {
                tag,
                inner: format::Format::default()
                    .json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_span_list(true),
            })
            .boxed(),
    }
}

#[derive(Clone, Copy)]
struct ProcessTag {
    role: Role,
    pid: u32,
}

struct TaggedText {
    tag: ProcessTag,
    inner: format::Format<format::Full>,
}

impl<S, N> FormatEvent<S, N> for TaggedText
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = String::with_capacity(256);
        // The inner format sets the writer's ANSI flag itself (`with_ansi` above).
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        write!(
            writer,
            "{}[{}] {}",
            self.tag.role.as_str(),
            self.tag.pid,
            redact_urls(&line)
        )
    }
}

struct TaggedJson {
    tag: ProcessTag,
    inner: format::Format<format::Json>,
}

impl<S, N> FormatEvent<S, N> for TaggedJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    format::Format<format::Json>: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = String::with_capacity(256);
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        let line = redact_urls(&line);
        // The JSON formatter always writes one object; splice our two keys in at its start.
        match line.strip_prefix('{') {
            Some(rest) => write!(
                writer,
                "{{\"role\":\"{}\",\"pid\":{},{}",
                self.tag.role.as_str(),
                self.tag.pid,
                rest
            ),
            None => writer.write_str(line.as_ref()),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_read_without_float_noise() {
        let shown = |nanos: u64| super::millis(std::time::Duration::from_nanos(nanos)).to_string();
        assert_eq!(shown(99_056), "0.099");
        assert_eq!(shown(1_234_567_890), "1234.568");
        assert_eq!(shown(0), "0");
    }
}
