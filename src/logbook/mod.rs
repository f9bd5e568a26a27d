//! The logbook: every web and worker process's log events, kept in the database, so that
//! `bindery logs` shows all processes on all machines as one stream, merged by time. Storage is
//! already the one channel between processes; logs travel through it too.
//!
//! - `capture`: a `tracing` layer that turns each event into a [`Line`] and hands it to a
//!   bounded channel without waiting. When the channel is full the event is dropped and
//!   counted ([`dropped`]): logging never blocks a request or a job.
//! - `writer`: a task that takes what the channel holds and inserts it in batches, and on
//!   PostgreSQL wakes live followers with `NOTIFY`.
//! - `store`: the SQL: insert, read with filters, prune to `LOG_RETENTION` and
//!   `LOG_MAX_LINES`.
//!
//! The files in `LOG_DIR` and stdout are written as before; the logbook is one more place.
//!
//! A line that names a book is also shown to the book's tenant, in the book's log
//! (`books::log`), but by allowlist: an event whose words are meant for the book's
//! author says so where it is logged, with the field `for_author = true`, and shows its
//! message and a few listed fields; any other warning is summarised, and the rest left out.

mod capture;
pub mod store;
mod writer;

use serde::Serialize;

pub use capture::{Capture, dropped, flush};
pub use store::{Filter, Follow};
pub use writer::Writer;

/// The `NOTIFY` channel a batch of new lines is announced on (PostgreSQL).
pub const CHANNEL: &str = "bindery_logs";

/// One log event as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Line {
    /// Kept by the database; 0 until the line is stored.
    #[serde(skip)]
    pub id: i64,
    /// Unix microseconds, from the clock of the process that logged it.
    pub at: i64,
    pub level: Level,
    pub role: String,
    pub host: String,
    pub pid: i64,
    pub target: String,
    pub message: String,
    /// The event's other fields.
    pub fields: serde_json::Map<String, serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub book_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// A line's level, stored as a small number so that "this level or worse" is `<=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
    Trace = 5,
}

impl Level {
    pub fn number(self) -> i16 {
        self as i16
    }

    pub fn from_number(n: i64) -> Level {
        match n {
            ..=1 => Level::Error,
            2 => Level::Warn,
            3 => Level::Info,
            4 => Level::Debug,
            _ => Level::Trace,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
            Level::Trace => "TRACE",
        }
    }

    /// `error`, `warn`, `info`, `debug` or `trace`, in any case.
    pub fn parse(text: &str) -> Option<Level> {
        [
            Level::Error,
            Level::Warn,
            Level::Info,
            Level::Debug,
            Level::Trace,
        ]
        .into_iter()
        .find(|l| l.as_str().eq_ignore_ascii_case(text.trim()))
    }
}

impl From<&tracing::Level> for Level {
    fn from(level: &tracing::Level) -> Self {
        match *level {
            tracing::Level::ERROR => Level::Error,
            tracing::Level::WARN => Level::Warn,
            tracing::Level::INFO => Level::Info,
            tracing::Level::DEBUG => Level::Debug,
            tracing::Level::TRACE => Level::Trace,
        }
    }
}

/// Unix microseconds as RFC 3339 in UTC, to the microsecond.
pub fn timestamp(at: i64) -> String {
    chrono::DateTime::from_timestamp_micros(at)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
        .unwrap_or_else(|| at.to_string())
}

impl Line {
    /// The line as one JSON object, with the keys of `LOG_FORMAT=json`'s lines (`timestamp`,
    /// `level`, `role`, `pid`, `message`, the fields at the top level) plus `host`, `target`
    /// and the ids.
    pub fn json(&self) -> serde_json::Value {
        use serde_json::Value;
        let mut object = serde_json::Map::new();
        object.insert("timestamp".into(), Value::from(self.timestamp()));
        object.insert("level".into(), Value::from(self.level.as_str()));
        object.insert("role".into(), Value::from(self.role.clone()));
        object.insert("host".into(), Value::from(self.host.clone()));
        object.insert("pid".into(), Value::from(self.pid));
        object.insert("target".into(), Value::from(self.target.clone()));
        object.insert("message".into(), Value::from(self.message.clone()));
        for (key, value) in &self.fields {
            object.entry(key.clone()).or_insert_with(|| value.clone());
        }
        object.extend(self.ids());
        Value::Object(object)
    }

    /// The ids the line belongs to, those it has, by the keys of the fields that name them.
    fn ids(&self) -> impl Iterator<Item = (String, serde_json::Value)> + use<> {
        use serde_json::Value;
        [
            ("request_id", self.request_id.clone().map(Value::from)),
            ("book.id", self.book_id.clone().map(Value::from)),
            ("job.id", self.job_id.map(Value::from)),
            ("tenant", self.tenant.clone().map(Value::from)),
        ]
        .into_iter()
        .filter_map(|(key, value)| Some((key.to_owned(), value?)))
    }

    /// RFC 3339 in UTC, to the microsecond.
    pub fn timestamp(&self) -> String {
        timestamp(self.at)
    }

    /// One line of text, as `bindery logs` prints it: time, process, level, message, fields,
    /// with every control character escaped (`log_files::text::escape`).
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let time = self.timestamp();
        let mut out = format!(
            "{time} {}[{}]@{} {:>5} {}",
            self.role,
            self.pid,
            self.host,
            self.level.as_str(),
            self.message
        );
        // An id the event also had as a field is printed once, with the fields.
        let ids = self.ids().filter(|(key, _)| !self.fields.contains_key(key));
        // The mark of a line written for a book's author is for the book's log, not a reader.
        let fields = self
            .fields
            .iter()
            .filter(|(key, _)| *key != "for_author")
            .map(|(key, value)| (key.clone(), value.clone()));
        for (key, value) in ids.chain(fields) {
            let _ = match value {
                serde_json::Value::String(s) => write!(out, " {key}={s}"),
                other => write!(out, " {key}={other}"),
            };
        }
        crate::log_files::text::escape(&out).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn a_line_prints_its_ids_once_as_text_and_as_json() {
        let mut fields = serde_json::Map::new();
        fields.insert("tenant".into(), Value::from("alice"));
        fields.insert("pages".into(), Value::from(3));
        let line = Line {
            id: 1,
            at: 1_700_000_000_123_456,
            level: Level::Warn,
            role: "worker".into(),
            host: "h".into(),
            pid: 7,
            target: "t".into(),
            message: "step failed".into(),
            fields,
            request_id: None,
            book_id: Some("b-1".into()),
            job_id: Some(42),
            tenant: Some("alice".into()),
        };
        assert_eq!(
            line.text(),
            "2023-11-14T22:13:20.123456Z worker[7]@h  WARN step failed book.id=b-1 job.id=42 pages=3 tenant=alice"
        );
        assert_eq!(
            line.json(),
            json!({
                "timestamp": "2023-11-14T22:13:20.123456Z", "level": "WARN", "role": "worker",
                "host": "h", "pid": 7, "target": "t", "message": "step failed", "pages": 3,
                "tenant": "alice", "book.id": "b-1", "job.id": 42,
            })
        );
    }

    #[test]
    fn a_lines_text_holds_no_control_character_and_its_json_keeps_them() {
        let mut fields = serde_json::Map::new();
        fields.insert("title".into(), Value::from("a\u{2028}b\u{202e}c"));
        fields.insert("list".into(), json!(["x\u{1b}[2J"]));
        let line = Line {
            id: 1,
            at: 1_700_000_000_000_000,
            level: Level::Info,
            role: "web".into(),
            host: "h".into(),
            pid: 7,
            target: "t".into(),
            message: "\u{1b}[1G\u{1b}[2Kweb[1] ERROR forged\nline".into(),
            fields,
            request_id: None,
            book_id: None,
            job_id: None,
            tenant: None,
        };
        let text = line.text();
        assert!(
            !text.chars().any(crate::log_files::text::is_unsafe),
            "{text:?}"
        );
        assert!(
            text.contains("\\u001b[2Kweb[1] ERROR forged\\u000aline"),
            "{text}"
        );
        assert!(text.contains("title=a\\u2028b\\u202ec"), "{text}");
        assert_eq!(line.json()["title"], "a\u{2028}b\u{202e}c");
    }
}
