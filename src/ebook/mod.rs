//! Writing books: chapter XHTML, the EPUB 3 package, the offline web reader, and covers.
//!
//! Everything here is pure and deterministic: the same [`Book`] gives the same bytes, so a
//! pipeline step that runs twice (after a crash) writes exactly what it wrote the first time.

pub mod changes;
pub mod cover;
pub mod epub;
pub mod metadata;
pub mod reader;
pub mod verify;
pub mod xhtml;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::document::Document;
use crate::document::positions::{PageStart, mark_pages};
use crate::paperback::Edition;

pub use metadata::BookMetadata;

/// Everything a writer needs, except image bytes (passed beside it, by image id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Book {
    pub metadata: BookMetadata,
    pub document: Document,
    pub cover: Option<CoverInfo>,
    /// The print edition whose pages the document marks ([`Book::mark_print_pages`]): the
    /// EPUB names it as the source of its page list. `None` for a book without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub print: Option<PrintEdition>,
    /// How it looks, in every edition: the style its metadata names (`metadata.style`),
    /// read once when the book is assembled. A book stored before styles has the default.
    #[serde(default)]
    pub style: crate::style::Style,
    /// The house style's files (fonts, ornament images) the book carries among its resources
    /// (`style::house::resource_id`), by name: none for a built-in style.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub style_files: Vec<String>,
}

impl Book {
    /// The typefaces the book may set: the bundled ones and its house style's own, from
    /// `resources` (which must hold the style's files).
    pub fn families(&self, resources: &BTreeMap<String, Vec<u8>>) -> crate::style::fonts::Families {
        crate::style::house::families(resources)
    }
}

/// The print edition, as the ebook names it where it offers the printed pages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrintEdition {
    /// Its trim, as a reader would name it (`6 × 9 in`, `A5`).
    pub trim: String,
    /// The print edition's own ISBN, when it has one (a paperback's ISBN is not the ebook's).
    pub isbn: Option<String>,
    /// Which edition it is (`hardcover`), when the book is printed in more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edition: Option<String>,
}

/// Where a print edition's pages begin, and which edition it is: what the print step stores
/// for the ebooks to mark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pagination {
    pub edition: PrintEdition,
    pub pages: Vec<PageStart>,
}

impl PrintEdition {
    /// `metadata`'s print edition `edition`: its trim, its own ISBN, and its name when the
    /// book has more than one.
    pub fn of(metadata: &BookMetadata, edition: Edition) -> PrintEdition {
        let trim = metadata.trim_of(edition);
        let isbn = match edition {
            Edition::Paperback => metadata.print_isbn.clone(),
            _ => metadata.isbn_of(edition).cloned(),
        };
        PrintEdition {
            trim: trim.label().to_owned(),
            isbn,
            edition: (metadata.editions.0.len() > 1).then(|| edition.label().to_owned()),
        }
    }
}

impl Book {
    /// Marks where each page of `edition` begins ([`mark_pages`]) and names the edition, so
    /// that the EPUB gets its page list and `pageBreakSource`, and the web reader its page
    /// numbers. Without pages the book stays exactly as it was: no markers, no edition.
    ///
    /// The markers live in the document, so the chapters must be rendered after this.
    pub fn mark_print_pages(&mut self, edition: PrintEdition, pages: &[PageStart]) {
        if pages.is_empty() || self.document.chapters.is_empty() {
            return;
        }
        mark_pages(&mut self.document, pages);
        self.print = Some(edition);
    }
}

/// Whether the book sets anything bold: strong text, a table's head.
pub fn sets_bold(document: &Document) -> bool {
    use crate::document::Inline;
    use xhtml::ids::{Node, visit_blocks};
    let mut bold = false;
    let mut look = |node: Node<'_>| match node {
        Node::Inline(Inline::Strong(_)) => bold = true,
        Node::Block(crate::document::Block::Table(table)) => {
            bold |= !table.head.is_empty()
                || table
                    .body
                    .iter()
                    .any(|row| row.cells.iter().any(|c| c.header));
        }
        _ => {}
    };
    for chapter in &document.chapters {
        visit_blocks(&chapter.blocks, &mut look);
    }
    for note in &document.notes {
        visit_blocks(&note.blocks, &mut look);
    }
    bold
}

/// The cover image's description; its bytes are stored under [`CoverInfo::file_name`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoverInfo {
    /// `cover.jpg`, `cover.png` or `cover.svg` (generated).
    pub file_name: String,
    pub media_type: String,
    pub width: u32,
    pub height: u32,
    /// Made by Bindery from the title and author, rather than uploaded.
    pub generated: bool,
}
