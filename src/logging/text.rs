//! Text log lines that a terminal shows as they are: every value a text line carries (an
//! event's message, its fields, its spans' fields) is escaped where it is formatted, here
//! (`log_files::text::escape` says why and what), so no field can carry a raw control into stdout
//! or the log files.

use std::fmt;
use std::marker::PhantomData;

use tracing::field::{Field, Visit};

use crate::log_files::text::escape;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::Writer;

/// How a text line's fields are written: `message key=value key="text"`, as
/// tracing-subscriber's default, with every value escaped.
///
/// `W` tells the layers apart. tracing-subscriber keeps a span's formatted fields in the span,
/// keyed by the formatter's type, and every layer that shares the type appends a field recorded
/// later (a job's `tenant` and `book.id`) to the same text: two layers with one type printed
/// `tenant="dave" tenant="dave"`.
pub struct TextFields<W> {
    layer: PhantomData<fn() -> W>,
}

impl<W> TextFields<W> {
    pub fn new() -> Self {
        TextFields { layer: PhantomData }
    }
}

impl<'writer, W: 'static> FormatFields<'writer> for TextFields<W> {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut visitor = Visitor {
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct Visitor<'writer> {
    writer: Writer<'writer>,
    first: bool,
    result: fmt::Result,
}

impl Visitor<'_> {
    fn write(&mut self, field: &Field, value: &str) {
        if self.result.is_err() {
            return;
        }
        let name = field.name();
        // `log` crate records bridged by tracing-log: their metadata is the event's own. And
        // the mark of a line written for a book's author, which only the book's log reads.
        if name.starts_with("log.") || name == "for_author" {
            return;
        }
        let separator = if self.first { "" } else { " " };
        self.first = false;
        self.result = if name == "message" {
            write!(self.writer, "{separator}{}", escape(value))
        } else {
            let name = name.strip_prefix("r#").unwrap_or(name);
            write!(self.writer, "{separator}{name}={}", escape(value))
        };
    }
}

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.write(field, value);
        } else {
            // Quoted, as the default formatter does, so a value's spaces cannot pass for the
            // next field.
            self.write(field, &format!("{value:?}"));
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.write(field, &value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // A `%value` field arrives here too, its Debug being its Display.
        self.write(field, &format!("{value:?}"));
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt;

    use crate::log_files::text::is_unsafe;

    use super::*;

    /// Formats with two fmt layers, as the stream and the files are: a span field recorded
    /// after the span was made appears once in each.
    #[test]
    fn every_value_is_escaped_and_a_span_field_recorded_later_appears_once() {
        struct First;
        struct Second;
        fn layer<S, W: 'static>(out: Captured) -> impl tracing_subscriber::Layer<S> + Send + Sync
        where
            S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
        {
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .without_time()
                .with_target(false)
                .fmt_fields(TextFields::<W>::new())
                .with_writer(move || out.clone())
        }
        let (one, two) = (Captured::default(), Captured::default());
        let subscriber = tracing_subscriber::registry()
            .with(layer::<_, First>(one.clone()))
            .with(layer::<_, Second>(two.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("job", job.id = 7, tenant = tracing::field::Empty);
            span.record("tenant", "dave\u{1b}]0;owned\u{7}");
            let _entered = span.enter();
            let title = "T\u{1b}[2K\nweb[1] ERROR forged";
            tracing::info!(%title, quoted = title, "published {title}");
        });
        for out in [one, two] {
            let text = out.text();
            assert_eq!(text.lines().count(), 1, "{text}");
            assert!(!text.trim_end().chars().any(is_unsafe), "{text:?}");
            assert_eq!(text.matches("tenant=").count(), 1, "{text}");
            assert!(
                text.contains("job{job.id=7 tenant=\"dave\\u{1b}]0;owned\\u{7}\"}"),
                "{text}"
            );
            assert!(
                text.contains("published T\\u001b[2K\\u000aweb[1] ERROR forged"),
                "{text}"
            );
            assert!(
                text.contains("title=T\\u001b[2K\\u000aweb[1] ERROR forged"),
                "{text}"
            );
        }
    }

    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
        }
    }

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
