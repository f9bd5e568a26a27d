//! What changed between two revisions of a book, as the API and the pages show it: the report
//! stored when the newer was published (against the revision before it), or, for another
//! pair, the two compared from storage while both keep their files (`books::changes`).

use actix_web::http::StatusCode;

use super::AppState;
use super::downloads;
use super::error::ApiError;
use crate::books::{self, BookRow, RevisionRow};
use crate::ebook::changes::Changes;

/// What changed from revision `from` of `book` (by default the one before `to`) to `to`.
pub(crate) async fn between(
    state: &AppState,
    book: &BookRow,
    to: &RevisionRow,
    from: Option<u32>,
) -> Result<Changes, ApiError> {
    if to.status == books::RevisionStatus::Ready
        && let Some(stored) = books::changes::stored(&state.db, &to.id).await?
        && from.is_none_or(|from| from == stored.from)
    {
        return Ok(stored);
    }
    let revisions = books::revisions(&state.db, &book.id).await?;
    let from = match from {
        Some(number) => revisions
            .iter()
            .find(|r| r.id.number == number)
            .cloned()
            .ok_or_else(|| {
                ApiError::not_found(
                    "revision",
                    format!("Book {} has no revision {number}.", book.id),
                )
            })?,
        None => books::changes::before(&revisions, &to.id).ok_or_else(|| {
            ApiError::new(
                StatusCode::CONFLICT,
                "nothing_to_compare",
                format!(
                    "Revision {} has no earlier built revision that keeps its files to compare \
                     with.",
                    to.id.number
                ),
            )
        })?,
    };
    comparable(&from)?;
    comparable(to)?;
    Ok(books::changes::between(&state.blobs, &from, to).await?)
}

/// `revision` can be compared (built, with its files), or the answer that says why not.
fn comparable(revision: &RevisionRow) -> Result<(), ApiError> {
    if revision.status != books::RevisionStatus::Ready {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_ready",
            format!(
                "Revision {} is {}; only built revisions are compared.",
                revision.id.number, revision.status
            ),
        ));
    }
    if revision.files_removed_at.is_some() {
        return Err(downloads::files_removed(revision));
    }
    Ok(())
}
