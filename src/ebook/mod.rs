//! Writing books: chapter XHTML, the EPUB 3 package, the offline web reader, and covers.
//!
//! Everything here is pure and deterministic: the same [`Book`] gives the same bytes, so a
//! pipeline step that runs twice (after a crash) writes exactly what it wrote the first time.

pub mod cover;
pub mod epub;
pub mod metadata;
pub mod reader;
pub mod verify;
pub mod xhtml;

use serde::{Deserialize, Serialize};

use crate::document::Document;

pub use metadata::BookMetadata;

/// Everything a writer needs, except image bytes (passed beside it, by image id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Book {
    pub metadata: BookMetadata,
    pub document: Document,
    pub cover: Option<CoverInfo>,
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
