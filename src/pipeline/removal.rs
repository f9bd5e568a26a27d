//! The removal of a deleted book's files: `books::delete` enqueues it in the transaction that
//! deletes the row, so the files go even when the process that deleted the book stops right
//! after; and of a revision's, when a newer one superseded it while it built (`books::revise`).
//! It runs here, beside the blob layout's other keeper (`sweep`), where the blob store is
//! reachable.

use crate::books::jobs::Removed;
use crate::books::{RemoveFiles, RevisionId, keys};
use crate::jobs::{Job, JobContext, Outcome};
use crate::services::Services;

/// How long the removal of a superseded revision's files waits for its cancelled steps to stop.
const STEPS_STOPPING: std::time::Duration = std::time::Duration::from_millis(500);

impl Job for RemoveFiles {
    const NAME: &'static str = "books.remove_files";
    const QUEUE: &'static str = "maintenance";
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    async fn run(self, cx: &JobContext<Services>) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let Some(number) = self.revision else {
            let blobs = app
                .blobs
                .delete_prefix(&keys::book_prefix(&self.book))
                .await?;
            return Ok(Outcome::done_with(Removed { blobs }));
        };
        let revision = RevisionId::of(&self.book, number);
        // Its steps first: one still running would write after the removal. A step cancelled
        // while it runs stops within a heartbeat.
        let workflow = app.queue.workflow(&revision.workflow()).await?;
        let running: Vec<_> = workflow
            .jobs
            .iter()
            .filter(|j| !j.state.is_terminal())
            .collect();
        if !running.is_empty() {
            for job in running {
                app.queue
                    .cancel(job.id, "a newer revision of the book superseded this one")
                    .await?;
            }
            return Ok(Outcome::Snooze(STEPS_STOPPING));
        }
        let blobs = revision_files(&app.blobs, &revision).await?;
        tracing::info!(
            revision = number,
            blobs,
            "a superseded revision's files removed"
        );
        Ok(Outcome::done_with(Removed { blobs }))
    }
}

/// Deletes the files of one revision, and how many there were.
pub(crate) async fn revision_files(
    blobs: &crate::storage::BlobStore,
    revision: &RevisionId,
) -> anyhow::Result<usize> {
    if revision.number != 1 {
        return blobs.delete_prefix(&keys::revision_prefix(revision)).await;
    }
    // Revision 1's prefix is the book's: the later revisions' files are under it.
    let later = keys::later_revisions_prefix(&revision.book);
    let mut removed = 0;
    for key in blobs.list(&keys::book_prefix(&revision.book)).await? {
        if !key.starts_with(&later) {
            blobs.delete(&key).await?;
            removed += 1;
        }
    }
    Ok(removed)
}
