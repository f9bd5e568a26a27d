//! What the steps read back from storage: the revision's row, and the model the ebooks are
//! made from.

use std::sync::Arc;

use super::Cx;
use crate::books::{self, RevisionId, RevisionRow, RevisionStatus, keys};
use crate::ebook::xhtml::PlannedBook;
use crate::services::Services;

/// The revision's row, or `None` when its book was deleted while its pipeline ran, or a newer
/// revision cancelled it.
pub(super) async fn revision_row(
    cx: &Cx,
    revision: &RevisionId,
) -> anyhow::Result<Option<RevisionRow>> {
    let db = &cx.app().db;
    if books::get(db, &revision.book).await?.is_none() {
        return Ok(None);
    }
    Ok(books::revision(db, revision)
        .await?
        .filter(|row| row.status != RevisionStatus::Cancelled))
}

/// The book as the ebooks are made from it: the stored model, with the print edition's pages
/// marked when there is one.
pub(super) async fn model(
    app: &Services,
    revision: &RevisionId,
) -> anyhow::Result<Arc<PlannedBook>> {
    app.models
        .get(
            &app.blobs,
            &keys::model(revision),
            &keys::pagination(revision),
        )
        .await
}

/// The book as parse stored it: not the worker's cache, which marks the print edition's pages
/// into it, for what runs before or apart from them (the print edition, the covers).
pub(super) async fn parsed(
    blobs: &crate::storage::BlobStore,
    revision: &RevisionId,
) -> anyhow::Result<crate::ebook::Book> {
    use anyhow::Context as _;
    serde_json::from_slice(&blobs.get(&keys::model(revision)).await?)
        .context("reading the stored document model")
}
