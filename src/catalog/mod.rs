//! A tenant's catalog of ready books: an OPDS 1.2 acquisition feed for e-reader apps, and the
//! same list as JSON for other apps.
//!
//! Neither is computed per request. `publish` stores each book's [`Entry`] beside the book; the
//! `catalog.refresh` job (enqueued when a book is published or deleted, and for every tenant
//! by the `catalog_refresh` schedule) reads the tenant's ready books and their entries, and
//! stores both documents as blobs that the web serves as they are.
//!
//! Links are root-relative (`/books/{id}/epub`): the job does not know the public host name,
//! and OPDS clients resolve them against the feed's own URL.

mod jobs;
pub mod opds;

use anyhow::Context;
use futures_util::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use crate::books::{self, ReadyBook, RevisionId, Tenant, keys};
use crate::ebook::Book;
use crate::storage::{BlobStore, Database};

pub use crate::books::entry::{Cover, Entry};
pub use jobs::RefreshAll;

/// Entries read from the blob store at once while building a catalog.
const CONCURRENT_READS: usize = 16;

/// One book as listed: its entry, when it was published and last changed, and its links.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = CatalogBook)]
pub struct Listing {
    /// The book's id, as in `/api/v1/books/{id}`.
    #[schema(format = Uuid)]
    pub id: String,
    #[serde(flatten)]
    pub entry: Entry,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub published: String,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub updated: String,
    pub links: Links,
}

/// Where a listed book's files are: root-relative, to resolve against the server's URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = CatalogLinks)]
pub struct Links {
    /// The EPUB download.
    pub epub: String,
    /// The web reader (an HTML page, for people).
    pub reader: String,
    /// The cover image, when the book has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cover: Option<String>,
    /// The print edition's interior (PDF), when the book has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pdf: Option<String>,
}

impl Links {
    fn of(id: &str, entry: &Entry) -> Self {
        Links {
            epub: format!("/books/{id}/epub"),
            reader: format!("/books/{id}/reader/"),
            cover: entry
                .cover
                .as_ref()
                .map(|c| format!("/books/{id}/reader/{}", c.file)),
            pdf: entry.print.then(|| format!("/books/{id}/pdf")),
        }
    }
}

/// The JSON catalog, and the model the OPDS feed is written from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Catalog {
    /// Whose books these are.
    #[schema(value_type = String)]
    pub tenant: Tenant,
    /// When the list last changed (RFC 3339).
    #[schema(format = DateTime)]
    pub updated: String,
    /// Most recently published first.
    pub books: Vec<Listing>,
}

impl Catalog {
    /// A catalog with no books, as of now: what a tenant sees before its first refresh.
    pub fn empty(tenant: &Tenant) -> Self {
        Catalog {
            tenant: tenant.clone(),
            updated: now(),
            books: Vec::new(),
        }
    }

    pub fn to_json(&self) -> anyhow::Result<Vec<u8>> {
        let mut json = serde_json::to_vec_pretty(self)?;
        json.push(b'\n');
        Ok(json)
    }
}

/// What a refresh did.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Refreshed {
    pub books: usize,
    /// False when the stored catalog already said the same, and nothing was written.
    pub changed: bool,
}

/// Rebuilds the tenant's stored catalog from its ready books. Unchanged content is not
/// rewritten, so `updated` and the feed's ETag only move when the list does.
pub async fn refresh(
    db: &Database,
    blobs: &BlobStore,
    tenant: &Tenant,
) -> anyhow::Result<Refreshed> {
    let books = listings(db, blobs, tenant).await?;
    let count = books.len();
    let stored_json = blobs.get_opt(&keys::catalog_json(tenant)).await?;
    let previous = stored_json
        .as_deref()
        .and_then(|bytes| serde_json::from_slice::<Catalog>(bytes).ok());
    let mut catalog = Catalog {
        tenant: tenant.clone(),
        updated: now(),
        books,
    };
    if let Some(previous) = previous {
        // Rendered as of the stored time, unchanged content gives the stored bytes exactly;
        // comparing bytes (not lists) also notices a feed written by an older Bindery.
        catalog.updated = previous.updated;
        let same_json = stored_json.as_deref() == Some(catalog.to_json()?.as_slice());
        if same_json {
            let stored_feed = blobs.get_opt(&keys::catalog_opds(tenant)).await?;
            if stored_feed.as_deref() == Some(opds::render(&catalog)?.as_slice()) {
                return Ok(Refreshed {
                    books: count,
                    changed: false,
                });
            }
        }
        catalog.updated = now();
    }
    // The JSON last: it is what the next refresh compares against, so a crash in between
    // leaves a difference that the next refresh repairs.
    blobs
        .put(&keys::catalog_opds(tenant), opds::render(&catalog)?)
        .await?;
    blobs
        .put(&keys::catalog_json(tenant), catalog.to_json()?)
        .await?;
    Ok(Refreshed {
        books: count,
        changed: true,
    })
}

/// The tenant's ready books with their entries, most recently published first.
async fn listings(
    db: &Database,
    blobs: &BlobStore,
    tenant: &Tenant,
) -> anyhow::Result<Vec<Listing>> {
    let ready = books::ready(db, tenant).await?;
    let listed: Vec<Option<Listing>> = futures_util::stream::iter(ready)
        .map(|book| async move { listing(blobs, book).await })
        .buffered(CONCURRENT_READS)
        .try_collect()
        .await?;
    Ok(listed.into_iter().flatten().collect())
}

/// One book's listing; `None` when its files are gone (deleted since the query).
async fn listing(blobs: &BlobStore, book: ReadyBook) -> anyhow::Result<Option<Listing>> {
    let Some(entry) = entry(blobs, &book.current()).await? else {
        return Ok(None);
    };
    Ok(Some(Listing {
        links: Links::of(&book.id, &entry),
        published: timestamp(book.published_at.unwrap_or(book.updated_at)),
        updated: timestamp(book.updated_at),
        id: book.id.into(),
        entry,
    }))
}

/// The book's stored entry, or for a book published before entries existed, one made from
/// its document model (not stored: the book may be being deleted, and its files with it).
async fn entry(blobs: &BlobStore, revision: &RevisionId) -> anyhow::Result<Option<Entry>> {
    if let Some(bytes) = blobs.get_opt(&keys::catalog_entry(revision)).await? {
        let entry = serde_json::from_slice(&bytes)
            .with_context(|| format!("reading the catalog entry of book {revision}"))?;
        return Ok(Some(entry));
    }
    let Some(model) = blobs.get_opt(&keys::model(revision)).await? else {
        return Ok(None);
    };
    let model: Book = serde_json::from_slice(&model)
        .with_context(|| format!("reading the document model of book {revision}"))?;
    // Published before print editions were made.
    Ok(Some(Entry::of(&model, false)))
}

/// Tenants with a stored catalog, from the blob store's keys.
pub async fn stored_tenants(blobs: &BlobStore) -> anyhow::Result<Vec<Tenant>> {
    let mut tenants: Vec<Tenant> = blobs
        .list(keys::CATALOGS_PREFIX)
        .await?
        .iter()
        .filter_map(|key| key.strip_prefix(keys::CATALOGS_PREFIX)?.split_once('/'))
        // The store escapes a segment that is a bare `.` or `..`; tenant names hold no `%`.
        .filter_map(|(tenant, _)| Tenant::parse(&tenant.replace("%2E", ".")))
        .collect();
    tenants.dedup();
    Ok(tenants)
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn timestamp(millis: i64) -> String {
    chrono::DateTime::from_timestamp_millis(millis)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AzureConfig, BlobUrl};

    fn listing(id: &str) -> Listing {
        let entry = Entry {
            title: "T".into(),
            subtitle: Some("S".into()),
            authors: vec!["A".into()],
            language: "en".into(),
            identifier: "urn:uuid:x".into(),
            description: None,
            publisher: None,
            issued: None,
            subjects: Vec::new(),
            series: None,
            series_number: None,
            rights: None,
            cover: Some(Cover {
                file: "cover.png".into(),
                media_type: "image/png".into(),
            }),
            print: false,
        };
        Listing {
            id: id.into(),
            links: Links::of(id, &entry),
            entry,
            published: timestamp(0),
            updated: timestamp(1_000),
        }
    }

    #[test]
    fn the_stored_json_reads_back_as_written() {
        // A refresh compares against what it reads back; a lossy round trip would rewrite (and
        // change the ETag of) every catalog on every refresh.
        let catalog = Catalog {
            tenant: Tenant::parse("alice").expect("a tenant"),
            updated: timestamp(2_000),
            books: vec![listing("b1"), listing("b2")],
        };
        let json = catalog.to_json().expect("json");
        let back: Catalog = serde_json::from_slice(&json).expect("parse");
        assert_eq!(back, catalog);
        assert_eq!(back.to_json().expect("json"), json);
        let value: serde_json::Value = serde_json::from_slice(&json).expect("value");
        assert_eq!(value["books"][0]["title"], "T");
        assert_eq!(
            value["books"][0]["links"]["cover"],
            "/books/b1/reader/cover.png"
        );
    }

    #[tokio::test]
    async fn stored_tenants_are_read_back_from_their_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blobs = BlobStore::open(
            &BlobUrl::File {
                root: dir.path().to_path_buf(),
            },
            &AzureConfig::default(),
        )
        .expect("blobs");
        for tenant in ["alice", "bob.x", ".", ".."] {
            let tenant = &Tenant::parse(tenant).expect("a tenant");
            blobs
                .put(&keys::catalog_opds(tenant), "x")
                .await
                .expect("put");
            blobs
                .put(&keys::catalog_json(tenant), "x")
                .await
                .expect("put");
        }
        let mut found = stored_tenants(&blobs).await.expect("list");
        found.sort();
        assert_eq!(found, vec![".", "..", "alice", "bob.x"]);
    }
}
