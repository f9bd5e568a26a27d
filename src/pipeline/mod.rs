//! The conversion pipeline on the job engine: one workflow of small jobs per book, whose id
//! is the workflow id. See `steps` for the graph and the crash-safety rules each step keeps.

pub mod child;
pub mod in_memory;
pub mod preview;
pub mod progress;
mod removal;
pub mod steps;
mod sweep;

use bytes::Bytes;

use crate::books::{self, BookId, NewBook, RevisionId, Submitted, Tenant, keys};
use crate::convert::Options;
use crate::jobs::{JobQueue, Registry};
use crate::services::Services;
use crate::storage::{BlobStore, Database};

pub use sweep::SweepBlobs;

/// Adds every pipeline step, and the sweep of their leftovers, to the worker's registry.
pub fn register(registry: Registry<Services>) -> Registry<Services> {
    steps::register(registry)
        .register::<sweep::SweepBlobs>()
        .register::<books::RemoveFiles>()
        .register::<preview::MakePreview>()
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

/// What an upload does, from bytes held in memory (tests, benchmarks): stores them and
/// starts the book's workflow. The HTTP API streams into [`keys::upload`] and calls
/// [`books::submit`] itself.
pub async fn upload(
    db: &Database,
    blobs: &BlobStore,
    queue: &JobQueue,
    submission: Submission,
) -> anyhow::Result<BookId> {
    let tenant = Tenant::parse(&submission.tenant).ok_or_else(|| {
        anyhow::anyhow!(
            "{:?} is not a tenant: use 1 to 64 ASCII letters, digits, '-', '_' or '.'",
            submission.tenant
        )
    })?;
    let id = BookId::new();
    let first = RevisionId::first(&id);
    blobs
        .put_if_absent(&keys::upload(&first), submission.manuscript)
        .await?;
    let mut cover_name = None;
    if let Some((name, bytes)) = submission.cover {
        blobs
            .put_if_absent(&keys::cover_upload(&first), bytes)
            .await?;
        cover_name = Some(name);
    }
    let book = NewBook {
        id: id.clone(),
        tenant,
        file_name: submission.file_name,
        options: submission.options,
        cover_name,
        idempotency_key: None,
        callback_url: None,
    };
    match books::submit(db, queue, &book, steps::first_step(&first)).await? {
        Submitted::Created(id) | Submitted::Existing(id) => Ok(id),
    }
}
