//! Packaging the ebooks in a child process of its own (see [`crate::pipeline::child`]), for the
//! `package_epub` and `package_reader` steps.
//!
//! The EPUB and the web reader are each made from the whole book at once: the model, every
//! rendered chapter, every image, and the archive or files they become. That is the book's size
//! several times over, and in the worker itself it was unbounded: one upload whose labels
//! repeated a long title thousands of times made two 180 MB pages, and an allocation that
//! failed took the worker, and the whole service with it, three times over. So each packager
//! runs as `bindery package-book`, limited like reading and printing: a book too big to package
//! fails alone (`too_large`), and the worker holds only the answer. (The stores' covers are
//! drawn in the worker: a prepared cover is bounded by constants, see `package_covers`.)
//!
//! The child reads the stored model (with the print edition's pages marked, as the chapters
//! were rendered from it), the rendered chapters and the images, packages them, and stores
//! the result; it answers with what the step reports ([`Packaged`]).

use std::process::ExitCode;

use anyhow::Context;
use futures_util::{StreamExt, TryStreamExt, stream};
use serde::{Deserialize, Serialize};

use super::Cx;
use crate::books::{BookId, RevisionId, keys};
use crate::config::{Config, Limits};
use crate::convert::{self, Resources};
use crate::ebook::Book;
use crate::ebook::xhtml::Target;
use crate::manuscript::InputError;
use crate::pipeline::child::{Child, Ran};
use crate::storage::BlobStore;

/// The hidden subcommand the worker runs.
pub const SUBCOMMAND: &str = "package-book";

const CHILD: Child = Child {
    subcommand: SUBCOMMAND,
    work: "packaging the ebooks",
};

/// Blob reads or writes the child keeps in flight at once: a long book's packaging would
/// otherwise wait out a round trip to the blob store per file.
const BLOB_REQUESTS: usize = 8;

/// What the child makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Output {
    /// The EPUB.
    Epub,
    /// The web reader's files.
    Reader,
}

/// What the child is asked to make.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    #[serde(flatten)]
    pub revision: RevisionId,
    pub output: Output,
}

/// What the child answers on stdout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Packaged {
    /// The EPUB is stored: its size, and its size unpacked.
    Epub { bytes: u64, unpacked: u64 },
    /// The web reader's files are stored.
    Reader { files: usize, bytes: u64 },
    /// The book is too big to package; `code` and `message` are the API's.
    Refused { code: String, message: String },
}

impl Packaged {
    fn refused(error: &InputError) -> Packaged {
        Packaged::Refused {
            code: error.code().to_owned(),
            message: error.to_string(),
        }
    }
}

/// Runs the child and waits for it. `Err` is a failure worth retrying; a limit that stopped
/// it is a `Refused`.
pub async fn package_in_child(config: &Config, request: &Request) -> anyhow::Result<Packaged> {
    Ok(
        match CHILD.run(config, &request.revision.book, request).await? {
            Ran::Answered(packaged) => packaged,
            Ran::Stopped(error) => Packaged::refused(&error),
        },
    )
}

/// Makes `output` of `revision` in its limited child.
pub(super) async fn package(
    cx: &Cx,
    revision: &RevisionId,
    output: Output,
) -> anyhow::Result<Packaged> {
    let request = Request {
        revision: revision.clone(),
        output,
    };
    package_in_child(&cx.app().config, &request).await
}

/// The child: makes what its [`Request`] names and stores it.
pub fn child_main(config: &Config) -> ExitCode {
    CHILD.main(config, |request: Request, blobs| async move {
        package_and_store(&blobs, &config.limits, &request).await
    })
}

async fn package_and_store(
    blobs: &BlobStore,
    limits: &Limits,
    request: &Request,
) -> anyhow::Result<Packaged> {
    let id = &request.revision;
    let (model, pages) =
        crate::services::read_model(blobs, &keys::model(id), &keys::pagination(id)).await?;
    let planned = crate::services::plan_model(&model, pages.as_deref())?;
    drop((model, pages));
    let book = &planned.book;
    match request.output {
        Output::Epub => {
            let chapters = load_chapters(blobs, id, book, Target::Epub).await?;
            let resources = load_resources(blobs, id).await?;
            let epub = convert::package_epub(book, &chapters, &resources)?;
            drop((chapters, resources));
            let unpacked = unpacked_size(&epub)?;
            if unpacked > limits.max_inflated_bytes {
                return Ok(Packaged::refused(&InputError::PackageTooLarge {
                    what: "EPUB, unpacked,",
                    size: unpacked,
                    limit: limits.max_inflated_bytes,
                }));
            }
            let bytes = epub.len() as u64;
            blobs.put_if_absent(&keys::epub(id), epub).await?;
            Ok(Packaged::Epub { bytes, unpacked })
        }
        Output::Reader => {
            let chapters = load_chapters(blobs, id, book, Target::Web).await?;
            let resources = load_resources(blobs, id).await?;
            let links = reader_links(&id.book);
            let files = convert::package_reader(book, &chapters, &resources, &links)?;
            drop((chapters, resources));
            let count = files.len();
            let bytes = files.iter().map(|(_, b)| b.len() as u64).sum();
            if bytes > limits.max_inflated_bytes {
                return Ok(Packaged::refused(&InputError::PackageTooLarge {
                    what: "web reader",
                    size: bytes,
                    limit: limits.max_inflated_bytes,
                }));
            }
            stream::iter(files)
                .map(|(path, bytes)| {
                    let key = keys::reader(id, &path);
                    async move { blobs.put_if_absent(&key, bytes).await }
                })
                .buffer_unordered(BLOB_REQUESTS)
                .try_collect::<Vec<_>>()
                .await?;
            Ok(Packaged::Reader {
                files: count,
                bytes,
            })
        }
    }
}

/// Where a book's web reader links out in the service: the app's own addresses of the book's
/// page and its EPUB (`web::pages`, `web::files`).
pub fn reader_links(book: &BookId) -> crate::ebook::reader::Links {
    crate::ebook::reader::Links {
        book_page: Some(format!("/books/{book}")),
        epub: Some(format!("/books/{book}/epub")),
    }
}

/// What an EPUB holds unpacked: the sizes its archive's directory gives for its entries.
fn unpacked_size(epub: &[u8]) -> anyhow::Result<u64> {
    let archive =
        zip::ZipArchive::new(std::io::Cursor::new(epub)).context("reading the EPUB made")?;
    let size = archive
        .decompressed_size()
        .context("the EPUB made does not say its entries' sizes")?;
    Ok(u64::try_from(size).unwrap_or(u64::MAX))
}

/// Every rendered chapter of `book` for `target`, in order.
pub async fn load_chapters(
    blobs: &BlobStore,
    revision: &RevisionId,
    book: &Book,
    target: Target,
) -> anyhow::Result<Vec<String>> {
    stream::iter(0..book.document.chapters.len())
        .map(|i| async move {
            let bytes = blobs.get(&keys::chapter(revision, i, target)).await?;
            String::from_utf8(bytes.to_vec()).context("a rendered chapter is not UTF-8")
        })
        .buffered(BLOB_REQUESTS)
        .try_collect()
        .await
}

/// Every image the book stored, by its id.
pub async fn load_resources(blobs: &BlobStore, revision: &RevisionId) -> anyhow::Result<Resources> {
    let prefix = keys::resources_prefix(revision);
    let prefix = prefix.as_str();
    stream::iter(blobs.list(prefix).await?)
        .map(|key| async move {
            let bytes = blobs.get(&key).await?;
            let id = key.trim_start_matches(prefix).to_owned();
            anyhow::Ok((id, bytes.to_vec()))
        })
        .buffer_unordered(BLOB_REQUESTS)
        .try_collect()
        .await
}
