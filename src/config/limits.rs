//! Bounds on what a manuscript may make Bindery do. Every one is a configuration variable
//! (`MAX_MANUSCRIPT_SIZE` and the others in `variables.rs`), so an operator can move it; the
//! defaults fit any real book. The manuscript readers hold a book to them (`manuscript::Meter`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Largest manuscript accepted, in bytes, as uploaded.
    pub max_manuscript_bytes: u64,
    /// Largest total a DOCX may inflate to, and any one entry, checked against both the
    /// declared and the actual inflated size.
    pub max_inflated_bytes: u64,
    /// Most entries a DOCX archive may have.
    pub max_zip_entries: usize,
    /// Most pixels (width × height) any image may decode to.
    pub max_image_pixels: u64,
    /// Most bytes any image may decode to (its pixels at their depth): half of
    /// `WORKER_MEMORY_BUDGET`, so that whatever decodes it, in a child held to that budget,
    /// has room for the rest of its work.
    pub max_image_bytes: u64,
    /// Most words a book may have, counted while the manuscript is read.
    pub max_words: u64,
    /// Most elements (paragraphs, text runs, formatting spans, breaks…) the model may hold,
    /// counted while reading: what bounds memory when the words are few and the markup many.
    pub max_elements: u64,
    /// Most words in one chapter: one chapter is one file in the EPUB and one page of the
    /// web reader, which reading systems load whole.
    pub max_chapter_words: u64,
    /// Most chapters a book may have: each is a job, and a file of every edition.
    pub max_chapters: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_manuscript_bytes: 100 * 1024 * 1024,
            max_inflated_bytes: 512 * 1024 * 1024,
            max_zip_entries: 10_000,
            max_image_pixels: 50_000_000,
            max_image_bytes: 160 * 1024 * 1024,
            max_words: 3_000_000,
            max_elements: 2_000_000,
            max_chapter_words: 500_000,
            max_chapters: 2_000,
        }
    }
}
