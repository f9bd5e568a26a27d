//! The conversion pipeline on the job engine: one workflow of small jobs per book, whose id
//! is the workflow id. See `steps` for the graph and the crash-safety rules each step keeps.

pub mod books;
pub mod in_memory;
pub mod keys;
pub mod progress;
pub mod reading;
pub mod steps;
mod sweep;

use anyhow::Context;
use bytes::Bytes;

use crate::convert::Options;
use crate::jobs::{JobQueue, Registry};
use crate::services::Services;
use crate::storage::{BlobStore, Database};

pub use books::{BookRow, BookStatus, StoredOptions};
pub use sweep::SweepBlobs;

/// Adds every pipeline step, and the sweep of their leftovers, to the worker's registry.
pub fn register(registry: Registry<Services>) -> Registry<Services> {
    steps::register(registry).register::<sweep::SweepBlobs>()
}

/// A manuscript to turn into a book.
#[derive(Debug, Clone)]
pub struct Submission {
    pub tenant: String,
    pub file_name: String,
    pub manuscript: Bytes,
    /// File name and bytes of an uploaded cover.
    pub cover: Option<(String, Bytes)>,
    pub options: Options,
}

/// Stores the upload and starts the book's workflow (uploads held in memory: tests, tools;
/// the HTTP API streams into [`keys::upload`] and calls [`start`]).
pub async fn submit(
    db: &Database,
    blobs: &BlobStore,
    queue: &JobQueue,
    submission: Submission,
) -> anyhow::Result<String> {
    let id = new_book_id();
    blobs
        .put_if_absent(&keys::upload(&id), submission.manuscript)
        .await?;
    let mut cover_name = None;
    if let Some((name, bytes)) = submission.cover {
        blobs.put_if_absent(&keys::cover_upload(&id), bytes).await?;
        cover_name = Some(name);
    }
    let started = start(
        db,
        queue,
        &NewBook {
            id: id.clone(),
            tenant: submission.tenant,
            file_name: submission.file_name,
            options: submission.options,
            cover_name,
            idempotency_key: None,
            callback_url: None,
        },
    )
    .await?;
    Ok(started.unwrap_or(id))
}

/// A fresh book id (a UUID, so book URLs cannot be guessed).
pub fn new_book_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A book whose uploads are already stored under its id.
#[derive(Debug, Clone)]
pub struct NewBook {
    pub id: String,
    pub tenant: String,
    pub file_name: String,
    pub options: Options,
    pub cover_name: Option<String>,
    pub idempotency_key: Option<String>,
    /// Where the book's webhooks go, checked by the caller.
    pub callback_url: Option<crate::webhooks::CallbackUrl>,
}

/// Creates the book row and its first job in one transaction, so a book either exists with
/// its pipeline queued or not at all. `Ok(Some(other))` when the tenant already had a book
/// with the same idempotency key: nothing was created, and the caller should drop its uploads.
pub async fn start(
    db: &Database,
    queue: &JobQueue,
    book: &NewBook,
) -> anyhow::Result<Option<String>> {
    let mut options = StoredOptions {
        convert: book.options.clone(),
        cover_name: book.cover_name.clone(),
    };
    if options.convert.file_name.is_none() {
        options.convert.file_name = Some(book.file_name.clone());
    }
    if options.convert.modified.is_none() {
        // Fixed at upload, so every re-run of every step makes the same bytes.
        options.convert.modified =
            Some(chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string());
    }
    let mut tx = db
        .begin()
        .await
        .context("starting the upload transaction")?;
    let inserted = books::insert(
        &mut tx,
        &book.id,
        &book.tenant,
        &book.file_name,
        &options,
        book.idempotency_key.as_deref(),
        book.callback_url
            .as_ref()
            .map(crate::webhooks::CallbackUrl::as_str),
    )
    .await?;
    if !inserted {
        // Rolled back rather than dropped: a dropped transaction closes its connection.
        tx.rollback().await?;
        let key = book.idempotency_key.as_deref().unwrap_or_default();
        let existing = books::find_by_idempotency_key(db, &book.tenant, key)
            .await?
            .context("an idempotency key conflicted, but its book is gone")?;
        return Ok(Some(existing.id));
    }
    queue
        .enqueue_in(
            &mut tx,
            steps::first_step(&book.id)
                .tenant(book.tenant.clone())
                .workflow(book.id.clone()),
        )
        .await?;
    tx.commit().await?;
    tracing::info!(for_author = true, book.id = %book.id, tenant = %book.tenant, file_name = %book.file_name, "book submitted");
    Ok(None)
}
