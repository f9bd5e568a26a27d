//! The removal of a deleted book's files: `books::delete` enqueues it in the transaction that
//! deletes the row, so the files go even when the process that deleted the book stops right
//! after. It runs here, beside the blob layout's other keeper (`sweep`), where the blob store
//! is reachable.

use crate::books::jobs::Removed;
use crate::books::{RemoveFiles, keys};
use crate::jobs::{Job, JobContext, Outcome};
use crate::services::Services;

impl Job for RemoveFiles {
    const NAME: &'static str = "books.remove_files";
    const QUEUE: &'static str = "maintenance";
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    async fn run(self, cx: &JobContext<Services>) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let blobs = app
            .blobs
            .delete_prefix(&keys::book_prefix(&self.book))
            .await?;
        Ok(Outcome::done_with(Removed { blobs }))
    }
}
