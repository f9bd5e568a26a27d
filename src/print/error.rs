//! Why a print edition could not be made. Each reason has a stable code for the report and a
//! message for the author; none of them stops the ebook.

use super::trim::MAX_PAGES;

#[derive(Debug, thiserror::Error)]
pub enum PrintError {
    /// Longer than any print-on-demand service binds.
    #[error(
        "the print edition would have {pages} pages at {trim}, more than the {MAX_PAGES} print-on-demand services bind; choose a larger trim (6x9 or royal hold the most) or publish the book in volumes"
    )]
    TooLong { pages: u32, trim: super::Trim },
    /// So long that laying it out would be wasted: no trim could hold it.
    #[error(
        "the book has {words} words, more than any paperback of {MAX_PAGES} pages holds (about {limit} words at most); publish it in volumes"
    )]
    TooManyWords { words: u64, limit: u64 },
    /// Typst refused the generated source: Bindery's bug, or an image it cannot read.
    #[error("typesetting failed: {0}")]
    Typeset(String),
    /// The PDF could not be written.
    #[error("writing the PDF failed: {0}")]
    Pdf(String),
}

impl PrintError {
    /// Stable, for the report and the API.
    pub fn code(&self) -> &'static str {
        match self {
            PrintError::TooLong { .. } => "print_too_long",
            PrintError::TooManyWords { .. } => "print_too_many_words",
            PrintError::Typeset(_) => "print_typeset_failed",
            PrintError::Pdf(_) => "print_pdf_failed",
        }
    }
}
