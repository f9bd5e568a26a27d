//! Where each book's blobs live, and each tenant's catalog. Every key is a pure function of the
//! book id (and chapter or file) or the tenant, so a job that runs twice writes to the same
//! place: nothing is orphaned or doubled.

use super::id::{BookId, Tenant};
use crate::ebook::xhtml::{Target, chapter_file_name};

pub fn book_prefix(book: &BookId) -> String {
    format!("books/{book}/")
}

/// The manuscript exactly as uploaded.
pub fn upload(book: &BookId) -> String {
    format!("books/{book}/upload/manuscript")
}

/// The cover exactly as uploaded.
pub fn cover_upload(book: &BookId) -> String {
    format!("books/{book}/upload/cover")
}

/// A text manuscript decoded to UTF-8 by `ingest`.
pub fn text(book: &BookId) -> String {
    format!("books/{book}/work/manuscript.txt")
}

/// The document model with final metadata (`ebook::Book`, JSON), written by `parse`.
pub fn model(book: &BookId) -> String {
    format!("books/{book}/work/book.json")
}

/// The report as `parse` left it (warnings, statistics), JSON.
pub fn parse_report(book: &BookId) -> String {
    format!("books/{book}/work/report.json")
}

pub fn resources_prefix(book: &BookId) -> String {
    format!("books/{book}/work/resources/")
}

/// An image (or the cover) of the book, by its id.
pub fn resource(book: &BookId, id: &str) -> String {
    format!("books/{book}/work/resources/{id}")
}

/// A rendered chapter body.
pub fn chapter(book: &BookId, index: usize, target: Target) -> String {
    format!(
        "books/{book}/work/chapters/{}",
        chapter_file_name(index, target)
    )
}

/// The cover, small, for the pages' lists (JPEG, or the generated SVG), written by `publish`.
pub fn thumbnail(book: &BookId) -> String {
    format!("books/{book}/thumbnail")
}

/// The cover as ebook stores ask for it (a 1600×2560 RGB JPEG), written by `publish`.
pub fn store_cover(book: &BookId) -> String {
    format!("books/{book}/store-cover.jpg")
}

/// The finished EPUB.
pub fn epub(book: &BookId) -> String {
    format!("books/{book}/book.epub")
}

/// The print edition's interior, when typesetting it succeeded.
pub fn pdf(book: &BookId) -> String {
    format!("books/{book}/print/book.pdf")
}

/// The print edition's cover: back, spine and front on one sheet.
pub fn print_cover(book: &BookId) -> String {
    format!("books/{book}/print/cover.pdf")
}

/// What the print step found (`pipeline::steps::print_book::Printed`, JSON): the print edition's
/// size, or why it could not be made, and its warnings.
pub fn print_report(book: &BookId) -> String {
    format!("books/{book}/print/report.json")
}

/// Where the print edition's pages begin (`ebook::Pagination`, JSON), which the ebooks mark.
pub fn pagination(book: &BookId) -> String {
    format!("books/{book}/print/pagination.json")
}

/// What the print edition is typeset from while it is being made, in pieces
/// (`print::pieces`): removed once the interior is assembled, or the print edition given up.
pub fn print_work_prefix(book: &BookId) -> String {
    format!("books/{book}/print/work/")
}

/// How the book is cut into pieces (`print::Plan`, JSON).
pub fn print_plan(book: &BookId) -> String {
    format!("{}plan.json", print_work_prefix(book))
}

/// The book's pages from its pieces' measures (`print::Layout`, JSON).
pub fn print_layout(book: &BookId) -> String {
    format!("{}layout.json", print_work_prefix(book))
}

/// Piece `k` of the interior, set for print: its seed page, then its own.
pub fn print_piece(book: &BookId, k: usize) -> String {
    format!("{}piece-{k:04}.pdf", print_work_prefix(book))
}

pub fn reader_prefix(book: &BookId) -> String {
    format!("books/{book}/reader/")
}

/// A file of the web reader (`index.html`, `chapter-001.html`, `images/…`).
pub fn reader(book: &BookId, path: &str) -> String {
    format!("books/{book}/reader/{path}")
}

/// What the catalog lists about the book (`catalog::Entry`, JSON), written by `publish`. Under
/// the book's prefix, so deleting the book deletes it.
pub fn catalog_entry(book: &BookId) -> String {
    format!("books/{book}/catalog-entry.json")
}

// A tenant's catalog, rebuilt by `catalog.refresh`. Tenant names are `[A-Za-z0-9._-]`, so they
// are safe path segments (the blob store escapes a bare `.` or `..`).

pub const CATALOGS_PREFIX: &str = "catalogs/";

/// The tenant's OPDS acquisition feed (Atom).
pub fn catalog_opds(tenant: &Tenant) -> String {
    format!("catalogs/{tenant}/opds.xml")
}

/// The tenant's JSON catalog. Written after the feed, so it marks a complete refresh.
pub fn catalog_json(tenant: &Tenant) -> String {
    format!("catalogs/{tenant}/catalog.json")
}
