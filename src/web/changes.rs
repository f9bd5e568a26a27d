//! What changed between two revisions of a book, as the API and the pages show it: the
//! revisions read from storage (each must be built and keep its files) and compared by
//! `ebook::changes` on a blocking thread, as a diff is work for the processor.

use actix_web::http::StatusCode;

use super::AppState;
use super::downloads;
use super::error::ApiError;
use crate::books::{self, BookRow, RevisionRow, keys};
use crate::ebook::changes::{Changes, Version, compare};

/// What changed from revision `from` of `book` (by default the newest built one before `to`
/// that keeps its files) to `to`.
pub(crate) async fn between(
    state: &AppState,
    book: &BookRow,
    to: &RevisionRow,
    from: Option<u32>,
) -> Result<Changes, ApiError> {
    let revisions = books::revisions(&state.db, &book.id).await?;
    let from = match from {
        Some(number) => revisions
            .into_iter()
            .find(|r| r.id.number == number)
            .ok_or_else(|| {
                ApiError::not_found(
                    "revision",
                    format!("Book {} has no revision {number}.", book.id),
                )
            })?,
        None => revisions
            .into_iter()
            .find(|r| {
                r.id.number < to.id.number
                    && r.status == books::RevisionStatus::Ready
                    && r.files_removed_at.is_none()
            })
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::CONFLICT,
                    "nothing_to_compare",
                    format!(
                        "Revision {} has no earlier built revision that keeps its files to \
                         compare with.",
                        to.id.number
                    ),
                )
            })?,
    };
    let (older, newer) = (read(state, &from).await?, read(state, to).await?);
    let changes = tokio::task::spawn_blocking(move || compare(&version(&older), &version(&newer)))
        .await
        .map_err(|e| anyhow::anyhow!("comparing revisions: {e}"))?;
    Ok(changes)
}

/// A revision as a comparison reads it: its number, model, report and pagination.
type Read = (
    u32,
    crate::ebook::Book,
    Option<crate::report::Report>,
    Option<crate::ebook::Pagination>,
);

fn version(read: &Read) -> Version<'_> {
    let (number, book, report, pagination) = read;
    Version {
        number: *number,
        book,
        report: report.as_ref(),
        pagination: pagination.as_ref(),
    }
}

/// What comparing `revision` needs, from storage; it must be built and keep its files.
async fn read(state: &AppState, revision: &RevisionRow) -> Result<Read, ApiError> {
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
    let model = state.blobs.get(&keys::model(&revision.id)).await?;
    let book: crate::ebook::Book = serde_json::from_slice(&model)
        .map_err(|e| anyhow::anyhow!("reading the model of {}: {e}", revision.id))?;
    let report = revision
        .report
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok());
    let pagination = match state.blobs.get_opt(&keys::pagination(&revision.id)).await? {
        Some(bytes) => serde_json::from_slice(&bytes).ok(),
        None => None,
    };
    Ok((revision.id.number, book, report, pagination))
}
