//! Webhooks: a book may name a `callback_url`, and when it becomes ready or fails Bindery POSTs
//! a signed JSON event there.
//!
//! An event is recorded (a `webhook_deliveries` row with its id and exact body, and a
//! `webhook.deliver` job) in the same transaction that changes the book's status, and only when
//! that statement really changed it. That change is the event's idempotency key: a step that
//! runs again after a crash finds the status already changed and records nothing, while a
//! retried book that fails or succeeds again makes a real change, and so a new event.
//!
//! Delivery is at least once: receivers dedupe on `Bindery-Delivery`, which every attempt of
//! one event shares. Events carry no order guarantee; `created_at` tells which came first.

pub mod address;
mod callback_url;
mod deliver;
pub mod deliveries;
pub mod sender;
pub mod signature;

use serde::Serialize;

pub use callback_url::{CallbackUrl, CallbackUrlError};
pub use deliver::Deliver;
pub use sender::{Answer, Sender};

use crate::jobs::{JobQueue, JobRecord, JobState, NewJob};
use crate::storage::{Database, Tx, rfc3339};

/// Every delivery runs on this queue, so operators can pause webhooks alone.
pub const QUEUE: &str = "webhooks";

/// What happened to a book.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Ready,
    Failed,
    /// A revision failed while the book kept the one it shows.
    RevisionFailed,
}

impl Event {
    pub fn as_str(self) -> &'static str {
        match self {
            Event::Ready => "book.ready",
            Event::Failed => "book.failed",
            Event::RevisionFailed => "book.revision_failed",
        }
    }
}

/// The book as the event describes it, right after its status changed.
pub struct BookEvent<'a> {
    pub event: Event,
    pub book_id: &'a str,
    /// The revision the event is about: the one the book now shows, or the one that failed.
    pub revision: u32,
    pub tenant: &'a str,
    pub callback_url: &'a str,
    pub title: Option<&'a str>,
    /// Code and message, for `book.failed`.
    pub error: Option<(&'a str, &'a str)>,
    /// `APP_URL`: links are absolute under it; without it they are root-relative paths.
    pub base: Option<&'a url::Url>,
}

#[derive(Serialize)]
struct Body<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    created_at: String,
    book: BookBody<'a>,
}

#[derive(Serialize)]
struct BookBody<'a> {
    id: &'a str,
    status: &'static str,
    revision: u32,
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorBody<'a>>,
    links: Links,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'a str,
    message: &'a str,
}

/// The same paths `GET /api/v1/books/{id}` links to, made absolute when `APP_URL` is set (a
/// receiver cannot know where the service lives).
#[derive(Serialize)]
struct Links {
    #[serde(rename = "self")]
    self_: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    epub: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reader: Option<String>,
}

/// Records `event` and queues its delivery inside `tx`, the transaction that changed the
/// book's status. Returns the delivery id.
pub async fn record(
    tx: &mut Tx,
    queue: &JobQueue,
    event: &BookEvent<'_>,
) -> anyhow::Result<String> {
    let id = uuid::Uuid::new_v4().to_string();
    let ready = event.event != Event::Failed;
    let link = |path: String| match event.base {
        Some(base) => format!("{}{path}", base.as_str().trim_end_matches('/')),
        None => path,
    };
    let self_ = format!("/api/v1/books/{}", event.book_id);
    let body = serde_json::to_string(&Body {
        id: &id,
        kind: event.event.as_str(),
        created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        book: BookBody {
            id: event.book_id,
            // A revision that failed leaves the book as it was: ready.
            status: match event.event {
                Event::Ready | Event::RevisionFailed => "ready",
                Event::Failed => "failed",
            },
            revision: event.revision,
            title: event.title,
            error: event
                .error
                .map(|(code, message)| ErrorBody { code, message }),
            links: Links {
                epub: ready.then(|| link(format!("{self_}/epub"))),
                reader: ready.then(|| link(format!("/books/{}/reader/", event.book_id))),
                self_: link(self_),
            },
        },
    })?;
    let job = NewJob::of(&Deliver {
        delivery: id.clone(),
        book: event.book_id.to_owned(),
        event: event.event.as_str().to_owned(),
    })
    .tenant(event.tenant);
    let enqueued = queue.enqueue_in(tx, job).await?;
    deliveries::insert(
        tx,
        &deliveries::NewDelivery {
            id: &id,
            book_id: event.book_id,
            tenant: event.tenant,
            event: event.event.as_str(),
            url: event.callback_url,
            body: &body,
            job_id: enqueued.id,
        },
    )
    .await?;
    tracing::info!(for_author = true, book.id = %event.book_id, delivery.id = %id, job.id = enqueued.id, event = event.event.as_str(), "webhook queued");
    Ok(id)
}

/// One webhook event of a book, sent to its `callback_url`, and how its delivery is going.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = Delivery)]
pub struct DeliveryStatus {
    /// The delivery's id, sent as `Bindery-Delivery` (the same on every attempt, so that a
    /// receiver can ignore a repeat).
    pub id: String,
    /// `book.ready` or `book.failed`.
    #[schema(pattern = "^book\\.(ready|failed)$")]
    pub event: String,
    /// `pending`, `retrying`, `delivered`, `failed` (out of attempts, or refused) or
    /// `cancelled`.
    #[schema(pattern = "^(pending|retrying|delivered|failed|cancelled)$")]
    pub state: &'static str,
    /// Attempts made so far.
    pub attempts: i32,
    /// Why the last attempt failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The receiver's HTTP status, once it took the event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<i32>,
    /// When the event happened.
    #[schema(format = DateTime)]
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub delivered_at: Option<String>,
    /// When the next attempt is due, while one waits.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub next_attempt_at: Option<String>,
}

/// A book's deliveries with how each is going, oldest first.
pub async fn statuses(
    db: &Database,
    queue: &JobQueue,
    book: &str,
) -> anyhow::Result<Vec<DeliveryStatus>> {
    let rows = deliveries::for_book(db, book).await?;
    let mut statuses = Vec::with_capacity(rows.len());
    for row in rows {
        let job = queue.job(row.job_id).await?;
        statuses.push(status_of(&row, job.as_ref()));
    }
    Ok(statuses)
}

fn status_of(row: &deliveries::DeliveryRow, job: Option<&JobRecord>) -> DeliveryStatus {
    let job_state = job.map(|j| j.state);
    let last_error = job.and_then(JobRecord::last_error);
    let state = match (row.delivered_at, job_state) {
        (Some(_), _) | (None, Some(JobState::Completed)) => "delivered",
        (None, Some(JobState::Dead | JobState::Discarded)) => "failed",
        (None, Some(JobState::Cancelled)) => "cancelled",
        (None, Some(_)) if last_error.is_some() => "retrying",
        (None, Some(_)) => "pending",
        // The job was pruned, and only finished ones are: it did not deliver.
        (None, None) => "failed",
    };
    let next_attempt_at = job
        .filter(|j| j.state == JobState::Scheduled)
        .map(|j| rfc3339(j.run_at));
    DeliveryStatus {
        id: row.id.clone(),
        event: row.event.clone(),
        state,
        attempts: job.map_or(0, |j| j.attempt),
        last_error,
        response_status: row.response_status,
        created_at: rfc3339(row.created_at),
        delivered_at: row.delivered_at.map(rfc3339),
        next_attempt_at,
    }
}
