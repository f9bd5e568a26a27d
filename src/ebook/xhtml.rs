//! One chapter as markup: the body of an EPUB XHTML file or of a web reader page.

use super::Book;
use crate::report::Warning;

/// Where the markup goes; internal links and file names differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Epub,
    Web,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RenderedChapter {
    /// A well-formed XHTML fragment (the chapter's `<section>` and its notes), valid in both
    /// XHTML and HTML5.
    pub body: String,
    pub warnings: Vec<Warning>,
}

/// File name of chapter `index` (0-based) in the EPUB (`chapter-001.xhtml`) or the reader.
pub fn chapter_file_name(index: usize, target: Target) -> String {
    match target {
        Target::Epub => format!("chapter-{:03}.xhtml", index + 1),
        Target::Web => format!("chapter-{:03}.html", index + 1),
    }
}

/// Renders chapter `index` of `book`.
pub fn render_chapter(_book: &Book, _index: usize, _target: Target) -> RenderedChapter {
    RenderedChapter::default()
}
