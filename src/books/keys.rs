//! Where each book's blobs live, and each tenant's catalog. Every key is a pure function of the
//! revision (and chapter or file) or the tenant, so a job that runs twice writes to the same
//! place: nothing is orphaned or doubled.
//!
//! A revision's files are under its own prefix ([`revision_prefix`]): revision 1's are where a
//! book's files always were, `books/{id}/`, and a later one's under
//! `books/{id}/revisions/{n}/`. Every file of a book is under [`book_prefix`].

use super::id::{BookId, RevisionId, Tenant};
use crate::ebook::xhtml::{Target, chapter_file_name};
use crate::paperback::Edition;

/// Every file of the book, of every revision.
pub fn book_prefix(book: &BookId) -> String {
    format!("books/{book}/")
}

/// Where the revisions after the first keep their files.
pub fn later_revisions_prefix(book: &BookId) -> String {
    format!("books/{book}/revisions/")
}

/// The files of one revision (revision 1's without the later revisions' under it).
pub fn revision_prefix(revision: &RevisionId) -> String {
    match revision.number {
        1 => book_prefix(&revision.book),
        n => format!("{}{n}/", later_revisions_prefix(&revision.book)),
    }
}

/// The manuscript exactly as uploaded.
pub fn upload(revision: &RevisionId) -> String {
    format!("{}upload/manuscript", revision_prefix(revision))
}

/// The cover exactly as uploaded.
pub fn cover_upload(revision: &RevisionId) -> String {
    format!("{}upload/cover", revision_prefix(revision))
}

/// A text manuscript decoded to UTF-8 by `ingest`.
pub fn text(revision: &RevisionId) -> String {
    format!("{}work/manuscript.txt", revision_prefix(revision))
}

/// The document model with final metadata (`ebook::Book`, JSON), written by `parse`.
pub fn model(revision: &RevisionId) -> String {
    format!("{}work/book.json", revision_prefix(revision))
}

/// The report as `parse` left it (warnings, statistics), JSON.
pub fn parse_report(revision: &RevisionId) -> String {
    format!("{}work/report.json", revision_prefix(revision))
}

pub fn resources_prefix(revision: &RevisionId) -> String {
    format!("{}work/resources/", revision_prefix(revision))
}

/// An image (or the cover) of the book, by its id.
pub fn resource(revision: &RevisionId, id: &str) -> String {
    format!("{}work/resources/{id}", revision_prefix(revision))
}

/// A rendered chapter body.
pub fn chapter(revision: &RevisionId, index: usize, target: Target) -> String {
    format!(
        "{}work/chapters/{}",
        revision_prefix(revision),
        chapter_file_name(index, target)
    )
}

/// The cover, small, for the pages' lists (JPEG, or the generated SVG), written by `publish`.
pub fn thumbnail(revision: &RevisionId) -> String {
    format!("{}thumbnail", revision_prefix(revision))
}

/// The cover as ebook stores ask for it (a 1600×2560 RGB JPEG), written by `publish`.
pub fn store_cover(revision: &RevisionId) -> String {
    format!("{}store-cover.jpg", revision_prefix(revision))
}

/// The finished EPUB.
pub fn epub(revision: &RevisionId) -> String {
    format!("{}book.epub", revision_prefix(revision))
}

/// Where a print edition's files are: `print/` for the paperback (where the one print edition
/// was before editions), `print/hardcover/` and `print/large_print/` for the others.
fn edition_prefix(revision: &RevisionId, edition: Edition) -> String {
    match edition {
        Edition::Paperback => format!("{}print/", revision_prefix(revision)),
        other => format!("{}print/{}/", revision_prefix(revision), other.name()),
    }
}

/// A print edition's interior, when typesetting it succeeded.
pub fn pdf(revision: &RevisionId, edition: Edition) -> String {
    format!("{}book.pdf", edition_prefix(revision, edition))
}

/// A print edition's cover: back, spine and front on one sheet.
pub fn print_cover(revision: &RevisionId, edition: Edition) -> String {
    format!("{}cover.pdf", edition_prefix(revision, edition))
}

/// What the print steps found of an edition (`pipeline::steps::print_book::Printed`, JSON):
/// its size, or why it could not be made, its warnings and its printer's check.
pub fn print_report(revision: &RevisionId, edition: Edition) -> String {
    format!("{}report.json", edition_prefix(revision, edition))
}

/// Where the reference edition's pages begin (`ebook::Pagination`, JSON), which the ebooks
/// mark: one for the book, whichever edition it is.
pub fn pagination(revision: &RevisionId) -> String {
    format!("{}print/pagination.json", revision_prefix(revision))
}

/// What an edition is typeset from while it is being made, in pieces (`print::pieces`):
/// removed once its interior is assembled, or the edition given up.
pub fn print_work_prefix(revision: &RevisionId, edition: Edition) -> String {
    format!("{}work/", edition_prefix(revision, edition))
}

/// How the book is cut into pieces (`print::Plan`, JSON).
pub fn print_plan(revision: &RevisionId, edition: Edition) -> String {
    format!("{}plan.json", print_work_prefix(revision, edition))
}

/// The book's pages from its pieces' measures (`print::Layout`, JSON).
pub fn print_layout(revision: &RevisionId, edition: Edition) -> String {
    format!("{}layout.json", print_work_prefix(revision, edition))
}

/// Piece `k` of the interior, set for print: its seed page, then its own.
pub fn print_piece(revision: &RevisionId, edition: Edition, k: usize) -> String {
    format!("{}piece-{k:04}.pdf", print_work_prefix(revision, edition))
}

/// A file of revision `revision`'s preview in a look (`pipeline::preview`): `title.png`,
/// `opening.png`, `scene.png`, `reader.html`, `reader.css`, a house style's `fonts/` and
/// `ornaments/`, and `preview.json` (what it holds), written last. Under the revision's
/// files, so they go with them.
pub fn preview(revision: &RevisionId, look: &crate::style::preview::Look, file: &str) -> String {
    format!("{}previews/{look}/{file}", revision_prefix(revision))
}

pub fn reader_prefix(revision: &RevisionId) -> String {
    format!("{}reader/", revision_prefix(revision))
}

/// A file of the web reader (`index.html`, `chapter-001.html`, `images/…`).
pub fn reader(revision: &RevisionId, path: &str) -> String {
    format!("{}reader/{path}", revision_prefix(revision))
}

/// What the catalog lists about the book (`catalog::Entry`, JSON), written by `publish`. Under
/// the book's prefix, so deleting the book deletes it.
pub fn catalog_entry(revision: &RevisionId) -> String {
    format!("{}catalog-entry.json", revision_prefix(revision))
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
