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

/// The next revision of book `id`: `manuscript`, named `name`, with the metadata its current
/// revision was given, as a new version sent through the API carries it over.
pub async fn submit_revision(
    store: &Store,
    id: &BookId,
    name: &str,
    manuscript: Vec<u8>,
) -> books::RevisionId {
    let book = books::get(&store.db, id)
        .await
        .expect("read")
        .expect("the book");
    let books::Reserved::New(revision) = books::reserve_revision(&store.db, id, None)
        .await
        .expect("reserve a revision")
    else {
        panic!("no new revision")
    };
    store
        .blobs
        .put_if_absent(&books::keys::upload(&revision), manuscript)
        .await
        .expect("store the manuscript");
    let mut options = book.options().expect("options");
    options.convert.modified = None;
    options.cover_name = None;
    books::revise(
        &store.db,
        &store.queue,
        &book,
        &revision,
        name,
        options,
        None,
        pipeline::steps::first_step(&revision),
    )
    .await
    .expect("revise");
    revision
}

/// Gives book `id` the style `style` as the API does: its next revision, restyled from the
/// revision it shows (`steps::restyle_step`).
pub async fn submit_restyle(store: &Store, id: &BookId, style: &str) -> books::RevisionId {
    let book = books::get(&store.db, id)
        .await
        .expect("read")
        .expect("the book");
    let shown = book.current();
    let books::Reserved::New(revision) = books::reserve_revision(&store.db, id, None)
        .await
        .expect("reserve a revision")
    else {
        panic!("no new revision")
    };
    let mut options = book.options().expect("options");
    options
        .convert
        .metadata
        .insert("style".to_owned(), style.to_owned());
    options.convert.modified = None;
    // The book keeps its identifier, as the API gives it from the shown revision's.
    if options.convert.identifier.is_none() {
        let model = store
            .blobs
            .get(&books::keys::model(&shown))
            .await
            .expect("the shown revision's model");
        let shown_book: bindery::ebook::Book = serde_json::from_slice(&model).expect("a model");
        options.convert.identifier = Some(shown_book.metadata.identifier);
    }
    books::revise(
        &store.db,
        &store.queue,
        &book,
        &revision,
        &book.file_name,
        options,
        None,
        pipeline::steps::restyle_step(&revision, shown.number),
    )
    .await
    .expect("revise");
    revision
}

/// Polls until the book shows `revision`, ready.
pub async fn wait_shown(store: &Store, revision: &books::RevisionId, timeout: Duration) -> BookRow {
    super::eventually_async(
        &format!("book {} to show {}", revision.book, revision),
        timeout,
        async || {
            let book = books::get(&store.db, &revision.book)
                .await
                .expect("read")
                .expect("book exists");
            if book.revision == revision.number && book.status == books::BookStatus::Ready {
                return Ok(book);
            }
            Err(format!(
                "the book shows revision {} ({}); jobs: {:?}",
                book.revision,
                book.status,
                store.queue.workflow(&revision.workflow()).await.map(|w| w
                    .jobs
                    .iter()
                    .map(|j| format!("{} {} attempt {}", j.kind, j.state, j.attempt))
                    .collect::<Vec<_>>())
            ))
        },
    )
    .await
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
