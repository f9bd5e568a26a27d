//! A book as the web shows it, for the API and the pages alike: the caller's book by the id in
//! a path, and its view model (`books::view`), put together from its row, where its workflow
//! is (`pipeline::progress`, which works it out in the view's own types) and its webhook
//! deliveries.

use super::AppState;
use super::error::ApiError;
use crate::books::{self, BookId, BookRow, BookView, RevisionId, RevisionRow, Tenant};
use crate::pipeline::progress;
use crate::webhooks;

/// The tenant's book `id` (as a path gave it), or 404: for an id that is not a book id, a book
/// that does not exist, and another tenant's book, whose existence is not revealed.
pub(crate) async fn own_book(
    state: &AppState,
    tenant: &Tenant,
    id: &str,
) -> Result<BookRow, ApiError> {
    let missing = || ApiError::not_found("book", format!("No book {id:?} here."));
    let Some(id) = BookId::parse(id) else {
        return Err(missing());
    };
    books::of_tenant(&state.db, tenant, &id)
        .await?
        .ok_or_else(missing)
}

/// Revision `n` (as a path gave it) of the caller's `book`, or 404.
pub(crate) async fn own_revision(
    state: &AppState,
    book: &BookRow,
    n: &str,
) -> Result<RevisionRow, ApiError> {
    let missing = || {
        ApiError::not_found(
            "revision",
            format!("Book {} has no revision {n:?}.", book.id),
        )
    };
    let number: u32 = n.parse().map_err(|_| missing())?;
    books::revision(&state.db, &RevisionId::of(&book.id, number))
        .await?
        .filter(|r| r.status != books::RevisionStatus::Uploading)
        .ok_or_else(missing)
}

/// The book's view; `detailed` adds its steps' progress, its report and its webhook deliveries.
pub(crate) async fn view(
    state: &AppState,
    book: &BookRow,
    detailed: bool,
) -> Result<BookView, ApiError> {
    let now = progress::of(&state.queue, book, detailed).await?;
    let deliveries = match &book.callback_url {
        Some(_) if detailed => Some(webhooks::statuses(&state.db, &state.queue, &book.id).await?),
        _ => None,
    };
    Ok(BookView::of(book, now, deliveries, detailed))
}
