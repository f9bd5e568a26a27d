//! Bounds on what a manuscript may make Bindery do. Every one is a configuration variable
//! (see `config.rs`), so an operator can move it; the defaults fit any real book.

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
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_manuscript_bytes: 100 * 1024 * 1024,
            max_inflated_bytes: 512 * 1024 * 1024,
            max_zip_entries: 10_000,
            max_image_pixels: 50_000_000,
        }
    }
}
