//! OpenDocument text: LibreOffice's `.odt` (a zip of XML parts: `content.xml`,
//! `styles.xml`, `meta.xml`, pictures, and each formula as an object of its own) and the
//! flat `.fodt` (one XML file holding the same, pictures in base64 and formulas inline).
//!
//! The layers: [`styles`] (what a style means, up its chain), [`body`] (the text, onto the
//! builder Markdown and HTML share), and here the package, the metadata and the passes over
//! the whole book that the DOCX reader makes too ([`super::tidy`]).

mod body;
mod styles;

use std::collections::HashMap;

use super::archive::Archive;
use super::markdown::builder::Builder;
use super::markdown::resources::Resources;
use super::xml::{Ns, Xml};
use super::{InputError, Limits, encoding, tidy};
use crate::document::{Block, Document, Inline, Metadata, Parsed, chapters};
use crate::report::Warning;
use body::{Objects, Reader};
use styles::Styles;

const MIMETYPE: &str = "application/vnd.oasis.opendocument.text";

pub fn read(bytes: &[u8], limits: &Limits) -> Result<Parsed, InputError> {
    if bytes.starts_with(b"PK") {
        read_zip(bytes, limits)
    } else {
        read_flat(bytes, limits)
    }
}

fn read_zip(bytes: &[u8], limits: &Limits) -> Result<Parsed, InputError> {
    let mut archive = Archive::open(bytes, limits)?;
    if let Some(mime) = archive.read("mimetype")?
        && !mime.starts_with(MIMETYPE.as_bytes())
    {
        return Err(InputError::NotOdt {
            detail: format!(
                "it says it is {}, not a text document",
                String::from_utf8_lossy(&mime).trim()
            ),
        });
    }
    let content = archive
        .read_text("content.xml")?
        .ok_or_else(|| InputError::NotOdt {
            detail: "it has no content.xml, where the text would be".into(),
        })?;
    let mut styles = Styles::default();
    if let Some(text) = archive.read_text("styles.xml")? {
        styles.read(&text, "styles.xml")?;
    }
    styles.read(&content, "content.xml")?;
    let mut metadata = Metadata::default();
    if let Some(text) = archive.read_text("meta.xml")? {
        read_meta(&text, "meta.xml", &mut metadata)?;
    }
    let mut files = HashMap::new();
    for name in archive.names().to_vec() {
        let lower = name.to_ascii_lowercase();
        let picture = [
            ".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".wmf", ".emf", ".tif", ".tiff",
            ".bmp",
        ]
        .iter()
        .any(|e| lower.ends_with(e));
        if picture && let Some(bytes) = archive.read(&name)? {
            files.insert(lower, bytes);
        }
    }
    let mut objects = ZipObjects {
        archive: &mut archive,
    };
    body(
        &content,
        "content.xml",
        &styles,
        &mut objects,
        files,
        metadata,
        limits,
    )
}

fn read_flat(bytes: &[u8], limits: &Limits) -> Result<Parsed, InputError> {
    let (text, _) = encoding::decode(bytes)?;
    let mut styles = Styles::default();
    styles.read(&text, "the document")?;
    let mut metadata = Metadata::default();
    read_meta(&text, "the document", &mut metadata)?;
    body(
        &text,
        "the document",
        &styles,
        &mut NoObjects,
        HashMap::new(),
        metadata,
        limits,
    )
}

struct ZipObjects<'a, 'b> {
    archive: &'a mut Archive<'b>,
}

impl Objects for ZipObjects<'_, '_> {
    fn mathml(&mut self, href: &str) -> Result<Option<String>, InputError> {
        let object = href.trim_start_matches("./").trim_end_matches('/');
        let Some(text) = self.archive.read_text(&format!("{object}/content.xml"))? else {
            return Ok(None);
        };
        // An object that is a chart or a drawing, not a formula, has no `<math>`.
        Ok(text
            .contains("http://www.w3.org/1998/Math/MathML")
            .then_some(text))
    }
}

/// A flat document holds its formulas inline, and nothing else.
struct NoObjects;

impl Objects for NoObjects {
    fn mathml(&mut self, _: &str) -> Result<Option<String>, InputError> {
        Ok(None)
    }
}

fn body(
    text: &str,
    part: &str,
    styles: &Styles,
    objects: &mut dyn Objects,
    files: HashMap<String, Vec<u8>>,
    mut metadata: Metadata,
    limits: &Limits,
) -> Result<Parsed, InputError> {
    let mut res = Resources::with_files(limits, files);
    let mut builder = Builder::new(&mut res);
    let mut reader = Reader::new(styles, objects);
    let mut x = Xml::new(text, part);
    let root = x.root()?;
    if !(root.ns == Ns::Office && matches!(root.name(), "document-content" | "document")) {
        return Err(InputError::NotOdt {
            detail: format!("its {part} is not an OpenDocument"),
        });
    }
    let mut found = false;
    while let Some(tag) = x.child()? {
        if tag.is(Ns::Office, "body") {
            while let Some(inner) = x.child()? {
                if inner.is(Ns::Office, "text") {
                    found = true;
                    reader.blocks(&mut x, &mut builder, 0)?;
                } else {
                    // A spreadsheet or a presentation: not a manuscript.
                    x.skip()?;
                }
            }
        } else {
            x.skip()?;
        }
    }
    if !found {
        return Err(InputError::NotOdt {
            detail: "it holds no text document (a spreadsheet or presentation?)".into(),
        });
    }
    let comments = reader.comments;
    let captioned = reader.captions > 0;
    let subtitle = reader.subtitle.take();
    let authors = std::mem::take(&mut reader.authors);
    let date = reader.date.take();
    let flattened = builder.flattened;
    let (mut blocks, mut notes) = builder.finish()?;
    let mut warnings = std::mem::take(&mut res.warnings);
    if let Some(flattened) = flattened {
        warnings.push(Warning::new(
            "nesting_flattened",
            format!(
                "Lists and quotes nest {} levels deep; from level {} on they were flattened into the level above.",
                flattened.deepest, flattened.from_level
            ),
        ));
    }
    numbered_headings(&mut blocks);
    if captioned {
        captions(&mut blocks);
    }
    super::html::notes::unwrap_raised_refs(&mut blocks, &mut notes);
    displayed(&mut blocks);
    let title = tidy::title_paragraphs(&mut blocks);
    tidy::page_breaks(&mut blocks);
    super::markdown::ids::resolve(&mut blocks, &mut notes, &mut warnings);
    tidy::unused_anchors(&mut blocks, &mut notes);
    tidy::title_from_paragraphs(&mut metadata, title, &mut warnings);
    if metadata.subtitle.is_none() {
        metadata.subtitle = subtitle;
    }
    if metadata.language.is_none() {
        metadata.language = styles.language.clone();
    }
    if metadata.authors.is_empty() {
        metadata.authors = authors;
    }
    if metadata.date.is_none() {
        metadata.date = date;
    }
    if comments > 0 {
        warnings.push(Warning::new(
            "comment_dropped",
            format!(
                "{comments} comment{} in the document {} left out of the book.",
                if comments == 1 { "" } else { "s" },
                if comments == 1 { "was" } else { "were" }
            ),
        ));
    }
    let chapters = chapters::split(blocks, &mut metadata, &mut warnings);
    Ok(Parsed {
        document: Document {
            metadata,
            chapters,
            notes,
            images: res.images,
        },
        resources: res.bytes,
        warnings,
        cover: None,
    })
}

/// The document's properties (`meta.xml`, or a flat document's `office:meta`).
fn read_meta(text: &str, part: &str, metadata: &mut Metadata) -> Result<(), InputError> {
    let mut x = Xml::new(text, part);
    x.root()?;
    let mut creator = None;
    loop {
        let tag = match x.next()? {
            super::xml::Ev::Start(tag) => tag,
            super::xml::Ev::Eof => break,
            _ => continue,
        };
        // The properties come before the text (in a flat document), which is left unread.
        if tag.is(Ns::Office, "body") {
            break;
        }
        let field = match (tag.ns, tag.name()) {
            (Ns::Meta, name @ ("title" | "description" | "subject" | "language" | "creator")) => {
                name
            }
            (Ns::OdfMeta, name @ ("initial-creator" | "keyword")) => name,
            _ => continue,
        };
        let value = x.text()?.split_whitespace().collect::<Vec<_>>().join(" ");
        if value.is_empty() {
            continue;
        }
        match field {
            "title" => metadata.title = Some(value),
            "description" => metadata.description = Some(value),
            "subject" | "keyword" => metadata.subjects.push(value),
            "language" => metadata.language = Some(value),
            // The last person to save it; the author is who made it.
            "creator" => creator = Some(value),
            _ => {
                metadata.authors = value
                    .split(';')
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(str::to_owned)
                    .collect()
            }
        }
    }
    if metadata.authors.is_empty()
        && let Some(creator) = creator
    {
        metadata.authors.push(creator);
    }
    Ok(())
}

/// A caption paragraph (marked by [`body::CAPTION`]) right before or after a table is the
/// table's caption; any other stays a paragraph.
fn captions(blocks: &mut Vec<Block>) {
    let is_mark = |b: &Block| matches!(b, Block::Paragraph { content, .. } if matches!(content.as_slice(), [Inline::Anchor(a)] if a == body::CAPTION));
    let mut out: Vec<Block> = Vec::with_capacity(blocks.len());
    let mut pending: Option<Vec<Inline>> = None;
    for block in blocks.drain(..) {
        if is_mark(&block) {
            if let Some(Block::Paragraph { content, .. }) = out.pop() {
                match out.last_mut() {
                    Some(Block::Table(table)) if table.caption.is_empty() => {
                        table.caption = content
                    }
                    _ => pending = Some(content),
                }
            }
            continue;
        }
        match (pending.take(), block) {
            (Some(caption), Block::Table(mut table)) if table.caption.is_empty() => {
                table.caption = caption;
                out.push(Block::Table(table));
            }
            (Some(caption), other) => {
                out.push(Block::Paragraph {
                    align: crate::document::Align::default(),
                    content: caption,
                });
                out.push(other);
            }
            (None, other) => out.push(other),
        }
    }
    if let Some(caption) = pending {
        out.push(Block::Paragraph {
            align: crate::document::Align::default(),
            content: caption,
        });
    }
    *blocks = out;
}

/// A numbered heading is a heading in a list (LibreOffice's outline numbering): the list is
/// not the book's.
fn numbered_headings(blocks: &mut Vec<Block>) {
    let mut out = Vec::with_capacity(blocks.len());
    for block in blocks.drain(..) {
        match block {
            Block::List { items, .. }
                if !items.is_empty()
                    && items.iter().all(|item| {
                        !item.is_empty() && matches!(item.first(), Some(Block::Heading { .. }))
                    }) =>
            {
                out.extend(items.into_iter().flatten());
            }
            other => out.push(other),
        }
    }
    *blocks = out;
}

/// A formula alone in its paragraph is displayed; one inside a sentence is not.
fn displayed(blocks: &mut [Block]) {
    for block in blocks {
        match block {
            Block::Paragraph { content, .. } => {
                let alone = content
                    .iter()
                    .filter(|i| !matches!(i, Inline::Text(t) if t.trim().is_empty()))
                    .count()
                    == 1;
                for inline in content.iter_mut() {
                    if let Inline::Math(math) = inline {
                        math.display = alone;
                        if let Some(mathml) = &mut math.mathml {
                            *mathml = set_display(mathml, alone);
                        }
                    }
                }
            }
            Block::BlockQuote(inner) => displayed(inner),
            Block::List { items, .. } => items.iter_mut().for_each(|i| displayed(i)),
            _ => {}
        }
    }
}

/// The `<math>` element's own `display`, as the paragraph decides it.
fn set_display(mathml: &str, display: bool) -> String {
    let Some(end) = mathml.find('>') else {
        return mathml.to_owned();
    };
    let (open, rest) = mathml.split_at(end);
    let open = open
        .replace(r#" display="block""#, "")
        .replace(r#" display="inline""#, "");
    if display {
        format!(r#"{open} display="block"{rest}"#)
    } else {
        format!("{open}{rest}")
    }
}
