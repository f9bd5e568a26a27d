//! The `package_covers` step: the pages' thumbnail and the stores' cover, drawn in the worker.

use serde::{Deserialize, Serialize};

use super::stored;
use super::{Cx, QUEUE};
use crate::books::{RevisionId, keys};
use crate::jobs::{Job, Outcome};
use crate::services::Services;

/// The book's covers beyond the EPUB's: the pages' thumbnail and the stores' 1600×2560 JPEG.
/// A job of its own, not part of publishing: drawing the large one was the longest thing
/// publishing did, and a kill during it cost publishing an attempt. It needs nothing of the
/// print edition, so it is drawn beside the print edition's measures (`typeset`), where it
/// had been the last thing before publishing (160 ms after the EPUB, for the corpus novel);
/// a book without a print edition draws it beside the EPUB and the reader (`plan_packaging`).
/// An extra: without it the pages show the EPUB's cover and the store cover is missing, but
/// the book publishes (and a worker older than this step, which discards it, fails nothing).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PackageCovers {
    #[serde(flatten)]
    pub revision: RevisionId,
}

impl Job for PackageCovers {
    const NAME: &'static str = "book.package_covers";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    /// In the worker, unlike the other packagers: what it draws from is bounded by constants.
    /// The stored cover is the reading child's `ebook::cover::prepare`d one, at most
    /// 1600×2560 pixels (32 MiB decoded at 16 bits a channel), or the generated design drawn
    /// at that size, whatever the upload was.
    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        // The stored model itself, not the worker's cache of it: this step runs beside the
        // print edition's pieces, before its pages can be marked into the model the cache
        // keeps for the ebooks.
        let stored = stored::parsed(&app.blobs, &self.revision).await?;
        let Some(cover) = stored.cover.clone() else {
            return Ok(Outcome::done());
        };
        let bytes = app
            .blobs
            .get(&keys::resource(&self.revision, &cover.file_name))
            .await?;
        let (thumbnail, store_cover) = tokio::task::spawn_blocking(move || {
            anyhow::Ok((
                crate::ebook::cover::thumbnail(&cover, &bytes)?,
                crate::ebook::cover::store_jpeg(&cover, &bytes)?,
            ))
        })
        .await??;
        app.blobs
            .put_if_absent(&keys::thumbnail(&self.revision), thumbnail)
            .await?;
        app.blobs
            .put_if_absent(&keys::store_cover(&self.revision), store_cover)
            .await?;
        Ok(Outcome::done())
    }
}
