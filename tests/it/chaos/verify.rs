//! What must hold once the faults are over, read from the database, the blob container, the
//! API and the webhook receiver; and the run's figures.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bindery::config::{DatabaseUrl, Secret};
use bindery::jobs::{JobQueue, NewJob};
use bindery::pipeline::SweepBlobs;
use bindery::storage::{BlobStore, Database};
use sqlx::Row;

use super::fleet::Fleet;
use super::load::{self, Expect, Manuscript, Submitted, Uploader};
use super::{Plan, faults::Record, say};
use crate::common::receiver::Receiver;
use crate::common::{self, succeed};

/// A book as stored.
#[derive(Debug, Clone)]
pub struct Book {
    pub id: String,
    pub tenant: String,
    pub key: Option<String>,
    pub status: String,
    pub error_code: Option<String>,
    pub file_name: String,
    pub modified: Option<String>,
    pub published_at: Option<i64>,
    pub updated_at: i64,
    /// The revision it shows, and the identifier it kept across its revisions.
    pub revision: i64,
    pub identifier: Option<String>,
}

/// What the checks found.
#[derive(Default)]
pub struct Results {
    pub failures: Vec<String>,
    pub books: BTreeMap<String, Book>,
    pub identical: usize,
    pub steps_rerun: i64,
    pub lost_workers: i64,
    /// How many jobs lost their worker once, twice…
    pub lost_histogram: Vec<(i32, i64)>,
    pub deliveries: usize,
    pub redeliveries: usize,
    pub orphans_swept: i64,
    /// Books sent new versions, and the versions superseded while they built.
    pub revised: usize,
    pub superseded: usize,
    /// Every error that spent an attempt, and how often.
    pub errors: BTreeMap<String, usize>,
    /// The workflows (a book's first revision is its id, a later one `{id}/r{n}`) retried
    /// through the API after a step of theirs lost its worker `MAX_LOST_WORKERS` times (see
    /// [`Checker::retry_stopped`]).
    pub retried: BTreeSet<String>,
}

impl Results {
    fn fail(&mut self, failure: String) {
        self.failures.push(failure);
    }

    pub fn assert_all_held(&self) {
        assert!(
            self.failures.is_empty(),
            "{} checks failed:\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}

pub struct Checker {
    runtime: tokio::runtime::Runtime,
    pool: sqlx::PgPool,
    queue: JobQueue,
    blobs: BlobStore,
}

/// Jobs of these states have not finished. Cron jobs wait in `maintenance` for their hour.
const UNFINISHED: &str = "(state IN ('available', 'running', 'waiting') \
     OR (state = 'scheduled' AND queue <> 'maintenance'))";

/// The error a job's history records when its lease ran out under a worker that died or froze.
const LEASE_EXPIRED: &str = "lease expired";

/// What a job's history records when it lost its worker `MAX_LOST_WORKERS` times, and what its
/// join records when it was cancelled for it.
const STOPPED_FOR_LOST_WORKERS: &str = "stopped: the worker running this job died or froze";

impl Checker {
    pub fn connect(database_url: &str, azurite: &str, container: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let (pool, queue) = runtime.block_on(async {
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(2)
                .connect(database_url)
                .await
                .expect("connect to the chaos database");
            let db = Database::connect(
                &DatabaseUrl::Postgres {
                    url: Secret::new(database_url.parse().expect("url")),
                },
                2,
            )
            .await
            .expect("connect");
            (pool, JobQueue::new(db))
        });
        Self {
            runtime,
            pool,
            queue,
            blobs: crate::azure::store_at(azurite, container),
        }
    }

    fn count(&self, sql: &str) -> i64 {
        self.runtime
            .block_on(
                sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql.to_owned()))
                    .fetch_one(&self.pool),
            )
            .unwrap_or(-1)
    }

    /// Every attempt a book's jobs spent, with when, on which worker and why, one per line: what
    /// to read the process logs against when a book ended wrong.
    fn attempts_of(&self, book: &str) -> String {
        self.attempts("workflow = $1", book)
    }

    /// Writes the attempts of every job that lost its worker more than once to
    /// `lost-workers.log` in the run's directory, to read against `faults.log`.
    pub fn write_lost_twice(&self, dir: &std::path::Path) {
        let mut lines = self.attempts("lost_workers >= 2 AND $1 = $1", "");
        // How long each kind's last attempt ran: the longer, the likelier a kill lands in it.
        let times = self
            .runtime
            .block_on(
                sqlx::query(
                    "SELECT kind, count(*), \
                     percentile_disc(0.5) WITHIN GROUP (ORDER BY finished_at - started_at), \
                     max(finished_at - started_at) \
                     FROM jobs WHERE state = 'completed' GROUP BY kind ORDER BY 4 DESC",
                )
                .fetch_all(&self.pool),
            )
            .unwrap_or_default();
        lines.push_str("\nrun time of the last attempt, by kind (ms):");
        for row in times {
            lines.push_str(&format!(
                "\n  {}: {} jobs, median {}, max {}",
                row.get::<String, _>(0),
                row.get::<i64, _>(1),
                row.get::<Option<i64>, _>(2).unwrap_or_default(),
                row.get::<Option<i64>, _>(3).unwrap_or_default()
            ));
        }
        let _ = std::fs::write(dir.join("lost-workers.log"), lines);
    }

    fn attempts(&self, condition: &str, bind: &str) -> String {
        let rows = self
            .runtime
            .block_on(
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT id, kind, state, workflow, errors FROM jobs WHERE {condition} ORDER BY id"
                )))
                .bind(bind)
                .fetch_all(&self.pool),
            )
            .unwrap_or_default();
        let mut lines = Vec::new();
        for row in rows {
            let (id, kind, state, book, errors) = (
                row.get::<i64, _>(0),
                row.get::<String, _>(1),
                row.get::<String, _>(2),
                row.get::<Option<String>, _>(3),
                row.get::<String, _>(4),
            );
            lines.push(format!("  job {id} {kind} of {book:?}: {state}"));
            let history: Vec<serde_json::Value> = serde_json::from_str(&errors).unwrap_or_default();
            for entry in history {
                let at = entry["at"]
                    .as_i64()
                    .and_then(chrono::DateTime::from_timestamp_millis)
                    .map(|t| t.format("%H:%M:%S%.3f").to_string())
                    .unwrap_or_default();
                lines.push(format!(
                    "    attempt {} at {at} on {}: {}",
                    entry["attempt"], entry["worker"], entry["error"]
                ));
            }
        }
        lines.join("\n")
    }

    /// Waits until no book is processing and no job is unfinished, or fails naming them.
    pub fn wait_settled(&self, deadline: Instant, what: &str) {
        common::eventually(
            &format!("{what} to settle"),
            deadline.saturating_duration_since(Instant::now()),
            || {
                if self.count(BOOKS_PROCESSING) == 0 && self.count(&unfinished_jobs()) == 0 {
                    Ok(())
                } else {
                    Err(Unsettled(self))
                }
            },
        );
    }

    /// Retries, as its author would through the API, every good book that failed because one
    /// of its steps lost its worker `MAX_LOST_WORKERS` times, then waits for them to settle.
    ///
    /// That rule is the product's: a step that kills its worker every time must end, and the
    /// author is told so and may retry. The kills here come every few seconds, far more often
    /// than any host's, and in the suite's debug build a long step (packaging a big book) can
    /// be under three of them by bad luck alone. Nothing may be lost by it: the retried book
    /// must then be ready and identical to `bindery convert`'s, which the checks that follow hold.
    pub fn retry_stopped(&self, submitted: &[Submitted], uploader: &Uploader) -> BTreeSet<String> {
        // Each stopped revision's book and workflow: a book's first revision (its own id), or
        // a new version of a book that keeps showing an older one.
        let stopped: BTreeMap<String, String> = self
            .runtime
            .block_on(
                sqlx::query_as::<_, (String, String)>(
                    "SELECT b.id, b.id FROM books b WHERE b.status = 'failed' AND b.error_code = $1 \
                     AND EXISTS (SELECT 1 FROM jobs j WHERE j.workflow = b.id \
                                 AND j.state = 'dead' AND j.lost_workers >= $2) \
                     UNION \
                     SELECT r.book_id, r.book_id || '/r' || r.number FROM book_revisions r \
                     WHERE r.number > 1 AND r.status = 'failed' AND r.error_code = $1 \
                     AND EXISTS (SELECT 1 FROM jobs j WHERE j.workflow = r.book_id || '/r' || r.number \
                                 AND j.state = 'dead' AND j.lost_workers >= $2)",
                )
                .bind(bindery::books::STEP_FAILED)
                .bind(bindery::jobs::MAX_LOST_WORKERS)
                .fetch_all(&self.pool),
            )
            .expect("read the stopped books")
            .into_iter()
            .collect();
        for s in submitted.iter().filter(|s| s.planned.revises.is_none()) {
            let Some(id) = s.ids.first().filter(|id| stopped.contains_key(*id)) else {
                continue;
            };
            let port = uploader.ports[s.planned.n % uploader.ports.len()];
            let answer = uploader
                .http
                .post(format!("http://127.0.0.1:{port}/api/v1/books/{id}/retry"))
                .bearer_auth(&uploader.tokens[s.planned.tenant])
                .send()
                .expect("POST the retry");
            let status = answer.status();
            assert_eq!(
                status,
                reqwest::StatusCode::ACCEPTED,
                "retrying book {id}: {}\nits jobs' attempts:\n{}",
                answer.text().unwrap_or_default(),
                self.attempts_of(id)
            );
            say(&format!(
                "{} failed because a step lost its worker {} times; retried",
                stopped[id],
                bindery::jobs::MAX_LOST_WORKERS
            ));
        }
        if !stopped.is_empty() {
            self.wait_settled(
                Instant::now() + Duration::from_secs(60),
                "the retried books",
            );
        }
        stopped.into_values().collect()
    }

    fn books(&self) -> BTreeMap<String, Book> {
        let rows = self
            .runtime
            .block_on(
                sqlx::query(
                    "SELECT id, tenant, idempotency_key, status, error_code, file_name, options, \
                     published_at, updated_at, revision FROM books",
                )
                .fetch_all(&self.pool),
            )
            .expect("read the books");
        rows.iter()
            .map(|r| {
                let options: serde_json::Value =
                    serde_json::from_str(&r.get::<String, _>(6)).expect("options JSON");
                let book = Book {
                    id: r.get(0),
                    tenant: r.get(1),
                    key: r.get(2),
                    status: r.get(3),
                    error_code: r.get(4),
                    file_name: r.get(5),
                    modified: options["modified"].as_str().map(str::to_owned),
                    published_at: r.get(7),
                    updated_at: r.get(8),
                    revision: r.get(9),
                    identifier: options["identifier"].as_str().map(str::to_owned),
                };
                (book.id.clone(), book)
            })
            .collect()
    }

    /// Every check, each failure written down rather than stopping at the first.
    pub fn all(
        &self,
        submitted: &[Submitted],
        manuscripts: &[Manuscript],
        receiver: &Receiver,
        fleet: &Fleet,
        uploader: &Uploader,
        retried: BTreeSet<String>,
    ) -> Results {
        let mut results = Results {
            books: self.books(),
            retried,
            ..Results::default()
        };
        self.uploads_are_books(&mut results, submitted, manuscripts);
        self.jobs_finished(&mut results);
        webhooks_delivered(&mut results, submitted, receiver);
        self.epubs_identical(&mut results, submitted, manuscripts, fleet, uploader);
        self.sweep(&mut results);
        // After the sweep, which takes what a step frozen past its lease wrote after its
        // superseded revision's files were removed.
        self.revisions_hold(&mut results, submitted);
        results
    }

    /// Every upload that got a 2xx is exactly one book, of its tenant and key, with the status
    /// its manuscript calls for; and there is no other book.
    fn uploads_are_books(
        &self,
        results: &mut Results,
        submitted: &[Submitted],
        manuscripts: &[Manuscript],
    ) {
        let mut by_key: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for book in results.books.values() {
            let key = book.key.clone().unwrap_or_default();
            by_key
                .entry((book.tenant.clone(), key))
                .or_default()
                .push(book.id.clone());
        }
        let mut failures = Vec::new();
        for s in submitted {
            let p = &s.planned;
            if let Some(why) = &s.refused {
                failures.push(format!("upload {} was not accepted: {why}", p.n));
                continue;
            }
            if p.revises.is_some() {
                // A new version: its book is checked with the upload that made it.
                continue;
            }
            let ids: BTreeSet<&String> = s.ids.iter().collect();
            let stored = by_key
                .get(&(format!("tenant-{}", p.tenant), p.key.clone()))
                .cloned()
                .unwrap_or_default();
            if ids.len() != 1 || stored.len() != 1 || !ids.contains(&stored[0]) {
                failures.push(format!(
                    "upload {} (key {}): answered {ids:?}, stored as {stored:?}",
                    p.n, p.key
                ));
                continue;
            }
            let book = &results.books[&stored[0]];
            let expected = manuscripts[p.manuscript].expect;
            let ok = match expected {
                Expect::Ready => book.status == "ready",
                Expect::Failed(code) => {
                    book.status == "failed" && book.error_code.as_deref() == Some(code)
                }
            };
            if !ok {
                failures.push(format!(
                    "book {} ({}): {} {:?}, expected {expected:?}; its jobs' attempts:\n{}",
                    book.id,
                    manuscripts[p.manuscript].file_name,
                    book.status,
                    book.error_code,
                    self.attempts_of(&book.id)
                ));
            }
        }
        let accepted = submitted
            .iter()
            .filter(|s| s.refused.is_none() && s.planned.revises.is_none())
            .count();
        if results.books.len() != accepted {
            failures.push(format!(
                "{} books stored for {accepted} accepted uploads",
                results.books.len()
            ));
        }
        results.failures.extend(failures);
    }

    /// Each book sent new versions shows the newest one accepted, and each version before it
    /// was built, or superseded while it built (cancelled) with its files gone. A number taken
    /// by an upload a killed web process cut off stays `uploading`, seen by no one.
    fn revisions_hold(&self, results: &mut Results, submitted: &[Submitted]) {
        let mut newest: BTreeMap<String, u64> = BTreeMap::new();
        for s in submitted.iter().filter(|s| s.planned.revises.is_some()) {
            if let (Some(id), Some(number)) = (s.ids.first(), s.revision) {
                let n = newest.entry(id.clone()).or_default();
                *n = (*n).max(number);
            }
        }
        let rows = self
            .runtime
            .block_on(
                sqlx::query_as::<_, (String, i64, String)>(
                    "SELECT book_id, number, status FROM book_revisions ORDER BY book_id, number",
                )
                .fetch_all(&self.pool),
            )
            .expect("read the revisions");
        for (id, newest) in &newest {
            let Some(book) = results.books.get(id) else {
                continue;
            };
            if u64::try_from(book.revision).ok() != Some(*newest) || book.status != "ready" {
                results.fail(format!(
                    "book {id} shows revision {} ({}), not its newest, {newest}; its revisions: {:?}",
                    book.revision,
                    book.status,
                    rows.iter().filter(|r| r.0 == *id).map(|r| (r.1, &r.2)).collect::<Vec<_>>()
                ));
            }
            results.revised += 1;
        }
        for (id, number, status) in rows {
            if !newest.contains_key(&id) {
                continue;
            }
            match status.as_str() {
                "ready" | "uploading" => {}
                "cancelled" => {
                    results.superseded += 1;
                    let keys = self
                        .runtime
                        .block_on(self.blobs.list(&format!("books/{id}/")))
                        .expect("list the book's files");
                    let theirs = |key: &&String| {
                        let rest = &key[format!("books/{id}/").len()..];
                        if number == 1 {
                            !rest.starts_with("revisions/")
                        } else {
                            rest.starts_with(&format!("revisions/{number}/"))
                        }
                    };
                    let left: Vec<&String> = keys.iter().filter(theirs).collect();
                    if !left.is_empty() {
                        results.fail(format!(
                            "book {id}: superseded revision {number} still has files: {left:?}"
                        ));
                    }
                }
                other => results.fail(format!("book {id}: revision {number} is {other}")),
            }
        }
    }

    /// No job is unfinished, and only hostile books' steps are dead.
    fn jobs_finished(&self, results: &mut Results) {
        // A revision superseded while it built had its unfinished jobs cancelled.
        let superseded: BTreeSet<String> = self
            .runtime
            .block_on(
                sqlx::query_scalar::<_, String>(
                    "SELECT CASE WHEN number = 1 THEN book_id ELSE book_id || '/r' || number END \
                     FROM book_revisions WHERE status = 'cancelled'",
                )
                .fetch_all(&self.pool),
            )
            .expect("read the superseded revisions")
            .into_iter()
            .collect();
        let unfinished = self.count(&unfinished_jobs());
        if unfinished != 0 {
            results.fail(format!("{unfinished} jobs unfinished"));
        }
        let dead = self
            .runtime
            .block_on(
                sqlx::query(
                    "SELECT id, kind, workflow FROM jobs WHERE state NOT IN ('completed', 'scheduled')",
                )
                .fetch_all(&self.pool),
            )
            .expect("read jobs");
        for row in dead {
            let (id, kind, workflow) = (
                row.get::<i64, _>(0),
                row.get::<String, _>(1),
                row.get::<Option<String>, _>(2),
            );
            let hostile = workflow
                .as_ref()
                .and_then(|w| results.books.get(w))
                .is_some_and(|b| b.status == "failed");
            let cancelled = workflow.as_ref().is_some_and(|w| superseded.contains(w));
            if !hostile && !cancelled {
                results.fail(format!(
                    "job {id} ({kind}, book {workflow:?}) did not complete"
                ));
            }
        }
        // A killed or frozen worker's job is rescued when its lease expires, and that spends
        // an attempt; in a retried book, so did the step stopped for it, and the join
        // cancelled for that. Nothing else may: an outage of the storage is waited out.
        let histories = self
            .runtime
            .block_on(
                sqlx::query("SELECT id, kind, workflow, errors FROM jobs WHERE errors <> '[]'")
                    .fetch_all(&self.pool),
            )
            .expect("read job errors");
        for row in histories {
            let (id, kind, workflow, errors) = (
                row.get::<i64, _>(0),
                row.get::<String, _>(1),
                row.get::<Option<String>, _>(2),
                row.get::<String, _>(3),
            );
            let hostile = workflow
                .as_ref()
                .and_then(|w| results.books.get(w))
                .is_some_and(|b| b.status == "failed");
            let retried = workflow
                .as_ref()
                .is_some_and(|w| results.retried.contains(w));
            let cancelled = workflow.as_ref().is_some_and(|w| superseded.contains(w));
            let history: Vec<serde_json::Value> =
                serde_json::from_str(&errors).expect("an error history");
            for entry in history {
                let error = entry["error"].as_str().unwrap_or_default().to_owned();
                *results.errors.entry(error.clone()).or_default() += 1;
                let expected = error.starts_with(LEASE_EXPIRED)
                    || (retried && error.contains(STOPPED_FOR_LOST_WORKERS));
                if !hostile && !cancelled && !expected {
                    results.fail(format!(
                        "job {id} ({kind}, book {workflow:?}) spent an attempt on: {error}"
                    ));
                }
            }
        }
        let runs = self
            .runtime
            .block_on(
                sqlx::query(
                    "SELECT coalesce(sum(attempt - 1), 0)::BIGINT, coalesce(sum(lost_workers), 0)::BIGINT \
                     FROM jobs WHERE attempt > 0",
                )
                .fetch_one(&self.pool),
            )
            .expect("count runs");
        results.steps_rerun = runs.get(0);
        results.lost_workers = runs.get(1);
        results.lost_histogram = self
            .runtime
            .block_on(
                sqlx::query_as::<_, (i32, i64)>(
                    "SELECT lost_workers, count(*) FROM jobs WHERE lost_workers > 0 \
                     GROUP BY lost_workers ORDER BY lost_workers",
                )
                .fetch_all(&self.pool),
            )
            .expect("count lost workers");
    }

    /// Each ready book's EPUB, fetched through the API as its tenant, equals `bindery convert`
    /// of the manuscript of the revision it shows, with the book's metadata and modification
    /// time (and, for a later revision, its number and the identifier the book kept).
    fn epubs_identical(
        &self,
        results: &mut Results,
        submitted: &[Submitted],
        manuscripts: &[Manuscript],
        fleet: &Fleet,
        uploader: &Uploader,
    ) {
        let dir = PathBuf::from(fleet.command("reference").get_current_dir().expect("dir"));
        let mut references: BTreeMap<Reference, Vec<u8>> = BTreeMap::new();
        let mut failures = Vec::new();
        for s in submitted.iter().filter(|s| s.planned.revises.is_none()) {
            let Some(id) = s.ids.first() else { continue };
            let Some(book) = results.books.get(id) else {
                continue;
            };
            if book.status != "ready" {
                continue;
            }
            let p = &s.planned;
            // The upload whose manuscript the book shows: its own, or a new version's.
            let shown = if book.revision == 1 {
                Some(p.manuscript)
            } else {
                submitted
                    .iter()
                    .find(|r| {
                        r.ids.first() == Some(id)
                            && r.revision.and_then(|n| i64::try_from(n).ok()) == Some(book.revision)
                    })
                    .map(|r| r.planned.manuscript)
            };
            let Some(shown) = shown else {
                failures.push(format!(
                    "book {id} shows revision {}, which no accepted upload made",
                    book.revision
                ));
                continue;
            };
            let key = Reference {
                manuscript: shown,
                metadata_of: p.manuscript,
                tenant: p.tenant,
                modified: book.modified.clone().unwrap_or_default(),
                file_name: book.file_name.clone(),
                revision: (book.revision > 1).then(|| (book.revision, book.identifier.clone())),
            };
            let manuscript = &manuscripts[shown];
            let reference = references
                .entry(key.clone())
                .or_insert_with(|| reference(fleet, &dir, manuscripts, &key));
            let port = uploader.ports[p.n % uploader.ports.len()];
            let epub = uploader
                .http
                .get(format!("http://127.0.0.1:{port}/api/v1/books/{id}/epub"))
                .bearer_auth(&uploader.tokens[p.tenant])
                .send()
                .and_then(reqwest::blocking::Response::error_for_status)
                .and_then(|r| r.bytes());
            match epub {
                Ok(bytes) if bytes.as_ref() == reference.as_slice() => results.identical += 1,
                Ok(bytes) => failures.push(format!(
                    "book {id} ({}, revision {}): its EPUB ({} bytes) differs from bindery convert's ({} bytes)",
                    manuscript.file_name,
                    book.revision,
                    bytes.len(),
                    reference.len()
                )),
                Err(e) => failures.push(format!("book {id}: fetching its EPUB: {e}")),
            }
        }
        results.failures.extend(failures);
    }

    /// `sweep_blobs` until it stops finding orphans; then every book folder in the container
    /// belongs to a book.
    fn sweep(&self, results: &mut Results) {
        for _ in 0..20 {
            let enqueued = self
                .runtime
                .block_on(
                    self.queue
                        .enqueue(NewJob::of(&SweepBlobs { min_age_secs: 0 })),
                )
                .expect("enqueue sweep_blobs");
            let job = self
                .runtime
                .block_on(crate::common::wait_job(&self.queue, enqueued.id));
            let result: serde_json::Value =
                serde_json::from_str(job.result.as_deref().unwrap_or("{}")).expect("result");
            results.orphans_swept += result["orphans"].as_i64().unwrap_or(0);
            if result["refused"].is_string() {
                results.fail(format!("sweep_blobs refused: {result}"));
                return;
            }
            if result["stopped_at_limit"] != true {
                break;
            }
        }
        let keys = self
            .runtime
            .block_on(self.blobs.list("books/"))
            .expect("list the container");
        let folders: BTreeSet<&str> = keys
            .iter()
            .filter_map(|k| k.strip_prefix("books/")?.split('/').next())
            .collect();
        for folder in folders {
            if !results.books.contains_key(folder) {
                results.fail(format!("books/{folder}/ has no book after sweep_blobs"));
            }
        }
    }
}

/// What a reference conversion is made of.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Reference {
    /// The manuscript, and the one whose metadata the book was uploaded with (its first).
    manuscript: usize,
    metadata_of: usize,
    tenant: usize,
    modified: String,
    /// The name the manuscript was uploaded under.
    file_name: String,
    /// A later revision's number, and the identifier the book kept.
    revision: Option<(i64, Option<String>)>,
}

/// `bindery convert` of the manuscript under the name it was uploaded with, as of `modified`.
fn reference(
    fleet: &Fleet,
    dir: &std::path::Path,
    manuscripts: &[Manuscript],
    key: &Reference,
) -> Vec<u8> {
    let modified = &key.modified;
    let epoch = chrono::DateTime::parse_from_rfc3339(modified)
        .map(|t| t.timestamp())
        .unwrap_or_else(|e| panic!("the book's modified time {modified:?}: {e}"));
    let input = dir.join(&key.file_name);
    std::fs::write(&input, &manuscripts[key.manuscript].bytes).expect("write the manuscript");
    let output = dir.join("reference.epub");
    let mut cmd = fleet.command("reference");
    cmd.env("SOURCE_DATE_EPOCH", epoch.to_string())
        .args(["convert", "-q", "-o"])
        .arg(&output);
    for (field, value) in load::metadata(key.tenant, &manuscripts[key.metadata_of]) {
        cmd.arg("--meta").arg(format!("{field}={value}"));
    }
    if let Some((revision, identifier)) = &key.revision {
        cmd.arg("--revision").arg(revision.to_string());
        if let Some(identifier) = identifier {
            cmd.arg("--meta").arg(format!("identifier={identifier}"));
        }
    }
    succeed(cmd.arg(&input), "bindery convert");
    std::fs::read(&output).expect("read the reference")
}

/// Every book with a callback was announced, and acknowledged; each announcement (a delivery)
/// came with one body, however often it was delivered; no other book was announced. A book
/// was announced once, with its status, or, if it was retried, as failed and then as ready.
fn webhooks_delivered(results: &mut Results, submitted: &[Submitted], receiver: &Receiver) {
    let mut by_book: BTreeMap<String, Vec<crate::common::receiver::Received>> = BTreeMap::new();
    for request in receiver.requests() {
        let id = request.json()["book"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        by_book.entry(id).or_default().push(request);
    }
    for s in submitted.iter().filter(|s| s.planned.revises.is_none()) {
        let Some(id) = s.ids.first() else { continue };
        let Some(book) = results.books.get(id).cloned() else {
            continue;
        };
        let revised = submitted
            .iter()
            .any(|r| r.planned.revises.is_some() && r.ids.first() == Some(id));
        let requests = by_book.remove(id).unwrap_or_default();
        if !s.planned.callback {
            if !requests.is_empty() {
                results.fail(format!("book {id} has no callback but was announced"));
            }
            continue;
        }
        // Each delivery's first request, in the order they came.
        let mut deliveries: Vec<&crate::common::receiver::Received> = Vec::new();
        for r in &requests {
            let delivery = r.header("bindery-delivery");
            if r.answered != 200 {
                results.fail(format!(
                    "book {id}: delivery {delivery} was not acknowledged"
                ));
            }
            match deliveries
                .iter()
                .find(|d| d.header("bindery-delivery") == delivery)
            {
                Some(first) if first.body != r.body => {
                    results.fail(format!(
                        "book {id}: delivery {delivery} came again with another body"
                    ));
                }
                Some(_) => {}
                None => deliveries.push(r),
            }
        }
        let events: Vec<&str> = deliveries
            .iter()
            .map(|d| d.header("bindery-event"))
            .collect();
        if revised {
            // Each version published is announced, but not one superseded while it built: the
            // last announcement is the version the book shows.
            let last = deliveries.last().map(|d| {
                (
                    d.header("bindery-event"),
                    d.json()["book"]["revision"].as_i64(),
                )
            });
            if last != Some(("book.ready", Some(book.revision))) {
                results.fail(format!(
                    "book {id} (revision {}) was announced last as {last:?}; all: {events:?}",
                    book.revision
                ));
            }
            results.deliveries += deliveries.len();
            results.redeliveries += requests.len() - deliveries.len();
            continue;
        }
        let expected = if results.retried.contains(id) {
            vec!["book.failed".to_owned(), format!("book.{}", book.status)]
        } else {
            vec![format!("book.{}", book.status)]
        };
        if events != expected {
            results.fail(format!(
                "book {id} ({}) was announced as {events:?}, expected {expected:?}",
                book.status
            ));
        }
        results.deliveries += deliveries.len();
        results.redeliveries += requests.len() - deliveries.len();
    }
    for (id, requests) in by_book {
        results.fail(format!(
            "{} announcements of book {id:?}, which no upload made",
            requests.len()
        ));
    }
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

/// The run's figures.
pub fn report(
    plan: &Plan,
    record: &Record,
    submitted: &[Submitted],
    results: &Results,
    settled_after: Duration,
) {
    say(&format!(
        "faults: {} worker kills, {} web kills ({} in the middle of an upload), {} worker stopped for {:?}, PostgreSQL restarted {}× (down {:?}), Azurite stopped {}× for {:?}",
        record.worker_kills,
        record.web_kills,
        record.web_kills_mid_upload,
        record.worker_stops,
        plan.faults.lease * 2,
        record.postgres_recoveries.len(),
        plan.faults.postgres_down,
        record.azurite_stops,
        plan.faults.azurite_down
    ));
    let latency = |under_faults: bool| {
        let mut ms: Vec<i64> = submitted
            .iter()
            .filter(|s| s.planned.under_faults == under_faults && s.planned.revises.is_none())
            .filter_map(|s| {
                let id = s.ids.first()?;
                if results.retried.contains(id) {
                    return None;
                }
                let book = results.books.get(id)?;
                Some(book.published_at? - s.sent_at_ms)
            })
            .collect();
        ms.sort_unstable();
        format!(
            "p50 {} ms, p99 {} ms ({} books)",
            percentile(&ms, 0.5),
            percentile(&ms, 0.99),
            ms.len()
        )
    };
    say(&format!("submit→ready without faults: {}", latency(false)));
    say(&format!(
        "submit→ready under faults: {} (books retried after a step lost its worker {}×, left out: {})",
        latency(true),
        bindery::jobs::MAX_LOST_WORKERS,
        results.retried.len()
    ));
    let faulty: Vec<&Submitted> = submitted
        .iter()
        .filter(|s| s.planned.under_faults)
        .collect();
    let first_sent = faulty.iter().map(|s| s.sent_at_ms).min().unwrap_or(0);
    let last_done = faulty
        .iter()
        .filter_map(|s| Some(results.books.get(s.ids.first()?)?.updated_at))
        .max()
        .unwrap_or(first_sent);
    #[allow(clippy::cast_precision_loss)]
    let per_minute = faulty.len() as f64 * 60_000.0 / (last_done - first_sent).max(1) as f64;
    say(&format!(
        "books per minute under faults: {per_minute:.0} ({} books in {:.1} s)",
        faulty.len(),
        (last_done - first_sent) as f64 / 1000.0
    ));
    let retried: usize = submitted.iter().map(|s| s.retried.len()).sum();
    let replayed = submitted.iter().filter(|s| s.replayed).count();
    say(&format!(
        "uploads sent again: {retried} (after a refused connection, a cut one or a 5xx); {replayed} answered as replays of a book already made"
    ));
    say(&format!(
        "steps run again: {} (after a kill, a frozen worker or an outage); jobs that lost their worker: {}",
        results.steps_rerun,
        results
            .lost_histogram
            .iter()
            .map(|(times, jobs)| format!("{jobs} {times}×"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    say(&format!(
        "PostgreSQL restarts, recovered after: {}",
        record
            .postgres_recoveries
            .iter()
            .map(|r| format!(
                "web ready after {} ms, a new job done after {} ms",
                r.ready.as_millis(),
                r.job_done.as_millis()
            ))
            .collect::<Vec<_>>()
            .join("; ")
    ));
    say(&format!(
        "every book and job settled {:.1} s after the last fault",
        settled_after.as_secs_f64()
    ));
    say(&format!(
        "EPUBs identical to bindery convert: {}; webhooks delivered: {} (and {} redeliveries); orphan book folders swept: {}",
        results.identical, results.deliveries, results.redeliveries, results.orphans_swept
    ));
    say(&format!(
        "books sent a new version under the faults: {} (each showing its newest); versions superseded while they built: {}",
        results.revised, results.superseded
    ));
    for (error, count) in &results.errors {
        say(&format!("attempts spent: {count}× {error}"));
    }
    if results.failures.is_empty() {
        say("every check held");
    } else {
        say(&format!("{} checks failed", results.failures.len()));
    }
}

/// Books building, and new versions of ready books building beside them.
const BOOKS_PROCESSING: &str = "SELECT (SELECT count(*) FROM books WHERE status = 'processing') \
     + (SELECT count(*) FROM book_revisions WHERE status = 'processing')";

fn unfinished_jobs() -> String {
    format!("SELECT count(*) FROM jobs WHERE {UNFINISHED}")
}

/// What has not settled: read only when a wait for it fails.
struct Unsettled<'a>(&'a Checker);

impl std::fmt::Display for Unsettled<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let check = self.0;
        let stuck: Vec<String> = check
            .runtime
            .block_on(
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT j.id, j.kind, j.state, j.attempt, j.workflow, j.errors,
                            COALESCE(w.pid, 0), j.locked_until - {now}
                     FROM jobs j LEFT JOIN workers w ON w.id = j.locked_by
                     WHERE {UNFINISHED} ORDER BY j.id LIMIT 20",
                    now = "(extract(epoch from clock_timestamp()) * 1000)::bigint"
                )))
                .fetch_all(&check.pool),
            )
            .unwrap_or_default()
            .iter()
            .map(|r| {
                format!(
                    "job {} {} {} attempt {} book {:?}, held by worker pid {} for {:?} ms more: {}",
                    r.get::<i64, _>(0),
                    r.get::<String, _>(1),
                    r.get::<String, _>(2),
                    r.get::<i32, _>(3),
                    r.get::<Option<String>, _>(4),
                    r.get::<i64, _>(6),
                    r.get::<Option<i64>, _>(7),
                    r.get::<String, _>(5)
                )
            })
            .collect();
        write!(
            f,
            "{} books processing, {} jobs unfinished:\n{}",
            check.count(BOOKS_PROCESSING),
            check.count(&unfinished_jobs()),
            stuck.join("\n")
        )
    }
}
