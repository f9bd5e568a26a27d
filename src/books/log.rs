//! A book's own log, as its tenant reads it. Every line a web or worker process logged about
//! the book (its upload, each step's run, a failure and its retries, a webhook's delivery)
//! carries its id (see `logbook`), so the book's log is those lines, filtered by what the
//! tenant may see. The API (`/api/v1/books/{id}/logs`) and the book's page both show it.

use serde::Serialize;
use utoipa::ToSchema;

use super::id::BookId;
use crate::logbook::{self, Level, Line};
use crate::storage::Database;

/// Lines shown when the request does not say.
pub const LINES_DEFAULT: i64 = 200;

/// One line of a book's log, as its tenant sees it: a line written for the book's author
/// (see [`of_book`]), or the summary of a problem whose details are the operator's.
#[derive(Debug, Serialize, ToSchema)]
pub struct BookLogLine {
    /// When it was logged: RFC 3339 in UTC, to the microsecond.
    #[schema(example = "2026-11-24T10:15:03.123456Z")]
    pub timestamp: String,
    /// `ERROR`, `WARN`, `INFO`, `DEBUG` or `TRACE`.
    #[schema(example = "INFO")]
    pub level: &'static str,
    /// The process that logged it: `web` or `worker`.
    #[schema(example = "worker")]
    pub role: String,
    #[schema(example = "book published")]
    pub message: String,
    /// What the line says besides its message (`chapters`, `bytes`, `retry_in`, `title`…).
    #[schema(value_type = Object)]
    pub fields: serde_json::Map<String, serde_json::Value>,
    /// The job (conversion step) that logged it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<i64>,
    /// The `X-Request-Id` of the request that logged it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// The fields a line written for the author may show; any other field (an error's text, a
/// host, a path, an address, a process id) stays in the operator's log.
const AUTHOR_FIELDS: &[&str] = &[
    "file_name",
    "format",
    "encoding",
    "bytes",
    "chapters",
    "files",
    "epub_bytes",
    "title",
    "code",
    "reason",
    "event",
    "status",
    "attempt",
    "attempts",
    "retry_in",
    "revision",
];

/// What a tenant reads in place of a warning or error that was not written for them.
const SUMMARY: &str = "a problem was logged here; the operator's log has the details";

/// A book's lines as its tenant may read them. The tenant is shown a line's message only when
/// the event was written for the book's author, marked `for_author = true` where it is logged
/// (its words are meant for them), and of its fields only [`AUTHOR_FIELDS`]. A warning or error
/// that was not becomes [`SUMMARY`], once for a run of them from the same job, keeping its
/// time, level, job and request id, which the operator can look up (`bindery logs --job`),
/// unless its job told the author what went wrong itself (a refused manuscript says why, and
/// the engine's "job discarded" after it would only repeat it); anything else is left out. An
/// allowlist, because a message can carry anything: a child process's error output names the
/// server's paths, a refused webhook the addresses its host resolved to.
pub fn of_book(lines: Vec<Line>) -> Vec<BookLogLine> {
    let for_author =
        |line: &Line| line.fields.get("for_author") == Some(&serde_json::Value::Bool(true));
    let explained: Vec<Option<i64>> = lines
        .iter()
        .filter(|line| for_author(line) && line.level <= Level::Warn && line.job_id.is_some())
        .map(|line| line.job_id)
        .collect();
    let mut shown: Vec<BookLogLine> = Vec::with_capacity(lines.len());
    let mut summarising: Option<Option<i64>> = None;
    for line in lines {
        let (message, fields) = if for_author(&line) {
            summarising = None;
            let fields = line
                .fields
                .into_iter()
                .filter(|(key, _)| AUTHOR_FIELDS.contains(&key.as_str()))
                .collect();
            (line.message, fields)
        } else if line.level <= Level::Warn
            && summarising != Some(line.job_id)
            && !explained.contains(&line.job_id)
        {
            summarising = Some(line.job_id);
            (SUMMARY.to_owned(), serde_json::Map::new())
        } else {
            continue;
        };
        shown.push(BookLogLine {
            timestamp: crate::logbook::timestamp(line.at),
            level: line.level.as_str(),
            role: line.role,
            message,
            fields,
            job: line.job_id,
            request_id: line.request_id,
        });
    }
    shown
}

/// Most of the book's stored lines read to find the last `n` a tenant may see: the lines left
/// out (steps' own detail, lines for the operator) are far fewer than this in any real book.
const READ_PER_SHOWN: i64 = 4;

/// The last `n` lines of book `id` that its tenant may see ([`of_book`]); the caller has
/// already been shown to own the book.
pub async fn lines(db: &Database, id: &BookId, n: i64) -> anyhow::Result<Vec<BookLogLine>> {
    let stored = logbook::store::of_book(db, id, n.saturating_mul(READ_PER_SHOWN))
        .await
        .map_err(|e| anyhow::Error::new(e).context("reading the book's log lines"))?;
    let mut shown = of_book(stored);
    let skip = shown
        .len()
        .saturating_sub(usize::try_from(n).unwrap_or(usize::MAX));
    shown.drain(..skip);
    Ok(shown)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn line(level: Level, job: Option<i64>, message: &str, fields: serde_json::Value) -> Line {
        Line {
            id: 3,
            at: 1_700_000_000_000_000,
            level,
            role: "worker".into(),
            host: "worker-7.internal".into(),
            pid: 41,
            target: "bindery::pipeline::reading".into(),
            message: message.into(),
            fields: fields.as_object().cloned().unwrap_or_default(),
            request_id: None,
            book_id: Some("b-1".into()),
            job_id: job,
            tenant: Some("alice".into()),
        }
    }

    #[test]
    fn a_tenant_reads_the_lines_written_for_the_author_and_a_summary_of_the_rest() {
        let shown = of_book(vec![
            line(
                Level::Info,
                Some(9),
                "manuscript read",
                json!({
                    "for_author": true, "chapters": 12, "path": "/srv/data/blobs/books/b-1",
                }),
            ),
            // A child's error output, a storage error, a refused webhook's addresses.
            line(
                Level::Warn,
                Some(10),
                "Unable to open file /srv/data/blobs/books/b-1/x/book.json",
                json!({"child.pid": 4242}),
            ),
            line(
                Level::Warn,
                Some(10),
                "connecting to db.internal:5432: refused",
                json!({}),
            ),
            line(
                Level::Warn,
                Some(11),
                "refused a webhook to a non-public address",
                json!({
                    "host": "intranet.corp", "addresses": "[10.0.0.7:0]",
                }),
            ),
            line(
                Level::Info,
                Some(10),
                "claimed by worker 7 on host h",
                json!({}),
            ),
            line(
                Level::Warn,
                Some(12),
                "job failed; will retry",
                json!({
                    "for_author": true, "retry_in": "1s", "error": "storage at 10.0.0.5 refused",
                    "causes": ["refused"],
                }),
            ),
            line(
                Level::Warn,
                Some(13),
                "manuscript refused",
                json!({
                    "for_author": true, "code": "empty_manuscript", "reason": "The manuscript is empty.",
                }),
            ),
            line(
                Level::Warn,
                Some(13),
                "job discarded: it cannot succeed",
                json!({
                    "error": "The manuscript is empty.",
                }),
            ),
        ]);
        let shown = serde_json::to_value(&shown).expect("json");
        assert_eq!(
            shown,
            json!([
                {"timestamp": "2023-11-14T22:13:20.000000Z", "level": "INFO", "role": "worker",
                 "message": "manuscript read", "fields": {"chapters": 12}, "job": 9},
                {"timestamp": "2023-11-14T22:13:20.000000Z", "level": "WARN", "role": "worker",
                 "message": SUMMARY, "fields": {}, "job": 10},
                {"timestamp": "2023-11-14T22:13:20.000000Z", "level": "WARN", "role": "worker",
                 "message": SUMMARY, "fields": {}, "job": 11},
                {"timestamp": "2023-11-14T22:13:20.000000Z", "level": "WARN", "role": "worker",
                 "message": "job failed; will retry", "fields": {"retry_in": "1s"}, "job": 12},
                {"timestamp": "2023-11-14T22:13:20.000000Z", "level": "WARN", "role": "worker",
                 "message": "manuscript refused",
                 "fields": {"code": "empty_manuscript", "reason": "The manuscript is empty."},
                 "job": 13},
            ])
        );
    }
}
