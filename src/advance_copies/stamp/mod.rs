//! A book's finished files stamped for one reader, without making the book again: the line
//! "Advance reader copy for NAME, not for sale" (the label `advance_copy`, in the book's
//! language) on the copyright page of the EPUB ([`epub`]), of the web reader ([`reader_page`])
//! and of the print edition ([`pdf`]), and the link's identifier in the EPUB's package
//! metadata.
//!
//! Each changes only what it must, and the same inputs give the same bytes:
//!
//! - the EPUB is the same zip with two entries written again (the copyright page and the
//!   package document), every other entry copied as it was stored, never inflated;
//! - the web reader changes in one file, [`READER_PAGE`] (its contents page, which ends with
//!   the copyright notice): one line is added, the paragraph the reader's service worker
//!   leaves out of that page's digest, so a personal copy still saves whole offline;
//! - the PDF is the original bytes followed by an incremental update: the line, set alone
//!   by Typst in the print edition's faces (`print::set_line`) and drawn as a form on the
//!   copyright page (the interior's destination `print::COPYRIGHT_DESTINATION`), with a new
//!   cross-reference section.
//!
//! The files must be Bindery's own: the ebooks made since their copyright section has its
//! `id`, the interior made by any version (one made before its copyright page was named has
//! it fourth, as the template has always laid out the front matter). Anything else is refused
//! with a [`StampError`] that says why, and so is a file already stamped.

mod epub;
mod page;
mod pdf;
#[cfg(test)]
mod tests;

use crate::ebook::BookMetadata;
use crate::ebook::metadata::bounds::MAX_NAME_CHARS;
use crate::ebook::xhtml::escape::{collapse, escaped, escaped_attr};
use crate::labels::{self, Key, Labels};
use crate::language::{self, DEFAULT_LANGUAGE, Direction};
use crate::print::PrintError;

/// The web reader's file that carries the stamp, by its path in the site: the server rewrites
/// this one with [`reader_page`] as it serves it to a link's visitor, and no other.
pub const READER_PAGE: &str = crate::ebook::reader::STAMPED_PAGE;

/// Longest link identifier, in characters: a `urn:uuid:` is 45.
pub const MAX_IDENTIFIER_CHARS: usize = 200;

/// Whom a copy is for, and in what words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The reader's name as it is printed: whitespace collapsed, control and direction
    /// characters left out.
    reader: String,
    /// The link's identifier (`urn:uuid:…`), which the EPUB's package metadata carries.
    identifier: String,
    /// The language of the line's words: the book's, or English when the labels have none
    /// of it.
    language: String,
    /// The line, with `{reader}` where the name goes.
    words: String,
}

/// Why a file could not be stamped.
#[derive(Debug, thiserror::Error)]
pub enum StampError {
    #[error("the reader's name is empty")]
    EmptyName,
    #[error("the reader's name is {chars} characters long; at most {MAX_NAME_CHARS} are printed")]
    NameTooLong { chars: usize },
    #[error(
        "the link's identifier {0:?} is not one: it must be 1 to {MAX_IDENTIFIER_CHARS} printable ASCII characters, with no spaces"
    )]
    BadIdentifier(String),
    #[error("the file is not an EPUB: {0}")]
    NotAnEpub(String),
    #[error("the EPUB has no {0}: it was not made by Bindery")]
    MissingEntry(&'static str),
    #[error("the EPUB's {0} is larger than any Bindery writes")]
    EntryTooLarge(&'static str),
    #[error("{0} is not UTF-8")]
    NotText(&'static str),
    #[error(
        "{0} has no copyright section (id=\"copyright\"): it was made before advance copies could be stamped, or not by Bindery"
    )]
    NoCopyrightSection(&'static str),
    #[error("{0} has no end of its metadata (</metadata>): it was not made by Bindery")]
    NoMetadata(&'static str),
    #[error("{0} is stamped already; stamp the book's own file")]
    AlreadyStamped(&'static str),
    #[error("the file is not a PDF Bindery can stamp: {0}")]
    NotAPdf(String),
    #[error("the PDF has no copyright page: no destination {0:?} and fewer than 4 pages")]
    NoCopyrightPage(&'static str),
    #[error("the line could not be set: {0}")]
    Typeset(#[from] PrintError),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl Stamp {
    /// A stamp for `reader` (a person's name, in any script), for the link `identifier`, in
    /// the words the labels have for `language` (a BCP 47 tag; English when they have none).
    pub fn new(reader: &str, identifier: &str, language: &str) -> Result<Stamp, StampError> {
        let language = language::normalize(language).unwrap_or_else(|| DEFAULT_LANGUAGE.into());
        let none = Default::default();
        Stamp::with_labels(reader, identifier, &language, Labels::new(&language, &none))
    }

    /// A stamp for `reader` and the link `identifier` in the words of the book `metadata`
    /// describes: its language's, or its own label (`labels.advance_copy`) when it has one.
    pub fn for_book(
        reader: &str,
        identifier: &str,
        metadata: &BookMetadata,
    ) -> Result<Stamp, StampError> {
        let language =
            language::normalize(&metadata.language).unwrap_or_else(|| DEFAULT_LANGUAGE.into());
        Stamp::with_labels(reader, identifier, &language, metadata.labels())
    }

    fn with_labels(
        reader: &str,
        identifier: &str,
        language: &str,
        labels: Labels<'_>,
    ) -> Result<Stamp, StampError> {
        let reader = name(reader)?;
        let identifier = link_identifier(identifier)?;
        let words = labels.get(Key::AdvanceCopy);
        // The words are the language's unless the table fell back to English for it (a book's
        // own label is in its language).
        let own = words != labels::english().get(Key::AdvanceCopy)
            || labels::table_for(language).is_some();
        Ok(Stamp {
            reader,
            identifier,
            language: if own {
                language.to_owned()
            } else {
                DEFAULT_LANGUAGE.to_owned()
            },
            words: words.to_owned(),
        })
    }

    /// The reader's name, as it is printed.
    pub fn reader(&self) -> &str {
        &self.reader
    }

    /// The link's identifier.
    pub fn identifier(&self) -> &str {
        &self.identifier
    }

    /// The line as plain text: "Advance reader copy for Jane Roe, not for sale."
    pub fn sentence(&self) -> String {
        labels::fill(&self.words, &[("reader", &self.reader)])
    }

    fn direction(&self) -> Direction {
        Direction::of(&self.language)
    }

    /// The line as one paragraph of markup on a line of its own, the name isolated (`<bdi>`)
    /// from the words around it, whichever way each runs; `xml` adds `xml:lang` for XHTML.
    fn paragraph(&self, xml: bool) -> String {
        let lang = escaped_attr(&self.language);
        let xml_lang = if xml {
            format!(" xml:lang=\"{lang}\"")
        } else {
            String::new()
        };
        let name = format!("<bdi>{}</bdi>", escaped(&self.reader));
        format!(
            "<p id=\"{id}\" lang=\"{lang}\"{xml_lang} dir=\"{dir}\">{line}</p>\n",
            id = crate::ebook::reader::STAMP_ID,
            dir = self.direction().as_str(),
            line = labels::fill(&escaped(&self.words), &[("reader", &name)]),
        )
    }

    /// The line as the print edition sets it: the name isolated (U+2068 … U+2069) only where
    /// it holds letters that run the other way from the words, so that the common case's
    /// text copies from the PDF as it reads.
    fn printed(&self) -> String {
        let against = |c: char| match self.direction() {
            Direction::LeftToRight => right_to_left(c),
            Direction::RightToLeft => c.is_alphabetic() && !right_to_left(c),
        };
        let name = if self.reader.chars().any(against) {
            format!("\u{2068}{}\u{2069}", self.reader)
        } else {
            self.reader.clone()
        };
        labels::fill(&self.words, &[("reader", &name)])
    }
}

/// The reader's name as it is printed, or why it cannot be. Direction controls are left out
/// with the control characters: a name that reordered the words around it could print as
/// someone else's.
fn name(reader: &str) -> Result<String, StampError> {
    let kept: String = reader
        .chars()
        .filter(|c| !matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
        .collect();
    let name = collapse(&kept);
    let chars = name.chars().count();
    if chars == 0 {
        Err(StampError::EmptyName)
    } else if chars > MAX_NAME_CHARS {
        Err(StampError::NameTooLong { chars })
    } else {
        Ok(name)
    }
}

/// The link's identifier, which Bindery makes (`urn:uuid:…`): printable ASCII, so that it is
/// the same in every file and every tool that reads it back.
fn link_identifier(identifier: &str) -> Result<String, StampError> {
    let plain = identifier.bytes().all(|b| b.is_ascii_graphic());
    if identifier.is_empty() || identifier.len() > MAX_IDENTIFIER_CHARS || !plain {
        return Err(StampError::BadIdentifier(
            identifier.chars().take(MAX_IDENTIFIER_CHARS).collect(),
        ));
    }
    Ok(identifier.to_owned())
}

/// Whether `c` is a letter of a script written right to left (Hebrew, Arabic, Syriac, Thaana,
/// N'Ko and their neighbours, and their presentation forms).
fn right_to_left(c: char) -> bool {
    matches!(
        u32::from(c),
        0x0590..=0x08FF | 0xFB1D..=0xFDFF | 0xFE70..=0xFEFF | 0x10800..=0x10FFF | 0x1E800..=0x1EFFF
    ) && c.is_alphabetic()
}

/// `original`, an EPUB Bindery made, for the reader of `stamp`: its copyright page ends with
/// the line, and its package metadata holds the link's identifier (a second `dc:identifier`,
/// `id="advance-copy"`). Every other entry is copied as it was stored.
pub fn epub(original: &[u8], stamp: &Stamp) -> Result<Vec<u8>, StampError> {
    epub::stamp(original, stamp)
}

/// `original`, the interior PDF Bindery made, for the reader of `stamp`: the line printed at
/// the top of its copyright page, by an incremental update that keeps every original byte.
pub fn pdf(original: &[u8], stamp: &Stamp) -> Result<Vec<u8>, StampError> {
    pdf::stamp(original, stamp)
}

/// `original`, the web reader's [`READER_PAGE`] as Bindery made it, for the reader of `stamp`:
/// its copyright notice ends with the line.
pub fn reader_page(original: &[u8], stamp: &Stamp) -> Result<Vec<u8>, StampError> {
    let text = std::str::from_utf8(original).map_err(|_| StampError::NotText(READER_PAGE))?;
    Ok(page::stamp(text, &stamp.paragraph(false), READER_PAGE)?.into_bytes())
}
