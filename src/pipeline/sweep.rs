//! Files of books that do not exist. An upload is streamed into the blob store before the
//! commit that creates its book, so a web process killed in between leaves the upload with no
//! book; and a step still running when its book is deleted can write a file after the delete
//! removed the rest. Nothing else would ever find these, so a scheduled job does.

use std::time::Duration;

use anyhow::Context as _;
use futures_util::TryStreamExt;
use object_store::path::Path;
use serde::{Deserialize, Serialize};

use super::{books, keys};
use crate::jobs::{Job, JobContext, Outcome};
use crate::worker::WorkerContext;

/// Long enough that no upload still streaming is taken for an orphan.
const DEFAULT_MIN_AGE: Duration = Duration::from_secs(6 * 3600);
/// Ids checked against the database at once.
const PAGE: usize = 500;

/// Deletes every `books/{id}/` whose book does not exist and whose newest file is older than
/// `min_age_secs` (scheduled; `SCHEDULE_SWEEP_BLOBS`).
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
    type Context = WorkerContext;

    async fn run(self, cx: &JobContext<WorkerContext>) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let store = app.blobs.store();
        let listing = store
            .list_with_delimiter(Some(&Path::from("books")))
            .await
            .context("listing the books in the blob store")?;
        let ids: Vec<String> = listing
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_owned))
            // Only book ids: anything else under books/ is not ours to judge.
            .filter(|id| uuid::Uuid::parse_str(id).is_ok())
            .collect();
        let cutoff = chrono::Utc::now()
            - chrono::Duration::seconds(i64::try_from(self.min_age_secs).unwrap_or(i64::MAX));
        let (mut orphans, mut deleted) = (0usize, 0usize);
        for page in ids.chunks(PAGE) {
            let known = books::existing(&app.db, page).await?;
            for id in page.iter().filter(|id| !known.contains(*id)) {
                let prefix = keys::book_prefix(id);
                let newest = store
                    .list(Some(&Path::from(prefix.as_str())))
                    .map_ok(|meta| meta.last_modified)
                    .try_fold(
                        None,
                        |newest: Option<chrono::DateTime<chrono::Utc>>, t| async move {
                            Ok(Some(newest.map_or(t, |n| n.max(t))))
                        },
                    )
                    .await
                    .with_context(|| format!("listing {prefix}"))?;
                if newest.is_some_and(|t| t <= cutoff) {
                    // Checked again just before deleting: a book created meanwhile keeps its files.
                    if books::get(&app.db, id).await?.is_some() {
                        continue;
                    }
                    let removed = app.blobs.delete_prefix(&prefix).await?;
                    tracing::info!(book.id = %id, blobs = removed, "deleted the files of a book that does not exist");
                    orphans += 1;
                    deleted += removed;
                }
            }
        }
        Ok(Outcome::done_with(serde_json::json!({
            "books_checked": ids.len(),
            "orphans": orphans,
            "blobs_deleted": deleted,
        })))
    }
}
