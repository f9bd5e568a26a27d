//! A book as the API answers it and the pages show it: one view model for both, so that the
//! pages never reach into the API's handlers (or the other way round) for what a book looks
//! like. Built from the row and from where its workflow is (`pipeline::progress` works that
//! out; the web puts the two together).

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::id::BookId;
use super::revisions::{RevisionRow, RevisionStatus};
use super::table::{BookRow, BookStatus};
use crate::webhooks::DeliveryStatus;

/// A book: its status, and once converted its report and links.
#[derive(Serialize, ToSchema)]
#[schema(as = Book)]
pub struct BookView {
    #[schema(value_type = String, format = Uuid)]
    pub id: BookId,
    /// `processing` until the book is `ready` or has `failed`.
    #[serde(serialize_with = "status")]
    #[schema(value_type = String, pattern = "^(processing|ready|failed)$")]
    pub status: BookStatus,
    /// Known once the manuscript is read, from it or from the uploaded `title`.
    pub title: Option<String>,
    pub authors: Vec<String>,
    /// The manuscript's format (`markdown`, `docx`, `text`), once it is read.
    pub format: Option<String>,
    /// The uploaded manuscript's file name.
    pub file_name: String,
    #[serde(serialize_with = "time")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "time")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: DateTime<Utc>,
    /// When the book became ready.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "some_time")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub published_at: Option<DateTime<Utc>>,
    /// Why the book failed, in plain language.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorView>,
    /// Per-step progress (not in lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
    /// The conversion's report: warnings and statistics (not in lists; once converted).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub report: Option<serde_json::Value>,
    /// Where the book's webhook events go, if anywhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub callback_url: Option<String>,
    /// Webhook deliveries, oldest first (in the detailed view of a book with a callback URL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deliveries: Option<Vec<DeliveryStatus>>,
    /// The revision the book shows and serves: the newest ready one (before any is, the
    /// newest). Each new manuscript given for the book is its next revision.
    pub revision: u32,
    pub links: Links,
}

/// One revision of a book: a manuscript given for it, and what it became.
#[derive(Serialize, ToSchema)]
#[schema(as = Revision)]
pub struct RevisionView {
    /// From 1, the upload that made the book.
    pub number: u32,
    /// `processing` while it builds, then `ready` or `failed`; `cancelled` when a newer
    /// revision superseded it while it built (its files are removed).
    #[serde(serialize_with = "revision_status")]
    #[schema(value_type = String, pattern = "^(processing|ready|failed|cancelled)$")]
    pub status: RevisionStatus,
    /// Whether the book shows and serves this revision now.
    pub current: bool,
    /// Whether it keeps its files (its EPUB can be downloaded, and it can be restored): not
    /// once superseded while it built, nor once out of the newest `REVISIONS_KEPT`.
    pub files_kept: bool,
    /// Its manuscript's file name.
    pub file_name: String,
    /// Known once it is built.
    pub title: Option<String>,
    #[serde(serialize_with = "time")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "time")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: DateTime<Utc>,
    /// When it was built.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "some_time")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub published_at: Option<DateTime<Utc>>,
    /// Why it failed, in plain language.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorView>,
    /// Per-step progress (not in lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
    pub links: RevisionLinks,
}

#[derive(Serialize, ToSchema)]
pub struct RevisionLinks {
    /// This revision's status URL.
    #[serde(rename = "self")]
    pub self_: String,
    /// The book.
    pub book: String,
}

impl RevisionView {
    /// The view of `revision` as it is `now`, `current` when the book shows it.
    pub fn of(revision: &RevisionRow, now: Now, current: bool) -> Self {
        let book = format!("/api/v1/books/{}", revision.id.book);
        let status = match (revision.status, now.status) {
            // A step that ran out of attempts fails it before anything marks it.
            (RevisionStatus::Processing, BookStatus::Failed) => RevisionStatus::Failed,
            (status, _) => status,
        };
        RevisionView {
            number: revision.id.number,
            status,
            current,
            files_kept: revision.files_removed_at.is_none(),
            file_name: revision.file_name.clone(),
            title: revision.title.clone(),
            created_at: revision.created_at,
            updated_at: revision.updated_at,
            published_at: revision.published_at,
            error: now.failure,
            progress: now.progress,
            links: RevisionLinks {
                self_: format!("{book}/revisions/{}", revision.id.number),
                book,
            },
        }
    }
}

/// Why a book failed.
#[derive(Serialize, ToSchema)]
#[schema(as = BookError)]
pub struct ErrorView {
    /// Stable, for programs (`step_failed`, or the refused input's code).
    pub code: String,
    /// For a person: what went wrong and what to do about it.
    pub message: String,
}

#[derive(Serialize, ToSchema)]
pub struct Progress {
    /// The whole conversion, 0 to 100.
    #[schema(maximum = 100)]
    pub percent: u32,
    /// Every step of the pipeline, in order.
    pub steps: Vec<StepView>,
}

/// One step of the pipeline and how far its jobs are.
#[derive(Serialize, ToSchema)]
#[schema(as = Step)]
pub struct StepView {
    /// The step's name (`ingest`, `parse`, `render_chapter`, …).
    pub step: &'static str,
    /// What a person reads on the book's page.
    #[serde(skip)]
    pub label: &'static str,
    /// `pending` (not enqueued yet), `queued` (waiting for a worker), `running`, `completed`,
    /// `failed`, or `skipped` (it will not run: the book failed before it).
    #[serde(serialize_with = "step_state")]
    #[schema(
        value_type = String,
        pattern = "^(pending|queued|running|completed|failed|skipped)$"
    )]
    pub state: StepState,
    #[schema(maximum = 100)]
    pub percent: u32,
    /// Jobs of this step completed, of `total`.
    pub done: usize,
    pub total: usize,
    /// What the step is doing now, while it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Where a step of a book's pipeline is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepState {
    /// Not enqueued yet.
    Pending,
    /// Enqueued, waiting for a free worker (or a paused queue).
    Queued,
    Running,
    Completed,
    Failed,
    /// It will not run: the book failed before it (or a step it waited for was cancelled).
    Skipped,
}

impl StepState {
    pub fn as_str(self) -> &'static str {
        match self {
            StepState::Pending => "pending",
            StepState::Queued => "queued",
            StepState::Running => "running",
            StepState::Completed => "completed",
            StepState::Failed => "failed",
            StepState::Skipped => "skipped",
        }
    }
}

/// Where to go next; `epub`, `reader` and `cover` once the book is ready.
#[derive(Serialize, ToSchema)]
pub struct Links {
    /// This book's status URL.
    #[serde(rename = "self")]
    pub self_: String,
    /// The EPUB download.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epub: Option<String>,
    /// The web reader (an HTML page, for people).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reader: Option<String>,
    /// The cover, small (a JPEG within 240×384, or the SVG of a generated cover).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cover: Option<String>,
    /// The cover as ebook stores ask for it: a 1600×2560 RGB JPEG.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_cover: Option<String>,
    /// The print edition's interior (PDF), when the book has one: it can fail alone, and the
    /// report then says why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pdf: Option<String>,
    /// The print edition's cover (PDF: back, spine and front), with the interior.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub print_cover: Option<String>,
}

/// Where a book is now, as its workflow says (which can be further than its row: a step that
/// ran out of attempts fails the book before anything marks it).
pub struct Now {
    pub status: BookStatus,
    pub failure: Option<ErrorView>,
    /// In the detailed view only.
    pub progress: Option<Progress>,
}

impl BookView {
    /// The view of `book` as it is `now`; `detailed` adds its report, and `deliveries` its
    /// webhook deliveries.
    pub fn of(
        book: &BookRow,
        now: Now,
        deliveries: Option<Vec<DeliveryStatus>>,
        detailed: bool,
    ) -> Self {
        let ready = now.status == BookStatus::Ready;
        let printed = ready && book.pdf_bytes.is_some();
        let self_ = format!("/api/v1/books/{}", book.id);
        BookView {
            id: book.id.clone(),
            status: now.status,
            title: book.title.clone(),
            authors: book.authors.clone(),
            format: book.format.clone(),
            file_name: book.file_name.clone(),
            created_at: book.created_at,
            updated_at: book.updated_at,
            published_at: book.published_at,
            error: now.failure,
            progress: now.progress,
            report: if detailed {
                book.report
                    .as_deref()
                    .and_then(|r| serde_json::from_str(r).ok())
            } else {
                None
            },
            callback_url: book.callback_url.clone(),
            deliveries,
            revision: book.revision,
            links: Links {
                epub: ready.then(|| format!("{self_}/epub")),
                reader: ready.then(|| format!("/books/{}/reader/", book.id)),
                cover: ready.then(|| format!("/books/{}/cover", book.id)),
                store_cover: ready.then(|| format!("{self_}/store-cover.jpg")),
                pdf: printed.then(|| format!("{self_}/pdf")),
                print_cover: printed.then(|| format!("{self_}/print-cover.pdf")),
                self_,
            },
        }
    }
}

/// Times as the API writes them: RFC 3339 in UTC, to the millisecond.
fn time<S: serde::Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

// serde hands `serialize_with` a reference to the field, so the signature is fixed.
#[allow(clippy::ref_option)]
fn some_time<S: serde::Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => time(t, s),
        None => s.serialize_none(),
    }
}

fn status<S: serde::Serializer>(status: &BookStatus, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(status.as_str())
}

fn revision_status<S: serde::Serializer>(status: &RevisionStatus, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(status.as_str())
}

fn step_state<S: serde::Serializer>(state: &StepState, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(state.as_str())
}
