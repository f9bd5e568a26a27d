//! The jobs a book's operations leave behind, enqueued in the operation's own transaction so
//! that they exist if and only if the change that needs them committed. Declared here, with
//! how they are enqueued; each `impl Job` sits where what it needs is reachable: the catalog
//! refresh in `catalog`, the removal of a book's files in `pipeline` (which owns the blob
//! layout).

use serde::{Deserialize, Serialize};

use super::id::{BookId, RevisionId, Tenant};
use crate::jobs::NewJob;

/// Rebuilds one tenant's stored catalog (`catalog.refresh`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RefreshCatalog {
    pub tenant: Tenant,
}

/// A refresh of `tenant`'s catalog, to enqueue after anything that changes its list.
///
/// A burst of changes makes one job: the unique key holds only while the job is queued (it
/// lets go of the key when it starts, before reading anything), so a change made while a
/// refresh is already running enqueues a new one instead of being swallowed by it. The
/// serialization key runs a tenant's refreshes one at a time, in order, so an older list never
/// overwrites a newer one. Its own workflow keeps it out of the book's that published it.
pub fn refresh_catalog(tenant: &Tenant) -> NewJob {
    let key = format!("catalog:{tenant}");
    NewJob::of(&RefreshCatalog {
        tenant: tenant.clone(),
    })
    .tenant(tenant)
    .unique_key(format!("catalog.refresh:{tenant}"))
    .serial_key(key.clone())
    .workflow(key)
}

/// Removes every file of a deleted book, or of one revision a newer one superseded
/// (`book.remove_files`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RemoveFiles {
    pub book: BookId,
    /// Only this revision's files, once its steps have stopped; none: the whole book's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
}

/// The removal of `book`'s files, once its row is gone.
pub fn remove_files(book: &BookId, tenant: &Tenant) -> NewJob {
    NewJob::of(&RemoveFiles {
        book: book.clone(),
        revision: None,
    })
    .tenant(tenant)
}

/// The removal of a superseded revision's files, which first stops its steps.
pub fn remove_revision_files(revision: &RevisionId, tenant: &Tenant) -> NewJob {
    NewJob::of(&RemoveFiles {
        book: revision.book.clone(),
        revision: Some(revision.number),
    })
    .tenant(tenant)
}

/// What [`RemoveFiles`] answers: how many blobs it removed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Removed {
    pub blobs: usize,
}
