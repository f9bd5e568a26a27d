//! The web reader: a static site per book (contents, one page per chapter, themes, font
//! size, remembered position), with a Web App Manifest and a service worker so that after
//! one visit it reads offline and installs to a home screen.
//!
//! The contents page ends with the copyright notice the EPUB's copyright page gives, the one
//! place a server may add a line for one visitor ([`STAMPED_PAGE`]), which the service worker
//! allows for as it checks each file against its build.
//!
//! A book that marks its print edition's pages shows each folio in the margin where the page
//! begins, and `pages.html` lists them, with a "go to page" field on it and on the contents.
//!
//! The site uses relative URLs only, so it works under any prefix, and it passes a strict
//! Content-Security-Policy (`default-src 'self'`): all script is in `reader.js`, all style in
//! `reader.css`, and no page carries inline script, inline style or event attributes.

mod icons;
mod offline;
mod pages;

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, bail};

use super::Book;
use super::xhtml::{Target, chapter_file_name};
use icons::IconSource;
use pages::Site;

pub use offline::{STAMP_ID, STAMPED_PAGE};

const READER_CSS: &str = include_str!("reader/reader.css");
const READER_JS: &str = include_str!("reader/reader.js");

/// The Content-Security-Policy the site is written for, which the server sends with every
/// file of it: strict enough that a script smuggled into a manuscript cannot run. Forms may
/// go to the site itself (the "go to page" field asks `pages.html?page=N`) and nowhere else.
/// The browser tests serve their sites with this same value.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; manifest-src 'self'; worker-src 'self'; \
     frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// Where the reader links outside its site: the book's page in the app and its EPUB
/// download, on the contents page. A site made by `bindery convert` stands alone, with none.
#[derive(Debug, Clone, Default)]
pub struct Links {
    pub book_page: Option<String>,
    pub epub: Option<String>,
}

/// Folder of the book's images within the site (`images/<image id>`).
const IMAGES_DIR: &str = "images";

/// Builds the site: `(path, bytes)` pairs, paths relative to the reader's root, in a stable
/// order; the same input gives the same bytes.
///
/// `chapters[i]` is chapter `i`'s body as rendered for the web (an HTML fragment, trusted as
/// it is); `resources` holds image bytes by image id and, when `book.cover` is set, the
/// cover's bytes under its file name.
pub fn build(
    book: &Book,
    chapters: &[String],
    resources: &BTreeMap<String, Vec<u8>>,
    links: &Links,
) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let expected = book.document.chapters.len();
    if chapters.len() != expected {
        bail!(
            "the web reader got {} chapter bodies for a book of {expected} chapters",
            chapters.len()
        );
    }
    let cover = cover_file(book, resources)?;
    let images = image_files(book, resources)?;
    let site = Site {
        book,
        // The same labels as the EPUB's navigation, so both name an untitled chapter alike.
        labels: (0..book.document.chapters.len())
            .map(|i| super::xhtml::chapter_label(book, i))
            .collect(),
        image_sizes: book
            .document
            .images
            .iter()
            .filter(|i| i.width > 0 && i.height > 0)
            .map(|i| (image_path(&i.id), (i.width, i.height)))
            .collect(),
        cover: cover.as_ref().map(|(path, _, _)| path.clone()),
        toc: (0..book.document.chapters.len())
            .map(|i| {
                (
                    super::xhtml::chapter_title(book, i),
                    super::xhtml::chapter_subtitle(book, i),
                )
            })
            .collect(),
        links,
        pages: super::xhtml::printed_pages(book, Target::Web),
    };

    let mut files: Vec<(String, Vec<u8>)> = Vec::with_capacity(chapters.len() + images.len() + 10);
    files.push(("index.html".into(), site.index_page().into_bytes()));
    if let Some(page) = site.pages_page() {
        files.push((pages::PAGES_FILE.into(), page.into_bytes()));
    }
    for (i, body) in chapters.iter().enumerate() {
        files.push((
            chapter_file_name(i, Target::Web),
            site.chapter_page(i, body).into_bytes(),
        ));
    }
    // The book's style after the reader's own rules, over its chapters only; its fonts
    // beside it when it embeds them.
    let fonts = crate::ebook::epub::book_fonts(book, resources);
    files.push(("reader.css".into(), stylesheet(book, &fonts).into_bytes()));
    for face in &fonts {
        files.push((format!("fonts/{}", face.file), face.bytes.to_vec()));
    }
    if let Some((file, _, bytes)) = crate::ebook::epub::book_ornament(book, resources)? {
        files.push((
            format!("{}{file}", crate::style::css::ORNAMENTS),
            bytes.to_vec(),
        ));
    }
    files.push(("reader.js".into(), READER_JS.as_bytes().to_vec()));
    files.push((
        "manifest.webmanifest".into(),
        offline::manifest(&book.metadata)?,
    ));
    let icon = IconSource::new(
        cover
            .as_ref()
            .map(|(_, media_type, bytes)| (media_type.as_str(), bytes.as_slice())),
        &book.metadata.identifier,
    );
    for (name, size) in offline::ICONS
        .into_iter()
        .chain([offline::APPLE_TOUCH_ICON])
    {
        let png = icon
            .png(size)
            .with_context(|| format!("making the reader's {size}px icon"))?;
        files.push((name.into(), png));
    }
    if let Some((path, _, bytes)) = cover {
        files.push((path, bytes.clone()));
    }
    for (path, bytes) in images {
        files.push((path, bytes.clone()));
    }
    let sw = offline::service_worker(&files)?;
    files.push((offline::SERVICE_WORKER.into(), sw));

    let mut seen = BTreeSet::new();
    if let Some((path, _)) = files.iter().find(|(path, _)| !seen.insert(path.as_str())) {
        bail!(
            "the web reader would write {path:?} twice; a resource's name clashes with the site's own files"
        );
    }
    Ok(files)
}

/// The reader's stylesheet for `book`: the reader's own rules, the book's style over its
/// chapters (`fonts`, in `fonts/`, when it embeds them: `epub::book_fonts`), and mathematics.
pub fn stylesheet(book: &Book, fonts: &[crate::style::fonts::Face]) -> String {
    format!(
        "{READER_CSS}{}{}",
        crate::style::css::stylesheet(&book.style, crate::style::css::Sheet::Reader, fonts),
        crate::math::stylesheet()
    )
}

/// A page of the passages a style's preview shows (`crate::style::preview`), as the reader
/// shows them: `book`'s excerpt in its style, with [`stylesheet`] beside it as `reader.css`.
/// No script, no navigation: a page to look at in a frame.
pub fn passages_page(book: &Book) -> String {
    let dir = crate::language::Direction::of(&book.metadata.language).as_str();
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"{lang}\" dir=\"{dir}\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<link rel=\"icon\" href=\"data:,\">\n\
         <link rel=\"stylesheet\" href=\"reader.css\">\n</head>\n\
         <body class=\"chapter-page\">\n<main class=\"chapter\">\n",
        lang = super::xhtml::escape::escaped(&book.metadata.language),
        title = super::xhtml::escape::escaped(&book.metadata.title),
    );
    for body in super::xhtml::render_book(book, Target::Web) {
        html.push_str(&body.body);
    }
    html.push_str("</main>\n</body>\n</html>\n");
    html
}

/// The cover's site path, media type and bytes, when the book has a cover with bytes.
fn cover_file<'a>(
    book: &Book,
    resources: &'a BTreeMap<String, Vec<u8>>,
) -> anyhow::Result<Option<(String, String, &'a Vec<u8>)>> {
    let Some(cover) = &book.cover else {
        return Ok(None);
    };
    let Some(bytes) = resources.get(&cover.file_name).filter(|b| !b.is_empty()) else {
        return Ok(None);
    };
    check_name(&cover.file_name)?;
    Ok(Some((
        cover.file_name.clone(),
        cover.media_type.clone(),
        bytes,
    )))
}

/// Every image resource as `images/<id>`: everything in `resources` except the cover (which
/// is there only when the document itself also uses that name) and the house style's files
/// (which go where its stylesheet names them).
fn image_files<'a>(
    book: &Book,
    resources: &'a BTreeMap<String, Vec<u8>>,
) -> anyhow::Result<Vec<(String, &'a Vec<u8>)>> {
    let cover_name = book.cover.as_ref().map(|c| c.file_name.as_str());
    let used: BTreeSet<&str> = book.document.images.iter().map(|i| i.id.as_str()).collect();
    resources
        .iter()
        .filter(|(id, _)| Some(id.as_str()) != cover_name || used.contains(id.as_str()))
        .filter(|(id, _)| !crate::style::house::is_style_file(id))
        .map(|(id, bytes)| {
            check_name(id)?;
            Ok((image_path(id), bytes))
        })
        .collect()
}

fn image_path(id: &str) -> String {
    format!("{IMAGES_DIR}/{id}")
}

/// Resource names become file names on a web server: only plain names pass, never a path.
fn check_name(name: &str) -> anyhow::Result<()> {
    let plain = !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !plain {
        bail!("the resource name {name:?} cannot be a file name in the web reader");
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests;
