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

/// The house styles the book's tenant may use, as a book's options name them (never stored
/// with them: a style kept later, or replaced, is the one the next reading finds).
pub(crate) async fn house_styles(
    app: &Services,
    book: &books::BookId,
) -> anyhow::Result<Vec<crate::convert::HouseStyle>> {
    let Some(row) = books::get(&app.db, book).await? else {
        return Ok(Vec::new());
    };
    Ok(crate::house_styles::visible(&app.db, &row.tenant)
        .await?
        .iter()
        .filter_map(crate::house_styles::Kept::house_style)
        .collect())
}

/// Copies `house`'s files into `revision`'s resources, where the book's later steps find
/// them (`style::house::resource_id`): the revision keeps what it was made with whatever
/// becomes of the style.
pub(crate) async fn carry_style_files(
    blobs: &crate::storage::BlobStore,
    revision: &RevisionId,
    house: Option<&crate::convert::HouseStyle>,
) -> anyhow::Result<()> {
    let Some(house) = house else {
        return Ok(());
    };
    for (name, bytes) in crate::house_styles::files(blobs, house).await? {
        blobs
            .put_if_absent(
                &keys::resource(revision, &crate::style::house::resource_id(&name)),
                bytes,
            )
            .await?;
    }
    Ok(())
}
