//! What changed between two revisions of a book, from storage: each revision's model, report
//! and pagination, compared by `ebook::changes` on a blocking thread (a diff is work for the
//! processor). Publishing stores each revision's report against the revision before it, so
//! that it outlives the files it was made from; any other pair is compared while both keep
//! their files.

use anyhow::Context;

use super::id::RevisionId;
use super::keys;
use super::revisions::{self, RevisionRow, RevisionStatus};
use crate::ebook::changes::{Changes, Version, compare};
use crate::ebook::{Book, Pagination};
use crate::report::Report;
use crate::storage::{BlobStore, Database};

/// The revision `to` is compared with when no other is asked for: the newest built one before
/// it that keeps its files, among `revisions`.
pub fn before(revisions: &[RevisionRow], to: &RevisionId) -> Option<RevisionRow> {
    revisions
        .iter()
        .filter(|r| r.id.number < to.number && comparable(r))
        .max_by_key(|r| r.id.number)
        .cloned()
}

/// Whether `revision` can be read for a comparison: built, with its files.
pub fn comparable(revision: &RevisionRow) -> bool {
    revision.status == RevisionStatus::Ready && revision.files_removed_at.is_none()
}

/// What changed from `from` to `to`, both built and keeping their files ([`comparable`]).
pub async fn between(
    blobs: &BlobStore,
    from: &RevisionRow,
    to: &RevisionRow,
) -> anyhow::Result<Changes> {
    let (older, newer) = (read(blobs, from).await?, read(blobs, to).await?);
    tokio::task::spawn_blocking(move || compare(&older.version(), &newer.version()))
        .await
        .context("comparing revisions")
}

/// What changed in `id` since the revision before it, as stored when it was published.
pub async fn stored(db: &Database, id: &RevisionId) -> anyhow::Result<Option<Changes>> {
    match revisions::stored_changes(db, id).await? {
        Some(json) => Ok(Some(
            serde_json::from_str(&json).with_context(|| format!("reading the changes of {id}"))?,
        )),
        None => Ok(None),
    }
}

/// A revision as a comparison reads it.
struct Side {
    number: u32,
    book: Book,
    report: Option<Report>,
    pagination: Option<Pagination>,
}

impl Side {
    fn version(&self) -> Version<'_> {
        Version {
            number: self.number,
            book: &self.book,
            report: self.report.as_ref(),
            pagination: self.pagination.as_ref(),
        }
    }
}

async fn read(blobs: &BlobStore, revision: &RevisionRow) -> anyhow::Result<Side> {
    let model = blobs.get(&keys::model(&revision.id)).await?;
    let book: Book = serde_json::from_slice(&model)
        .with_context(|| format!("reading the model of {}", revision.id))?;
    // A report or pagination that does not read is compared as none: the chapters still are.
    let report = revision
        .report
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok());
    let pagination = match blobs.get_opt(&keys::pagination(&revision.id)).await? {
        Some(bytes) => serde_json::from_slice(&bytes).ok(),
        None => None,
    };
    Ok(Side {
        number: revision.id.number,
        book,
        report,
        pagination,
    })
}
