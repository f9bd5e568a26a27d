//! The EPUB 3 package: OPF, navigation, cover, title and copyright pages, chapters, images
//! and stylesheet, zipped deterministically (`mimetype` first and stored, fixed timestamps,
//! stable order).

mod nav;
mod opf;
mod pages;

use std::collections::BTreeMap;
use std::io::{Cursor, Write};

use anyhow::{Context, bail};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use super::Book;
use super::xhtml::ids::{Node, visit_blocks};
use super::xhtml::{STYLESHEET, Target, chapter_file_name, usable_image};
use crate::document::{Block, Inline};
use crate::style::css::Sheet;
use crate::style::fonts::Face;

/// Where the package's content lives inside the zip.
const ROOT: &str = "OEBPS";
/// The package document's path in the zip (`META-INF/container.xml` names it).
pub const PACKAGE_DOCUMENT: &str = "OEBPS/content.opf";
/// The copyright page's path in the zip; its section is [`COPYRIGHT_ID`].
pub const COPYRIGHT_PAGE: &str = "OEBPS/copyright.xhtml";

pub use pages::{COPYRIGHT_ID, copyright_lines};

/// Builds the EPUB. `chapters[i]` is [`super::xhtml::render_chapter`]`(book, i, Epub).body`;
/// `resources` holds image bytes by image id, and the cover under its file name.
pub fn package(
    book: &Book,
    chapters: &[String],
    resources: &BTreeMap<String, Vec<u8>>,
) -> anyhow::Result<Vec<u8>> {
    if chapters.len() != book.document.chapters.len() {
        bail!(
            "{} chapter bodies for a book of {} chapters",
            chapters.len(),
            book.document.chapters.len()
        );
    }
    let mut manifest = Manifest::new(book, resources)?;
    manifest.mathml = chapters.iter().map(|body| has_mathml(body)).collect();
    let pages = nav::page_list(book);
    let mut files: Vec<(String, Vec<u8>, bool)> = vec![
        (
            "META-INF/container.xml".into(),
            CONTAINER.as_bytes().to_vec(),
            true,
        ),
        (
            PACKAGE_DOCUMENT.to_owned(),
            opf::package_document(book, &manifest, !pages.is_empty()).into_bytes(),
            true,
        ),
        (
            format!("{ROOT}/nav.xhtml"),
            nav::nav_document(book, &manifest, &pages).into_bytes(),
            true,
        ),
        (format!("{ROOT}/toc.ncx"), nav::ncx(book).into_bytes(), true),
        (
            format!("{ROOT}/css/book.css"),
            stylesheet(book, &manifest.fonts).into_bytes(),
            true,
        ),
    ];
    for face in &manifest.fonts {
        files.push((
            format!("{ROOT}/fonts/{}", face.file),
            face.bytes.to_vec(),
            true,
        ));
    }
    if let Some(cover) = &manifest.cover {
        files.push((
            format!("{ROOT}/cover.xhtml"),
            pages::cover_page(book, &cover.href).into_bytes(),
            true,
        ));
    }
    files.push((
        format!("{ROOT}/titlepage.xhtml"),
        pages::title_page(book).into_bytes(),
        true,
    ));
    files.push((
        COPYRIGHT_PAGE.to_owned(),
        pages::copyright_page(book).into_bytes(),
        true,
    ));
    for (i, body) in chapters.iter().enumerate() {
        files.push((
            format!("{ROOT}/{}", chapter_file_name(i, Target::Epub)),
            pages::chapter_page(book, i, body).into_bytes(),
            true,
        ));
    }
    for item in manifest
        .cover
        .iter()
        .chain(&manifest.images)
        .chain(&manifest.ornament)
    {
        // JPEG, PNG, GIF and WebP are compressed already; deflating them again is wasted work.
        let compress = item.media_type == "image/svg+xml";
        files.push((
            format!("{ROOT}/{}", item.href),
            item.bytes.clone(),
            compress,
        ));
    }
    zip(&files)
}

const CONTAINER: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles>
    <rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>
  </rootfiles>
</container>
"#;

/// A binary resource of the package: the cover or an image.
#[derive(Debug)]
struct Resource {
    id: String,
    href: String,
    media_type: String,
    bytes: Vec<u8>,
    /// For images in the text: whether every use of it has alternative text.
    described: bool,
}

/// The binary resources the book uses, in a stable order.
#[derive(Debug)]
struct Manifest {
    cover: Option<Resource>,
    images: Vec<Resource>,
    /// By chapter: whether its document holds MathML (the manifest's `mathml` property).
    mathml: Vec<bool>,
    /// The style's typefaces, when it embeds them (`fonts/…`).
    fonts: Vec<Face>,
    /// A house style's ornament image (`ornaments/…`).
    ornament: Option<Resource>,
}

/// The font files `book` carries: its style's, when the style embeds them (a house style's
/// own from `resources`).
pub(crate) fn book_fonts(book: &Book, resources: &BTreeMap<String, Vec<u8>>) -> Vec<Face> {
    crate::style::fonts::embedded(
        &book.style,
        &book.families(resources),
        super::sets_bold(&book.document),
    )
}

/// The house style's ornament image `book` shows at its scene breaks, as its file name (in
/// `style::css::ORNAMENTS`), media type and bytes.
pub(crate) fn book_ornament<'a>(
    book: &Book,
    resources: &'a BTreeMap<String, Vec<u8>>,
) -> anyhow::Result<Option<(String, &'static str, &'a [u8])>> {
    let crate::style::BreakMark::Image(file) = book.style.scene_break.mark() else {
        return Ok(None);
    };
    let bytes = resources
        .get(&crate::style::house::resource_id(file))
        .with_context(|| format!("the style's ornament {file} has no bytes"))?;
    Ok(Some((
        file.to_owned(),
        crate::style::house::media_type(file),
        bytes,
    )))
}

/// The book's stylesheet: what every book shares, its style's own rules, and mathematics.
fn stylesheet(book: &Book, fonts: &[Face]) -> String {
    format!(
        "{STYLESHEET}{}{}",
        crate::style::css::stylesheet(&book.style, Sheet::Epub, fonts),
        crate::math::stylesheet()
    )
}

impl Manifest {
    fn new(book: &Book, resources: &BTreeMap<String, Vec<u8>>) -> anyhow::Result<Manifest> {
        let cover = match &book.cover {
            None => None,
            Some(info) => {
                let ext_ok = matches!(
                    (info.file_name.as_str(), info.media_type.as_str()),
                    ("cover.jpg", "image/jpeg")
                        | ("cover.png", "image/png")
                        | ("cover.svg", "image/svg+xml")
                );
                if !ext_ok {
                    bail!(
                        "unexpected cover {:?} of type {:?}",
                        info.file_name,
                        info.media_type
                    );
                }
                let bytes = resources
                    .get(&info.file_name)
                    .with_context(|| format!("the cover {} has no bytes", info.file_name))?;
                Some(Resource {
                    id: "cover-image".into(),
                    href: info.file_name.clone(),
                    media_type: info.media_type.clone(),
                    bytes: bytes.clone(),
                    described: true,
                })
            }
        };
        let mut images = Vec::new();
        for (n, (id, described)) in used_images(book).into_iter().enumerate() {
            let Some(image) = usable_image(book, &id) else {
                continue;
            };
            let bytes = resources
                .get(&id)
                .with_context(|| format!("the image {id} has no bytes"))?;
            images.push(Resource {
                id: format!("image-{}", n + 1),
                href: format!("images/{id}"),
                media_type: image.media_type.clone(),
                bytes: bytes.clone(),
                described,
            });
        }
        let ornament = book_ornament(book, resources)?.map(|(file, media_type, bytes)| Resource {
            id: "ornament".into(),
            href: format!("{}{file}", crate::style::css::ORNAMENTS),
            media_type: media_type.to_owned(),
            bytes: bytes.to_vec(),
            described: true,
        });
        Ok(Manifest {
            cover,
            images,
            mathml: Vec::new(),
            fonts: book_fonts(book, resources),
            ornament,
        })
    }

    fn has_mathml(&self) -> bool {
        self.mathml.iter().any(|&m| m)
    }

    fn all_images_described(&self) -> bool {
        self.images.iter().all(|i| i.described)
    }
}

/// Whether a rendered chapter holds MathML. Text is escaped where it is written, so the
/// markup of an equation is the only way `<math` gets into a body.
fn has_mathml(body: &str) -> bool {
    body.contains("<math ")
}

/// Ids of the images the text shows (chapters and notes), with whether every use has
/// alternative text. Images the text never shows stay out of the book.
fn used_images(book: &Book) -> BTreeMap<String, bool> {
    let mut used: BTreeMap<String, bool> = BTreeMap::new();
    let mut note = |id: &str, alt: &str| {
        let described = !alt.trim().is_empty();
        used.entry(id.to_owned())
            .and_modify(|d| *d &= described)
            .or_insert(described);
    };
    let chapters = book.document.chapters.iter().map(|c| &c.blocks);
    let notes = book.document.notes.iter().map(|n| &n.blocks);
    for blocks in chapters.chain(notes) {
        visit_blocks(blocks, &mut |node| match node {
            Node::Block(Block::Figure { image, alt, .. }) => note(image, alt),
            Node::Inline(Inline::Image { image, alt }) => note(image, alt),
            _ => {}
        });
    }
    used
}

/// Zips `(path, bytes, compress)` entries in order: `mimetype` first and stored, as OCF
/// requires; every entry with the same fixed timestamp and permissions and no extra fields,
/// so the same book always gives the same bytes.
fn zip(files: &[(String, Vec<u8>, bool)]) -> anyhow::Result<Vec<u8>> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    zip.start_file("mimetype", entry_options(false))?;
    zip.write_all(b"application/epub+zip")?;
    for (path, bytes, compress) in files {
        zip.start_file(path.as_str(), entry_options(*compress))
            .with_context(|| format!("adding {path} to the EPUB"))?;
        zip.write_all(bytes)?;
    }
    Ok(zip.finish()?.into_inner())
}

/// How every entry of the package is written, deflated (`compress`) or stored: the same fixed
/// timestamp and permissions and no extra fields, so that an entry written again (an advance
/// reader copy's pages, `advance_copies::stamp`) is written as the book's own were.
pub fn entry_options(compress: bool) -> SimpleFileOptions {
    let base = SimpleFileOptions::default()
        .last_modified_time(DateTime::default())
        .unix_permissions(0o644)
        .large_file(false);
    if compress {
        base.compression_method(CompressionMethod::Deflated)
            .compression_level(Some(9))
    } else {
        base.compression_method(CompressionMethod::Stored)
    }
}

#[cfg(test)]
#[path = "epub/tests.rs"]
mod tests;
