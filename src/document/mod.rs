//! The document model: what every manuscript reader produces and every writer consumes.
//!
//! A [`Document`] is metadata plus chapters of semantic blocks. It says *what* the text is
//! (a heading, a quotation, a footnote reference, a scene break), never how a word processor
//! drew it. It is serialisable because the pipeline stores it as a blob between steps; the
//! bytes of images travel beside it (see [`Parsed`]), never inside it.
//!
//! Identifiers (`Heading::id`, `Inline::Anchor`, link targets, note ids) are whatever the
//! source used; writers turn them into valid, unique XML ids.

pub mod chapters;
pub mod keys;
pub mod numbers;
pub mod positions;
mod text;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use text::{Words, inline_text, plain_text, push_inlines, word_count, words_of};

/// A whole book.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Document {
    pub metadata: Metadata,
    pub chapters: Vec<Chapter>,
    /// Footnotes and endnotes, referenced by [`Inline::NoteRef`].
    pub notes: Vec<Note>,
    /// Images referenced by [`Block::Figure`] and [`Inline::Image`]; their bytes are in
    /// [`Parsed::resources`] under the same id.
    pub images: Vec<Image>,
}

/// What the manuscript says about itself. Every field is optional here; the pipeline fills
/// the gaps (title from the file name, a default language, a derived identifier).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    pub title: Option<String>,
    pub subtitle: Option<String>,
    pub authors: Vec<String>,
    /// As found; validated as BCP 47 later.
    pub language: Option<String>,
    /// ISBN or another identifier, as found.
    pub identifier: Option<String>,
    pub publisher: Option<String>,
    /// Publication date, as found (`2024`, `2024-05-01`, …).
    pub date: Option<String>,
    pub description: Option<String>,
    pub subjects: Vec<String>,
    pub series: Option<String>,
    pub series_number: Option<String>,
    pub rights: Option<String>,
    /// The back cover's text.
    #[serde(default)]
    pub blurb: Option<String>,
    /// The print edition's trim size (`6x9`), paper (`cream`), bleed (`yes`) and own ISBN, as
    /// found.
    #[serde(default)]
    pub trim: Option<String>,
    #[serde(default)]
    pub paper: Option<String>,
    #[serde(default)]
    pub bleed: Option<String>,
    #[serde(default)]
    pub print_isbn: Option<String>,
    /// The price for the print cover's barcode (`USD 14.99`), as found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<String>,
    /// The printer whose rules the print edition is checked against (`kdp`), as found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub printer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub editions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardcover_isbn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardcover_trim: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_print_isbn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_print_trim: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_print_size: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_edition: Option<String>,
    /// The style the book asks for (`classic`), as found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<String>,
    /// Replacements for Bindery's own words (`labels.contents: Inhalt`), by key, as found;
    /// checked against the table of labels later.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub labels: std::collections::BTreeMap<String, String>,
}

/// One unit of reading: one XHTML file in the EPUB, one page in the web reader.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Chapter {
    /// Plain-text title for navigation; empty when the source gave none (writers then label it).
    pub title: String,
    pub division: Division,
    /// The chapter's content, its own heading (if any) first.
    pub blocks: Vec<Block>,
}

/// Where a chapter sits in the book, for `epub:type`, ARIA roles and landmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Division {
    // Front matter.
    Dedication,
    Epigraph,
    Foreword,
    Preface,
    Introduction,
    Prologue,
    // Body.
    #[default]
    Chapter,
    Part,
    // Back matter.
    Epilogue,
    Afterword,
    Acknowledgments,
    Appendix,
    Glossary,
    Bibliography,
    Endnotes,
}

impl Division {
    /// Recognises a division from a heading's text (`Prologue`, `Acknowledgements`, `Part Two`…).
    pub fn from_title(title: &str) -> Division {
        let t = title.trim().trim_end_matches(['.', ':']).to_lowercase();
        let first = t.split_whitespace().next().unwrap_or("");
        match t.as_str() {
            "dedication" => Division::Dedication,
            "epigraph" => Division::Epigraph,
            "foreword" | "forward" => Division::Foreword,
            "preface" => Division::Preface,
            "introduction" => Division::Introduction,
            "prologue" => Division::Prologue,
            "epilogue" => Division::Epilogue,
            "afterword" => Division::Afterword,
            "acknowledgments" | "acknowledgements" => Division::Acknowledgments,
            "glossary" => Division::Glossary,
            "bibliography" | "references" | "works cited" => Division::Bibliography,
            "notes" | "endnotes" => Division::Endnotes,
            _ if first == "appendix" => Division::Appendix,
            _ if first == "part" && t.split_whitespace().count() <= 4 => Division::Part,
            _ => Division::Chapter,
        }
    }

    pub fn is_front_matter(self) -> bool {
        matches!(
            self,
            Division::Dedication
                | Division::Epigraph
                | Division::Foreword
                | Division::Preface
                | Division::Introduction
                | Division::Prologue
        )
    }

    pub fn is_back_matter(self) -> bool {
        matches!(
            self,
            Division::Epilogue
                | Division::Afterword
                | Division::Acknowledgments
                | Division::Appendix
                | Division::Glossary
                | Division::Bibliography
                | Division::Endnotes
        )
    }
}

/// Block-level content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Block {
    /// `level` 1–6, relative to the book: the chapter heading is usually the shallowest level.
    Heading {
        level: u8,
        id: Option<String>,
        content: Vec<Inline>,
    },
    Paragraph {
        #[serde(default, skip_serializing_if = "Align::is_default")]
        align: Align,
        content: Vec<Inline>,
    },
    BlockQuote(Vec<Block>),
    List {
        kind: ListKind,
        /// First number of an ordered list (1 unless the source restarts elsewhere).
        start: u32,
        items: Vec<Vec<Block>>,
    },
    /// Terms, each with one or more definitions.
    DefinitionList(Vec<Definition>),
    CodeBlock {
        language: Option<String>,
        text: String,
    },
    Table(Table),
    /// A block image; `image` is an [`Image::id`].
    Figure {
        image: String,
        alt: String,
        caption: Vec<Inline>,
    },
    /// A change of scene within a chapter (`***`, `#`, a centred ornament, a thematic break).
    SceneBreak,
    /// An explicit page break inside a chapter, where the author asked for one (not where a
    /// printed page happens to begin: that is [`Inline::PrintPage`]).
    PageBreak,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Align {
    #[default]
    Default,
    Left,
    Center,
    Right,
    Justify,
}

impl Align {
    pub fn is_default(&self) -> bool {
        *self == Align::Default
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListKind {
    #[default]
    Bullet,
    Decimal,
    LowerAlpha,
    UpperAlpha,
    LowerRoman,
    UpperRoman,
}

impl ListKind {
    pub fn is_ordered(self) -> bool {
        self != ListKind::Bullet
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    pub term: Vec<Inline>,
    pub definitions: Vec<Vec<Block>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub caption: Vec<Inline>,
    /// Header rows (`<thead>`).
    pub head: Vec<Row>,
    pub body: Vec<Row>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// A header cell (`<th>`) in the body, such as a row label.
    #[serde(default)]
    pub header: bool,
    #[serde(default = "one")]
    pub colspan: u32,
    #[serde(default = "one")]
    pub rowspan: u32,
    #[serde(default, skip_serializing_if = "Align::is_default")]
    pub align: Align,
    pub blocks: Vec<Block>,
}

fn one() -> u32 {
    1
}

impl Cell {
    pub fn new(blocks: Vec<Block>) -> Self {
        Cell {
            header: false,
            colspan: 1,
            rowspan: 1,
            align: Align::Default,
            blocks,
        }
    }
}

/// Inline content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Inline {
    Text(String),
    Emphasis(Vec<Inline>),
    Strong(Vec<Inline>),
    Underline(Vec<Inline>),
    Strikethrough(Vec<Inline>),
    Superscript(Vec<Inline>),
    Subscript(Vec<Inline>),
    SmallCaps(Vec<Inline>),
    Code(String),
    Link {
        target: LinkTarget,
        content: Vec<Inline>,
    },
    /// An image inside a line of text; `image` is an [`Image::id`].
    Image {
        image: String,
        alt: String,
    },
    LineBreak,
    /// A reference to [`Note::id`].
    NoteRef(String),
    /// A bookmark that internal links can point at.
    Anchor(String),
    /// Text in another language than the book's (`lang` is as found).
    Lang {
        lang: String,
        content: Vec<Inline>,
    },
    /// Where a page of the print edition begins, with its folio as printed (`112`, `xii`).
    /// No manuscript reader makes one: [`positions::mark_pages`] places them from the
    /// typesetter's page starts, so the ebook can offer the printed pages. It holds no text.
    PrintPage(String),
    /// An equation, in the line or displayed on its own.
    Math(Math),
}

impl Inline {
    /// The inlines inside a container (emphasis, link, language span…); `None` for a leaf.
    pub fn children(&self) -> Option<&Vec<Inline>> {
        match self {
            Inline::Emphasis(c)
            | Inline::Strong(c)
            | Inline::Underline(c)
            | Inline::Strikethrough(c)
            | Inline::Superscript(c)
            | Inline::Subscript(c)
            | Inline::SmallCaps(c)
            | Inline::Link { content: c, .. }
            | Inline::Lang { content: c, .. } => Some(c),
            _ => None,
        }
    }

    pub fn children_mut(&mut self) -> Option<&mut Vec<Inline>> {
        match self {
            Inline::Emphasis(c)
            | Inline::Strong(c)
            | Inline::Underline(c)
            | Inline::Strikethrough(c)
            | Inline::Superscript(c)
            | Inline::Subscript(c)
            | Inline::SmallCaps(c)
            | Inline::Link { content: c, .. }
            | Inline::Lang { content: c, .. } => Some(c),
            _ => None,
        }
    }
}

/// An equation. Readers convert what the manuscript wrote (TeX, a Word equation) to MathML
/// as they read it, so that every writer shows the same thing; the TeX stays beside it for
/// writers that typeset TeX (the print edition) and for when it could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Math {
    /// Displayed as a block of its own (`$$…$$`, `\[…\]`, a Word equation on its own line).
    pub display: bool,
    /// The TeX the author wrote, when the manuscript wrote TeX.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tex: Option<String>,
    /// One `<math>` element as [`crate::math`] makes it (MathML namespace, no prefix, MathML 3
    /// presentation elements, no `style`); `None` when it could not be converted, and writers
    /// then show `tex` as code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mathml: Option<String>,
}

impl Math {
    /// What a reader sees of it as text: the MathML's characters, or else the TeX.
    pub fn text(&self) -> String {
        match (&self.mathml, &self.tex) {
            (Some(mathml), _) => crate::math::text_content(mathml),
            (None, Some(tex)) => tex.clone(),
            (None, None) => String::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkTarget {
    /// An absolute URL (`https:`, `mailto:`…).
    External(String),
    /// An id somewhere in this book: a heading id or an [`Inline::Anchor`].
    Internal(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub id: String,
    pub kind: NoteKind,
    pub blocks: Vec<Block>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    #[default]
    Footnote,
    Endnote,
}

/// An image the book uses. `id` is a file name (`image3.png`): unique within the book, made
/// of ASCII letters, digits, `-`, `_` and one `.` before the extension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub id: String,
    /// `image/jpeg`, `image/png`, `image/gif`, `image/webp` or `image/svg+xml`.
    pub media_type: String,
    pub width: u32,
    pub height: u32,
}

/// A reader's result: the document, the bytes of its images (by [`Image::id`]), and what a
/// person should know about the conversion.
#[derive(Debug, Default)]
pub struct Parsed {
    pub document: Document,
    pub resources: BTreeMap<String, Vec<u8>>,
    pub warnings: Vec<crate::report::Warning>,
    /// The cover the manuscript carries (an EPUB's), by file name, used when none is
    /// uploaded beside it.
    pub cover: Option<(String, Vec<u8>)>,
}
