//! The worker's cache of parsed document models. A long book's chapters are rendered by
//! hundreds of jobs, and each would otherwise read and parse the whole model and plan the
//! book's ids again. The model blob of a book never changes once written (create-if-absent,
//! deterministic), so a copy in memory can never be stale; this is a cache of storage, not
//! a channel beside it.

use std::sync::{Arc, Mutex};

use anyhow::Context;

use super::keys;
use crate::ebook::Book;
use crate::ebook::xhtml::PlannedBook;
use crate::storage::BlobStore;

/// How many books' models a worker keeps (the books it is working on right now).
const CAPACITY: usize = 4;

#[derive(Default)]
pub struct ModelCache {
    /// Most recently used last.
    entries: Mutex<Vec<(String, Arc<PlannedBook>)>>,
}

impl ModelCache {
    /// The book's model, from memory or from the blob store.
    pub async fn get(&self, blobs: &BlobStore, book: &str) -> anyhow::Result<Arc<PlannedBook>> {
        if let Some(found) = self.lookup(book) {
            return Ok(found);
        }
        let bytes = blobs.get(&keys::model(book)).await?;
        let planned = tokio::task::spawn_blocking(move || -> anyhow::Result<PlannedBook> {
            let model: Book =
                serde_json::from_slice(&bytes).context("reading the stored document model")?;
            Ok(PlannedBook::new(model))
        })
        .await??;
        let planned = Arc::new(planned);
        let mut entries = self.lock();
        entries.retain(|(id, _)| id != book);
        if entries.len() >= CAPACITY {
            entries.remove(0);
        }
        entries.push((book.to_owned(), planned.clone()));
        Ok(planned)
    }

    fn lookup(&self, book: &str) -> Option<Arc<PlannedBook>> {
        let mut entries = self.lock();
        let at = entries.iter().position(|(id, _)| id == book)?;
        let entry = entries.remove(at);
        let found = entry.1.clone();
        entries.push(entry);
        Some(found)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, Arc<PlannedBook>)>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}
