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
    /// The manuscript asked for a trim, paper or bleed Bindery does not know (the sentence
    /// says which, and what to do).
    #[error("{0}")]
    Settings(String),
    /// Letters of the book that no font here draws: the sentence names their script, the
    /// fonts Bindery prints it in, and what the operator can do.
    #[error("{0}")]
    MissingScript(String),
    /// Typst refused the generated source: Bindery's bug, or an image it cannot read. What
    /// Typst said (with the stretch of generated source it points at) is for the operator's
    /// log and `bindery convert`, never the author's report: [`PrintError::detail`].
    #[error(
        "the print edition could not be typeset; this is a fault in Bindery, not in the manuscript, and the operator's log says what went wrong"
    )]
    Typeset(String),
    /// The PDF could not be written.
    #[error(
        "the print edition's PDF could not be written; this is a fault in Bindery, not in the manuscript, and the operator's log says what went wrong"
    )]
    Pdf(String),
}

impl PrintError {
    /// What the typesetter or the PDF writer said, for the operator: Typst's messages and the
    /// generated source they point at. `None` for a refusal the author's message says whole,
    /// which is the book's to change (`bindery convert` exits 65 for it).
    pub fn detail(&self) -> Option<&str> {
        match self {
            PrintError::Typeset(detail) | PrintError::Pdf(detail) => Some(detail),
            PrintError::TooLong { .. }
            | PrintError::TooManyWords { .. }
            | PrintError::Settings(_)
            | PrintError::MissingScript(_) => None,
        }
    }

    /// Stable, for the report and the API.
    pub fn code(&self) -> &'static str {
        match self {
            PrintError::TooLong { .. } => "print_too_long",
            PrintError::TooManyWords { .. } => "print_too_many_words",
            PrintError::Settings(_) => "print_settings_invalid",
            PrintError::MissingScript(_) => "print_missing_script",
            PrintError::Typeset(_) => "print_typeset_failed",
            PrintError::Pdf(_) => "print_pdf_failed",
        }
    }
}
