//! Books through the library, beside a running binary: the same database and blob store the
//! processes use, so tests can submit uploads and read results without the HTTP API.

use std::path::Path;
use std::time::Duration;

use bindery::books::{self, BookId, BookRow};
use bindery::config::{AzureConfig, BlobUrl, DatabaseUrl};
use bindery::convert::Options;
use bindery::jobs::JobQueue;
use bindery::pipeline::{self, Submission};
use bindery::storage::{BlobStore, Database};

pub struct Store {
    pub db: Database,
    pub blobs: BlobStore,
    pub queue: JobQueue,
}

pub async fn open(data_dir: &Path, database_url: Option<&str>) -> Store {
    let url = match database_url {
        Some(url) => DatabaseUrl::Postgres {
            url: bindery::config::Secret::new(url.parse().expect("url")),
        },
        None => DatabaseUrl::Sqlite {
            path: data_dir.join("bindery.db"),
        },
    };
    let db = Database::connect(&url, 2).await.expect("connect");
    db.migrate().await.expect("migrate");
    let blobs = BlobStore::open(
        &BlobUrl::File {
            root: data_dir.join("blobs"),
        },
        &AzureConfig::default(),
    )
    .expect("blobs");
    let queue = JobQueue::new(db.clone());
    Store { db, blobs, queue }
}

pub async fn submit(store: &Store, file: &Path, cover: Option<&Path>) -> BookId {
    let manuscript = std::fs::read(file).expect("read manuscript");
    submit_bytes(
        store,
        &file.file_name().expect("name").to_string_lossy(),
        manuscript,
        cover,
    )
    .await
}

pub async fn submit_bytes(
    store: &Store,
    name: &str,
    manuscript: Vec<u8>,
    cover: Option<&Path>,
) -> BookId {
    submit_as(store, "test", name, manuscript, cover).await
}

/// A submission by one tenant (an API token's name).
pub async fn submit_as(
    store: &Store,
    tenant: &str,
    name: &str,
    manuscript: Vec<u8>,
    cover: Option<&Path>,
) -> BookId {
    pipeline::upload(
        &store.db,
        &store.blobs,
        &store.queue,
        Submission {
            tenant: tenant.into(),
            file_name: name.into(),
            manuscript: manuscript.into(),
            cover: cover.map(|p| {
                (
                    p.file_name().expect("name").to_string_lossy().into_owned(),
                    std::fs::read(p).expect("read cover").into(),
                )
            }),
            options: Options::default(),
        },
    )
    .await
    .expect("submit")
}

/// Polls until the book leaves `processing`.
pub async fn wait_book(store: &Store, id: &str, timeout: Duration) -> BookRow {
    super::eventually_async(
        &format!("book {id} to leave processing"),
        timeout,
        async || {
            let book = books::get(&store.db, &BookId::parse(id).expect("a book id"))
                .await
                .expect("read")
                .expect("book exists");
            if book.status != books::BookStatus::Processing {
                return Ok(book);
            }
            Err(format!(
                "jobs: {:#?}",
                store.queue.workflow(id).await.map(|w| w
                    .jobs
                    .iter()
                    .map(|j| format!("{} {} attempt {} {}", j.kind, j.state, j.attempt, j.errors))
                    .collect::<Vec<_>>())
            ))
        },
    )
    .await
}
