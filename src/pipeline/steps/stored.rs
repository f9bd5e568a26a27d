//! What the steps read back from storage: the book's row, and the model the ebooks are made
//! from.

use std::sync::Arc;

use super::Cx;
use crate::books::{self, BookId, BookRow, keys};
use crate::ebook::xhtml::PlannedBook;
use crate::services::Services;

/// The book's row, or `None` when it was deleted while its pipeline ran.
pub(super) async fn book_row(cx: &Cx, book: &BookId) -> anyhow::Result<Option<BookRow>> {
    books::get(&cx.app().db, book).await
}

/// The book as the ebooks are made from it: the stored model, with the print edition's pages
/// marked when there is one.
pub(super) async fn model(app: &Services, book: &BookId) -> anyhow::Result<Arc<PlannedBook>> {
    app.models
        .get(&app.blobs, &keys::model(book), &keys::pagination(book))
        .await
}

/// The book as parse stored it: not the worker's cache, which marks the print edition's pages
/// into it, for what runs before or apart from them (the print edition, the covers).
pub(super) async fn parsed(
    blobs: &crate::storage::BlobStore,
    book: &BookId,
) -> anyhow::Result<crate::ebook::Book> {
    use anyhow::Context as _;
    serde_json::from_slice(&blobs.get(&keys::model(book)).await?)
        .context("reading the stored document model")
}
