//! The conversion's stages as plain functions: the pipeline's jobs call them one step at a
//! time (with storage in between), and `bindery convert` calls them in a row in memory
//! (`pipeline::in_memory`). Keeping one implementation is what makes both give byte-identical
//! EPUBs.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::document::{self, Block, Parsed};
use crate::ebook::metadata::{self, MetadataInputs};
use crate::ebook::{Book, cover, epub, reader, verify};
use crate::manuscript::{self, Format, Ingested, InputError, Limits, ReadOptions};
use crate::report::{Report, Statistics};
use crate::style::{Style, StyleName};

/// What the user chose besides the manuscript.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// `key=value` metadata that overrides the manuscript's.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// The upload's file name: a title of last resort, and what the manuscript must be (see
    /// `manuscript::naming`); never used to guess the format.
    #[serde(default)]
    pub file_name: Option<String>,
    /// Forces a format instead of sniffing.
    #[serde(default)]
    pub format: Option<Format>,
    /// `dcterms:modified`; `None` gives a fixed instant (reproducible output).
    #[serde(default)]
    pub modified: Option<String>,
    /// The book's `urn:uuid` identifier, which its later revisions keep; `None` derives one
    /// from the inputs (`digest`). An ISBN given in the metadata still wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identifier: Option<String>,
    /// Which revision of its book this is, from the second on (`BookMetadata::revision`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
    /// Styles besides the built-in ones that the book may name: its tenant's house styles
    /// (looked up by the step that reads the book, never stored with its options), or the
    /// style file `bindery convert --style path/to/style.toml` read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub house_styles: Vec<HouseStyle>,
}

/// A style that is not built in, under the name a book chooses it by, with its files.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HouseStyle {
    pub name: StyleName,
    pub style: Style,
    /// The fonts and ornament images it came with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<StyleFile>,
}

/// A house style's file: its name, and the blob that holds it (`house_styles::file_key`), or
/// `None` for a file the caller holds in memory (`bindery convert`: `in_memory::Extras`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StyleFile {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

/// The style a book's given metadata names, under any spelling of its key.
pub fn chosen_style_name(metadata: &BTreeMap<String, String>) -> Option<StyleName> {
    use crate::document::keys::{Field, Named};
    metadata
        .iter()
        .find(|(key, _)| Named::parse(key) == Ok(Named::Field(Field::Style)))
        .and_then(|(_, value)| StyleName::parse(value).ok())
}

/// The style `metadata` names: the house style of that name, else the built-in one.
pub fn chosen_style(metadata: &crate::ebook::BookMetadata, options: &Options) -> Style {
    chosen_house(metadata, options)
        .map(|house| house.style.clone())
        .or_else(|| crate::style::builtin::get(metadata.style.as_str()))
        .unwrap_or_default()
}

/// The house style `metadata` names, when it names one.
pub fn chosen_house<'a>(
    metadata: &crate::ebook::BookMetadata,
    options: &'a Options,
) -> Option<&'a HouseStyle> {
    options
        .house_styles
        .iter()
        .find(|house| house.name == metadata.style)
}

/// The names of the files `book`'s house style brought, which its resources must hold
/// (under `style::house::resource_id`).
pub fn style_files(metadata: &crate::ebook::BookMetadata, options: &Options) -> Vec<String> {
    chosen_house(metadata, options)
        .map(|house| house.files.iter().map(|f| f.name.clone()).collect())
        .unwrap_or_default()
}

/// Image bytes by image id, plus the cover under its file name.
pub type Resources = BTreeMap<String, Vec<u8>>;

/// The digest that names a book's identifier: manuscript, cover and options, so the same
/// inputs always give the same `urn:uuid`.
pub fn digest(manuscript: &[u8], cover: Option<&[u8]>, options: &Options) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update((manuscript.len() as u64).to_le_bytes());
    hash.update(manuscript);
    if let Some(cover) = cover {
        hash.update((cover.len() as u64).to_le_bytes());
        hash.update(cover);
    }
    for (k, v) in &options.metadata {
        hash.update(k.as_bytes());
        hash.update([0]);
        hash.update(v.as_bytes());
        hash.update([0]);
    }
    hash.finalize().into()
}

/// Stage 1: format, limits, encoding.
pub fn ingest(
    manuscript: &[u8],
    options: &Options,
    limits: &Limits,
) -> Result<Ingested, InputError> {
    manuscript::ingest(
        manuscript,
        &ReadOptions {
            format: options.format,
            file_name: options.file_name.clone(),
            limits: *limits,
        },
    )
}

/// Stage 2: the document model, final metadata and the cover, ready for the writers.
pub struct Assembled {
    pub book: Book,
    pub resources: Resources,
    pub report: Report,
}

/// Stage 2: parse, resolve metadata, prepare (or generate) the cover.
pub fn assemble(
    ingested: &Ingested,
    manuscript: &[u8],
    cover_upload: Option<(&str, &[u8])>,
    options: &Options,
    limits: &Limits,
    default_language: &str,
) -> Result<Assembled, InputError> {
    let Parsed {
        document,
        mut resources,
        mut warnings,
        cover: carried,
    } = manuscript::parse(ingested, manuscript, limits)?;
    let mut report = Report {
        format: ingested.format.as_str().to_owned(),
        encoding: ingested.encoding.clone(),
        ..Report::default()
    };
    let mut meta_warnings = Vec::new();
    let inputs = MetadataInputs {
        overrides: options.metadata.clone(),
        file_name: options.file_name.clone(),
        digest: digest(manuscript, cover_upload.map(|(_, b)| b), options),
        modified: options.modified.clone(),
        identifier: options.identifier.clone(),
        revision: options.revision,
        default_language: Some(default_language.to_owned()),
        styles: options
            .house_styles
            .iter()
            .map(|house| house.name.clone())
            .collect(),
    };
    let metadata = metadata::resolve(&document.metadata, &inputs, &mut meta_warnings)?;
    report.metadata = metadata::sources(&document.metadata, &inputs, &metadata);
    let (mut info, bytes) = match (cover_upload, carried) {
        (Some((name, bytes)), _) => cover::prepare(name, bytes, limits)?,
        // The manuscript's own cover (an EPUB's) is a convenience: one that cannot be used
        // is named and replaced, not a reason to fail the book.
        (None, Some((name, bytes))) => match cover::prepare(&name, &bytes, limits) {
            Ok(prepared) => prepared,
            Err(e) => {
                warnings.push(crate::report::Warning::new(
                    "cover_unusable",
                    format!("The manuscript's own cover ({name}) could not be used ({e}), so a cover was drawn instead. Upload a cover beside the manuscript to choose one."),
                ));
                cover::generate(&metadata)
            }
        },
        (None, None) => cover::generate(&metadata),
    };
    // An image of the manuscript may already carry the cover's name.
    if resources.contains_key(&info.file_name) {
        info.file_name = format!("bindery-{}", info.file_name);
    }
    resources.insert(info.file_name.clone(), bytes);
    // A file read as other than its name says: the first thing the author should know.
    let mismatch = options
        .format
        .is_none()
        .then_some(options.file_name.as_deref())
        .flatten()
        .and_then(|name| manuscript::naming::warning(name, ingested.format));
    let cover_warnings = cover::size_warnings(&info);
    for warning in mismatch
        .into_iter()
        .chain(warnings)
        .chain(meta_warnings)
        .chain(cover_warnings)
    {
        report.warn(warning);
    }
    let style = chosen_style(&metadata, options);
    let style_files = style_files(&metadata, options);
    if let Some(warning) = crate::style::opening::numbering_warning(&style, &metadata.language) {
        report.warn(warning);
    }
    let book = Book {
        metadata,
        document,
        cover: Some(info),
        print: None,
        style,
        style_files,
    };
    report.statistics = statistics(&book);
    Ok(Assembled {
        book,
        resources,
        report,
    })
}

fn statistics(book: &Book) -> Statistics {
    let doc = &book.document;
    let tables = doc
        .chapters
        .iter()
        .flat_map(|c| &c.blocks)
        .filter(|b| matches!(b, Block::Table(_)))
        .count();
    Statistics {
        words: document::word_count(doc),
        chapters: doc.chapters.len() as u64,
        images: doc.images.len() as u64,
        notes: doc.notes.len() as u64,
        tables: tables as u64,
    }
}

/// Stage 4a: the EPUB.
pub fn package_epub(
    book: &Book,
    chapters: &[String],
    resources: &Resources,
) -> anyhow::Result<Vec<u8>> {
    epub::package(book, chapters, resources)
}

/// Stage 4b: the web reader's files.
pub fn package_reader(
    book: &Book,
    chapters: &[String],
    resources: &Resources,
    links: &reader::Links,
) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    reader::build(book, chapters, resources, links)
}

/// Stage 5: structural self-checks of the EPUB. A failure is Bindery's bug, not the author's.
pub fn verify_epub(epub: &[u8]) -> Result<(), String> {
    verify::check_epub(epub).map_err(|problems| problems.join("; "))
}
