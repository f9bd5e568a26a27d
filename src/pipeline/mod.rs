//! The conversion pipeline on the job engine: one workflow of small jobs per book, whose id
//! is the workflow id. See `steps` for the graph and the crash-safety rules each step keeps.

pub mod books;
mod cache;
pub mod keys;
pub mod steps;

use anyhow::Context;
use bytes::Bytes;

use crate::convert::Options;
use crate::jobs::{JobQueue, Registry};
use crate::storage::{BlobStore, Database};
use crate::worker::WorkerContext;

pub use books::{BookRow, StoredOptions};
pub use cache::ModelCache;

/// Adds every pipeline step to the worker's registry.
pub fn register(registry: Registry<WorkerContext>) -> Registry<WorkerContext> {
    registry
        .register::<steps::Ingest>()
        .register::<steps::Parse>()
        .register::<steps::RenderChapter>()
        .register::<steps::Package>()
        .register::<steps::PackageEpub>()
        .register::<steps::PackageReader>()
        .register::<steps::Verify>()
        .register::<steps::Publish>()
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

/// Stores the upload and starts the book's workflow. The uploads are written first; the book
/// row and its first job commit together, so a book either exists with its pipeline queued
/// or not at all.
pub async fn submit(
    db: &Database,
    blobs: &BlobStore,
    queue: &JobQueue,
    submission: Submission,
) -> anyhow::Result<String> {
    let id = uuid::Uuid::new_v4().to_string();
    blobs
        .put_if_absent(&keys::upload(&id), submission.manuscript)
        .await?;
    let mut options = StoredOptions {
        convert: submission.options,
        cover_name: None,
    };
    if let Some((name, bytes)) = submission.cover {
        blobs.put_if_absent(&keys::cover_upload(&id), bytes).await?;
        options.cover_name = Some(name);
    }
    if options.convert.file_name.is_none() {
        options.convert.file_name = Some(submission.file_name.clone());
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
    books::insert(
        &mut tx,
        &id,
        &submission.tenant,
        &submission.file_name,
        &options,
    )
    .await?;
    queue
        .enqueue_in(
            &mut tx,
            steps::first_step(&id)
                .tenant(submission.tenant)
                .workflow(id.clone()),
        )
        .await?;
    tx.commit().await?;
    tracing::info!(book.id = %id, file_name = %submission.file_name, "book submitted");
    Ok(id)
}
