//! The worker's cache of parsed document models (with the print edition's pages marked), by
//! the blob key each was stored at. A long
//! book's chapters are rendered by hundreds of jobs, and each would otherwise read and parse
//! the whole model and plan the book's ids again. The model blob of a book never changes once written (create-if-absent,
//! deterministic), so a copy in memory can never be stale; this is a cache of storage, not
//! a channel beside it.

use std::sync::{Arc, Mutex};

use anyhow::Context;

use crate::ebook::xhtml::PlannedBook;
use crate::ebook::{Book, Pagination};
use crate::storage::BlobStore;

/// How many books' models a worker keeps (the books it is working on right now).
const CAPACITY: usize = 4;

type Cell = Arc<tokio::sync::OnceCell<Arc<PlannedBook>>>;

#[derive(Default)]
pub struct ModelCache {
    /// Most recently used last. A cell is filled once: the chapter jobs of a book that start
    /// together wait for one load instead of each parsing the model.
    entries: Mutex<Vec<(String, Cell)>>,
}

impl ModelCache {
    /// The model stored at `key`, from memory or from the blob store, with the print
    /// edition's pages marked when `pagination` holds them. Ask only once the print edition
    /// is settled (made, or failed): what is read first is kept.
    pub async fn get(
        &self,
        blobs: &BlobStore,
        key: &str,
        pagination: &str,
    ) -> anyhow::Result<Arc<PlannedBook>> {
        let cell = self.cell(key);
        let planned = cell
            .get_or_try_init(|| async { anyhow::Ok(Arc::new(load(blobs, key, pagination).await?)) })
            .await?;
        Ok(planned.clone())
    }

    /// The key's cell, created (and the least recently used evicted) if need be.
    fn cell(&self, key: &str) -> Cell {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let entry = match entries.iter().position(|(at, _)| at == key) {
            Some(at) => entries.remove(at),
            None => {
                if entries.len() >= CAPACITY {
                    entries.remove(0);
                }
                (key.to_owned(), Cell::default())
            }
        };
        let cell = entry.1.clone();
        entries.push(entry);
        cell
    }
}

/// The model stored at `key`, with the print edition's pages marked when `pagination` holds
/// them, and its ids planned: what the cache keeps (parsed on a blocking thread, off the
/// worker's runtime).
pub async fn load(blobs: &BlobStore, key: &str, pagination: &str) -> anyhow::Result<PlannedBook> {
    let (model, pages) = read(blobs, key, pagination).await?;
    tokio::task::spawn_blocking(move || plan(&model, pages.as_deref())).await?
}

/// The stored model's bytes and its pagination's, if the print edition made one.
pub async fn read(
    blobs: &BlobStore,
    key: &str,
    pagination: &str,
) -> anyhow::Result<(bytes::Bytes, Option<bytes::Bytes>)> {
    Ok((blobs.get(key).await?, blobs.get_opt(pagination).await?))
}

/// The model parsed from `model`, its printed pages marked from `pages`, its ids planned. A
/// packaging child calls it on its own thread: it starts no other (under its memory limit a
/// thread's stack can be one allocation too many).
pub fn plan(model: &[u8], pages: Option<&[u8]>) -> anyhow::Result<PlannedBook> {
    let mut model: Book =
        serde_json::from_slice(model).context("reading the stored document model")?;
    if let Some(pages) = pages {
        let pagination: Pagination =
            serde_json::from_slice(pages).context("reading the print edition's pagination")?;
        model.mark_print_pages(pagination.edition, &pagination.pages);
    }
    Ok(PlannedBook::new(model))
}
