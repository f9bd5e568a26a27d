//! Files of books that do not exist. An upload is streamed into the blob store before the
//! commit that creates its book, so a web process killed in between leaves the upload with no
//! book; and a step still running when its book is deleted can write a file after the delete
//! removed the rest. A new version of a book reserves its number first, so one whose upload a
//! crash cut off is left `uploading`, with what arrived of its files. Nothing else would ever
//! find these, so a scheduled job does.

use std::time::Duration;

use anyhow::Context as _;
use futures_util::TryStreamExt;
use object_store::path::Path;
use serde::{Deserialize, Serialize};

use crate::books::{self, BookId, keys};
use crate::jobs::{Job, JobContext, Outcome};
use crate::services::Services;
use crate::storage::installation;

/// Long enough that no upload still streaming is taken for an orphan.
const DEFAULT_MIN_AGE: Duration = Duration::from_secs(6 * 3600);
/// Ids checked against the database at once.
const PAGE: usize = 500;
/// Most book folders one run deletes, whatever their number: a database that lost its rows
/// (and an installation check that failed to notice) costs at most this many books a run.
pub const MAX_PER_RUN: usize = 100;

/// How many of `seen` book folders one run may delete: a tenth of them (at least one), and
/// at most [`MAX_PER_RUN`].
pub fn bound(seen: usize) -> usize {
    (seen / 10).clamp(1, MAX_PER_RUN)
}

/// Deletes every `books/{id}/` whose book does not exist and whose newest file is older than
/// `min_age_secs` (scheduled; `SCHEDULE_SWEEP_BLOBS`), at most [`bound`] of them a run, and
/// on a local store the staging files (`key#N`) and empty directories older than that under
/// the books that do exist; the new versions of books whose upload was cut off before then
/// (their files and their reserved number), at most [`MAX_PER_RUN`]; and
/// nothing at all unless the database and the blob store hold one installation id
/// (`storage::installation`), checked before the listing and again before each deletion.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepBlobs {
    pub min_age_secs: u64,
}

impl Default for SweepBlobs {
    fn default() -> Self {
        SweepBlobs {
            min_age_secs: DEFAULT_MIN_AGE.as_secs(),
        }
    }
}

impl Job for SweepBlobs {
    const NAME: &'static str = "bindery.sweep_blobs";
    const QUEUE: &'static str = "maintenance";
    type Context = Services;

    async fn run(self, cx: &JobContext<Services>) -> anyhow::Result<Outcome> {
        let app = cx.app();
        if let Err(reason) = installation::verify(&app.db, &app.blobs).await? {
            return Ok(refused(&reason));
        }
        let store = app.blobs.store();
        let listing = store
            .list_with_delimiter(Some(&Path::from("books")))
            .await
            .context("listing the books in the blob store")?;
        let ids: Vec<BookId> = listing
            .common_prefixes
            .iter()
            // Only book ids: anything else under books/ is not ours to judge.
            .filter_map(|p| p.filename().and_then(BookId::parse))
            .collect();
        let limit = bound(ids.len());
        let cutoff = chrono::Utc::now()
            - chrono::Duration::seconds(i64::try_from(self.min_age_secs).unwrap_or(i64::MAX));
        let (mut orphans, mut deleted, mut stopped) = (0usize, 0usize, false);
        let mut leftovers = 0usize;
        'pages: for page in ids.chunks(PAGE) {
            let known = books::existing(&app.db, page).await?;
            for id in page {
                let prefix = keys::book_prefix(id);
                if known.contains(id) {
                    // A live book keeps its files; only the staging files of writes cut short
                    // and empty directories go (local stores; nothing to do on a remote one).
                    let removed = app.blobs.remove_local_leftovers(&prefix, cutoff).await;
                    if removed > 0 {
                        tracing::info!(book.id = %id, removed, "removed staging files and empty directories a book's writes left");
                        leftovers += removed;
                    }
                    continue;
                }
                // On a local store, staging files and empty directories count too: a book
                // folder holding only those is an orphan like any other.
                let newest = match app.blobs.local_newest(&prefix).await {
                    Some(newest) => newest,
                    None => store
                        .list(Some(&Path::from(prefix.as_str())))
                        .map_ok(|meta| meta.last_modified)
                        .try_fold(
                            None,
                            |newest: Option<chrono::DateTime<chrono::Utc>>, t| async move {
                                Ok(Some(newest.map_or(t, |n| n.max(t))))
                            },
                        )
                        .await
                        .with_context(|| format!("listing {prefix}"))?,
                };
                if newest.is_some_and(|t| t <= cutoff) {
                    // Checked again just before deleting: a book created meanwhile keeps its files.
                    if books::get(&app.db, id).await?.is_some() {
                        continue;
                    }
                    if orphans >= limit {
                        tracing::warn!(
                            limit,
                            book_folders = ids.len(),
                            orphans,
                            "sweep_blobs stopped at its bound for one run; the rest wait for the \
                             next run (so many orphans may mean a database that lost its books: \
                             check it before then)"
                        );
                        stopped = true;
                        break 'pages;
                    }
                    // And the installation, in case either side was swapped while this ran.
                    if let Err(reason) = installation::verify(&app.db, &app.blobs).await? {
                        return Ok(refused(&reason));
                    }
                    let removed = app.blobs.delete_prefix(&prefix).await?;
                    tracing::info!(book.id = %id, blobs = removed, "deleted the files of a book that does not exist");
                    orphans += 1;
                    deleted += removed;
                }
            }
        }
        // New versions whose upload a crash cut off: their files, then their reserved number.
        let mut cut_off = 0usize;
        for revision in books::stale_uploads(&app.db, cutoff, MAX_PER_RUN as i64).await? {
            let removed = app
                .blobs
                .delete_prefix(&keys::revision_prefix(&revision))
                .await?;
            books::abandon_revision(&app.db, &revision).await?;
            tracing::info!(book.id = %revision.book, revision = revision.number, blobs = removed, "removed a new version whose upload was cut off");
            cut_off += 1;
            deleted += removed;
        }
        // A step frozen past its lease (a stopped process, a paused machine) may write a file of
        // its revision after the revision's files were removed: looked for again for a day.
        let mut strays = 0usize;
        let day_ago = chrono::Utc::now() - chrono::Duration::days(1);
        for revision in books::recently_removed(&app.db, day_ago, 1000).await? {
            let removed = super::removal::revision_files(&app.blobs, &revision).await?;
            if removed > 0 {
                tracing::info!(book.id = %revision.book, revision = revision.number, blobs = removed, "removed files a step wrote after its revision's files were removed");
                strays += removed;
                deleted += removed;
            }
        }
        Ok(Outcome::done_with(serde_json::json!({
            "uploads_cut_off": cut_off,
            "stray_revision_files": strays,
            "books_checked": ids.len(),
            "orphans": orphans,
            "blobs_deleted": deleted,
            "limit": limit,
            "stopped_at_limit": stopped,
            "leftovers_removed": leftovers,
        })))
    }
}

/// The installation check failed: nothing is deleted, and the reason is logged and kept as
/// the job's result.
fn refused(reason: &str) -> Outcome {
    tracing::error!(
        reason,
        "sweep_blobs deletes nothing: the database and the blob store do not hold one \
         installation id (see `bindery storage adopt`)"
    );
    Outcome::done_with(serde_json::json!({
        "refused": reason,
        "orphans": 0,
        "blobs_deleted": 0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_deletes_a_tenth_of_the_book_folders_at_least_one_at_most_the_cap() {
        assert_eq!(bound(0), 1);
        assert_eq!(bound(2), 1);
        assert_eq!(bound(19), 1);
        assert_eq!(bound(32), 3);
        assert_eq!(bound(1000), 100);
        assert_eq!(bound(1_000_000), MAX_PER_RUN);
    }
}
